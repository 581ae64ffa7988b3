"""``pypto run`` and ``pypto profile``: run a script with session defaults for every kernel."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from pypto.cli.scripts import run_script
from pypto.runtime import settings
from pypto.runtime.launches import Launch, recording_launches
from pypto.runtime.registry import registry

SCRIPT = click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
SCRIPT_ARGS = click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")
PLATFORM = click.option(
    "-p",
    "--platform",
    metavar="PLATFORM",
    help="Platform for every kernel the script launches without naming one (see `pypto platforms`).",
    show_default="PYPTO_PLATFORM, [tool.pypto] platform, else a2a3sim",
)


def _check_platform(platform: str | None) -> None:
    if platform is not None:
        registry().target(platform)  # an unknown platform fails here, listing the known ones


def _run(script: Path, args: Sequence[str], platform: str | None, profile_dir: Path | None) -> list[Launch]:
    _check_platform(platform)
    with settings.command_line(platform=platform, profile_dir=profile_dir), recording_launches() as launches:
        run_script(script, args)
    return launches


def _report_profiles(launches: list[Launch]) -> None:
    """Where each launch's trace, swimlane and summary went; one entry per directory."""
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
            ("summary", last.profile.summary),
        ):
            click.echo(f"  {label:<9}{path}")


@click.command(context_settings={"allow_interspersed_args": True})
@SCRIPT
@PLATFORM
@click.option(
    "--profile",
    "profile_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Profile every launch into DIR/<kernel>/ (trace.json, swimlane.png, summary.txt).",
    metavar="DIR",
    show_default="off",
)
@SCRIPT_ARGS
def run(script: Path, platform: str | None, profile_dir: Path | None, script_args: tuple[str, ...]) -> None:
    """Run a script with these defaults for its kernels.

    The script runs as `python SCRIPT ARGS` would run it; what follows `--` is its command line.
    A kernel whose RunConfig names its own platform keeps it.

    \b
    Examples:
      pypto run examples/advanced/03_mixed_kernel.py
      pypto run examples/advanced/03_mixed_kernel.py -p a2a3sim --profile prof -- --m 512
    """
    launches = _run(script, script_args, platform, profile_dir)
    if profile_dir is not None:
        _report_profiles(launches)


@click.command(context_settings={"allow_interspersed_args": True})
@SCRIPT
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory of the profiles, one sub-directory per kernel.",
    metavar="DIR",
    show_default="[tool.pypto] profile-dir, else pypto_profile",
)
@PLATFORM
@SCRIPT_ARGS
def profile(script: Path, output: Path | None, platform: str | None, script_args: tuple[str, ...]) -> None:
    """Run a script with profiling on; list the profiles.

    Each kernel launch writes trace.json (open it at https://ui.perfetto.dev), swimlane.png and
    summary.txt into DIR/<kernel>/; the times in them are modeled by the platform's cost model.

    \b
    Example:
      pypto profile examples/advanced/03_mixed_kernel.py -o prof -- --m 1024
    """
    launches = _run(script, script_args, platform, output or settings.profile_root())
    _report_profiles(launches)


COMMANDS = [run, profile]
