"""The argument dump on the chip (``options["dump_args"]``, :mod:`pypto.ir.argdump`): a sink gets
each task's reads before it starts and its writes once it is done, as that task saw them, with the
tasks overlapping; the modeled cycles are those of a run without it."""

import torch
from sim_lowered import FunctionBuilder, program, rand, tensor_t

from pypto.ir import INDEX, Direction, FunctionKind
from pypto.ir import MemorySpace as Mem
from pypto.ir.argdump import AFTER, BEFORE, DUMP_ARGS_OPTION, ArgDumpSink
from pypto_sim_a2a3.backend import A2A3SimBackend

ROWS, COLS = 64, 128


def unary(name, op):
    """AIV kernel ``name(a, out, r)``: ``out[r:r+64] = op(a[r:r+64])``."""
    k = FunctionBuilder(name, FunctionKind.AIV)
    a = k.param("a", tensor_t((ROWS, COLS)))
    out = k.param("out", tensor_t((ROWS, COLS)), Direction.Out)
    row = k.param("r", INDEX)
    x = k.op("x", "tile.load", a, [row, 0], shape=(ROWS, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", op, x), [row, 0], out)
    return k.build()


class Collected:
    """A sink keeping copies of what it is given."""

    def __init__(self, level):
        self.level = level
        self.got = []

    def dump(self, arg, tensor):
        self.got.append(
            (arg.task_id, arg.kernel, arg.slot.tensor, arg.slot.role.value, arg.when, tensor.clone())
        )


def chain(**marks):
    """exp(a) -> s, neg(s) -> out, and exp(c) -> o2 beside them (no edge with either)."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a, c = b.param("a", tensor_t((ROWS, COLS))), b.param("c", tensor_t((ROWS, COLS)))
    s, out, o2 = (b.param(n, tensor_t((ROWS, COLS)), Direction.Out) for n in ("s", "out", "o2"))
    b.call("exp", a, s, 0, **marks.get("first", {}))
    b.call("neg", s, out, 0, **marks.get("second", {}))
    b.call("exp", c, o2, 0)
    return program(b.build(), unary("exp", "tile.exp"), unary("neg", "tile.neg"))


def run(prog, sink=None):
    a, c = rand(ROWS, COLS), rand(ROWS, COLS, seed=1)
    outs = torch.zeros(3, ROWS, COLS)
    options = {} if sink is None else {DUMP_ARGS_OPTION: sink}
    report = A2A3SimBackend().run(prog, [a, c, *outs], options)
    return report, a, c


def test_level_2_gives_reads_before_and_writes_after_as_each_task_saw_them():
    sink = Collected(2)
    assert isinstance(sink, ArgDumpSink)
    report, a, c = run(chain(), sink)
    got = {(t, name, when): (kernel, role, value) for t, kernel, name, role, when, value in sink.got}
    assert set(got) == {
        (1, "a", BEFORE),
        (1, "s", AFTER),
        (2, "s", BEFORE),
        (2, "out", AFTER),
        (3, "c", BEFORE),
        (3, "o2", AFTER),
    }
    torch.testing.assert_close(got[1, "s", AFTER][2], a.exp())
    torch.testing.assert_close(got[2, "s", BEFORE][2], a.exp())
    torch.testing.assert_close(got[2, "out", AFTER][2], -a.exp())
    torch.testing.assert_close(got[3, "o2", AFTER][2], c.exp())
    assert got[2, "out", AFTER][:2] == ("neg", "output")
    assert len({t.core_group for t in report.tasks}) > 1  # the third task ran beside the others


def test_level_1_takes_only_the_marked_arguments():
    sink = Collected(1)
    run(chain(second={"dumps": ("out",)}), sink)
    assert [(t, name, when) for t, _, name, _, when, _ in sink.got] == [(2, "out", AFTER)]


def test_the_dump_costs_no_modeled_cycle():
    plain, _, _ = run(chain())
    dumped, _, _ = run(chain(), Collected(2))
    assert plain.total_cycles == dumped.total_cycles
    assert [(t.task_id, t.start_cycle, t.end_cycle) for t in plain.tasks] == [
        (t.task_id, t.start_cycle, t.end_cycle) for t in dumped.tasks
    ]
