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

    Times are modeled by the backend's cost model (``modeled=True``), never measured.
    """

    platform: str
    clock_mhz: float
    total_cycles: int = 0
    tasks: list[TaskRecord] = field(default_factory=list)
    busy_cycles: dict[str, int] = field(default_factory=dict)  # per core, e.g. "cg0.AIC"
    trace_events: list[dict[str, Any]] = field(default_factory=list)
    memory_map: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[Any, ...] = ()  # the values the entry function returned, in order
    modeled: bool = True

    @property
    def total_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    def summary(self) -> str:
        return (
            f"{self.platform}: {self.total_cycles} modeled cycles "
            f"({self.total_us:.2f} modeled us at {self.clock_mhz:g} MHz), {len(self.tasks)} task(s)"
        )


@runtime_checkable
class Backend(Protocol):
    """A platform that can run lowered programs. Registered through the ``pypto`` plugin hooks."""

    name: str
    target: Target

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry with ``args`` (backend-native tensors, written in place)."""
        ...
