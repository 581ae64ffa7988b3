"""The ``Target`` schema: plain data describing a chip. The instances are data files read by
:mod:`pypto.ir.targets` (``get_target("a2a3")``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pypto.ir.types import MemorySpace


@dataclass(frozen=True)
class MemorySpec:
    """One on-chip memory space of one core."""

    capacity: int  # bytes physically present
    usable: int  # bytes the allocator may hand out
    alignment: int = 32
    core: str = ""  # the kind of core that has this space ("AIC", "AIV"); "" if not said


@dataclass(frozen=True)
class Target:
    """Facts about a chip that the compiler and a backend's cost model need.

    ``cost`` holds named cost-model constants; nothing outside the target instance should
    hard-code them. ``calibration`` keeps the reference points, ``(bytes, cycles)`` pairs, that
    some of them were fitted through (``calibration["mte2"]``).
    """

    name: str
    core_groups: int
    aic_per_group: int
    aiv_per_group: int
    clock_mhz: float
    memory: Mapping[MemorySpace, MemorySpec]
    data_paths: frozenset[tuple[MemorySpace, MemorySpace]]
    max_pipe_slots: int = 8
    default_slot_num: int = 2
    cost: Mapping[str, float] = field(default_factory=dict)
    calibration: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)

    def spec(self, space: MemorySpace) -> MemorySpec:
        return self.memory[space]

    def usable(self, space: MemorySpace) -> int:
        return self.memory[space].usable

    def spaces_of(self, core: str) -> tuple[MemorySpace, ...]:
        """The on-chip spaces a core of kind ``core`` has: ``spaces_of("AIV") == (MemorySpace.Vec,)``."""
        return tuple(space for space, spec in self.memory.items() if spec.core == core)

    def is_legal_path(self, src: MemorySpace, dst: MemorySpace) -> bool:
        return (src, dst) in self.data_paths

    def routes(self) -> list[str]:
        """Legal data paths as ``"DDR->Vec"`` strings, in a stable order."""
        order = list(MemorySpace)
        pairs = sorted(self.data_paths, key=lambda p: (order.index(p[0]), order.index(p[1])))
        return [f"{s.name}->{d.name}" for s, d in pairs]
