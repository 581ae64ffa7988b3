"""The rules of explicit ``pl.split_aiv`` regions, checked op by op while a scope is parsed.

A scope (or InCore body) that opens a region is in manual mode: its regions own the vector work.
Inside a region the body runs on the two AIV lanes, so cube ops are rejected; outside every
region vector compute is rejected (loads and stores are placed by the compiler); a tile crossing
a region's edge is named — ``pl.aiv_shard(x)`` inside the region for a cube value the lanes read,
``pl.aic_gather(v)`` inside it for a lane value the cube reads after it — and an unnamed crossing
is an error naming the value. A data-parallel region (``UP_DOWN`` / ``LEFT_RIGHT``) that names a
crossing is written per lane: each of its vector ops must work on the lanes' shares (see
:func:`check_per_lane`). The side an op runs on is the one ``ExpandMixedKernel`` gives it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import (
    Assign,
    Call,
    Eval,
    Expr,
    MemorySpace,
    ParseError,
    SourceSpan,
    SplitMode,
    Stmt,
    TileType,
    Unit,
    Var,
    get_op,
)
from pypto.ir.nodes import used_vars, walk_stmts
from pypto.ir.ops import PlacesTile, is_crossing_op, split_axis
from pypto.ir.ops import tile as tile_ops
from pypto.ir.sides import CUBE_SPACES, Side, call_side, is_boundary
from pypto.language.parser.source import KernelSource

REGION_FORM = "for aiv_id in pl.split_aiv(2, mode=...)"

# Loads and stores outside every region are placed by the compiler (they are not vector compute).
_TRANSFERS = frozenset(
    {tile_ops.load, tile_ops.load_partial, tile_ops.store, tile_ops.store_partial, tile_ops.store_atomic}
)
_BOUNDARY = frozenset({tile_ops.aiv_shard, tile_ops.aic_gather})
# Ops whose result is a function of their attributes only: right at any extent on every lane.
_GENERATORS = frozenset({tile_ops.full, tile_ops.create})
# Ops that read memory at offsets: the operand positions of the read address (not the shape, a
# valid shape or a destination slot). A lane-derived read address puts the op on the lane's share.
_READ_ADDRESS = {
    tile_ops.load: (1,),
    tile_ops.load_partial: (1,),
    tile_ops.slice: (1,),
    tile_ops.gather_row: (3,),
}


@dataclass(frozen=True)
class RegionMark:
    """A region found by reading the scope's source ahead: its position and (if it folds) mode."""

    position: tuple[int, int]
    mode: SplitMode | None


@dataclass
class Region:
    """The region being parsed: its mode and lane, and the tiles bound in it."""

    mode: SplitMode
    lane: Var | None = None  # the region's lane variable (``aiv_id`` of the for statement)


@dataclass
class ScopeRegions:
    """The ``pl.split_aiv`` regions of one core-group scope (or ``@pl.jit.incore`` body).

    ``marks`` are the regions read ahead from ``owner`` (the source of the scope), so the rules
    hold from the scope's first statement; ``cursor`` is the position in ``owner`` of the
    statement being parsed (an inlined function's statements do not move it). ``names`` are the
    user's names of the values bound in the scope; ``in_regions`` the vector tiles bound inside a
    region (what the cube may read only through ``pl.aic_gather``).
    """

    owner: KernelSource
    marks: tuple[RegionMark, ...]
    cursor: tuple[int, int] = (0, 0)
    current: Region | None = None
    auto_split: SplitMode | None = None  # the scope's pl.split mode, if it has one
    names: dict[Var, str] = field(default_factory=dict)
    in_regions: set[Var] = field(default_factory=set)

    @property
    def has_regions(self) -> bool:
        return bool(self.marks)

    def advance(self, source: KernelSource, node: ast.stmt) -> None:
        if source is self.owner:
            self.cursor = (node.lineno, node.col_offset)

    @contextmanager
    def region(self, mode: SplitMode) -> Iterator[Region]:
        """Parse a region's body."""
        self.current = Region(mode)
        try:
            yield self.current
        finally:
            self.current = None

    def note(self, var: Var, value: Expr, name: str) -> None:
        """``name = value`` bound ``var``: remember the user's name, and the tiles of a region."""
        self.names[var] = name
        if self.current is not None and _space(value) is MemorySpace.Vec:
            self.in_regions.add(var)

    def check_crossings(self, op: str, args: Sequence[Any], name: str, span: SourceSpan | None) -> None:
        """Before ``op`` is built on ``args``: a tile that crosses a region's edge unnamed."""
        if self.current is None and not self.has_regions:
            return
        unit = get_op(op).unit
        tiles = [a for a in args if isinstance(a, Var) and isinstance(a.type, TileType)]
        if self.current is not None and op not in _BOUNDARY and (unit is Unit.VECTOR or op in _TRANSFERS):
            crossing = next((a for a in tiles if _space(a) in CUBE_SPACES), None)
            if crossing is not None:
                raise self._shard_missing(crossing, name, span)
        if self.current is None and unit is Unit.CUBE:
            crossing = next((a for a in tiles if a in self.in_regions), None)
            if crossing is not None:
                raise self._gather_missing(crossing, name, span)

    def check(self, call: Call, name: str, span: SourceSpan | None) -> None:
        """Apply the region rules to the built ``call``, written ``name`` at ``span``."""
        if is_boundary(call):
            return  # the builders of aiv_shard / aic_gather check they sit in a region
        side = _side(call)
        if self.current is None:
            if not self.has_regions:
                return
            if side is Side.VECTOR and call.op not in _TRANSFERS:
                raise _vector_outside_error(name, span)
            if side is Side.CUBE:
                crossing = next((a for a in _tiles(call) if a in self.in_regions), None)
                if crossing is not None:
                    raise self._gather_missing(crossing, name, span)
            return
        if side is Side.CUBE:
            raise _cube_inside_error(name, span)

    def user_name(self, var: Var) -> str:
        return self.names.get(var, var.name)

    def _shard_missing(self, value: Var, op: str, span: SourceSpan | None) -> ParseError:
        x = self.user_name(value)
        return ParseError(
            f"'{x}' is produced on the CUBE lane (a {_space(value).name} tile) and {op} reads it on the "  # type: ignore[union-attr]
            "VECTOR lane inside a pl.split_aiv region: the crossing is not named",
            span,
            f"read it through the boundary op at the top of the region: {x}_v = pl.aiv_shard({x})",
        )

    def _gather_missing(self, value: Var, op: str, span: SourceSpan | None) -> ParseError:
        x = self.user_name(value)
        return ParseError(
            f"'{x}' is defined inside a pl.split_aiv region but {op} reads it on the CUBE lane outside "
            "it: the crossing is not named",
            span,
            f"gather it inside the region, after it is computed: {x} = pl.aic_gather({x})",
        )


