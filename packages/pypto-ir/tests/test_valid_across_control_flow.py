"""``build_as_parsed`` keeps valid shapes across control flow: a tile whose valid shape an if's
arms (a loop's iterations) disagree on leaves the if (is carried) with the extents beside it, and
what uses it after sees them; a program already so built stays as it is."""

from pypto.ir import (
    INDEX,
    Assign,
    Const,
    DataType,
    Eval,
    For,
    If,
    MemorySpace,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    make_call,
    structural_diff,
)
from pypto.ir.nodes import Function, FunctionKind, Param
from pypto.ir.rewrite import NameGen
from pypto.ir.valid import build_as_parsed

T = TensorType((64, 64), DataType.FP32)
LOAD = {"shape": (64, 64), "target_memory": MemorySpace.Vec}


def tup(*elements):
    return TupleExpr(tuple(elements), TupleType(tuple(e.type for e in elements)))


def c(n):
    return Const(n, INDEX)


def built(body, *params):
    fn = Function("k", tuple(Param(p) for p in params), body, FunctionKind.AIV)
    return build_as_parsed(body, NameGen.for_function(fn).fresh)


def shrinking_loop():
    """t = load(x); for i in range(4): t = set_validshape(t + 1, [64 - 8 * i, 64]); store(t)."""
    x, out, i = Var("x", T), Var("out", T), Var("i", INDEX)
    t0 = Var("t", make_call("tile.load", (x, tup(c(0), c(0))), LOAD).type)
    load = Assign(t0, make_call("tile.load", (x, tup(c(0), c(0))), LOAD))
    carried = Var("t_1", t0.type)
    added = make_call(
        "tile.adds", (carried, Const(1.0, make_call("scalar.cast", (c(1),), {"dtype": DataType.FP32}).type))
    )
    plus = Var("adds", added.type)
    rows = make_call("scalar.sub", (c(64), make_call("scalar.mul", (c(8), i))))
    shrunk = make_call("tile.set_validshape", (plus, tup(rows, c(64))))
    t2 = Var("t_2", shrunk.type)
    result = Var("t_3", t0.type)
    loop = For(
        i,
        c(0),
        c(4),
        c(1),
        (Assign(plus, added), Assign(t2, shrunk)),
        iter_args=(carried,),
        init_values=(t0,),
        yields=(t2,),
        results=(result,),
    )
    store = Eval(make_call("tile.store", (result, tup(c(0), c(0)), out)))
    return (load, loop, store), x, out


def test_a_loop_that_changes_a_carried_tiles_valid_extent_carries_the_extent():
    body, x, out = shrinking_loop()
    _, loop, _ = built(body, x, out)
    assert isinstance(loop, For)
    assert [v.name for v in loop.iter_args] == ["t_1", "t_1_rows"]
    assert isinstance(loop.init_values[1], Const) and loop.init_values[1].value == 64
    assert loop.results[0].name == "t_3" and len(loop.results) == 2
    assert loop.iter_args[0].type.valid_shape is None  # known only at run time
    yielded = loop.body[-1]  # the extent the iteration ends with, 64 - 8 * i, as a variable
    assert isinstance(yielded, Assign) and loop.yields[1] is yielded.target


def test_a_loop_already_carrying_the_extent_stays_as_it_is():
    body, x, out = shrinking_loop()
    once = built(body, x, out)
    twice = built(once, x, out)
    assert (
        structural_diff(
            Function("k", (Param(x), Param(out)), once, FunctionKind.AIV),
            Function("k", (Param(x), Param(out)), twice, FunctionKind.AIV),
        )
        is None
    )


def test_an_if_whose_arms_disagree_on_a_valid_extent_yields_it():
    x, out, n = Var("x", T), Var("out", T), Var("n", INDEX)
    t0 = Var("t", make_call("tile.load", (x, tup(c(0), c(0))), LOAD).type)
    load = Assign(t0, make_call("tile.load", (x, tup(c(0), c(0))), LOAD))
    cut = make_call("tile.set_validshape", (t0, tup(n, c(64))))
    t1 = Var("t_1", cut.type)
    result = Var("t_2", t0.type)
    branch = If(
        make_call("scalar.gt", (n, c(8))),
        (Assign(t1, cut),),
        (),
        then_yields=(t1,),
        else_yields=(t0,),
        results=(result,),
    )
    reduced = make_call("tile.row_sum", (result, t0))
    total = Var("total", reduced.type)
    body = built((load, branch, Assign(total, reduced)), x, out, n)
    branch, reduction = body[1], body[-1]
    assert isinstance(branch, If)
    assert [v.name for v in branch.results] == ["t_2", "t_2_rows"]
    assert branch.then_yields[1] is n and branch.else_yields[1].value == 64
    fill = body[-2]
    assert isinstance(fill, Assign) and fill.value.op == "tile.fillpad"  # the row sum sees the valid rows
    assert fill.value.args[1].elements[0] is branch.results[1]
    assert reduction.value.args[0] is fill.target
