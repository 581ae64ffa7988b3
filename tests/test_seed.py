"""The programs of the user's page on mixed kernels (shared/seed), as written there."""

import os
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind, MemoryBudgetError, print_ir
from pypto.runtime import RunConfig

GOLDEN = Path(__file__).parent / "golden"


def seed_inputs():
    torch.manual_seed(0)
    a = torch.randn(128, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    bias = torch.randn(128, 128, dtype=torch.float32)
    out = torch.zeros(128, 128, dtype=torch.float32)
    return a, b, bias, out


def expected(a, b, bias):
    return a.float() @ b.float() + bias


# "Why bother": the obvious two-scope form.
@pl.jit
def staged(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_only"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector_only"):
        out[:] = pl.add(acc, bias)
    return out


def test_the_two_scope_form_matches_torch():
    a, b, bias, out = seed_inputs()
    staged(a, b, bias, out, config=RunConfig(platform="a2a3sim"))
    assert torch.allclose(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)


def test_the_two_scope_form_is_two_dispatches_one_per_unit():
    kinds = {fn.name: fn.kind for fn in staged.lower(config=RunConfig(platform="a2a3sim")).functions.values()}
    assert kinds == {
        "staged": FunctionKind.Orchestration,
        "cube_only": FunctionKind.AIC,
        "vector_only": FunctionKind.AIV,
    }
    a, b, bias, out = seed_inputs()
    staged(a, b, bias, out)
    assert [t.kernel for t in staged.last_report.tasks] == ["cube_only", "vector_only"]


# Step 1, verbatim.
@pl.jit
def mixed(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)  # cube (AIC)
        out[:] = pl.add(acc, bias)  # vector (AIV)
    return out


def test_step1_program_runs_as_written():
    torch.manual_seed(0)
    a = torch.randn(128, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    bias = torch.randn(128, 128, dtype=torch.float32)
    out = torch.zeros(128, 128, dtype=torch.float32)
    mixed(a, b, bias, out, config=RunConfig(platform="a2a3sim"))
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)


@pl.jit
def mixed_left_right(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def mixed_none(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.NONE)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def test_the_three_split_modes_give_the_same_numbers():
    results = []
    for kernel in (mixed, mixed_left_right, mixed_none, staged):
        a, b, bias, out = seed_inputs()
        kernel(a, b, bias, out)
        assert torch.allclose(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)
        results.append(out)
    for other in results[1:]:
        assert torch.equal(results[0], other)


# Step 2: the ring spends the vector budget.
@pl.jit
def mixed_slot4(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    bias: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def test_step2_slot_num_4_fails_to_allocate_with_the_seed_message():
    with pytest.raises(MemoryBudgetError) as info:
        mixed_slot4(*seed_inputs())
    assert info.value.message == (
        "Function 'mixed_aiv': Vec buffer usage (294912 bytes) exceeds platform limit (188416 bytes)."
        " The first 262144 bytes of that space are reserved by system.reserve_buffer, so tiles are"
        " allocated above them — this is the cross-core pipe ring. Lower its depth with"
        " optimizations=[pl.cross_core_slot(slot_num=N)] on the enclosing pl.at(...), or shrink the"
        " tile that crosses the cube/vector boundary"
    )
    # The error points at the user's pl.at(...) line.
    assert str(info.value).splitlines()[1].endswith("|     with pl.at(")


def test_step1_lowered_ir_is_the_golden_aic_aiv_group_program():
    text = print_ir(mixed.lower(config=RunConfig(platform="a2a3sim")))
    golden = GOLDEN / "seed_step1_lowered.txt"
    if os.environ.get("PYPTO_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()
    for line in (
        "    @pl.function(type=pl.FunctionType.Group)",
        "        pl.system.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)",
        "        pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)",
        "        pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)",
        "        pl.system.tfree_to_aic(acc_vec)",
    ):
        assert line in text.splitlines()
