"""The chip's task graph and scheduler: edges from tensors and deps, the edges no_dep, pl.parallel and
atomic accumulation remove, concurrent tasks on different core groups, spmd blocks, the RaceError
when a removed edge was needed, deps on task id arrays, joins and predicates."""

from itertools import pairwise

import pytest
import torch
from sim_lowered import FunctionBuilder, program, rand, run, tensor_t

from pypto.ir import (
    INDEX,
    TASK_ID,
    AccessMode,
    AtomicType,
    DataType,
    Direction,
    FunctionKind,
    LoopKind,
    Predicate,
    RaceError,
    Var,
)
from pypto.ir import MemorySpace as Mem
from pypto_sim_a2a3.target import A2A3_TARGET

ROWS, COLS = 64, 128
COST = A2A3_TARGET.cost


def unary(name, op="tile.exp", total=ROWS, atomic=False):
    """AIV kernel ``name(a, out, r)``: ``out[r:r+64] = op(a[r:r+64])`` (or ``+=`` when atomic)."""
    k = FunctionBuilder(name, FunctionKind.AIV)
    a = k.param("a", tensor_t((total, COLS)))
    out = k.param("out", tensor_t((total, COLS)), Direction.InOut if atomic else Direction.Out)
    row = k.param("r", INDEX)
    x = k.op("x", "tile.load", a, [row, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    y = k.op("y", op, x)
    if atomic:
        k.do("tile.store_atomic", y, [row, 0], out, atomic=AtomicType.Add)
    else:
        k.do("tile.store", y, [row, 0], out)
    return k.build()


def host(*tensors, out=()):
    """An orchestration builder with In tensor params ``tensors`` and Out params ``out``."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    params = [b.param(n, tensor_t((ROWS, COLS))) for n in tensors]
    params += [b.param(n, tensor_t((ROWS, COLS)), Direction.Out) for n in out]
    return b, params


def spans(report):
    return {t.task_id: (t.start_cycle, t.end_cycle) for t in report.tasks}


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


def test_a_reader_waits_for_the_writer_and_the_dispatch_costs_are_paid():
    b, (a, s, out) = host("a", out=("s", "out"))
    b.call("exp", a, s, 0)
    b.call("neg", s, out, 0)
    report = run(
        program(b.build(), unary("exp"), unary("neg", "tile.neg")),
        rand(ROWS, COLS),
        *torch.zeros(2, ROWS, COLS),
    )
    assert edges(report) == {(1, 2): "s"}
    (s1, e1), (s2, _) = spans(report).values()
    assert s1 == COST["task_submit_cycles"] + COST["task_schedule_cycles"]
    assert (
        s2 == e1 + COST["task_complete_cycles"] + COST["task_resolve_cycles"] + COST["task_schedule_cycles"]
    )


def test_independent_tasks_run_at_once_on_different_core_groups():
    b, (a, c, o1, o2) = host("a", "c", out=("o1", "o2"))
    b.call("exp", a, o1, 0)
    b.call("exp", c, o2, 0)
    x, y, out1, out2 = (
        rand(ROWS, COLS),
        rand(ROWS, COLS, seed=1),
        torch.zeros(ROWS, COLS),
        torch.zeros(ROWS, COLS),
    )
    report = run(program(b.build(), unary("exp")), x, y, out1, out2)
    torch.testing.assert_close(out2, y.exp())
    assert report.edges == []
    assert sorted(t.core_group for t in report.tasks) == [0, 1]
    (s1, e1), (s2, e2) = spans(report).values()
    assert s2 < e1  # they overlap
    assert report.total_cycles < (e1 - s1) + (e2 - s2)


def test_two_readers_do_not_wait_for_each_other_but_a_later_writer_waits_for_both():
    b, (a, o1, o2) = host("a", out=("o1", "o2"))
    b.call("exp", a, o1, 0)
    b.call("neg", a, o2, 0)
    b.call("exp", o2, a, 0)  # overwrites a, which both read
    report = run(
        program(b.build(), unary("exp"), unary("neg", "tile.neg")),
        rand(ROWS, COLS),
        *torch.zeros(2, ROWS, COLS),
    )
    assert edges(report) == {(1, 3): "a", (2, 3): "o2"}


def test_a_writer_waits_for_the_last_writer_only():
    b, (a, out) = host("a", out=("out",))
    for _ in range(3):
        b.call("exp", a, out, 0)
    report = run(program(b.build(), unary("exp")), rand(ROWS, COLS), torch.zeros(ROWS, COLS))
    assert edges(report) == {(1, 2): "out", (2, 3): "out"}


def test_a_declared_dep_orders_tasks_that_share_no_tensor():
    b, (a, c, o1, o2) = host("a", "c", out=("o1", "o2"))
    b.call("exp", a, o1, 0, task="first")
    b.call("exp", c, o2, 0, deps=("first",))
    report = run(
        program(b.build(), unary("exp")), rand(ROWS, COLS), rand(ROWS, COLS), *torch.zeros(2, ROWS, COLS)
    )
    assert edges(report) == {(1, 2): None}
    (_, e1), (s2, _) = spans(report).values()
    assert s2 > e1


def _parallel_rows(kernel, count, step):
    """``out`` [256, 128] written by ``count`` tasks of a pl.parallel loop, task i at row ``i * step``."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((256, COLS)))
    out = b.param("out", tensor_t((256, COLS)), Direction.Out)
    with b.loop("i", 0, count, kind=LoopKind.parallel) as i:
        b.call(kernel.name, a, out, b.scalar("scalar.mul", i, step))
    return program(b.build(), kernel)


def test_the_iterations_of_a_parallel_loop_take_no_edge_from_each_other():
    prog = _parallel_rows(unary("exp", total=256), 4, ROWS)
    a, out = rand(256, COLS), torch.zeros(256, COLS)
    report = run(prog, a, out)
    torch.testing.assert_close(out, a.exp())
    assert report.edges == [] and len({t.core_group for t in report.tasks}) == 4


def test_parallel_iterations_that_write_the_same_rows_are_a_race():
    prog = _parallel_rows(unary("exp", total=256), 2, 0)
    with pytest.raises(RaceError, match=r"iterations of one pl\.parallel loop") as info:
        run(prog, rand(256, COLS), torch.zeros(256, COLS))
    assert "task 1 (kernel exp" in str(info.value) and "task 2 (kernel exp" in str(info.value)


def test_atomic_accumulators_do_not_wait_for_each_other_and_a_reader_waits_for_all():
    acc = unary("acc", atomic=True)
    b, (a, s, out) = host("a", out=("s", "out"))
    for _ in range(3):
        b.call("acc", a, s, 0, access=(AccessMode.In, AccessMode.Accumulate, None))
    b.call("neg", s, out, 0)
    x, total = rand(ROWS, COLS), torch.zeros(ROWS, COLS)
    report = run(program(b.build(), acc, unary("neg", "tile.neg")), x, total, torch.zeros(ROWS, COLS))
    torch.testing.assert_close(total, 3 * x.exp())
    assert edges(report) == {(1, 4): "s", (2, 4): "s", (3, 4): "s"}


def test_an_edge_removed_with_no_dep_that_the_data_needed_is_a_race_naming_both_tasks():
    b, (a, s, out) = host("a", out=("s", "out"))
    b.call("exp", a, s, 0)
    b.call("neg", s, out, 0, no_dep=(0,))
    with pytest.raises(RaceError) as info:
        run(
            program(b.build(), unary("exp"), unary("neg", "tile.neg")),
            rand(ROWS, COLS),
            *torch.zeros(2, ROWS, COLS),
        )
    message = str(info.value)
    assert "task 1 (kernel exp at host.py:" in message and "task 2 (kernel neg at host.py:" in message
    assert "tracking of s is off for task 2" in message
    assert "exp.py:" in message and "neg.py:" in message  # the store's and the load's lines


def test_an_spmd_task_runs_its_blocks_on_separate_core_groups_with_their_block_index():
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((256, COLS)))
    out = k.param("out", tensor_t((256, COLS)), Direction.Out)
    row = k.scalar("scalar.mul", k.op("block", "get_block_idx"), ROWS)
    x = k.op("x", "tile.load", a, [row, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    args = [b.param("a", tensor_t((256, COLS))), b.param("out", tensor_t((256, COLS)), Direction.Out)]
    b.call("rows", *args, block_num=4)
    x, y = rand(256, COLS), torch.zeros(256, COLS)
    report = run(program(b.build(), k.build()), x, y)
    torch.testing.assert_close(y, x.exp())
    assert {(t.task_id, t.block, t.core_group) for t in report.tasks} == {(1, i, i) for i in range(4)}


def test_a_core_group_runs_one_task_at_a_time_and_is_reused_once_free():
    n = A2A3_TARGET.core_groups + 6
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    outs = [b.param(f"o{i}", tensor_t((ROWS, COLS)), Direction.Out) for i in range(n)]
    for out in outs:
        b.call("exp", a, out, 0)
    report = run(program(b.build(), unary("exp")), rand(ROWS, COLS), *torch.zeros(n, ROWS, COLS))
    groups = {t.core_group for t in report.tasks}
    assert 1 < len(groups) < n and groups <= set(range(A2A3_TARGET.core_groups))
    for group in groups:
        mine = sorted((t.start_cycle, t.end_cycle) for t in report.tasks if t.core_group == group)
        assert all(end <= start for (_, end), (start, _) in pairwise(mine))


def test_the_host_reading_a_tensor_waits_for_the_task_that_writes_it():
    b, (a, s) = host("a", out=("s",))
    b.call("exp", a, s, 0)
    value = b.op("v", "scalar.read", s, [0, 0])
    b.ret(value)
    x = rand(ROWS, COLS)
    report = run(program(b.build(), unary("exp")), x, torch.zeros(ROWS, COLS))
    assert report.outputs[0] == pytest.approx(float(x[0, 0].exp()))
    (wait,) = [s for s in report.timeline if s.core == "host" and s.name == "wait for the tasks writing s"]
    assert wait.end > report.tasks[0].end_cycle  # the task's end, then its retirement


# ---------------------------------------------------------------- task ids as values


def test_an_untracked_argument_gives_later_tasks_no_edge_either():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((2 * ROWS, COLS)))
    s_ = b.param("s", tensor_t((2 * ROWS, COLS)), Direction.Out)
    o = b.param("o", tensor_t((2 * ROWS, COLS)), Direction.Out)
    b.call("exp", a, s_, 0, no_dep=(1,))  # writes rows 0:64 of s, untracked
    b.call("exp", a, s_, ROWS)  # writes rows 64:128: no edge from the first, tracking was off for it
    b.call("neg", s_, o, ROWS)  # reads s: waits for the tracked writer only
    kernels = unary("exp", total=2 * ROWS), unary("neg", "tile.neg", total=2 * ROWS)
    x = rand(2 * ROWS, COLS)
    report = run(program(b.build(), *kernels), x, *torch.zeros(2, 2 * ROWS, COLS))
    assert edges(report) == {(2, 3): "s"}


def test_deps_on_an_array_waits_for_every_task_it_holds_and_skips_empty_slots():
    b, (a, o1, o2, o3) = host("a", out=("o1", "o2", "o3"))
    tids = b.op("tids", "array.create", size=3, dtype=DataType.TASK_ID)
    b.call("exp", a, o1, 0, task="t1")
    b.call("exp", a, o2, 0, task="t2")
    held = b.op("held", "array.update_element", tids, 0, Var("t1", TASK_ID))
    held = b.op("held2", "array.update_element", held, 2, Var("t2", TASK_ID))  # slot 1 stays empty
    b.call("neg", a, o3, 0, deps=("held2",))
    report = run(
        program(b.build(), unary("exp"), unary("neg", "tile.neg")),
        rand(ROWS, COLS),
        *torch.zeros(3, ROWS, COLS),
    )
    assert edges(report) == {(1, 3): None, (2, 3): None}


def test_a_join_completes_after_its_deps_and_its_dependents_wait_for_them():
    b, (a, o1, o2, o3) = host("a", out=("o1", "o2", "o3"))
    b.call("exp", a, o1, 0, task="t1")
    b.call("exp", a, o2, 0, task="t2")
    b.op("gate", "system.task_dummy", deps=("t1", "t2"))
    b.call("neg", a, o3, 0, deps=("gate",))
    report = run(
        program(b.build(), unary("exp"), unary("neg", "tile.neg")),
        rand(ROWS, COLS),
        *torch.zeros(3, ROWS, COLS),
    )
    assert edges(report) == {(1, 4): None, (2, 4): None}  # routed through the join (task 3)
    assert [t.blocks for t in report.submitted] == [1, 1, 0, 1]
    third = spans(report)[4]
    assert third[0] > max(spans(report)[1][1], spans(report)[2][1])
    join = report.submitted[2]
    assert join.kernel == "pl.system.task_dummy" and join.retire_cycle is not None


def test_a_false_predicate_retires_the_task_without_running_it():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    b.param("flags", tensor_t((1, 2), DataType.INT32))  # the predicate reads it by name
    o1 = b.param("o1", tensor_t((ROWS, COLS)), Direction.Out)
    o2 = b.param("o2", tensor_t((ROWS, COLS)), Direction.Out)
    b.call("exp", a, o1, 0, task="t1", predicate=Predicate("flags", (0, 1), ">", 0))
    b.call("neg", a, o2, 0, deps=("t1",))
    x = rand(ROWS, COLS)
    for flag in (0, 5):
        o1, o2 = torch.zeros(ROWS, COLS), torch.zeros(ROWS, COLS)
        flags_value = torch.tensor([[0, flag]], dtype=torch.int32)
        report = run(program(b.build(), unary("exp"), unary("neg", "tile.neg")), x, flags_value, o1, o2)
        torch.testing.assert_close(o1, x.exp() if flag else torch.zeros(ROWS, COLS))
        torch.testing.assert_close(o2, -x)
        assert [t.skipped for t in report.submitted] == [not flag, False]
        assert sorted(spans(report)) == ([1, 2] if flag else [2])
