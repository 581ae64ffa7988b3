"""The task progress bar: how many tasks a program launches, and when the bar shows."""

import io
import time

from lang_kernels_seed import mixed, staged
from rich.console import Console

from pypto.runtime import RunConfig
from pypto.runtime.reports.progress import ON_PROGRESS_OPTION, ON_TASK_OPTION, TaskProgress, count_tasks


def test_count_tasks_counts_the_kernel_calls_of_the_entry(backend):
    config = RunConfig(platform="testsim")
    assert count_tasks(mixed.lower(config=config)) == 1
    assert count_tasks(staged.lower(config=config)) == 2


def test_off_a_terminal_the_bar_is_silent_and_asks_the_backend_for_nothing():
    stream = io.StringIO()
    with TaskProgress("k", 3, console=Console(file=stream), show_after=0) as progress:
        time.sleep(0.05)
        assert progress.options() == {}
    assert stream.getvalue() == ""


def test_on_a_terminal_a_long_run_shows_tasks_done():
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=100)
    with TaskProgress("mixed", 2, console=console, show_after=0) as progress:
        progress.options()[ON_TASK_OPTION]("mixed")
        time.sleep(0.3)
    assert progress.done == 1
    assert "1/2" in stream.getvalue() and "tasks" in stream.getvalue()


def test_a_short_run_shows_nothing_even_on_a_terminal():
    stream = io.StringIO()
    with TaskProgress("k", 1, console=Console(file=stream, force_terminal=True), show_after=5):
        pass
    assert stream.getvalue() == ""


def _terminal() -> tuple[io.StringIO, Console]:
    stream = io.StringIO()
    return stream, Console(file=stream, force_terminal=True, width=100)


def test_a_one_task_run_shows_the_progress_the_backend_reports_within_the_task():
    stream, console = _terminal()
    with TaskProgress("mixed", 1, console=console, show_after=0) as progress:
        step = progress.options()[ON_PROGRESS_OPTION]
        for done in range(1, 4):
            step("mixed", done, 8, "iterations")
        time.sleep(0.3)
    shown = stream.getvalue()
    assert "3/8" in shown and "iterations" in shown
    assert "4/8" not in shown
    assert progress.within_task


def test_a_run_of_unknown_task_count_shows_the_running_tasks_progress_and_its_number():
    stream, console = _terminal()
    with TaskProgress("rows", None, console=console, show_after=0) as progress:
        options = progress.options()
        options[ON_TASK_OPTION]("first")
        options[ON_PROGRESS_OPTION]("rows", 2, 4, "blocks")
        time.sleep(0.3)
    shown = stream.getvalue()
    assert "2/4" in shown and "blocks" in shown and "rows (rows, task 2)" in shown


def test_a_run_of_several_tasks_counts_tasks_and_asks_for_no_progress_within_them():
    stream, console = _terminal()
    with TaskProgress("staged", 2, console=console, show_after=0) as progress:
        assert ON_PROGRESS_OPTION not in progress.options()
        progress.step("cube_only", 5, 8, "iterations")  # a backend that reports anyway is ignored
        progress.advance("cube_only")
        time.sleep(0.3)
    shown = stream.getvalue()
    assert "1/2" in shown and "tasks" in shown and "5/8" not in shown
