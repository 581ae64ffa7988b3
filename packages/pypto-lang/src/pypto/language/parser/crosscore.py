"""The builders of the cross-core and system ops whose call the specs alone do not settle.

The pipe ops take PyPTO's signatures: the two ring buffers of a setup positionally, a split as a
``pl.SplitMode`` or its integer code, a pop's type from the annotation of the name it is
assigned to. ``pl.aiv_shard`` / ``pl.aic_gather`` sit inside a ``pl.split_aiv`` region and split
as it does; ``pl.system.cacheinvalid`` has a whole-memory form and a region form, and
``pl.system.syncall`` checks its core type while parsing (the op table's type rule checks the
modes and the workspace at the user's line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypto.ir import DataType, Expr, PipeType, SplitMode, TensorType, Var, get_op
from pypto.ir.ops import split_axis, system
from pypto.ir.ops import tile as tile_ops
from pypto.language.dslops import hand_built
from pypto.language.parser.arith import scalar_binary
from pypto.language.parser.convert import compile_time, enum_member, split_mode
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.regions import Region
from pypto.language.parser.transfers import build_load, offset_sum, tensor_origin
from pypto.language.parser.values import describe_value, index_tuple, is_number, number, static_shape


def _region(ctx: OpContext, what: str) -> Region:
    """The ``pl.split_aiv`` region ``what`` is written in: a boundary op names a tile crossing a
    region's edge, so it belongs inside one. A function written per lane (``split_aiv`` in its
    attributes, as the compiler prints a split kernel) is one region of its ``split`` mode."""
    regions = ctx.body.regions
    region = regions.current if regions is not None else None
    if region is None and ctx.body.per_lane:
        return Region(ctx.body.function_split or SplitMode.NONE)
    if region is None:
        fix = (
            "x_v = pl.aiv_shard(x) at the top of the region, for a cube value the lanes read"
            if what == "pl.aiv_shard"
            else "v_c = pl.aic_gather(v) inside the region, for a lane value the cube reads after it"
        )
        raise ctx.fail(
            "outside every pl.split_aiv region: it names a tile crossing a region's edge, so it is "
            "written inside the region",
            f"write it inside `for aiv_id in pl.split_aiv(2, mode=...)`: {fix}; or drop the regions "
            "and let pl.split(...) insert the transfers",
        )
    return region


def _region_split(ctx: OpContext, region: Region, split: Any) -> SplitMode:
    """A boundary op's split: its region's mode (a ``split=`` naming another is an error)."""
    if split is None:
        return region.mode
    mode = split_mode(ctx, split)
    if mode is not region.mode:
        raise ctx.fail(
            f"split={mode.name} in a region of mode={region.mode.name}",
            "leave split= out: a boundary op splits as its region does",
        )
    return mode


@hand_built(tile_ops.aiv_shard)
def build_aiv_shard(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """The lane's share of a cube value (a tile of the cube's), read inside a region: halved along
    the region's split axis, whole under ``NONE``. Of a tensor (or a region of one), each lane
    loads its share straight from global memory: along the split axis lane 0 the first
    ``ceil(L/2)``, lane 1 the rest (a load with a valid shape when ``L`` is odd)."""
    region = _region(ctx, "pl.aiv_shard")
    mode = _region_split(ctx, region, split)
    if isinstance(tile, Expr) and isinstance(tile.type, TensorType):
        if region.lane is None:
            raise ctx.fail(
                "shards a tensor outside a pl.split_aiv region, where no lane index names the share",
                "load the lane's share yourself: pl.load(x, [pl.get_subblock_idx() * half, 0], ...)",
            )
        base, origin, shape = _tensor_region(ctx, tile)
        axis = split_axis(mode)
        if axis is None:
            return build_load(ctx, base, list(origin), list(shape))
        return _lane_share_load(ctx, base, origin, shape, axis, region.lane)
    return ctx.call(tile_ops.aiv_shard, [ctx.tile(tile, "the sharded value")], {"split": mode})


def _tensor_region(ctx: OpContext, tensor: Expr) -> tuple[Expr, tuple[Any, ...], tuple[int, ...]]:
    """The tensor a region is of, the region's offsets in it, and its static shape."""
    base, origin = tensor_origin(ctx, tensor)
    shape = tuple(tensor.type.shape)  # type: ignore[attr-defined]
    if any(not isinstance(n, int) for n in shape):
        raise ctx.fail(
            f"shards a tensor of dynamic shape {list(shape)}",
            "shard a region of static shape, e.g. pl.aiv_shard(x[r0:r0 + 64, :])",
        )
    return base, origin, shape