def _tiles(call: Call) -> Iterator[Var]:
    return (a for a in call.args if isinstance(a, Var) and isinstance(a.type, TileType))


def _space(value: Expr) -> MemorySpace | None:
    return value.type.memory_space if isinstance(value.type, TileType) else None


def _side(call: Call) -> Side | None:
    """The side ``call`` runs on; an op that places a tile in a cube space runs on the cube."""
    space = call.type.memory_space if isinstance(call.type, TileType) else None
    if get_op(call.op).has(PlacesTile) and space in CUBE_SPACES:
        return Side.CUBE
    return call_side(call)


def check_per_lane(body: tuple[Stmt, ...], mode: SplitMode, lane: Var, names: dict[Var, str]) -> None:
    """A data-parallel region that names a crossing is run as written on both lanes, so each of its
    vector ops must be on the lanes' shares: one that reads an ``aiv_shard`` result (through any
    chain of ops), a generator (``pl.full``: right at any extent), or a load, slice or gather whose
    read address depends on the lane. Any other vector op would do the same full-width work on both
    lanes: a ``ParseError`` naming it."""
    if split_axis(mode) is None:
        return
    per_lane: set[Var] = {lane}
    lane_derived: set[Var] = {lane}
    for stmt in walk_stmts(body):
        if not isinstance(stmt, (Assign, Eval)) or not isinstance(stmt.value, Call):
            continue
        call = stmt.value
        reads = set(used_vars(call))
        if isinstance(stmt, Assign) and not isinstance(stmt.target.type, TileType):
            if reads & lane_derived:
                lane_derived.add(stmt.target)
            continue
        if isinstance(stmt, Eval) and call.op != tile_ops.gather_row:
            continue  # makes no tile: a store, a push, a free, a pipe setup
        if (
            is_crossing_op(call.op)
            or reads & per_lane - lane_derived
            or call.op in _GENERATORS
            or is_boundary(call)
            or call_side(call) is not Side.VECTOR
        ):
            accepted = True
        else:
            address = [call.args[k] for k in _READ_ADDRESS.get(call.op, ()) if k < len(call.args)]
            accepted = any(set(used_vars(a)) & lane_derived for a in address)
        if not accepted:
            raise _full_width_error(call, mode)
        if isinstance(stmt, Assign):
            per_lane.add(stmt.target)
        elif call.op == tile_ops.gather_row and isinstance(call.args[0], Var):
            per_lane.add(call.args[0])  # writes its destination


def _full_width_error(call: Call, mode: SplitMode) -> ParseError:
    op = f"pl.{call.op.split('.', 1)[-1]}"
    where = f" at line {call.span.line}" if call.span else ""
    return ParseError(
        f"the pl.split_aiv region ({mode!r}) names a crossing, so it is written per lane, but {op}{where} "
        "works on a full-width tile: both lanes would do the same work",
        call.span,
        "work on the lanes' shares (read a pl.aiv_shard result, or load at an offset that uses the "
        "region's lane, e.g. [aiv_id * 64, 0]); or put the full-width work in its own region of "
        "mode=pl.SplitMode.NONE, or in a region without boundary ops, which the compiler halves",
    )


def _vector_outside_error(name: str, span: SourceSpan | None) -> ParseError:
    return ParseError(
        f"vector op {name} sits outside every pl.split_aiv region of a scope that has them: the "
        "regions own the vector work",
        span,
        f"wrap that phase in `for _ in pl.split_aiv(2, mode=pl.SplitMode.NONE):` (or put it in an "
        f"existing `{REGION_FORM}:` region), or drop the regions and let pl.split(...) place the "
        "vector work",
    )


def _cube_inside_error(name: str, span: SourceSpan | None) -> ParseError:
    return ParseError(
        f"cube op {name} inside a pl.split_aiv region, whose body runs on the AIV lanes",
        span,
        "move it before or after the region; hand tiles across with pl.aiv_shard / pl.aic_gather "
        "inside the region",
    )
