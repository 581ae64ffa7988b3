"""Task annotations: OutlineScopes carries a scope's task id, deps and no_dep_args onto its call;
DeriveTaskDependencies gives every call its access modes and the arguments it takes no edge through."""

from dataclasses import replace

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    TASK_ID,
    AccessMode,
    Assign,
    AtomicType,
    Direction,
    Eval,
    Param,
    ParseError,
    Predicate,
    ScopeStmt,
    Var,
    make_call,
)
from pypto.passes import DEFAULT_PIPELINE, PassContext, lower
from pypto.passes.outline import OutlineScopes
from pypto.passes.task_deps import DeriveTaskDependencies

In, Out, InOut, Acc = AccessMode.In, AccessMode.Out, AccessMode.InOut, AccessMode.Accumulate


def _calls(program):
    return [s.value for s in program.entry_function.body if hasattr(s, "value") and s.value.op == "call"]


def _two_scopes(declared=False, no_dep=(), manual=False):
    """produce: s = a + a; consume: out = s * a. ``no_dep`` names tensors of the second scope's
    no_dep_args ("s" or one it does not use)."""
    a, out = irbuild.tensor("a", [64, 64]), irbuild.tensor("out", [64, 64])
    s = irbuild.assign("s", "tensor.add", a, a)
    t = irbuild.assign("t", "tensor.mul", s.target, a)
    tid = Var("produce_id", TASK_ID)
    first = ScopeStmt((s,), name_hint="produce", task=tid)
    named = {"s": s.target, "stray": irbuild.tensor("stray", [64, 64])}
    consume = ScopeStmt(
        (t, irbuild.write(out, t.target)),
        name_hint="consume",
        deps=(tid,) if declared else (),
        no_dep_args=tuple(named[n] for n in no_dep),
        manual=manual,
    )
    params = [Param(a), Param(out, Direction.Out), Param(named["stray"])]
    return irbuild.program("main", params, [first, consume])


def test_the_pipeline_ends_by_deriving_task_dependencies():
    assert DEFAULT_PIPELINE[-1] == "DeriveTaskDependencies"


def test_outline_carries_the_task_id_and_the_declared_deps_onto_the_calls():
    program = _two_scopes(declared=True)
    produce, consume = _calls(OutlineScopes().run(program, PassContext(irbuild.TARGET)))
    assert produce.attrs["task"] == "produce_id"
    assert consume.attrs["deps"] == ("produce_id",)


def test_every_call_gets_the_access_mode_of_each_argument():
    program = _two_scopes()
    produce, consume = _calls(lower(program, irbuild.TARGET))
    assert produce.attrs["access"] == (In, Out)  # (a, s)
    assert consume.attrs["access"] == (In, In, Out)  # (s, a, out)
    assert "no_dep" not in consume.attrs


def test_no_dep_args_become_the_indices_of_the_arguments_that_take_no_edge():
    program = _two_scopes(no_dep=("s",))
    _, consume = _calls(lower(program, irbuild.TARGET))
    assert consume.args[consume.attrs["no_dep"][0]].name == "s"
    assert "no_dep_args" not in consume.attrs


def test_no_dep_args_naming_a_tensor_the_scope_does_not_use_is_an_error():
    program = _two_scopes(no_dep=("stray",))
    with pytest.raises(ParseError, match="no_dep_args= names stray, which scope 'consume' does not use"):
        lower(program, irbuild.TARGET)


def test_a_manual_scope_takes_no_edge_through_any_tensor():
    program = _two_scopes(manual=True)
    _, consume = _calls(lower(program, irbuild.TARGET))
    assert consume.attrs["no_dep"] == (0, 1, 2)
    assert "manual" not in consume.attrs


