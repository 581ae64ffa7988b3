"""The task progress bar: how many tasks a program launches, and when the bar shows."""

import io
import time

from lang_kernels_seed import mixed, staged
from rich.console import Console

from pypto.runtime import RunConfig
from pypto.runtime.progress import ON_TASK_OPTION, TaskProgress, count_tasks


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
