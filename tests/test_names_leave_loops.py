"""Names first bound inside a loop and read after it, and native ``while`` loops, on a2a3sim
against torch (issue #35 item 1): as in Python, such a name holds the last iteration's value
after the loop; a ``while cond:`` carries the names it rebinds and tests ``cond`` at run time."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import For, ParseError, While
from pypto.ir.nodes import walk_stmts
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
X = pl.Tensor[[256, 64], pl.FP32]
T = pl.Tensor[[64, 64], pl.FP32]


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit.incore
def doubled_blocks(a: X, out: pl.Out[X]):
    for i in pl.range(4):
        t = pl.load(a, [i * 64, 0], [64, 64])
        written = pl.store(pl.add(t, t), [i * 64, 0], out)
    return written  # first bound in the loop: it names `out`, which the store returns


@pl.jit
def calls_doubled_blocks(a: X, out: pl.Out[X]):
    out = doubled_blocks(a, out)
    return out


def test_an_incore_function_returns_a_name_bound_in_its_loop():
    a, out = rand(256, 64), torch.zeros(256, 64)
    calls_doubled_blocks(a, out, config=SIM)
    torch.testing.assert_close(out, a + a)


@pl.program
class YieldedReturn:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, a: X, out: pl.Out[X]) -> X:
        for i in pl.range(4):
            t = pl.load(a, [i * 64, 0], [64, 64])
            stored = pl.store(pl.exp(t), [i * 64, 0], out)
            result = pl.yield_(stored)
        return result

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: X, out: pl.Out[X]) -> X:
        out = self.kernel(a, out)
        return out


def test_a_program_function_returns_the_yield_of_its_loop():
    from pypto.runtime import run

    a, out = rand(256, 64), torch.zeros(256, 64)
    run(YieldedReturn, a, out)
    torch.testing.assert_close(out, torch.exp(a))


@pl.jit
def last_block(a: X, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            t = pl.load(a, [i * 64, 0], [64, 64])
            scale = i + 1
        pl.store(pl.mul(t, pl.cast(scale, pl.FP32)), [0, 0], out)
    return out


def test_a_tile_and_a_scalar_made_in_a_loop_hold_the_last_iteration_after_it():
    a, out = rand(256, 64), torch.zeros(64, 64)
    last_block(a, out, config=SIM)
    torch.testing.assert_close(out, a[192:] * 4)
    program = last_block.parse(a, out)
    (loop,) = (s for s in walk_stmts(program.entry_function.body) if isinstance(s, For))
    assert [v.name.split("_")[0] for v in loop.results] == ["t", "scale"]


@pl.jit
def stop_at(a: X, stop: pl.Scalar[pl.INDEX], out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            if i == stop:
                break
            t = pl.load(a, [i * 64, 0], [64, 64])
        pl.store(t, [0, 0], out)
    return out


@pytest.mark.parametrize("stop", [1, 3, 9])
def test_break_hands_on_the_value_the_name_has_at_the_break(stop):
    a, out = rand(256, 64), torch.zeros(64, 64)
    stop_at(a, stop, out, config=SIM)
    last = min(stop, 4) - 1  # the break comes before the load: t is the iteration before's
    torch.testing.assert_close(out, a[last * 64 : last * 64 + 64])


@pl.jit
def nested(a: X, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            for j in pl.range(2):
                t = pl.load(a, [(2 * i + j) * 64, 0], [64, 64])
        pl.store(t, [0, 0], out)
    return out


def test_a_name_leaves_nested_loops():
    a, out = rand(256, 64), torch.zeros(64, 64)
    nested(a, out, config=SIM)
    torch.testing.assert_close(out, a[192:])


@pl.jit
def while_blocks(a: X, out: pl.Out[X], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        while i < n:
            t = pl.load(a, [i * 64, 0], [64, 64])
            out = pl.store(pl.add(t, t), [i * 64, 0], out)
            i = i + 1
    return out


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_native_while_loop_runs_while_its_run_time_condition_holds(n):
    a, out = rand(256, 64), torch.zeros(256, 64)
    while_blocks(a, out, n, config=SIM)
    expected = torch.zeros(256, 64)
    expected[: n * 64] = 2 * a[: n * 64]
    torch.testing.assert_close(out, expected)
    program = while_blocks.parse(a, out, n)
    loops = [s for s in walk_stmts(program.entry_function.body) if isinstance(s, While)]
    if n == 0:  # n is a compile-time constant here: `0 < 0` skips the loop
        assert not loops
    else:
        assert [v.name.split("_")[0] for v in loops[0].iter_args] == ["i"]


@pl.jit
def while_true_with_break(a: X, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(a, [0, 0], [64, 64])
        k = 1
        while True:
            if k >= 4:
                break
            acc = pl.add(acc, pl.load(a, [k * 64, 0], [64, 64]))
            k = k + 1
        pl.store(acc, [0, 0], out)
    return out


def test_while_true_ends_at_its_break():
    a, out = rand(256, 64), torch.zeros(64, 64)
    while_true_with_break(a, out, config=SIM)
    torch.testing.assert_close(out, a.view(4, 64, 64).sum(0), rtol=1e-5, atol=1e-5)


@pl.jit
def never_entered(a: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        while False:
            t = pl.exp(t)
        pl.store(t, [0, 0], out)
    return out


def test_a_while_false_at_compile_time_is_no_loop():
    a, out = rand(64, 64), torch.zeros(64, 64)
    never_entered(a, out, config=SIM)
    torch.testing.assert_close(out, a)
    program = never_entered.parse(a, out)
    assert not any(isinstance(s, While) for s in walk_stmts(program.entry_function.body))


@pl.jit
def stuck(a: T, out: pl.Out[T], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        t = pl.load(a, [0, 0], [64, 64])
        while i < n:
            t = pl.exp(t)
        pl.store(t, [0, 0], out)
    return out


def test_a_while_loop_whose_condition_never_changes_is_an_error_at_the_condition():
    with pytest.raises(ParseError) as info:
        stuck.parse(rand(64, 64), torch.zeros(64, 64), 2)
    assert info.value.message.startswith("this while loop never ends once it starts")
    assert "`i < n`" in info.value.message
    assert info.value.span.line == stuck.__wrapped__.__code__.co_firstlineno + 5
    assert "i = i + 1" in info.value.hint


@pl.jit
def while_else(a: T, out: pl.Out[T], n: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        i = 0
        while i < n:
            i = i + 1
        else:
            pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
    return out


def test_while_else_is_an_error():
    with pytest.raises(ParseError, match=r"while \.\.\. else is not supported"):
        while_else.parse(rand(64, 64), torch.zeros(64, 64), 2)


@pl.jit
def rebinds_after(a: X, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            scale = i + 1
        scale = scale * 2  # reads the loop's value before binding the name again
        pl.store(pl.mul(pl.load(a, [0, 0], [64, 64]), pl.cast(scale, pl.FP32)), [0, 0], out)
    return out


def test_a_name_read_by_the_assignment_that_rebinds_it_after_the_loop_leaves_the_loop():
    a, out = rand(256, 64), torch.zeros(64, 64)
    rebinds_after(a, out, config=SIM)
    torch.testing.assert_close(out, a[:64] * 8)
