"""``pl.submit`` / ``pl.spmd_submit`` / ``pl.system.task_dummy`` in a ``@pl.program``: the result
shapes (the kernel's tensors, then the task id), their options (``deps=``, ``dumps=``,
``allow_early_resolve=``, ``predicate=``, ``core_num=``, ``sync_start=``), the join, and the errors
the manual names, each at the user's line."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, RaceError, structural_diff
from pypto.language.errors import KernelOnlyError
from pypto.runtime import RunConfig, compile_program

R, C = 32, 64
T = pl.Tensor[[R, C], pl.FP32]
B = pl.Tensor[[4 * R, C], pl.FP32]
FLAG = pl.Tensor[[1, 4], pl.INT32]
SIM = RunConfig(platform="a2a3sim")


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def running(program, *args):
    compiled = compile_program(program, SIM)
    compiled.run(*args)
    return compiled.last_report


def edges(report):
    return {(e.src, e.dst) for e in report.edges}


@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: T, out: pl.Out[T]) -> T:
        t = pl.load(a, [0, 0], [R, C])
        return pl.store(pl.add(t, t), [0, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: T, out: pl.Out[T]):
        pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), 3.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, tmp: pl.Out[T], other: pl.Out[T], out: pl.Out[T]) -> T:
        tmp, t0 = pl.submit(self.double, a, tmp)  # a result, then the task id
        res = pl.submit(self.double, tmp, out, deps=[t0])  # the whole flat tuple in one name
        t2 = pl.submit(self.scale, a, other)  # a kernel that returns nothing: its task id
        out, t1 = res
        gate = pl.system.task_dummy(deps=[t1, t2])
        out, _ = pl.submit(self.double, out, out, deps=[gate])
        return out


def test_submit_results_then_task_id_and_a_join():
    a = rand(R, C)
    tmp, other, out = torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C)
    report = running(Chain, a, tmp, other, out)
    torch.testing.assert_close(out, a * 8)
    torch.testing.assert_close(other, a * 3)
    # tasks: 1 double, 2 double, 3 scale, 4 the join, 5 double; the join's edges reach through it
    assert edges(report) == {(1, 2), (2, 5), (3, 5)}
    assert [t.blocks for t in report.submitted] == [1, 1, 1, 0, 1]
    assert sorted({t.task_id for t in report.tasks}) == [1, 2, 3, 5]


def test_the_submit_program_prints_as_pl_that_reads_back_equal():
    text = Chain.as_python()
    assert "pl.system.task_dummy(deps=[" in text
    assert structural_diff(pl.parse(text), Chain) is None


@pl.program
class Gated:
    @pl.function(type=pl.FunctionType.InCore)
    def flag(self, x: B, flags: pl.Out[FLAG]) -> FLAG:
        pl.store(pl.full([1, 4], dtype=pl.INT32, value=0), [0, 0], flags)  # the gate: 0
        return flags

    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: B, out: pl.Out[B]) -> B:
        row = pl.tile.get_block_idx() * R
        return pl.store(pl.exp(pl.load(x, [row, 0], [R, C])), [row, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def after(self, x: B, out: pl.Out[B]) -> B:
        return pl.store(pl.neg(pl.load(x, [0, 0], [R, C])), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: B, flags: pl.Out[FLAG], gate: FLAG, out: pl.Out[B], last: pl.Out[B]) -> B:
        with pl.manual_scope():
            flags, made = pl.submit(self.flag, x, flags)
            out, skipped = pl.spmd_submit(
                self.rows, x, out, core_num=4, deps=[made], predicate=(flags[0, 0] > 0)
            )
            out, ran = pl.spmd_submit(
                self.rows, x, out, core_num=4, sync_start=True, predicate=(gate[0, 1] == 7)
            )
            last, _ = pl.submit(self.after, x, last, deps=[skipped, ran])
        return last


def test_spmd_submit_blocks_and_predicates_read_at_dispatch():
    x = rand(4 * R, C, seed=1)
    flags = torch.ones(1, 4, dtype=torch.int32)
    gate = torch.tensor([[0, 7, 0, 0]], dtype=torch.int32)
    out, last = torch.zeros(4 * R, C), torch.zeros(4 * R, C)
    report = running(Gated, x, flags, gate, out, last)
    torch.testing.assert_close(out, x.exp())  # the second launch ran, the first was skipped
    assert torch.equal(last[0:R], -x[0:R]) and torch.count_nonzero(last[R:]) == 0
    assert [t.skipped for t in report.submitted] == [False, True, False, False]
    assert sorted(t.block for t in report.tasks if t.task_id == 3) == [0, 1, 2, 3]
    assert not [t for t in report.tasks if t.task_id == 2]
    # the task after the skipped one still ran, after what the skipped one waited for
    assert edges(report) == {(1, 4), (3, 4)}


def test_a_predicate_whose_producer_is_not_in_deps_is_a_race():
    @pl.program
    class Unordered:
        @pl.function(type=pl.FunctionType.InCore)
        def flag(self, x: T, flags: pl.Out[FLAG]) -> FLAG:
            pl.store(pl.full([1, 4], dtype=pl.INT32, value=1), [0, 0], flags)
            return flags

        @pl.function(type=pl.FunctionType.InCore)
        def double(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.add(pl.load(a, [0, 0], [R, C]), 1.0), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: T, flags: pl.Out[FLAG], out: pl.Out[T]) -> T:
            flags, _made = pl.submit(self.flag, x, flags)
            out, _ = pl.submit(self.double, x, out, predicate=(flags[0, 2] != 0))  # no deps=[_made]
            return out

    with pytest.raises(RaceError) as info:
        running(Unordered, rand(R, C), torch.zeros(1, 4, dtype=torch.int32), torch.zeros(R, C))
    assert "the predicate= of task 2" in info.value.message
    assert "predicate= reads it when the task is dispatched" in info.value.message
    assert "deps=[...]" in info.value.hint


@pl.program
class Dumped:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: T, b: T, out: pl.Out[T]) -> T:
        return pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, b: T, out: pl.Out[T]) -> T:
        out, _t0 = pl.submit(self.double, a, b, out, dumps=[a, out], allow_early_resolve=True)
        pl.dump_tag(b)
        out = self.double(a, b, out)
        return out


def test_dumps_and_dump_tags_are_recorded_on_the_tasks():
    calls = [s.value for s in Dumped.function("main").body if hasattr(s, "value") and s.value.op == "call"]
    assert calls[0].attrs["dumps"] == ("a", "out") and calls[0].attrs["allow_early_resolve"] is True
    assert calls[1].attrs["dumps"] == ("b",)
    a, b, out = rand(R, C), rand(R, C, seed=2), torch.zeros(R, C)
    running(Dumped, a, b, out)
    torch.testing.assert_close(out, a + b)
    text = Dumped.as_python()
    assert "dumps=['a', 'out']" in text and "dumps=['b']" in text
    assert structural_diff(pl.parse(text), Dumped) is None


# ---------------------------------------------------------------- errors


def program_error(body: str, kernel_returns: bool = True) -> ParseError:
    """The ParseError of a program whose Orchestration function runs ``body``."""
    ret = " -> T" if kernel_returns else ""
    source = f"""
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: T, out: pl.Out[T]){ret}:
        t = pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)
        {"return t" if kernel_returns else "pass"}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, out: pl.Out[T]) -> T:
{body}
        return out
