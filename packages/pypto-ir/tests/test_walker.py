"""The shared walker of lowered programs (needs no torch): frames, loops with carried values,
ifs, returns, hooks that yield through the walk; and the launch plans of LoadedProgram."""

import itertools
import operator

import pytest

from pypto.ir import (
    INDEX,
    Assign,
    Call,
    Const,
    DataType,
    DeadlockError,
    Eval,
    For,
    Function,
    FunctionKind,
    If,
    LoopKind,
    Param,
    Program,
    Return,
    ScalarType,
    SplitMode,
    TensorType,
    Var,
    VerificationError,
    make_call,
)
from pypto.ir.errors import LoopStepError
from pypto.ir.launch import LoadedProgram
from pypto.ir.ops import op, scalar
from pypto.ir.ops import tile as tile_ops
from pypto.ir.walker import Walker, drive, take_turns

NUMBERS = {scalar.add: operator.add, scalar.lt: operator.lt}


class Recording(Walker):
    """Scalar math by Python operators; every op yields its name before its value."""

    def apply(self, call, args):
        yield call.op
        return NUMBERS[call.op](*args)


def index(value):
    return Const(value, INDEX)


def sum_below(step=None):
    """def f(n): acc = 0; for i in range(0, n, step) carrying acc: acc += i; return acc (or,
    once acc reaches 3 inside the loop, return it at once)."""
    n, i = Var("n", INDEX), Var("i", INDEX)
    acc, acc_in, acc_next, acc_out = (Var(name, INDEX) for name in ("acc", "acc_in", "acc_next", "acc_out"))
    body = (
        Assign(acc_next, make_call(scalar.add, (acc_in, i))),
        If(make_call(scalar.lt, (Const(3, INDEX), acc_next)), (Return((acc_next,)),), ()),
    )
    loop = For(
        i,
        index(0),
        n,
        step or index(1),
        body,
        LoopKind.range,
        None,
        (acc_in,),
        (acc,),
        (acc_next,),
        (acc_out,),
    )
    return Function("f", (Param(n),), (Assign(acc, index(0)), loop, Return((acc_out,))), FunctionKind.AIV)


def test_a_walk_carries_loop_values_and_returns_the_results():
    walk = Recording(sum_below(), [3]).run()
    events = []
    try:
        while True:
            events.append(next(walk))
    except StopIteration as done:
        assert done.value == (3,)  # 0 + 1 + 2; the early return never fired
    # Each op's hook yielded through the walk, in order: one add and one compare per iteration.
    assert events == [scalar.add, scalar.lt] * 3


def test_a_return_inside_a_loop_ends_the_function():
    assert list(Recording(sum_below(), [10]).run()) == [scalar.add, scalar.lt] * 4  # 0+1+2+3 > 3


def test_a_run_time_step_of_zero_is_a_loop_step_error():
    step = Var("step", INDEX)
    fn = sum_below(step)
    fn = Function(fn.name, (*fn.params, Param(step)), fn.body, fn.kind)
    with pytest.raises(LoopStepError, match=r"pl\.range over i would never end: its step, the value of step"):
        list(Recording(fn, [3, 0]).run())


def test_drive_runs_a_walk_that_never_waits_and_refuses_one_that_does():
    class Silent(Walker):
        def apply(self, call, args):
            return NUMBERS[call.op](*args)
            yield

    assert drive(Silent(sum_below(), [3]).run()) == (3,)
    with pytest.raises(VerificationError, match="a walk that cannot wait yielded"):
        drive(Recording(sum_below(), [3]).run())


def test_taking_turns_runs_every_walk_and_a_round_without_progress_is_a_deadlock():
    walks = [Recording(sum_below(), [3]).run(), Recording(sum_below(), [2]).run()]
    assert take_turns("k", walks, itertools.count().__next__) == [(3,), (1,)]
    with pytest.raises(DeadlockError, match="every running core of k waits for another core"):
        take_turns("k", [Recording(sum_below(), [3]).run()], lambda: 0)


# ---------------------------------------------------------------- launch plans

T = TensorType((16, 16), DataType.FP32)


def kernel(name, kind, *ops, split=None):
    """A kernel of ``kind`` over (x, out) whose body evaluates the given (op, attrs) calls."""
    x, out = Var("x", T), Var("out", T)
    body = tuple(Eval(Call(name_, (), ScalarType(DataType.INT32), attrs)) for name_, attrs in ops)
    attrs = {"split": split} if split is not None else {}
    return Function(name, (Param(x), Param(out)), (*body, Return((out,))), kind, attrs=attrs)


def group(aic, aiv):
    x, out = Var("x", T), Var("out", T)
    calls = tuple(Eval(Call(op.call, (x, out), None, {"callee": k.name})) for k in (aic, aiv))
    return Function("g", (Param(x), Param(out)), calls, FunctionKind.Group, attrs={"pipe_name": "mixed"})


def plans(*functions):
    return LoadedProgram(Program("p", functions, functions[0].name)).plans


def test_a_group_seats_its_aic_kernel_and_its_aiv_kernel_on_every_lane():
    aic = kernel("g_aic", FunctionKind.AIC, (tile_ops.tpush_to_aiv, {"split": SplitMode.UP_DOWN}))
    aiv = kernel("g_aiv", FunctionKind.AIV, (tile_ops.tpop_from_aic, {"split": SplitMode.UP_DOWN}))
    plan = plans(group(aic, aiv), aic, aiv)["g"]
    assert [(s.kind, s.lane, s.kernel.name, s.mirror) for s in plan.seats] == [
        (FunctionKind.AIC, 0, "g_aic", False),
        (FunctionKind.AIV, 0, "g_aiv", False),
        (FunctionKind.AIV, 1, "g_aiv", False),
    ]
    assert plan.piped and plan.pipe_name == "mixed"
    assert plan.result(["x value", "out value"]) == "out value"  # what g_aic returns


def test_lane_1_mirrors_when_every_pipe_op_is_split_none_and_no_op_asks_the_lane():
    aic = kernel("g_aic", FunctionKind.AIC)
    aiv = kernel("g_aiv", FunctionKind.AIV, (tile_ops.tpop_from_aic, {}))
    asks = kernel("g_aiv", FunctionKind.AIV, (tile_ops.tpop_from_aic, {}), (tile_ops.get_subblock_idx, {}))
    assert [s.mirror for s in plans(group(aic, aiv), aic, aiv)["g"].seats] == [False, False, True]
    assert [s.mirror for s in plans(group(aic, asks), aic, asks)["g"].seats] == [False, False, False]


def test_an_aiv_kernel_runs_on_lane_0_unless_it_is_split():
    alone = kernel("v", FunctionKind.AIV)
    split = kernel("v", FunctionKind.AIV, split=SplitMode.LEFT_RIGHT)
    assert [s.lane for s in plans(alone)["v"].seats] == [0]
    assert [s.lane for s in plans(split)["v"].seats] == [0, 1]


def test_a_call_of_a_function_that_is_no_kernel_says_so():
    incore = kernel("k", FunctionKind.InCore)
    loaded = LoadedProgram(Program("p", (incore,), "k"))
    with pytest.raises(VerificationError, match="k is a InCore function, not a kernel a core can run"):
        loaded.plan(Call(op.call, (), None, {"callee": "k"}))
    with pytest.raises(VerificationError, match="call to unknown kernel 'nope'"):
        loaded.plan(Call(op.call, (), None, {"callee": "nope"}))
