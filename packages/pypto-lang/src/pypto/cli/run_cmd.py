"""``pypto run`` and ``pypto profile``: run a script with session defaults for every kernel."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from pypto.cli.errors import ArgumentError, PyptoCommand
from pypto.cli.scripts import Watched, run_module, run_script
from pypto.ir.breakpoints import BREAK_AT, BREAK_AT_FORM
from pypto.runtime import settings
from pypto.runtime.compiling.artifacts import deps_file_data
from pypto.runtime.platforms.registry import registry
from pypto.runtime.reports.launches import Launch, recording_launches
from pypto.runtime.reports.profiling import check_output_dir, check_profile_dir
from pypto.runtime.settings import TASK_GRAPH_ENV, Origin, Setting
from pypto.tools.deps_graph import deps_html, graph_from_data

# pypto's own options come before SCRIPT (or -m MODULE); everything after it is the script's, as
# with python.
SCRIPT_COMMAND = {"allow_interspersed_args": False}


class ScriptArgument(click.Argument):
    """SCRIPT, optional because ``-m MODULE`` may stand in for it, still named SCRIPT in errors."""

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return "'SCRIPT'"


SCRIPT = click.argument(
    "script", cls=ScriptArgument, required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
SCRIPT_ARGS = click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
MODULE = click.option(
    "-m",
    "--module",
    metavar="MODULE",
    help="Run a module as `python -m MODULE` would, instead of SCRIPT; the words after MODULE are its "
    "command line.",
)
# Options of `pypto run` / `pypto profile` that take a value (so a word after them is no SCRIPT).
_VALUED = ("-p", "--platform", "--profile", "-o", "--output", "--task-graph")


class ScriptCommand(PyptoCommand):
    """A command that runs SCRIPT or ``-m MODULE``: the words after MODULE are the module's own,
    like the words after SCRIPT (click would read ``--config`` after it as an option of its own)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        i = 0
        while i < len(args):
            word = args[i]
            if word in ("-m", "--module") and i + 1 < len(args):
                ctx.meta["pypto.module_args"] = tuple(args[i + 2 :])
                return super().parse_args(ctx, args[: i + 2])
            if word.startswith("--module="):
                ctx.meta["pypto.module_args"] = tuple(args[i + 1 :])
                return super().parse_args(ctx, args[: i + 1])
            if word == "--" or not word.startswith("-"):
                break  # SCRIPT (or the end of pypto's options): the rest is the script's
            i += 2 if word in _VALUED else 1
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[OPTIONS]", "(SCRIPT | -m MODULE)", "[ARGS]..."]


def _command_line(script: Path | None, module: str | None, script_args: tuple[str, ...]) -> tuple[str, ...]:
    """The command line of what runs: the words after SCRIPT, or after ``-m MODULE``."""
    if module is not None:
        return tuple(click.get_current_context().meta.get("pypto.module_args", ()))
    if script is None:
        raise ArgumentError(
            "Missing argument 'SCRIPT': give a script to run, or -m MODULE",
            hint="e.g. pypto run examples/advanced/03_mixed_kernel.py",
        )
    return script_args


PLATFORM_OPTION = "-p/--platform"
PLATFORM = click.option(
    "-p",
    "--platform",
    metavar="PLATFORM",
    help="Platform for every kernel the script launches without naming one (see `pypto platforms`).",
    show_default="PYPTO_PLATFORM, [tool.pypto] platform, else a2a3sim",
)


def check_platform(platform: str | None) -> None:
    """An unknown ``-p`` fails before the script runs, naming the option and the known platforms."""
    if platform is not None:
        registry().target(platform, Origin(PLATFORM_OPTION))


def script_command_line(script_args: Sequence[str]) -> list[str]:
    """What follows SCRIPT, as the script's ``sys.argv[1:]``; one ``--`` right after SCRIPT (the
    older way to start the script's arguments) is dropped, a later one is the script's."""
    return list(script_args[1:] if script_args[:1] == ("--",) else script_args)


TASK_GRAPH = click.option(
    "--task-graph",
    type=click.Path(path_type=Path),  # checked up front, as --profile is
    metavar="FILE.html|DIR",
    help="Write the task graph of each kernel's last launch as an HTML page (tasks, edges, modeled "
    "times; as `pypto deps view --format html`): into FILE.html, or DIR/<kernel>.html.",
    show_default=f"{TASK_GRAPH_ENV}, else off",
)


