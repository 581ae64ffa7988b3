"""The rules of explicit ``pl.split_aiv`` regions, checked op by op while a scope is parsed.

Inside a region the body runs on the two AIV lanes, so cube ops are rejected; once a scope has
regions, vector ops outside them are rejected; ``aiv_shard`` / ``aic_gather`` sit at region
edges; and a split region may not mix the lanes' shares of a boundary tile with full-width
vector ops. The side an op runs on is the one ``ExpandMixedKernel`` gives it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pypto.ir import Call, Expr, MemorySpace, ParseError, SourceSpan, SplitMode, TileType, Unit, Var, get_op
from pypto.ir.ops import PipeAction, PipeEnd, PlacesTile, split_axis
from pypto.ir.sides import CUBE_SPACES, Side, call_side, is_boundary
from pypto.language.parser.source import KernelSource
from pypto.language.parser.values import is_shaped, shaped_type

REGION_FORM = "for aiv_id in pl.split_aiv(2, mode=...)"


@dataclass(frozen=True)
class RegionMark:
    """A region found by reading the scope's source ahead: its position and (if it folds) mode."""

    position: tuple[int, int]
    mode: SplitMode | None


@dataclass(frozen=True)
class SplitValue:
    """A lane's share of a tile split along ``mode``'s axis; ``full`` is the unsplit extent."""

    name: str
    span: SourceSpan | None
    mode: SplitMode
    full: int


@dataclass(frozen=True)
class VectorUse:
    """A vector op in a split region and the extents of its tiles along the region's axis."""

    name: str
    span: SourceSpan | None
    extents: frozenset[int]


@dataclass
class Region:
    """The region being parsed: its mode, the split values it touches and its vector ops."""

    mode: SplitMode
    split_values: list[SplitValue] = field(default_factory=list)
    vector_uses: list[VectorUse] = field(default_factory=list)
    lane: Var | None = None  # the region's lane variable (``aiv_id`` of the for statement)

    def touch(self, value: SplitValue) -> None:
        if value not in self.split_values:
            self.split_values.append(value)

    def record(self, call: Call, name: str, span: SourceSpan | None) -> None:
        axis = split_axis(self.mode)
        if axis is None or get_op(call.op).unit is not Unit.VECTOR:
            return
        shapes = [shaped_type(e).shape for e in (*call.args, call) if is_shaped(e)]
        extents = frozenset(shape[axis] for shape in shapes if axis < len(shape))
        self.vector_uses.append(VectorUse(name, span, extents))

    def check_mixing(self) -> None:
        """Reject a split region whose vector ops also work on full-width tiles."""
        for use in self.vector_uses:
            for value in self.split_values:
                if value.mode is self.mode and value.full in use.extents:
                    raise _mixing_error(use, value)


@dataclass
class ScopeRegions:
    """The ``pl.split_aiv`` regions of one core-group scope (or ``@pl.jit.incore`` body).

    ``marks`` are the regions read ahead from ``owner`` (the source of the scope), so the rules
    hold from the scope's first statement; ``cursor`` is the position in ``owner`` of the
    statement being parsed (an inlined function's statements do not move it).
    """

    owner: KernelSource
    marks: tuple[RegionMark, ...]
    cursor: tuple[int, int] = (0, 0)
    current: Region | None = None
    previous: SplitMode | None = None
    split_values: dict[Var, SplitValue] = field(default_factory=dict)
    auto_split: SplitMode | None = None  # the scope's pl.split mode, if it has one

    @property
    def has_regions(self) -> bool:
        return bool(self.marks) or self.previous is not None

    def advance(self, source: KernelSource, node: ast.stmt) -> None:
        if source is self.owner:
            self.cursor = (node.lineno, node.col_offset)

    def next_mode(self) -> SplitMode:
        """The mode of the region after the cursor (``aiv_shard``'s default split)."""
        later = [m for m in self.marks if m.position > self.cursor]
        return (later[0].mode if later else None) or SplitMode.NONE

    def previous_mode(self) -> SplitMode:
        """The mode of the region parsed last (``aic_gather``'s default split)."""
        return self.previous or SplitMode.NONE

    @contextmanager
    def region(self, mode: SplitMode) -> Iterator[None]:
        """Parse a region's body; on a clean exit, check that it does not mix split and full width."""
        self.current = Region(mode)
        yield
        self.current.check_mixing()
        self.current = None
        self.previous = mode

    def note(self, var: Var, value: Expr) -> None:
        """``var = value``: remember lanes' shares of split tiles."""
        if not (isinstance(value, Call) and _reaches_the_lanes(value)):
            return
        mode = value.attrs.get("split") or SplitMode.NONE
        axis = split_axis(mode)
        if axis is None:
            return
        share = SplitValue(f"pl.{value.op}", value.span, mode, _full_extent(value, axis))
        self.split_values[var] = share
        if self.current is not None:
            self.current.touch(share)

    def check(self, call: Call, name: str, span: SourceSpan | None) -> None:
        """Apply the region rules to ``call``, written ``name`` at ``span``."""
        side = _side(call)
        if self.current is None:
            if side is Side.VECTOR and self.has_regions:
                raise _vector_outside_error(name, span)
            return
        if is_boundary(call):
            raise _edge_error(name, span)
        if side is Side.CUBE:
            raise _cube_inside_error(name, span)
        for arg in call.args:
            if isinstance(arg, Var) and arg in self.split_values:
                self.current.touch(self.split_values[arg])
        self.current.record(call, name, span)


