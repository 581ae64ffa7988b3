"""Rectifiers with a slope for the negative side, on tiles: ``prelu`` (a slope per element, a tile
like the operand) and ``lrelu`` (one slope, a scalar). ``pl.relu`` is an elementwise op
(:mod:`~pypto.ir.ops.elementwise`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.elementwise import check_element_kind, check_scratch
from pypto.ir.ops.rules import check_scalar_fits, check_vec, fail, same_kind, shaped, with_changes
from pypto.ir.ops.spec import (
    Cost,
    Effect,
    Elementwise,
    FloatOnly,
    KeepsValid,
    Level,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, Type, describe


def prelu(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``prelu(x, slope[, tmp])``: float tiles of one shape and dtype."""
    op = spec.name
    x, slope = (shaped(op, a, span) for a in args[:2])
    same_kind(op, x, slope, span)
    check_element_kind(spec, x, span)
    if (slope.shape, slope.dtype) != (x.shape, x.dtype):
        raise fail(
            op,
            f"the slope must be shaped and typed like the operand: {describe(x)} vs {describe(slope)}",
            span,
            "give one slope per element (a tile like x); for one slope for all, use pl.lrelu(x, slope)",
        )
    check_vec(op, x, span)
    check_vec(op, slope, span)
    if len(args) == 3:
        check_scratch(op, args[2], x, span)
    return with_changes(x, memory_space=MemorySpace.Vec)


def lrelu(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``lrelu(x, slope)``: a float tile and a scalar slope."""
    op = spec.name
    x = shaped(op, args[0], span)
    check_element_kind(spec, x, span)
    if not isinstance(args[1].type, ScalarType):
        raise fail(
            op,
            f"the slope must be a scalar, got {describe(args[1].type)}",
            span,
            "pass a number, e.g. pl.lrelu(x, 0.01); a slope per element is pl.prelu(x, slope)",
        )
    check_scalar_fits(op, args[1], x.dtype, span, "the slope")
    check_vec(op, x, span)
    return with_changes(x, memory_space=MemorySpace.Vec)


_VEC = (MemorySpace.Vec,)
_TRAITS = (Cost("vector"), KeepsValid(), PlacesTile(), Elementwise(), FloatOnly())

declare(
    OpSpec(
        "tile.prelu",
        Level.TILE,
        Unit.VECTOR,
        prelu,
        (
            Operand("x", Role.TILE, _VEC),
            Operand("slope", Role.TILE, _VEC),
            Operand("tmp", Role.TILE, _VEC, optional=True, effect=Effect.NONE),
        ),
        traits=_TRAITS,
        dsl="prelu",
        signature="pl.prelu(x, slope, tmp=None)",
        doc="x where x > 0, else x * slope (a slope per element)",
    )
)
declare(
    OpSpec(
        "tile.lrelu",
        Level.TILE,
        Unit.VECTOR,
        lrelu,
        (Operand("x", Role.TILE, _VEC), Operand("slope", Role.SCALAR)),
        traits=_TRAITS,
        dsl="lrelu",
        signature="pl.lrelu(x, slope)",
        doc="x where x > 0, else x * slope (one scalar slope)",
    )
)
