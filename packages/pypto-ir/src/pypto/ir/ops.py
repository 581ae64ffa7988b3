"""The op table: every op is declared once here.

An :class:`OpDef` gives the op's name, the unit that executes it, its type rule, which operands
it reads and writes, and the cost class a backend's cost model keys on. The DSL, the printer, the
verifier, the passes and the simulator's semantics all look ops up by name in :data:`OPS`.

Naming: ``tensor.*`` ops work on whole global-memory tensors inside a scope (the compiler tiles
them), ``tile.*`` ops are single tile instructions, ``scalar.*`` ops are index arithmetic.
A ``tile.X`` exists for every elementwise ``tensor.X`` so lowering maps them by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from math import prod
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, TypeCheckError, VerificationError
from pypto.ir.nodes import Call, Const, Expr, SplitMode, TupleExpr
from pypto.ir.types import (
    INDEX,
    UNIT,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    Type,
    describe,
)


class Unit(Enum):
    """The hardware unit an op runs on."""

    CUBE = "CUBE"
    VECTOR = "VECTOR"
    MTE = "MTE"  # data movement engines (loads, stores, moves)
    SCALAR = "SCALAR"
    BOUNDARY = "BOUNDARY"  # cross-core pipe ops
    HOST = "HOST"  # orchestration-level: allocation, kernel calls


class AtomicType(Enum):
    """How a write into global memory combines with what is there: overwrite or accumulate."""

    NONE = "NONE"
    Add = "Add"

    def __repr__(self) -> str:
        return f"pl.AtomicType.{self.name}"


class PadValue(Enum):
    """What ``pl.fillpad`` writes outside a tile's valid shape: 0, the dtype's lowest or highest."""

    zero = "zero"
    min = "min"
    max = "max"

    def __repr__(self) -> str:
        return f"pl.PadValue.{self.name}"


PAD_VALUES = ", ".join(repr(m) for m in PadValue)  # for hints: pl.PadValue.zero, pl.PadValue.min, ...


class CastMode(StrEnum):
    """How ``pl.cast`` rounds a float converted to an integer dtype; float -> float casts round to
    nearest even whatever the mode. ``pl.cast(x, pl.INT32, mode="rint")`` or ``mode=pl.CastMode.rint``
    (a member equals its name: ``CastMode.rint == "rint"``)."""

    round = "round"  # half away from zero
    rint = "rint"  # half to even
    floor = "floor"
    ceil = "ceil"
    trunc = "trunc"

    def __repr__(self) -> str:
        return f"pl.CastMode.{self.name}"


InferFn = Callable[[Sequence[Expr], Mapping[str, Any], SourceSpan | None], Type]


@dataclass(frozen=True)
class OpDef:
    name: str
    unit: Unit
    infer: InferFn
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    cost: str = "none"
    doc: str = ""
    in_pipe_slot: bool = False  # the result lives in a pipe ring slot, not an allocated buffer

    @property
    def dsl_name(self) -> str:
        return f"pl.{self.name}"


OPS: dict[str, OpDef] = {}


def declare(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} declared twice")
    OPS[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise VerificationError(f"unknown op {name!r}") from None


def make_call(
    op: str,
    args: Sequence[Expr],
    attrs: Mapping[str, Any] | None = None,
    span: SourceSpan | None = None,
    type: Type | None = None,
) -> Call:
    """Build a ``Call`` whose type comes from the op's type rule (or ``type`` if given)."""
    attrs = dict(attrs or {})
    args = tuple(args)
    result = type if type is not None else get_op(op).infer(args, attrs, span)
    return Call(op, args, result, attrs, span)


# ---------------------------------------------------------------- type-rule helpers


# Ops the user writes under another name: pl.load(valid_shape=[n, 64]) makes a tile.load_partial.
_WRITTEN_AS = {"tile.load_partial": "load", "tile.store_partial": "store", "tile.store_atomic": "store"}


def user_name(op: str) -> str:
    """The op as the user writes it, for messages: ``tile.add`` and ``tile.adds`` -> ``pl.add``,
    ``tile.load_partial`` -> ``pl.load``, ``system.fence`` -> ``pl.system.fence``."""
    if op in _WRITTEN_AS:
        return f"pl.{_WRITTEN_AS[op]}"
    level, _, rest = op.partition(".")
    if level in ("tile", "tensor") and rest.endswith("s") and rest[:-1] in ELEMENTWISE_BINARY:
        rest = rest[:-1]  # the scalar form: pl.mul(t, 2.0) is tile.muls
    return "pl." + (rest if level in ("tile", "tensor", "scalar") and rest else op)


def _fail(op: str, message: str, span: SourceSpan | None, hint: str) -> TypeCheckError:
    """A type error of ``op`` at ``span``; ``hint`` says how to fix it, in the DSL's terms."""
    return TypeCheckError(f"{user_name(op)}: {message}", span, hint)


def _shaped(op: str, e: Expr, span: SourceSpan | None, what: str = "operand") -> TileType | TensorType:
    if not isinstance(e.type, (TileType, TensorType)):
        raise _fail(
            op,
            f"{what} must be a tensor or a tile, got {describe(e.type)}",
            span,
            f"pass a tensor (global memory) or a tile (e.g. a pl.load result) as the {what}",
        )
    return e.type


def _matrix_shape(shape: Sequence[int]) -> list[int]:
    """A 2-D shape holding the elements of ``shape``: [n] -> [1, n], [a, b, c] -> [a * b, c]."""
    if len(shape) < 2:
        return [1, prod(shape)]
    return [prod(shape[:-1]), shape[-1]]


def _same_kind(op: str, lhs: Type, rhs: Type, span: SourceSpan | None) -> None:
    if type(lhs) is not type(rhs):
        raise _fail(
            op,
            f"operands mix a tensor and a tile: {describe(lhs)} and {describe(rhs)}",
            span,
            "load the tensor into a tile with pl.load first, or use tensors on both sides",
        )


def _with(t: TileType | TensorType, **changes: Any) -> Type:
    from dataclasses import replace

    if isinstance(t, TensorType):
        changes.pop("memory_space", None)
        changes.pop("valid_shape", None)
    return replace(t, **changes)


def _check_vec(op: str, t: Type, span: SourceSpan | None) -> None:
    if isinstance(t, TileType) and t.memory_space not in (None, MemorySpace.Vec):
        cube_side = t.memory_space in (MemorySpace.Mat, MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right)
        hint = (
            "this tile is on the cube side, which has no path to Vec: compute on the tensor (a mixed "
            "pl.split scope crosses it for you), or send it with pl.tpush_to_aiv / pl.aiv_shard"
            if cube_side
            else "load the data with pl.load(..., target_memory=pl.Mem.Vec)"
        )
        raise _fail(op, f"vector op needs its tiles in Vec, got {describe(t)}", span, hint)


