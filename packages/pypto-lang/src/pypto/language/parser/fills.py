"""A constant fill takes the level of the values it meets.

``pl.full(shape, dtype, value)`` is a tensor in PyPTO's manual: in a scope, a ``[1, B]`` zero
carried through a K loop and added to tensor results is tensor-level code the compiler tiles. In
tile-level code the same call starts an accumulator that tile ops update. The call alone does not
say which; its uses do. So the parser gives each ``pl.full`` *site* (its place in the source) a
level: the context's by default (a tensor where the compiler tiles tensor ops: a ``pl.at`` scope,
an InCore kernel; a tile in an AIC or AIV function), and the other one once a use asks for it.

A value whose level a fill decided is *free*: the fill itself, a value computed from free values
and scalars only (``pl.cast(fill, ...)``, ``pl.mul(fill, 2.0)``), a loop's carried value that
enters as a free value (its type is the fill's), and the loop's result. The parser records the
sites each free value comes from (:attr:`BodyBuilder.fills`). When an op meets a free value at
the wrong level (beside a tile or a tensor that is not free, or where the op takes only the other
level), the parse stops with :class:`Relevel`; :func:`parse_with_fill_levels` records the level
for those sites and parses the function again. Each site changes its level at most once: a fill
that meets tiles in one place and tensors in another is an error that asks for
``pl.tile.full`` / ``pl.tensor.full`` (which always make their own level).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pypto.ir import ParseError, SourceSpan, TensorType, TileType
from pypto.ir.ops import Level

T = TypeVar("T")


class Relevel(Exception):
    """A free value met at the wrong level: its fill sites must take ``level`` (raised by the
    parser, caught by :func:`parse_with_fill_levels`)."""

    def __init__(self, sites: frozenset[SourceSpan], level: Level, span: SourceSpan | None) -> None:
        super().__init__(f"fill sites {sorted(map(str, sites))} take level {level.value}")
        self.sites = sites
        self.level = level
        self.span = span


@dataclass
class FillLevels:
    """The level of each ``pl.full`` site of one function: ``default`` until a use decided it."""

    default: Level
    decided: dict[SourceSpan, Level] = field(default_factory=dict)

    def level(self, site: SourceSpan | None) -> Level:
        return self.decided.get(site, self.default) if site is not None else self.default

    def decide(self, again: Relevel) -> None:
        """Record the level ``again`` asks for; a site that changed before may not change back."""
        sites = sorted(again.sites, key=lambda s: (s.file, s.line, s.col))
        changing = [s for s in sites if self.level(s) is not again.level]
        stuck = [s for s in changing if s in self.decided] or ([] if changing else sites)
        if stuck:  # it changed before (or cannot change): both levels meet this fill
            raise _both_levels(stuck[0], again)
        self.decided.update({s: again.level for s in changing})


def _both_levels(site: SourceSpan, again: Relevel) -> ParseError:
    where = f"line {site.line}" if again.span is None or again.span.file == site.file else str(site)
    other = "tensors" if again.level is Level.TILE else "tiles"
    wanted = "tile" if again.level is Level.TILE else "tensor"
    return ParseError(
        f"this value comes from the pl.full at {where}, which meets {other} elsewhere; here it "
        f"must be a {wanted}, and one pl.full makes one kind of value",
        again.span or site,
        "write pl.tile.full(...) where you need a tile and pl.tensor.full(...) where you need a "
        "tensor (two fills), or load the tensor into a tile with pl.load",
    )


def level_of(value: Any) -> Level | None:
    """``Level.TENSOR`` or ``Level.TILE`` for a tensor or tile expression, else None."""
    t = getattr(value, "type", None)
    if isinstance(t, TileType):
        return Level.TILE
    if isinstance(t, TensorType):
        return Level.TENSOR
    return None


def settle(
    fills: dict[Any, frozenset[SourceSpan]],
    values: Iterable[Any],
    span: SourceSpan | None,
    pinned: Level | None = None,
) -> None:
    """Operands of one op share a level: a free value beside values of the other level (or in a
    ``pl.tile.*`` / ``pl.tensor.*`` call, ``pinned``) takes theirs. Values of both levels that are
    not free are left to the type rule, which says they mix."""
    shaped = [v for v in values if level_of(v) is not None]
    fixed = {level_of(v) for v in shaped if v not in fills}
    if pinned is not None:
        fixed.add(pinned)
    if not fixed:
        levels = {level_of(v) for v in shaped}
        if len(levels) < 2:
            return
        fixed = {level_of(shaped[0])}  # free values of both levels: the first one's
    if len(fixed) != 1:
        return
    (want,) = fixed
    wrong = [v for v in shaped if v in fills and level_of(v) is not want]
    if wrong:
        assert want is not None
        raise Relevel(frozenset().union(*(fills[v] for v in wrong)), want, span)


def demand(fills: dict[Any, frozenset[SourceSpan]], value: Any, want: Level, span: SourceSpan | None) -> None:
    """``value`` must be of level ``want`` (the op takes only that): a free value of the other
    level takes it."""
    got = level_of(value)
    if got is not None and got is not want and value in fills:
        raise Relevel(fills[value], want, span)


def parse_with_fill_levels(levels: FillLevels, parse: Callable[[], T]) -> T:
    """``parse()`` again while it stops with :class:`Relevel`, each time with the levels it asked
    for. The warnings of every attempt are shown once each, after the last one."""
    seen: dict[tuple[Any, ...], warnings.WarningMessage] = {}
    try:
        while True:
            with warnings.catch_warnings(record=True) as recorded:
                warnings.simplefilter("always")
                try:
                    return parse()
                except Relevel as again:
                    levels.decide(again)
                finally:
                    for w in recorded:
                        seen.setdefault((w.category, str(w.message), w.filename, w.lineno), w)
    finally:
        for w in seen.values():
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
