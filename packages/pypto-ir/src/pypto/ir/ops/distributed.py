"""The distributed model's ops (``import pypto.language.distributed as pld``): ranks, windows,
signals, remote reads and writes, and collectives.

A HOST function (``@pl.jit.host``) asks the world size, allocates per-rank window buffers, views
them as ``pld.DistributedTensor`` windows, dispatches a chip orchestration to each rank
(``dist.dispatch``), calls host callbacks and runs host collectives. A kernel takes a window as a
parameter and talks to the other ranks through it: its communication context (rank, rank count),
signal cells (notify / wait), one-sided remote loads and stores, put / get, and the collectives.

Every op here is an ordering point (:class:`Communicates`): no pass moves a memory access of the
kernel across it. The collectives are single ops: a backend runs each as its protocol.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import OpValueError, SourceSpan
from pypto.ir.nodes import Call, Const, DimExpr, DynDim, Expr, TupleExpr, Var
from pypto.ir.ops.enums import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.ir.ops.rules import (
    check_offsets,
    check_run_time_region,
    check_same_rank,
    check_static_bounds,
    fail,
    given,
    user_name,
)
from pypto.ir.ops.spec import (
    REQUIRED,
    Attr,
    Communicates,
    Cost,
    Effect,
    FormatFree,
    Level,
    OnSide,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Side,
    Unit,
    declare,
)
from pypto.ir.types import (
    COMM_CTX,
    UNIT,
    WINDOW_BUFFER,
    DistributedTensorType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    Type,
    describe,
)

# The element dtypes a remote atomic add combines in hardware (BF16 on the A2/A3 profile).
ATOMIC_ADD_DTYPES = (
    DataType.FP32,
    DataType.BF16,
    DataType.FP16,
    DataType.INT32,
    DataType.INT16,
    DataType.INT8,
)
MODES = ("mesh", "ring")
_ALLOC_HINT = "write pld.alloc_window_buffer(nbytes) or pld.alloc_window_buffer([rows, cols], dtype=pl.FP32)"
_WINDOW_HINT = (
    "allocate a window in the host function (buf = pld.alloc_window_buffer(nbytes); "
    "w = pld.window(buf, shape, dtype=...)) and pass it down as a pld.DistributedTensor parameter"
)


# ---------------------------------------------------------------- operand checks


def window(op: str, e: Expr, span: SourceSpan | None, what: str) -> DistributedTensorType:
    """Operand ``e`` must be a window-bound tensor (a plain tensor lives on this rank only)."""
    t = e.type
    if not isinstance(t, DistributedTensorType):
        plain = isinstance(t, TensorType)
        raise fail(
            op,
            f"{what} must be a pld.DistributedTensor (window-bound), got "
            f"{'a plain ' if plain else ''}{describe(t)}",
            span,
            _WINDOW_HINT,
        )
    return t


def signal(op: str, e: Expr, span: SourceSpan | None, what: str = "signal") -> DistributedTensorType:
    """A signal is an INT32 window (its cells count notifies)."""
    t = window(op, e, span, what)
    if t.dtype is not DataType.INT32:
        raise fail(
            op,
            f"{what} must hold INT32 signal cells, got {describe(t)}",
            span,
            f"allocate the signal as pld.window(buf, {list(t.shape)}, dtype=pl.INT32)",
        )
    return t


def integer(op: str, e: Expr, span: SourceSpan | None, what: str) -> None:
    """Operand ``e`` is an integer scalar (a rank index, a signal value)."""
    t = e.type
    if not isinstance(t, ScalarType) or not t.dtype.is_integer or t.dtype is DataType.TASK_ID:
        raise fail(op, f"{what} must be an integer scalar, got {describe(t)}", span, f"pass {what} as an int")


def comm_ctx(op: str, e: Expr, span: SourceSpan | None) -> None:
    if e.type != COMM_CTX:
        raise fail(
            op,
            f"takes the communication context, got {describe(e.type)}",
            span,
            "pass ctx = pld.get_comm_ctx(w), w a pld.DistributedTensor parameter of the kernel",
        )


def _atomic(op: str, attrs: Mapping[str, Any], dtype: DataType, span: SourceSpan | None) -> None:
    atomic = attrs.get("atomic", AtomicType.NONE)
    if atomic not in (None, AtomicType.NONE, AtomicType.Add):
        raise fail(op, f"atomic must be a pld.AtomicType, got {atomic!r}", span, "write pld.AtomicType.Add")
    if atomic is AtomicType.Add and dtype not in ATOMIC_ADD_DTYPES:
        names = ", ".join(f"pl.{d.name}" for d in ATOMIC_ADD_DTYPES)
        raise fail(
            op,
            f"atomic=pld.AtomicType.Add accumulates {names} elements in hardware, got pl.{dtype.name}",
            span,
            "convert the data to pl.FP32 (or pl.INT32) first, or store without atomic=",
        )


def _region(
    op: str, t: DistributedTensorType, offsets: Expr, extents: Sequence[Any], span: SourceSpan | None
) -> None:
    """``offsets`` has one index per dim of ``t``; the region of ``extents`` there fits in ``t``."""
    check_offsets(op, offsets, len(t.shape), span)
    check_same_rank(op, "the region", extents, t.shape, describe(t), span)
    check_static_bounds(op, t.shape, offsets, extents, span)


def _shape_attr(op: str, attrs: Mapping[str, Any], span: SourceSpan | None) -> tuple[Any, ...] | None:
    shape = attrs.get("shape")
    if shape is None:
        return None
    for d in shape:
        static = isinstance(d, int) and not isinstance(d, bool)
        if not (static and d > 0) and not isinstance(d, (DynDim, DimExpr)):
            raise fail(op, f"shape must be positive extents, got {list(shape)}", span, "e.g. shape=[1, 256]")
    return tuple(shape)


# ---------------------------------------------------------------- HOST ops


def world_size(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    return ScalarType(DataType.INT64)


def alloc_window_buffer(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """Either a byte count (operand ``size``) or ``shape`` + ``dtype`` attributes."""
    op = spec.name
    shape, dtype = attrs.get("shape"), attrs.get("dtype")
    if args:
        if shape is not None or dtype is not None:
            raise fail(
                op,
                "takes a byte count or a shape with dtype=, not both",
                span,
                _ALLOC_HINT,
            )
        integer(op, args[0], span, "the size in bytes")
        if isinstance(args[0], Const) and args[0].value <= 0:
            raise fail(
                op,
                f"the size in bytes must be positive, got {args[0].value}",
                span,
                "give the window's size in bytes, e.g. 256 * pl.FP32.get_byte()",
            )
        return WINDOW_BUFFER
    if shape is None or not isinstance(dtype, DataType):
        raise fail(
            op,
            "needs a size in bytes, or a shape with dtype=",
            span,
            _ALLOC_HINT,
        )
    _shape_attr(op, attrs, span)
    return WINDOW_BUFFER


def window_extent(e: Expr) -> Any:
    """The type's entry for one element of a window's shape operand: an int for a constant, the
    dynamic extent itself, or for a value computed at run time a dynamic extent named after it
    (the same expression gives the same extent, so the rule gives the same type each time)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, (DynDim, DimExpr)):
        return e
    return DynDim(re.sub(r"\W+", "_", _extent_name(e)).strip("_") or "extent", RUN_TIME_EXTENT)