def _arithmetic(op: str, t: TileType | TensorType, span: SourceSpan | None) -> None:
    """Arithmetic needs numbers: a BOOL tile or tensor is a type error."""
    if t.dtype.is_bool:
        raise _fail(
            op,
            f"computes on numbers, got {describe(t)}",
            span,
            "convert it first, e.g. pl.cast(x, pl.INT32) or pl.cast(x, pl.FP32)",
        )


# Ops whose result is a float whatever the input (exp, log, ...): on integers they would truncate.
FLOAT_ONLY = frozenset({"exp", "log", "sqrt", "rsqrt", "recip"})


def _float_only(op: str, t: TileType | TensorType, span: SourceSpan | None) -> None:
    if not t.dtype.is_float:
        raise _fail(
            op,
            f"is defined on floats, got {describe(t)}",
            span,
            f"convert it first: pl.cast(x, pl.FP32) (then back with pl.cast(y, pl.{t.dtype.name}) if needed)",
        )


def check_scalar_fits(op: str, scalar: Expr, dtype: DataType, span: SourceSpan | None, what: str) -> None:
    """A scalar used with elements of ``dtype``: an integer dtype takes no float scalar (it would
    truncate) and no constant outside its range; a float dtype no finite constant beyond its
    largest value (it would become inf); no dtype takes a bool scalar in arithmetic."""
    t = scalar.type
    assert isinstance(t, ScalarType)
    name = f"pl.{dtype.name}"
    value = f" {scalar.value!r}" if isinstance(scalar, Const) else ""
    if t.dtype.is_bool and not dtype.is_bool:
        raise _fail(op, f"{what} is a BOOL scalar{value}, not a number of {name}", span, "use 0 or 1")
    if dtype.is_float and isinstance(scalar, Const) and math.isfinite(scalar.value):
        largest = dtype.float_max
        if abs(scalar.value) > largest:
            raise _fail(
                op,
                f"{what} {scalar.value!r} does not fit {name}, whose largest value is {largest:g}",
                span,
                f"use a value within +-{largest:g} (or math.inf for infinity), or compute in pl.FP32",
            )
    if dtype.is_integer or dtype.is_bool:
        if t.dtype.is_float:
            raise _fail(
                op,
                f"{what} is a {t.dtype.name} scalar{value}, which {name} elements cannot hold exactly",
                span,
                "use an integer scalar, or convert the tile first: pl.cast(x, pl.FP32)",
            )
        low, high = dtype.int_range
        if isinstance(scalar, Const) and not low <= scalar.value <= high:
            raise _fail(
                op,
                f"{what} {scalar.value!r} does not fit {name}, whose range is [{low}, {high}]",
                span,
                f"use a value in [{low}, {high}], or convert the tile to a wider dtype with pl.cast first",
            )


