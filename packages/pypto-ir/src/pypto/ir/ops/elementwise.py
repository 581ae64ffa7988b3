"""Elementwise ops: binary (and their scalar forms), unary, and casts, on tensors and tiles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.enums import CastMode
from pypto.ir.ops.rules import (
    check_arithmetic,
    check_float_only,
    check_scalar_fits,
    check_vec,
    fail,
    same_kind,
    shaped,
    user_name,
    with_changes,
)
from pypto.ir.ops.spec import (
    REQUIRED,
    Attr,
    Commutative,
    Cost,
    Elementwise,
    FloatOnly,
    KeepsValid,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, TileType, Type, describe


def binary(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args)
    same_kind(op, lhs, rhs, span)
    if lhs.shape != rhs.shape:
        raise fail(
            op,
            f"operand shape mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            "both operands of an elementwise op must have the same shape",
        )
    if lhs.dtype != rhs.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            "PyPTO has no implicit promotion: convert one side with pl.cast(x, dtype)",
        )
    check_arithmetic(op, lhs, span)
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs


def binary_scalar(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    lhs = shaped(op, args[0], span)
    if not isinstance(args[1].type, ScalarType):
        raise fail(
            op,
            f"right operand must be a scalar, got {describe(args[1].type)}",
            span,
            f"pass a number or a run-time scalar, e.g. {user_name(op)}(x, 2.0)",
        )
    check_arithmetic(op, lhs, span)
    check_scalar_fits(op, args[1], lhs.dtype, span, "the scalar operand")
    check_vec(op, lhs, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs


def unary(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = shaped(op, args[0], span)
    check_arithmetic(op, x, span)
    if spec.has(FloatOnly):
        check_float_only(op, x, span)
    check_vec(op, x, span)
    return with_changes(x, memory_space=MemorySpace.Vec) if isinstance(x, TileType) else x


def cast(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = args[0].type
    dtype = attrs["dtype"]
    mode = attrs.get("mode", CastMode.round)
    if not isinstance(mode, CastMode):
        modes = ", ".join(repr(m.value) for m in CastMode)
        raise fail(op, f"unknown rounding mode {mode!r}", span, f"use a pl.CastMode: one of {modes}")
    if isinstance(x, ScalarType):
        return ScalarType(dtype)
    x = shaped(op, args[0], span)
    check_vec(op, x, span)
    if isinstance(x, TileType):
        return with_changes(x, dtype=dtype, memory_space=MemorySpace.Vec)
    return with_changes(x, dtype=dtype)


# ---------------------------------------------------------------- declarations

# name: (commutative, slow on the vector unit, one-line doc)
BINARY = {
    "add": (True, False, "elementwise sum"),
    "sub": (False, False, "elementwise difference"),
    "mul": (True, False, "elementwise product"),
    "div": (False, True, "elementwise quotient (integers: truncated; by zero: an error)"),
    "maximum": (True, False, "elementwise maximum"),
    "minimum": (True, False, "elementwise minimum"),
}
# name: (float only, slow on the vector unit, one-line doc)
UNARY = {
    "exp": (True, True, "e to the power of each element"),
    "log": (True, True, "natural logarithm of each element"),
    "sqrt": (True, True, "square root of each element"),
    "rsqrt": (True, True, "reciprocal square root of each element"),
    "recip": (True, True, "reciprocal of each element"),
    "neg": (False, False, "negation of each element"),
    "abs": (False, False, "absolute value of each element"),
    "relu": (False, False, "max(x, 0) of each element"),
}

_VEC = (MemorySpace.Vec,)


def _operand(name: str, level: Level) -> Operand:
    if level is Level.TILE:
        return Operand(name, Role.TILE, _VEC)
    return Operand(name, Role.TENSOR)


def _traits(level: Level, name: str, cost: str, *extra: Trait) -> tuple[Trait, ...]:
    lowers: tuple[Trait, ...] = (Lowers(f"tile.{name}"),) if level is Level.TENSOR else (PlacesTile(),)
    return (Cost(cost), KeepsValid(), *lowers, *extra)


def _declare(level: Level) -> None:
    prefix = level.value
    for name, (commutative, slow, doc) in BINARY.items():
        cost = "vector_slow" if slow else "vector"
        swap: tuple[Trait, ...] = (Commutative(),) if commutative else ()
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                binary,
                (_operand("lhs", level), _operand("rhs", level)),
                traits=(*_traits(level, name, cost, Elementwise(f"{prefix}.{name}s")), *swap),
                dsl=name,
                signature=f"pl.{name}(lhs, rhs)",
                doc=doc,
            )
        )
        declare(
            OpSpec(
                f"{prefix}.{name}s",
                level,
                Unit.VECTOR,
                binary_scalar,
                (_operand("lhs", level), Operand("rhs", Role.SCALAR)),
                traits=(*_traits(level, f"{name}s", cost, Elementwise()), *swap),
                dsl=name,
                signature=f"pl.{name}(lhs, scalar)",
                doc=f"{doc}, with a scalar right operand",
            )
        )
    for name, (floats, slow, doc) in UNARY.items():
        cost = "vector_slow" if slow else "vector"
        only: tuple[Trait, ...] = (FloatOnly(),) if floats else ()
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                unary,
                (_operand("x", level),),
                traits=(*_traits(level, name, cost, Elementwise()), *only),
                dsl=name,
                signature=f"pl.{name}(x)",
                doc=doc,
            )
        )
    declare(
        OpSpec(
            f"{prefix}.cast",
            level,
            Unit.VECTOR,
            cast,
            (_operand("x", level),),
            (Attr("dtype", DataType, REQUIRED), Attr("mode", CastMode, CastMode.round)),
            traits=_traits(level, "cast", "vector", Elementwise()),
            dsl="cast",
            signature="pl.cast(x, dtype, mode=pl.CastMode.round)",
            doc="each element converted to dtype (float -> int rounds as mode says, and saturates)",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
