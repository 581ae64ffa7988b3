"""The seed page's Edge Cases table, row by row: what the user sees for each symptom."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, ParseError


def inputs(m=128, k=256, n=128):
    torch.manual_seed(0)
    return (
        torch.randn(m, k, dtype=torch.float16),
        torch.randn(k, n, dtype=torch.float16),
        torch.randn(m, n, dtype=torch.float32),
        torch.zeros(m, n, dtype=torch.float32),
    )


# Row 1: "Vec buffer usage ... exceeds platform limit" -> lower slot_num or shrink the tile.
@pl.jit
def deep_ring(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=3)],
        name_hint="deep",
    ):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def test_row1_a_ring_too_deep_for_vec_names_the_ring_and_both_levers():
    with pytest.raises(MemoryBudgetError) as info:
        deep_ring(*inputs())
    message = info.value.message
    assert message.startswith(
        "Function 'deep_aiv': Vec buffer usage (229376 bytes) exceeds platform limit (188416 bytes)."
    )
    assert "The first 196608 bytes of that space are reserved by system.reserve_buffer" in message
    assert "pl.cross_core_slot(slot_num=N)" in message and "shrink the tile" in message


# Row 2: "No speedup from pl.split" -> one side dominates; the report says which.
@pl.jit
def cube_heavy_split(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="heavy"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def cube_heavy_staged(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector"):
        out[:] = pl.add(acc, bias)
    return out


def test_row2_a_cube_dominated_kernel_gains_little_and_the_report_names_the_cube_side():
    a, b, bias, out = inputs(m=512, k=512, n=64)
    cube_heavy_split(a, b, bias, out)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    cube_heavy_staged(a, b, bias, out)
    mixed_report, staged_report = cube_heavy_split.last_report, cube_heavy_staged.last_report
    assert mixed_report.total_cycles < staged_report.total_cycles
    # The cube core bounds the mixed kernel: it takes about as long as the cube core works (its
    # pipes busy, or waiting for its own loads), so no split mode or ring depth can make it faster.
    # After the cube's last push come only the lanes' last block and the task's completion.
    aic = [s for s in mixed_report.timeline if s.core == "cg0.AIC"]
    cube_core_span = max(s.end for s in aic) - min(s.start for s in aic)
    assert mixed_report.total_cycles < 1.15 * cube_core_span
    assert mixed_report.stall_cycles["cg0.AIC"] == 0  # it never waits for the lanes
    assert mixed_report.dominant_side() == "cube"
    assert "the cube side dominates" in mixed_report.summary()


# Row 3, "The producer stalls after a while" (a pop never freed): see test_pipes_explicit.py.


# Row 4: "Split rejected on a scope" -> the body mixes split and full-width vector ops.
@pl.jit
def concat_split(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)], name_hint="cat"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.concat(acc, c)
    return out


def test_row4_a_split_the_body_cannot_honour_is_rejected_pointing_to_split_aiv():
    a, b = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)
    c, out = torch.randn(64, 32), torch.zeros(64, 64)
    with pytest.raises(ParseError) as info:
        concat_split(a, b, c, out)
    assert info.value.message.startswith(
        "split rejected: the body mixes split and plain full-width vector ops"
    )
    assert "pl.concat" in info.value.message
    assert "pl.split_aiv" in info.value.hint
    assert str(info.value).splitlines()[1].endswith("out[:] = pl.concat(acc, c)")
