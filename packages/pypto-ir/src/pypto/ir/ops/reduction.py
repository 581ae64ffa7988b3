"""Reductions of a 2-D operand along one axis, broadcasts of a vector along one axis, and the
fills that broadcast a value to a shape (``expand_clone``, ``expands``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.enums import PadValue
from pypto.ir.ops.rules import (
    check_float_only,
    check_scalar_fits,
    check_vec,
    fail,
    matrix,
    same_kind,
    shaped,
    user_name,
    vector_result,
    with_changes,
)
from pypto.ir.ops.spec import (
    REQUIRED,
    WHOLE_TILE,
    Attr,
    Broadcast,
    Cost,
    Effect,
    Elementwise,
    FloatOnly,
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
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type, describe


def _scratch(spec: OpSpec, args: Sequence[Expr], x: TileType | TensorType, span: SourceSpan | None) -> None:
    """A reduction's scratch tile (``tmp_tile``): on tiles, a Vec tile of x's dtype and rank at
    least as large as x in every dimension (required where the spec says so); none on tensors."""
    op = spec.name
    given = args[1].type if len(args) == 2 else None
    if not isinstance(x, TileType):
        if given is not None:
            raise fail(
                op,
                f"on {describe(x)} takes no scratch operand (the compiler makes one per tile)",
                span,
                f"drop the scratch operand: {user_name(op)}(x)",
            )
        return
    required = len(spec.operands) == 2 and not spec.operands[1].optional
    if given is None and not required:
        return
    fits = (
        isinstance(given, TileType)
        and given.dtype == x.dtype
        and len(given.shape) == len(x.shape)
        and all(isinstance(g, int) and g >= n for g, n in zip(given.shape, x.shape, strict=True))
    )
    if not fits or given is None:
        got = describe(given) if given is not None else "no scratch tile"
        raise fail(
            op,
            f"needs a scratch tile shaped like {describe(x)}, got {got}",
            span,
            advice="row_reduce.scratch",
            op=op,
        )
    check_vec(op, given, span)


def _reduced(spec: OpSpec, x: TileType | TensorType, axis: int) -> Type:
    """x reduced along ``axis``: [R, 1] (axis 1) or [1, C] (axis 0); an index of the extremum is INT32."""
    shape = (x.shape[0], 1) if axis == 1 else (1, x.shape[1])
    valid = None
    if isinstance(x, TileType) and x.valid_shape:
        valid = (x.valid_shape[0], 1) if axis == 1 else (1, x.valid_shape[1])
    changes: dict[str, Any] = {"shape": shape, "valid_shape": valid}
    if spec.dsl in ARG_REDUCTIONS:
        changes["dtype"] = DataType.INT32
    return vector_result(x, **changes)


def row_reduce(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``row_max(x, tmp_tile)`` on tiles, ``row_max(x)`` on tensors -> [R, 1]."""
    x = matrix(spec.name, args[0], span)
    _scratch(spec, args, x, span)
    return _reduced(spec, x, 1)


