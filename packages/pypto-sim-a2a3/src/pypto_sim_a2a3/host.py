"""The Orchestration function on the host, as a coroutine for the scheduler.

:class:`HostFrame` is the shared host walker (:class:`pypto.ir.walker.HostWalker`) with the chip's
meaning of a ``call``: it submits the kernel's task and goes on without waiting for it; the chip's
scheduler starts the task when its dependencies are done. ``call.attrs["task"]`` binds the task to
a name that later ``deps`` name (a ``pl.TASK_ID`` array holds such tasks; ``pl.system.task_dummy``
submits a join); the iterations of a ``pl.parallel`` loop are recorded so that their tasks take no
edges from each other. Reading a tensor (``pl.read``) waits for the tasks that write it.
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
from pypto_sim_a2a3.taskgraph import ParallelContext, PredicateSite, Task

Steps = Generator[Event, None, Any]
_READ = scalar.read


class TaskHost(Protocol):
    """What the host asks of the chip: to submit a task or a join, and to wait for a tensor's writers."""

    def submit(
        self,
        plan: LaunchPlan,
        call: Call,
        args: Sequence[Any],
        parallel: ParallelContext,
        declared: Sequence[Task],
        predicate: PredicateSite | None = None,
    ) -> Generator[Event, None, Task]: ...

    def join(self, call: Call, declared: Sequence[Task]) -> Generator[Event, None, Task]: ...

    def wait_for_writers(self, tensor: Any, what: str, call: Call) -> Generator[Event, None, None]: ...


class HostFrame(HostWalker):
    """The Orchestration function on the host: creates GM tensors and submits kernel calls as tasks."""

    platform = "a2a3sim"

    def __init__(self, fn: Function, args: Sequence[Any], loaded: LoadedProgram, chip: TaskHost):
        super().__init__(fn, args, loaded, SEMANTICS)
        self.chip = chip
        self.parallel: ParallelContext = ()  # (loop instance, iteration), outermost first
        self._loops = itertools.count()
        self._instances: dict[int, tuple[int, ParallelContext]] = {}  # id(loop) -> instance, outer

    def exec_for(self, loop: For) -> Generator[Event, None, tuple[Any, ...] | None]:
        if loop.kind is not LoopKind.parallel:
            return (yield from super().exec_for(loop))
        outer = self.parallel
        self._instances[id(loop)] = (next(self._loops), outer)
        try:
            return (yield from super().exec_for(loop))
        finally:
            self.parallel = outer

    def bind_loop_var(self, loop: For, value: int) -> None:
        super().bind_loop_var(loop, value)
        if loop.kind is LoopKind.parallel:
            instance, outer = self._instances[id(loop)]
            self.parallel = (*outer, (instance, value))

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == _READ:
            yield from self.chip.wait_for_writers(args[0], f"the tasks writing {_name(call.args[0])}", call)
        return (yield from super().apply(call, args))

    def launch(self, plan: LaunchPlan, call: Call, args: tuple[Any, ...]) -> Steps:
        declared = self._declared(call)
        predicate = self.predicate_site(call)
        task = yield from self.chip.submit(plan, call, args, self.parallel, declared, predicate)
        if "task" in call.attrs:
            self.env[call.attrs["task"]] = task

    def join(self, call: Call) -> Steps:
        return (yield from self.chip.join(call, self._declared(call)))

    def _declared(self, call: Call) -> list[Task]:
        declared = self.declared_tasks(call)
        for handle in declared:
            if not isinstance(handle, Task):
                raise self.error(f"deps= names a {type(handle).__name__}, which is no task id", call)
        return declared


def _name(expr: Expr) -> str:
    return expr.name if isinstance(expr, Var) else "the tensor"