# The ident of a window's run-time extents (pl.dynamic extents have their own, positive ones).
RUN_TIME_EXTENT = -1


def _extent_name(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Call):
        return "_".join([e.op.rsplit(".", 1)[-1], *(_extent_name(a) for a in e.args)])
    return type(e).__name__


def window_view(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    buf, shape = args
    if buf.type != WINDOW_BUFFER:
        raise fail(
            op,
            f"views a window buffer, got {describe(buf.type)}",
            span,
            "pass the buffer made by buf = pld.alloc_window_buffer(...) in this host function",
        )
    if not isinstance(shape, TupleExpr) or not shape.elements:
        raise fail(
            op, "shape must be a list of extents", span, "e.g. pld.window(buf, [1, 256], dtype=pl.FP32)"
        )
    check_offsets(op, shape, len(shape.elements), span, "shape")
    extents = tuple(window_extent(e) for e in shape.elements)
    if any(isinstance(d, int) and d <= 0 for d in extents):
        raise fail(
            op, f"shape must be positive, got {[str(d) for d in extents]}", span, "every extent is at least 1"
        )
    dtype = attrs.get("dtype")
    if not isinstance(dtype, DataType):
        raise fail(op, "needs dtype=, the window's element dtype", span, "e.g. dtype=pl.FP32")
    offset = attrs.get("offset", 0)
    if not isinstance(offset, int) or offset < 0:
        raise fail(op, f"offset must be a byte count >= 0, got {offset!r}", span, "leave offset out for 0")
    return DistributedTensorType(extents, dtype)


def get_comm_ctx(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    window(spec.name, args[0], span, "the tensor")
    return COMM_CTX


# ---------------------------------------------------------------- kernel ops


def rank_query(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    comm_ctx(spec.name, args[0], span)
    return ScalarType(DataType.INT32)


def _cell(op: str, sig: DistributedTensorType, offsets: Expr, span: SourceSpan | None) -> None:
    """One signal cell at ``offsets``."""
    _region(op, sig, offsets, (1,) * len(sig.shape), span)


def notify(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    target, peer, offsets, value = args
    sig = signal(op, target, span, "the target")
    integer(op, peer, span, "peer")
    _cell(op, sig, offsets, span)
    integer(op, value, span, "value")
    if not isinstance(attrs.get("op"), NotifyOp):
        raise fail(
            op,
            f"op= must be a pld.NotifyOp, got {attrs.get('op')!r}",
            span,
            "write op=pld.NotifyOp.AtomicAdd (a barrier: many writers) or op=pld.NotifyOp.Set (a handshake)",
        )
    return UNIT


def _waits(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> None:
    op = spec.name
    sig_expr, offsets, expected = args
    sig = signal(op, sig_expr, span)
    _cell(op, sig, offsets, span)
    integer(op, expected, span, "expected")
    if isinstance(expected, Const) and expected.value < 0:
        raise fail(
            op,
            f"expected must be >= 0, got {expected.value}",
            span,
            "signal counters only grow from 0: wait for a count >= 0",
        )
    cmp = attrs.get("cmp", WaitCmp.Ge)
    if not isinstance(cmp, WaitCmp):
        raise fail(op, f"cmp= must be a pld.WaitCmp, got {cmp!r}", span, "write cmp=pld.WaitCmp.Ge")


def wait(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    _waits(spec, args, attrs, span)
    return UNIT


def defer_wait(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    _waits(spec, args, attrs, span)
    if attrs.get("cmp", WaitCmp.Ge) is not WaitCmp.Ge:
        raise fail(
            spec.name,
            "a deferred wait completes when the counter is at least the expected value: only "
            "cmp=pld.WaitCmp.Ge is accepted",
            span,
            "write cmp=pld.WaitCmp.Ge, or use pld.system.wait for an equality test",
        )
    return UNIT


def remote_load(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    target, peer, offsets = args[:3]
    t = window(op, target, span, "the target")
    integer(op, peer, span, "peer")
    shape = _shape_attr(op, attrs, span)
    if shape is None:
        raise fail(op, "needs shape=, the tile's extents", span, "e.g. shape=[1, 256]")
    if any(not isinstance(d, int) for d in shape):
        raise fail(op, f"a tile's shape is static, got {[str(d) for d in shape]}", span, "give ints")
    check_offsets(op, offsets, len(t.shape), span)
    check_same_rank(op, "shape", shape, t.shape, describe(t), span)
    if len(args) == 4:
        check_run_time_region(op, t.shape, offsets, args[3], shape, span)
    else:
        check_static_bounds(op, t.shape, offsets, shape, span)
    return TileType(shape, t.dtype, MemorySpace.Vec)


def _stored(
    op: str,
    src: TileType | TensorType,
    target: Expr,
    peer: Expr,
    offsets: Expr,
    attrs: Mapping[str, Any],
    span: SourceSpan | None,
) -> None:
    t = window(op, target, span, "the target")
    integer(op, peer, span, "peer")
    if src.dtype is not t.dtype:
        raise fail(
            op,
            f"dtype mismatch: {describe(src)} into {describe(t)}",
            span,
            f"convert first: pl.cast(x, pl.{t.dtype.name})",
        )
    extents = src.valid_shape or src.shape if isinstance(src, TileType) else src.shape
    _region(op, t, offsets, extents, span)
    _atomic(op, attrs, t.dtype, span)


def remote_store(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    tile, target, peer, offsets = args
    if not isinstance(tile.type, TileType):
        raise fail(
            op,
            f"stores a tile, got {describe(tile.type)}",
            span,
            "load it first (pl.load), or push a tensor with pld.tensor.remote_store",
        )
    _stored(op, tile.type, target, peer, offsets, attrs, span)
    return UNIT


def tensor_remote_store(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    src, target, peer, offsets = args
    if not isinstance(src.type, TensorType):
        raise fail(
            op,
            f"pushes a tensor, got {describe(src.type)}",
            span,
            "push a tile with pld.tile.remote_store (the short pld.remote_store picks it for you)",
        )
    _stored(op, src.type, target, peer, offsets, attrs, span)
    return UNIT


def _chunks(op: str, attrs: Mapping[str, Any], extents: Sequence[Any], span: SourceSpan | None) -> None:
    rows, cols = attrs.get("chunk_rows", 0) or 0, attrs.get("chunk_cols", 0) or 0
    for name, value in (("chunk_rows", rows), ("chunk_cols", cols)):
        if not isinstance(value, int) or value < 0:
            raise fail(op, f"{name} must be an int >= 0, got {value!r}", span, "0 means the whole extent")
    if attrs.get("pipeline") and not (rows > 0 and cols > 0):
        raise OpValueError(
            f"{user_name(op)}: pipeline=True double-buffers a chunked transfer: it needs chunk_rows > 0 "
            f"and chunk_cols > 0, got chunk_rows={rows}, chunk_cols={cols}",
            span,
            "set both chunk_rows= and chunk_cols=, or leave pipeline=False",
        )
    if extents and not isinstance(extents[-1], int) and cols == 0:
        raise fail(
            op,
            "the transfer's innermost extent is dynamic, and the staging tile is sized statically",
            span,
            "bound it with a static chunk_cols=",
        )
    if len(extents) > 1 and not isinstance(extents[0], int) and rows == 0:
        raise fail(
            op,
            "the transfer's leading extent is dynamic, and the staging tile is sized statically",
            span,
            "bound it with a static chunk_rows=",
        )


def _transfer(
    op: str,
    remote: DistributedTensorType,
    local: TensorType,
    args: Sequence[Expr],
    attrs: Mapping[str, Any],
    span: SourceSpan | None,
    dst_first_is_remote: bool,
) -> None:
    """Shared checks of put / get: dtypes agree; the region (``shape=`` or the whole local tensor)
    fits both sides at their offsets; the chunking is consistent."""
    if remote.dtype is not local.dtype:
        raise fail(
            op,
            f"dtype mismatch between {describe(args[0].type)} and {describe(args[2].type)}",
            span,
            "give both sides the same dtype",
        )
    shape = _shape_attr(op, attrs, span)
    dst_t, src_t = (remote, local) if dst_first_is_remote else (local, remote)
    extents = shape if shape is not None else tuple(src_t.shape)
    if shape is None and len(args) < 4 and tuple(dst_t.shape) != tuple(src_t.shape):
        raise fail(
            op,
            f"with no offsets and no shape= it moves the whole tensor, and {describe(dst_t)} and "
            f"{describe(src_t)} differ",
            span,
            "give shape= (and dst_offsets= / src_offsets=) for a region",
        )
    for index, t in ((3, dst_t), (4, src_t)):
        if len(args) > index:
            check_offsets(op, args[index], len(t.shape), span, "dst_offsets" if index == 3 else "src_offsets")
            check_same_rank(op, "the region", extents, t.shape, describe(t), span)
            check_static_bounds(op, t.shape, args[index], extents, span)
    _chunks(op, attrs, extents, span)


def put(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    dst, peer, src = args[:3]
    remote = window(op, dst, span, "dst")
    integer(op, peer, span, "peer")
    if not isinstance(src.type, TensorType):
        raise fail(
            op, f"src must be a tensor, got {describe(src.type)}", span, "store a tile into a tensor first"
        )
    _transfer(op, remote, src.type, args, attrs, span, dst_first_is_remote=True)
    _atomic(op, attrs, remote.dtype, span)
    return UNIT


def get(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    dst, peer, src = args[:3]
    integer(op, peer, span, "peer")
    remote = window(op, src, span, "src")
    if not isinstance(dst.type, TensorType):
        raise fail(op, f"dst must be a tensor, got {describe(dst.type)}", span, "read into a tensor")
    _transfer(op, remote, dst.type, args, attrs, span, dst_first_is_remote=False)
    return UNIT


# ---------------------------------------------------------------- collectives


def _reduce_op(op: str, attrs: Mapping[str, Any], span: SourceSpan | None) -> ReduceOp:
    reduce = attrs.get("op", ReduceOp.Sum)
    if not isinstance(reduce, ReduceOp):
        raise fail(op, f"op= must be a pld.ReduceOp, got {reduce!r}", span, "write op=pld.ReduceOp.Sum")
    return reduce


def _numbers(op: str, t: DistributedTensorType, span: SourceSpan | None) -> None:
    if t.dtype.is_bool:
        raise fail(op, f"reduces numbers, got {describe(t)}", span, "use a numeric dtype")


def allreduce(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    t = window(op, args[0], span, "the target")
    _numbers(op, t, span)
    if len(args) > 1:
        signal(op, args[1], span)
    _reduce_op(op, attrs, span)
    mode = attrs.get("mode", "mesh")
    if mode not in MODES:
        raise fail(op, f'mode must be "mesh" or "ring", got {mode!r}', span, 'leave mode out for "mesh"')
    core_num = attrs.get("core_num", 1)
    if not isinstance(core_num, int) or isinstance(core_num, bool) or core_num < 1:
        raise fail(op, f"core_num must be an int >= 1, got {core_num!r}", span, "leave core_num out for 1")
    if mode == "ring" and core_num != 1:
        raise fail(
            op,
            f'mode="ring" runs on one core per rank, got core_num={core_num}',
            span,
            'use mode="mesh" to spread the call over several cores, or leave core_num out',
        )
    if len(args) > 1 and core_num > 1:
        sig = args[1].type
        assert isinstance(sig, DistributedTensorType)
        stride = sig.shape[-1] if len(sig.shape) == 2 else 1
        if isinstance(stride, int) and stride < core_num:
            raise fail(
                op,
                f"core_num={core_num} needs one signal lane per core: a [world_size, >= {core_num}] "
                f"signal, got {describe(sig)}",
                span,
                f"allocate the signal as [world_size, {core_num}] INT32 cells",
            )
    return t


def barrier(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    return signal(spec.name, args[0], span)


def broadcast(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    t = window(op, args[0], span, "the target")
    signal(op, args[1], span)
    root = attrs.get("root", 0)
    if not isinstance(root, int) or isinstance(root, bool) or root < 0:
        raise fail(op, f"root must be a rank index >= 0, got {root!r}", span, "e.g. root=0")
    return t


def _separate(op: str, a: Expr, b: Expr, names: str, span: SourceSpan | None) -> None:
    if a is b:
        raise fail(
            op,
            f"{names} must be separate windows, got the same one twice",
            span,
            "allocate a second window buffer for the result",
        )


def allgather(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    local = window(op, args[0], span, "the local chunk")
    t = window(op, args[1], span, "the target")
    signal(op, args[2], span)
    _separate(op, args[0], args[1], "the local chunk and the target", span)
    if local.dtype is not t.dtype:
        raise fail(op, f"dtype mismatch: {describe(local)} and {describe(t)}", span, "give both one dtype")
    if len(local.shape) != len(t.shape) or tuple(local.shape[1:]) != tuple(t.shape[1:]):
        raise fail(
            op,
            f"gathers rows of {describe(local)} into {describe(t)}: the target is [world_size, ...] of "
            "the chunk's row",
            span,
            "give the chunk shape [1, SIZE] and the target [world_size, SIZE]",
        )
    return t


def reduce_scatter(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    t = window(op, args[0], span, "the target")
    _numbers(op, t, span)
    signal(op, args[1], span)
    reduce = _reduce_op(op, attrs, span)
    if reduce is not ReduceOp.Sum:
        raise fail(
            op,
            f"reduces with pld.ReduceOp.Sum only, got {reduce!r}",
            span,
            "write op=pld.ReduceOp.Sum, or build the reduction from pld.tile.remote_load",
        )
    return t


def all_to_all(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    source = window(op, args[0], span, "the input")
    t = window(op, args[1], span, "the target")
    signal(op, args[2], span)
    _separate(op, args[0], args[1], "the input and the target", span)
    if source.dtype is not t.dtype or tuple(source.shape) != tuple(t.shape):
        raise fail(
            op,
            f"exchanges chunks of equal windows, got {describe(source)} and {describe(t)}",
            span,
            "give the input and the target the same [world_size, SIZE] shape and dtype",
        )
    return t


# ---------------------------------------------------------------- declarations

_HOST = Communicates("host")
_KERNEL = Communicates("kernel")
_BOTH = Communicates("both")
_AIV = OnSide(Side.VECTOR, only=True)


def _op(
    name: str,
    unit: Unit,
    rule: Any,
    operands: tuple[Operand, ...],
    attrs: tuple[Attr, ...],
    traits: tuple[Any, ...],
    dsl: str,
    signature: str,
    doc: str,
) -> None:
    declare(OpSpec(name, Level.SYSTEM, unit, rule, operands, attrs, traits, dsl, signature, doc))


def _declare() -> None:
    peer = Operand("peer", Role.SCALAR)
    offsets = Operand("offsets", Role.OFFSETS)
    _op(
        "dist.world_size",
        Unit.HOST,
        world_size,
        (),
        (),
        (_HOST,),
        "system.world_size",
        "pld.system.world_size()",
        "the number of ranks (HOST functions only), an INT64",
    )
    _op(
        "dist.alloc_window_buffer",
        Unit.HOST,
        alloc_window_buffer,
        (Operand("size", Role.SCALAR, optional=True),),
        (Attr("shape", tuple), Attr("dtype", DataType), Attr("name", str, "")),
        (_HOST,),
        "tensor.alloc_window_buffer",
        "pld.tensor.alloc_window_buffer(size, *, name='')",
        "a per-rank window buffer of size bytes (or shape x dtype), zero-filled",
    )
    _op(
        "dist.window",
        Unit.HOST,
        window_view,
        (Operand("buf", Role.HANDLE), Operand("shape", Role.VALID_SHAPE)),
        (Attr("dtype", DataType, REQUIRED), Attr("offset", int, 0)),
        (_HOST, FormatFree()),
        "tensor.window",
        "pld.tensor.window(buf, shape, *, dtype)",
        "a pld.DistributedTensor view of a window buffer",
    )
    # A dispatch / sub-worker call takes the callee's operands and gives its results (like `call`).
    callee = (Attr("callee", str, REQUIRED),)
    declare(
        OpSpec(
            "dist.dispatch",
            Level.SYSTEM,
            Unit.HOST,
            given,
            attrs=callee,
            traits=(_HOST,),
            dsl="dispatch",
            signature="chip_orch(*args, device=r)",
            open=True,
            doc="run a chip orchestration on rank r (operand 0), with the rest as its arguments",
        )
    )
    declare(
        OpSpec(
            "dist.call_subworker",
            Level.SYSTEM,
            Unit.HOST,
            given,
            attrs=callee,
            traits=(_HOST,),
            dsl="call_subworker",
            signature="sub_worker(*args)",
            open=True,
            doc="call a HOST sub-worker (a host callback bound at run time)",
        )
    )
    _op(
        "dist.get_comm_ctx",
        Unit.SCALAR,
        get_comm_ctx,
        (Operand("dist_tensor", Role.TENSOR, effect=Effect.NONE),),
        (),
        (_BOTH,),
        "system.get_comm_ctx",
        "pld.system.get_comm_ctx(dist_tensor)",
        "the communication context of a window",
    )
    for name, doc in (("rank", "this rank's index, an INT32"), ("nranks", "the number of ranks, an INT32")):
        _op(
            f"dist.{name}",
            Unit.SCALAR,
            rank_query,
            (Operand("ctx", Role.HANDLE),),
            (),
            (_KERNEL,),
            f"system.{name}",
            f"pld.system.{name}(ctx)",
            doc,
        )
    _op(
        "dist.notify",
        Unit.VECTOR,
        notify,
        (Operand("target", Role.TENSOR, effect=Effect.NONE), peer, offsets, Operand("value", Role.SCALAR)),
        (Attr("op", NotifyOp, REQUIRED),),
        (_KERNEL, _AIV, Cost("comm")),
        "system.notify",
        "pld.system.notify(target, peer, offsets, value, *, op)",
        "deposit value into the peer's signal cell at offsets (add or set)",
    )
    wait_operands = (Operand("signal", Role.TENSOR), offsets, Operand("expected", Role.SCALAR))
    _op(
        "dist.wait",
        Unit.VECTOR,
        wait,
        wait_operands,
        (Attr("cmp", WaitCmp, WaitCmp.Ge),),
        (_KERNEL, _AIV, Cost("comm")),
        "system.wait",
        "pld.system.wait(signal, offsets, expected, *, cmp=pld.WaitCmp.Ge)",
        "block until this rank's signal cell satisfies cmp(expected)",
    )
    _op(
        "dist.defer_wait",
        Unit.VECTOR,
        defer_wait,
        wait_operands,
        (Attr("cmp", WaitCmp, WaitCmp.Ge),),
        (_KERNEL, _AIV, Cost("comm")),
        "system.defer_wait",
        "pld.system.defer_wait(signal, offsets, expected, *, cmp=pld.WaitCmp.Ge)",
        "complete the enclosing task only once the signal cell is >= expected",
    )
    _op(
        "dist.remote_load",
        Unit.MTE,
        remote_load,
        (
            Operand("target", Role.TENSOR, effect=Effect.NONE),
            peer,
            offsets,
            Operand("valid_shape", Role.VALID_SHAPE, optional=True),
        ),
        (Attr("shape", tuple, REQUIRED),),
        (_KERNEL, _AIV, Cost("comm"), PlacesTile(), FormatFree()),
        "tile.remote_load",
        "pld.tile.remote_load(target, peer, offsets, shape, valid_shape=None)",
        "a region of the peer's window read into a local tile",
    )
    atomic = Attr("atomic", AtomicType, AtomicType.NONE)
    _op(
        "dist.remote_store",
        Unit.MTE,
        remote_store,
        (
            Operand("src_tile", Role.TILE, (MemorySpace.Vec,)),
            Operand("target", Role.TENSOR, effect=Effect.NONE),
            peer,
            offsets,
        ),
        (atomic,),
        (_KERNEL, _AIV, Cost("comm"), FormatFree()),
        "tile.remote_store",
        "pld.tile.remote_store(src_tile, target, peer, offsets, *, atomic=pld.AtomicType.None_)",
        "a local tile written into the peer's window",
    )
    _op(
        "dist.tensor_remote_store",
        Unit.MTE,
        tensor_remote_store,
        (Operand("src", Role.TENSOR), Operand("target", Role.TENSOR, effect=Effect.NONE), peer, offsets),
        (atomic,),
        (_KERNEL, _AIV, Cost("comm"), FormatFree()),
        "tensor.remote_store",
        "pld.tensor.remote_store(src, target, peer, offsets, *, atomic=pld.AtomicType.None_)",
        "a local tensor written into the peer's window",
    )
    chunking = (Attr("chunk_rows", int, 0), Attr("chunk_cols", int, 0), Attr("pipeline", bool, False))
    region = (
        Operand("dst_offsets", Role.OFFSETS, optional=True),
        Operand("src_offsets", Role.OFFSETS, optional=True),
    )
    _op(
        "dist.put",
        Unit.MTE,
        put,
        (Operand("dst", Role.TENSOR, effect=Effect.NONE), peer, Operand("src", Role.TENSOR), *region),
        (Attr("shape", tuple), atomic, *chunking),
        (_KERNEL, _AIV, Cost("comm"), FormatFree()),
        "tensor.put",
        "pld.tensor.put(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, "
        "atomic=pld.AtomicType.None_, chunk_rows=0, chunk_cols=0, pipeline=False)",
        "write local src into the peer's window dst",
    )
    _op(
        "dist.get",
        Unit.MTE,
        get,
        (
            Operand("dst", Role.TENSOR, effect=Effect.WRITE),
            peer,
            Operand("src", Role.TENSOR, effect=Effect.NONE),
            *region,
        ),
        (Attr("shape", tuple), *chunking),
        (_KERNEL, _AIV, Cost("comm"), FormatFree()),
        "tensor.get",
        "pld.tensor.get(dst, peer, src, dst_offsets=None, src_offsets=None, shape=None, *, "
        "chunk_rows=0, chunk_cols=0, pipeline=False)",
        "read the peer's window src into local dst",
    )
    target = Operand("target", Role.TENSOR, effect=Effect.UPDATE)
    sig = Operand("signal", Role.TENSOR, effect=Effect.UPDATE)
    collective = (_BOTH, _AIV, Cost("comm"))
    _op(
        "dist.allreduce",
        Unit.VECTOR,
        allreduce,
        (target, Operand("signal", Role.TENSOR, optional=True, effect=Effect.UPDATE)),
        (
            Attr("op", ReduceOp, ReduceOp.Sum),
            Attr("mode", str, "mesh", choices=MODES),
            Attr("core_num", int, 1),
        ),
        collective,
        "tensor.allreduce",
        'pld.tensor.allreduce(target, signal=None, *, op=pld.ReduceOp.Sum, mode="mesh", core_num=1)',
        "every rank's target reduced over the ranks, in place",
    )
    _op(
        "dist.barrier",
        Unit.VECTOR,
        barrier,
        (sig,),
        (),
        collective,
        "tensor.barrier",
        "pld.tensor.barrier(signal)",
        "block until every rank arrives",
    )
    _op(
        "dist.broadcast",
        Unit.VECTOR,
        broadcast,
        (target, sig),
        (Attr("root", int, 0),),
        collective,
        "tensor.broadcast",
        "pld.tensor.broadcast(target, signal, *, root=0)",
        "the root's target on every rank",
    )
    _op(
        "dist.allgather",
        Unit.VECTOR,
        allgather,
        (Operand("local", Role.TENSOR), target, sig),
        (),
        collective,
        "tensor.allgather",
        "pld.tensor.allgather(local, target, signal)",
        "every rank's local chunk gathered into row r of every rank's target",
    )
    _op(
        "dist.reduce_scatter",
        Unit.VECTOR,
        reduce_scatter,
        (target, sig),
        (Attr("op", ReduceOp, ReduceOp.Sum),),
        collective,
        "tensor.reduce_scatter",
        "pld.tensor.reduce_scatter(target, signal, *, op=pld.ReduceOp.Sum)",
        "row r of the target summed over the ranks, on rank r",
    )
    _op(
        "dist.all_to_all",
        Unit.VECTOR,
        all_to_all,
        (Operand("input", Role.TENSOR), target, sig),
        (),
        collective,
        "tensor.all_to_all",
        "pld.tensor.all_to_all(input, target, signal)",
        "row d of each rank's input sent to rank d, landing in row r of its target",
    )


_declare()
