"""Elementwise ops: binary (and their scalar forms), unary, and casts, on tensors and tiles."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.enums import CastMode
from pypto.ir.ops.rules import (
    check_arithmetic,
    check_float_only,
    check_integer_only,
    check_only_dtypes,
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
    Effect,
    Elementwise,
    FloatOnly,
    Fold,
    FormatFree,
    IntegerOnly,
    KeepsValid,
    Level,
    Lowers,
    OnlyDtypes,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type, describe


def binary(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args)
    same_kind(op, lhs, rhs, span)
    if lhs.shape != rhs.shape:
        twins = describe(lhs) == describe(rhs)  # equal names, different pl.dynamic objects
        raise fail(
            op,
            f"operand shape mismatch: {describe(lhs)} vs {describe(rhs)}"
            + (": two different pl.dynamic extents of one name" if twins else ""),
            span,
            "make one pl.dynamic object and use it in both annotations"
            if twins
            else "both operands of an elementwise op must have the same shape",
        )
    if lhs.dtype != rhs.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            advice="binary.dtype_mismatch",
        )
    check_element_kind(spec, lhs, span)
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs


def shaped_and_scalar(spec: OpSpec, args: Sequence[Expr], span: SourceSpan | None, example: str) -> Any:
    """The shaped left operand of an op whose right one is a scalar that fits its dtype (checked,
    with its element kind and its memory space); ``example`` is the call the hint shows after the
    op's name, e.g. ``"(x, 2.0)"``."""
    op = spec.name
    lhs = shaped(op, args[0], span)
    if not isinstance(args[1].type, ScalarType):
        raise fail(
            op,
            f"right operand must be a scalar, got {describe(args[1].type)}",
            span,
            f"pass a number or a run-time scalar, e.g. {user_name(op)}{example}",
        )
    check_element_kind(spec, lhs, span)
    check_scalar_fits(op, args[1], lhs.dtype, span, "the scalar operand")
    check_vec(op, lhs, span)
    return lhs


