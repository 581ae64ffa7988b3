"""OutlineScopes: kernel params, directions, and tensors that leave a scope."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    INDEX,
    Const,
    Direction,
    Eval,
    For,
    Param,
    ParseError,
    ScopeStmt,
    SourceSpan,
    Var,
    make_call,
)
from pypto.passes import PassContext
from pypto.passes.outline import OutlineScopes


def outline(program):
    return OutlineScopes().run(program, PassContext(irbuild.TARGET))


def directions(fn):
    return {p.var.name: p.direction for p in fn.params}


def test_read_tensors_are_in_and_written_tensors_out():
    program = outline(irbuild.staged_program())
    assert directions(program.function("vector_only")) == {
        "acc": Direction.In,
        "bias": Direction.In,
        "out": Direction.Out,
    }


def test_a_tensor_computed_in_one_scope_and_used_in_the_next_is_allocated_by_the_orchestration():
    program = outline(irbuild.staged_program())
    entry = program.entry_function
    create, call = entry.body[0], entry.body[1]
    assert create.target.name == "acc" and create.value.op == "tensor.create"
    assert call.value.attrs["callee"] == "cube_only" and call.value.args[-1] is create.target
    assert directions(program.function("cube_only"))["acc"] is Direction.Out


def test_a_tensor_both_read_and_written_is_inout():
    x = irbuild.tensor("x", [64, 64])
    add = irbuild.assign("y", "tensor.add", x, x)
    scope = ScopeStmt((add, irbuild.write(x, add.target)), name_hint="k")
    program = outline(irbuild.program("main", [Param(x, Direction.InOut)], [scope]))
    assert directions(program.function("k")) == {"x": Direction.InOut}


def test_a_scope_inside_a_loop_takes_the_loop_variable_as_a_scalar_param():
    x, y = irbuild.tensor("x", [256, 64]), irbuild.tensor("y", [256, 64])
    i = Var("i", INDEX)
    row = make_call("scalar.mul", (i, Const(64, INDEX)))
    load = irbuild.Assign(
        Var("t", make_call("tile.load", (x, irbuild.idx(row, 0)), {"shape": (64, 64)}).type),
        make_call("tile.load", (x, irbuild.idx(row, 0)), {"shape": (64, 64)}),
    )
    store = Eval(make_call("tile.store", (load.target, irbuild.idx(row, 0), y)))
    loop = For(
        i, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), (ScopeStmt((load, store), name_hint="copy"),)
    )
    program = outline(irbuild.program("main", [Param(x), Param(y, Direction.Out)], [loop]))
    kernel = program.function("copy")
    assert [p.var.name for p in kernel.params] == ["x", "i", "y"]
    assert kernel.params[1].var.type == INDEX


def test_a_tile_cannot_leave_its_scope():
    x = irbuild.tensor("x", [64, 64])
    value = make_call("tile.load", (x, irbuild.idx(0, 0)), {"shape": (64, 64)})
    load = irbuild.Assign(Var("t", value.type), value)
    later = ScopeStmt((Eval(make_call("tile.store", (load.target, irbuild.idx(0, 0), x))),), name_hint="b")
    program = irbuild.program("main", [Param(x)], [ScopeStmt((load,), name_hint="a"), later])
    with pytest.raises(
        ParseError,
        match="t \\(Tile\\[\\[64, 64\\], FP32\\]\\) is computed in scope 'a' but used after it",
    ):
        outline(program)


SCOPE_LINE = SourceSpan("user.py", 7, 4, 60)


def _outline_error(body) -> ParseError:
    x = irbuild.tensor("x", [64, 64])
    with pytest.raises(ParseError) as info:
        outline(irbuild.program("main", [Param(x)], body(x)))
    return info.value


def _load_and_store(x):
    value = make_call("tile.load", (x, irbuild.idx(0, 0)), {"shape": (64, 64)})
    load = irbuild.Assign(Var("t", value.type), value)
    return load, Eval(make_call("tile.store", (load.target, irbuild.idx(0, 0), x)))


def test_a_tile_leaving_its_scope_without_a_span_of_its_own_is_reported_at_the_scope():
    def body(x):
        load, store = _load_and_store(x)
        return [ScopeStmt((load,), name_hint="a", span=SCOPE_LINE), ScopeStmt((store,), name_hint="b")]

    err = _outline_error(body)
    assert "is computed in scope 'a' but used after it" in err.message
    assert err.span == SCOPE_LINE and err.hint


def test_a_tile_entering_a_scope_without_a_span_of_its_own_is_reported_at_the_scope():
    def body(x):
        load, store = _load_and_store(x)
        return [load, ScopeStmt((store,), name_hint="b", span=SCOPE_LINE)]

    err = _outline_error(body)
    assert "is defined outside scope 'b' and cannot be passed into it" in err.message
    assert err.span == SCOPE_LINE and err.hint
