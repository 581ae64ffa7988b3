"""The builders of the cross-core and system ops whose call the specs alone do not settle.

The pipe ops, lane indices and ``pl.system.fence`` bind generically (:mod:`.ops`). These four
do not: ``pl.aiv_shard`` / ``pl.aic_gather`` default their split to the mode of the region next to
them, ``pl.system.cacheinvalid`` has a whole-memory form and a region form, and
``pl.system.syncall`` checks its core type while parsing (the op table's type rule checks the
modes and the workspace at the user's line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pypto.ir import Call, Const, Expr, SourceSpan, SplitMode, TensorType, TupleExpr, Var, get_op
from pypto.ir.ops import op, split_axis, system
from pypto.ir.ops import tensor as tensor_ops
from pypto.language.dslops import hand_built
from pypto.language.parser.arith import scalar_binary
from pypto.language.parser.convert import compile_time, enum_member
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.transfers import build_load
from pypto.language.parser.values import describe_value, index_tuple, static_shape


@hand_built(op.aiv_shard)
def build_aiv_shard(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """Without ``split=``, the mode of the region that follows in the scope (else NONE). Of a
    tensor (or a region of one), each lane loads its share itself: see :class:`TensorShard`."""
    regions = ctx.body.regions
    if split is None:
        split = regions.next_mode() if regions is not None else SplitMode.NONE
    mode = enum_member(ctx, SplitMode, "split", split)
    if isinstance(tile, Expr) and isinstance(tile.type, TensorType):
        shard = TensorShard(tile, mode, ctx.span)
        if regions is not None and regions.auto_split is not None:
            return shard.whole(ctx)  # pl.split halves the Vec load: each lane loads its share
        return shard
    return ctx.call(op.aiv_shard, [ctx.tile(tile, "the sharded value")], {"split": mode})


@dataclass(frozen=True)
class TensorShard:
    """What ``xs = pl.aiv_shard(x)`` binds when ``x`` is a tensor or a region of one: a parse-time
    handle, no data movement. Read inside a ``pl.split_aiv`` region, ``xs`` is a Vec load of the
    lane's share of ``x`` straight from global memory: along the split axis lane 0 the first
    ``ceil(L/2)``, lane 1 the rest (a load with a valid shape when ``L`` is odd); under
    ``SplitMode.NONE`` each lane loads all of it."""

    tensor: Expr
    mode: SplitMode
    span: SourceSpan | None

    def load(self, ctx: OpContext, name: str) -> Expr:
        """The lane's share of the tensor region, loaded where ``name`` is read."""
        regions = ctx.body.regions
        region = regions.current if regions is not None else None
        if region is None or region.lane is None:
            raise ctx.fail(
                f"'{name}' is a pl.aiv_shard of a tensor: each AIV lane's share, which exists inside a "
                "pl.split_aiv region",
                f"read '{name}' inside `for lane in pl.split_aiv(2, mode=...)`, or pl.load the tensor",
            )
        if region.mode is not self.mode:
            raise ctx.fail(
                f"'{name}' shards its tensor with split={self.mode.name}, but this region is "
                f"split={region.mode.name}",
                f"give pl.aiv_shard split=pl.SplitMode.{region.mode.name}, "
                "or read it in a region of its mode",
            )
        base, origin, shape = self.region(ctx)
        axis = split_axis(self.mode)
        if axis is None:
            return build_load(ctx, base, list(origin), list(shape))
        return _lane_share_load(ctx, base, origin, shape, axis, region.lane)

    def whole(self, ctx: OpContext) -> Expr:
        """A Vec load of the whole region (in a ``pl.split`` scope, which halves it per lane)."""
        base, origin, shape = self.region(ctx)
        return build_load(ctx, base, list(origin), list(shape))

    def region(self, ctx: OpContext) -> tuple[Expr, tuple[Any, ...], tuple[int, ...]]:
        """The tensor the region is of, the region's offsets in it, and its static shape."""
        base, origin = _tensor_origin(ctx, self.tensor)
        shape = tuple(self.tensor.type.shape)  # type: ignore[attr-defined]
        if any(not isinstance(n, int) for n in shape):
            raise ctx.fail(
                f"shards a tensor of dynamic shape {list(shape)}",
                "shard a region of static shape, e.g. pl.aiv_shard(x[r0:r0 + 64, :])",
            )
        return base, origin, shape


