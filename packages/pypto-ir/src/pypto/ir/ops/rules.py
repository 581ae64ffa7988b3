"""Checks the type rules of every family share, and the op's name as the user writes it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from math import prod
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, TypeCheckError, VerificationError
from pypto.ir.nodes import Const, DimExpr, DynDim, Expr, TupleExpr
from pypto.ir.ops.spec import OPS, OpSpec
from pypto.ir.types import INDEX, UNIT, MemorySpace, ScalarType, TensorType, TileType, Type, describe


def user_name(op: str) -> str:
    """The op as the user writes it, for messages: ``tile.add`` and ``tile.adds`` -> ``pl.add``,
    ``tile.load_partial`` -> ``pl.load``, ``system.fence`` -> ``pl.system.fence`` (the spec's
    ``dsl`` name)."""
    spec = OPS.get(op)
    if spec is not None and spec.dsl and op.startswith("dist."):
        return spec.dsl_name
    return f"pl.{short_name(op)}"


def short_name(op: str) -> str:
    """:func:`user_name` without ``pl.``: ``tile.tpush_to_aiv`` -> ``tpush_to_aiv``."""
    spec = OPS.get(op)
    return spec.dsl if spec is not None and spec.dsl else op


def fail(
    failing: str,
    message: str,
    span: SourceSpan | None,
    hint: str | None = None,
    *,
    advice: str = "",
    **facts: Any,
) -> TypeCheckError:
    """A type error of op ``failing`` at ``span``. ``advice`` names the problem for the front end's
    advisor, which words the fix in the DSL's terms from ``facts`` (``pypto.language.advice``);
    ``hint`` is a fix in plain terms, shown where no advisor words the advice (or alone)."""
    return TypeCheckError(
        f"{user_name(failing)}: {message}", span, hint, advice=(advice, facts) if advice else None
    )


def shaped(op: str, e: Expr, span: SourceSpan | None, what: str = "operand") -> TileType | TensorType:
    if not isinstance(e.type, (TileType, TensorType)):
        raise fail(
            op,
            f"{what} must be a tensor or a tile, got {describe(e.type)}",
            span,
            advice="operand.not_shaped",
            what=what,
        )
    return e.type


def matrix_shape(shape: Sequence[int]) -> list[int]:
    """A 2-D shape holding the elements of ``shape``: [n] -> [1, n], [a, b, c] -> [a * b, c]."""
    if len(shape) < 2:
        return [1, prod(shape)]
    return [prod(shape[:-1]), shape[-1]]


def same_kind(op: str, lhs: Type, rhs: Type, span: SourceSpan | None) -> None:
    if isinstance(lhs, TileType) is not isinstance(rhs, TileType):  # a window is a tensor too
        raise fail(
            op,
            f"operands mix a tensor and a tile: {describe(lhs)} and {describe(rhs)}",
            span,
            advice="operands.tensor_and_tile",
        )


def with_changes(t: TileType | TensorType, **changes: Any) -> Type:
    if isinstance(t, TensorType):
        changes.pop("memory_space", None)
        changes.pop("valid_shape", None)
    return replace(t, **changes)


def check_vec(op: str, t: Type, span: SourceSpan | None) -> None:
    if isinstance(t, TileType) and t.memory_space not in (None, MemorySpace.Vec):
        cube_side = t.memory_space in (MemorySpace.Mat, MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right)
        message = f"vector op needs its tiles in Vec, got {describe(t)}"
        if cube_side:
            raise fail(op, message, span, advice="vector.cube_tile")
        raise fail(op, message, span, advice="vector.not_in_vec")


def check_arithmetic(op: str, t: TileType | TensorType, span: SourceSpan | None) -> None:
    """Arithmetic needs numbers: a BOOL tile or tensor is a type error."""
    if t.dtype.is_bool:
        raise fail(
            op,
            f"computes on numbers, got {describe(t)}",
            span,
            advice="arith.bool_operand",
        )


def check_float_only(op: str, t: TileType | TensorType, span: SourceSpan | None) -> None:
    if not t.dtype.is_float:
        raise fail(
            op,
            f"is defined on floats, got {describe(t)}",
            span,
            advice="arith.float_only",
            t=t,
        )


def check_integer_only(op: str, t: TileType | TensorType, span: SourceSpan | None) -> None:
    """Bitwise logic and shifts work on the bits of integers: a float or BOOL operand is an error."""
    if not t.dtype.is_integer or t.dtype is DataType.INDEX:
        raise fail(
            op,
            f"is defined on integers, got {describe(t)}",
            span,
            advice="arith.integer_only",
            t=t,
        )


def check_only_dtypes(
    op: str, t: TileType | TensorType, dtypes: Sequence[str], span: SourceSpan | None
) -> None:
    """An op defined on a few element dtypes only (``pl.sin`` on FP32)."""
    if t.dtype.name not in dtypes:
        names = " or ".join(f"pl.{d}" for d in dtypes if d in DataType.__members__)
        raise fail(
            op,
            f"is defined on {names} elements, got {describe(t)}",
            span,
            f"convert it first: pl.cast(x, pl.{dtypes[0]})",
        )


def promoted_integer(a: DataType, b: DataType) -> DataType:
    """The integer dtype two integer operands of a bitwise op combine in: the wider one; of two
    as wide, the signed one (``INT16 & INT32 -> INT32``, ``UINT8 & INT8 -> INT8``)."""
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return b if a.name.startswith("UINT") else a


def check_scalar_fits(op: str, scalar: Expr, dtype: DataType, span: SourceSpan | None, what: str) -> None:
    """A scalar used with elements of ``dtype``: an integer dtype takes no float scalar (it would
    truncate) and no constant outside its range; a float dtype no finite constant beyond its
    largest value (it would become inf); no dtype takes a bool scalar in arithmetic."""
    t = scalar.type
    assert isinstance(t, ScalarType)
    name = f"pl.{dtype.name}"
    value = f" {scalar.value!r}" if isinstance(scalar, Const) else ""
    if t.dtype.is_bool and not dtype.is_bool:
        raise fail(op, f"{what} is a BOOL scalar{value}, not a number of {name}", span, "use 0 or 1")
    if dtype.is_float and isinstance(scalar, Const) and math.isfinite(scalar.value):
        largest = dtype.float_max
        if abs(scalar.value) > largest:
            raise fail(
                op,
                f"{what} {scalar.value!r} does not fit {name}, whose largest value is {largest:g}",
                span,
                advice="scalar.beyond_float_range",
                largest=largest,
            )
    if dtype.is_integer or dtype.is_bool:
        if t.dtype.is_float:
            raise fail(
                op,
                f"{what} is a {t.dtype.name} scalar{value}, which {name} elements cannot hold exactly",
                span,
                advice="scalar.float_for_integer",
            )
        low, high = dtype.int_range
        if isinstance(scalar, Const) and not low <= scalar.value <= high:
            raise fail(
                op,
                f"{what} {scalar.value!r} does not fit {name}, whose range is [{low}, {high}]",
                span,
                advice="scalar.beyond_int_range",
                low=low,
                high=high,
            )


def check_offsets(op: str, e: Expr, rank: int, span: SourceSpan | None, what: str = "offsets") -> None:
    if not isinstance(e, TupleExpr) or len(e.elements) != rank:
        got = f", got {len(e.elements)}" if isinstance(e, TupleExpr) else ""
        zeros = ", ".join(["0"] * rank)
        raise fail(
            op, f"{what} must be a list of {rank} indices{got}", span, f"one per dimension, e.g. [{zeros}]"
        )
    for el in e.elements:
        if not isinstance(el.type, ScalarType) or not el.type.dtype.is_integer:
            raise fail(
                op,
                f"{what} must be integers, got {describe(el.type)}",
                span,
                advice="offsets.not_integer",
            )


def check_same_rank(
    op: str, what: str, dims: Sequence[int], shape: Sequence[int], whose: str, span: SourceSpan | None
) -> None:
    """``dims`` (a shape, a region, a valid shape) gives one extent per dimension of ``shape``."""
    if len(dims) != len(shape):
        raise fail(
            op,
            f"{what} {list(dims)} has {len(dims)} dim(s), but {whose} has {len(shape)}",
            span,
            f"give {what} one extent per dimension of {whose}",
        )


def check_static_bounds(
    op: str,
    shape: Sequence[int],
    offsets: Expr,
    region: Sequence[int],
    span: SourceSpan | None,
    what: str = "shape",
) -> None:
    """The region of extents ``region`` at ``offsets`` lies inside ``shape`` (checked where the
    offsets are constants); the ranks must agree."""
    assert isinstance(offsets, TupleExpr)
    if not len(offsets.elements) == len(region) == len(shape):
        raise fail(
            op,
            f"{what} {list(region)} and offsets of {len(offsets.elements)} indices do not match the "
            f"{len(shape)} dim(s) of {list(shape)}",
            span,
            "give the offsets and the extents one entry per dimension",
        )
    for dim, (off, size, full) in enumerate(zip(offsets.elements, region, shape, strict=True)):
        if isinstance(size, (DynDim, DimExpr)) or isinstance(full, (DynDim, DimExpr)):
            continue  # a dynamic extent is checked at run time, by the backend
        if size <= 0:
            raise fail(op, f"{what} must be positive, got {list(region)}", span, "every extent is at least 1")
        if isinstance(off, Const) and (off.value < 0 or off.value + size > full):
            raise fail(
                op,
                f"region [{off.value}:{off.value + size}] is outside dim {dim} of size {full}",
                span,
                f"keep offset + extent within 0..{full} (only a valid_shape lets a tile hang over the end)",
            )


def check_valid_within(op: str, valid: Sequence[int], shape: Sequence[int], span: SourceSpan | None) -> None:
    """A static valid shape describes part of its tile: same rank, each extent in 1..tile extent."""
    check_same_rank(op, "valid_shape", valid, shape, f"the tile shape {list(shape)}", span)
    for dim, (v, full) in enumerate(zip(valid, shape, strict=True)):
        if not 0 < v <= full:
            raise fail(
                op,
                f"valid_shape {list(valid)} is larger than the tile shape {list(shape)} in dim {dim}",
                span,
                "the valid region is part of the tile: each valid extent lies between 1 and the tile's",
            )


def check_run_time_region(
    op: str, shape: Sequence[int], offsets: Expr, valid: Expr, tile: Sequence[int], span: SourceSpan | None
) -> None:
    """A valid shape given as index expressions: each constant entry lies in ``[0, tile dim]``,
    and a constant offset plus a constant entry stays inside the tensor."""
    check_offsets(op, valid, len(tile), span, "valid_shape")
    assert isinstance(valid, TupleExpr) and isinstance(offsets, TupleExpr)
    check_same_rank(op, "the tile shape", tile, shape, f"the tensor {list(shape)}", span)
    for dim, (off, size) in enumerate(zip(offsets.elements, valid.elements, strict=True)):
        if not isinstance(size, Const):
            continue
        if not 0 <= size.value <= tile[dim]:
            raise fail(
                op,
                f"valid_shape {size.value} of dim {dim} is outside the tile's {tile[dim]}",
                span,
                "each valid extent lies between 0 and the tile's extent",
            )
        if isinstance(shape[dim], (DynDim, DimExpr)):
            continue  # a dynamic extent: the backend checks the region at run time
        if isinstance(off, Const) and (off.value < 0 or off.value + size.value > shape[dim]):
            raise fail(
                op,
                f"region [{off.value}:{off.value + size.value}] is outside dim {dim} of size {shape[dim]}",
                span,
                f"keep offset + valid extent within 0..{shape[dim]}",
            )


def matrix(op: str, e: Expr, span: SourceSpan | None, what: str = "operand") -> TileType | TensorType:
    t = shaped(op, e, span, what)
    if len(t.shape) != 2:
        raise fail(
            op,
            f"{what} must be 2-D, got {describe(t)}",
            span,
            advice="operand.not_2d",
            t=t,
        )
    check_arithmetic(op, t, span)
    check_vec(op, t, span)
    return t


def vector_result(t: TileType | TensorType, **changes: Any) -> Type:
    """The result of a vector op shaped from ``t``: a Vec tile, or a tensor."""
    if isinstance(t, TileType):
        return with_changes(t, memory_space=MemorySpace.Vec, **changes)
    return with_changes(t, **changes)


def ranked(shape: Sequence[int], rank: int) -> list[int]:
    """``shape``'s elements in ``rank`` dims: leading 1s added, or leading dims merged."""
    if len(shape) <= rank:
        return [1] * (rank - len(shape)) + list(shape)
    merged = len(shape) - rank + 1
    return [prod(shape[:merged]), *shape[merged:]]


def numel(t: TensorType) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def unit_result(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    return UNIT


def given(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    raise VerificationError(f"op {op!r} takes its result type from the caller", span)


def index_result(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    return INDEX
