"""A progress bar over the tasks of a run: shown on a terminal once a run lasts about a second,
silent otherwise (a pipe, a file, a test).

The runtime passes the backend ``options["on_task"]``, a callable a backend calls with the kernel
name each time one of its tasks finishes; the bar counts them against the tasks the orchestration
launches (see :func:`count_tasks`). A run of one task (or of a task count only known at run time)
would sit at ``0/1 tasks`` until it ends, so the runtime then also passes
``options["on_progress"]``: a backend calls ``on_progress(kernel, done, total, unit)`` to report
how far the running task has got, e.g. ``("mixed", 3, 8, "iterations")`` for the iterations of
its outermost loop or ``("rows", 2, 4, "blocks")`` for the blocks of an ``pl.spmd`` launch, and
the bar shows that instead (``3/8 iterations``). A backend that calls neither leaves the bar at
its start, with the elapsed time still running.

>>> with TaskProgress("mixed", count_tasks(program)) as progress:  # doctest: +SKIP
...     backend.run(program, args, {**options, **progress.options()})
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from pypto.ir import Assign, Break, Call, Const, Eval, For, If, Program, Stmt, While
from pypto.ir.callgraph import is_control_call
from pypto.ir.nodes import walk_stmts
from pypto.ir.ops import op

if TYPE_CHECKING:  # rich loads only for a bar that can be shown (a terminal)
    from rich.console import Console
    from rich.progress import Progress

ON_TASK_OPTION = "on_task"  # the backend option: on_task(kernel_name) after each finished task
# The backend option: on_progress(kernel_name, done, total, unit) as the one running task advances.
ON_PROGRESS_OPTION = "on_progress"
TASKS = "tasks"
SHOW_AFTER_SECONDS = 1.0


def count_tasks(program: Program) -> int | None:
    """How many kernel launches (tasks) the entry makes, those of the ``@pl.jit.opaque`` functions
    it calls included; None when a loop bound is a run-time value."""
    return _TaskCounter(program).count(program.entry_function.body)


class _TaskCounter:
    """Counts the tasks of a body; a call of a control function counts that function's tasks."""

    def __init__(self, program: Program) -> None:
        self.program = program

    def count(self, body: tuple[Stmt, ...]) -> int | None:
        total = 0
        for stmt in body:
            tasks = self.count_stmt(stmt)
            if tasks is None:
                return None
            total += tasks
        return total

    def count_stmt(self, stmt: Stmt) -> int | None:
        if isinstance(stmt, (Eval, Assign)):
            return self.count_call(stmt.value)
        if isinstance(stmt, If):
            arms = [self.count(stmt.then_body), self.count(stmt.else_body)]
            return None if None in arms else max(a for a in arms if a is not None)
        if isinstance(stmt, While) or any(
            isinstance(s, Break) for s in walk_stmts(stmt.body if isinstance(stmt, For) else ())
        ):
            return None  # a run-time number of iterations
        if isinstance(stmt, For):
            inner = self.count(stmt.body)
            bounds = (stmt.start, stmt.stop, stmt.step)
            if inner is None or not all(isinstance(b, Const) for b in bounds):
                return None
            start, stop, step = (int(b.value) for b in bounds if isinstance(b, Const))
            return inner * len(range(start, stop, step))
        return 0

    def count_call(self, expr: object) -> int | None:
        if not (isinstance(expr, Call) and expr.op == op.call):
            return 0
        if is_control_call(self.program, expr):
            return self.count(self.program.function(str(expr.attrs["callee"])).body)
        return 1


@functools.cache
def _standard_error() -> Console:
    """One console for every run's bar: it writes to whatever ``sys.stderr`` is when it writes."""
    from rich.console import Console

    return Console(stderr=True)


# The variables with which rich treats a stream that is not a terminal as one.
TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


# Off inside a sweep of many runs (an autotuning sweep), which shows a bar of its own.
_bars_off: ContextVar[bool] = ContextVar("pypto_run_bars_off", default=False)


@contextmanager
def no_run_bars() -> Iterator[None]:
    """Inside the block, no run shows its own progress bar (a tuning sweep shows one for all)."""
    token = _bars_off.set(True)
    try:
        yield
    finally:
        _bars_off.reset(token)


