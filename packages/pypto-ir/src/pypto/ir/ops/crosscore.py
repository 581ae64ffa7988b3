"""Cross-core ops: the pipes between a core group's cube and its vector lanes (init, push, pop,
free), the automatic shard and gather of a mixed region, and the lane index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Const, Expr, SplitMode, TupleExpr
from pypto.ir.ops.rules import check_offsets, fail, index_result
from pypto.ir.ops.spec import (
    OPS,
    REQUIRED,
    Attr,
    Boundary,
    Cost,
    Effect,
    InPipeSlot,
    Level,
    OnSide,
    Operand,
    OpSpec,
    PipeAction,
    PipeDirection,
    PipeEnd,
    Role,
    SetsValid,
    Side,
    Unit,
    declare,
)
from pypto.ir.types import UNIT, MemorySpace, TileType, Type, describe

# The memory space a popped tile lands in on each side.
RECEIVES = {Side.VECTOR: MemorySpace.Vec, Side.CUBE: MemorySpace.Mat}

# Spaces a crossing tile may come from on each side.
CUBE_OUT = (MemorySpace.Acc, MemorySpace.Mat)


def is_crossing_op(op: str) -> bool:
    """Whether ``op`` moves a tile between the cube and the lanes: a shard or a gather, or a
    push or a pop of a pipe."""
    spec = OPS.get(op)
    if spec is None:
        return False
    end = spec.trait(PipeEnd)
    return spec.has(Boundary) or (end is not None and end.action in (PipeAction.PUSH, PipeAction.POP))


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


def pipe_init(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    mask, size, num = attrs.get("dir_mask"), attrs.get("slot_size"), attrs.get("slot_num")
    if isinstance(mask, bool) or mask not in (1, 2, 3):
        raise fail(
            op,
            f"dir_mask must be 1 (cube->vector), 2 (vector->cube) or 3 (both), got {mask!r}",
            span,
            "write dir_mask=3 when tiles cross both ways, else 1 or 2; give both sides the same value",
        )
    for name, value in (
        ("slot_size", size),
        ("slot_num", num),
        ("local_slot_num", attrs.get("local_slot_num")),
    ):
        if value is None and name != "slot_size":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise fail(
                op,
                f"{name} must be a positive int, got {value!r}",
                span,
                advice="pipe.slot_option",
                name=name,
            )
    local = attrs.get("local_slot_num")
    if local is not None and num is not None and local > num:
        raise fail(
            op,
            f"local_slot_num={local} exceeds slot_num={num}",
            span,
            "local_slot_num counts the slots the consumer holds locally: at most slot_num",
        )
    for name in ("c2v_consumer_base", "v2c_consumer_base"):
        base = attrs.get(name)
        if base is not None and (not isinstance(base, int) or isinstance(base, bool) or base < 0):
            raise fail(op, f"{name} must be a byte address >= 0, got {base!r}", span, "pass 0 for none")
    pipe_id = attrs.get("id")
    if pipe_id is not None and (not isinstance(pipe_id, int) or isinstance(pipe_id, bool) or pipe_id < 0):
        raise fail(
            op, f"id must be an int >= 0, got {pipe_id!r}", span, "number a core group's pipes 0, 1, ..."
        )
    return UNIT


def reserve(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A named window of the consumer's ring memory: ``size`` bytes at ``base`` (None: packed
    above the kernel's other reserved buffers)."""
    op = spec.name
    size, base = attrs.get("size"), attrs.get("base")
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise fail(
            op, f"size must be a positive int (bytes), got {size!r}", span, "write size=slot_num * slot_size"
        )
    if base is not None and (not isinstance(base, int) or isinstance(base, bool) or base < 0):
        raise fail(
            op,
            f"base must be a byte offset >= 0, got {base!r}",
            span,
            "leave base out to place the buffer above the kernel's other reserved buffers",
        )
    _check_buffer_name(op, attrs.get("name"), span)
    return UNIT