def test_a_manual_dep_tensor_takes_no_edge_in_any_call():
    a, out = irbuild.tensor("a", [64, 64]), irbuild.tensor("out", [64, 64])
    scratch = Var("scratch", a.type)
    attrs = {"shape": (64, 64), "dtype": irbuild.FP32, "manual_dep": True}
    create = Assign(scratch, make_call("tensor.create", (), attrs))
    body = [
        create,
        ScopeStmt((irbuild.write(scratch, a),), name_hint="fill"),
        ScopeStmt((irbuild.write(out, scratch),), name_hint="drain"),
    ]
    program = irbuild.program("main", [Param(a), Param(out, Direction.Out)], body)
    fill, drain = _calls(lower(program, irbuild.TARGET))
    assert [fill.args[i].name for i in fill.attrs["no_dep"]] == ["scratch"]
    assert [drain.args[i].name for i in drain.attrs["no_dep"]] == ["scratch"]


def test_a_view_of_a_manual_dep_tensor_is_untracked_too():
    b, out = irbuild.tensor("b", [32, 64]), irbuild.tensor("out", [64, 64])
    scratch, top = irbuild.tensor("scratch", [64, 64]), irbuild.tensor("top", [32, 64])
    attrs = {"shape": (64, 64), "dtype": irbuild.FP32, "manual_dep": True}
    body = [
        Assign(scratch, make_call("tensor.create", (), attrs)),
        Assign(top, make_call("tensor.slice", (scratch, irbuild.idx(0, 0)), {"shape": (32, 64)})),
        ScopeStmt((irbuild.write(top, b),), name_hint="fill"),  # writes through the view
        ScopeStmt((irbuild.write(out, scratch),), name_hint="drain"),
    ]
    program = irbuild.program("main", [Param(b), Param(out, Direction.Out)], body)
    fill, drain = _calls(lower(program, irbuild.TARGET))
    assert [fill.args[i].name for i in fill.attrs["no_dep"]] == ["top"]
    assert [drain.args[i].name for i in drain.attrs["no_dep"]] == ["scratch"]


def test_an_inout_tensor_only_added_into_atomically_is_accumulated():
    a, c = irbuild.tensor("a", [64, 64]), irbuild.tensor("c", [64, 64])
    mm = irbuild.assign("p", "tensor.matmul", a, a)
    attrs = {"atomic": AtomicType.Add}
    add = Eval(make_call("tensor.assemble", (c, mm.target, irbuild.idx(0, 0)), attrs))
    scope = ScopeStmt((mm, add), name_hint="part")
    program = irbuild.program("main", [Param(a), Param(c, Direction.InOut)], [scope])
    (part,) = _calls(lower(program, irbuild.TARGET))
    assert part.attrs["access"] == (In, Acc)


def test_access_modes_conflict_unless_both_read_or_both_accumulate():
    assert not In.conflicts(In) and not Acc.conflicts(Acc)
    assert all(Out.conflicts(m) and InOut.conflicts(m) for m in AccessMode)
    assert In.conflicts(Acc) and Acc.conflicts(Out)
    assert In.join(Out) is InOut and Acc.join(Acc) is Acc


def test_arguments_marked_no_dep_by_the_front_end_stay_untracked():
    outlined = OutlineScopes().run(_two_scopes(), PassContext(irbuild.TARGET))
    entry = outlined.entry_function
    consume = _calls(outlined)[1]
    marked = replace(consume, attrs={**consume.attrs, "no_dep": (2,)})  # pl.no_dep(out) at the call
    body = tuple(replace(s, value=marked) if getattr(s, "value", None) is consume else s for s in entry.body)
    program = outlined.replace_function(replace(entry, body=body))
    lowered = DeriveTaskDependencies().run(program, PassContext(irbuild.TARGET))
    assert _calls(lowered)[1].attrs["no_dep"] == (2,)


def test_a_scope_carries_its_predicate_and_dumps_onto_its_call():
    program = _two_scopes()
    entry = program.entry_function
    predicate = Predicate("a", (0, 0), ">", 0)
    a = entry.params[0].var
    body = tuple(
        replace(s, predicate=predicate, dumps=(a,))
        if isinstance(s, ScopeStmt) and s.name_hint == "consume"
        else s
        for s in entry.body
    )
    program = program.replace_function(replace(entry, body=body))
    _, consume = _calls(OutlineScopes().run(program, PassContext(irbuild.TARGET)))
    assert consume.attrs["predicate"] is predicate and consume.attrs["dumps"] == ("a",)
