"""Run-time valid shapes: which tiles carry one, and how an op passes it on.

``pl.load(t, offsets, shape, valid_shape=[n, 64])`` with a run-time ``n`` makes a tile whose
valid shape is known only at run time. The IR carries it as operands: of the load
(``tile.load_partial``), and of the ops whose result depends on it (``tile.store_partial``,
``tile.store_atomic``, ``tile.fillpad``). While parsing, the valid shape follows the tile through
ops the way a static one follows it through their type rules, as the ops' traits say: an op that
keeps the valid shape (``KeepsValid``: elementwise ops, broadcasts, moves) passes its first tile
operand's on, a row reduction the valid rows, a column reduction the valid columns, and a load of
a run-time region (``GmAccess(valid=...)``) makes it; ``pl.set_validshape`` (``SetsValid``)
replaces it. Other ops (``pl.fillpad``, which defines the
padding) give a tile that is valid everywhere.

A reduction sees only the valid region of its operand: the parser builds it on
``pl.fillpad(x, pad_value=identity)`` of a partial tile; and a push of a tile with a run-time valid
shape carries it as the push's second operand. A pass that makes tiles partial (a lane's share of
an odd extent, the last block of a dynamic one) or pushes them builds those ops the same way with
:func:`build_as_parsed`, so its output reads back as the same program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from pypto.ir.nodes import Assign, Call, Const, Eval, Expr, Stmt, TupleExpr, Var, nested_bodies, with_bodies
from pypto.ir.ops import GmAccess, KeepsValid, PipeAction, PipeEnd, Reduction, SetsValid, get_op, make_call
from pypto.ir.ops import tile as tile_ops
from pypto.ir.types import INDEX, TileType, TupleType


def result_valid(call: Call, valid: Mapping[Expr, TupleExpr]) -> TupleExpr | None:
    """The run-time valid shape of ``call``'s result, given those of the values in ``valid``."""
    if not isinstance(call.type, TileType):
        return None
    spec = get_op(call.op)
    access = spec.trait(GmAccess)
    if access is not None and not access.write and access.valid is not None:
        region = call.args[access.valid]  # a load of a run-time region
        return region if isinstance(region, TupleExpr) else None
    sets = spec.trait(SetsValid)
    if sets is not None:  # pl.set_validshape: a run-time one is the operand, a constant one the type
        if sets.operand >= len(call.args):
            return None  # an optional valid shape not given (a pop of the whole tile)
        given = call.args[sets.operand]
        if isinstance(given, TupleExpr) and any(not isinstance(e, Const) for e in given.elements):
            return given
        return None
    reduction = spec.trait(Reduction)
    if reduction is None and not spec.has(KeepsValid):
        return None
    source = next((a for a in call.args if isinstance(a.type, TileType)), None)
    if source is None or source not in valid:
        return None
    elements = valid[source].elements
    if reduction is not None and reduction.axis == 1:  # 2-D by the type rule
        return _shape(elements[0], Const(1, INDEX))
    if reduction is not None:
        return _shape(Const(1, INDEX), elements[1])
    return valid[source]


def _shape(*elements: Expr) -> TupleExpr:
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))


def is_partial(t: object) -> bool:
    """A tile type whose constant valid shape leaves part of it out."""
    return isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) != t.shape


def build_as_parsed(body: tuple[Stmt, ...], fresh: Callable[[str], str]) -> tuple[Stmt, ...]:
    """``body`` with the ops that depend on valid shapes built as the parser builds them: every
    reduction of a partial tile (a constant valid shape in its type, or a run-time one it
    inherits) on ``tile.fillpad`` of it with the reduction's identity (``fresh`` names the padded
    tiles), and every pipe push of a tile with a run-time valid shape carrying it. Ops already so
    built stay as they are."""
    return _AsParsed(fresh).block(body)


class _AsParsed:
    def __init__(self, fresh: Callable[[str], str]) -> None:
        self.fresh = fresh
        self.valid: dict[Expr, TupleExpr] = {}

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            bodies = nested_bodies(stmt)
            if bodies:
                out.append(with_bodies(stmt, tuple(self.block(b) for b in bodies)))
                continue
            if isinstance(stmt, Eval) and isinstance(stmt.value, Call):
                stmt = Eval(self.pushed(stmt.value), stmt.span)
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                value = self.padded(stmt.value, out)
                if value is not stmt.value:
                    stmt = replace(stmt, value=value)
                known = result_valid(value, self.valid)
                if known is not None:
                    self.valid[stmt.target] = known
            out.append(stmt)
        return tuple(out)

    def pushed(self, call: Call) -> Call:
        """A push of a tile whose run-time valid shape is known here, with it as its operand."""
        end = get_op(call.op).trait(PipeEnd)
        if end is None or end.action is not PipeAction.PUSH or len(call.args) != 1:
            return call
        valid = self.valid.get(call.args[0])
        return call if valid is None else make_call(call.op, (call.args[0], valid), call.attrs, call.span)

    def padded(self, call: Call, out: list[Stmt]) -> Call:
        reduction = get_op(call.op).trait(Reduction)
        x = call.args[0] if call.args else None
        if reduction is None or not isinstance(x, Var) or not isinstance(x.type, TileType):
            return call
        run_time = self.valid.get(x)
        if run_time is None and not is_partial(x.type):
            return call
        args = (x,) if run_time is None else (x, run_time)
        fill = make_call(tile_ops.fillpad, args, {"pad_value": reduction.identity}, call.span)
        padded = Var(self.fresh(f"{x.name}_padded"), fill.type, x.span)
        out.append(Assign(padded, fill, call.span))
        return make_call(call.op, (padded, *call.args[1:]), call.attrs, call.span)
