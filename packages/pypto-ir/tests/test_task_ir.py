"""Task ids, deps and no_dep_args on scopes, and the task attrs of kernel calls, in the printer and
the verifier; task ids as values (the TASK_ID dtype, arrays of them, the ops that refuse them),
predicates, joins and the auto_scope= decorator option."""

import pytest

from pypto.ir import (
    TASK_ID,
    UNIT,
    AccessMode,
    ArrayType,
    Assign,
    Const,
    DataType,
    Eval,
    Function,
    FunctionKind,
    Param,
    Predicate,
    Program,
    ScalarType,
    ScopeStmt,
    TensorType,
    TypeCheckError,
    Var,
    VerificationError,
    make_call,
    print_ir,
    verify_program,
)
from pypto.ir.dtypes import DTYPE_BY_TORCH_NAME, dtype_from_torch_name
from pypto.ir.ops import array, scalar, system

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


# ---------------------------------------------------------------- task ids as values


def test_task_id_is_a_dtype_of_no_number():
    assert ScalarType(DataType.TASK_ID) == TASK_ID and str(TASK_ID) == "pl.TaskId"
    assert not DataType.TASK_ID.is_numeric and not DataType.TASK_ID.is_integer
    assert DataType.TASK_ID not in DTYPE_BY_TORCH_NAME.values()  # no torch tensor holds task ids
    assert dtype_from_torch_name("int64") is DataType.INT64


def test_ops_that_compute_refuse_task_ids():
    tid = Var("tid", TASK_ID)
    with pytest.raises(TypeCheckError, match=r"pl.add: a task id \(pl.TASK_ID\) names a task"):
        make_call(scalar.add, (tid, Const(1, ScalarType(DataType.INDEX))))
    x = Var("x", ScalarType(DataType.INT32))
    with pytest.raises(TypeCheckError, match="a task id"):
        make_call(scalar.cast, (x,), {"dtype": DataType.TASK_ID})


def test_an_array_of_task_ids_holds_task_ids_only():
    tids = make_call(array.create, (), {"size": 4, "dtype": DataType.TASK_ID})
    arr = Var("tids", tids.type)
    tid = Var("tid", TASK_ID)
    i = Const(1, ScalarType(DataType.INDEX))
    assert make_call(array.update_element, (arr, i, tid)).type == tids.type
    assert make_call(array.get_element, (arr, i)).type == TASK_ID
    with pytest.raises(TypeCheckError, match="writes Scalar\\[INDEX\\] into an array of TASK_ID"):
        make_call(array.update_element, (arr, i, i))
    ints = Var("ints", make_call(array.create, (), {"size": 4, "dtype": DataType.INT32}).type)
    with pytest.raises(TypeCheckError, match="writes a task id into an array of INT32"):
        make_call(array.update_element, (ints, i, tid))


def test_deps_may_name_an_array_of_task_ids():
    tids = Var("tids", ArrayType(4, DataType.TASK_ID))
    ints = Var("ints", ArrayType(4, DataType.INT32))
    create = Assign(tids, make_call(array.create, (), {"size": 4, "dtype": DataType.TASK_ID}))
    program, _ = _program(create, ScopeStmt((), deps=(tids,)))
    verify_program(program)
    create_ints = Assign(ints, make_call(array.create, (), {"size": 4, "dtype": DataType.INT32}))
    program, _ = _program(create_ints, ScopeStmt((), deps=(ints,)))
    with pytest.raises(VerificationError, match="deps= names ints, which is not a task id"):
        verify_program(program)


def test_a_predicate_is_one_comparison_of_an_element_with_an_int():
    p = Predicate("row_count", ("e", 0), ">=", -1)
    assert str(p) == "row_count[e, 0] >= -1" and p.names() == ("row_count", "e")
    assert p.holds(-1) and not p.holds(-2)
    with pytest.raises(ValueError, match="a predicate compares with one of"):
        Predicate("t", (0,), "=~", 1)


def test_a_scope_prints_its_predicate_on_its_launch_and_its_dumps():
    a, tid = Var("a", T), Var("tid", TASK_ID)
    scope = ScopeStmt((), name_hint="k", task=tid, predicate=Predicate("flags", (0,), "!=", 0), dumps=(a,))
    assert print_ir(scope).splitlines()[:2] == [
        "with pl.spmd(1, predicate=(flags[0] != 0)) as tid:",
        "    with pl.at(level=pl.Level.CORE_GROUP, name_hint='k', dumps=[a]):",
    ]


def test_a_join_prints_as_task_dummy_and_a_call_its_predicate():
    join = make_call(system.task_dummy, (), {"deps": ("t0", "tids")})
    assert join.type == TASK_ID
    assert (
        print_ir(Assign(Var("gate", TASK_ID), join))
        == "gate: pl.TaskId = pl.system.task_dummy(deps=[t0, tids])"
    )
    call = make_call(
        "call", (Var("a", T),), {"callee": "k", "predicate": Predicate("f", ("i",), "==", 2)}, type=UNIT
    )
    assert print_ir(Eval(call)) == "self.k(a, predicate=(f[i] == 2))"


def test_auto_scope_prints_on_the_decorator():
    fn = Function("main", (Param(Var("a", T)),), (), FunctionKind.Orchestration, attrs={"auto_scope": False})
    text = print_ir(fn)
    assert text.splitlines()[0] == "@pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)"
    assert "func_attr" not in text
