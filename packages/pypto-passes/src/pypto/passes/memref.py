"""Hand-placed tiles: the ``pl.MemRef`` allocations of a kernel, for :mod:`pypto.passes.allocate`.

Every tile annotated ``pl.MemRef(name, slots=n)[index]`` names one allocation of ``n`` equal
slots side by side. The allocation is placed once per kernel, ``n`` times its slot size (the
largest of its tiles, aligned), live from the first of its tiles' starts to the last of their
ends; a tile in a loop keeps it live through that loop (through the loop of its index variable,
which every slot is used in). Each tile gets an :class:`Allocation` at the slot its index picks:
a constant slot is a plain buffer at ``base + k * size``; ``(a * i + b) % n`` a slotted one by
``i``. Its tiles leave the allocator's other bookkeeping: no pipelined loop re-slots them, and
the allocation is never shared with another tile while it is live.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pypto.ir import (
    Allocation,
    Assign,
    For,
    MemorySpace,
    MemRefError,
    MemRefSlot,
    SourceSpan,
    Stmt,
    TileType,
    Var,
)
from pypto.ir.errors import at_line
from pypto.ir.nodes import walk_stmts


class _Liveness(Protocol):
    """What the allocator's liveness tells: the loops around each tile's definition (by their
    statement positions) and where each loop ends."""

    def_loops: dict[Var, tuple[int, ...]]
    loop_end: dict[int, int]


class _Allocator(Protocol):
    """The allocator's first-fit placement in one space."""

    alignment: int

    def alloc(self, size: int) -> int: ...

    def free(self, offset: int) -> None: ...


@dataclass
class _Group:
    """One ``pl.MemRef`` name: its tiles with their slots, its space, slot size and live range."""

    name: str
    slots: int
    space: MemorySpace
    span: SourceSpan | None
    tiles: list[tuple[Var, MemRefSlot]] = field(default_factory=list)
    nbytes: int = 0  # the largest tile's
    start: float = float("inf")
    end: float = float("-inf")
    base: int | None = None


def memref_tiles(body: tuple[Stmt, ...]) -> list[tuple[Assign, MemRefSlot]]:
    """The assignments of ``body`` that place a tile in a ``pl.MemRef``, in program order."""
    return [(s, s.memref) for s in walk_stmts(body) if isinstance(s, Assign) and s.memref is not None]


class MemRefs:
    """The ``pl.MemRef`` allocations of one kernel body, placed as the allocator walks it.

    Made from the allocator's liveness: the member tiles are taken out of ``ranges`` (so nothing
    else places them), and each name's range is the union of theirs. ``positions`` are the
    statement positions where a name's allocation starts or ends."""

    def __init__(self, body: tuple[Stmt, ...], live: _Liveness, ranges: dict[Var, tuple[int, float]]) -> None:
        self.groups: dict[str, _Group] = {}
        loops = {s.var: pos for pos, s in enumerate(walk_stmts(body)) if isinstance(s, For)}
        for stmt, slot in memref_tiles(body):
            group = self._group(stmt, slot)
            group.tiles.append((stmt.target, slot))
            tile = stmt.target.type
            assert isinstance(tile, TileType)
            group.nbytes = max(group.nbytes, tile.nbytes)
            span = ranges.pop(stmt.target, None)
            if span is None:
                continue
            around = live.def_loops.get(stmt.target, ())
            loop = loops.get(slot.var) if slot.var is not None else None
            if loop not in around:
                loop = around[-1] if around else None
            if loop is not None:  # every iteration may use a slot: all of the loop
                span = (min(span[0], loop), max(span[1], live.loop_end[loop] + 0.5))
            group.start, group.end = min(group.start, span[0]), max(group.end, span[1])
        self.positions = {
            p for g in self.groups.values() if g.tiles and g.end >= g.start for p in (g.start, g.end)
        }

    def _group(self, stmt: Assign, slot: MemRefSlot) -> _Group:
        """The group of ``slot``'s name; slots and space must agree with its first tile's."""
        tile = stmt.target.type
        assert isinstance(tile, TileType)
        space = tile.memory_space or MemorySpace.Vec
        group = self.groups.get(slot.name)
        if group is None:
            group = self.groups[slot.name] = _Group(slot.name, slot.slots, space, stmt.span)
        first = f" ({at_line(group.span)})" if group.span is not None else ""
        if slot.slots != group.slots:
            raise MemRefError(
                f"pl.MemRef({slot.name!r}) has slots={slot.slots} here but slots={group.slots} at its "
                f"first tile{first}",
                stmt.span,
                f"give every tile of {slot.name!r} the same slots= (slots={group.slots}), or name this "
                "allocation differently",
            )
        if space is not group.space:
            raise MemRefError(
                f"pl.MemRef({slot.name!r}) holds a {space.name} tile here but a {group.space.name} "
                f"tile at its first tile{first}: one allocation lies in one memory space",
                stmt.span,
                f"name the {space.name} allocation differently, e.g. "
                f"pl.MemRef({slot.name + '_' + space.name.lower()!r}, slots={slot.slots})",
            )
        return group

    def release(self, pos: float, allocators: Mapping[MemorySpace, _Allocator]) -> None:
        """Free the allocations whose range ends at ``pos`` (started before it)."""
        for group in self.groups.values():
            if group.end == pos and group.start < pos and group.base is not None:
                allocators[group.space].free(group.base)

    def place(
        self,
        pos: float,
        allocations: dict[str, Allocation],
        allocator_of: Callable[[MemorySpace], _Allocator],
    ) -> None:
        """Place the allocations whose range starts at ``pos``, and their tiles in their slots
        (``allocator_of(space)`` is the space's allocator, made if need be)."""
        for group in self.groups.values():
            if group.start != pos:
                continue
            allocator = allocator_of(group.space)
            size = -(-group.nbytes // allocator.alignment) * allocator.alignment
            group.base = allocator.alloc(size * group.slots)
            for var, slot in group.tiles:
                allocations[var.name] = _allocation(var.name, group.space, group.base, size, slot)
            if group.end == pos:
                allocator.free(group.base)


def _allocation(name: str, space: MemorySpace, base: int, size: int, slot: MemRefSlot) -> Allocation:
    """A tile's buffer in slot ``slot`` of the allocation at ``base`` of slots of ``size`` bytes."""
    if slot.var is None or slot.slots == 1:
        return Allocation(name, space, base + slot.shift * size, size)
    if slot.scale == 1:  # (i + b) % n: the slot ``i - start`` picks, with start = -b
        return Allocation(name, space, base, size, slot.slots, slot.var.name, -slot.shift % slot.slots, 1)
    return Allocation(name, space, base, size, slot.slots, slot.var.name, 0, 1, slot.scale, slot.shift)


def memref_hint(body: tuple[Stmt, ...], space: MemorySpace) -> str | None:
    """The budget hint when ``space`` holds ``pl.MemRef`` allocations: their slots are the user's."""
    groups: dict[str, tuple[int, int]] = {}
    for stmt, slot in memref_tiles(body):
        tile = stmt.target.type
        if isinstance(tile, TileType) and (tile.memory_space or MemorySpace.Vec) is space:
            before = groups.get(slot.name, (slot.slots, 0))
            groups[slot.name] = (slot.slots, max(before[1], tile.nbytes))
    if not groups:
        return None
    listed = ", ".join(f"pl.MemRef({n!r}, slots={s}) takes {s} x {b} bytes" for n, (s, b) in groups.items())
    return f"{listed}: give it fewer slots or smaller tiles, or keep fewer other tiles live beside it"
