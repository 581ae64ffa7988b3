"""pypto.debug.torch_codegen: the IR before and after the passes, run as torch, against torch."""

from __future__ import annotations

import math

import pytest
import torch

import pypto.language as pl
from pypto.debug import torch_codegen
from pypto.ir.ops import op as core_ops
from pypto.ir.semantics import SEMANTICS
from pypto.ir.walker import received_ops


def run_generated(program, entry, *args, check_shapes=True):
    ns: dict = {}
    exec(torch_codegen(program, check_shapes=check_shapes), ns)
    return ns[entry](*args)


def both_forms(jit, *args):
    """The program as parsed and as lowered by the default pipeline."""
    return [jit.parse(*args), jit.lower(*args)]


@pl.jit
def scaled_sum(
    a: pl.Tensor[[64, 128], pl.FP32],
    b: pl.Tensor[[64, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


@pytest.mark.parametrize("form", [0, 1])
def test_an_elementwise_kernel_matches_torch(form):
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    program = both_forms(scaled_sum, a, b, torch.zeros(64, 128))[form]
    out = torch.zeros(64, 128)
    run_generated(program, "scaled_sum", a, b, out)
    torch.testing.assert_close(out, (a + b) * 2.0)


@pl.jit
def partial_softmax(
    x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]], cols: pl.Scalar[pl.INDEX]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [64, 128], valid_shape=[64, cols])
        t = pl.fillpad(t, pad_value=pl.PadValue.min)
        tmp = pl.create_tile([64, 128], dtype=pl.FP32)
        m = pl.row_max(t, tmp)
        e = pl.exp(pl.row_expand_sub(t, m))
        s = pl.row_sum(pl.fillpad(pl.set_validshape(e, 64, cols), pad_value=pl.PadValue.zero), tmp)
        pl.store(pl.row_expand_div(e, s), [0, 0], out)
    return out


@pytest.mark.parametrize("form", [0, 1])
def test_a_softmax_of_a_partial_tile_pads_with_fillpad(form):
    x = -torch.rand(64, 128) - 1.0  # all negative: zero padding would win the max
    program = both_forms(partial_softmax, x, torch.zeros(64, 128), 100)[form]
    out = torch.zeros(64, 128)
    run_generated(program, "partial_softmax", x, out, 100)
    torch.testing.assert_close(out[:, :100], torch.softmax(x[:, :100], dim=1), rtol=1e-5, atol=1e-5)


@pl.jit
def k_loop_matmul(
    a: pl.Tensor[[64, 512], pl.FP16],
    b: pl.Tensor[[512, 64], pl.FP16],
    c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a[:, 0:128], b[0:128, :])
        for k in pl.range(128, 512, 128):
            acc = pl.matmul_acc(acc, a[:, k : k + 128], b[k : k + 128, :])
        c[:, :] = acc
    return c


@pytest.mark.parametrize("form", [0, 1])
def test_a_matmul_with_a_k_loop_accumulates_every_block(form):
    a, b = torch.randn(64, 512, dtype=torch.float16), torch.randn(512, 64, dtype=torch.float16)
    program = both_forms(k_loop_matmul, a, b, torch.zeros(64, 64))[form]
    c = torch.zeros(64, 64)
    run_generated(program, "k_loop_matmul", a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)


def mixed(mode):
    @pl.jit
    def mixed_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=2)],
            name_hint="mixed",
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, bias)
        return out

    return mixed_matmul_bias


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE])
def test_a_mixed_kernel_after_the_passes_runs_its_cube_and_lanes_through_pipes(mode):
    a, b = torch.randn(256, 128, dtype=torch.float16), torch.randn(128, 128, dtype=torch.float16)
    bias, out = torch.randn(256, 128), torch.zeros(256, 128)
    kernel = mixed(mode)
    lowered = kernel.lower(a, b, bias, out)
    code = torch_codegen(lowered, check_shapes=True)
    assert "_core.wait('tile.tpop_from_aic'" in code and "'tile.tpush_to_aiv'" in code
    for program in (kernel.parse(a, b, bias, out), lowered):
        out = torch.zeros(256, 128)
        run_generated(program, "mixed_matmul_bias", a, b, bias, out)
        torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-3, atol=1e-3)


@pl.jit
def spmd_scale(x: pl.Tensor[[256, 64], pl.FP32], out: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
    for i in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 64, 0], [64, 64])
            pl.store(pl.add(t, 1.0), [i * 64, 0], out)
    return out


@pytest.mark.parametrize("form", [0, 1])
def test_an_spmd_kernel_runs_every_block_on_its_rows(form):
    x = torch.randn(256, 64)
    program = both_forms(spmd_scale, x, torch.zeros(256, 64))[form]
    out = torch.zeros(256, 64)
    run_generated(program, "spmd_scale", x, out)
    torch.testing.assert_close(out, x + 1.0)


@pl.jit
def three_kernels(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="square"):
        y = pl.mul(x, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift"):
        z = pl.sub(y, 1.0)
    for r in pl.range(0, 64, 32):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            t = pl.load(z, [r, 0], [32, 64])
            pl.store(pl.exp(pl.mul(t, 0.1)), [r, 0], out)
    return out


@pytest.mark.parametrize("form", [0, 1])
def test_an_orchestration_calling_several_kernels_passes_tensors_between_them(form):
    x = torch.randn(64, 64)
    program = both_forms(three_kernels, x, torch.zeros(64, 64))[form]
    out = torch.zeros(64, 64)
    run_generated(program, "three_kernels", x, out)
    torch.testing.assert_close(out, torch.exp((x * x - 1.0) * 0.1))


def test_one_function_is_written_as_a_program_of_its_own():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    lowered = scaled_sum.lower(a, b, torch.zeros(64, 128))
    kernel = next(fn for fn in lowered.functions.values() if fn.name != lowered.entry)
    out = torch.zeros(64, 128)
    run_generated(kernel, kernel.name, a, b, out)
    torch.testing.assert_close(out, (a + b) * 2.0)


def test_check_shapes_names_a_tensor_of_the_wrong_shape():
    a, b = torch.randn(64, 128), torch.randn(64, 128)
    program = scaled_sum.parse(a, b, torch.zeros(64, 128))
    with pytest.raises(AssertionError, match=r"out in scaled_sum: shape \[64, 64\]"):
        run_generated(program, "scaled_sum", a, b, torch.zeros(64, 64))


def test_every_op_a_backend_receives_has_a_torch_reference_or_a_core_action():
    from pypto.debug import runtime

    handled = set(SEMANTICS) | runtime.INDICES | runtime.NO_EFFECT | runtime.PUSHES | runtime.WAITS
    assert sorted(received_ops() - handled - {core_ops.call}) == []


def test_the_generated_text_is_a_program_of_python_functions():
    code = torch_codegen(scaled_sum.lower(torch.randn(64, 128), torch.randn(64, 128), torch.zeros(64, 128)))
    assert "def scaled_sum(a, b, out):" in code
    assert "import torch" in code
    compile(code, "<generated>", "exec")
    assert not math.isnan(0.0)