def binary_scalar(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    lhs = shaped_and_scalar(spec, args, span, "(x, 2.0)")
    return with_changes(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs


def unary(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = shaped(op, args[0], span)
    check_element_kind(spec, x, span)
    check_vec(op, x, span)
    if attrs.get("high_precision") and x.dtype not in (DataType.FP16, DataType.FP32):
        raise fail(
            op,
            f"high_precision=True is a path for FP16 and FP32 elements, got {describe(x)}",
            span,
            "leave high_precision out, or convert the operand: pl.cast(x, pl.FP32)",
        )
    if len(args) == 2:
        check_scratch(op, args[1], x, span)
    return with_changes(x, memory_space=MemorySpace.Vec) if isinstance(x, TileType) else x


def check_element_kind(spec: OpSpec, x: TileType | TensorType, span: SourceSpan | None) -> None:
    """The element kinds an op is defined on, as its traits say: numbers (never BOOL), floats only
    (``FloatOnly``), integers only (``IntegerOnly``), a few dtypes (``OnlyDtypes``)."""
    op = spec.name
    if spec.has(IntegerOnly):
        check_integer_only(op, x, span)
    check_arithmetic(op, x, span)
    if spec.has(FloatOnly):
        check_float_only(op, x, span)
    only = spec.trait(OnlyDtypes)
    if only is not None:
        check_only_dtypes(op, x, only.dtypes, span)


def check_scratch(op: str, scratch: Expr, x: TileType | TensorType, span: SourceSpan | None) -> None:
    """A scratch tile (``tmp``) of a tile op: a Vec tile of ``x``'s dtype and rank, at least as
    large as ``x`` in every dimension."""
    t = scratch.type
    fits = (
        isinstance(x, TileType)
        and isinstance(t, TileType)
        and t.dtype == x.dtype
        and len(t.shape) == len(x.shape)
        and all(
            isinstance(s, int) and isinstance(n, int) and s >= n
            for s, n in zip(t.shape, x.shape, strict=True)
        )
    )
    if not fits:
        got = describe(t)
        if not isinstance(x, TileType):
            raise fail(
                op,
                f"on {describe(x)} takes no scratch operand (the compiler makes one per tile)",
                span,
                f"drop the scratch operand: {user_name(op)}(x)",
            )
        raise fail(
            op,
            f"needs a scratch tile of {x.dtype.name} at least as large as {describe(x)}, got {got}",
            span,
            f"pass one: tmp = pl.create_tile({list(x.shape)}, pl.{x.dtype.name})",
        )
    check_vec(op, t, span)


def cast(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = args[0].type
    dtype = attrs["dtype"]
    mode = attrs.get("mode", CastMode.round)
    if not isinstance(mode, CastMode):
        modes = ", ".join(repr(m.value) for m in CastMode)
        # A plain fix as well: backends build casts without the front end.
        hint = f"use one of {modes}"
        raise fail(op, f"unknown rounding mode {mode!r}", span, hint, advice="cast.unknown_mode", modes=modes)
    if isinstance(x, ScalarType):
        return ScalarType(dtype)
    x = shaped(op, args[0], span)
    check_vec(op, x, span)
    if isinstance(x, TileType):
        return with_changes(x, dtype=dtype, memory_space=MemorySpace.Vec)
    return with_changes(x, dtype=dtype)


# ---------------------------------------------------------------- declarations

# name: (commutative, slow on the vector unit, the scalar op on two scalars, one-line doc)
BINARY: dict[str, tuple[bool, bool, str | None, str]] = {
    "add": (True, False, "add", "elementwise sum"),
    "sub": (False, False, "sub", "elementwise difference"),
    "mul": (True, False, "mul", "elementwise product"),
    "div": (False, True, "truediv", "elementwise quotient (integers: truncated; by zero: an error)"),
    "maximum": (True, False, "max", "elementwise maximum"),
    "minimum": (True, False, "min", "elementwise minimum"),
    "rem": (
        False,
        True,
        "mod",
        "elementwise remainder with the divisor's sign, a - floor(a / b) * b (Python's %)",
    ),
    "fmod": (
        False,
        True,
        None,
        "elementwise remainder with the dividend's sign, a - trunc(a / b) * b (C's fmod)",
    ),
}
# name: (float only, slow on the vector unit, the fold on a number, one-line doc)
UNARY: dict[str, tuple[bool, bool, Callable[[Any], Any], str]] = {
    "exp": (True, True, math.exp, "e to the power of each element"),
    "log": (True, True, math.log, "natural logarithm of each element"),
    "sqrt": (True, True, math.sqrt, "square root of each element"),
    "rsqrt": (True, True, lambda x: 1.0 / math.sqrt(x), "reciprocal square root of each element"),
    "recip": (True, True, lambda x: 1.0 / x, "reciprocal of each element"),
    "neg": (False, False, operator.neg, "negation of each element"),
    "abs": (False, False, abs, "absolute value of each element"),
    "relu": (False, False, lambda x: max(x, 0), "max(x, 0) of each element"),
    "sigmoid": (True, True, lambda x: 1.0 / (1.0 + math.exp(-x)), "1 / (1 + e^-x) of each element"),
    "tanh": (True, True, math.tanh, "hyperbolic tangent of each element"),
    "sin": (True, True, math.sin, "sine of each element (radians)"),
    "cos": (True, True, math.cos, "cosine of each element (radians)"),
}
# Unary ops defined on some float dtypes only: the trigonometric ones on FP32.
ONLY_DTYPES = {"sin": ("FP32",), "cos": ("FP32",)}
# Unary ops with a slower, more precise path: high_precision=True (on tiles, pl.rsqrt's path is
# chosen by passing a scratch tile instead).
HIGH_PRECISION = ("recip", "rsqrt")

_VEC = (MemorySpace.Vec,)


def _operand(name: str, level: Level) -> Operand:
    if level is Level.TILE:
        return Operand(name, Role.TILE, _VEC)
    return Operand(name, Role.TENSOR)


def _traits(level: Level, name: str, cost: str, *extra: Trait) -> tuple[Trait, ...]:
    lowers: tuple[Trait, ...] = (Lowers(f"tile.{name}"),) if level is Level.TENSOR else (PlacesTile(),)
    return (Cost(cost), KeepsValid(), *lowers, *extra)


def _unary_form(name: str, level: Level) -> tuple[tuple[Operand, ...], tuple[Attr, ...], str]:
    """The operands, attributes and DSL call of a unary op: ``pl.rsqrt(x, tmp)`` on tiles (the
    scratch tile selects the precise path), ``high_precision=`` elsewhere it has one."""
    x = _operand("x", level)
    if name == "rsqrt" and level is Level.TILE:
        tmp = Operand("tmp", Role.TILE, _VEC, optional=True, effect=Effect.NONE)
        return (x, tmp), (), f"pl.{name}(x, tmp=None)"
    if name in HIGH_PRECISION:
        return (x,), (Attr("high_precision", bool, False),), f"pl.{name}(x, *, high_precision=False)"
    return (x,), (), f"pl.{name}(x)"


def _declare(level: Level) -> None:
    prefix = level.value
    for name, (commutative, slow, on_scalars, doc) in BINARY.items():
        cost = "vector_slow" if slow else "vector"
        swap: tuple[Trait, ...] = (Commutative(),) if commutative else ()
        elementwise = Elementwise(f"{prefix}.{name}s", f"scalar.{on_scalars}" if on_scalars else None)
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                binary,
                (_operand("lhs", level), _operand("rhs", level)),
                traits=(*_traits(level, name, cost, elementwise), *swap),
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
    for name, (floats, slow, fold, doc) in UNARY.items():
        cost = "vector_slow" if slow else "vector"
        only: tuple[Trait, ...] = (FloatOnly(),) if floats else ()
        if name in ONLY_DTYPES:
            only = (*only, OnlyDtypes(ONLY_DTYPES[name]))
        operands, attrs, signature = _unary_form(name, level)
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                unary,
                operands,
                attrs,
                traits=(*_traits(level, name, cost, Elementwise()), Fold(fold), *only),
                dsl=name,
                signature=signature,
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
            traits=(*_traits(level, "cast", "vector", Elementwise()), FormatFree()),
            dsl="cast",
            signature="pl.cast(x, dtype, mode=pl.CastMode.round)",
            doc="each element converted to dtype (float -> int rounds as mode says, and saturates)",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
