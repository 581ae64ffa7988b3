"""``pypto settings``: every setting PyPTO reads from the environment, its value and where it came from."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import click

from pypto.cli.errors import PyptoCommand
from pypto.ir import ConfigError, PyptoError, log
from pypto.ir.walker import MAX_WHILE_ENV, MAX_WHILE_ITERATIONS, max_while_iterations
from pypto.runtime import settings
from pypto.runtime.compiling.compile_profile import PROFILE_ENV as COMPILE_PROFILING_ENV
from pypto.runtime.config import OUTPUT_ROOT_ENV, output_root_setting
from pypto.runtime.platforms.registry import LOAD_PLUGINS_ENV
from pypto.runtime.running import rings
from pypto.runtime.settings import CONFIG_TABLE, DEFAULT, Origin, Setting
from pypto.tuning.cluster import SCHEDULER_ENV, WORKERS_ENV

# What a value's origin is called in the FROM column.
ENV, CONFIG, BUILT_IN = "env", CONFIG_TABLE, "default"


@dataclass(frozen=True)
class Described:
    """One setting: its variable, what it does (one line), and how to read its value now."""

    name: str
    meaning: str
    read: Callable[[], tuple[str, str]]  # (the value as shown, where it came from)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value.value) if isinstance(value, Enum) else str(value)


def _from(origin: Origin) -> str:
    """``env``, ``[tool.pypto]``, ``default``, or the option or call that set it."""
    if origin == DEFAULT:
        return BUILT_IN
    if origin.name.startswith(CONFIG_TABLE):
        return CONFIG
    if origin.name.isupper():  # a variable's name
        return ENV
    return origin.name


def _of(read: Callable[[], Setting[Any]]) -> Callable[[], tuple[str, str]]:
    def shown() -> tuple[str, str]:
        chosen = read()
        return _shown(chosen.value), _from(chosen.origin)

    return shown


def _raw(name: str, default: str) -> Callable[[], tuple[str, str]]:
    """A variable read where it is used (a plugin's): its text as set, else what applies without it."""

    def shown() -> tuple[str, str]:
        value = os.environ.get(name, "").strip()
        return (value, ENV) if value else (default, BUILT_IN)

    return shown


def _profile() -> tuple[str, str]:
    switch = os.environ.get(settings.PROFILE_ENV, "").strip()
    if not settings.profile_everything():
        return "off", ENV if switch else BUILT_IN
    chosen = settings.profile_root_setting()
    return f"on, into {chosen.value}", _from(chosen.origin)


def _log_level() -> tuple[str, str]:
    level, origin = log.log_level_origin()
    return level.name.lower(), {log.LOG_LEVEL_ENV: ENV, "default": BUILT_IN}.get(origin, origin)


def _task_graph() -> tuple[str, str]:
    chosen = settings.task_graph_setting()
    return ("off", BUILT_IN) if chosen is None else (str(chosen.value), _from(chosen.origin))


def _ring(ring: rings.RingField) -> Callable[[], tuple[str, str]]:
    def shown() -> tuple[str, str]:
        sizes = rings.from_environment(ring)
        return ("the backend's", BUILT_IN) if sizes is None else (",".join(map(str, sizes)), ENV)

    return shown


def _max_while() -> tuple[str, str]:
    limit = max_while_iterations()
    return str(limit), ENV if os.environ.get(MAX_WHILE_ENV, "").strip() else BUILT_IN


def _workers() -> tuple[str, str]:
    value = os.environ.get(WORKERS_ENV, "").strip()
    if not value:
        return "pypto tune: one per core", BUILT_IN
    if not value.isdigit():
        raise ConfigError(
            f"{WORKERS_ENV}={value!r} is not a number of workers", hint=f"set {WORKERS_ENV}=0 or more"
        )
    return value, ENV


SETTINGS: tuple[Described, ...] = (
    Described(
        settings.PLATFORM_ENV, "the platform of a RunConfig() that names none", _of(settings.platform_setting)
    ),
    Described(settings.PROFILE_ENV, "profile every run: on (1), off (0), or a directory", _profile),
    Described(
        settings.CACHE_ENV, "keep compiled programs in the disk cache", _of(settings.cache_enabled_setting)
    ),
    Described(settings.CACHE_DIR_ENV, "the directory of the disk cache", _of(settings.cache_dir_setting)),
    Described(
        LOAD_PLUGINS_ENV, "the platform plugins loaded (a,b; default all)", _raw(LOAD_PLUGINS_ENV, "all")
    ),
    Described(log.LOG_LEVEL_ENV, "what PyPTO says on stderr: none .. debug", _log_level),
    Described(
        settings.VERIFY_ENV_MANUAL,
        f"verification between passes (also {settings.VERIFY_ENV})",
        _of(settings.verification_level_setting),
    ),
    Described(
        settings.WARNING_ENV,
        "diagnostic phase gate: none silences compile warnings and hints",
        _of(settings.diagnostic_phase_setting),
    ),
    Described(OUTPUT_ROOT_ENV, "the root of the default output directories", _of(output_root_setting)),
    Described(
        settings.EMIT_LOC_ENV,
        "each statement's source line in the artifacts' .pto files",
        _of(lambda: settings.switch(settings.EMIT_LOC_ENV, True)),
    ),
    Described(
        COMPILE_PROFILING_ENV,
        "time each compile stage into report/pipeline_profile.*",
        _of(lambda: settings.switch(COMPILE_PROFILING_ENV, False)),
    ),
    Described(
        settings.DEBUG_RUNNER_ENV,
        "checked only: a simulator has no device runner (program.py replays)",
        _of(settings.emit_debug_runner),
    ),
    Described(settings.TASK_GRAPH_ENV, "pypto run/profile: write each task graph as HTML here", _task_graph),
    *(
        Described(ring.env, f"{ring.name.removeprefix('ring_')} ring sizes ({ring.unit})", _ring(ring))
        for ring in rings.RING_FIELDS
    ),
    Described(
        MAX_WHILE_ENV,
        f"iterations a kernel's while loop may run (default {MAX_WHILE_ITERATIONS:,})",
        _max_while,
    ),
    Described(SCHEDULER_ENV, "the Dask cluster tuning sweeps run on", _raw(SCHEDULER_ENV, "none: local")),
    Described(WORKERS_ENV, "worker processes of a local tuning cluster", _workers),
    Described(
        "PYPTO_TORCHRUN",
        "under torchrun, each process simulates one rank of a distributed program",
        _of(lambda: settings.switch("PYPTO_TORCHRUN", True)),
    ),
    Described(
        "PYPTO_TORCHRUN_TIMEOUT_S",
        "seconds a torchrun rank's process waits for the others",
        _raw("PYPTO_TORCHRUN_TIMEOUT_S", "300"),
    ),
    Described(
        "PYPTO_SIM_ENGINE",
        "a2a3sim: the timing engine (auto, compiled or python)",
        _raw("PYPTO_SIM_ENGINE", "auto"),
    ),
    Described(
        "PYPTO_SIM_GC_FREEZE",
        "a2a3sim: freeze the loaded heap for the collector",
        _raw("PYPTO_SIM_GC_FREEZE", "on"),
    ),
    Described(
        "PYPTO_SIM_CHECK_WAKEUPS",
        "a2a3sim: check the cores' wake-ups",
        _raw("PYPTO_SIM_CHECK_WAKEUPS", "off"),
    ),
    Described(
        "PYPTO_SIM_REPLAY", "a2a3sim: replay the blocks of an spmd launch", _raw("PYPTO_SIM_REPLAY", "on")
    ),
    Described(
        "PYPTO_SIM_BATCH", "a2a3sim: compute the replayed blocks together", _raw("PYPTO_SIM_BATCH", "on")
    ),
)

NAMES = tuple(entry.name for entry in SETTINGS)


@dataclass(frozen=True)
class Row:
    name: str
    value: str
    origin: str
    meaning: str
    error: PyptoError | None = None


def rows() -> list[Row]:
    """Each setting's row; a value that cannot be used is ``invalid`` with its error."""
    made = []
    for entry in SETTINGS:
        try:
            value, origin = entry.read()
            made.append(Row(entry.name, value, origin, entry.meaning))
        except PyptoError as err:
            made.append(Row(entry.name, "invalid", ENV, entry.meaning, err))
    return made


def _table(listed: list[Row]) -> str:
    header = ("SETTING", "VALUE", "FROM", "MEANING")
    cells = [header, *((r.name, r.value, r.origin, r.meaning) for r in listed)]
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in cells
    )


@click.command(name="settings", cls=PyptoCommand)
@click.option("--json", "as_json", is_flag=True, help="Print the settings as a JSON list of objects.")
def settings_command(as_json: bool) -> None:
    """List every PYPTO_* setting: its value now, where it came from, what it does.

    FROM is `env` (the environment), `[tool.pypto]` (the nearest pyproject.toml), `default`, or
    set_log_level() for the log level. A value that cannot be used is shown as `invalid`, its
    error follows the table, and the exit status is 1. An argument or a RunConfig field given in
    code beats each of these defaults.

    \b
    Examples:
      pypto settings
      PYPTO_LOG_LEVEL=debug pypto settings --json
    """
    listed = rows()
    if as_json:
        data = [
            {"name": r.name, "value": r.value, "from": r.origin, "meaning": r.meaning}
            | ({"error": r.error.render()} if r.error else {})
            for r in listed
        ]
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(_table(listed))
    broken = [r for r in listed if r.error is not None]
    for row in broken:
        assert row.error is not None
        click.echo(f"pypto: {row.name}: {row.error.render()}", err=True)
    if broken:
        raise click.exceptions.Exit(1)


COMMANDS = [settings_command]