def _tensor_origin(ctx: OpContext, tensor: Expr) -> tuple[Expr, tuple[Any, ...]]:
    """The tensor a region is of and the region's offsets in it (a plain tensor: its origin)."""
    if isinstance(tensor, Call) and tensor.op == tensor_ops.slice:
        offsets = tensor.args[1]
        assert isinstance(offsets, TupleExpr)
        inner, outer = _tensor_origin(ctx, tensor.args[0])
        return inner, tuple(_plus(ctx, a, b) for a, b in zip(outer, offsets.elements, strict=True))
    rank = len(tensor.type.shape)  # type: ignore[attr-defined]
    return tensor, tuple(0 for _ in range(rank))


def _plus(ctx: OpContext, a: Any, b: Any) -> Any:
    """``a + b`` of two offsets, a zero offset dropped."""
    if _is_zero(a):
        return b
    return a if _is_zero(b) else scalar_binary(ctx, "add", a, b)


def _is_zero(e: Any) -> bool:
    return (isinstance(e, int) and e == 0) or (isinstance(e, Const) and e.value == 0)


def _lane_share_load(
    ctx: OpContext, base: Expr, origin: tuple[Any, ...], shape: tuple[int, ...], axis: int, lane: Var
) -> Expr:
    """Lane ``lane``'s share along ``axis``: ``ceil(L/2)`` rows (or columns) from ``lane * ceil(L/2)``."""
    extent = shape[axis]
    half = -(-extent // 2)
    share = list(shape)
    share[axis] = half
    offsets = list(origin)
    offsets[axis] = _plus(ctx, origin[axis], scalar_binary(ctx, "mul", lane, half))
    if extent == 2 * half:
        return build_load(ctx, base, offsets, share)
    valid = list(shape)
    valid[axis] = scalar_binary(ctx, "sub", half, lane)  # lane 1 holds one less of an odd extent
    return build_load(ctx, base, offsets, share, valid_shape=valid)


@hand_built(op.aic_gather)
def build_aic_gather(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """Without ``split=``, the mode of the region parsed last in the scope (else NONE)."""
    regions = ctx.body.regions
    if split is None:
        split = regions.previous_mode() if regions is not None else SplitMode.NONE
    mode = enum_member(ctx, SplitMode, "split", split)
    return ctx.call(op.aic_gather, [ctx.tile(tile, "the gathered value")], {"split": mode})


@hand_built(op.tpush_to_aiv, op.tpush_to_aic)
def build_push(ctx: OpContext, tile: Any, split: Any = SplitMode.NONE, id: Any = None) -> None:
    """Push ``tile`` into the pipe; a partial tile's run-time valid shape goes with it (a
    constant one is in its type), so the consumer's ``valid_shape=`` pop can be checked."""
    name = ctx.builtin
    assert name in (op.tpush_to_aiv, op.tpush_to_aic)
    value = ctx.tile(tile, "the pushed value")
    attrs: dict[str, Any] = {"split": enum_member(ctx, SplitMode, "split", split)}
    if id is not None:
        attrs["id"] = compile_time(ctx, id, "id=")
    valid = ctx.valid_of(value)
    return ctx.effect(name, [value] if valid is None else [value, valid], attrs, None)


@dataclass(frozen=True)
class BufferRef:
    """What ``buf = pl.reserve_buffer(...)`` / ``pl.import_peer_buffer(...)`` binds: a parse-time
    handle naming a pipe ring's buffer. Passed as ``c2v_consumer_buf=buf``, it becomes the
    buffer's name in the pipe setup's attributes (the printed form writes the name)."""

    name: str
    imported: bool


@hand_built(op.reserve_buffer)
def build_reserve_buffer(ctx: OpContext, *, name: Any, size: Any, base: Any = None) -> BufferRef:
    """Reserve ``size`` bytes of this kernel's ring memory at ``base`` (None: packed)."""
    attrs = {"name": compile_time(ctx, name, "name="), "size": compile_time(ctx, size, "size=")}
    if base is not None:
        attrs["base"] = compile_time(ctx, base, "base=")
    return ctx.effect(op.reserve_buffer, [], attrs, BufferRef(attrs["name"], imported=False))


@hand_built(op.import_peer_buffer)
def build_import_peer_buffer(ctx: OpContext, *, name: Any, peer_func: Any = None) -> BufferRef:
    """The buffer the peer kernel (``peer_func``: its name or the function) reserves as ``name``."""
    attrs = {"name": compile_time(ctx, name, "name=")}
    if peer_func is not None:
        peer = compile_time(ctx, peer_func, "peer_func=")
        attrs["peer_func"] = peer if isinstance(peer, str) else getattr(peer, "name", peer)
    return ctx.effect(op.import_peer_buffer, [], attrs, BufferRef(attrs["name"], imported=True))


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