def _run(
    script: Path | None,
    module: str | None,
    args: Sequence[str],
    platform: str | None,
    profile_dir: Setting[Path] | None,
    task_graph: Path | None = None,
) -> list[Launch]:
    command_line = _command_line(script, module, tuple(args))
    check_platform(platform)
    if profile_dir is not None:
        check_profile_dir(profile_dir.value, profile_dir.origin)
    graph_to = (
        Setting(task_graph, Origin("--task-graph"))
        if task_graph is not None
        else settings.task_graph_setting()
    )
    if graph_to is not None:
        _check_graph_target(graph_to)
    chosen = None if platform is None else Setting(platform, Origin(PLATFORM_OPTION))
    with (
        settings.command_line(platform=chosen, profile_dir=profile_dir),
        recording_launches() as launches,
        _watching_stderr() as said,
    ):
        try:
            if module is not None:
                run_module(module, command_line)
            else:
                assert script is not None
                run_script(script, script_command_line(command_line))
        except SystemExit as done:
            if done.code == 2:  # argparse's status for a command line it rejects
                _hint_misplaced_options(script, module, command_line, said.tail)
            raise
        finally:
            if graph_to is not None:
                _write_task_graphs(launches, graph_to)
    return launches


@contextmanager
def _watching_stderr() -> Iterator[Watched]:
    """Standard error as the script writes it, its last words kept (the error it gave)."""
    watched = Watched(sys.stderr)
    saved, sys.stderr = sys.stderr, watched
    try:
        yield watched
    finally:
        sys.stderr = saved


def _misplaced(command_line: Sequence[str], said: str) -> list[str]:
    """The words of the script's command line that are options of this pypto command and that
    the script's error (the last line of ``said``; the usage above it lists its own options) names."""
    ctx = click.get_current_context()
    own = {name for param in ctx.command.params for name in (*param.opts, *param.secondary_opts)}
    own -= {"-h", "--help"}  # the script's own help is its business
    lines = said.strip().splitlines()
    error = {word.strip("'\".,:;()") for word in lines[-1].split()} if lines else set()
    return [word for word in command_line if word.split("=", 1)[0] in own and word in error]


def _hint_misplaced_options(
    script: Path | None, module: str | None, command_line: Sequence[str], said: str
) -> None:
    """The script rejected its command line, naming options of pypto's own: say where they go."""
    misplaced = _misplaced(command_line, said)
    if not misplaced:
        return
    ctx = click.get_current_context()
    moved, rest, words = [], [], list(command_line)
    while words:
        word = words.pop(0)
        if word in misplaced:
            moved.append(word)
            if word in _VALUED and words:
                moved.append(words.pop(0))
        else:
            rest.append(word)
    target = f"-m {module}" if module is not None else str(script)
    fixed = " ".join([ctx.command_path, *moved, target, *rest])
    them = "they" if len(misplaced) > 1 else "it"
    click.echo(
        f"pypto: hint: {', '.join(misplaced)} came after {target}, so {them} went to the script, which "
        f"rejected {them.replace('they', 'them')}; pypto's own options go before the script: {fixed}",
        err=True,
    )


def _check_graph_target(chosen: Setting[Path]) -> None:
    """A --task-graph / PYPTO_TASK_GRAPH that cannot be written fails before the script runs."""
    directory = chosen.value.parent if chosen.value.suffix == ".html" else chosen.value
    check_output_dir(directory, chosen.origin, "task graphs", "task_graphs")


def _write_task_graphs(launches: list[Launch], chosen: Setting[Path]) -> None:
    """Each kernel's last launch as an HTML page: the one file (``.html``) or ``DIR/<kernel>.html``."""
    last = {launch.kernel: launch for launch in launches}
    if not last:
        click.echo("pypto: no kernel was launched, so no task graph was written", err=True)
        return
    target = chosen.value
    if target.suffix == ".html":
        launch = list(last.values())[-1]
        pages = {target: launch}
        if len(last) > 1:
            others = ", ".join(k for k in last if k != launch.kernel)
            click.echo(
                f"pypto: {target} shows {launch.kernel}, the last kernel launched ({others} too: give a "
                "directory to --task-graph for a page per kernel)",
                err=True,
            )
    else:
        pages = {target / f"{kernel}.html": launch for kernel, launch in last.items()}
    for path, launch in pages.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        graph = graph_from_data(deps_file_data(launch.report, launch.kernel), str(path))
        path.write_text(deps_html(graph))
        click.echo(f"task graph of {launch.kernel}: {path}", err=True)


def _report_profiles(launches: list[Launch]) -> None:
    """Where each launch's trace, swimlane, swimlane records and summary went; one entry per directory."""
    profiled = [launch for launch in launches if launch.profile is not None]
    if not profiled:
        click.echo("pypto: no kernel was launched, so nothing was profiled", err=True)
        return
    by_directory: dict[Path, list[Launch]] = {}
    for launch in profiled:
        assert launch.profile is not None
        by_directory.setdefault(launch.profile.directory, []).append(launch)
    for runs in by_directory.values():
        last = runs[-1]
        assert last.profile is not None
        times = f", launched {len(runs)} times (the files show the last)" if len(runs) > 1 else ""
        click.echo(
            f"{last.kernel} on {last.platform}: {last.report.total_cycles} modeled cycles "
            f"({last.report.total_us:.2f} modeled us){times}"
        )
        for label, path in (
            ("trace", last.profile.trace),
            ("swimlane", last.profile.swimlane),
            ("records", last.profile.records),
            ("summary", last.profile.summary),
        ):
            click.echo(f"  {label:<9}{path}")


