"""One discrete-event scheduler driving every core's coroutine.

A coroutine is a generator that yields :class:`Advance` when its core spends cycles on a unit
and :class:`Wait` when it cannot go on (a task it waits for, later a full or empty pipe ring).
The scheduler always steps the runnable coroutine whose core clock is earliest, re-checks blocked
coroutines after every step, and raises ``DeadlockError`` when every live coroutine is blocked.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir import DeadlockError, SourceSpan


@dataclass(frozen=True)
class Advance:
    """Yielded by a coroutine: its core spends ``cycles`` modeled cycles on ``unit``."""

    unit: str
    cycles: int


@dataclass(frozen=True)
class Wait:
    """Yielded by a coroutine: it is blocked until ``ready()``; ``what`` names the wait in reports."""

    ready: Callable[[], bool]
    what: str
    span: SourceSpan | None = None


Event = Advance | Wait
Coroutine = Generator[Event, None, Any]


class Clocked(Protocol):
    """What the scheduler needs of a core: a name and a clock it can move forward."""

    name: str
    clock: int

    def advance(self, unit: str, cycles: int) -> None: ...


@dataclass(eq=False)
class Process:
    """A coroutine bound to the core whose clock it advances."""

    core: Clocked
    coroutine: Coroutine
    result: Any = None
    done: bool = False
    waiting: Wait | None = None


class Scheduler:
    """Runs processes in order of their cores' clocks.

    ``proc = scheduler.spawn(core, coroutine); scheduler.run(); proc.result``
    """

    def __init__(self) -> None:
        self.now = 0
        self._runnable: list[tuple[int, int, Process]] = []
        self._blocked: list[Process] = []
        self._order = itertools.count()

    def spawn(self, core: Clocked, coroutine: Coroutine) -> Process:
        """Start ``coroutine`` on ``core`` at the core's current clock."""
        proc = Process(core, coroutine)
        self._push(proc)
        return proc

    def run(self) -> None:
        """Step processes until all finish; ``DeadlockError`` if every live one is blocked."""
        while self._runnable or self._blocked:
            self._wake_ready()
            if not self._runnable:
                raise self._deadlock()
            _, _, proc = heapq.heappop(self._runnable)
            self.now = proc.core.clock
            self._step(proc)

    def _push(self, proc: Process) -> None:
        heapq.heappush(self._runnable, (proc.core.clock, next(self._order), proc))

    def _step(self, proc: Process) -> None:
        try:
            event = next(proc.coroutine)
        except StopIteration as stop:
            proc.result, proc.done = stop.value, True
            return
        if isinstance(event, Advance):
            proc.core.advance(event.unit, event.cycles)
            self._push(proc)
        else:
            proc.waiting = event
            self._blocked.append(proc)

    def _wake_ready(self) -> None:
        blocked, self._blocked = self._blocked, []
        for proc in blocked:
            assert proc.waiting is not None
            if proc.waiting.ready():
                proc.waiting = None
                # A woken core resumes when the event that freed it happened, not earlier.
                proc.core.clock = max(proc.core.clock, self.now)
                self._push(proc)
            else:
                self._blocked.append(proc)

    def _deadlock(self) -> DeadlockError:
        lines = []
        for proc in self._blocked:
            assert proc.waiting is not None
            where = f" at {proc.waiting.span}" if proc.waiting.span else ""
            lines.append(f"  {proc.core.name} waits for {proc.waiting.what}{where}")
        first = self._blocked[0].waiting
        return DeadlockError(
            "every live core is blocked:\n" + "\n".join(lines),
            first.span if first else None,
            "each wait needs another core to make progress; check the order of pushes and pops",
        )
