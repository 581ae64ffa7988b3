"""Parse-time values: IR expressions, or compile-time Python values that fold away.

A name in a kernel body means either an IR expression (a tensor, a tile, a run-time scalar) or
a compile-time constant (an int from ``a.shape``, a dtype, an enum member, a scalar argument
the kernel was specialized on). Constants become ``Const`` only where an op needs an operand.
"""

from __future__ import annotations

import difflib
from enum import Enum
from typing import Any, TypeGuard

from pypto.ir import (
    INDEX,
    TASK_ID,
    ArrayType,
    CastMode,
    Const,
    DataType,
    Expr,
    HandleType,
    ParseError,
    ScalarType,
    SourceSpan,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    make_call,
)
from pypto.ir.extents import Extent, is_symbolic
from pypto.ir.types import describe


def is_number(value: Any) -> bool:
    """A compile-time number: a Python int/float/bool or an IR ``Const``."""
    return isinstance(value, (int, float, bool, Const))


def number(value: Any) -> int | float | bool:
    return value.value if isinstance(value, Const) else value


def is_scalar(value: Any) -> bool:
    """A compile-time number or a run-time IR scalar."""
    return is_number(value) or (isinstance(value, Expr) and isinstance(value.type, ScalarType))


def is_shaped(value: Any) -> TypeGuard[Expr]:
    """A tensor or tile expression."""
    return isinstance(value, Expr) and isinstance(value.type, (TensorType, TileType))


def shaped_type(value: Expr) -> TensorType | TileType:
    """The type of a tensor or tile expression (one :func:`is_shaped` admitted)."""
    assert isinstance(value.type, (TensorType, TileType)), value
    return value.type


def element_dtype(value: Expr) -> DataType:
    """The element type of a scalar, tensor or tile expression."""
    assert isinstance(value.type, (ScalarType, TensorType, TileType)), value
    return value.type.dtype


def is_tile(value: Any) -> bool:
    return isinstance(value, Expr) and isinstance(value.type, TileType)


def describe_value(value: Any) -> str:
    """How a value reads in an error message: ``Tensor[[128, 128], FP32]``, ``the int 3``."""
    if is_symbolic(value):
        return f"the dynamic extent {value!r}"
    if isinstance(value, Expr):
        return describe(value.type)
    if isinstance(value, (list, tuple)):
        return f"the list {list(value)!r}"
    if value is None or isinstance(value, (int, float, str, Enum)):
        return f"the {type(value).__name__} {value!r}"
    return f"a Python {type(value).__name__} object"


def annotation_text(t: Any) -> str | None:
    """``t`` as the annotation that names it: ``pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec]``."""
    if isinstance(t, TileType):
        space = f", pl.Mem.{t.memory_space.name}" if t.memory_space is not None else ""
        return f"pl.Tile[{list(t.shape)}, pl.{t.dtype.name}{space}]"
    if isinstance(t, TensorType):
        return f"pl.Tensor[{list(t.shape)}, pl.{t.dtype.name}]"
    if t == TASK_ID:
        return "pl.TaskId"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, (ArrayType, HandleType)):
        return str(t)
    return None


def const(value: int | float | bool, dtype: DataType | None, span: SourceSpan | None) -> Const:
    """A ``Const`` of ``value``, typed like ``dtype`` where the kinds agree.

    >>> const(2, DataType.FP32, None)   # Const(2.0) typed FP32
    """
    if isinstance(value, bool):
        return Const(value, ScalarType(DataType.BOOL), span)
    if isinstance(value, float):
        kind = dtype if dtype is not None and dtype.is_float else DataType.FP32
        return Const(value, ScalarType(kind), span)
    if dtype is not None and dtype.is_float:
        return Const(float(value), ScalarType(dtype), span)
    return Const(value, ScalarType(dtype) if dtype is not None else INDEX, span)


def scalar_expr(value: Any, dtype: DataType | None, span: SourceSpan | None) -> Expr:
    """A scalar operand as IR: numbers become ``Const`` (typed like ``dtype``), IR scalars pass."""
    if isinstance(value, Const):
        return value
    if is_number(value):
        return const(value, dtype, span)
    if isinstance(value, Expr) and isinstance(value.type, ScalarType):
        return value
    raise ParseError(
        f"expected a scalar, got {describe_value(value)}",
        span,
        "pass a number or a run-time scalar (a loop index, a scalar parameter, a pl.read(...) result)",
    )