def _binary(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        lhs, rhs = (_shaped(op, a, span) for a in args)
        _same_kind(op, lhs, rhs, span)
        if lhs.shape != rhs.shape:
            raise _fail(
                op,
                f"operand shape mismatch: {describe(lhs)} vs {describe(rhs)}",
                span,
                "both operands of an elementwise op must have the same shape",
            )
        if lhs.dtype != rhs.dtype:
            raise _fail(
                op,
                f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
                span,
                "PyPTO has no implicit promotion: convert one side with pl.cast(x, dtype)",
            )
        _arithmetic(op, lhs, span)
        _check_vec(op, lhs, span)
        _check_vec(op, rhs, span)
        return _with(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs

    return infer


def _binary_scalar(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        lhs = _shaped(op, args[0], span)
        if not isinstance(args[1].type, ScalarType):
            raise _fail(
                op,
                f"right operand must be a scalar, got {describe(args[1].type)}",
                span,
                f"pass a number or a run-time scalar, e.g. {user_name(op)}(x, 2.0)",
            )
        _arithmetic(op, lhs, span)
        check_scalar_fits(op, args[1], lhs.dtype, span, "the scalar operand")
        _check_vec(op, lhs, span)
        return _with(lhs, memory_space=MemorySpace.Vec) if isinstance(lhs, TileType) else lhs

    return infer


def _unary(op: str) -> InferFn:
    float_only = op.rsplit(".", 1)[-1] in FLOAT_ONLY

    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _shaped(op, args[0], span)
        _arithmetic(op, x, span)
        if float_only:
            _float_only(op, x, span)
        _check_vec(op, x, span)
        return _with(x, memory_space=MemorySpace.Vec) if isinstance(x, TileType) else x

    return infer


def _cast(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = args[0].type
        dtype = attrs["dtype"]
        mode = attrs.get("mode", CastMode.round)
        if not isinstance(mode, CastMode):
            modes = ", ".join(repr(m.value) for m in CastMode)
            raise _fail(op, f"unknown rounding mode {mode!r}", span, f"use a pl.CastMode: one of {modes}")
        if isinstance(x, ScalarType):
            return ScalarType(dtype)
        x = _shaped(op, args[0], span)
        _check_vec(op, x, span)
        if isinstance(x, TileType):
            return _with(x, dtype=dtype, memory_space=MemorySpace.Vec)
        return _with(x, dtype=dtype)

    return infer


def _concat(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        lhs, rhs = (_shaped(op, a, span) for a in args)
        _same_kind(op, lhs, rhs, span)
        if len(lhs.shape) != 2 or len(rhs.shape) != 2 or lhs.shape[0] != rhs.shape[0]:
            raise _fail(
                op,
                f"concatenates columns of 2-D operands with equal row counts, "
                f"got {describe(lhs)} and {describe(rhs)}",
                span,
                _concat_hint(lhs, rhs),
            )
        if lhs.dtype != rhs.dtype:
            raise _fail(
                op,
                f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
                span,
                f"convert one side first, e.g. pl.cast(b, pl.{lhs.dtype.name})",
            )
        _check_vec(op, lhs, span)
        _check_vec(op, rhs, span)
        shape = (lhs.shape[0], lhs.shape[1] + rhs.shape[1])
        if isinstance(lhs, TileType):
            return _with(lhs, shape=shape, memory_space=MemorySpace.Vec, valid_shape=None)
        return _with(lhs, shape=shape)

    return infer


def _concat_hint(lhs: TileType | TensorType, rhs: TileType | TensorType) -> str:
    for t in (lhs, rhs):
        if len(t.shape) != 2:
            return f"reshape {describe(t)} to 2-D first: pl.reshape(x, {_matrix_shape(t.shape)})"
    return (
        f"pl.concat(a, b) puts b's columns after a's: give both the same number of rows "
        f"(here {lhs.shape[0]} and {rhs.shape[0]})"
    )


def matmul_result_dtype(a: DataType, b: DataType, out_dtype: DataType | None) -> DataType:
    return out_dtype or (DataType.INT32 if a.is_integer else DataType.FP32)


def _matmul(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        # matmul_acc(acc, lhs, rhs) accumulates into acc; the plain forms are (lhs, rhs).
        accumulates = op.endswith(".matmul_acc")
        operands = args[1:3] if accumulates else args[:2]
        a, b = (_shaped(op, x, span) for x in operands)
        _same_kind(op, a, b, span)
        if len(a.shape) != 2 or len(b.shape) != 2:
            flat = next(t for t in (a, b) if len(t.shape) != 2)
            raise _fail(
                op,
                f"needs 2-D operands, got {describe(a)} and {describe(b)}",
                span,
                f"reshape {describe(flat)} to 2-D first: pl.reshape(x, {_matrix_shape(flat.shape)})",
            )
        m, ka = (a.shape[1], a.shape[0]) if attrs.get("a_trans") else a.shape
        kb, n = (b.shape[1], b.shape[0]) if attrs.get("b_trans") else b.shape
        if ka != kb:
            raise _fail(
                op,
                f"inner dimensions differ: {describe(a)} @ {describe(b)} ({ka} != {kb})",
                span,
                "the left operand's columns must equal the right operand's rows",
            )
        if a.dtype != b.dtype:
            raise _fail(
                op,
                f"operand dtype mismatch: {describe(a)} vs {describe(b)}",
                span,
                "cast one operand with pl.cast(x, dtype)",
            )
        _arithmetic(op, a, span)
        dtype = matmul_result_dtype(a.dtype, b.dtype, attrs.get("out_dtype"))
        if isinstance(a, TileType):
            for t, space, side in ((a, MemorySpace.Left, "left"), (b, MemorySpace.Right, "right")):
                if t.memory_space not in (None, space):
                    raise _fail(
                        op,
                        f"the {side} operand must be in {space.name}, got {describe(t)}",
                        span,
                        _operand_space_hint(t, space),
                    )
            result: TileType | TensorType = TileType((m, n), dtype, MemorySpace.Acc)
        else:
            result = TensorType((m, n), dtype)
        if accumulates:
            _check_accumulator(op, args[0].type, result, span)
        return result

    return infer


def _operand_space_hint(t: TileType, space: MemorySpace) -> str:
    """How a tile gets into the cube's Left / Right buffer: moved there from Mat."""
    if t.memory_space is MemorySpace.Mat:
        return f"move it first: pl.move(tile, target_memory=pl.Mem.{space.name})"
    return (
        f"{space.name} tiles are moved from Mat: load the data into Mat and move it, "
        f"pl.move(pl.load(t, [0, 0], {list(t.shape)}, target_memory=pl.Mem.Mat), "
        f"target_memory=pl.Mem.{space.name})"
    )


def _check_accumulator(op: str, acc: Type, result: TileType | TensorType, span: SourceSpan | None) -> None:
    """``acc`` of ``matmul_acc`` must be what the product adds to: same kind, shape and dtype (in Acc)."""
    fits = type(acc) is type(result) and (acc.shape, acc.dtype) == (result.shape, result.dtype)  # type: ignore[attr-defined]
    if isinstance(acc, TileType) and acc.memory_space not in (None, MemorySpace.Acc):
        fits = False
    if not fits:
        want = "Acc tile" if isinstance(result, TileType) else "tensor"
        raise _fail(
            op,
            f"accumulator must be a {list(result.shape)} {result.dtype.name} {want}, got {describe(acc)}",
            span,
            "start the sum with acc = pl.matmul(a, b), then acc = pl.matmul_acc(acc, a2, b2)",
        )


def _offsets(op: str, e: Expr, rank: int, span: SourceSpan | None, what: str = "offsets") -> None:
    if not isinstance(e, TupleExpr) or len(e.elements) != rank:
        got = f", got {len(e.elements)}" if isinstance(e, TupleExpr) else ""
        zeros = ", ".join(["0"] * rank)
        raise _fail(
            op, f"{what} must be a list of {rank} indices{got}", span, f"one per dimension, e.g. [{zeros}]"
        )
    for el in e.elements:
        if not isinstance(el.type, ScalarType) or not el.type.dtype.is_integer:
            raise _fail(
                op,
                f"{what} must be integers, got {describe(el.type)}",
                span,
                "convert a float with pl.cast(x, pl.INDEX)",
            )


def _same_rank(
    op: str, what: str, dims: Sequence[int], shape: Sequence[int], whose: str, span: SourceSpan | None
) -> None:
    """``dims`` (a shape, a region, a valid shape) gives one extent per dimension of ``shape``."""
    if len(dims) != len(shape):
        raise _fail(
            op,
            f"{what} {list(dims)} has {len(dims)} dim(s), but {whose} has {len(shape)}",
            span,
            f"give {what} one extent per dimension of {whose}",
        )


def _static_bounds(
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
        raise _fail(
            op,
            f"{what} {list(region)} and offsets of {len(offsets.elements)} indices do not match the "
            f"{len(shape)} dim(s) of {list(shape)}",
            span,
            "give the offsets and the extents one entry per dimension",
        )
    for dim, (off, size, full) in enumerate(zip(offsets.elements, region, shape, strict=True)):
        if size <= 0:
            raise _fail(
                op, f"{what} must be positive, got {list(region)}", span, "every extent is at least 1"
            )
        if isinstance(off, Const) and (off.value < 0 or off.value + size > full):
            raise _fail(
                op,
                f"region [{off.value}:{off.value + size}] is outside dim {dim} of size {full}",
                span,
                f"keep offset + extent within 0..{full} (only a valid_shape lets a tile hang over the end)",
            )


def _valid_within(op: str, valid: Sequence[int], shape: Sequence[int], span: SourceSpan | None) -> None:
    """A static valid shape describes part of its tile: same rank, each extent in 1..tile extent."""
    _same_rank(op, "valid_shape", valid, shape, f"the tile shape {list(shape)}", span)
    for dim, (v, full) in enumerate(zip(valid, shape, strict=True)):
        if not 0 < v <= full:
            raise _fail(
                op,
                f"valid_shape {list(valid)} is larger than the tile shape {list(shape)} in dim {dim}",
                span,
                "the valid region is part of the tile: each valid extent lies between 1 and the tile's",
            )


def _load(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        src = args[0].type
        if not isinstance(src, TensorType):
            raise _fail(
                op,
                f"loads from a tensor, got {describe(src)}",
                span,
                "load from a global-memory tensor (a kernel parameter): pl.load(t, [0, 0], [64, 64])",
            )
        shape = tuple(attrs["shape"])
        _offsets(op, args[1], len(src.shape), span)
        _same_rank(op, "shape", shape, src.shape, describe(src), span)
        valid = attrs.get("valid_shape")
        if valid:
            _valid_within(op, valid, shape, span)
        # Only the valid region is read: an edge tile may hang over the tensor's end.
        _static_bounds(op, src.shape, args[1], tuple(valid) if valid else shape, span)
        return TileType(shape, src.dtype, attrs.get("target_memory"), tuple(valid) if valid else None)

    return infer


def _store(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        tile, offsets, dst = args
        t = _check_store(op, tile, offsets, dst, span)
        _static_bounds(op, dst.type.shape, offsets, t.valid_shape or t.shape, span)  # type: ignore[attr-defined]
        return dst.type

    return infer


def _check_store(op: str, tile: Expr, offsets: Expr, dst: Expr, span: SourceSpan | None) -> TileType:
    """A tile stored into a tensor of the same dtype at offsets of the tensor's rank."""
    if not isinstance(tile.type, TileType):
        raise _fail(
            op,
            f"stores a tile, got {describe(tile.type)}",
            span,
            "store an on-chip tile (e.g. a pl.load or vector op result): pl.store(tile, [0, 0], out)",
        )
    if not isinstance(dst.type, TensorType):
        raise _fail(
            op,
            f"stores into a tensor, got {describe(dst.type)}",
            span,
            "store into a global-memory tensor (a pl.Out parameter); pl.assemble writes a tile into a tile",
        )
    if tile.type.dtype != dst.type.dtype:
        raise _fail(
            op,
            f"dtype mismatch: {describe(tile.type)} into {describe(dst.type)}",
            span,
            "cast the tile with pl.cast(tile, dtype) before storing",
        )
    _offsets(op, offsets, len(dst.type.shape), span)
    _same_rank(op, "the tile's shape", tile.type.shape, dst.type.shape, describe(dst.type), span)
    return tile.type


def _run_time_region(
    op: str, shape: Sequence[int], offsets: Expr, valid: Expr, tile: Sequence[int], span: SourceSpan | None
) -> None:
    """A valid shape given as index expressions: each constant entry lies in ``[0, tile dim]``,
    and a constant offset plus a constant entry stays inside the tensor."""
    _offsets(op, valid, len(tile), span, "valid_shape")
    assert isinstance(valid, TupleExpr) and isinstance(offsets, TupleExpr)
    _same_rank(op, "the tile shape", tile, shape, f"the tensor {list(shape)}", span)
    for dim, (off, size) in enumerate(zip(offsets.elements, valid.elements, strict=True)):
        if not isinstance(size, Const):
            continue
        if not 0 <= size.value <= tile[dim]:
            raise _fail(
                op,
                f"valid_shape {size.value} of dim {dim} is outside the tile's {tile[dim]}",
                span,
                "each valid extent lies between 0 and the tile's extent",
            )
        if isinstance(off, Const) and (off.value < 0 or off.value + size.value > shape[dim]):
            raise _fail(
                op,
                f"region [{off.value}:{off.value + size.value}] is outside dim {dim} of size {shape[dim]}",
                span,
                f"keep offset + valid extent within 0..{shape[dim]}",
            )


def _load_partial(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        src, offsets, valid = args
        if not isinstance(src.type, TensorType):
            raise _fail(
                op,
                f"loads from a tensor, got {describe(src.type)}",
                span,
                "load from a global-memory tensor (a kernel parameter): pl.load(t, [0, 0], [64, 64])",
            )
        shape = tuple(attrs["shape"])
        _offsets(op, offsets, len(src.type.shape), span)
        _run_time_region(op, src.type.shape, offsets, valid, shape, span)
        return TileType(shape, src.type.dtype, attrs.get("target_memory"))

    return infer


def _store_partial(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        tile, offsets, dst, valid = args
        t = _check_store(op, tile, offsets, dst, span)
        _run_time_region(op, dst.type.shape, offsets, valid, t.shape, span)  # type: ignore[attr-defined]
        return dst.type

    return infer


def _store_atomic(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        tile, offsets, dst = args[:3]
        if attrs.get("atomic") is not AtomicType.Add:
            raise _fail(
                op, f"atomic must be pl.AtomicType.Add, got {attrs.get('atomic')!r}", span, "use pl.store"
            )
        t = _check_store(op, tile, offsets, dst, span)
        shape = dst.type.shape  # type: ignore[attr-defined]
        if len(args) == 4:
            _run_time_region(op, shape, offsets, args[3], t.shape, span)
        else:
            _static_bounds(op, shape, offsets, t.valid_shape or t.shape, span)
        return dst.type

    return infer


def _move(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        t = args[0].type
        if not isinstance(t, TileType):
            raise _fail(
                op,
                f"moves a tile, got {describe(t)}",
                span,
                "pl.move changes the memory space of a tile; bring a tensor on chip with pl.load",
            )
        return _with(t, memory_space=attrs["target_memory"])

    return infer


def _create_tile(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        return TileType(tuple(attrs["shape"]), attrs["dtype"], attrs.get("target_memory"))

    return infer


def _create_tensor(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        return TensorType(tuple(attrs["shape"]), attrs["dtype"])

    return infer


def _assemble(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        dst, value, offsets = args
        if not isinstance(dst.type, TensorType):
            raise _fail(
                op,
                f"writes into a tensor, got {describe(dst.type)}",
                span,
                "the target is a global-memory tensor (a pl.Out parameter or a pl.create_tensor result)",
            )
        v = _shaped(op, value, span, "value")
        if v.dtype != dst.type.dtype:
            raise _fail(
                op,
                f"dtype mismatch: writing {describe(v)} into {describe(dst.type)}",
                span,
                "cast the value with pl.cast(x, dtype) first",
            )
        _offsets(op, offsets, len(dst.type.shape), span)
        if len(v.shape) != len(dst.type.shape):
            raise _fail(
                op,
                f"rank mismatch: {describe(v)} into {describe(dst.type)}",
                span,
                f"give the value the tensor's rank first, pl.reshape(x, "
                f"{_ranked(v.shape, len(dst.type.shape))}), and write it into a region of that shape",
            )
        _static_bounds(op, dst.type.shape, offsets, v.shape, span)
        if not isinstance(attrs.get("atomic", AtomicType.NONE), AtomicType):
            raise _fail(
                op,
                f"atomic must be a pl.AtomicType, got {attrs['atomic']!r}",
                span,
                "write atomic=pl.AtomicType.Add to add into the target, or leave it out to overwrite",
            )
        return dst.type

    return infer


def _ranked(shape: Sequence[int], rank: int) -> list[int]:
    """``shape``'s elements in ``rank`` dims: leading 1s added, or leading dims merged."""
    if len(shape) <= rank:
        return [1] * (rank - len(shape)) + list(shape)
    merged = len(shape) - rank + 1
    return [prod(shape[:merged]), *shape[merged:]]


def _scalar_binary(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        types = [a.type for a in args]
        for t in types:
            if not isinstance(t, ScalarType):
                raise _fail(
                    op,
                    f"needs scalar operands, got {describe(t)}",
                    span,
                    "scalar arithmetic takes numbers and run-time scalars; use pl.* ops on tensors and tiles",
                )
        dtypes = [t.dtype for t in types]  # type: ignore[union-attr]
        if op in ("scalar.lt", "scalar.le", "scalar.gt", "scalar.ge", "scalar.eq", "scalar.ne"):
            return ScalarType(DataType.BOOL)
        floats = [d for d in dtypes if d.is_float]
        if op == "scalar.truediv" and not floats:
            return ScalarType(DataType.FP32)
        if floats:
            return ScalarType(floats[0])
        return INDEX if DataType.INDEX in dtypes else ScalarType(dtypes[0])

    return infer


def _unit(op: str) -> InferFn:
    return lambda args, attrs, span: UNIT


def _given(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        raise VerificationError(f"op {op!r} takes its result type from the caller", span)

    return infer


def _gather_row(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        dst, src, dst_offsets, src_offsets = args
        if not isinstance(dst.type, TileType):
            raise _fail(
                op,
                f"gathers into a tile, got {describe(dst.type)}",
                span,
                "the destination is a Vec tile, e.g. rows = pl.create_tile([8, 64], pl.FP32)",
            )
        if not isinstance(src.type, TensorType):
            raise _fail(
                op,
                f"gathers from a tensor, got {describe(src.type)}",
                span,
                "the source is a global-memory tensor (a kernel parameter)",
            )
        if dst.type.dtype != src.type.dtype:
            raise _fail(
                op,
                f"dtype mismatch: {describe(src.type)} into {describe(dst.type)}",
                span,
                f"create the destination tile with the tensor's dtype, pl.{src.type.dtype.name}",
            )
        shape = tuple(attrs["shape"])
        if len(shape) != 2 or shape[0] != 1:
            columns = shape[-1] if shape else dst.type.shape[-1]
            raise _fail(
                op,
                f"copies one row: shape must be [1, C], got {list(shape)}",
                span,
                f"pass shape=[1, {columns}], and copy several rows with one call each "
                "(e.g. in a pl.range loop)",
            )
        _offsets(op, dst_offsets, len(dst.type.shape), span)
        _offsets(op, src_offsets, len(src.type.shape), span)
        _static_bounds(op, dst.type.shape, dst_offsets, shape, span)
        _static_bounds(op, src.type.shape, src_offsets, shape, span)
        _check_vec(op, dst.type, span)
        return dst.type

    return infer


def _read(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        src = args[0].type
        if not isinstance(src, TensorType):
            raise _fail(
                op,
                f"reads one element of a tensor, got {describe(src)}",
                span,
                "read from a global-memory tensor: pl.read(t, [i, j]); store a tile into a tensor first",
            )
        _offsets(op, args[1], len(src.shape), span)
        return ScalarType(src.dtype)

    return infer


# ---------------------------------------------------------------- reductions, broadcasts, views


def _matrix(op: str, e: Expr, span: SourceSpan | None, what: str = "operand") -> TileType | TensorType:
    t = _shaped(op, e, span, what)
    if len(t.shape) != 2:
        raise _fail(
            op,
            f"{what} must be 2-D, got {describe(t)}",
            span,
            f"reshape it to 2-D first: pl.reshape(x, {_matrix_shape(t.shape)})",
        )
    _arithmetic(op, t, span)
    _check_vec(op, t, span)
    return t


def _vector_result(t: TileType | TensorType, **changes: Any) -> Type:
    """The result of a vector op shaped from ``t``: a Vec tile, or a tensor."""
    if isinstance(t, TileType):
        return _with(t, memory_space=MemorySpace.Vec, **changes)
    return _with(t, **changes)


def _row_reduce(op: str) -> InferFn:
    """``row_max(x, tmp)`` on tiles (tmp: a scratch tile like x), ``row_max(x)`` on tensors -> [R, 1]."""

    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _matrix(op, args[0], span)
        if isinstance(x, TileType):
            tmp = args[1].type if len(args) == 2 else None
            if not isinstance(tmp, TileType) or (tmp.shape, tmp.dtype) != (x.shape, x.dtype):
                got = describe(tmp) if tmp is not None else "no scratch tile"
                raise _fail(
                    op,
                    f"needs a scratch tile shaped like {describe(x)}, got {got}",
                    span,
                    f"pass one: tmp = pl.create_tile(x.shape, x.dtype); {user_name(op)}(x, tmp)",
                )
            _check_vec(op, tmp, span)
        elif len(args) != 1:
            raise _fail(
                op,
                f"on {describe(x)} takes no scratch operand (the compiler makes one per tile)",
                span,
                f"drop the scratch operand: {user_name(op)}(x)",
            )
        valid = (x.valid_shape[0], 1) if isinstance(x, TileType) and x.valid_shape else None
        return _vector_result(x, shape=(x.shape[0], 1), valid_shape=valid)

    return infer


def _col_reduce(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _matrix(op, args[0], span)
        valid = (1, x.valid_shape[1]) if isinstance(x, TileType) and x.valid_shape else None
        return _vector_result(x, shape=(1, x.shape[1]), valid_shape=valid)

    return infer


def _expand(op: str, axis: int) -> InferFn:
    """``x`` combined with a vector broadcast along ``axis``: [R, 1] across columns (axis 1),
    [1, C] down rows (axis 0)."""

    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _matrix(op, args[0], span)
        vec = _matrix(op, args[1], span, "the broadcast operand")
        _same_kind(op, x, vec, span)
        want = (x.shape[0], 1) if axis == 1 else (1, x.shape[1])
        if vec.shape != want:
            raise _fail(
                op,
                f"the broadcast operand must be {list(want)} for {describe(x)}, got {describe(vec)}",
                span,
                "row vectors come from pl.row_max/row_sum, column vectors from pl.col_sum or a [1, C] load",
            )
        if vec.dtype != x.dtype:
            raise _fail(
                op,
                f"operand dtype mismatch: {describe(x)} vs {describe(vec)}",
                span,
                f"convert the broadcast operand first: pl.cast(v, pl.{x.dtype.name})",
            )
        return _vector_result(x)

    return infer


def _reshape(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _shaped(op, args[0], span)
        shape = tuple(attrs["shape"])
        if prod(shape) != prod(x.shape):
            raise _fail(
                op,
                f"cannot reshape {describe(x)} ({prod(x.shape)} elements) to {list(shape)} "
                f"({prod(shape)} elements)",
                span,
                f"give a shape whose extents multiply to {prod(x.shape)}, as {list(x.shape)} does",
            )
        return _with(x, shape=shape, valid_shape=None)

    return infer


def _slice(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = _shaped(op, args[0], span)
        shape = tuple(attrs["shape"])
        if len(shape) != len(x.shape):
            raise _fail(
                op,
                f"a slice of {describe(x)} needs a shape of rank {len(x.shape)}",
                span,
                f"give one extent per dimension, e.g. pl.slice(x, {list(x.shape)}, {[0] * len(x.shape)})",
            )
        _offsets(op, args[1], len(x.shape), span)
        _static_bounds(op, x.shape, args[1], shape, span)
        return _with(x, shape=shape, valid_shape=None)

    return infer


def _fillpad(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        x = args[0].type
        if not isinstance(x, TileType):
            raise _fail(
                op,
                f"fills a tile outside its valid shape, got {describe(x)}",
                span,
                "pad a tile loaded with valid_shape=: "
                "pl.fillpad(pl.load(t, [0, 0], [64, 64], valid_shape=[n, 64]))",
            )
        _check_vec(op, x, span)
        if not isinstance(attrs.get("pad_value"), PadValue):
            raise _fail(
                op,
                f"pad_value must be a pl.PadValue, got {attrs.get('pad_value')!r}",
                span,
                f"write pad_value= one of {PAD_VALUES}",
            )
        if len(args) == 2:
            _offsets(op, args[1], len(x.shape), span, "valid_shape")
        return _with(x, memory_space=MemorySpace.Vec, valid_shape=None)

    return infer


def _full(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        if len(args) != 1 or not isinstance(args[0].type, ScalarType):
            got = ", ".join(describe(a.type) for a in args) or "nothing"
            raise _fail(
                op,
                f"the fill value must be a scalar, got {got}",
                span,
                f"fill with a number or a run-time scalar: pl.full(shape, pl.{attrs['dtype'].name}, 0)",
            )
        check_scalar_fits(op, args[0], attrs["dtype"], span, "the fill value")
        return TileType(tuple(attrs["shape"]), attrs["dtype"], MemorySpace.Vec)

    return infer


# (source space, destination space) pairs a tile can be assembled along.
TILE_ASSEMBLE_PATHS = ((MemorySpace.Acc, MemorySpace.Mat), (MemorySpace.Vec, MemorySpace.Vec))


def _tile_assemble(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        dst, src, offsets = args
        d, v = dst.type, src.type
        if not isinstance(d, TileType) or not isinstance(v, TileType):
            raise _fail(
                op,
                f"writes a tile into a tile, got {describe(v)} into {describe(d)}",
                span,
                "pass tiles on both sides; write into a tensor with pl.assemble(out, value, offsets)",
            )
        if d.dtype != v.dtype or len(d.shape) != len(v.shape):
            fix = (
                f"convert the value first: pl.cast(v, pl.{d.dtype.name})"
                if d.dtype != v.dtype
                else f"give the value the target's rank: pl.reshape(v, {_ranked(v.shape, len(d.shape))})"
            )
            raise _fail(op, f"writes {describe(v)} into {describe(d)}: dtype or rank differs", span, fix)
        spaces = (v.memory_space, d.memory_space)
        if None not in spaces and spaces not in TILE_ASSEMBLE_PATHS:
            legal = ", ".join(f"{a.name}->{b.name}" for a, b in TILE_ASSEMBLE_PATHS)
            raise _fail(op, f"cannot assemble {describe(v)} into {describe(d)}", span, f"legal: {legal}")
        _offsets(op, offsets, len(d.shape), span)
        _static_bounds(op, d.shape, offsets, v.shape, span)
        return d

    return infer


# ---------------------------------------------------------------- cross-core pipes

# Spaces a crossing tile may come from on each side.
_CUBE_OUT = (MemorySpace.Acc, MemorySpace.Mat)


def split_axis(mode: SplitMode | None) -> int | None:
    """The dim a split halves: rows for UP_DOWN, columns for LEFT_RIGHT, none for NONE."""
    return {SplitMode.UP_DOWN: 0, SplitMode.LEFT_RIGHT: 1}.get(mode) if mode else None


def split_shape(shape: tuple[int, ...], mode: SplitMode | None) -> tuple[int, ...]:
    """The shape one AIV lane holds of a tile split by ``mode`` (lane 0's, for odd extents)."""
    axis = split_axis(mode)
    if axis is None:
        return shape
    halved = list(shape)
    halved[axis] = -(-shape[axis] // 2)
    return tuple(halved)


def _pipe_init(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        mask, size, num = attrs.get("dir_mask"), attrs.get("slot_size"), attrs.get("slot_num")
        if isinstance(mask, bool) or mask not in (1, 2, 3):
            raise _fail(
                op,
                f"dir_mask must be 1 (cube->vector), 2 (vector->cube) or 3 (both), got {mask!r}",
                span,
                "write dir_mask=3 when tiles cross both ways, else 1 or 2; give both sides the same value",
            )
        for name, value in (("slot_size", size), ("slot_num", num)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise _fail(op, f"{name} must be a positive int, got {value!r}", span, _PIPE_HINTS[name])
        return UNIT

    return infer


_PIPE_HINTS = {
    "slot_size": "write slot_size= the bytes of the largest tile that crosses, e.g. 16384 for [64, 64] FP32",
    "slot_num": "write slot_num= the ring depth in tiles, e.g. slot_num=2 (both sides the same)",
}
# What each boundary op takes, as its hint says when it gets something else.
_TILE_ARG_HINTS = {
    "tpush_to_aiv": "the cube pushes Acc or Mat tiles (e.g. a pl.matmul result); "
    "Vec tiles go from the vector lanes to the cube with pl.tpush_to_aic",
    "tpush_to_aic": "the vector lanes push Vec tiles; Acc or Mat tiles go from the cube with pl.tpush_to_aiv",
    "tfree_to_aic": "free the Vec tile pl.tpop_from_aic returned: pl.tfree_to_aic(t)",
    "tfree_to_aiv": "free the Mat tile pl.tpop_from_aiv returned: pl.tfree_to_aiv(t)",
    "aiv_shard": "shard a cube-side tile (Acc, e.g. a pl.matmul result, or Mat); "
    "a Vec tile is on the lanes already",
    "aic_gather": "gather the lanes' Vec tiles (e.g. the result of a vector op in the region)",
}


def _tile_arg(op: str, e: Expr, spaces: tuple[MemorySpace, ...], span: SourceSpan | None) -> TileType:
    t = e.type
    if not isinstance(t, TileType):
        raise _fail(op, f"takes a tile, got {describe(t)}", span, _TILE_ARG_HINTS[op])
    if t.memory_space is not None and t.memory_space not in spaces:
        names = " or ".join(s.name for s in spaces)
        raise _fail(op, f"takes a tile in {names}, got {describe(t)}", span, _TILE_ARG_HINTS[op])
    return t


def _push(op: str, spaces: tuple[MemorySpace, ...]) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        _tile_arg(op, args[0], spaces, span)
        return UNIT

    return infer


def _pop(op: str, space: MemorySpace) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        shape, dtype = attrs.get("shape"), attrs.get("dtype")
        if not shape or not isinstance(dtype, DataType):
            raise _fail(
                op,
                "needs shape=[...] and dtype= of the tile it pops",
                span,
                f"give the shape and dtype the other side pushes, e.g. pl.{op}([64, 64], pl.FP32)",
            )
        return TileType(tuple(shape), dtype, space)

    return infer


def _free(op: str, space: MemorySpace) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        _tile_arg(op, args[0], (space,), span)
        return UNIT

    return infer


def _shard(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        t = _tile_arg(op, args[0], _CUBE_OUT, span)
        mode = attrs.get("split")
        axis = split_axis(mode)
        if axis is not None and (axis >= len(t.shape) or t.shape[axis] < 2):
            raise _fail(
                op,
                f"cannot halve {describe(t)} along dim {axis} for {mode!r}",
                span,
                "split along the other axis, or use pl.SplitMode.NONE",
            )
        return TileType(split_shape(t.shape, mode), t.dtype, MemorySpace.Vec)

    return infer


def _gather(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        t = _tile_arg(op, args[0], (MemorySpace.Vec,), span)
        axis = split_axis(attrs.get("split"))
        shape = list(t.shape)
        if axis is not None:
            shape[axis] *= 2
        return TileType(tuple(shape), t.dtype, MemorySpace.Mat)

    return infer


def _index(op: str) -> InferFn:
    return lambda args, attrs, span: INDEX


def _cacheinvalid(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        if not args:
            return UNIT  # the whole of global memory
        t = args[0].type
        if not isinstance(t, TensorType):
            raise _fail(
                op,
                f"invalidates a tensor region, got {describe(t)}",
                span,
                "name a global-memory tensor, or call pl.system.cacheinvalid() for all of it",
            )
        if len(args) > 1:
            shape = tuple(attrs.get("shape") or ())
            if len(shape) != len(t.shape):
                raise _fail(
                    op,
                    f"a region of {describe(t)} needs a shape of rank {len(t.shape)}",
                    span,
                    f"give one extent per dimension, e.g. pl.system.cacheinvalid(t, {[0] * len(t.shape)}, "
                    f"{list(t.shape)})",
                )
            _offsets(op, args[1], len(t.shape), span)
            _static_bounds(op, t.shape, args[1], shape, span)
        return UNIT

    return infer


def _syncall(op: str) -> InferFn:
    def infer(args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        core_type = attrs.get("core_type")
        if core_type not in (None, "aic", "aiv", "mix"):
            raise _fail(
                op,
                f'core_type must be "aic", "aiv" or "mix", got {core_type!r}',
                span,
                'leave core_type out to count every core of the launch, like "mix"',
            )
        mode = attrs.get("mode", "hard")
        if mode not in ("hard", "soft"):
            raise _fail(
                op,
                f'mode must be "hard" or "soft", got {mode!r}',
                span,
                'write mode="hard" (the default: every core meets), or mode="soft" with gm_workspace= '
                "and used_cores=",
            )
        if mode == "soft":
            if not args:
                raise _fail(
                    op,
                    'mode="soft" needs gm_workspace=, a zeroed INT32 tensor of at least 16 elements',
                    span,
                    _WORKSPACE_HINT,
                )
            ws = args[0].type
            if not isinstance(ws, TensorType) or ws.dtype is not DataType.INT32 or _numel(ws) < 16:
                raise _fail(
                    op,
                    f"gm_workspace must be an INT32 tensor of at least 16 elements, got {describe(ws)}",
                    span,
                    _WORKSPACE_HINT,
                )
            used = attrs.get("used_cores")
            if not isinstance(used, int) or isinstance(used, bool) or used <= 0:
                raise _fail(
                    op,
                    f'mode="soft" needs used_cores= a positive int, got {used!r}',
                    span,
                    "write used_cores= the number of cores that reach this barrier, e.g. used_cores=2",
                )
        return UNIT

    return infer


_WORKSPACE_HINT = (
    "pass a parameter ws: pl.Tensor[[16], pl.INT32] filled with zeros by the caller: "
    'pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)'
)


def _numel(t: TensorType) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


# ---------------------------------------------------------------- the table

ELEMENTWISE_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
ELEMENTWISE_UNARY = ("exp", "log", "sqrt", "rsqrt", "recip", "neg", "abs", "relu")
# Unary ops that take several vector cycles per element group on a2a3.
TRANSCENDENTAL = frozenset({"exp", "log", "sqrt", "rsqrt", "recip", "div", "divs"})
SCALAR_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "min", "max")
SCALAR_COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
ROW_REDUCTIONS = ("row_max", "row_sum", "row_min")
COL_REDUCTIONS = ("col_sum", "col_max")
ROW_EXPANDS = ("row_expand_add", "row_expand_sub", "row_expand_mul", "row_expand_div")
COL_EXPANDS = ("col_expand", "col_expand_mul")


def _declare_all() -> None:
    for level in ("tensor", "tile"):
        for name in ELEMENTWISE_BINARY:
            cost = "vector_slow" if name in TRANSCENDENTAL else "vector"
            op = f"{level}.{name}"
            declare(OpDef(op, Unit.VECTOR, _binary(op), reads=(0, 1), cost=cost))
            ops = f"{level}.{name}s"
            declare(OpDef(ops, Unit.VECTOR, _binary_scalar(ops), reads=(0,), cost=cost))
        for name in ELEMENTWISE_UNARY:
            cost = "vector_slow" if name in TRANSCENDENTAL else "vector"
            op = f"{level}.{name}"
            declare(OpDef(op, Unit.VECTOR, _unary(op), reads=(0,), cost=cost))
        declare(OpDef(f"{level}.cast", Unit.VECTOR, _cast(f"{level}.cast"), reads=(0,), cost="vector"))
        declare(
            OpDef(f"{level}.concat", Unit.VECTOR, _concat(f"{level}.concat"), reads=(0, 1), cost="vector")
        )
        declare(OpDef(f"{level}.matmul", Unit.CUBE, _matmul(f"{level}.matmul"), reads=(0, 1), cost="matmul"))
        acc = f"{level}.matmul_acc"
        declare(OpDef(acc, Unit.CUBE, _matmul(acc), reads=(0, 1, 2), cost="matmul"))
        _declare_reductions(level)
        # Views run on the side that holds the tile (MTE: the side of the first operand's space).
        declare(OpDef(f"{level}.reshape", Unit.MTE, _reshape(f"{level}.reshape"), reads=(0,)))
        declare(OpDef(f"{level}.slice", Unit.MTE, _slice(f"{level}.slice"), reads=(0,), cost="vector"))

    declare(OpDef("tile.fillpad", Unit.VECTOR, _fillpad("tile.fillpad"), reads=(0,), cost="vector"))
    declare(OpDef("tile.full", Unit.VECTOR, _full("tile.full"), cost="vector"))
    assemble_tile = _tile_assemble("tile.assemble")
    declare(OpDef("tile.assemble", Unit.MTE, assemble_tile, reads=(1,), writes=(0,), cost="vector"))
    partial = _load_partial("tile.load_partial")
    declare(OpDef("tile.load_partial", Unit.MTE, partial, reads=(0,), cost="load"))
    partial = _store_partial("tile.store_partial")
    declare(OpDef("tile.store_partial", Unit.MTE, partial, reads=(0,), writes=(2,), cost="store"))
    atomic = _store_atomic("tile.store_atomic")
    declare(OpDef("tile.store_atomic", Unit.MTE, atomic, reads=(0, 2), writes=(2,), cost="store"))
    declare(OpDef("tile.load", Unit.MTE, _load("tile.load"), reads=(0,), cost="load"))
    declare(OpDef("tile.store", Unit.MTE, _store("tile.store"), reads=(0,), writes=(2,), cost="store"))
    gather = _gather_row("tile.gather_row")
    declare(OpDef("tile.gather_row", Unit.VECTOR, gather, reads=(1,), writes=(0,), cost="gather"))
    declare(OpDef("scalar.read", Unit.SCALAR, _read("scalar.read"), reads=(0,), cost="scalar_read"))
    declare(OpDef("tile.move", Unit.MTE, _move("tile.move"), reads=(0,), cost="move"))
    declare(OpDef("tile.create", Unit.SCALAR, _create_tile("tile.create")))
    declare(OpDef("tensor.create", Unit.HOST, _create_tensor("tensor.create")))
    assemble = _assemble("tensor.assemble")
    declare(OpDef("tensor.assemble", Unit.MTE, assemble, reads=(1,), writes=(0,), cost="store"))
    declare(OpDef("call", Unit.HOST, _given("call"), doc="call a kernel; attrs: callee"))
    _declare_cross_core()
    for name in SCALAR_BINARY + SCALAR_COMPARE:
        declare(OpDef(f"scalar.{name}", Unit.SCALAR, _scalar_binary(f"scalar.{name}")))
    declare(OpDef("scalar.neg", Unit.SCALAR, lambda args, attrs, span: args[0].type))
    declare(OpDef("scalar.cast", Unit.SCALAR, _cast("scalar.cast")))


def _declare_reductions(level: str) -> None:
    """Row/column reductions and broadcasts of 2-D operands, at ``level`` ("tensor" or "tile")."""
    for name in ROW_REDUCTIONS:
        op = f"{level}.{name}"
        declare(OpDef(op, Unit.VECTOR, _row_reduce(op), reads=(0,), cost="vector"))
    for name in COL_REDUCTIONS:
        op = f"{level}.{name}"
        declare(OpDef(op, Unit.VECTOR, _col_reduce(op), reads=(0,), cost="vector"))
    for name, axis in [(n, 1) for n in ROW_EXPANDS] + [(n, 0) for n in COL_EXPANDS]:
        op = f"{level}.{name}"
        cost = "vector_slow" if name == "row_expand_div" else "vector"
        declare(OpDef(op, Unit.VECTOR, _expand(op, axis), reads=(0, 1), cost=cost))


def _declare_cross_core() -> None:
    vec, mat = MemorySpace.Vec, MemorySpace.Mat
    b = Unit.BOUNDARY
    for name in ("aic_initialize_pipe", "aiv_initialize_pipe"):
        declare(OpDef(name, b, _pipe_init(name), cost="pipe_init"))
    declare(OpDef("tpush_to_aiv", b, _push("tpush_to_aiv", _CUBE_OUT), reads=(0,), cost="pipe_push"))
    declare(OpDef("tpush_to_aic", b, _push("tpush_to_aic", (vec,)), reads=(0,), cost="pipe_push"))
    declare(OpDef("tpop_from_aic", b, _pop("tpop_from_aic", vec), cost="pipe_pop", in_pipe_slot=True))
    declare(OpDef("tpop_from_aiv", b, _pop("tpop_from_aiv", mat), cost="pipe_pop", in_pipe_slot=True))
    declare(OpDef("tfree_to_aic", b, _free("tfree_to_aic", vec), cost="pipe_free"))
    declare(OpDef("tfree_to_aiv", b, _free("tfree_to_aiv", mat), cost="pipe_free"))
    declare(OpDef("aiv_shard", b, _shard("aiv_shard"), reads=(0,), doc="cube value -> each lane's share"))
    declare(OpDef("aic_gather", b, _gather("aic_gather"), reads=(0,), doc="lane shares -> cube value"))
    for name in ("get_subblock_idx", "get_block_idx", "get_block_num"):
        declare(OpDef(name, Unit.SCALAR, _index(name)))
    declare(OpDef("system.fence", b, _unit("system.fence"), cost="sync"))
    declare(OpDef("system.cacheinvalid", b, _cacheinvalid("system.cacheinvalid"), reads=(0,), cost="sync"))
    declare(OpDef("system.syncall", b, _syncall("system.syncall"), cost="sync"))


_declare_all()


# ---------------------------------------------------------------- handles


class OpNames:
    """Attribute access to registered op names: ``tile.add == "tile.add"``, checked against the
    table when read, so a misspelled op fails where it is written instead of matching nothing.
    Other layers name ops through these handles, never through string literals."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> str:
        op = f"{self._prefix}{name}"
        if op not in OPS:
            raise AttributeError(f"no op {op!r} is declared")
        return op

    def __repr__(self) -> str:
        return f"<ops {self._prefix or '(unprefixed)'}*>"


tile = OpNames("tile.")
tensor = OpNames("tensor.")
scalar = OpNames("scalar.")
system = OpNames("system.")
op = OpNames("")  # ops without a level prefix: the cross-core pipe ops, block indices, call