def _lane_share_load(
    ctx: OpContext, base: Expr, origin: tuple[Any, ...], shape: tuple[int, ...], axis: int, lane: Var
) -> Expr:
    """Lane ``lane``'s share along ``axis``: ``ceil(L/2)`` rows (or columns) from ``lane * ceil(L/2)``."""
    extent = shape[axis]
    half = -(-extent // 2)
    share = list(shape)
    share[axis] = half
    offsets = list(origin)
    offsets[axis] = offset_sum(ctx, origin[axis], scalar_binary(ctx, "mul", lane, half))
    if extent == 2 * half:
        return build_load(ctx, base, offsets, share)
    valid = list(shape)
    valid[axis] = scalar_binary(ctx, "sub", half, lane)  # lane 1 holds one less of an odd extent
    return build_load(ctx, base, offsets, share, valid_shape=valid)


@hand_built(tile_ops.aic_gather)
def build_aic_gather(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """The lanes' shares of a value joined into one tile the cube reads after the region (Mat)."""
    region = _region(ctx, "pl.aic_gather")
    mode = _region_split(ctx, region, split)
    return ctx.call(tile_ops.aic_gather, [ctx.tile(tile, "the gathered value")], {"split": mode})


def _pipe_id(ctx: OpContext, id: Any) -> dict[str, Any]:
    return {} if id is None else {"id": compile_time(ctx, id, "id=")}


def _lane_stride(ctx: OpContext, lane_stride: Any) -> dict[str, Any]:
    if lane_stride is None:
        return {}
    return {"lane_stride": compile_time(ctx, lane_stride, "lane_stride=")}


def _push(ctx: OpContext, op: str, tile: Any, split: Any, extra: dict[str, Any]) -> None:
    """Push ``tile`` into the pipe; a partial tile's run-time valid shape goes with it (a
    constant one is in its type), so the consumer's ``valid_shape=`` pop can be checked."""
    value = ctx.tile(tile, "the pushed value")
    attrs: dict[str, Any] = {"split": split_mode(ctx, split), **extra}
    valid = ctx.valid_of(value)
    return ctx.effect(op, [value] if valid is None else [value, valid], attrs, None)


@hand_built(tile_ops.tpush_to_aiv)
def build_push_to_aiv(
    ctx: OpContext, tile: Any, *, split: Any = SplitMode.NONE, lane_stride: Any = None, id: Any = None
) -> None:
    """``pl.tpush_to_aiv(tile, split=..., lane_stride=None, id=None)``: the cube sends a tile to
    the lanes (each lane receives its share under a split)."""
    extra = {**_lane_stride(ctx, lane_stride), **_pipe_id(ctx, id)}
    return _push(ctx, tile_ops.tpush_to_aiv, tile, split, extra)


@hand_built(tile_ops.tpush_to_aic)
def build_push_to_aic(ctx: OpContext, tile: Any, *, split: Any = SplitMode.NONE, id: Any = None) -> None:
    """``pl.tpush_to_aic(tile, split=..., id=None)``: a lane sends its tile (its share) to the cube."""
    return _push(ctx, tile_ops.tpush_to_aic, tile, split, _pipe_id(ctx, id))


def _pop(
    ctx: OpContext, op: str, shape: Any, dtype: Any, split: Any, valid_shape: Any, extra: dict[str, Any]
) -> Any:
    """The next tile of the pipe. Without ``shape=`` / ``dtype=`` the tile is the one the
    assignment's annotation names (``t: pl.Tile[[64, 128], pl.FP32] = pl.tpop_from_aic(split=1)``)."""
    annotated = ctx.body.annotation
    if shape is None and annotated is not None:
        shape = list(annotated.shape)
    if dtype is None and annotated is not None:
        dtype = annotated.dtype
    if shape is None or dtype is None:
        missing = " and ".join(n for n, v in (("shape=", shape), ("dtype=", dtype)) if v is None)
        raise ctx.fail(
            f"needs {missing} of the tile it pops, or an annotated assignment that names its type",
            f"write t: pl.Tile[[64, 128], pl.FP32] = {ctx.name}(split=...), or pass "
            "shape=[64, 128], dtype=pl.FP32",
        )
    attrs: dict[str, Any] = {
        "shape": static_shape(shape, ctx.span),
        "dtype": enum_member(ctx, DataType, "dtype", dtype),
        "split": split_mode(ctx, split),
        **extra,
    }
    args = [] if valid_shape is None else [index_tuple(valid_shape, ctx.span, "valid_shape")]
    return ctx.call(op, args, attrs)


@hand_built(tile_ops.tpop_from_aic)
def build_pop_from_aic(
    ctx: OpContext,
    *,
    shape: Any = None,
    dtype: Any = None,
    split: Any = SplitMode.NONE,
    lane_stride: Any = None,
    id: Any = None,
    valid_shape: Any = None,
) -> Any:
    """``t = pl.tpop_from_aic(shape=None, dtype=None, split=0, lane_stride=None, id=None)``: a lane
    receives the cube's next tile (its share under a split), in its ring slot until ``tfree``."""
    extra = {**_lane_stride(ctx, lane_stride), **_pipe_id(ctx, id)}
    return _pop(ctx, tile_ops.tpop_from_aic, shape, dtype, split, valid_shape, extra)


@hand_built(tile_ops.tpop_from_aiv)
def build_pop_from_aiv(
    ctx: OpContext,
    *,
    shape: Any = None,
    dtype: Any = None,
    split: Any = SplitMode.NONE,
    id: Any = None,
    valid_shape: Any = None,
) -> Any:
    """``t = pl.tpop_from_aiv(shape=None, dtype=None, split=0, id=None)``: the cube receives the
    lanes' next tile (their shares joined under a split), in its ring slot until ``tfree``."""
    return _pop(ctx, tile_ops.tpop_from_aiv, shape, dtype, split, valid_shape, _pipe_id(ctx, id))


@hand_built(system.tfree_to_aic, system.tfree_to_aiv)
def build_free(ctx: OpContext, tile: Any, *, split: Any = None, id: Any = None) -> None:
    """``pl.tfree_to_aic(t, split=None, id=None)``: the popped tile's slot goes back to the
    producer (without ``split=``, the compiler stamps the pop's)."""
    op = system.tfree_to_aic if ctx.builtin == "tfree_to_aic" else system.tfree_to_aiv
    attrs: dict[str, Any] = {} if split is None else {"split": split_mode(ctx, split)}
    attrs.update(_pipe_id(ctx, id))
    return ctx.effect(op, [ctx.tile(tile, "the freed tile")], attrs, None)


def _ring_buffer(ctx: OpContext, value: Any, name: str) -> dict[str, Any]:
    """A pipe setup's ring buffer for one direction: a ``pl.reserve_buffer`` /
    ``pl.import_peer_buffer`` result (the buffer's name), 0 for none (a direction the setup does
    not use, or a ring the compiler places), or the byte address of the ring in the consumer's
    memory."""
    if isinstance(value, BufferRef):
        return {name: value.name}
    if isinstance(value, str) and value.isidentifier():
        return {name: value}  # the buffer by its name, as printed IR writes it
    plain = number(value) if is_number(value) else value
    is_int = isinstance(plain, int) and not isinstance(plain, bool)
    if plain is None or (is_int and plain == 0):
        return {}
    if is_int and plain > 0:
        return {name.replace("_buf", "_base"): plain}
    raise ctx.fail(
        f"{name} takes a pl.reserve_buffer / pl.import_peer_buffer result, 0, or a byte address, "
        f"got {describe_value(value)}",
        f"write buf = pl.reserve_buffer(name=..., size=...) and pass it: {ctx.name}(buf, 0, dir_mask=1, "
        "slot_size=...) (c2v_consumer_buf first, then v2c_consumer_buf)",
    )


def _init(ctx: OpContext, op: str, c2v: Any, v2c: Any, options: dict[str, Any]) -> None:
    attrs = {k: compile_time(ctx, v, f"{k}=") for k, v in options.items() if v is not None}
    attrs.update(_ring_buffer(ctx, c2v, "c2v_consumer_buf"))
    attrs.update(_ring_buffer(ctx, v2c, "v2c_consumer_buf"))
    return ctx.effect(op, [], attrs, None)


@hand_built(system.aic_initialize_pipe)
def build_aic_init(
    ctx: OpContext,
    c2v_consumer_buf: Any = 0,
    v2c_consumer_buf: Any = 0,
    *,
    dir_mask: Any,
    slot_size: Any,
    slot_num: Any = None,
    local_slot_num: Any = None,
    id: Any = None,
) -> None:
    """``pl.aic_initialize_pipe(c2v_consumer_buf=0, v2c_consumer_buf=0, *, dir_mask, slot_size,
    slot_num=None, local_slot_num=None, id=None)``: the cube's side of the core group's pipes."""
    options = {"dir_mask": dir_mask, "slot_size": slot_size, "slot_num": slot_num}
    options.update(local_slot_num=local_slot_num, id=id)
    return _init(ctx, system.aic_initialize_pipe, c2v_consumer_buf, v2c_consumer_buf, options)


@hand_built(system.aiv_initialize_pipe)
def build_aiv_init(
    ctx: OpContext,
    c2v_consumer_buf: Any = 0,
    v2c_consumer_buf: Any = 0,
    *,
    dir_mask: Any,
    slot_size: Any,
    slot_num: Any = None,
    local_slot_num: Any = None,
    id: Any = None,
) -> None:
    """``pl.aiv_initialize_pipe(...)``: the lanes' side of the core group's pipes (as the cube's)."""
    options = {"dir_mask": dir_mask, "slot_size": slot_size, "slot_num": slot_num}
    options.update(local_slot_num=local_slot_num, id=id)
    return _init(ctx, system.aiv_initialize_pipe, c2v_consumer_buf, v2c_consumer_buf, options)


@dataclass(frozen=True)
class BufferRef:
    """What ``buf = pl.reserve_buffer(...)`` / ``pl.import_peer_buffer(...)`` binds: a parse-time
    handle naming a pipe ring's buffer. Passed as ``c2v_consumer_buf=buf``, it becomes the
    buffer's name in the pipe setup's attributes (the printed form writes the name)."""

    name: str
    imported: bool


@hand_built(system.reserve_buffer)
def build_reserve_buffer(ctx: OpContext, *, name: Any, size: Any, base: Any = None) -> BufferRef:
    """Reserve ``size`` bytes of this kernel's ring memory at ``base`` (None: packed)."""
    attrs = {"name": compile_time(ctx, name, "name="), "size": compile_time(ctx, size, "size=")}
    if base is not None:
        attrs["base"] = compile_time(ctx, base, "base=")
    return ctx.effect(system.reserve_buffer, [], attrs, BufferRef(attrs["name"], imported=False))


@hand_built(system.import_peer_buffer)
def build_import_peer_buffer(ctx: OpContext, *, name: Any, peer_func: Any = None) -> BufferRef:
    """The buffer the peer kernel (``peer_func``: its name or the function) reserves as ``name``."""
    attrs = {"name": compile_time(ctx, name, "name=")}
    if peer_func is not None:
        peer = compile_time(ctx, peer_func, "peer_func=")
        attrs["peer_func"] = peer if isinstance(peer, str) else getattr(peer, "name", peer)
    return ctx.effect(system.import_peer_buffer, [], attrs, BufferRef(attrs["name"], imported=True))


@hand_built(system.cacheinvalid)
def build_cacheinvalid(ctx: OpContext, tensor: Any = None, offsets: Any = None, shape: Any = None) -> None:
    """``cacheinvalid()``: all of global memory; ``cacheinvalid(t, [offsets], [shape])``: one region."""
    if tensor is None and offsets is None and shape is None:
        return ctx.effect(system.cacheinvalid, [], None, None)
    if tensor is None or offsets is None or shape is None:
        raise ctx.fail(
            "the region form takes a tensor, its offsets and the region's shape",
            "write pl.system.cacheinvalid() for all of global memory, or "
            "pl.system.cacheinvalid(t, [0, 0], [1, 64]) for one region",
        )
    t = ctx.tensor(tensor, "the invalidated value")
    starts = index_tuple(offsets, ctx.span)
    extent = static_shape(shape, ctx.span)
    rank = len(t.type.shape)  # type: ignore[attr-defined]
    if len(starts.elements) != rank or len(extent) != rank:
        raise ctx.fail(
            f"offsets and shape must each hold {rank} entries, one per dim of {describe_value(t)}",
            f"e.g. pl.system.cacheinvalid(t, {[0] * rank}, {list(t.type.shape)}) for all of it",  # type: ignore[attr-defined]
        )
    return ctx.effect(system.cacheinvalid, [t, starts], {"shape": extent}, None)


@hand_built(system.syncall)
def build_syncall(
    ctx: OpContext,
    core_type: Any = None,
    mode: Any = "hard",
    gm_workspace: Any = None,
    used_cores: Any = None,
) -> None:
    """A barrier; ``mode="soft"`` also needs ``gm_workspace=`` and ``used_cores=`` (the op table checks)."""
    core_type = compile_time(ctx, core_type, "core_type=")
    schema = get_op(system.syncall).attr("core_type")
    if schema is not None and not schema.accepts(core_type):
        raise ctx.fail(
            'core_type must be "aic", "aiv" or "mix" (or "aic_only" / "aiv_only"), '
            f"got {describe_value(core_type)}",
            'leave core_type out to count every core of the launch, like "mix"',
        )
    attrs: dict[str, Any] = {} if core_type is None else {"core_type": core_type}
    attrs["mode"] = compile_time(ctx, mode, "mode=")
    if used_cores is not None:
        attrs["used_cores"] = compile_time(ctx, used_cores, "used_cores=")
    args = [] if gm_workspace is None else [ctx.tensor(gm_workspace, "gm_workspace")]
    return ctx.effect(system.syncall, args, attrs, None)


def _event_attrs(
    ctx: OpContext, event_id: Any, dynamic: Any, pipe: Any, core_type: Any
) -> tuple[list[Any], dict[str, Any]]:
    """An event op's operands and attrs: the id as the ``event_id`` attr when it is known at
    compile time, else a run-time INDEX operand (``event_id_dyn=`` as the printer writes it); the
    pipe; the core type in a mixed kernel."""
    if (event_id is None) == (dynamic is None):
        raise ctx.fail(
            "takes one event id" if event_id is None else "takes event_id or event_id_dyn=, not both",
            "write pl.system.sync_set(0, pipe=pl.PipeType.MTE3) with an id in 0..13",
        )
    event_id = dynamic if event_id is None else event_id
    attrs: dict[str, Any] = {"pipe": enum_member(ctx, PipeType, "pipe", pipe)}
    core_type = compile_time(ctx, core_type, "core_type=")
    if core_type is not None:
        if core_type not in ("aic", "aiv"):
            raise ctx.fail(
                f'core_type must be "aic" or "aiv", got {describe_value(core_type)}',
                "name the core type that runs the event op in a mixed kernel; leave it out in an AIC "
                "or AIV function",
            )
        attrs["core_type"] = core_type
    if is_number(event_id):
        attrs["event_id"] = number(event_id)
        return [], attrs
    if not isinstance(event_id, Expr):
        raise ctx.fail(
            f"event_id must be an int in 0..13 or an INDEX scalar, got {describe_value(event_id)}",
            "pair each pl.system.sync_set with a pl.system.sync_wait of the same event id in 0..13",
        )
    return [event_id], attrs


@hand_built(system.sync_set)
def build_sync_set(
    ctx: OpContext,
    event_id: Any = None,
    pipe: Any = PipeType.ALL,
    ffts_mode: Any = None,
    core_type: Any = None,
    event_id_dyn: Any = None,
) -> None:
    """``pl.system.sync_set(event_id, pipe=..., ffts_mode=None, core_type=None)``."""
    args, attrs = _event_attrs(ctx, event_id, event_id_dyn, pipe, core_type)
    if ffts_mode is not None:
        attrs["ffts_mode"] = compile_time(ctx, ffts_mode, "ffts_mode=")
    return ctx.effect(system.sync_set, args, attrs, None)


@hand_built(system.sync_wait)
def build_sync_wait(
    ctx: OpContext,
    event_id: Any = None,
    pipe: Any = PipeType.ALL,
    core_type: Any = None,
    event_id_dyn: Any = None,
) -> None:
    """``pl.system.sync_wait(event_id, pipe=..., core_type=None)``."""
    args, attrs = _event_attrs(ctx, event_id, event_id_dyn, pipe, core_type)
    return ctx.effect(system.sync_wait, args, attrs, None)
