"""The runtime's four rings: a task uses ring min(scope depth, 3) and holds a task-window slot, the
bytes of the tensors it first writes and its dependency edges until it retires and its scope has
ended; a full ring holds the host back, and one no wait can free is a RingCapacityError."""

import pytest
import torch
from sim_lowered import FP32, FunctionBuilder, program, rand, tensor_t

from pypto.ir import Direction, Function, FunctionKind
from pypto.ir import MemorySpace as Mem
from pypto_sim_a2a3.backend import A2A3SimBackend
from pypto_sim_a2a3.engine.runtime_rings import (
    DEFAULT_DEP_POOL,
    DEFAULT_HEAP,
    DEFAULT_TASK_WINDOW,
    RuntimeRings,
)
from pypto_sim_a2a3.errors import RingCapacityError

ROWS, COLS = 64, 128
TENSOR_BYTES = ROWS * COLS * 4


def _exp() -> Function:
    """AIV kernel ``out = exp(a)`` over one tile."""
    k = FunctionBuilder("exp", FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    out = k.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    x = k.op("x", "tile.load", a, [0, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [0, 0], out)
    return k.build()


def _run(host: Function, *args, **options):
    return A2A3SimBackend().run(program(host, _exp()), list(args), options)


def _fresh_outputs(iterations: int, depth: int = 1) -> Function:
    """``depth`` nested loops, the innermost of ``iterations``: each iteration creates a tensor and
    a task writes exp(a) into it (independent tasks: no two write one tensor)."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    loops = [b.loop(f"i{level}", 0, iterations if level == depth - 1 else 1) for level in range(depth)]
    for loop in loops:
        loop.__enter__()
    t = b.op("t", "tensor.create", shape=(ROWS, COLS), dtype=FP32)
    b.call("exp", a, t)
    for loop in reversed(loops):
        loop.__exit__(None, None, None)
    return b.build()


def _flat(calls: int) -> Function:
    """``calls`` tasks in the function body: ``out = exp(a)`` each (every one after the first
    waits for the one before: it writes the same tensor)."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    out = b.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    for _ in range(calls):
        b.call("exp", a, out)
    return b.build()


def test_a_task_uses_the_ring_of_its_scopes_depth_saturating_at_three():
    for depth, ring in ((1, 1), (2, 2), (3, 3), (5, 3)):
        report = _run(_fresh_outputs(2, depth), rand(ROWS, COLS))
        assert {t.ring for t in report.submitted} == {ring}
        assert [r.peak_tasks > 0 for r in report.runtime_rings] == [i == ring for i in range(4)]
    body = _run(_flat(2), rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    assert [t.ring for t in body.submitted] == [0, 0]


def test_the_default_rings_and_the_sizes_a_run_asks_for():
    report = _run(_flat(1), rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    assert [(r.index, r.task_window, r.heap, r.dep_pool) for r in report.runtime_rings] == [
        (i, DEFAULT_TASK_WINDOW, DEFAULT_HEAP, DEFAULT_DEP_POOL) for i in range(4)
    ]
    rings = RuntimeRings.from_options(
        {"ring_task_window": (64, 0, 128, 0), "ring_heap": (0, 1 << 20, 0, 0), "ring_dep_pool": None}
    )
    assert [r.capacity for r in rings.rings] == [
        (64, DEFAULT_HEAP, DEFAULT_DEP_POOL),
        (DEFAULT_TASK_WINDOW, 1 << 20, DEFAULT_DEP_POOL),
        (128, DEFAULT_HEAP, DEFAULT_DEP_POOL),
        (DEFAULT_TASK_WINDOW, DEFAULT_HEAP, DEFAULT_DEP_POOL),
    ]


def test_a_full_task_window_holds_the_host_back_until_the_oldest_task_retires():
    a = rand(ROWS, COLS)
    free = _run(_fresh_outputs(8), a)
    assert free.submitted[4].submit_cycle < free.submitted[0].retire_cycle  # it ran ahead
    assert free.runtime_rings[1].peak_tasks > 4
    held = _run(_fresh_outputs(8), a, ring_task_window=(0, 4, 0, 0))
    ring = held.runtime_rings[1]
    assert (ring.task_window, ring.peak_tasks) == (4, 4)
    for later, earlier in zip(held.submitted[4:], held.submitted, strict=False):
        assert later.submit_cycle >= earlier.retire_cycle  # a slot only once the oldest is reclaimed
    assert held.total_cycles > free.total_cycles


def test_the_heap_holds_the_bytes_of_the_tensors_a_task_first_writes():
    a = rand(ROWS, COLS)
    free = _run(_fresh_outputs(8), a)
    assert free.runtime_rings[1].peak_heap == free.runtime_rings[1].peak_tasks * TENSOR_BYTES
    held = _run(_fresh_outputs(8), a, ring_heap=(0, 2 * TENSOR_BYTES, 0, 0))
    assert held.runtime_rings[1].peak_heap == 2 * TENSOR_BYTES and held.runtime_rings[1].peak_tasks == 2
    assert held.submitted[2].submit_cycle >= held.submitted[0].retire_cycle


def test_a_task_bigger_than_its_heap_is_an_error_naming_the_ring_and_the_field():
    with pytest.raises(RingCapacityError) as info:
        _run(_fresh_outputs(2), rand(ROWS, COLS), ring_heap=(0, 1024, 0, 0))
    err = info.value
    assert err.message.startswith("task 1 (kernel exp at host.py:") and err.message.endswith(
        f"needs {TENSOR_BYTES} bytes of ring 1's heap (1024 bytes): more than all of it"
    )
    assert "ring_heap=[0, 2048, 0, 0]" in err.hint and "PTO2_RING_HEAP" in err.hint


def test_a_scope_holding_more_tasks_than_its_window_is_an_error_at_the_submission():
    host = _flat(5)
    with pytest.raises(RingCapacityError) as info:
        _run(host, rand(ROWS, COLS), torch.zeros(ROWS, COLS), ring_task_window=(4, 0, 0, 0))
    err = info.value
    fifth = [s for s in host.body if hasattr(s, "value")][4]
    assert err.span == fifth.span
    assert err.message.startswith("ring 0's task window (4 task slots) is full when task 5 (kernel exp")
    assert "held by tasks of the body of host at host.py:0, which has not ended" in err.message
    assert err.hint.startswith(
        "raise RunConfig(ring_task_window=...) for ring 0, e.g. ring_task_window=[8, 0, 0, 0]"
    )
    assert "split the scope" in err.hint
    # Four fit: the same program of four tasks runs.
    _run(_flat(4), rand(ROWS, COLS), torch.zeros(ROWS, COLS), ring_task_window=(4, 0, 0, 0))


def test_the_dep_pool_holds_each_tasks_edges():
    a, out = rand(ROWS, COLS), torch.zeros(ROWS, COLS)
    report = _run(_flat(5), a, out)
    assert report.runtime_rings[0].peak_deps == 4  # tasks 2..5 wait for the one before each
    with pytest.raises(RingCapacityError, match="ring 0's dep pool \\(4 dependency-edge entries\\) is full"):
        _run(_flat(6), a, out, ring_dep_pool=(4, 0, 0, 0))
    torch.testing.assert_close(out, torch.exp(a))
