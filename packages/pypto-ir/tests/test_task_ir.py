"""Task ids, deps and no_dep_args on scopes, and the task attrs of kernel calls, in the printer and
the verifier."""

import pytest

from pypto.ir import (
    TASK_ID,
    UNIT,
    AccessMode,
    DataType,
    Eval,
    Function,
    FunctionKind,
    Param,
    Program,
    ScopeStmt,
    TensorType,
    Var,
    VerificationError,
    make_call,
    print_ir,
    verify_program,
)

T = TensorType((64, 64), DataType.FP32)


def _program(*body):
    a = Var("a", T)
    entry = Function("main", (Param(a),), tuple(body), FunctionKind.Orchestration)
    return Program("main", (entry,), "main"), a


def test_a_scope_prints_its_task_id_deps_and_no_dep_args():
    a = Var("a", T)
    first, second = Var("first", TASK_ID), Var("second", TASK_ID)
    scope = ScopeStmt(
        (), name_hint="k", task=second, deps=(first,), no_dep_args=(a,), manual=True, block_num=4
    )
    assert print_ir(scope).splitlines()[:3] == [
        "with pl.manual_scope():",
        "    with pl.spmd(4) as second:",
        "        with pl.at(level=pl.Level.CORE_GROUP, name_hint='k', deps=[first], no_dep_args=[a]):",
    ]


def test_a_kernel_call_prints_its_task_attrs_as_keywords():
    a = Var("a", T)
    attrs = {"callee": "k", "task": "t", "access": (AccessMode.InOut,), "no_dep": (0,)}
    call = Eval(make_call("call", (a,), attrs, type=UNIT))
    assert print_ir(call) == "self.k(a, task='t', access=['InOut'], no_dep=[0])"


def test_deps_must_name_a_task_id_bound_before_the_scope():
    later = Var("later", TASK_ID)
    program, _ = _program(ScopeStmt((), deps=(later,)), ScopeStmt((), task=later))
    with pytest.raises(VerificationError, match="deps= names later, which is not a task id bound before"):
        verify_program(program)


def test_a_task_id_is_bound_after_its_scope():
    tid = Var("tid", TASK_ID)
    program, _ = _program(ScopeStmt((), task=tid), ScopeStmt((), deps=(tid,)))
    verify_program(program)
