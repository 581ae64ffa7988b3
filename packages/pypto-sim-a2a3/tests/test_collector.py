"""While a program runs, the cyclic collector's full collections are paced (rarer), and the
thresholds are the caller's again afterwards; ``PYPTO_SIM_GC_FREEZE=off`` leaves them alone."""

from __future__ import annotations

import gc

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, program, rand, single, tensor_t, vector_binary_kernel
from sim_mixed import scale_then_matmul

from pypto.ir import Direction, FunctionKind, SplitMode
from pypto_sim_a2a3 import A2A3SimBackend, OutOfBoundsError
from pypto_sim_a2a3.backend import PACED_FULL_COLLECTIONS


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def _thresholds_during_a_run() -> list[tuple[int, int, int]]:
    seen: list[tuple[int, int, int]] = []
    prog = single(vector_binary_kernel("tile.add"))
    a, b, out = rand(64, 128), rand(64, 128, seed=1), torch.zeros(64, 128)
    A2A3SimBackend().run(prog, [a, b, out], {"on_task": lambda _: seen.append(gc.get_threshold())})
    assert torch.equal(out, a + b)
    return seen


def test_full_collections_are_paced_during_a_run_and_restored_after(thresholds, monkeypatch):
    monkeypatch.delenv("PYPTO_SIM_GC_FREEZE", raising=False)
    assert _thresholds_during_a_run() == [(700, 10, PACED_FULL_COLLECTIONS)]
    assert gc.get_threshold() == (700, 10, 10)


def test_a_failing_run_restores_the_thresholds_too(thresholds, monkeypatch):
    monkeypatch.delenv("PYPTO_SIM_GC_FREEZE", raising=False)
    k = FunctionBuilder("past_the_end", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((32, 64)))
    out = k.param("out", tensor_t((32, 64)), Direction.Out)
    with k.loop("i", 0, 3) as i:  # the third tile of 16 rows lies past the 32
        row = k.scalar("scalar.mul", i, 16)
        x = k.op("x_t", "tile.load", x_gm, [row, 0], shape=(16, 64), target_memory=Mem.Vec)
        k.do("tile.store", x, [row, 0], out)
    with pytest.raises(OutOfBoundsError):
        A2A3SimBackend().run(single(k.build()), [rand(32, 64), torch.zeros(32, 64)], {})
    assert gc.get_threshold() == (700, 10, 10)


def test_the_collector_is_left_alone_when_asked(thresholds, monkeypatch):
    monkeypatch.setenv("PYPTO_SIM_GC_FREEZE", "off")
    assert _thresholds_during_a_run() == [(700, 10, 10)]


def _replayed_launch(blocks: int, rows: int):
    """``out[block rows] = exp(a[block rows])``, 16 rows a block: replayed and batched."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, 64)))
    out = k.param("out", tensor_t((rows, 64)), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), 16)
    x = k.op("x", "tile.load", a, [row, 0], shape=(16, 64), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    args = [host.param("a", tensor_t((rows, 64))), host.param("out", tensor_t((rows, 64)))]
    host.call("rows", *args, block_num=blocks)
    return program(host.build(), k.build())


@pytest.mark.parametrize("which", ["replayed", "mixed"])
def test_a_run_leaves_no_reference_cycles_for_the_collector(which):
    """A run's objects (launches and their roles, recordings and the blocks replaying them, the
    scheduler and its recorder) are freed when the run ends, not by a later full collection:
    that took ~300 ms every few runs of a 24-block matmul. (A failed run's traceback keeps its
    frames in a cycle, as any Python exception's does.)"""
    if which == "mixed":
        prog = scale_then_matmul(SplitMode.UP_DOWN)
        args = [rand(64, 64, seed=3), rand(64, 64, seed=4), torch.zeros(64, 64)]
    else:
        prog = _replayed_launch(30, 30 * 16)
        args = [rand(30 * 16, 64), torch.zeros(30 * 16, 64)]

    def run_once() -> None:
        A2A3SimBackend().run(prog, [a.clone() for a in args], {})

    run_once()  # first-use caches
    gc.collect()
    gc.disable()
    try:
        run_once()
        assert gc.collect() == 0
    finally:
        gc.enable()