def import_peer(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """The producer's handle on the buffer its peer kernel reserves under ``name``."""
    _check_buffer_name(spec.name, attrs.get("name"), span)
    return UNIT


def _check_buffer_name(op: str, name: Any, span: SourceSpan | None) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise fail(op, f"name must be an identifier string, got {name!r}", span, 'write name="c2v_ring"')


def tile_arg(op: str, e: Expr, spaces: tuple[MemorySpace, ...], span: SourceSpan | None) -> TileType:
    t = e.type
    if not isinstance(t, TileType):
        raise fail(op, f"takes a tile, got {describe(t)}", span, advice="pipe.needs_tile", op=op)
    if t.memory_space is not None and t.memory_space not in spaces:
        names = " or ".join(s.name for s in spaces)
        raise fail(op, f"takes a tile in {names}, got {describe(t)}", span, advice="pipe.tile_space", op=op)
    return t


def push(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    tile_arg(op, args[0], spec.operands[0].spaces or (), span)
    return UNIT


def pop(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    shape, dtype = attrs.get("shape"), attrs.get("dtype")
    if not shape or not isinstance(dtype, DataType):
        raise fail(
            op,
            "needs shape=[...] and dtype= of the tile it pops",
            span,
            advice="pipe.pop_needs_shape",
            op=op,
        )
    end = spec.trait(PipeEnd)
    assert end is not None
    popped = TileType(tuple(shape), dtype, RECEIVES[end.side])
    if not args:
        return popped
    return TileType(
        popped.shape, dtype, popped.memory_space, _declared_valid(op, args[0], popped.shape, span)
    )


def _declared_valid(
    op: str, valid: Expr, shape: tuple[int, ...], span: SourceSpan | None
) -> tuple[int, ...] | None:
    """The constant valid shape a pop declares (None: one known only at run time, or the whole
    tile); each constant entry lies in the popped tile."""
    check_offsets(op, valid, len(shape), span, "valid_shape")
    assert isinstance(valid, TupleExpr)
    sizes = [e.value if isinstance(e, Const) else None for e in valid.elements]
    for dim, size in enumerate(sizes):
        if size is not None and not 0 <= size <= shape[dim]:
            raise fail(
                op,
                f"valid extent {size} of dim {dim} is outside the popped tile's 0..{shape[dim]}",
                span,
                "the valid region is part of the popped tile: each extent lies between 0 and the tile's",
            )
    if None in sizes or tuple(sizes) == shape:
        return None
    return tuple(int(n) for n in sizes)  # type: ignore[arg-type]


def free(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    tile_arg(op, args[0], spec.operands[0].spaces or (), span)
    return UNIT


def shard(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    t = tile_arg(op, args[0], CUBE_OUT, span)
    mode = attrs.get("split")
    axis = split_axis(mode)
    if axis is not None and (axis >= len(t.shape) or t.shape[axis] < 2):
        raise fail(
            op,
            f"cannot halve {describe(t)} along dim {axis} for {mode!r}",
            span,
            advice="shard.cannot_halve",
        )
    return TileType(split_shape(t.shape, mode), t.dtype, MemorySpace.Vec)


def gather(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    t = tile_arg(op, args[0], (MemorySpace.Vec,), span)
    axis = split_axis(attrs.get("split"))
    shape = list(t.shape)
    if axis is not None:
        shape[axis] *= 2
    return TileType(tuple(shape), t.dtype, MemorySpace.Mat)


# ---------------------------------------------------------------- declarations

_SPLIT = Attr("split", SplitMode)
_ID = Attr("id", int)  # which of the core group's pipes in that direction (absent: 0)
# The rows (columns) of the split axis each lane owns, when not half the box: lane L holds
# [L * lane_stride, L * lane_stride + lane_stride) (a ragged tile balanced between the lanes).
_LANE_STRIDE = Attr("lane_stride", int)


def _declare() -> None:
    cube, vec = Side.CUBE, Side.VECTOR
    b = Unit.BOUNDARY
    init_attrs = (
        Attr("dir_mask", int, REQUIRED),
        Attr("slot_size", int, REQUIRED),
        Attr("slot_num", int),
        # The reserved buffer each direction's ring lives in (the name of a pl.reserve_buffer /
        # pl.import_peer_buffer), which of the core group's pipes this is, and the ring's depth
        # when the buffer holds more slots than the pipe uses.
        Attr("c2v_consumer_buf", str),
        Attr("v2c_consumer_buf", str),
        Attr("id", int),
        Attr("local_slot_num", int),
        # A ring the setup places at a byte address of the consumer's memory (PyPTO's integer
        # c2v_consumer_buf / v2c_consumer_buf operands).
        Attr("c2v_consumer_base", int),
        Attr("v2c_consumer_base", int),
    )
    for name, side in (("aic_initialize_pipe", cube), ("aiv_initialize_pipe", vec)):
        declare(
            OpSpec(
                f"system.{name}",
                Level.SYSTEM,
                b,
                pipe_init,
                (),
                init_attrs,
                (PipeEnd(side, PipeAction.INIT), Cost("pipe_init")),
                name,
                f"pl.{name}(c2v_consumer_buf=0, v2c_consumer_buf=0, *, dir_mask, slot_size, "
                "slot_num=None, local_slot_num=None, id=None)",
                f"set up this core group's pipes on the {side.value} side",
            )
        )
    vec_tile = (MemorySpace.Vec,)
    pushes = (
        ("tpush_to_aiv", cube, PipeDirection.C2V, CUBE_OUT),
        ("tpush_to_aic", vec, PipeDirection.V2C, vec_tile),
    )
    for name, side, direction, spaces in pushes:
        declare(
            OpSpec(
                f"tile.{name}",
                Level.SYSTEM,
                b,
                push,
                # A partial tile's run-time valid shape travels with it (the front end adds it).
                (Operand("tile", Role.TILE, spaces), Operand("valid_shape", Role.VALID_SHAPE, optional=True)),
                (_SPLIT, _LANE_STRIDE, _ID) if direction is PipeDirection.C2V else (_SPLIT, _ID),
                (PipeEnd(side, PipeAction.PUSH, direction), Cost("pipe_push")),
                name,
                f"pl.{name}(tile, *, split, lane_stride=None, id=None)"
                if direction is PipeDirection.C2V
                else f"pl.{name}(tile, *, split, id=None)",
                f"the tile sent through the {direction.value} pipe",
            )
        )
    pops = (("tpop_from_aic", vec, PipeDirection.C2V), ("tpop_from_aiv", cube, PipeDirection.V2C))
    for name, side, direction in pops:
        declare(
            OpSpec(
                f"tile.{name}",
                Level.SYSTEM,
                b,
                pop,
                (Operand("valid_shape", Role.VALID_SHAPE, optional=True),),
                (Attr("shape", tuple, REQUIRED), Attr("dtype", DataType, REQUIRED), _SPLIT, _LANE_STRIDE, _ID)
                if direction is PipeDirection.C2V
                else (Attr("shape", tuple, REQUIRED), Attr("dtype", DataType, REQUIRED), _SPLIT, _ID),
                (PipeEnd(side, PipeAction.POP, direction), Cost("pipe_pop"), InPipeSlot(), SetsValid(0)),
                name,
                f"pl.{name}(*, shape=None, dtype=None, split=0, lane_stride=None, id=None, valid_shape=None)"
                if direction is PipeDirection.C2V
                else f"pl.{name}(*, shape=None, dtype=None, split=0, id=None, valid_shape=None)",
                f"the next tile of the {direction.value} pipe, in its ring slot",
            )
        )
    frees = (("tfree_to_aic", vec, PipeDirection.C2V), ("tfree_to_aiv", cube, PipeDirection.V2C))
    for name, side, direction in frees:
        space = RECEIVES[side]
        declare(
            OpSpec(
                f"system.{name}",
                Level.SYSTEM,
                b,
                free,
                (Operand("tile", Role.TILE, (space,), effect=Effect.NONE),),
                (_SPLIT, _ID),
                (PipeEnd(side, PipeAction.FREE, direction), Cost("pipe_free")),
                name,
                f"pl.{name}(tile, *, split=None, id=None)",
                f"the popped tile's ring slot handed back to the {direction.value} pipe",
            )
        )
    declare(
        OpSpec(
            "tile.aiv_shard",
            Level.SYSTEM,
            b,
            shard,
            (Operand("tile", Role.TILE, CUBE_OUT),),
            (_SPLIT,),
            (Boundary(),),
            "aiv_shard",
            "pl.aiv_shard(tile, split)",
            "cube value -> each lane's share",
        )
    )
    declare(
        OpSpec(
            "tile.aic_gather",
            Level.SYSTEM,
            b,
            gather,
            (Operand("tile", Role.TILE, vec_tile),),
            (_SPLIT,),
            (Boundary(),),
            "aic_gather",
            "pl.aic_gather(tile, split)",
            "lane shares -> cube value",
        )
    )
    declare(
        OpSpec(
            "system.reserve_buffer",
            Level.SYSTEM,
            b,
            reserve,
            (),
            (Attr("name", str, REQUIRED), Attr("size", int, REQUIRED), Attr("base", int)),
            (Cost("pipe_init"),),
            "reserve_buffer",
            "pl.reserve_buffer(*, name, size, base=None)",
            "a named window of this kernel's ring memory (Vec on an AIV, Mat on an AIC) "
            "for a pipe it consumes",
        )
    )
    declare(
        OpSpec(
            "system.import_peer_buffer",
            Level.SYSTEM,
            b,
            import_peer,
            (),
            (Attr("name", str, REQUIRED), Attr("peer_func", str)),
            (Cost("pipe_init"),),
            "import_peer_buffer",
            "pl.import_peer_buffer(*, name, peer_func=None)",
            "the buffer a peer kernel of the core group reserves under that name, "
            "for a pipe this kernel produces into",
        )
    )
    declare(
        OpSpec(
            "tile.get_subblock_idx",
            Level.SYSTEM,
            Unit.SCALAR,
            index_result,
            (),
            (),
            (OnSide(vec),),
            "get_subblock_idx",
            "pl.get_subblock_idx()",
            "the vector lane's index in its core group (0 or 1)",
        )
    )


_declare()
