"""pypto.runtime.run's harness: goldens from golden_data_dir or a golden function, compared
within RunConfig's rtol / atol; compiled(...) ignores them."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import GoldenMismatchError, RunConfig, TensorSpec, run, write_golden


@pl.jit
def exp_kernel(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
    return out


def golden_exp(tensors):
    tensors["out"][:] = torch.exp(tensors["x"])


def test_a_golden_function_is_computed_written_and_compared(tmp_path):
    x, out = torch.randn(32, 64), torch.zeros(32, 64)
    run(
        exp_kernel,
        x,
        out,
        golden=golden_exp,
        config=RunConfig(golden_data_dir=tmp_path, rtol=1e-4, atol=1e-4),
    )
    torch.testing.assert_close(torch.load(tmp_path / "out.pt"), torch.exp(x))
    torch.testing.assert_close(out, torch.exp(x), rtol=1e-4, atol=1e-4)


def test_a_stored_golden_wins_and_a_mismatch_names_tensor_diff_and_index(tmp_path):
    x = torch.randn(32, 64)
    wrong = torch.exp(x)
    wrong[3, 7] += 0.5
    write_golden(tmp_path, {"out": wrong})
    with pytest.raises(GoldenMismatchError, match=r"'out'.*max abs diff 5\.0\d+e-01.*index \[3, 7\]"):
        run(exp_kernel, x, torch.zeros(32, 64), golden=golden_exp, config=RunConfig(golden_data_dir=tmp_path))


def test_the_tolerance_decides(tmp_path):
    x = torch.randn(32, 64)
    near = torch.exp(x) * (1 + 1e-3)
    write_golden(tmp_path, {"out": near})
    with pytest.raises(GoldenMismatchError):
        run(exp_kernel, x, torch.zeros(32, 64), config=RunConfig(golden_data_dir=tmp_path))
    run(exp_kernel, x, torch.zeros(32, 64), config=RunConfig(golden_data_dir=tmp_path, rtol=1e-2, atol=1e-2))


def test_a_first_run_with_only_a_directory_records_its_outputs(tmp_path):
    x = torch.randn(32, 64)
    run(exp_kernel, x, torch.zeros(32, 64), config=RunConfig(golden_data_dir=tmp_path))
    torch.testing.assert_close(torch.load(tmp_path / "out.pt"), torch.exp(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(GoldenMismatchError):
        run(exp_kernel, x + 1.0, torch.zeros(32, 64), config=RunConfig(golden_data_dir=tmp_path))


def test_tensor_specs_and_program_keyword_form(tmp_path):
    specs = [
        TensorSpec("x", [32, 64], torch.float32, init_value=torch.randn),
        TensorSpec("out", [32, 64], torch.float32, is_output=True),
    ]
    run(program=exp_kernel, tensor_specs=specs, golden=golden_exp, config=RunConfig(rtol=1e-4, atol=1e-4))


def test_dispatch_ignores_the_harness_fields(tmp_path):
    x = torch.randn(32, 64)
    write_golden(tmp_path, {"out": torch.zeros(32, 64)})
    config = RunConfig(golden_data_dir=tmp_path)
    compiled = exp_kernel.compile(x, torch.zeros(32, 64), config=config)
    out = torch.zeros(32, 64)
    compiled(x, out)  # no comparison: the golden is wrong and nothing raises
    torch.testing.assert_close(out, torch.exp(x), rtol=1e-5, atol=1e-5)
