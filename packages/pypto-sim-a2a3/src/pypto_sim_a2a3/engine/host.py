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
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from pypto.ir import Call, Expr, For, Function, If, LoopKind, SourceSpan, Var, While
from pypto.ir.launch import LaunchPlan, LoadedProgram
from pypto.ir.ops import scalar, tensor
from pypto.ir.walker import HostWalker, Jump
from pypto_sim_a2a3.engine.runtime_rings import Scope
from pypto_sim_a2a3.engine.scheduler import Event
from pypto_sim_a2a3.engine.semantics import SEMANTICS
from pypto_sim_a2a3.engine.steering import UnrealGm, written_text
from pypto_sim_a2a3.engine.taskgraph import ParallelContext, PredicateSite, Task

Steps = Generator[Event, None, Any]
_READ = scalar.read
_CREATE = tensor.create


class TaskHost(Protocol):
    """What the host asks of the chip: to submit a task or a join, and to wait for a tensor's
    writers; in a timing-only run, the GM its tasks wrote without numbers (``unreal``)."""

    unreal: UnrealGm | None

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

    def open_scope(self, span: SourceSpan | None, what: str) -> Scope: ...

    def close_scope(self, scope: Scope) -> None: ...

    def created(self, tensor: Any) -> None: ...


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
        the tasks submitted in it hold their ring until it ends (see pypto_sim_a2a3.engine.runtime_rings)."""
        scope = self.chip.open_scope(span, what)
        try:
            yield
        finally:
            self.chip.close_scope(scope)

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == _READ:
            element = _element(args[0], args[1])
            yield from self.chip.wait_for_writers(element, f"the tasks writing {_name(call.args[0])}", call)
            if self.chip.unreal is not None:  # a timing-only run: the element must hold its number
                self.chip.unreal.check_element(
                    element, call, _name(call.args[0]), written_text(call.span, "pl.read")
                )
        value = yield from super().apply(call, args)
        if call.op == _CREATE:
            self.chip.created(value)
        return value

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


def _element(tensor: Any, offsets: Sequence[Any]) -> Any:
    """The element a host read reads, as a view of its tensor (what it waits for the writers of)."""
    if len(offsets) != tensor.dim():
        return tensor  # (the read's own check reports it)
    return tensor[tuple(slice(int(o), int(o) + 1) for o in offsets)]


def _name(expr: Expr) -> str:
    return expr.name if isinstance(expr, Var) else "the tensor"
