"""Which side of a core group an op runs on: the cube (AIC) or the vector lanes (AIV)."""

from __future__ import annotations

from enum import Enum

from pypto.ir import Call, Function, MemorySpace, TileType, Unit, get_op
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts

CUBE_SPACES = frozenset(
    {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias}
)


class Side(Enum):
    CUBE = "cube"
    VECTOR = "vector"


# Pipe ops run on a fixed side; aiv_shard / aic_gather sit on the boundary (both sides).
_PIPE_SIDE = {
    "aic_initialize_pipe": Side.CUBE,
    "tpush_to_aiv": Side.CUBE,
    "tpop_from_aiv": Side.CUBE,
    "tfree_to_aiv": Side.CUBE,
    "aiv_initialize_pipe": Side.VECTOR,
    "tpush_to_aic": Side.VECTOR,
    "tpop_from_aic": Side.VECTOR,
    "tfree_to_aic": Side.VECTOR,
    "get_subblock_idx": Side.VECTOR,
}
BOUNDARY_OPS = frozenset({"aiv_shard", "aic_gather"})


def space_side(space: MemorySpace | None) -> Side | None:
    if space is MemorySpace.Vec:
        return Side.VECTOR
    if space in CUBE_SPACES:
        return Side.CUBE
    return None


def call_side(call: Call) -> Side | None:
    """The side that executes ``call``; None for scalar math, host and boundary ops."""
    if call.op in _PIPE_SIDE:
        return _PIPE_SIDE[call.op]
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


def first_ops_by_side(fn: Function) -> dict[Side, Call]:
    """The first op of ``fn`` that runs on each side, compute ops preferred over transfers so
    messages name the matmul or the add rather than a load."""
    compute: dict[Side, Call] = {}
    transfer: dict[Side, Call] = {}
    for stmt in walk_stmts(fn.body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if not isinstance(e, Call):
                    continue
                if e.op in BOUNDARY_OPS:
                    compute.setdefault(Side.CUBE, e)
                    compute.setdefault(Side.VECTOR, e)
                side = call_side(e)
                if side is not None:
                    found = compute if get_op(e.op).unit in (Unit.CUBE, Unit.VECTOR) else transfer
                    found.setdefault(side, e)
    return {**transfer, **compute}


def is_mixed(fn: Function) -> bool:
    sides = first_ops_by_side(fn)
    return Side.CUBE in sides and Side.VECTOR in sides


def _tile_space(e: object) -> MemorySpace | None:
    t = getattr(e, "type", None)
    return t.memory_space if isinstance(t, TileType) else None
