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
"""

from __future__ import annotations

from collections.abc import Mapping

from pypto.ir import INDEX, Call, Const, Expr, TileType, TupleExpr, TupleType, get_op
from pypto.ir.ops import GmAccess, KeepsValid, Reduction, SetsValid


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
