"""Run-time valid shapes: which tiles carry one, and how an op passes it on.

``pl.load(t, offsets, shape, valid_shape=[n, 64])`` with a run-time ``n`` makes a tile whose
valid shape is known only at run time. The IR carries it as operands: of the load
(``tile.load_partial``), and of the ops whose result depends on it (``tile.store_partial``,
``tile.store_atomic``, ``tile.fillpad``). While parsing, the valid shape follows the tile through
vector ops the way a static one follows it through their type rules: a same-shaped result keeps
its first tile operand's, a row reduction the valid rows, a column reduction the valid columns.
``pl.fillpad`` defines the padding, so its result is valid everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

from pypto.ir import INDEX, Call, Const, Expr, TileType, TupleExpr, TupleType, Unit, get_op
from pypto.ir.ops import COL_REDUCTIONS, ROW_REDUCTIONS

_KEEPS_VALID = frozenset({"tile.move", "tile.cast"})


def result_valid(call: Call, valid: Mapping[Expr, TupleExpr]) -> TupleExpr | None:
    """The run-time valid shape of ``call``'s result, given those of the values in ``valid``."""
    if call.op == "tile.load_partial":
        return call.args[2]  # type: ignore[return-value]
    if not isinstance(call.type, TileType) or call.op == "tile.fillpad":
        return None
    if get_op(call.op).unit is not Unit.VECTOR and call.op not in _KEEPS_VALID:
        return None
    source = next((a for a in call.args if isinstance(a.type, TileType)), None)
    if source is None or source not in valid:
        return None
    elements = valid[source].elements
    name = call.op.split(".", 1)[1]
    if name in ROW_REDUCTIONS:  # 2-D by the type rule
        return _shape(elements[0], Const(1, INDEX))
    if name in COL_REDUCTIONS:
        return _shape(Const(1, INDEX), elements[1])
    if call.type.shape == source.type.shape:  # type: ignore[attr-defined]
        return valid[source]
    return None


def _shape(*elements: Expr) -> TupleExpr:
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))