"""
    with pytest.raises(ParseError) as info:
        pl.parse(source, globals={"T": T, "R": R, "C": C})
    return info.value


def test_unpacking_more_results_than_the_kernel_returns_is_an_error():
    err = program_error("        out, tid = pl.submit(self.k, a, out)", kernel_returns=False)
    assert "unpacks 1 result value(s) but kernel returns 0" in err.message
    assert "then the task id" in err.hint


def test_a_deps_entry_reached_by_indexing_a_submit_result_is_an_error():
    err = program_error(
        "        res = pl.submit(self.k, a, out)\n        out, _ = pl.submit(self.k, a, out, deps=[res[1]])"
    )
    assert err.message.startswith("deps= entries must be a TaskId variable")
    assert "`res[1]`" in err.message and "bind the task id to a name" in err.hint


def test_a_deps_entry_naming_a_whole_submit_result_is_an_error():
    err = program_error(
        "        res = pl.submit(self.k, a, out)\n        out, _ = pl.submit(self.k, a, out, deps=[res])"
    )
    assert "'res', the whole result of pl.submit" in err.message


def test_spmd_submit_needs_core_num():
    err = program_error("        out, tid = pl.spmd_submit(self.k, a, out)")
    assert err.message.startswith("pl.spmd_submit(...) needs core_num=N")


def test_dumps_naming_no_argument_of_the_submit_is_an_error():
    err = program_error(
        "        out, tid = pl.submit(self.k, a, out, dumps=[a, out, a])\n        x, t = pl.submit(self.k, a, out, dumps=[x])"
    )
    assert "unknown name 'x'" in err.message
    err = program_error(
        "        b = pl.create_tensor([R, C], pl.FP32)\n        out, tid = pl.submit(self.k, a, out, dumps=[b])"
    )
    assert "dumps= names b, which is not a positional argument of this pl.submit" in err.message


def test_dumps_on_a_plain_kernel_call_is_an_error():
    err = program_error("        out = self.k(a, out, dumps=[a])")
    assert err.message == "dumps= is not taken by a plain kernel call: the call is fire-and-forget"
    assert "pl.dump_tag(t)" in err.hint


def test_a_predicate_of_another_form_is_an_error():
    for predicate, message in [
        ("out[0, 0] > 0", "predicate= compares an integer or BOOL element, but out is FP32"),
        ("a > 0", "predicate= compares one tensor element, got `a`"),
        ("0 < 1 < 2", "predicate= takes one comparison, got `0 < 1 < 2`"),
    ]:
        err = program_error(f"        out, tid = pl.submit(self.k, a, out, predicate=({predicate}))")
        assert err.message == message


def test_task_dummy_takes_only_deps():
    err = program_error("        g = pl.system.task_dummy(3)")
    assert err.message == "pl.system.task_dummy() takes only deps=[...]"


def test_task_constructs_called_from_python_raise():
    for construct, name in [
        (pl.submit, "pl.submit"),
        (pl.spmd_submit, "pl.spmd_submit"),
        (pl.system.task_dummy, "pl.system.task_dummy"),
    ]:
        with pytest.raises(KernelOnlyError) as info:
            construct(deps=[])
        assert info.value.message == f"{name} is a DSL parser construct and cannot be called directly"


def test_submit_in_kernel_code_is_an_error():
    with pytest.raises(ParseError) as info:

        @pl.program
        class InKernel:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: T, out: pl.Out[T]) -> T:
                return pl.store(pl.load(a, [0, 0], [R, C]), [0, 0], out)

            @pl.function(type=pl.FunctionType.InCore)
            def bad(self, a: T, out: pl.Out[T]) -> T:
                out, _tid = pl.submit(self.k, a, out)  # the line
                return out

    assert "pl.submit(...) submits a task from the orchestration" in info.value.message
    assert info.value.span.line == line_of("out, _tid = pl.submit(self.k, a, out)  # the line")
