"""A crossing tile smaller than the ring's alignment: the automatic slot_size is rounded up.

The pipe's slots sit at multiples of ``slot_size`` in the consumer's memory, so the compiler
rounds the largest crossing tile up to that space's alignment (32 bytes on a2a3) and reserves
``slot_num`` rounded slots; the user never sees a slot_size they did not write.
"""

import re

import pytest
import torch

import pypto.language as pl
from pypto.ir import print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def matmul_relu(mode: pl.SplitMode):
    """``out = relu(a @ b)`` in one scope split by ``mode``; shapes come from the arguments."""

    @pl.jit
    def small(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="small"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.relu(acc)
        return out

    return small


def scale_matmul_relu(mode: pl.SplitMode):
    """``out = relu((2 x) @ w)``: a vector->cube crossing, then a cube->vector one."""

    @pl.jit
    def both_ways(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="both_ways"):
            acc = pl.matmul(pl.mul(x, 2.0), w, out_dtype=pl.FP32)
            out[:] = pl.relu(acc)
        return out

    return both_ways


# (mode, m, k, n, rounded slot_size): the FP32 result [1, 2] is 8 bytes, [1, 3] 12, [2, 5] 40,
# [3, 5] 60 (its odd rows split 2 + 1 across the lanes), [1, 3] under LEFT_RIGHT 2 + 1 columns.
SMALL = [
    (pl.SplitMode.NONE, 1, 16, 2, 32),
    (pl.SplitMode.NONE, 1, 16, 3, 32),
    (pl.SplitMode.LEFT_RIGHT, 1, 16, 2, 32),
    (pl.SplitMode.LEFT_RIGHT, 1, 16, 3, 32),
    (pl.SplitMode.UP_DOWN, 2, 16, 5, 64),
    (pl.SplitMode.UP_DOWN, 3, 16, 5, 64),
]


def _inputs(m: int, k: int, n: int) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    a = torch.randn(m, k, dtype=torch.float16)
    b = torch.randn(k, n, dtype=torch.float16)
    return a, b, torch.full((m, n), float("nan"))


def _pipe_setups(text: str) -> list[str]:
    return re.findall(r"pl\.system\.ai[cv]_initialize_pipe\(([^)]*)\)", text)


@pytest.mark.parametrize(("mode", "m", "k", "n", "slot"), SMALL)
def test_a_crossing_tile_smaller_than_the_alignment_runs_and_matches_torch(mode, m, k, n, slot):
    a, b, out = _inputs(m, k, n)
    matmul_relu(mode)(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(("mode", "m", "k", "n", "slot"), SMALL)
def test_the_lowered_pipe_setup_shows_the_rounded_slot_size(mode, m, k, n, slot):
    text = print_ir(matmul_relu(mode).lower(*_inputs(m, k, n), config=SIM))
    assert _pipe_setups(text) == [f"dir_mask=1, slot_size={slot}, slot_num=2"] * 2


@pytest.mark.parametrize(("mode", "m", "k", "n", "slot"), SMALL)
def test_the_budget_counts_the_rounded_ring_and_places_tiles_above_it(mode, m, k, n, slot):
    program = matmul_relu(mode).lower(*_inputs(m, k, n), config=SIM)
    plan = program.function("small_aiv").attrs["memory_plan"]
    assert [(r.space.name, r.size) for r in plan.reservations] == [("Vec", 2 * slot)]
    assert min(a.offset for a in plan.allocations.values()) == 2 * slot


def test_a_deeper_ring_reserves_whole_rounded_slots():
    a, b, out = _inputs(2, 16, 5)

    @pl.jit
    def deep(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=5)],
            name_hint="deep",
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.relu(acc)
        return out

    plan = deep.lower(a, b, out, config=SIM).function("deep_aiv").attrs["memory_plan"]
    assert [r.size for r in plan.reservations] == [5 * 64]
    deep(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(("mode", "k", "n"), [(pl.SplitMode.NONE, 8, 3), (pl.SplitMode.LEFT_RIGHT, 6, 2)])
def test_small_tiles_crossing_both_ways_round_the_shared_slot_size(mode, k, n):
    """[1, k] FP16 goes to the cube, [1, n] FP32 comes back; one slot_size, rounded, serves both."""
    x, w, out = _inputs(1, k, n)
    kernel = scale_matmul_relu(mode)
    text = print_ir(kernel.lower(x, w, out, config=SIM))
    assert _pipe_setups(text) == ["dir_mask=3, slot_size=32, slot_num=2"] * 2
    assert "# reserved Mat[0x0, +64]: cross-core pipe ring" in text
    assert "# reserved Vec[0x0, +64]: cross-core pipe ring" in text
    kernel(x, w, out, config=SIM)
    torch.testing.assert_close(out, torch.relu((x * 2).float() @ w.float()), rtol=1e-3, atol=1e-3)