TIMING_ONLY = click.option(
    "--timing-only",
    is_flag=True,
    help="Model the time alone: every modeled cycle and diagnostic of a full run, without computing "
    "tile values (the scalars that steer the run still are; outputs keep what they held).",
)


@click.command(cls=ScriptCommand, context_settings=SCRIPT_COMMAND)
@PLATFORM
@click.option(
    "--profile",
    "profile_dir",
    type=click.Path(path_type=Path),  # checked up front, with the other ways a directory can fail
    help="Profile every launch into DIR/<kernel>/ (trace.json, swimlane.png, chip_swimlane_records.json, "
    "summary.txt).",
    metavar="DIR",
    show_default="off",
)
@TASK_GRAPH
@click.option(
    "--break",
    "break_at",
    help="Stop where a core reaches FILE:LINE (optionally @CORE, e.g. k.py:31@aiv1) and open the "
    "kernel debugger (docs/debugging.md) for every kernel the script runs on a simulator.",
    metavar="FILE:LINE",
    show_default="off",
)
@TIMING_ONLY
@MODULE
@SCRIPT
@SCRIPT_ARGS
def run(
    script: Path | None,
    module: str | None,
    platform: str | None,
    profile_dir: Path | None,
    task_graph: Path | None,
    break_at: str | None,
    timing_only: bool,
    script_args: tuple[str, ...],
) -> None:
    """Run a script (or a module) with these defaults for its kernels.

    The script runs as `python SCRIPT ARGS` would run it: everything after SCRIPT is its
    command line, so pypto's options go before SCRIPT. A `--` right after SCRIPT is dropped; a
    later one reaches the script. `-m MODULE ARGS` runs a module as `python -m MODULE ARGS`
    does (the current directory first on the path). An exception the script raises is shown as
    python shows it, from the script's frames on, and the exit status is 1; when the script
    rejects its command line (exit status 2) and its error names an option of pypto's, a hint
    says where that goes. A kernel whose RunConfig names its own platform keeps it.

    \b
    Examples:
      pypto run examples/advanced/03_mixed_kernel.py --m 512
      pypto run -p a2a3sim --profile prof examples/advanced/03_mixed_kernel.py --m 512 --mode staged
      pypto run --task-graph graphs examples/advanced/03_mixed_kernel.py
      pypto run -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3
      pypto run --break examples/advanced/03_mixed_kernel.py:39 examples/advanced/03_mixed_kernel.py
      pypto run --timing-only -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3
    """
    chosen = None if profile_dir is None else Setting(profile_dir, Origin("--profile"))
    if break_at is not None and not BREAK_AT.fullmatch(break_at.strip()):
        raise click.BadParameter(
            f"takes {BREAK_AT_FORM}, got {break_at!r}",
            param_hint="'--break'",
        )
    with settings.command_line(break_at=break_at, timing_only=timing_only or None):
        launches = _run(script, module, script_args, platform, chosen, task_graph)
        if break_at is not None and launches and not settings.break_line_held():
            raise ArgumentError(
                f"--break {break_at}: no kernel the script ran has an op on that line",
                None,
                "break on a line of a kernel's body (pypto compile --emit ir shows what each line became)",
            )
    if profile_dir is not None:
        _report_profiles(launches)


@click.command(cls=ScriptCommand, context_settings=SCRIPT_COMMAND)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),  # checked up front, with the other ways a directory can fail
    help="Directory of the profiles, one sub-directory per kernel.",
    metavar="DIR",
    show_default="PYPTO_PROFILE if a directory, [tool.pypto] profile-dir, else pypto_profile",
)
@PLATFORM
@TASK_GRAPH
@TIMING_ONLY
@MODULE
@SCRIPT
@SCRIPT_ARGS
def profile(
    script: Path | None,
    module: str | None,
    output: Path | None,
    platform: str | None,
    task_graph: Path | None,
    timing_only: bool,
    script_args: tuple[str, ...],
) -> None:
    """Run a script with profiling on; list the profiles.

    Each kernel launch writes trace.json (open it at https://ui.perfetto.dev), swimlane.png and
    summary.txt into DIR/<kernel>/; the times in them are modeled by the platform's cost model.
    As with `pypto run`, everything after SCRIPT (or -m MODULE) is its command line.

    \b
    Examples:
      pypto profile -o prof examples/advanced/03_mixed_kernel.py --m 1024
      pypto profile -o prof -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3
      pypto profile --timing-only -o prof -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3
    """
    chosen = settings.profile_root_setting() if output is None else Setting(output, Origin("-o/--output"))
    with settings.command_line(timing_only=timing_only or None):
        launches = _run(script, module, script_args, platform, chosen, task_graph)
    _report_profiles(launches)


COMMANDS = [run, profile]
