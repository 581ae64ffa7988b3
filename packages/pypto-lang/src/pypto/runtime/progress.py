"""A progress bar over the tasks of a run: shown on a terminal once a run lasts about a second,
silent otherwise (a pipe, a file, a test).

The runtime passes the backend ``options["on_task"]``, a callable a backend calls with the kernel
name each time one of its tasks finishes; the bar counts them against the tasks the orchestration
launches (see :func:`count_tasks`). A backend that never calls it leaves the bar at its start,
with the elapsed time still running.

>>> with TaskProgress("mixed", count_tasks(program)) as progress:  # doctest: +SKIP
...     backend.run(program, args, {**options, **progress.options()})
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from pypto.ir import Assign, Call, Const, Eval, For, If, Program, Stmt

ON_TASK_OPTION = "on_task"  # the backend option: on_task(kernel_name) after each finished task
SHOW_AFTER_SECONDS = 1.0


def count_tasks(program: Program) -> int | None:
    """How many kernel launches (tasks) the entry makes; None when a loop bound is a run-time value."""
    return _count(program.entry_function.body)


def _count(body: tuple[Stmt, ...]) -> int | None:
    total = 0
    for stmt in body:
        tasks = _count_stmt(stmt)
        if tasks is None:
            return None
        total += tasks
    return total


def _count_stmt(stmt: Stmt) -> int | None:
    if isinstance(stmt, (Eval, Assign)):
        return int(isinstance(stmt.value, Call) and stmt.value.op == "call")
    if isinstance(stmt, If):
        arms = [_count(stmt.then_body), _count(stmt.else_body)]
        return None if None in arms else max(a for a in arms if a is not None)
    if isinstance(stmt, For):
        inner = _count(stmt.body)
        bounds = (stmt.start, stmt.stop, stmt.step)
        if inner is None or not all(isinstance(b, Const) for b in bounds):
            return None
        start, stop, step = (int(b.value) for b in bounds if isinstance(b, Const))
        return inner * len(range(start, stop, step))
    return 0


class TaskProgress:
    """A rich progress bar for one run, started only on a terminal and only after ``show_after``.

    ``console`` defaults to standard error; a console that is not a terminal shows nothing.
    """

    def __init__(
        self,
        title: str,
        total: int | None,
        console: Console | None = None,
        show_after: float = SHOW_AFTER_SECONDS,
    ) -> None:
        self.title = title
        self.console = console or Console(stderr=True)
        self.active = self.console.is_terminal
        self.show_after = show_after
        self.done = 0
        self._lock = threading.Lock()
        self._shown = False
        self._timer: threading.Timer | None = None
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self._task = self._bar.add_task(title, total=total)

    def options(self) -> dict[str, Callable[[str], None]]:
        """The backend options that report to this bar (none when it cannot be shown)."""
        return {ON_TASK_OPTION: self.advance} if self.active else {}

    def advance(self, kernel: str) -> None:
        """One task of ``kernel`` finished."""
        self.done += 1
        self._bar.update(self._task, advance=1, description=f"{self.title} ({kernel})")

    def __enter__(self) -> TaskProgress:
        if self.active:
            self._timer = threading.Timer(self.show_after, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._shown = True
                self._bar.start()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._shown:
                self._bar.stop()
                self._shown = False
