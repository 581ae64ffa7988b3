"""``pl.no_dep(t)`` at a kernel-call argument (tracking off for that argument of that call, whatever
its direction; at run time it returns the tensor), ``with pl.spmd(n, ...) as tid:`` naming a
launch's task (with ``deps=``, ``predicate=`` and ``allow_early_resolve=``), and
``pl.dump_tag(t)`` in a ``@pl.jit`` body."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, RaceError
from pypto.runtime import RunConfig, compile_program

R, C = 32, 64
N = 4
T = pl.Tensor[[N * R, C], pl.FP32]
SIM = RunConfig(platform="a2a3sim")


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


def overlapping(report, a, b):
    sa = next(t for t in report.tasks if t.task_id == a)
    sb = next(t for t in report.tasks if t.task_id == b)
    return sa.start_cycle < sb.end_cycle and sb.start_cycle < sa.end_cycle


def bands(marked: bool):
    """Two tasks writing disjoint row bands of one output, the second's output argument marked
    pl.no_dep when ``marked``."""

    @pl.program
    class Bands:
        @pl.function(type=pl.FunctionType.InCore)
        def band(self, a: T, row: pl.Scalar[pl.INDEX], out: pl.InOut[T]) -> T:
            return pl.store(pl.exp(pl.load(a, [row, 0], [R, C])), [row, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: T, out: pl.Out[T]) -> T:
            out = self.band(a, 0, out)
            if marked:  # noqa: SIM108 - the parser folds a compile-time if, not a conditional expression
                out = self.band(a, R, pl.no_dep(out))
            else:
                out = self.band(a, R, out)
            return out

    return Bands


def test_no_dep_removes_the_edge_through_one_argument():
    a = rand(N * R, C)
    reports = {}
    for marked in (False, True):
        out = torch.zeros(N * R, C)
        compiled = compile_program(bands(marked), SIM)
        compiled.run(a, out)
        torch.testing.assert_close(out[0 : 2 * R], a[0 : 2 * R].exp())
        reports[marked] = compiled.last_report
    assert edges(reports[False]) == {(1, 2): "out"}
    assert edges(reports[True]) == {} and overlapping(reports[True], 1, 2)
    text = bands(True).as_python()
    assert "no_dep=[2]" in text


def test_no_dep_at_run_time_returns_the_tensor():
    t = torch.ones(3)
    assert pl.no_dep(t) is t


def test_no_dep_on_a_needed_edge_is_a_race():
    @pl.program
    class Overlap:
        @pl.function(type=pl.FunctionType.InCore)
        def produce(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.exp(pl.load(a, [0, 0], [N * R, C])), [0, 0], out)

        @pl.function(type=pl.FunctionType.InCore)
        def consume(self, x: T, out: pl.Out[T]) -> T:
            return pl.store(pl.neg(pl.load(x, [0, 0], [N * R, C])), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: T, tmp: pl.Out[T], out: pl.Out[T]) -> T:
            tmp = self.produce(a, tmp)
            out = self.consume(pl.no_dep(tmp), out)
            return out

    with pytest.raises(RaceError) as info:
        compile_program(Overlap, SIM).run(rand(N * R, C), torch.zeros(N * R, C), torch.zeros(N * R, C))
    assert "tracking of tmp is off for task 2 (no_dep_args=, pl.no_dep" in info.value.message


def test_no_dep_outside_a_kernel_call_argument_is_an_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        marked = pl.no_dep(out)  # the line
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return marked

    with pytest.raises(ParseError) as info:
        bad.lower(rand(N * R, C), torch.zeros(N * R, C))
    assert (
        info.value.message == "pl.no_dep(t) marks an argument of a kernel call: it stands in the call itself"
    )
    assert info.value.span.line == line_of("marked = pl.no_dep(out)  # the line")
    assert "no_dep_args=[out]" in info.value.hint


@pl.jit.incore
def scaled(a: T, s: pl.Scalar[pl.FP32], out: pl.Out[T]):
    pl.store(pl.mul(pl.load(a, [0, 0], [N * R, C]), s), [0, 0], out)
    return out


def test_no_dep_on_a_scalar_argument_is_an_error():
    @pl.jit
    def bad(a: T, out: pl.Out[T]):
        out = scaled(a, pl.no_dep(2.0), out)  # the scalar line
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(N * R, C), torch.zeros(N * R, C))
    assert info.value.message == "pl.no_dep marks a tensor argument, got the float 2.0"
    assert info.value.span.line == line_of("out = scaled(a, pl.no_dep(2.0), out)  # the scalar line")


# ---------------------------------------------------------------- with pl.spmd(...) as tid


@pl.jit
def named_launch(x: T, flags: pl.Tensor[[2], pl.INT32], out: pl.Out[T], last: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill") as filled:
        out[:] = pl.add(x, 0.0)
    with pl.spmd(N, name_hint="rows", deps=[filled], allow_early_resolve=True) as rows:
        i = pl.get_block_idx()
        out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    with pl.spmd(1, deps=[rows], predicate=(flags[1] == 1)) as maybe:  # noqa: SIM117 - the dispatch form
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="maybe"):
            last[:] = pl.neg(out)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="done", deps=[maybe]):
        last[0:1, :] = pl.add(last[0:1, :], 0.0)
    return last


@pytest.mark.parametrize("flag", [0, 1])
def test_a_named_spmd_launch_takes_deps_and_a_predicate(flag):
    x = rand(N * R, C, seed=3)
    out, last = torch.zeros(N * R, C), torch.zeros(N * R, C)
    named_launch(x, torch.tensor([0, flag], dtype=torch.int32), out, last, config=SIM)
    torch.testing.assert_close(out, x.exp())
    torch.testing.assert_close(last, -x.exp() if flag else torch.zeros(N * R, C))
    report = named_launch.last_report
    assert [t.skipped for t in report.submitted] == [False, False, not flag, False]
    assert sorted(t.block for t in report.tasks if t.kernel == "rows") == [0, 1, 2, 3]
    # the skipped launch's dependents wait for what it waited for
    assert {(1, 2), (2, 3) if flag else (2, 4)} <= set(edges(report))


def test_a_named_spmd_launch_of_several_tasks_is_an_error():
    @pl.jit
    def two(x: T, out: pl.Out[T]):
        with pl.spmd(N) as both:  # the two-task launch
            with pl.at(level=pl.Level.CORE_GROUP):
                i = pl.get_block_idx()
                out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
            with pl.at(level=pl.Level.CORE_GROUP):
                j = pl.get_block_idx()
                out[j * R : j * R + R, :] = pl.neg(x[j * R : j * R + R, :])
        with pl.at(level=pl.Level.CORE_GROUP, deps=[both]):
            out[0:1, :] = pl.add(out[0:1, :], 0.0)
        return out

    with pytest.raises(ParseError) as info:
        two.lower(rand(N * R, C), torch.zeros(N * R, C))
    assert (
        info.value.message
        == "`pl.spmd(...) as both` names the launch's one task, but its body launches 2 tasks"
    )


def test_pl_at_has_no_predicate():
    @pl.jit
    def bad(x: T, flags: pl.Tensor[[2], pl.INT32], out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP, predicate=(flags[0] > 0)):  # the pl.at line
            out[:] = pl.exp(x)
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(N * R, C), torch.zeros(2, dtype=torch.int32), torch.zeros(N * R, C))
    assert info.value.message == "pl.at() has no predicate=: a pl.at scope always runs"
    assert "pl.spmd(1, deps=[...], predicate=" in info.value.hint


# ---------------------------------------------------------------- pl.dump_tag in a @pl.jit body


@pl.jit
def tagged(x: T, y: T, out: pl.Out[T]):
    pl.dump_tag(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="uses_x"):
        out[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="uses_y", dumps=[y]):
        out[:] = pl.add(out, y)
    return out


def test_dump_tags_and_dumps_reach_the_tasks_that_take_the_tensors():
    x, y, out = rand(N * R, C), rand(N * R, C, seed=4), torch.zeros(N * R, C)
    tagged(x, y, out, config=SIM)
    torch.testing.assert_close(out, x.exp() + y)
    entry = tagged.lower(x, y, out).entry_function
    calls = [s.value for s in entry.body if getattr(s, "value", None) is not None and s.value.op == "call"]
    assert [c.attrs.get("dumps") for c in calls] == [("x",), ("y",)]
    assert pl.dump_tag(x) is None  # outside a kernel it does nothing


def test_dump_tag_in_kernel_code_is_an_error():
    @pl.jit
    def bad(x: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.dump_tag(x)  # in the scope
            out[:] = pl.exp(x)
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(N * R, C), torch.zeros(N * R, C))
    assert info.value.message.startswith("pl.dump_tag(t) marks a tensor where tasks are dispatched")
    assert info.value.span.line == line_of("pl.dump_tag(x)  # in the scope")
