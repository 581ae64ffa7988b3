"""``pypto run`` and ``pypto profile``: run a script with session defaults for every kernel."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from pypto.cli.errors import ArgumentError, PyptoCommand
from pypto.cli.scripts import run_module, run_script
from pypto.ir.breakpoints import BREAK_AT, BREAK_AT_FORM
from pypto.runtime import settings
from pypto.runtime.launches import Launch, recording_launches
from pypto.runtime.profiling import check_profile_dir
from pypto.runtime.registry import registry
from pypto.runtime.settings import Origin, Setting

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
_VALUED = ("-p", "--platform", "--profile", "-o", "--output")


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


def _run(
    script: Path | None,
    module: str | None,
    args: Sequence[str],
    platform: str | None,
    profile_dir: Setting[Path] | None,
) -> list[Launch]:
    command_line = _command_line(script, module, tuple(args))
    check_platform(platform)
    if profile_dir is not None:
        check_profile_dir(profile_dir.value, profile_dir.origin)
    chosen = None if platform is None else Setting(platform, Origin(PLATFORM_OPTION))
    with settings.command_line(platform=chosen, profile_dir=profile_dir), recording_launches() as launches:
        if module is not None:
            run_module(module, command_line)
        else:
            assert script is not None
            run_script(script, script_command_line(command_line))
    return launches


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
@click.option(
    "--break",
    "break_at",
    help="Stop where a core reaches FILE:LINE (optionally @CORE, e.g. k.py:31@aiv1) and open the "
    "kernel debugger (docs/debugging.md) for every kernel the script runs on a simulator.",
    metavar="FILE:LINE",
    show_default="off",
)
@MODULE
@SCRIPT
@SCRIPT_ARGS
def run(
    script: Path | None,
    module: str | None,
    platform: str | None,
    profile_dir: Path | None,
    break_at: str | None,
    script_args: tuple[str, ...],
) -> None:
    """Run a script (or a module) with these defaults for its kernels.

    The script runs as `python SCRIPT ARGS` would run it: everything after SCRIPT is its
    command line, so pypto's options go before SCRIPT. A `--` right after SCRIPT is dropped; a
    later one reaches the script. `-m MODULE ARGS` runs a module as `python -m MODULE ARGS`
    does (the current directory first on the path). An exception the script raises is shown as
    python shows it, from the script's frames on, and the exit status is 1. A kernel whose
    RunConfig names its own platform keeps it.

    \b
    Examples:
      pypto run examples/advanced/03_mixed_kernel.py --m 512
      pypto run -p a2a3sim --profile prof examples/advanced/03_mixed_kernel.py --m 512 --mode staged
      pypto run -m pypto.models.qwen3 --config tiny --prompt-ids 1,2,3
      pypto run --break examples/advanced/03_mixed_kernel.py:39 examples/advanced/03_mixed_kernel.py
    """
    chosen = None if profile_dir is None else Setting(profile_dir, Origin("--profile"))
    if break_at is not None and not BREAK_AT.fullmatch(break_at.strip()):
        raise click.BadParameter(
            f"takes {BREAK_AT_FORM}, got {break_at!r}",
            param_hint="'--break'",
        )
    with settings.command_line(break_at=break_at):
        launches = _run(script, module, script_args, platform, chosen)
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
@MODULE
@SCRIPT
@SCRIPT_ARGS
def profile(
    script: Path | None,
    module: str | None,
    output: Path | None,
    platform: str | None,
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
    """
    chosen = settings.profile_root_setting() if output is None else Setting(output, Origin("-o/--output"))
    launches = _run(script, module, script_args, platform, chosen)
    _report_profiles(launches)


COMMANDS = [run, profile]