def col_reduce(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``col_sum(x, tmp_tile=None)`` -> [1, C]."""
    x = matrix(spec.name, args[0], span)
    _scratch(spec, args, x, span)
    return _reduced(spec, x, 0)


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
    if spec.has(FloatOnly):
        check_float_only(op, x, span)
    return vector_result(x)


def expand_clone(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """``expand_clone(x, shape)``: x repeated to ``shape``; x's dims, aligned to the right of
    ``shape``, are 1 or the extent there (as torch's ``expand``)."""
    op = spec.name
    x = shaped(op, args[0], span)
    shape = tuple(attrs["shape"])
    fits = len(x.shape) <= len(shape) and all(
        d in (1, n) for d, n in zip(reversed(x.shape), reversed(shape), strict=False)
    )
    if not fits:
        raise fail(
            op,
            f"cannot repeat {describe(x)} to {list(shape)}: each dim must be 1 or the extent there",
            span,
            f"pass a vector of the shape's extents, e.g. a [1, {shape[-1]}] row or a "
            f"[{shape[0] if len(shape) > 1 else 1}, 1] column for {list(shape)}",
        )
    if isinstance(x, TileType) and len(shape) != 2:
        raise fail(op, f"a tile is 2-D, got the shape {list(shape)}", span, "give a 2-D shape [R, C]")
    check_vec(op, x, span)
    if isinstance(x, TileType):
        return with_changes(x, shape=shape, memory_space=MemorySpace.Vec, valid_shape=None)
    return TensorType(shape, x.dtype)


def expands(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``expands(x, value)``: x's shape and dtype, every element the scalar ``value``."""
    op = spec.name
    x = shaped(op, args[0], span)
    if not isinstance(args[1].type, ScalarType):
        raise fail(
            op,
            f"the fill value must be a scalar, got {describe(args[1].type)}",
            span,
            f"pass a number or a run-time scalar, e.g. {user_name(op)}(x, 0.0)",
        )
    check_scalar_fits(op, args[1], x.dtype, span, "the fill value")
    check_vec(op, x, span)
    return vector_result(x)


# ---------------------------------------------------------------- declarations

# name: (axis reduced, the elementwise op joining two blocks' results or None, doc)
REDUCTIONS: dict[str, tuple[int, str | None, str]] = {
    "row_max": (1, "maximum", "the maximum of each row: [R, C] -> [R, 1]"),
    "row_sum": (1, "add", "the sum of each row: [R, C] -> [R, 1]"),
    "row_min": (1, "minimum", "the minimum of each row: [R, C] -> [R, 1]"),
    "row_prod": (1, "mul", "the product of each row: [R, C] -> [R, 1]"),
    "row_argmax": (
        1,
        None,
        "the column index of each row's maximum (the first, on ties): [R, C] -> [R, 1] INT32",
    ),
    "row_argmin": (
        1,
        None,
        "the column index of each row's minimum (the first, on ties): [R, C] -> [R, 1] INT32",
    ),
    "col_sum": (0, "add", "the sum of each column: [R, C] -> [1, C]"),
    "col_max": (0, "maximum", "the maximum of each column: [R, C] -> [1, C]"),
    "col_min": (0, "minimum", "the minimum of each column: [R, C] -> [1, C]"),
    "col_prod": (0, "mul", "the product of each column: [R, C] -> [1, C]"),
    "col_argmax": (
        0,
        None,
        "the row index of each column's maximum (the first, on ties): [R, C] -> [1, C] INT32",
    ),
    "col_argmin": (
        0,
        None,
        "the row index of each column's minimum (the first, on ties): [R, C] -> [1, C] INT32",
    ),
}
# The index reductions, and the value a partial operand's padding takes so it never wins.
ARG_REDUCTIONS = {
    "row_argmax": PadValue.min,
    "row_argmin": PadValue.max,
    "col_argmax": PadValue.min,
    "col_argmin": PadValue.max,
}
# The row reductions whose tile form needs its scratch tile (the others take one optionally).
SCRATCH_REQUIRED = ("row_max", "row_sum", "row_min")
# The value a running reduction starts from, by its join.
_IDENTITY = {"add": PadValue.zero, "mul": PadValue.one, "maximum": PadValue.min, "minimum": PadValue.max}
# name: (axis the vector is repeated along, slow on the vector unit, doc)
BROADCASTS = {
    "row_expand_add": (1, False, "x + v, v a [R, 1] column repeated across the columns"),
    "row_expand_sub": (1, False, "x - v, v a [R, 1] column repeated across the columns"),
    "row_expand_mul": (1, False, "x * v, v a [R, 1] column repeated across the columns"),
    "row_expand_div": (1, True, "x / v, v a [R, 1] column repeated across the columns"),
    "row_expand_max": (1, False, "the maximum of x and v, v a [R, 1] column repeated across the columns"),
    "row_expand_min": (1, False, "the minimum of x and v, v a [R, 1] column repeated across the columns"),
    "row_expand_expdif": (1, True, "exp(x - v), v a [R, 1] column repeated across the columns (softmax)"),
    "row_expand": (1, False, "v repeated across the columns of x's shape, v a [R, 1] column"),
    "col_expand": (0, False, "v repeated down the rows of x's shape, v a [1, C] row"),
    "col_expand_add": (0, False, "x + v, v a [1, C] row repeated down the rows"),
    "col_expand_sub": (0, False, "x - v, v a [1, C] row repeated down the rows"),
    "col_expand_mul": (0, False, "x * v, v a [1, C] row repeated down the rows"),
    "col_expand_div": (0, True, "x / v, v a [1, C] row repeated down the rows"),
    "col_expand_max": (0, False, "the maximum of x and v, v a [1, C] row repeated down the rows"),
    "col_expand_min": (0, False, "the minimum of x and v, v a [1, C] row repeated down the rows"),
    "col_expand_expdif": (0, True, "exp(x - v), v a [1, C] row repeated down the rows"),
}
_VEC = (MemorySpace.Vec,)


def _x(level: Level, name: str = "x") -> Operand:
    return Operand(name, Role.TILE, _VEC) if level is Level.TILE else Operand(name, Role.TENSOR)


def _declare_reductions(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    for name, (axis, join, doc) in REDUCTIONS.items():
        # A reduction of a tile takes a scratch tile like x (some must); each lane needs its rows
        # whole for a row reduction, its columns whole for a column reduction.
        required = name in SCRATCH_REQUIRED
        scratch = Operand("tmp_tile", Role.TILE, _VEC, optional=not required, effect=Effect.NONE)
        operands = (_x(level), scratch) if tile else (_x(level),)
        whole = SplitPolicy(cols=(0, 1)) if axis == 1 else SplitPolicy(rows=(0,))
        identity = ARG_REDUCTIONS.get(name) or _IDENTITY[join or ""]
        traits: tuple[Trait, ...] = (
            Reduction(axis, join, identity),
            Cost("vector"),
            whole,
            PlacesTile() if tile else Lowers(f"tile.{name}"),
        )
        if not tile and axis == 0:
            traits = (*traits, WholeRegion())
        if not tile:
            signature = f"pl.{name}(x)"
        else:
            signature = f"pl.{name}(x, tmp_tile)" if required else f"pl.{name}(x, tmp_tile=None)"
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


def _declare_broadcasts(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    for name, (axis, slow, doc) in BROADCASTS.items():
        shared: tuple[Trait, ...] = (RowShared(1),) if axis == 0 and not tile else ()
        floats: tuple[Trait, ...] = (FloatOnly(),) if name.endswith("_expdif") else ()
        traits = (
            *shared,
            *floats,
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


def _declare_fills(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    clone_traits: tuple[Trait, ...] = (
        (Cost("vector"), PlacesTile(), WHOLE_TILE)
        if tile
        else (Cost("vector"), Lowers("tile.expand_clone"), WholeRegion())
    )
    declare(
        OpSpec(
            f"{prefix}.expand_clone",
            level,
            Unit.VECTOR,
            expand_clone,
            (_x(level),),
            (Attr("shape", tuple, REQUIRED),),
            traits=clone_traits,
            dsl="expand_clone",
            signature="pl.expand_clone(x, shape)",
            doc="a copy of x repeated to shape (each dim of x is 1 or the extent there)",
        )
    )
    declare(
        OpSpec(
            f"{prefix}.expands",
            level,
            Unit.VECTOR,
            expands,
            (_x(level), Operand("value", Role.SCALAR)),
            traits=(
                Cost("vector"),
                KeepsValid(),
                Elementwise(),
                PlacesTile() if tile else Lowers("tile.expands"),
            ),
            dsl="expands",
            signature="pl.expands(x, value)",
            doc="x's shape and dtype with every element the scalar value",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare_reductions(_level)
    _declare_broadcasts(_level)
    _declare_fills(_level)
