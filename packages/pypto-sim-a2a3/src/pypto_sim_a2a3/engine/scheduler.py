"""One discrete-event scheduler driving every core's coroutine.

A coroutine is a generator that yields :class:`Advance` when its core spends cycles on a unit
and :class:`Wait` when it cannot go on (a task it waits for, a full or empty pipe ring, a
barrier). The scheduler always steps the runnable coroutine whose core clock is earliest and
raises ``DeadlockError`` when every live coroutine is blocked.

Wake-ups are event-driven: a wait names the :class:`Signal` of each piece of state it depends on
(a pipe's rings, a barrier, the chip's task state), the owner of that state calls
:meth:`Signal.changed` when it changes, and after a step the scheduler re-checks only the waits
on a changed signal (in the order they blocked, as a poll of every wait would). A wait that names
no signal is re-checked after every step. ``check_wakeups=True`` (``SimOptions.check_wakeups``,
``PYPTO_SIM_CHECK_WAKEUPS=1``) checks the signals: the
other waits are polled too, and one that is ready without its signal having changed is an error.

A woken core's clock jumps to the time of the step that freed it; those
cycles are *stall*, kept apart from the busy cycles of ``Advance``. An observer (see
:meth:`Scheduler.observe`) sees every busy and every stalled stretch of every core as it happens.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir import DeadlockError, SourceSpan
from pypto.ir.records import frozen_record


@dataclass(frozen=True)
class Advance:
    """Yielded by a coroutine: its core spends ``cycles`` modeled cycles on ``unit``.

    ``op`` and ``span`` say what the cycles were spent on; ``peak_cycles`` and ``roof`` what
    that work needs at the unit's peak rate (see :class:`pypto_sim_a2a3.hw.cost.OpCost`).
    """

    unit: str
    cycles: int
    op: str = ""
    span: SourceSpan | None = None
    peak_cycles: float = 0.0
    roof: str | None = None
    silent: bool = False  # a kernel core's issue step: its pipes record what the core does

    @classmethod
    def scalar(cls, cycles: int) -> Advance:
        """``Advance("SCALAR", cycles, silent=True)``: a kernel core's scalar unit issuing or
        waiting (a :func:`~pypto.ir.records.frozen_record`: a core yields one per op)."""
        return frozen_record(
            cls,
            {
                "unit": "SCALAR",
                "cycles": cycles,
                "op": "",
                "span": None,
                "peak_cycles": 0.0,
                "roof": None,
                "silent": True,
            },
        )


@dataclass(frozen=True)
class Blocked:
    """Why a coroutine cannot go on: its line of a deadlock report and, if known, the root cause.

    ``Blocked("tpush_to_aiv on pipe mixed_c2v blocks at k.py:9: ...", cause=pop_span, hint=...)``
    """

    text: str
    cause: SourceSpan | None = None  # the user's line to blame, e.g. a pop that was never freed
    hint: str | None = None


class Signal:
    """A piece of state a :class:`Wait` can be blocked on: its owner calls :meth:`changed` after
    every change that may let a wait on it go on, and the scheduler re-checks those waits."""

    __slots__ = ("_scheduler", "_waiters")

    def __init__(self) -> None:
        self._waiters: dict[Any, None] = {}  # blocked processes to re-check, in no order
        self._scheduler: Any = None  # the scheduler they block under (Python or compiled)

    def changed(self) -> None:
        """The state changed: every wait on it is re-checked after the current step."""
        if self._waiters:
            self._scheduler._signalled(self._waiters)


@dataclass(frozen=True)
class Wait:
    """Yielded by a coroutine: it is blocked until ``ready()``; ``what`` names the wait in reports.

    ``explain`` (called only when the run deadlocks) describes the wait from the state it is
    blocked on; without it the report says "waits for <what> at <span>".
    """

    ready: Callable[[], bool]
    what: str
    span: SourceSpan | None = None
    explain: Callable[[], Blocked] | None = None
    silent: bool = False  # a kernel core's wait: its pipes record the stall where it delays them
    # The core's clock does not wait: only the coroutine does (a push waiting for a free ring slot
    # holds the pipe that sends, which its pipes model, while the scalar unit issues on). A woken
    # core then resumes at its own clock, and until it does, no event after that clock is handled.
    keeps_clock: bool = False
    # The state ``ready`` reads: the wait is re-checked only once one of them changed (after
    # every step if empty).
    on: tuple[Signal, ...] = ()

    def blocked(self) -> Blocked:
        """This wait's line of a deadlock report."""
        if self.explain is not None:
            return self.explain()
        where = f" at {self.span}" if self.span else ""
        return Blocked(f"waits for {self.what}{where}")


