"""The result of memory allocation, attached to a kernel as ``attrs["memory_plan"]``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.types import MemorySpace


@dataclass(frozen=True)
class Allocation:
    """One tile buffer: ``size`` bytes at byte ``offset`` of ``space`` in its core's memory.

    A *slotted* buffer (``slots`` > 1) is ``slots`` buffers of ``size`` bytes side by side; the tile
    takes slot ``(slot_scale * ((slot_var - slot_start) // slot_step) + slot_shift) % slots``,
    ``slot_var`` a scalar of the kernel (a pipelined loop's variable, or the loop variable of a
    ``pl.MemRef`` index such as ``(2 * i + 1) % 4``): successive iterations fill different
    buffers, so a transfer into one overlaps the compute reading another.
    """

    name: str
    space: MemorySpace
    offset: int
    size: int
    slots: int = 1
    slot_var: str | None = None
    slot_start: int = 0
    slot_step: int = 1
    slot_scale: int = 1
    slot_shift: int = 0

    @property
    def end(self) -> int:
        return self.offset + self.size * self.slots

    def slot_offset(self, value: int) -> int:
        """The byte offset of the slot the tile takes when ``slot_var`` holds ``value``."""
        if self.slots == 1:
            return self.offset
        count = (value - self.slot_start) // self.slot_step
        return self.offset + (self.slot_scale * count + self.slot_shift) % self.slots * self.size


@dataclass(frozen=True)
class Reservation:
    """A window at the bottom of a space held back from tile allocation (a pipe ring of
    ``size // slot_size`` slots); ``span`` is the user's pipe setup that asked for it, if any.

    ``name`` is the ``pl.reserve_buffer`` it is (or ``c2v_pipe1`` for the plain ring of pipe 1);
    ``base`` its byte offset when the user's buffer fixes one (None: packed, see :func:`layout`)."""

    space: MemorySpace
    size: int
    reason: str
    automatic: bool = False  # reserved by the compiler for an automatic pipe, not by the user
    slot_size: int | None = None
    # Where the user asked for it, not what it is: two reservations alike but for it are equal.
    span: SourceSpan | None = field(default=None, compare=False)
    base: int | None = None
    name: str | None = None


def layout(reservations: tuple[Reservation, ...] | list[Reservation]) -> list[int]:
    """Each reservation's byte offset in its space: a fixed ``base`` where it has one, the others
    packed in order above the fixed ones of their space."""
    tops: dict[MemorySpace, int] = {}
    for r in reservations:
        if r.base is not None:
            tops[r.space] = max(tops.get(r.space, 0), r.base + r.size)
    offsets = []
    for r in reservations:
        if r.base is not None:
            offsets.append(r.base)
        else:
            offsets.append(tops.get(r.space, 0))
            tops[r.space] = offsets[-1] + r.size
    return offsets


def reserved_top(reservations: tuple[Reservation, ...] | list[Reservation], space: MemorySpace) -> int:
    """The bytes at the bottom of ``space`` that tiles are allocated above."""
    ends = [o + r.size for r, o in zip(reservations, layout(reservations), strict=True) if r.space is space]
    return max(ends, default=0)


@dataclass(frozen=True)
class MemoryPlan:
    """Per-kernel placement of every tile; ``peak`` is the high-water mark per space."""

    allocations: Mapping[str, Allocation]
    peak: Mapping[MemorySpace, int]
    reservations: tuple[Reservation, ...] = field(default=())

    def of(self, name: str) -> Allocation | None:
        return self.allocations.get(name)

    @classmethod
    def placed(
        cls,
        placements: Mapping[str, tuple[Any, ...]],
        peak: Mapping[MemorySpace, int],
        reservations: tuple[Reservation, ...] | list[Reservation] = (),
    ) -> MemoryPlan:
        """The plan the printer writes: ``{tile: (space, offset, size)}`` (a slotted buffer adds
        ``slots, slot_var, slot_start, slot_step``, and ``slot_scale, slot_shift`` when they are
        not 1 and 0), the peaks, the windows."""
        allocations = {name: Allocation(name, *where) for name, where in placements.items()}
        return cls(allocations, dict(peak), tuple(reservations))


def plain_ring_name(direction: str, pipe: int) -> str | None:
    """The name of a hand-set-up pipe's ring when its setup gives no buffer (``direction`` is
    ``"c2v"`` or ``"v2c"``): none for pipe 0, ``c2v_pipe1`` for pipe 1 of cube->vector."""
    return f"{direction}_pipe{pipe}" if pipe else None
