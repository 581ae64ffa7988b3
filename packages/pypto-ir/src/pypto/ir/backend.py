"""The backend contract: what a plugin implements and what a run returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pypto.ir.nodes import Program
from pypto.ir.target import Target


@dataclass
class TaskRecord:
    """One kernel launch on one core group, in modeled cycles."""

    kernel: str
    core_group: int
    start_cycle: int
    end_cycle: int


@dataclass
class RunReport:
    """What a backend returns after running a program.

    Times are modeled by the backend's cost model (``modeled=True``), never measured. Per-core
    figures are keyed by core name: ``"cg0.AIC"``, ``"cg0.AIV0"``, ``"cg0.AIV1"``. A core is
    *busy* while it executes ops and *stalled* while it waits on a pipe, a barrier or a peer.
    """

    platform: str
    clock_mhz: float
    total_cycles: int = 0
    tasks: list[TaskRecord] = field(default_factory=list)
    busy_cycles: dict[str, int] = field(default_factory=dict)
    stall_cycles: dict[str, int] = field(default_factory=dict)
    trace_events: list[dict[str, Any]] = field(default_factory=list)
    memory_map: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[Any, ...] = ()  # the values the entry function returned, in order
    modeled: bool = True

    @property
    def total_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    def idle_cycles(self, core: str) -> int:
        return max(0, self.total_cycles - self.busy_cycles.get(core, 0) - self.stall_cycles.get(core, 0))

    def dominant_side(self, margin: float = 1.2) -> str | None:
        """``"cube"`` or ``"vector"`` when the busiest core of one side is busy ``margin`` times
        longer than the busiest of the other; None when they are balanced or one side is unused."""
        cube = max((v for k, v in self.busy_cycles.items() if k.endswith(".AIC")), default=0)
        vector = max((v for k, v in self.busy_cycles.items() if ".AIV" in k), default=0)
        if not cube or not vector:
            return None
        if cube > margin * vector:
            return "cube"
        if vector > margin * cube:
            return "vector"
        return None

    def summary(self) -> str:
        """A few lines: total modeled time, each core's busy/stall/idle, and the bottleneck."""
        lines = [
            f"{self.platform}: {self.total_cycles} modeled cycles "
            f"({self.total_us:.2f} modeled us at {self.clock_mhz:g} MHz), {len(self.tasks)} task(s)"
        ]
        for core in sorted(self.busy_cycles):
            busy, stall = self.busy_cycles[core], self.stall_cycles.get(core, 0)
            if busy or stall:
                lines.append(
                    f"  {core:<10} busy {busy:>9}  stall {stall:>9}  idle {self.idle_cycles(core):>9}"
                    "  (modeled cycles)"
                )
        side = self.dominant_side()
        if side is not None:
            other = "vector lanes" if side == "cube" else "cube"
            lines.append(
                f"  the {side} side dominates: the {other} wait on it, so overlap cannot hide it; "
                f"shorten the {side} work to go faster"
            )
        return "\n".join(lines)


@runtime_checkable
class Backend(Protocol):
    """A platform that can run lowered programs. Registered through the ``pypto`` plugin hooks."""

    name: str
    target: Target

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry with ``args`` (backend-native tensors, written in place)."""
        ...
