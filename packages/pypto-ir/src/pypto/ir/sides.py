"""Which side of a core group an op runs on: the cube (AIC) or the vector lanes (AIV).

Read from the op specs: a pipe end (``PipeEnd``) or a lane query (``OnSide``) runs on its
declared side, cube and vector ops on their unit's side, transfers on the side that owns the
on-chip tile they move, and ``Boundary`` ops (shard, gather) on both.
"""

from __future__ import annotations

from pypto.ir.nodes import Call, Function, SplitAivRegion, Stmt, stmt_exprs, used_vars, walk_expr, walk_stmts
from pypto.ir.ops import Boundary, Observes, OnSide, PipeEnd, Side, Unit, get_op, is_crossing_op, system, tile
from pypto.ir.types import MemorySpace, TileType

__all__ = [
    "CUBE_SPACES",
    "Side",
    "call_side",
    "first_ops_by_side",
    "is_boundary",
    "is_crossing",
    "is_mixed",
    "names_boundary",
    "space_side",
    "written_per_lane",
]

CUBE_SPACES = frozenset(
    {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias}
)


def space_side(space: MemorySpace | None) -> Side | None:
    if space is MemorySpace.Vec:
        return Side.VECTOR
    if space in CUBE_SPACES:
        return Side.CUBE
    return None


def is_boundary(call: Call) -> bool:
    """A shard or gather: the value crosses between the sides, both take part."""
    return get_op(call.op).has(Boundary)


def call_side(call: Call) -> Side | None:
    """The side that executes ``call``; None for scalar math, host and boundary ops."""
    spec = get_op(call.op)
    if spec.has(Observes):
        return _observed_side(call)
    fixed = spec.trait(PipeEnd) or spec.trait(OnSide)
    if fixed is not None:
        return fixed.side
    declared = _DECLARED_SIDES.get(str(call.attrs.get("core_type"))) if call.op in _DECLARES_SIDE else None
    if declared is not None:
        return declared
    if spec.unit is Unit.CUBE:
        return Side.CUBE
    if spec.unit is Unit.VECTOR:
        return Side.VECTOR
    if spec.unit is Unit.MTE or call.op == tile.create or _retags_tile(spec.unit, call):
        # A transfer runs on the side that owns its on-chip source (stores, moves) or
        # destination (loads, creates); a scalar op that retags a tile (pl.set_validshape) on
        # the side that owns the tile, not on both sides like index math.
        space = _tile_space(call.args[0]) if call.args and call.op != tile.load else None
        if space is None and isinstance(call.type, TileType):
            space = call.type.memory_space
        return space_side(space) if space is not None else None
    return None


def _observed_side(call: Call) -> Side | None:
    """A debug print runs where the on-chip tiles it shows live (the first one's side); one that
    shows only scalars or tensors, like a breakpoint, runs on both sides."""
    for arg in call.args:
        space = _tile_space(arg)
        if space is not None:
            return space_side(space)
    return None


# Ops that name the side they run on in a mixed kernel (``core_type="aiv"``); without it they
# run on both sides.
_DECLARES_SIDE = frozenset({system.sync_set, system.sync_wait})
_DECLARED_SIDES = {"aic": Side.CUBE, "aiv": Side.VECTOR}


def _retags_tile(unit: Unit, call: Call) -> bool:
    """A scalar op on a tile — one that retags it (pl.set_validshape) or reads an element of it
    (pl.read) — runs where the tile is."""
    return unit is Unit.SCALAR and (isinstance(call.type, TileType) or call.op == tile.read)


def is_crossing(call: Call) -> bool:
    """A move between a cube-side and a vector-side space: a pipe transfer in a mixed kernel."""
    if call.op != tile.move:
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
                if is_boundary(e):
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


def _calls(body: tuple[Stmt, ...]) -> list[Call]:
    return [e for s in walk_stmts(body) for x in stmt_exprs(s) for e in walk_expr(x) if isinstance(e, Call)]


def names_boundary(body: tuple[Stmt, ...]) -> bool:
    """Whether a region's body names a crossing with ``aiv_shard`` / ``aic_gather``."""
    return any(get_op(c.op).has(Boundary) for c in _calls(body))


def written_per_lane(region: SplitAivRegion) -> bool:
    """Whether a ``pl.split_aiv`` region is written per lane — it names a crossing (a shard, a
    gather, a hand-written push or pop, which move the lane's share) or reads its lane to address
    the lane's own work — rather than at full width, which the compiler halves."""
    calls = _calls(region.body)
    if any(is_crossing_op(c.op) for c in calls):
        return True
    return any(region.lane in used_vars(x) for s in walk_stmts(region.body) for x in stmt_exprs(s))
