"""What the report keeps for the tuning files: each task from submission to retirement (the task
window) and each core's heap per kernel it ran, planned by the memory plan and touched by the run."""

import torch
from sim_lowered import FunctionBuilder, program, rand, run, single, tensor_t, vector_binary_kernel
from sim_mixed import MatmulBias

from pypto.ir import Direction, Function, FunctionKind
from pypto.ir import MemorySpace as Mem
from pypto_sim_a2a3.target import A2A3_TARGET

COST = A2A3_TARGET.cost
ROWS, COLS = 64, 128
TILE = ROWS * COLS * 4


def _exp(name: str, at: dict[str, int] | None = None) -> Function:
    """AIV kernel ``out = exp(a)`` over one tile (``at`` pins tiles' offsets)."""
    k = FunctionBuilder(name, FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    out = k.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    x = k.op("x", "tile.load", a, [0, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [0, 0], out)
    return k.build(at=at)


def _chain():
    """``s = exp(a)`` then ``out = exp(s)``: two tasks, the second waiting for the first."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    s = b.param("s", tensor_t((ROWS, COLS)), Direction.Out)
    out = b.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    b.call("exp", a, s)
    b.call("exp", s, out)
    return run(program(b.build(), _exp("exp")), rand(ROWS, COLS), *torch.zeros(2, ROWS, COLS))


def test_each_task_is_in_the_window_from_its_submission_to_its_retirement():
    report = _chain()
    submit = COST["task_submit_cycles"]
    assert [(t.task_id, t.kernel, t.submit_cycle) for t in report.submitted] == [
        (1, "exp", submit),
        (2, "exp", 2 * submit),
    ]
    ends = {t.task_id: t.end_cycle for t in report.tasks}
    for task in report.submitted:
        assert task.retire_cycle is not None
        assert task.retire_cycle >= ends[task.task_id] + COST["task_complete_cycles"]
    # The second task was submitted while the first ran: two tasks in the window at once.
    first, second = report.submitted
    assert second.submit_cycle < first.retire_cycle


def test_a_cores_heap_is_its_memory_plans_top_and_the_top_the_run_touched():
    a, b = rand(ROWS, COLS), rand(ROWS, COLS, seed=1)
    report = run(single(vector_binary_kernel("tile.add")), a, b, torch.zeros(ROWS, COLS))
    (heap,) = report.heaps
    assert (heap.core, heap.kernel, heap.task_id) == ("cg0.AIV0", "vec_add", 1)
    assert heap.planned == heap.touched == {"Vec": 3 * TILE}
    (task,) = report.tasks
    assert heap.start_cycle == task.start_cycle and heap.end_cycle == task.end_cycle
    assert report.usable_bytes["Vec"] == A2A3_TARGET.usable(Mem.Vec)


def test_the_touched_top_is_measured_where_the_run_placed_the_tiles():
    assert _exp("exp").attrs["memory_plan"].peak[Mem.Vec] == 2 * TILE
    high = 100_000  # y pinned high: the run touches up to its end
    report = run(single(_exp("exp", at={"y": high})), rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    (heap,) = report.heaps
    assert heap.touched == heap.planned == {"Vec": high + TILE}


def test_each_core_of_a_group_launch_has_its_own_heap_with_the_ring_at_the_bottom():
    kernel = MatmulBias(blocks=2, rows=64)
    a, b, bias, out = kernel.args()
    report = run(kernel.program(), a, b, bias, out)
    heaps = {heap.core: heap for heap in report.heaps}
    assert {core: heap.kernel for core, heap in heaps.items()} == {
        "cg0.AIC": "mixed_aic",
        "cg0.AIV0": "mixed_aiv",
        "cg0.AIV1": "mixed_aiv",
    }
    assert set(heaps["cg0.AIC"].touched) == {"Mat", "Left", "Right", "Acc"}
    ring = kernel.slot_num * kernel.slot_size
    for lane in ("cg0.AIV0", "cg0.AIV1"):
        assert heaps[lane].touched["Vec"] > ring
        assert heaps[lane].planned["Vec"] >= heaps[lane].touched["Vec"]