def tile_scalar(value: Any, dtype: DataType, span: SourceSpan | None) -> Expr:
    """A scalar operand of an op on elements of ``dtype``: a whole float (``2.0``) on an integer
    tile is that integer; a fractional one stays a float, which the op's type rule rejects."""
    plain = number(value) if is_number(value) else None
    if isinstance(plain, float) and not isinstance(value, Const) and dtype.is_integer and plain.is_integer():
        return Const(int(plain), ScalarType(dtype), span)
    return scalar_expr(value, dtype, span)


def index_tuple(values: Any, span: SourceSpan | None, what: str = "offsets") -> TupleExpr:
    """``[i * 128, 0]`` as a ``TupleExpr`` of integer scalars."""
    if not isinstance(values, (list, tuple)):
        raise ParseError(
            f"{what} must be a list such as [0, 0], got {describe_value(values)}",
            span,
            f"write {what} as a list with one index per dimension, e.g. [0, 0] for a 2-D tensor",
        )
    elements: list[Expr] = []
    for v in values:
        if isinstance(v, bool) or not is_scalar(v):
            raise ParseError(
                f"{what} must hold integer scalars, got {describe_value(v)}",
                span,
                "each entry is an int or an integer run-time scalar, e.g. [i * 64, 0] with i a loop index",
            )
        e = scalar_expr(v, DataType.INDEX, span)
        if not isinstance(e.type, ScalarType) or not e.type.dtype.is_integer:
            fix = (
                "write whole ints such as 0 or 64"
                if is_number(v)
                else "convert it first: pl.cast(x, pl.INDEX)"
            )
            raise ParseError(
                f"{what} must hold integers, got {describe_value(v)}", span, f"{what} count elements: {fix}"
            )
        elements.append(e)
    return TupleExpr(tuple(elements), TupleType(tuple(e.type for e in elements)), span)


def static_shape(
    values: Any, span: SourceSpan | None, what: str = "shape", dynamic: bool = False
) -> tuple[Extent, ...]:
    """A shape known at compile time: a list of positive ints (constants fold, e.g. ``[M, K // 2]``);
    with ``dynamic`` (a tensor's shape) an entry may be a dynamic extent (``M``, ``M * 2``)."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ParseError(
            f"{what} must be a non-empty list of ints, got {describe_value(values)}",
            span,
            f"write {what} as a list with one extent per dimension, e.g. [64, 64]",
        )
    dims: list[Extent] = []
    for v in values:
        dim = number(v) if is_number(v) else v
        if dynamic and is_symbolic(dim):
            dims.append(dim)
            continue
        if is_symbolic(dim):
            raise ParseError(
                f"{what} must hold positive ints known at compile time, got the dynamic extent "
                f"{dim!r}: a tile's shape is static",
                span,
                f"use a static block size and a run-time valid shape: pl.load(x, [r, 0], [64, ...], "
                f"valid_shape=[pl.min(64, {dim!r} - r), ...]) in a loop pl.range(0, {dim!r}, 64)",
            )
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ParseError(
                f"{what} must hold positive ints known at compile time, got {describe_value(dim)}",
                span,
                "shapes fold from constants and a.shape; run-time values cannot size a tile",
            )
        dims.append(dim)
    return tuple(dims)


KWARGS_HINT = "write the keyword arguments out: f(x, name=value)"


def unknown_keyword_hint(name: str | None, known: tuple[str, ...], listing: str) -> str:
    """``did you mean name_hint=?`` for a misspelt keyword, else what the call takes."""
    if name is None:
        return KWARGS_HINT
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean {close[0]}=? {listing}" if close else listing


def integer_converted(value: Any, dtype: DataType, span: SourceSpan | None) -> Any:
    """A run-time integer scalar taken as another integer dtype (``INDEX``, ``INT64``, ``INT32``,
    ``BOOL``...): the implicit conversion C gives a kernel's scalars, at a call's scalar parameter
    and at an annotated assignment. ``value`` unchanged when it is no such scalar (the caller
    then reports the mismatch)."""
    if not (isinstance(value, Expr) and isinstance(value.type, ScalarType)):
        return value
    source = value.type.dtype
    if source == dtype or not (_integral(source) and _integral(dtype)):
        return value
    return make_call("scalar.cast", (value,), {"dtype": dtype, "mode": CastMode.round}, span)


def _integral(dtype: DataType) -> bool:
    return (dtype.is_integer or dtype is DataType.BOOL) and dtype is not DataType.TASK_ID
