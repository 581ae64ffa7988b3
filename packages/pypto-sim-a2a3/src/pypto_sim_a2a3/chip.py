"""The simulated chip: cores with clocks and memory, core groups, and task launch.

The orchestration runs as a coroutine on a ``host`` clock. A ``call`` launches the callee as a
task (see :mod:`pypto_sim_a2a3.launch`): each core the kernel needs — one for an AIC or AIV
kernel, the AIC and both AIV lanes for a Group kernel — gets a :class:`KernelFrame` coroutine
under the same :class:`Scheduler`, and the host waits until they all finish. The task's modeled
time is the max of its cores' clocks. Today every task runs on core group 0, one after another.
A :class:`~pypto_sim_a2a3.timeline.Recorder` keeps every core's busy and stalled slices, ring
occupancy and pipe transfers for the report.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir import Call, Function, Program, RunReport, Target, TaskRecord
from pypto_sim_a2a3.cost import CostModel
from pypto_sim_a2a3.interpreter import HostFrame, KernelFrame
from pypto_sim_a2a3.launch import Placement, plan_launch, resolve_callee
from pypto_sim_a2a3.memory import CoreMemory
from pypto_sim_a2a3.scheduler import Advance, Event, Scheduler, Wait
from pypto_sim_a2a3.target import CORE_MEMORY_SPACES, CoreKind
from pypto_sim_a2a3.timeline import Recorder


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
            return Core(f"cg{index}.{name}", CoreMemory(target, CORE_MEMORY_SPACES[kind]))

        aiv = tuple(core(f"AIV{lane}", CoreKind.AIV) for lane in range(target.aiv_per_group))
        return cls(index, core("AIC", CoreKind.AIC), aiv)

    @property
    def cores(self) -> tuple[Core, ...]:
        return (self.aic, *self.aiv)


class Chip:
    """One simulated chip running one program."""

    def __init__(self, program: Program, target: Target, platform: str):
        self.program = program
        self.target = target
        self.platform = platform
        self.cost = CostModel(target)
        self.scheduler = Scheduler()
        self.recorder = Recorder(self.scheduler)
        self.host = Core("host")
        self.groups: dict[int, CoreGroup] = {}
        self.tasks: list[TaskRecord] = []

    def run(self, entry: Function, args: Sequence[Any]) -> tuple[Any, ...]:
        """Run the orchestration ``entry`` to completion; return what its ``Return`` gave."""
        proc = self.scheduler.spawn(self.host, HostFrame(entry, args, self).run())
        self.scheduler.run()
        return proc.result

    def core_group(self, index: int) -> CoreGroup:
        """Core group ``index``, built on first use."""
        if index not in self.groups:
            self.groups[index] = CoreGroup.build(index, self.target)
        return self.groups[index]

    def launch(self, call: Call, args: Sequence[Any]) -> Generator[Event, None, tuple[Any, ...]]:
        """Host side of a ``call``: dispatch the callee, wait for its cores, return its results."""
        kernel = resolve_callee(self.program, call, args)
        group = self.core_group(0)
        launch, placements = plan_launch(
            self.program, kernel, tuple(args), call, group, self.target, self.recorder
        )
        cores = [placement.role.core for placement in placements]
        dispatch = self.cost.launch_cycles(after_another_task=bool(self.tasks))
        yield Advance("AICPU", dispatch, f"dispatch {kernel.name}", call.span)
        for core in cores:
            core.clock = max(core.clock, self.host.clock)
            core.task = kernel.name
        start = min(core.clock for core in cores)
        procs = [self.scheduler.spawn(p.role.core, self._run_kernel(p)) for p in placements]
        what = f"task {kernel.name} on cg{group.index}"
        yield Wait(lambda: all(p.done for p in procs), what, call.span)
        launch.check_drained()
        self.tasks.append(TaskRecord(kernel.name, group.index, start, max(c.clock for c in cores)))
        yield Advance("AICPU", self.cost.retire_cycles(), f"retire {kernel.name}", call.span)
        return procs[0].result

    def _run_kernel(self, placement: Placement) -> Generator[Event, None, tuple[Any, ...]]:
        role = placement.role
        result = yield from KernelFrame(placement.kernel, placement.args, role, self.cost).run()
        role.launch.finish(role)
        return result

    def report(self, outputs: tuple[Any, ...]) -> RunReport:
        """The run's modeled timing (busy and stall cycles per core, the timeline) and the entry's
        returned values."""
        cores = [core for index in sorted(self.groups) for core in self.groups[index].cores]
        return RunReport(
            platform=self.platform,
            clock_mhz=self.target.clock_mhz,
            total_cycles=self.host.clock,
            tasks=list(self.tasks),
            busy_cycles={core.name: core.busy for core in cores},
            outputs=outputs,
            stall_cycles={core.name: core.stalled for core in cores},
            timeline=self.recorder.slices,
            rings=self.recorder.rings,
            transfers=self.recorder.transfers,
            aiv_per_group=self.target.aiv_per_group,
        )
