"""The result of memory allocation, attached to a kernel as ``attrs["memory_plan"]``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pypto.ir.errors import SourceSpan
from pypto.ir.types import MemorySpace


@dataclass(frozen=True)
class Allocation:
    """One tile buffer: ``size`` bytes at byte ``offset`` of ``space`` in its core's memory."""

    name: str
    space: MemorySpace
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


@dataclass(frozen=True)
class Reservation:
    """A window at the bottom of a space held back from tile allocation (a pipe ring of
    ``size // slot_size`` slots); ``span`` is the user's pipe setup that asked for it, if any."""

    space: MemorySpace
    size: int
    reason: str
    automatic: bool = False  # reserved by the compiler for an automatic pipe, not by the user
    slot_size: int | None = None
    # Where the user asked for it, not what it is: two reservations alike but for it are equal.
    span: SourceSpan | None = field(default=None, compare=False)


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
        placements: Mapping[str, tuple[MemorySpace, int, int]],
        peak: Mapping[MemorySpace, int],
        reservations: tuple[Reservation, ...] | list[Reservation] = (),
    ) -> MemoryPlan:
        """The plan the printer writes: ``{tile: (space, offset, size)}``, the peaks, the windows."""
        allocations = {name: Allocation(name, *where) for name, where in placements.items()}
        return cls(allocations, dict(peak), tuple(reservations))
