"""The ``If`` statement: printed as Python, walked into both arms, verified arm by arm."""

from dataclasses import replace

import pytest

from pypto.ir import (
    INDEX,
    Assign,
    Const,
    DataType,
    Eval,
    For,
    Function,
    FunctionKind,
    If,
    MemorySpace,
    Param,
    ScalarType,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    VerificationError,
    make_call,
    print_ir,
    verify_function,
)
from pypto.ir.nodes import nested_bodies, stmt_exprs, walk_stmts, with_bodies

T = TensorType((8, 8), DataType.FP32)


def zeros():
    elements = (Const(0, INDEX), Const(0, INDEX))
    return TupleExpr(elements, TupleType((INDEX, INDEX)))


def kernel_with_if():
    """for i in range(4): if i < 2: store a's tile, else: store b's tile."""
    a, b, out, i = Var("a", T), Var("b", T), Var("out", T), Var("i", INDEX)
    load = {"shape": (8, 8), "target_memory": MemorySpace.Vec}
    ta = make_call("tile.load", (a, zeros()), load)
    tb = make_call("tile.load", (b, zeros()), load)
    va, vb = Var("ta", ta.type), Var("tb", tb.type)
    branch = If(
        make_call("scalar.lt", (i, Const(2, INDEX))),
        (Assign(va, ta), Eval(make_call("tile.store", (va, zeros(), out)))),
        (Assign(vb, tb), Eval(make_call("tile.store", (vb, zeros(), out)))),
    )
    loop = For(i, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), (branch,))
    return Function("k", (Param(a), Param(b), Param(out)), (loop,), FunctionKind.AIV)


def test_an_if_prints_both_arms():
    text = print_ir(kernel_with_if())
    assert "        if i < 2:\n            ta: " in text
    assert "        else:\n            tb: " in text


def test_an_if_without_else_prints_no_else():
    fn = kernel_with_if()
    branch = fn.body[0].body[0]
    text = print_ir(replace(branch, else_body=()))
    assert text.splitlines()[0] == "if i < 2:" and "else" not in text


def test_walkers_see_the_condition_and_both_arms():
    fn = kernel_with_if()
    branch = fn.body[0].body[0]
    assert stmt_exprs(branch) == (branch.cond,)
    assert len(nested_bodies(branch)) == 2
    names = [s.target.name for s in walk_stmts(fn.body) if isinstance(s, Assign)]
    assert names == ["ta", "tb"]
    swapped = with_bodies(branch, (branch.else_body, branch.then_body))
    assert swapped.then_body is branch.else_body and swapped.cond is branch.cond


def test_the_verifier_accepts_the_if_and_keeps_arm_names_in_their_arm():
    fn = kernel_with_if()
    verify_function(fn)
    loop = fn.body[0]
    branch = loop.body[0]
    leak = Eval(make_call("tile.store", (branch.then_body[0].target, zeros(), fn.params[2].var)))
    broken = replace(fn, body=(replace(loop, body=(branch, leak)),))
    with pytest.raises(VerificationError, match="ta is used before it is defined"):
        verify_function(broken)


def test_the_verifier_rejects_a_float_condition():
    fn = kernel_with_if()
    loop = fn.body[0]
    branch = replace(loop.body[0], cond=Const(1.0, ScalarType(DataType.FP32)))
    with pytest.raises(VerificationError, match="an if condition must be a boolean or integer scalar"):
        verify_function(replace(fn, body=(replace(loop, body=(branch,)),)))
