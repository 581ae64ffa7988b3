"""Data movement and views: loads and stores between global memory and tiles, moves between
memory spaces, tile and tensor creation, assembling into a tile or a tensor, row gathers,
reshape, slice, concat, pad and fill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Const, Expr, TupleExpr
from pypto.ir.ops.enums import PAD_VALUES, AtomicType, PadValue
from pypto.ir.ops.rules import (
    check_offsets,
    check_run_time_region,
    check_same_rank,
    check_scalar_fits,
    check_static_bounds,
    check_valid_within,
    check_vec,
    fail,
    same_kind,
    shaped,
    with_changes,
)
from pypto.ir.ops.spec import (
    ALL,
    REQUIRED,
    WHOLE_TILE,
    Attr,
    Cost,
    Effect,
    FormatFree,
    GmAccess,
    KeepsValid,
    Level,
    Lowers,
    OnHost,
    Operand,
    OpSpec,
    PlacesTile,
    Reinterprets,
    Role,
    SetsValid,
    SplitPolicy,
    Trait,
    Unit,
    WholeRegion,
    declare_op,
)
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type, describe


def source_tensor(op: str, e: Expr, span: SourceSpan | None) -> TensorType:
    """The global-memory tensor a load reads from."""
    if not isinstance(e.type, TensorType):
        raise fail(op, f"loads from a tensor, got {describe(e.type)}", span, advice="load.needs_tensor")
    return e.type


def load(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    src = source_tensor(op, args[0], span)
    shape = tuple(attrs["shape"])
    check_offsets(op, args[1], len(src.shape), span)
    check_same_rank(op, "shape", shape, src.shape, describe(src), span)
    valid = attrs.get("valid_shape")
    if valid:
        check_valid_within(op, valid, shape, span)
    # Only the valid region is read: an edge tile may hang over the tensor's end.
    check_static_bounds(op, src.shape, args[1], tuple(valid) if valid else shape, span)
    return TileType(shape, src.dtype, attrs.get("target_memory"), tuple(valid) if valid else None)


def store(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    tile, offsets, dst = args
    t = check_store(op, tile, offsets, dst, span)
    check_static_bounds(op, dst.type.shape, offsets, t.valid_shape or t.shape, span)  # type: ignore[attr-defined]
    return dst.type


def check_store(op: str, tile: Expr, offsets: Expr, dst: Expr, span: SourceSpan | None) -> TileType:
    """A tile stored into a tensor of the same dtype at offsets of the tensor's rank."""
    if not isinstance(tile.type, TileType):
        raise fail(
            op,
            f"stores a tile, got {describe(tile.type)}",
            span,
            advice="store.needs_tile",
        )
    if not isinstance(dst.type, TensorType):
        raise fail(
            op,
            f"stores into a tensor, got {describe(dst.type)}",
            span,
            advice="store.needs_tensor",
        )
    if tile.type.dtype != dst.type.dtype:
        raise fail(
            op,
            f"dtype mismatch: {describe(tile.type)} into {describe(dst.type)}",
            span,
            advice="store.dtype_mismatch",
        )
    check_offsets(op, offsets, len(dst.type.shape), span)
    check_same_rank(op, "the tile's shape", tile.type.shape, dst.type.shape, describe(dst.type), span)
    return tile.type


