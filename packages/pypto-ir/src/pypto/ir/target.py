"""The ``Target`` schema: plain data describing a chip. Backends ship the instances."""

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


@dataclass(frozen=True)
class Target:
    """Facts about a chip that the compiler and a backend's cost model need.

    ``cost`` holds named cost-model constants; nothing outside the target instance should
    hard-code them.
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

    def spec(self, space: MemorySpace) -> MemorySpec:
        return self.memory[space]

    def usable(self, space: MemorySpace) -> int:
        return self.memory[space].usable

    def is_legal_path(self, src: MemorySpace, dst: MemorySpace) -> bool:
        return (src, dst) in self.data_paths

    def routes(self) -> list[str]:
        """Legal data paths as ``"DDR->Vec"`` strings, in a stable order."""
        order = list(MemorySpace)
        pairs = sorted(self.data_paths, key=lambda p: (order.index(p[0]), order.index(p[1])))
        return [f"{s.name}->{d.name}" for s, d in pairs]
