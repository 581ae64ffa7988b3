"""The Orchestration function on the host, as a coroutine for the scheduler.

:class:`HostFrame` is the shared host walker (:class:`pypto.ir.walker.HostWalker`) with the chip's
meaning of a ``call``: it submits the kernel's task and goes on without waiting for it; the chip's
scheduler starts the task when its dependencies are done. ``call.attrs["task"]`` binds the task to
a name that later ``deps`` name; the iterations of a ``pl.parallel`` loop are recorded so that
their tasks take no edges from each other. Reading a tensor (``pl.read``) waits for the tasks
that write it.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Sequence
from typing import Any, Protocol

from pypto.ir import Call, Expr, For, Function, LoopKind, Var
from pypto.ir.launch import LaunchPlan, LoadedProgram
from pypto.ir.ops import scalar
from pypto.ir.walker import HostWalker
from pypto_sim_a2a3.scheduler import Event
from pypto_sim_a2a3.semantics import SEMANTICS
from pypto_sim_a2a3.taskgraph import ParallelContext, Task

Steps = Generator[Event, None, Any]
_READ = scalar.read


class TaskHost(Protocol):
    """What the host asks of the chip: to submit a task, and to wait for a tensor's writers."""

    def submit(
        self,
        plan: LaunchPlan,
        call: Call,
        args: Sequence[Any],
        parallel: ParallelContext,
        declared: Sequence[Task],
    ) -> Generator[Event, None, Task]: ...

    def wait_for_writers(self, tensor: Any, what: str, call: Call) -> Generator[Event, None, None]: ...


class HostFrame(HostWalker):
    """The Orchestration function on the host: creates GM tensors and submits kernel calls as tasks."""

    platform = "a2a3sim"

    def __init__(self, fn: Function, args: Sequence[Any], loaded: LoadedProgram, chip: TaskHost):
        super().__init__(fn, args, loaded, SEMANTICS)
        self.chip = chip
        self.parallel: tuple[tuple[int, int], ...] = ()  # (loop instance, iteration), outermost first
        self._loops = itertools.count()

    def exec_for(self, loop: For) -> Generator[Event, None, tuple[Any, ...] | None]:
        if loop.kind is not LoopKind.parallel:
            return (yield from super().exec_for(loop))
        instance, outer = next(self._loops), self.parallel
        try:
            for i in (yield from self.loop_range(loop)):
                self.env[loop.var.name] = i
                self.parallel = (*outer, (instance, i))
                returned = yield from self.exec_body(loop.body)
                if isinstance(returned, tuple):  # a return (the parser allows no jumps here)
                    return returned
        finally:
            self.parallel = outer
        return None

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == _READ:
            yield from self.chip.wait_for_writers(args[0], f"the tasks writing {_name(call.args[0])}", call)
        return (yield from super().apply(call, args))

    def launch(self, plan: LaunchPlan, call: Call, args: tuple[Any, ...]) -> Steps:
        declared = [self._task(name, call) for name in call.attrs.get("deps", ())]
        task = yield from self.chip.submit(plan, call, args, self.parallel, declared)
        if "task" in call.attrs:
            self.env[call.attrs["task"]] = task

    def _task(self, name: str, call: Call) -> Task:
        value = self.env.get(name)
        if not isinstance(value, Task):
            raise self.error(f"deps= names {name}, which is not a task submitted earlier", call)
        return value


def _name(expr: Expr) -> str:
    return expr.name if isinstance(expr, Var) else "the tensor"