def load_partial(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    _, offsets, valid = args
    src = source_tensor(op, args[0], span)
    shape = tuple(attrs["shape"])
    check_offsets(op, offsets, len(src.shape), span)
    check_run_time_region(op, src.shape, offsets, valid, shape, span)
    return TileType(shape, src.dtype, attrs.get("target_memory"))


def store_partial(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    tile, offsets, dst, valid = args
    t = check_store(op, tile, offsets, dst, span)
    check_run_time_region(op, dst.type.shape, offsets, valid, t.shape, span)  # type: ignore[attr-defined]
    return dst.type


def store_atomic(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    tile, offsets, dst = args[:3]
    if attrs.get("atomic") is not AtomicType.Add:
        raise fail(
            op,
            f"atomic must be pl.AtomicType.Add, got {attrs.get('atomic')!r}",
            span,
            advice="store.atomic_type",
        )
    t = check_store(op, tile, offsets, dst, span)
    shape = dst.type.shape  # type: ignore[attr-defined]
    if len(args) == 4:
        check_run_time_region(op, shape, offsets, args[3], t.shape, span)
    else:
        check_static_bounds(op, shape, offsets, t.valid_shape or t.shape, span)
    return dst.type


def move(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    t = args[0].type
    if not isinstance(t, TileType):
        raise fail(
            op,
            f"moves a tile, got {describe(t)}",
            span,
            advice="move.needs_tile",
        )
    return with_changes(t, memory_space=attrs["target_memory"])


def transpose_view(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """A 2-D tile seen with its axes swapped (its valid shape swapped too), in its own space."""
    t = args[0].type
    if not isinstance(t, TileType) or len(t.shape) != 2:
        raise fail(spec.name, f"views a 2-D tile transposed, got {describe(t)}", span, "pass a 2-D tile")
    valid = (t.valid_shape[1], t.valid_shape[0]) if t.valid_shape else None
    return TileType((t.shape[1], t.shape[0]), t.dtype, t.memory_space, valid)


def extract(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A ``shape`` region of a Mat tile at ``offset``, placed in Left or Right: one block of a
    matmul operand the compiler stages from L1 to L0."""
    op = spec.name
    src = args[0].type
    shape = tuple(attrs["shape"])
    space = attrs["target_memory"]
    if not isinstance(src, TileType) or len(src.shape) != len(shape):
        raise fail(op, f"extracts a region of a 2-D Mat tile, got {describe(src)}", span, "pass a Mat tile")
    if space not in (MemorySpace.Left, MemorySpace.Right):
        raise fail(
            op, f"extracts into Left or Right, got {space.name}", span, "write target_memory=pl.Mem.Left"
        )
    check_offsets(op, args[1], len(shape), span)
    check_static_bounds(op, src.shape, args[1], shape, span)
    return TileType(shape, src.dtype, space)


def create_tile(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    return TileType(tuple(attrs["shape"]), attrs["dtype"], attrs.get("target_memory"))


def create_tensor(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """A tensor of ``shape``; the orchestration gives an extent it computes at run time as the
    ``shape`` operand, its entry in the attr being the dynamic extent the type names."""
    shape = tuple(attrs["shape"])
    if args:
        check_offsets(spec.name, args[0], len(shape), span, "shape")
    return TensorType(shape, attrs["dtype"])


def assemble(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    dst, value, offsets = args
    if not isinstance(dst.type, TensorType):
        raise fail(
            op,
            f"writes into a tensor, got {describe(dst.type)}",
            span,
            advice="assemble.target_not_tensor",
        )
    v = shaped(op, value, span, "value")
    if v.dtype != dst.type.dtype:
        raise fail(
            op,
            f"dtype mismatch: writing {describe(v)} into {describe(dst.type)}",
            span,
            advice="assemble.dtype_mismatch",
        )
    check_offsets(op, offsets, len(dst.type.shape), span)
    if len(v.shape) != len(dst.type.shape):
        raise fail(
            op,
            f"rank mismatch: {describe(v)} into {describe(dst.type)}",
            span,
            advice="assemble.rank_mismatch",
            v=v,
            dst=dst,
        )
    check_static_bounds(op, dst.type.shape, offsets, v.shape, span)
    atomic = attrs.get("atomic", AtomicType.NONE)
    if not isinstance(atomic, AtomicType):
        raise fail(
            op,
            f"atomic must be a pl.AtomicType, got {attrs['atomic']!r}",
            span,
            advice="assemble.atomic_type",
        )
    if atomic is not AtomicType.NONE and not v.dtype.computes:
        raise fail(
            op,
            f"an atomic add computes with its elements, and pl.{v.dtype.name} elements are only moved "
            "and converted on a2a3",
            span,
            "add in a dtype that computes (pl.cast to pl.FP32 first), or write without atomic=",
        )
    return dst.type


def gather_row(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A window of ``shape`` rows and columns of a GM tensor copied into a tile at ``dst_offset``.
    With a ``valid_shape`` operand only that leading part of the window is copied (its extents
    may be run-time values), so the window itself may hang past the end of either side."""
    op = spec.name
    dst, src, dst_offsets, src_offsets = args[:4]
    if not isinstance(dst.type, TileType):
        raise fail(
            op,
            f"gathers into a tile, got {describe(dst.type)}",
            span,
            advice="gather_row.dst_not_tile",
        )
    if not isinstance(src.type, TensorType):
        raise fail(
            op,
            f"gathers from a tensor, got {describe(src.type)}",
            span,
            "the source is a global-memory tensor (a kernel parameter)",
        )
    if dst.type.dtype != src.type.dtype:
        raise fail(
            op,
            f"dtype mismatch: {describe(src.type)} into {describe(dst.type)}",
            span,
            advice="gather_row.dtype_mismatch",
            src=src,
        )
    shape = tuple(attrs["shape"])
    if len(shape) != 2:
        raise fail(
            op,
            f"copies a 2-D window of rows: shape must be [R, C], got {list(shape)}",
            span,
            advice="gather_row.not_2d",
            columns=dst.type.shape[-1],
        )
    check_offsets(op, dst_offsets, len(dst.type.shape), span)
    check_offsets(op, src_offsets, len(src.type.shape), span)
    if len(args) == 5:
        if attrs.get("transpose"):
            raise fail(
                op,
                "valid_shape= cannot be combined with transpose=True",
                span,
                "gather with transpose=False and give the matmul b_trans=True, or drop valid_shape= "
                "and copy whole windows (e.g. one row per call)",
            )
        check_gathered_region(
            op, args[4], shape, dst.type.shape, dst_offsets, src.type.shape, src_offsets, span
        )
    else:
        check_static_bounds(op, dst.type.shape, dst_offsets, shape, span)
        check_static_bounds(op, src.type.shape, src_offsets, shape, span)
    if dst.type.memory_space not in (None, MemorySpace.Vec, MemorySpace.Mat):
        raise fail(
            op,
            f"gathers into a Vec or Mat tile, got {describe(dst.type)}",
            span,
            "gather into a pl.create_tile (Vec) or a pl.create_l1 (Mat) tile",
        )
    return dst.type


def check_gathered_region(
    op: str,
    valid: Expr,
    window: tuple[int, ...],
    dst: Sequence[int],
    dst_offsets: Expr,
    src: Sequence[int],
    src_offsets: Expr,
    span: SourceSpan | None,
) -> None:
    """A gather's ``valid_shape``: one extent per dim of the window, each constant one in
    ``0..window``; what it copies (not the window) lies inside both sides where that is constant."""
    check_offsets(op, valid, len(window), span, "valid_shape")
    assert isinstance(valid, TupleExpr)
    for dim, (size, full) in enumerate(zip(valid.elements, window, strict=True)):
        if isinstance(size, Const) and not 0 <= size.value <= full:
            raise fail(
                op,
                f"valid_shape {size.value} of dim {dim} is outside the window shape {list(window)}",
                span,
                f"each valid extent lies between 0 and the window's extent ({full} in dim {dim})",
            )
    check_run_time_region(op, dst, dst_offsets, valid, window, span)
    check_run_time_region(op, src, src_offsets, valid, window, span)


def reshape(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = shaped(op, args[0], span)
    shape = tuple(attrs["shape"])
    if prod(shape) != prod(x.shape):
        raise fail(
            op,
            f"cannot reshape {describe(x)} ({prod(x.shape)} elements) to {list(shape)} "
            f"({prod(shape)} elements)",
            span,
            f"give a shape whose extents multiply to {prod(x.shape)}, as {list(x.shape)} does",
        )
    return with_changes(x, shape=shape, valid_shape=None)


def transpose(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """x with two axes swapped: shape (and a tile's valid shape) swapped with them."""
    op = spec.name
    x = shaped(op, args[0], span)
    rank = len(x.shape)
    axes = (attrs["axis1"], attrs["axis2"])
    if any(not -rank <= a < rank for a in axes) or axes[0] % rank == axes[1] % rank:
        raise fail(
            op,
            f"axes {axes[0]} and {axes[1]} are not two distinct axes of {describe(x)}",
            span,
            f"give two different axes in 0..{rank - 1}, e.g. pl.transpose(x, 0, 1)",
        )
    first, second = (a % rank for a in axes)

    def swapped(dims: Sequence[Any]) -> tuple[Any, ...]:
        out = list(dims)
        out[first], out[second] = out[second], out[first]
        return tuple(out)

    valid = getattr(x, "valid_shape", None)
    return with_changes(x, shape=swapped(x.shape), valid_shape=swapped(valid) if valid else None)


def slice_(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A window of ``shape`` at ``offset``; a tensor's may carry the view's valid shape (operand 2)
    and, with ``clamp``, hang over the tensor's end (its valid shape then stops at the end)."""
    op = spec.name
    x = shaped(op, args[0], span)
    shape = tuple(attrs["shape"])
    if len(shape) != len(x.shape):
        raise fail(
            op,
            f"a slice of {describe(x)} needs a shape of rank {len(x.shape)}",
            span,
            advice="slice.rank_mismatch",
            x=x,
        )
    check_offsets(op, args[1], len(x.shape), span)
    if len(args) > 2:
        check_view_valid(op, args[2], shape, span)
    if len(args) > 3:  # the window's extents, computed by the orchestration at run time
        check_offsets(op, args[3], len(shape), span, "shape")
    if not attrs.get("clamp"):
        check_static_bounds(op, x.shape, args[1], shape, span)
    return with_changes(x, shape=shape, valid_shape=None)


def check_view_valid(op: str, valid: Expr, shape: Sequence[Any], span: SourceSpan | None) -> None:
    """A tensor view's valid shape: one extent per dim, each constant one in ``0..extent``."""
    check_offsets(op, valid, len(shape), span, "valid_shape")
    assert isinstance(valid, TupleExpr)
    for dim, (v, full) in enumerate(zip(valid.elements, shape, strict=True)):
        if isinstance(v, Const) and isinstance(full, int) and not 0 <= v.value <= full:
            raise fail(
                op,
                f"valid extent {v.value} of dim {dim} is outside the view's 0..{full}",
                span,
                "the valid region is part of the view: each valid extent lies between 0 and the view's",
            )


def tensor_set_validshape(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """The tensor as a view whose valid shape is operand 1: no data moves."""
    op = spec.name
    x = args[0].type
    if not isinstance(x, TensorType):
        raise fail(op, f"sets the valid shape of a tensor, got {describe(x)}", span, "pass a tensor")
    check_view_valid(op, args[1], x.shape, span)
    return x


def set_validshape(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """The tile with a new valid shape: constant entries in the type, run-time ones as the operand."""
    op = spec.name
    x = args[0].type
    if not isinstance(x, TileType):
        raise fail(
            op,
            f"sets the valid shape of a tile, got {describe(x)}",
            span,
            "load a tile first: pl.set_validshape(pl.load(t, [0, 0], [64, 64]), rows, 64)",
        )
    valid = args[1]
    check_offsets(op, valid, len(x.shape), span, "valid_shape")
    assert isinstance(valid, TupleExpr)
    sizes = [e.value if isinstance(e, Const) else None for e in valid.elements]
    for dim, size in enumerate(sizes):
        if size is not None and not 0 < size <= x.shape[dim]:
            raise fail(
                op,
                f"valid extent {size} of dim {dim} is outside the tile's 1..{x.shape[dim]}",
                span,
                "the valid region is part of the tile: each valid extent lies between 1 and the tile's",
            )
    if None in sizes:
        return with_changes(x, valid_shape=None)  # known at run time: the operand carries it
    return with_changes(x, valid_shape=tuple(sizes))


def fillpad(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    x = args[0].type
    if not isinstance(x, TensorType if spec.level is Level.TENSOR else TileType):
        raise fail(
            op,
            f"fills a tile outside its valid shape, got {describe(x)}",
            span,
            advice="fillpad.needs_tile",
        )
    if isinstance(x, TileType):
        check_vec(op, x, span)
    pad = attrs.get("pad_value")
    if not isinstance(pad, PadValue) or pad is PadValue.null:
        raise fail(
            op,
            f"pad_value must be a pl.PadValue to fill with, got {pad!r}",
            span,
            f"write pad_value= one of {PAD_VALUES}",
        )
    if len(args) == 2:
        check_offsets(op, args[1], len(x.shape), span, "valid_shape")
    if isinstance(x, TensorType):
        return x
    return with_changes(x, memory_space=MemorySpace.Vec, valid_shape=None)


def full(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    if len(args) != 1 or not isinstance(args[0].type, ScalarType):
        got = ", ".join(describe(a.type) for a in args) or "nothing"
        raise fail(
            op,
            f"the fill value must be a scalar, got {got}",
            span,
            advice="full.value_not_scalar",
            attrs=attrs,
        )
    check_scalar_fits(op, args[0], attrs["dtype"], span, "the fill value")
    if spec.level is Level.TENSOR:
        return TensorType(tuple(attrs["shape"]), attrs["dtype"])
    return TileType(tuple(attrs["shape"]), attrs["dtype"], MemorySpace.Vec)


# (source space, destination space) pairs a tile can be assembled along.
TILE_ASSEMBLE_PATHS = ((MemorySpace.Acc, MemorySpace.Mat), (MemorySpace.Vec, MemorySpace.Vec))


def tile_assemble(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    dst, src, offsets = args
    d, v = dst.type, src.type
    if not isinstance(d, TileType) or not isinstance(v, TileType):
        raise fail(
            op,
            f"writes a tile into a tile, got {describe(v)} into {describe(d)}",
            span,
            advice="assemble.needs_tiles",
        )
    if d.dtype != v.dtype or len(d.shape) != len(v.shape):
        message = f"writes {describe(v)} into {describe(d)}: dtype or rank differs"
        if d.dtype != v.dtype:
            raise fail(op, message, span, advice="assemble.tile_dtype", d=d)
        raise fail(op, message, span, advice="assemble.tile_rank", v=v, d=d)
    spaces = (v.memory_space, d.memory_space)
    if None not in spaces and spaces not in TILE_ASSEMBLE_PATHS:
        legal = ", ".join(f"{a.name}->{b.name}" for a, b in TILE_ASSEMBLE_PATHS)
        raise fail(op, f"cannot assemble {describe(v)} into {describe(d)}", span, f"legal: {legal}")
    check_offsets(op, offsets, len(d.shape), span)
    check_static_bounds(op, d.shape, offsets, v.shape, span)
    return d


def concat(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args)
    same_kind(op, lhs, rhs, span)
    if len(lhs.shape) != 2 or len(rhs.shape) != 2 or lhs.shape[0] != rhs.shape[0]:
        raise fail(
            op,
            f"concatenates columns of 2-D operands with equal row counts, "
            f"got {describe(lhs)} and {describe(rhs)}",
            span,
            advice="concat.shape",
            lhs=lhs,
            rhs=rhs,
        )
    if lhs.dtype != rhs.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            advice="concat.dtype_mismatch",
            lhs=lhs,
        )
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    shape = (lhs.shape[0], lhs.shape[1] + rhs.shape[1])
    if isinstance(lhs, TileType):
        return with_changes(lhs, shape=shape, memory_space=MemorySpace.Vec, valid_shape=None)
    return with_changes(lhs, shape=shape)


# The element dtypes a reinterpret_view takes on either side: integers of 8 to 64 bits, the floats.
VIEW_DTYPES = frozenset(
    {
        DataType.INT8,
        DataType.UINT8,
        DataType.INT16,
        DataType.UINT16,
        DataType.INT32,
        DataType.UINT32,
        DataType.INT64,
        DataType.UINT64,
        DataType.FP16,
        DataType.BF16,
        DataType.FP32,
    }
)


def reinterpreted_shape(shape: Sequence[Any], src: DataType, dst: DataType) -> tuple[Any, ...] | None:
    """``shape`` of ``src`` elements seen as ``dst`` elements over the same bytes: the last axis
    scaled by the byte-width ratio (None when its bytes are no whole number of ``dst`` elements)."""
    last = shape[-1]
    if not isinstance(last, int):
        return None
    nbytes = last * src.nbytes
    if nbytes % dst.nbytes:
        return None
    return (*shape[:-1], nbytes // dst.nbytes)


def reinterpret_view(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """The same bytes seen as ``dtype`` elements: the last axis scaled by the byte-width ratio, or
    the explicit ``shape`` (same bytes); a tile's constant valid shape scales with it."""
    op = spec.name
    x = shaped(op, args[0], span)
    dtype = attrs["dtype"]
    names = ", ".join(sorted(f"pl.{d.name}" for d in VIEW_DTYPES))
    for side, d in (("source", x.dtype), ("view", dtype)):
        if d not in VIEW_DTYPES:
            raise fail(
                op,
                f"the {side} dtype must be an integer or float dtype, got pl.{d.name}",
                span,
                f"one of {names}",
            )
    if dtype == x.dtype:
        raise fail(
            op,
            f"views {describe(x)} as its own dtype pl.{dtype.name}",
            span,
            "give another dtype of the same bytes (pl.reshape changes only the shape)",
        )
    auto = reinterpreted_shape(x.shape, x.dtype, dtype)
    shape = tuple(attrs["shape"]) if attrs.get("shape") else auto
    if shape is None:
        raise fail(
            op,
            f"the last axis of {describe(x)} ({x.shape[-1]} x {x.dtype.nbytes} bytes) holds no whole "
            f"number of pl.{dtype.name} elements ({dtype.nbytes} bytes)",
            span,
            "view a region whose last axis spans a multiple of the new element's bytes",
        )
    if any(not isinstance(d, int) for d in (*shape, *x.shape)):
        if shape != auto:
            raise fail(
                op, f"shape {list(shape)} needs static extents", span, "leave shape= out on a dynamic tensor"
            )
    elif prod(shape) * dtype.nbytes != prod(x.shape) * x.dtype.nbytes:
        raise fail(
            op,
            f"shape {list(shape)} of pl.{dtype.name} is {prod(shape) * dtype.nbytes} bytes, but "
            f"{describe(x)} is {prod(x.shape) * x.dtype.nbytes}",
            span,
            "give a shape of the same bytes, or leave shape= out for "
            + (str(list(auto)) if auto else "the scaled last axis"),
        )
    if isinstance(x, TensorType):
        return TensorType(shape, dtype)
    valid = None
    if x.valid_shape is not None and tuple(x.valid_shape) != x.shape:
        valid = reinterpreted_shape(x.valid_shape, x.dtype, dtype) if shape == auto else None
        if valid is None:
            raise fail(
                op,
                f"the valid region of {describe(x)} ({list(x.valid_shape)}) is no whole region of "
                f"pl.{dtype.name} elements in {list(shape)}",
                span,
                "view the whole tile (pl.fillpad it first), or leave shape= out so that the valid "
                "last axis scales with the elements",
            )
    return TileType(shape, dtype, x.memory_space, valid)


def fillpad_expand(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """A tile (or tensor) of ``shape``, at least ``x``'s in every dim: ``x``'s valid region at its
    origin, ``pad_value`` everywhere else."""
    op = spec.name
    x = shaped(op, args[0], span)
    if isinstance(x, TileType):
        check_vec(op, x, span)
    shape = tuple(attrs.get("shape") or x.shape)
    check_same_rank(op, "shape", shape, x.shape, describe(x), span)
    if any(isinstance(a, int) and isinstance(b, int) and a < b for a, b in zip(shape, x.shape, strict=True)):
        raise fail(
            op,
            f"expands {describe(x)} to {list(shape)}, which is smaller in some dim",
            span,
            "give a shape at least as large as the operand's in every dim",
        )
    pad = attrs.get("pad_value", PadValue.zero)
    if not isinstance(pad, PadValue) or pad is PadValue.null:
        raise fail(
            op,
            f"pad_value must be a pl.PadValue to fill with, got {pad!r}",
            span,
            f"write pad_value= one of {PAD_VALUES}",
        )
    if isinstance(x, TensorType):
        return TensorType(shape, x.dtype)
    return TileType(shape, x.dtype, MemorySpace.Vec)


# ---------------------------------------------------------------- declarations

_TILE = Operand("tile", Role.TILE)
_OFFSETS = Operand("offsets", Role.OFFSETS)
_SHAPE = Attr("shape", tuple, REQUIRED)
_DTYPE = Attr("dtype", DataType, REQUIRED)
_TARGET = Attr("target_memory", MemorySpace)
_VALID = Attr("valid_shape", tuple)
_SHAPE_OPTIONAL = Attr("shape", tuple)
# What a load writes into the part of the tile outside its valid region (nothing, when absent).
_PAD = Attr("pad_value", PadValue)


def _declare_transfers() -> None:
    T, V = Level.TILE, Level.TENSOR
    src = Operand("tensor", Role.TENSOR)
    dst = Operand("tensor", Role.TENSOR, effect=Effect.WRITE)
    load_sig = "pl.load(tensor, offsets, shape, target_memory=pl.Mem.Vec, valid_shape=None)"
    store_sig = "pl.store(tile, offsets, tensor)"
    declare_op(
        "tile.load",
        T,
        Unit.MTE,
        load,
        (src, _OFFSETS),
        (_SHAPE, _TARGET, _VALID, _PAD),
        (Cost("load"), PlacesTile(), GmAccess(0, 1), FormatFree()),
        "load",
        load_sig,
        "a tile read from a region of a tensor (only the valid region, if valid_shape is given)",
    )
    declare_op(
        "tile.load_partial",
        T,
        Unit.MTE,
        load_partial,
        (src, _OFFSETS, Operand("valid_shape", Role.VALID_SHAPE)),
        (_SHAPE, _TARGET, _PAD),
        (Cost("load"), PlacesTile(), GmAccess(0, 1, valid=2), WHOLE_TILE, FormatFree()),
        "load",
        load_sig,
        "a tile of which a run-time valid region is read from a tensor",
    )
    declare_op(
        "tile.store",
        T,
        Unit.MTE,
        store,
        (_TILE, _OFFSETS, dst),
        (),
        (Cost("store"), GmAccess(2, 1, write=True, tile=0), FormatFree()),
        "store",
        store_sig,
        "the tile's valid region written into a tensor at offsets",
    )
    declare_op(
        "tile.store_partial",
        T,
        Unit.MTE,
        store_partial,
        (_TILE, _OFFSETS, dst, Operand("valid_shape", Role.VALID_SHAPE)),
        (),
        (Cost("store"), GmAccess(2, 1, write=True, tile=0, valid=3), WHOLE_TILE, FormatFree()),
        "store",
        store_sig,
        "a run-time valid region of the tile written into a tensor",
    )
    declare_op(
        "tile.store_atomic",
        T,
        Unit.MTE,
        store_atomic,
        (
            _TILE,
            _OFFSETS,
            Operand("tensor", Role.TENSOR, effect=Effect.UPDATE),
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
        ),
        (Attr("atomic", AtomicType, REQUIRED),),
        (Cost("store"), GmAccess(2, 1, write=True, atomic=True, tile=0, valid=3)),
        "store",
        "pl.store(tile, offsets, tensor, atomic=pl.AtomicType.Add)",
        "the tile added into a tensor region",
    )
    declare_op(
        "tile.gather_row",
        T,
        Unit.MTE,
        gather_row,
        (
            Operand("dst_tile", Role.TILE, (MemorySpace.Vec, MemorySpace.Mat), effect=Effect.WRITE),
            Operand("src_tensor", Role.TENSOR),
            Operand("dst_offset", Role.OFFSETS),
            Operand("src_offset", Role.OFFSETS),
            # An operand, not an attr: its extents may be run-time scalars.
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
        ),
        # transpose: the row lands as a column of the transposed box layout (a b_trans operand's);
        # tiles are held in their logical layout, so it is recorded, not computed.
        (_SHAPE, Attr("transpose", bool, False)),
        (Cost("gather"), GmAccess(1, 3, valid=4), WHOLE_TILE, FormatFree()),
        "gather_row",
        "pl.gather_row(dst_tile, src_tensor, dst_offset, src_offset, shape, transpose=False, *, "
        "valid_shape=None)",
        "rows of a tensor copied into a Vec or Mat (L1) tile (only the valid_shape part, if given)",
    )
    declare_op(
        "tile.transpose_view",
        T,
        Unit.MTE,
        transpose_view,
        (Operand("tile", Role.TILE),),
        (),
        # A layout view the next move or matmul reads through: it costs no transfer of its own.
        (Cost("none"), PlacesTile(), FormatFree()),
        "transpose_view",
        "pl.transpose_view(tile)",
        "the 2-D tile with its axes swapped, in its space (a matmul operand in the other layout)",
    )
    declare_op(
        "tile.extract",
        T,
        Unit.MTE,
        extract,
        (Operand("src", Role.TILE, (MemorySpace.Mat,)), Operand("offset", Role.OFFSETS)),
        (_SHAPE, Attr("target_memory", MemorySpace, REQUIRED)),
        (Cost("move"), PlacesTile(), FormatFree()),
        "extract",
        "pl.extract(src, idx_row, idx_col, shape, target_memory)",
        "a region of a Mat tile copied into Left or Right (a matmul operand block)",
    )
    declare_op(
        "tile.move",
        T,
        Unit.MTE,
        move,
        (_TILE,),
        (Attr("target_memory", MemorySpace, REQUIRED),),
        (Cost("move"), PlacesTile(), KeepsValid(), FormatFree()),
        "move",
        "pl.move(tile, target_memory)",
        "the tile copied into another memory space",
    )
    declare_op(
        "tile.create",
        T,
        Unit.SCALAR,
        create_tile,
        (),
        (_SHAPE, _DTYPE, _TARGET),
        (PlacesTile(), FormatFree()),
        "create_tile",
        "pl.create_tile(shape, dtype, target_memory=pl.Mem.Vec, tile_view=None)",
        "an uninitialised tile",
    )
    declare_op(
        "tensor.create",
        V,
        Unit.HOST,
        create_tensor,
        (Operand("shape", Role.VALID_SHAPE, optional=True),),
        (_SHAPE, _DTYPE, Attr("manual_dep", bool, False)),
        (FormatFree(),),
        "create_tensor",
        "pl.create_tensor(shape, dtype, manual_dep=False)",
        "a fresh global-memory tensor",
    )
    declare_op(
        "tensor.assemble",
        V,
        Unit.MTE,
        assemble,
        (Operand("target", Role.TENSOR, effect=Effect.WRITE), Operand("value", Role.SHAPED), _OFFSETS),
        (Attr("atomic", AtomicType, AtomicType.NONE),),
        (Cost("store"), GmAccess(0, 2, write=True, tile=1), FormatFree()),
        "assemble",
        "pl.assemble(target, value, offsets)",
        "the value written into a region of the target tensor (atomic=pl.AtomicType.Add adds into it)",
    )
    declare_op(
        "tile.assemble",
        T,
        Unit.MTE,
        tile_assemble,
        (Operand("target", Role.TILE, effect=Effect.WRITE), Operand("value", Role.TILE), _OFFSETS),
        (),
        (Cost("vector"), WHOLE_TILE, FormatFree()),
        "assemble",
        "pl.assemble(target, value, offsets)",
        "the value tile written into a region of the target tile",
    )
    declare_op(
        "tile.fillpad",
        T,
        Unit.VECTOR,
        fillpad,
        (
            Operand("x", Role.TILE, (MemorySpace.Vec,)),
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
        ),
        (Attr("pad_value", PadValue, REQUIRED),),
        (Cost("vector"), PlacesTile(), WHOLE_TILE),
        "fillpad",
        "pl.fillpad(x, pad_value=pl.PadValue.zero)",
        "the tile with pad_value outside its valid shape",
    )
    declare_op(
        "tensor.fillpad",
        Level.TENSOR,
        Unit.VECTOR,
        fillpad,
        (Operand("x", Role.TENSOR), Operand("valid_shape", Role.VALID_SHAPE, optional=True)),
        (Attr("pad_value", PadValue, REQUIRED),),
        (Cost("vector"), Lowers("tile.fillpad")),
        "fillpad",
        "pl.fillpad(x, pad_value=pl.PadValue.zero)",
        "the tensor with pad_value outside its valid shape",
    )
    declare_op(
        "tile.fillpad_expand",
        T,
        Unit.VECTOR,
        fillpad_expand,
        (
            Operand("x", Role.TILE, (MemorySpace.Vec,)),
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
        ),
        (_SHAPE_OPTIONAL, Attr("pad_value", PadValue, PadValue.zero)),
        (Cost("vector"), PlacesTile(), WHOLE_TILE),
        "fillpad_expand",
        "pl.fillpad_expand(x, shape=None, pad_value=pl.PadValue.zero)",
        "a larger tile holding x's valid region at its origin and pad_value everywhere else",
    )
    declare_op(
        "tensor.fillpad_expand",
        Level.TENSOR,
        Unit.VECTOR,
        fillpad_expand,
        (Operand("x", Role.TENSOR),),
        (_SHAPE_OPTIONAL, Attr("pad_value", PadValue, PadValue.zero)),
        (Cost("vector"), Lowers("tile.fillpad_expand"), WholeRegion()),
        "fillpad_expand",
        "pl.fillpad_expand(x, shape=None, pad_value=pl.PadValue.zero)",
        "a larger tensor holding x's valid region at its origin and pad_value everywhere else",
    )
    declare_op(
        "tensor.set_validshape",
        Level.TENSOR,
        Unit.SCALAR,
        tensor_set_validshape,
        (Operand("x", Role.TENSOR), Operand("valid_shape", Role.VALID_SHAPE)),
        (),
        (SetsValid(1), FormatFree()),
        "set_validshape",
        "pl.set_validshape(x, rows, cols)",
        "a view of the tensor of which only the leading rows x cols region is real",
    )
    declare_op(
        "tile.set_validshape",
        T,
        Unit.SCALAR,
        set_validshape,
        (Operand("x", Role.TILE), Operand("valid_shape", Role.VALID_SHAPE)),
        (),
        (PlacesTile(), SetsValid(1), FormatFree()),
        "set_validshape",
        "pl.set_validshape(x, rows, cols)",
        "the tile, of which only the leading rows x cols region is real from then on",
    )
    # A fill is a tensor (PyPTO's pl.full), or a tile where its uses ask for one (the parser's).
    declare_op(
        "tensor.full",
        V,
        Unit.VECTOR,
        full,
        (Operand("value", Role.SCALAR),),
        (_SHAPE, _DTYPE),
        (Cost("vector"), Lowers("tile.full")),
        "full",
        "pl.full(shape, dtype, value)",
        "a tensor filled with value",
    )
    declare_op(
        "tile.full",
        T,
        Unit.VECTOR,
        full,
        (Operand("value", Role.SCALAR),),
        (_SHAPE, _DTYPE),
        (Cost("vector"), PlacesTile()),
        "full",
        "pl.full(shape, dtype, value)",
        "a Vec tile filled with value",
    )


def _declare_views(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE
    x = Operand("x", Role.TILE) if tile else Operand("x", Role.TENSOR)
    place: tuple[Trait, ...] = (PlacesTile(),) if tile else ()
    reshape_traits: tuple[Trait, ...] = (
        (WHOLE_TILE, FormatFree(), *place) if tile else (WholeRegion(), Lowers("tile.reshape"), FormatFree())
    )
    declare_op(
        f"{prefix}.reshape",
        level,
        Unit.MTE,
        reshape,
        (x,),
        (_SHAPE,),
        reshape_traits,
        "reshape",
        "pl.reshape(x, shape)",
        "the same elements in another shape",
    )
    declare_op(
        f"{prefix}.reinterpret_view",
        level,
        Unit.MTE,
        reinterpret_view,
        (x,),
        (_DTYPE, _SHAPE_OPTIONAL),
        # A view of the same bytes: no element moves, so it costs no transfer.
        (
            Cost("none"),
            FormatFree(),
            Reinterprets(),
            *((WHOLE_TILE, *place) if tile else (Lowers("tile.reinterpret_view"),)),
        ),
        "reinterpret_view",
        "pl.reinterpret_view(data, dtype, *, shape=None)",
        "the same bytes seen as elements of another dtype (the last axis scaled by the width ratio)",
    )
    lowers: tuple[Trait, ...] = () if tile else (Lowers("tile.slice"), SetsValid(2), OnHost())
    # A tensor's view carries its valid shape, its padding and whether it hangs over the end; one
    # the orchestration makes, the extents of its window it computes at run time (with a valid shape).
    view: tuple[Operand, ...] = (
        ()
        if tile
        else (
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
            Operand("shape", Role.VALID_SHAPE, optional=True),
        )
    )
    view_attrs: tuple[Attr, ...] = () if tile else (_PAD, Attr("clamp", bool, False))
    declare_op(
        f"{prefix}.slice",
        level,
        Unit.MTE,
        slice_,
        (x, Operand("offset", Role.OFFSETS), *view),
        (_SHAPE, *view_attrs),
        (Cost("vector"), WHOLE_TILE, FormatFree(), *place, *lowers),
        "slice",
        "pl.slice(x, shape, offset, valid_shape=None, drop_dims=None, pad_value=None, clamp=False)",
        "a region of x",
    )
    vec = Operand("a", Role.TILE, (MemorySpace.Vec,)) if tile else Operand("a", Role.TENSOR)
    # A transpose moves elements across rows: at tensor level its region runs whole.
    transposed = Operand("x", Role.TILE, (MemorySpace.Vec,)) if tile else x
    transpose_traits: tuple[Trait, ...] = (
        (WHOLE_TILE, *place) if tile else (WholeRegion(), Lowers("tile.transpose"))
    )
    declare_op(
        f"{prefix}.transpose",
        level,
        Unit.VECTOR,
        transpose,
        (transposed,),
        (Attr("axis1", int, REQUIRED), Attr("axis2", int, REQUIRED)),
        (Cost("vector"), FormatFree(), *transpose_traits),
        "transpose",
        "pl.transpose(x, axis1, axis2)",
        "x with axes axis1 and axis2 swapped",
    )
    rhs = Operand("b", Role.TILE, (MemorySpace.Vec,)) if tile else Operand("b", Role.TENSOR)
    lowers = () if tile else (Lowers("tile.concat"),)
    declare_op(
        f"{prefix}.concat",
        level,
        Unit.VECTOR,
        concat,
        (vec, rhs),
        (),
        (Cost("vector"), SplitPolicy(cols=ALL), FormatFree(), *place, *lowers),
        "concat",
        "pl.concat(a, b)",
        "b's columns after a's",
    )


_declare_transfers()
for _level in (Level.TENSOR, Level.TILE):
    _declare_views(_level)