Event = Advance | Wait
Coroutine = Generator[Event, None, Any]


class Clocked(Protocol):
    """What the scheduler needs of a core: a name and a clock it can move forward."""

    name: str
    clock: int

    def advance(self, unit: str, cycles: int) -> None: ...

    def stall(self, cycles: int) -> None: ...


class Observer(Protocol):
    """Called for each stretch of a core's time: ``event`` is the Advance it was busy with, or the
    Wait it was stalled in; the stretch starts at ``start`` and lasts ``cycles``."""

    def __call__(self, core: Clocked, start: int, cycles: int, event: Event) -> None: ...


@dataclass(eq=False)
class Process:
    """A coroutine bound to the core whose clock it advances."""

    core: Clocked
    coroutine: Coroutine
    order: int = 0  # spawn order: deadlock reports list cores in it
    result: Any = None
    done: bool = False
    waiting: Wait | None = None
    dirty: bool = False  # a signal its wait is on changed since the wait was last checked
    # Told, when its wait is over, the process whose step ended it (a recording of its steps).
    on_wake: Callable[[Process | None], None] | None = None
    seq: int = 0  # when its current wait began: blocked processes are checked in this order


class Scheduler:
    """Runs processes in order of their cores' clocks.

    ``proc = scheduler.spawn(core, coroutine); scheduler.run(); proc.result``
    """

    def __init__(self, on_time: Callable[[int], None] | None = None, check_wakeups: bool = False) -> None:
        self.now = 0
        self._runnable: list[tuple[int, int, Process]] = []
        self._blocked: dict[Process, None] = {}  # in the order they blocked
        self._kept: dict[Process, None] = {}  # the blocked whose wait keeps their clock
        # (seq, process) of each blocked process to check in the next pass: those whose signal
        # changed and those whose wait names none (polled: checked in every pass)
        self._due: list[tuple[int, Process]] = []
        self._order = itertools.count()
        self._blocks = itertools.count()
        self._observers: list[Observer] = []
        self._on_time = on_time  # told the clock before each step (events queued by modeled time)
        self._check_signals = check_wakeups
        self.stepping: Process | None = None  # the process of the latest step

    def waiting(self) -> list[tuple[str, Wait]]:
        """The blocked cores and what each waits for, in the order they blocked (the debugger's view)."""
        return [(proc.core.name, proc.waiting) for proc in self._blocked if proc.waiting is not None]

    def release(self) -> None:
        """After the run: drop the observers (a recorder names its scheduler back: a cycle)."""
        self._observers.clear()

    def observe(self, observer: Observer) -> None:
        """Have ``observer`` see every busy and stalled stretch from now on."""
        self._observers.append(observer)

    def spawn(self, core: Clocked, coroutine: Coroutine) -> Process:
        """Start ``coroutine`` on ``core`` at the core's current clock."""
        proc = Process(core, coroutine, order=next(self._order))
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
            if self._on_time is not None:
                self._on_time(min(self.now, *self._kept_clocks()) if self._kept else self.now)
            self._step(proc)

    def run_until(self, horizon: int) -> int | None:
        """Step every process whose clock is before ``horizon`` (a rank simulated in a process of
        its own runs window by window); the clock of the next event, None if none can run now."""
        while True:
            self._wake_ready()
            if not self._runnable:
                return None
            if self._runnable[0][0] >= horizon:
                return self._runnable[0][0]
            _, _, proc = heapq.heappop(self._runnable)
            self.now = max(self.now, proc.core.clock)
            if self._on_time is not None:
                self._on_time(min(self.now, *self._kept_clocks()) if self._kept else self.now)
            self._step(proc)

    @property
    def idle(self) -> bool:
        """No process is left, blocked or runnable."""
        return not (self._runnable or self._blocked)

    def blocked_reasons(self) -> list[tuple[str, Blocked]]:
        """Each blocked process's name and why it waits (for a deadlock report across processes)."""
        return [(name, wait.blocked()) for name, wait in self._blocked_waits()]

    def label(self, core: Clocked) -> str:
        """A core's name in a deadlock report (a world of chips prefixes the rank)."""
        return core.name

    def _blocked_waits(self) -> list[tuple[str, Wait]]:
        """Each blocked process's label and wait, in spawn order."""
        blocked = sorted(self._blocked, key=lambda proc: proc.order)
        return [(self.label(proc.core), proc.waiting) for proc in blocked if proc.waiting is not None]

    def _kept_clocks(self) -> list[int]:
        """The clocks of blocked cores that will resume at them (a :attr:`Wait.keeps_clock` wait)."""
        return [proc.core.clock for proc in self._kept]

    def _push(self, proc: Process) -> None:
        heapq.heappush(self._runnable, (proc.core.clock, next(self._order), proc))

    def _step(self, proc: Process) -> None:
        self.stepping = proc
        try:
            event = next(proc.coroutine)
        except StopIteration as stop:
            proc.result, proc.done = stop.value, True
            return
        if isinstance(event, Advance):
            self._notify(proc.core, event.cycles, event)
            proc.core.advance(event.unit, event.cycles)
            self._push(proc)
        else:
            proc.waiting = event
            proc.seq = next(self._blocks)
            self._blocked[proc] = None
            if event.keeps_clock:
                self._kept[proc] = None
            if event.on:
                proc.dirty = True  # checked once as it blocks
            heapq.heappush(self._due, (proc.seq, proc))

    def _signalled(self, waiters: dict[Process, None]) -> None:
        """A signal changed (:meth:`Signal.changed`): its ``waiters`` are due for a check, and no
        longer wait on it."""
        for proc in waiters:
            if not proc.dirty:
                proc.dirty = True
                if proc.waiting is not None and proc.waiting.on:  # (a polled wait is due already)
                    heapq.heappush(self._due, (proc.seq, proc))
        waiters.clear()

    def _wake_ready(self) -> None:
        """Wake the blocked processes whose wait is ready now, in the order they blocked.

        Only the due ones are checked: those a signal marked and the polled ones. A check may
        change a signal: a process it marks that blocked after the one checked is checked in this
        pass, one that blocked before it in the next (as one walk over every blocked process would).
        """
        if self._check_signals:
            self._check_every_wait()
            return
        if not self._due:
            return
        due, last, later = self._due, -1, []
        while due:
            seq, proc = heapq.heappop(due)
            if proc.waiting is None or proc.seq != seq:
                continue  # woken since it was marked
            if seq <= last:
                later.append((seq, proc))  # marked again after its check in this pass
                continue
            last = seq
            if not self._check(proc) and not proc.waiting.on:
                later.append((seq, proc))
        for entry in later:
            heapq.heappush(due, entry)

    def _check_every_wait(self) -> None:
        """``check_wakeups``: check every wait; one ready though none of its signals changed is a
        wake-up the signals missed."""
        self._due.clear()
        for proc in list(self._blocked):
            wait = proc.waiting
            assert wait is not None
            if wait.on and not proc.dirty:
                if wait.ready():
                    raise AssertionError(f"{proc.core.name} missed a wake-up: {wait.what} is ready")
                continue
            self._check(proc)
        self._due.clear()

    def _check(self, proc: Process) -> bool:
        """Check ``proc``'s wait: wake it if it is ready, else have its signals mark it."""
        wait = proc.waiting
        assert wait is not None
        proc.dirty = False
        if not wait.ready():
            for signal in wait.on:
                signal._waiters[proc] = None
                signal._scheduler = self
            return False
        # A woken core resumes when the event that freed it happened, not earlier.
        if self.now > proc.core.clock and not wait.keeps_clock:
            self._notify(proc.core, self.now - proc.core.clock, wait)
            proc.core.stall(self.now - proc.core.clock)
        proc.waiting = None
        del self._blocked[proc]
        if wait.keeps_clock:
            del self._kept[proc]
        if proc.on_wake is not None:
            proc.on_wake(self.stepping)
        self._push(proc)
        return True

    def _notify(self, core: Clocked, cycles: int, event: Event) -> None:
        for observer in self._observers:
            observer(core, core.clock, cycles, event)

    def _deadlock(self) -> DeadlockError:
        return deadlock_error(self._blocked_waits())


def deadlock_error(blocked: list[tuple[str, Wait]]) -> DeadlockError:
    """The error of a run whose every live process is blocked: ``blocked`` gives each one's label
    and wait, in spawn order (the compiled scheduler builds it here too)."""
    reasons = [(name, wait.blocked()) for name, wait in blocked]
    lines = [f"  {name}: {reason.text}" for name, reason in reasons]
    causes = [reason for _, reason in reasons if reason.cause is not None]
    return DeadlockError(
        "every live core is blocked:\n" + "\n".join(lines),
        causes[0].cause if causes else blocked[0][1].span,
        (causes[0].hint if causes else None)
        or "each wait needs another core to make progress; check the order of pushes and pops",
    )