def _reaches_the_lanes(call: Call) -> bool:
    """A Vec tile that comes from the cube (a shard, a pop on the lanes): with a split mode, each
    lane holds its share of it."""
    if not (isinstance(call.type, TileType) and call.type.memory_space is MemorySpace.Vec):
        return False
    end = get_op(call.op).trait(PipeEnd)
    return is_boundary(call) or (end is not None and end.action is PipeAction.POP)


def _full_extent(share: Call, axis: int) -> int:
    """The unsplit extent along ``axis``: a shard's operand is the whole tile, a pop holds half
    (its operand, if any, is the valid shape it declares)."""
    if is_boundary(share):
        return shaped_type(share.args[0]).shape[axis]
    return 2 * shaped_type(share).shape[axis]


def _side(call: Call) -> Side | None:
    """The side ``call`` runs on; an op that places a tile in a cube space runs on the cube."""
    if is_boundary(call):
        return None
    space = call.type.memory_space if isinstance(call.type, TileType) else None
    if get_op(call.op).has(PlacesTile) and space in CUBE_SPACES:
        return Side.CUBE
    return call_side(call)


def _vector_outside_error(name: str, span: SourceSpan | None) -> ParseError:
    return ParseError(
        f"{name} runs on the vector lanes (AIV) and cannot sit outside the pl.split_aiv regions "
        "of a scope that has them",
        span,
        f"move it into a `{REGION_FORM}:` region, or drop the regions and let pl.split(...) place "
        "the vector work",
    )


def _edge_error(name: str, span: SourceSpan | None) -> ParseError:
    return ParseError(
        f"{name} inside a pl.split_aiv region: aiv_shard/aic_gather belong at region edges: "
        "before / after the region",
        span,
        "shard before the region (x_v = pl.aiv_shard(x)) and gather after it (c = pl.aic_gather(v))",
    )


def _cube_inside_error(name: str, span: SourceSpan | None) -> ParseError:
    return ParseError(
        f"{name} runs on the cube (AIC) and cannot sit inside a pl.split_aiv region, whose body "
        "runs on the AIV lanes",
        span,
        "move it before or after the region, and hand tiles across with pl.aiv_shard / "
        "pl.aic_gather (or the tpush / tpop pipe ops)",
    )


def _mixing_error(use: VectorUse, value: SplitValue) -> ParseError:
    axis = split_axis(value.mode)
    what = "rows" if axis == 0 else "columns"
    return ParseError(
        f"split rejected: the body mixes split and plain full-width vector ops: {use.name}"
        f"{_at(use.span)} works on all {value.full} {what}, which {value.name}{_at(value.span)} "
        f"splits across the two AIV lanes ({value.mode!r})",
        use.span,
        f"use separate regions (the full-width {use.name} in a pl.split_aiv(2, "
        "mode=pl.SplitMode.NONE) region), or drop the explicit boundary ops and use the "
        "automatic pl.split(...)",
    )


def _at(span: SourceSpan | None) -> str:
    return f" (line {span.line})" if span is not None else ""
