"""What a user sees when printing a run's report, result or compiled program: a few informative
lines, never the tens of thousands of slices and records the objects hold."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.runtime.running.runner import run


@pl.jit
def mixed_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def _mixed_run():
    a, b, bias = torch.randn(1024, 128) / 8, torch.randn(128, 128) / 8, torch.randn(1024, 128)
    result = run(mixed_matmul_bias, a, b, bias, torch.zeros(1024, 128))
    torch.testing.assert_close(result.outputs, a @ b + bias, rtol=1e-4, atol=1e-4)
    return result


def test_a_printed_report_of_a_mixed_kernel_is_its_summary_with_records_counted():
    report = _mixed_run().report
    text = repr(report)
    assert len(text) < 2000
    assert len(report.timeline) > 100  # the slices are there, just not printed
    assert f"{report.total_cycles} modeled cycles" in text and "a2a3sim" in text
    assert f"{len(report.timeline)} slice(s)" in text and f"{len(report.tasks)} task(s)" in text
    assert f"{len(report.transfers)} transfer(s)" in text and "cube-vector overlap" in text
    assert str(report) == text


def test_a_printed_run_result_shows_tensors_by_shape_and_the_program_by_its_signature():
    result = _mixed_run()
    text = repr(result)
    assert len(text) < 1000
    assert "tensor(shape=[1024, 128], dtype=torch.float32)" in text
    assert f"{result.report.total_cycles} modeled cycles" in text
    assert "mixed_matmul_bias(a, b, bias, out: Out) on a2a3sim" in text
    assert "mixed_aic" in text and "mixed_aiv" in text


def test_a_printed_compiled_program_before_a_run_says_so_and_writes_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiled = mixed_matmul_bias.compile(
        torch.zeros(256, 128), torch.zeros(128, 128), torch.zeros(256, 128), torch.zeros(256, 128)
    )
    text = repr(compiled)
    assert len(text) < 400 and "last run: not run" in text and "cache=" in text
    assert list(tmp_path.iterdir()) == []
