"""Generators: tiles and tensors made from their positions alone, with no operand to read.

``ci`` (``pl.arange``) counts from ``start`` in row-major order, ``random`` (``pl.random``) draws
reproducible numbers from a counter-based hash of the seed and each element's position, ``tri``
(``pl.tri``) is a triangular 0/1 mask. An element's value depends on where it is, so a tensor-level
``ci`` or ``random`` over row blocks makes each block from the position of its first element (the
``Positional`` trait), and a mixed kernel's lanes cannot share one out by halving it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Const, Expr, TupleExpr
from pypto.ir.ops.rules import check_offsets, check_scalar_fits, fail
from pypto.ir.ops.spec import (
    REQUIRED,
    WHOLE_TILE,
    Attr,
    Cost,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Positional,
    Role,
    SetsValid,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type, describe

# The dtypes an arange counts in, as the vector unit's sequence instruction writes them.
CI_DTYPES = (DataType.INT16, DataType.INT32)


def _shape(op: str, attrs: Mapping[str, Any], span: SourceSpan | None) -> tuple[int, ...]:
    shape = tuple(attrs["shape"])
    if not shape or any(not isinstance(n, int) or n < 1 for n in shape):
        raise fail(
            op, f"shape must be positive static extents, got {list(shape)}", span, "e.g. shape=[16, 64]"
        )
    return shape


def _result(spec: OpSpec, shape: tuple[int, ...], dtype: DataType) -> Type:
    if spec.level is Level.TENSOR:
        return TensorType(shape, dtype)
    return TileType(shape, dtype, MemorySpace.Vec)


def _integer_operand(op: str, e: Expr, what: str, span: SourceSpan | None) -> None:
    if not isinstance(e.type, ScalarType) or not e.type.dtype.is_integer:
        raise fail(
            op,
            f"{what} must be an integer scalar, got {describe(e.type)}",
            span,
            f"pass an int or an integer run-time scalar as {what}",
        )


def ci(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``start, start + 1, ...`` (``descending``: ``start, start - 1, ...``) in row-major order."""
    op = spec.name
    shape = _shape(op, attrs, span)
    dtype = attrs.get("dtype", DataType.INT32)
    if dtype not in CI_DTYPES:
        raise fail(op, f"counts in pl.INT16 or pl.INT32, got {dtype!r}", span, "write dtype=pl.INT32")
    if shape[-1] == 1:
        raise fail(
            op,
            f"the innermost dim of {list(shape)} is 1: the sequence runs along the rows",
            span,
            f"make a row and reshape it: pl.reshape(pl.arange(start, [1, {shape[0]}]), {list(shape)})",
        )
    _integer_operand(op, args[0], "start", span)
    check_scalar_fits(op, args[0], dtype, span, "start")
    return _result(spec, shape, dtype)


def random(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Uniform numbers: in ``[0, 1)`` for a float dtype, over the whole range of an integer one."""
    op = spec.name
    shape = _shape(op, attrs, span)
    dtype = attrs.get("dtype", DataType.FP32)
    if not (dtype.is_float or dtype.is_integer) or dtype is DataType.INDEX or dtype.bits > 32:
        raise fail(
            op,
            f"draws floats or integers of up to 32 bits, got {dtype!r}",
            span,
            "write dtype=pl.FP32 (uniform in [0, 1)) or an integer dtype such as pl.INT32",
        )
    for e, what in zip(args, ("seed", "offset"), strict=False):
        _integer_operand(op, e, what, span)
    return _result(spec, shape, dtype)


def tri(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A 0/1 mask of the elements on and below (``upper``: on and above) the diagonal shifted by
    ``diagonal``; only its valid region (a valid-shape operand) is written."""
    op = spec.name
    shape = _shape(op, attrs, span)
    if len(shape) != 2:
        raise fail(op, f"makes a 2-D mask, got shape {list(shape)}", span, "give shape=[rows, cols]")
    dtype = attrs["dtype"]
    if not (dtype.is_float or dtype.is_integer) or dtype is DataType.INDEX:
        raise fail(
            op, f"writes 0 and 1 as numbers, got {dtype!r}", span, "write dtype=pl.FP32 (or an integer dtype)"
        )
    _integer_operand(op, args[0], "diagonal", span)
    valid = None
    if len(args) == 2:
        check_offsets(op, args[1], 2, span, "valid_shape")
        assert isinstance(args[1], TupleExpr)
        sizes = [e.value if isinstance(e, Const) else None for e in args[1].elements]
        for dim, size in enumerate(sizes):
            if size is not None and not 0 < size <= shape[dim]:
                raise fail(
                    op,
                    f"valid extent {size} of dim {dim} is outside the mask's 1..{shape[dim]}",
                    span,
                    "each valid extent lies between 1 and the mask's extent",
                )
        if None not in sizes and tuple(sizes) != shape:
            valid = tuple(int(n) for n in sizes if n is not None)
    return TileType(shape, dtype, MemorySpace.Vec, valid)


# ---------------------------------------------------------------- declarations

_SHAPE = Attr("shape", tuple, REQUIRED)


def _declare(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    # A tile op is one instruction over a whole tile; a tensor op is tiled into row blocks, each
    # made from the position of its first element.
    made: tuple[Trait, ...] = (PlacesTile(), WHOLE_TILE) if tile else ()
    declare(
        OpSpec(
            f"{prefix}.ci",
            level,
            Unit.VECTOR,
            ci,
            (Operand("start", Role.SCALAR),),
            (_SHAPE, Attr("dtype", DataType, DataType.INT32), Attr("descending", bool, False)),
            (Cost("vector"), Positional(0, "descending"), *made, *(() if tile else (Lowers("tile.ci"),))),
            dsl="arange",
            signature="pl.arange(start, shape, dtype=pl.INT32, descending=False)",
            doc="consecutive integers from start in row-major order (descending: counting down)",
        )
    )
    declare(
        OpSpec(
            f"{prefix}.random",
            level,
            Unit.VECTOR,
            random,
            (Operand("seed", Role.SCALAR), Operand("offset", Role.SCALAR, optional=True)),
            (_SHAPE, Attr("dtype", DataType, DataType.FP32)),
            (Cost("vector"), Positional(1), *made, *(() if tile else (Lowers("tile.random"),))),
            dsl="random",
            signature="pl.random(shape, dtype=pl.FP32, seed=0)",
            doc="reproducible random numbers from seed: uniform in [0, 1) (floats) or over an integer dtype",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)

declare(
    OpSpec(
        "tile.tri",
        Level.TILE,
        Unit.VECTOR,
        tri,
        (Operand("diagonal", Role.SCALAR), Operand("valid_shape", Role.VALID_SHAPE, optional=True)),
        (_SHAPE, Attr("dtype", DataType, REQUIRED), Attr("upper", bool, False)),
        (Cost("vector"), PlacesTile(), WHOLE_TILE, SetsValid(1)),
        dsl="tri",
        signature="pl.tri(shape, dtype, upper=False, diagonal=0, valid_shape=None)",
        doc="a triangular 0/1 mask: 1 on and below the diagonal (upper: on and above), shifted by diagonal",
    )
)
