"""The cores of the simulated chip: a clock, busy and stall cycles, on-chip memory; core groups."""

from __future__ import annotations

from dataclasses import dataclass

from pypto.ir import Target
from pypto_sim_a2a3.hw.memory import CoreMemory
from pypto_sim_a2a3.target import CoreKind, core_memory_spaces


@dataclass(eq=False)
class Core:
    """One core (or the host): a modeled clock, its busy and stall cycles, and its on-chip memory.

    ``task`` names the kernel the core runs now, so the timeline can attribute its slices.
    """

    name: str
    memory: CoreMemory | None = None
    clock: int = 0
    busy: int = 0
    stalled: int = 0
    task: str = ""

    def advance(self, unit: str, cycles: int) -> None:
        """Spend ``cycles`` on ``unit``: the clock moves and the core counts as busy."""
        self.clock += cycles
        self.busy += cycles

    def stall(self, cycles: int) -> None:
        """Wait ``cycles`` blocked on a pipe, a barrier or a task: the clock moves, nothing is busy."""
        self.clock += cycles
        self.stalled += cycles


@dataclass(eq=False)
class CoreGroup:
    """One AIC and its AIV lanes, e.g. ``cg0.AIC``, ``cg0.AIV0``, ``cg0.AIV1``."""

    index: int
    aic: Core
    aiv: tuple[Core, ...]

    @classmethod
    def build(cls, index: int, target: Target) -> CoreGroup:
        """A core group of ``target`` with fresh memory."""

        def core(name: str, kind: CoreKind) -> Core:
            return Core(f"cg{index}.{name}", CoreMemory(target, core_memory_spaces(target, kind)))

        aiv = tuple(core(f"AIV{lane}", CoreKind.AIV) for lane in range(target.aiv_per_group))
        return cls(index, core("AIC", CoreKind.AIC), aiv)

    @property
    def cores(self) -> tuple[Core, ...]:
        return (self.aic, *self.aiv)
