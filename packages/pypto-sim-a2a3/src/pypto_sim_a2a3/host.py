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
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from pypto.ir import Call, Expr, For, Function, If, LoopKind, SourceSpan, Var, While
from pypto.ir.launch import LaunchPlan, LoadedProgram
from pypto.ir.ops import scalar, tensor
from pypto.ir.walker import HostWalker, Jump
from pypto_sim_a2a3.runtime_rings import Scope
from pypto_sim_a2a3.scheduler import Event
from pypto_sim_a2a3.semantics import SEMANTICS
from pypto_sim_a2a3.taskgraph import ParallelContext, Task

Steps = Generator[Event, None, Any]
_READ = scalar.read
_CREATE = tensor.create


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

    def open_scope(self, span: SourceSpan | None, what: str) -> Scope: ...

    def close_scope(self, scope: Scope) -> None: ...

    def created(self, tensor: Any) -> None: ...


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
                with self._scope(loop.span, "an iteration of the loop"):
                    returned = yield from self.exec_body(loop.body)
                if isinstance(returned, tuple):  # a return (the parser allows no jumps here)
                    return returned
        finally:
            self.parallel = outer
        return None

    def iteration(self, loop: For | While) -> Generator[Event, None, tuple[Any, ...] | Jump | None]:
        """One iteration in a runtime scope of its own, one deeper than the loop's."""
        with self._scope(loop.span, "an iteration of the loop"):
            return (yield from super().iteration(loop))

    def exec_if(self, stmt: If) -> Generator[Event, None, tuple[Any, ...] | Jump | None]:
        """The arm taken, in a runtime scope of its own, one deeper than the ``if``."""
        with self._scope(stmt.span, "an arm of the if"):
            return (yield from super().exec_if(stmt))

    def call_control(self, fn: Function, args: tuple[Any, ...]) -> Steps:
        """A control function's body, in a runtime scope of its own, one deeper than its call."""
        with self._scope(fn.span, f"the body of {fn.name}"):
            return (yield from super().call_control(fn, args))

    @contextmanager
    def _scope(self, span: SourceSpan | None, what: str) -> Iterator[None]:
        """The runtime scope the compiler places around a function body, a loop body and an arm:
        the tasks submitted in it hold their ring until it ends (see pypto_sim_a2a3.runtime_rings)."""
        scope = self.chip.open_scope(span, what)
        try:
            yield
        finally:
            self.chip.close_scope(scope)

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == _READ:
            yield from self.chip.wait_for_writers(args[0], f"the tasks writing {_name(call.args[0])}", call)
        value = yield from super().apply(call, args)
        if call.op == _CREATE:
            self.chip.created(value)
        return value

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
