"""Which side of a core group an op runs on: the cube (AIC) or the vector lanes (AIV)."""

from __future__ import annotations

from enum import Enum

from pypto.ir import Call, MemorySpace, TileType, Unit, get_op

CUBE_SPACES = frozenset(
    {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias}
)


class Side(Enum):
    CUBE = "cube"
    VECTOR = "vector"


def space_side(space: MemorySpace) -> Side | None:
    if space is MemorySpace.Vec:
        return Side.VECTOR
    if space in CUBE_SPACES:
        return Side.CUBE
    return None


def call_side(call: Call) -> Side | None:
    """The side that executes ``call``; None for scalar math and host ops."""
    unit = get_op(call.op).unit
    if unit is Unit.CUBE:
        return Side.CUBE
    if unit is Unit.VECTOR:
        return Side.VECTOR
    if unit is Unit.MTE or call.op == "tile.create":
        # A transfer runs on the side that owns its on-chip source (stores, moves) or
        # destination (loads, creates).
        space = _tile_space(call.args[0]) if call.args and call.op != "tile.load" else None
        if space is None and isinstance(call.type, TileType):
            space = call.type.memory_space
        return space_side(space) if space is not None else None
    return None


def is_crossing(call: Call) -> bool:
    """A move between a cube-side and a vector-side space: a pipe transfer in a mixed kernel."""
    if call.op != "tile.move":
        return False
    src = _tile_space(call.args[0])
    dst = call.attrs["target_memory"]
    return src is not None and space_side(src) not in (None, space_side(dst))


def _tile_space(e: object) -> MemorySpace | None:
    t = getattr(e, "type", None)
    return t.memory_space if isinstance(t, TileType) else None
