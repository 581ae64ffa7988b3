"""The simulated chip: cores with clocks and memory, core groups, and task launch.

The orchestration runs as a coroutine on a ``host`` clock. A ``call`` launches the callee as a
task: each core the kernel needs gets a :class:`KernelFrame` coroutine under the same
:class:`Scheduler`, and the host waits until they all finish. Today every task runs on core
group 0, one after another.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    Call,
    Function,
    FunctionKind,
    PlatformError,
    Program,
    RunReport,
    Target,
    TaskRecord,
    VerificationError,
)
from pypto_sim_a2a3.arguments import argument_mismatch
from pypto_sim_a2a3.cost import CostModel
from pypto_sim_a2a3.interpreter import HostFrame, KernelFrame
from pypto_sim_a2a3.memory import CoreMemory
from pypto_sim_a2a3.scheduler import Advance, Event, Scheduler, Wait
from pypto_sim_a2a3.target import CORE_MEMORY_SPACES, CoreKind


@dataclass(eq=False)
class Core:
    """One core (or the host): a modeled clock, its busy and stall cycles, and its on-chip memory."""

    name: str
    memory: CoreMemory | None = None
    clock: int = 0
    busy: int = 0
    stalled: int = 0

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

    def cores_for(self, kernel: Function, call: Call) -> tuple[Core, ...]:
        """The cores that run ``kernel``: the AIC for AIC kernels, AIV lane 0 for AIV kernels."""
        if kernel.kind is FunctionKind.AIC:
            return (self.aic,)
        if kernel.kind is FunctionKind.AIV:
            return (self.aiv[0],)
        if kernel.kind is FunctionKind.Group:
            raise PlatformError(
                f"kernel {kernel.name} is a Group kernel, which a2a3sim cannot run yet",
                call.span,
                "run AIC and AIV kernels separately for now",
            )
        raise VerificationError(
            f"{kernel.name} is a {kernel.kind.value} function, not a kernel a core can run",
            call.span,
            "run the pass pipeline: it splits InCore functions into AIC and AIV kernels",
        )


class Chip:
    """One simulated chip running one program."""

    def __init__(self, program: Program, target: Target, platform: str):
        self.program = program
        self.target = target
        self.platform = platform
        self.cost = CostModel(target)
        self.scheduler = Scheduler()
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
        kernel = self._callee(call, args)
        group = self.core_group(0)
        cores = group.cores_for(kernel, call)
        yield Advance("AICPU", self.cost.launch_cycles(after_another_task=bool(self.tasks)))
        for core in cores:
            core.clock = max(core.clock, self.host.clock)
        start = min(core.clock for core in cores)
        procs = [self.scheduler.spawn(c, KernelFrame(kernel, args, c, self.cost).run()) for c in cores]
        what = f"task {kernel.name} on cg{group.index}"
        yield Wait(lambda: all(p.done for p in procs), what, call.span)
        self.tasks.append(TaskRecord(kernel.name, group.index, start, max(c.clock for c in cores)))
        yield Advance("AICPU", self.cost.retire_cycles())
        return procs[0].result

    def _callee(self, call: Call, args: Sequence[Any]) -> Function:
        name = call.attrs.get("callee")
        try:
            kernel = self.program.function(name)
        except KeyError:
            raise VerificationError(f"call to unknown kernel {name!r}", call.span) from None
        if len(args) != len(kernel.params):
            raise VerificationError(
                f"kernel {kernel.name} takes {len(kernel.params)} argument(s) but is called with {len(args)}",
                call.span,
            )
        for param, value in zip(kernel.params, args, strict=True):
            problem = argument_mismatch(param, value)
            if problem is not None:
                message = f"kernel {kernel.name}: parameter {param.var.name} {problem}"
                raise VerificationError(message, call.span)
        return kernel

    def report(self, outputs: tuple[Any, ...]) -> RunReport:
        """The run's modeled timing and the entry's returned values."""
        cores = [core for index in sorted(self.groups) for core in self.groups[index].cores]
        return RunReport(
            platform=self.platform,
            clock_mhz=self.target.clock_mhz,
            total_cycles=self.host.clock,
            tasks=list(self.tasks),
            busy_cycles={core.name: core.busy for core in cores},
            outputs=outputs,
        )
