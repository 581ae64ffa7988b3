"""Reductions of a 2-D operand along one axis, and broadcasts of a vector along one axis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.enums import PadValue
from pypto.ir.ops.rules import check_vec, fail, matrix, same_kind, user_name, vector_result
from pypto.ir.ops.spec import (
    Broadcast,
    Cost,
    Effect,
    KeepsValid,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Reduction,
    Role,
    RowShared,
    SplitPolicy,
    Trait,
    Unit,
    WholeRegion,
    declare,
)
from pypto.ir.types import MemorySpace, TileType, Type, describe


def row_reduce(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    """``row_max(x, tmp)`` on tiles (tmp: a scratch tile like x), ``row_max(x)`` on tensors -> [R, 1]."""
    x = matrix(op, args[0], span)
    if isinstance(x, TileType):
        tmp = args[1].type if len(args) == 2 else None
        if not isinstance(tmp, TileType) or (tmp.shape, tmp.dtype) != (x.shape, x.dtype):
            got = describe(tmp) if tmp is not None else "no scratch tile"
            raise fail(
                op,
                f"needs a scratch tile shaped like {describe(x)}, got {got}",
                span,
                advice="row_reduce.scratch",
                op=op,
            )
        check_vec(op, tmp, span)
    elif len(args) != 1:
        raise fail(
            op,
            f"on {describe(x)} takes no scratch operand (the compiler makes one per tile)",
            span,
            f"drop the scratch operand: {user_name(op)}(x)",
        )
    valid = (x.valid_shape[0], 1) if isinstance(x, TileType) and x.valid_shape else None
    return vector_result(x, shape=(x.shape[0], 1), valid_shape=valid)


def col_reduce(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = matrix(op, args[0], span)
    valid = (1, x.valid_shape[1]) if isinstance(x, TileType) and x.valid_shape else None
    return vector_result(x, shape=(1, x.shape[1]), valid_shape=valid)


def expand(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``x`` combined with a vector broadcast along the Broadcast trait's axis: [R, 1] across
    columns (axis 1), [1, C] down rows (axis 0)."""
    op = spec.name
    broadcast = spec.trait(Broadcast)
    assert broadcast is not None
    axis = broadcast.axis
    x = matrix(op, args[0], span)
    vec = matrix(op, args[1], span, "the broadcast operand")
    same_kind(op, x, vec, span)
    want = (x.shape[0], 1) if axis == 1 else (1, x.shape[1])
    if vec.shape != want:
        raise fail(
            op,
            f"the broadcast operand must be {list(want)} for {describe(x)}, got {describe(vec)}",
            span,
            advice="broadcast.vector_shape",
        )
    if vec.dtype != x.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(x)} vs {describe(vec)}",
            span,
            advice="broadcast.dtype_mismatch",
            x=x,
        )
    return vector_result(x)


# ---------------------------------------------------------------- declarations

# name: (axis reduced, the elementwise op joining two blocks' results, doc)
REDUCTIONS = {
    "row_max": (1, "maximum", "the maximum of each row: [R, C] -> [R, 1]"),
    "row_sum": (1, "add", "the sum of each row: [R, C] -> [R, 1]"),
    "row_min": (1, "minimum", "the minimum of each row: [R, C] -> [R, 1]"),
    "col_sum": (0, "add", "the sum of each column: [R, C] -> [1, C]"),
    "col_max": (0, "maximum", "the maximum of each column: [R, C] -> [1, C]"),
}
# The value a running reduction starts from, by its join.
_IDENTITY = {"add": PadValue.zero, "maximum": PadValue.min, "minimum": PadValue.max}
# name: (axis the vector is repeated along, slow on the vector unit, doc)
BROADCASTS = {
    "row_expand_add": (1, False, "x + v, v a [R, 1] column repeated across the columns"),
    "row_expand_sub": (1, False, "x - v, v a [R, 1] column repeated across the columns"),
    "row_expand_mul": (1, False, "x * v, v a [R, 1] column repeated across the columns"),
    "row_expand_div": (1, True, "x / v, v a [R, 1] column repeated across the columns"),
    "row_expand": (1, False, "v repeated across the columns of x's shape, v a [R, 1] column"),
    "col_expand": (0, False, "v repeated down the rows of x's shape, v a [1, C] row"),
    "col_expand_mul": (0, False, "x * v, v a [1, C] row repeated down the rows"),
}
_VEC = (MemorySpace.Vec,)


def _x(level: Level, name: str = "x") -> Operand:
    return Operand(name, Role.TILE, _VEC) if level is Level.TILE else Operand(name, Role.TENSOR)


def _declare(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    for name, (axis, join, doc) in REDUCTIONS.items():
        # A row reduction of a tile takes a scratch tile shaped like x; each lane needs its rows
        # whole for a row reduction, its columns whole for a column reduction.
        operands = (
            (_x(level), Operand("tmp", Role.TILE, _VEC, effect=Effect.NONE))
            if tile and axis == 1
            else (_x(level),)
        )
        whole = SplitPolicy(cols=(0, 1)) if axis == 1 else SplitPolicy(rows=(0,))
        traits: tuple[Trait, ...] = (
            Reduction(axis, join, _IDENTITY[join]),
            Cost("vector"),
            whole,
            PlacesTile() if tile else Lowers(f"tile.{name}"),
        )
        if not tile and axis == 0:
            traits = (*traits, WholeRegion())
        signature = f"pl.{name}(x, tmp)" if len(operands) == 2 else f"pl.{name}(x)"
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                row_reduce if axis == 1 else col_reduce,
                operands,
                traits=traits,
                dsl=name,
                signature=signature,
                doc=doc,
            )
        )
    for name, (axis, slow, doc) in BROADCASTS.items():
        shared: tuple[Trait, ...] = (RowShared(1),) if axis == 0 and not tile else ()
        traits = (
            *shared,
            Broadcast(axis),
            Cost("vector_slow" if slow else "vector"),
            KeepsValid(),
            SplitPolicy(cols=(1,)) if axis == 1 else SplitPolicy(rows=(1,)),
            PlacesTile() if tile else Lowers(f"tile.{name}"),
        )
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                expand,
                (_x(level), _x(level, "row_vec" if axis == 1 else "col_vec")),
                traits=traits,
                dsl=name,
                signature=f"pl.{name}(x, {'row_vec' if axis == 1 else 'col_vec'})",
                doc=doc,
            )
        )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