def _may_be_terminal() -> bool:
    """Whether standard error may be a terminal to rich; when not, no bar is built (and rich is
    not imported: most runs are in scripts, tests and pipes)."""
    stream = sys.stderr
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return True
    return any(name in os.environ for name in TERMINAL_VARIABLES)


def build_bar(console: Console | None, *after_count: Any, markup: bool = True) -> Progress:
    """The bar pypto shows for a long run or a sweep: a spinner, the description, the bar and
    ``done/total``, then ``after_count`` (rich columns), then the elapsed time; it vanishes when
    done. ``markup=False``: the description is shown as written (a kernel name may hold ``[``)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=markup),
        BarColumn(),
        MofNCompleteColumn(),
        *after_count,
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


class TaskProgress:
    """A rich progress bar for one run, started only on a terminal and only after ``show_after``.

    ``console`` defaults to standard error; a console that is not a terminal shows nothing. With
    ``total`` tasks it counts finished tasks; with one task, or an unknown count, it shows the
    progress within the running task the backend reports (:meth:`step`) as soon as it reports one.
    """

    def __init__(
        self,
        title: str,
        total: int | None,
        console: Console | None = None,
        show_after: float = SHOW_AFTER_SECONDS,
    ) -> None:
        self.title = title
        self.total = total
        if _bars_off.get():
            console = None
        elif console is None and _may_be_terminal():
            console = _standard_error()
        self.console = console
        self.active = console is not None and console.is_terminal
        self.show_after = show_after
        self.done = 0
        self.within_task = False  # the bar shows one task's steps instead of the tasks
        self._lock = threading.Lock()
        self._shown = False
        self._timer: threading.Timer | None = None
        # Only a bar that can be shown is built: every run makes a TaskProgress, most never show it.
        self._bar = self._build_bar() if self.active else None
        self._task = self._bar.add_task(title, total=total, unit=TASKS) if self._bar is not None else None

    def _build_bar(self) -> Progress:
        from rich.progress import TextColumn

        return build_bar(self.console, TextColumn("{task.fields[unit]}"))

    @property
    def shows_steps(self) -> bool:
        """Whether progress within a task is worth asking for: the run has one task or an unknown count."""
        return self.total is None or self.total == 1

    def options(self) -> dict[str, Callable[..., None]]:
        """The backend options that report to this bar (none when it cannot be shown)."""
        if not self.active:
            return {}
        options: dict[str, Callable[..., None]] = {ON_TASK_OPTION: self.advance}
        if self.shows_steps:
            options[ON_PROGRESS_OPTION] = self.step
        return options

    def advance(self, kernel: str) -> None:
        """One task of ``kernel`` finished."""
        assert self._bar is not None and self._task is not None, "the backend got no on_task option"
        self.done += 1
        if self.within_task:
            self._bar.update(self._task, description=self._describe(kernel))
        else:
            self._bar.update(self._task, advance=1, description=f"{self.title} ({kernel})")

    def step(self, kernel: str, done: int, total: int, unit: str = "steps") -> None:
        """The running task of ``kernel`` has done ``done`` of its ``total`` ``unit`` (e.g. loop
        iterations, or the blocks of an spmd launch); the bar shows that from now on."""
        if not self.shows_steps:
            return
        assert self._bar is not None and self._task is not None, "the backend got no on_progress option"
        self.within_task = True
        description = self._describe(kernel)
        self._bar.update(self._task, completed=done, total=total, unit=unit, description=description)

    def _describe(self, kernel: str) -> str:
        """The title and the running kernel, with the task's number when the count is not known."""
        if self.total is None:
            return f"{self.title} ({kernel}, task {self.done + 1})"
        return f"{self.title} ({kernel})"

    def __enter__(self) -> TaskProgress:
        if self.active:
            self._timer = threading.Timer(self.show_after, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if self._timer is not None and self._bar is not None:
                self._shown = True
                self._bar.start()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._shown and self._bar is not None:
                self._bar.stop()
                self._shown = False
