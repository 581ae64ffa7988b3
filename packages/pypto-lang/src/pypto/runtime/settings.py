"""Session defaults: the platform, where profiles and the compile cache go, whether the cache is on.

Each setting is looked up, first match wins, in the command line (``pypto run -p ...``, see
:func:`command_line`), the environment (``PYPTO_PLATFORM``, ``PYPTO_PROFILE``,
``PYPTO_CACHE_DIR``, ``PYPTO_CACHE``), the ``[tool.pypto]`` table of the nearest
``pyproject.toml`` at or above the current directory, and the built-in defaults.

Each value keeps its :class:`Origin` (the option, the variable, or the file and line), so an
error about a value can say where it came from.

>>> platform()  # "a2a3sim" unless something above says otherwise  # doctest: +SKIP
>>> platform_setting().origin  # e.g. Origin("PYPTO_PLATFORM")  # doctest: +SKIP
>>> with command_line(platform="torchref"):  # doctest: +SKIP
...     RunConfig().platform  # "torchref"
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pypto.ir import ConfigError, DiagnosticPhase, SourceSpan, VerificationLevel

PLATFORM_ENV = "PYPTO_PLATFORM"
PROFILE_ENV = "PYPTO_PROFILE"  # on (1, on, true, yes): profile every run; a directory: there; off: not
CACHE_DIR_ENV = "PYPTO_CACHE_DIR"
CACHE_ENV = "PYPTO_CACHE"  # 0, off, false or no: no disk cache
VERIFY_ENV = "PYPTO_VERIFICATION_LEVEL"  # none, basic or roundtrip: RunConfig's default level
VERIFY_ENV_MANUAL = "PYPTO_VERIFY_LEVEL"  # the same, as PyPTO's manual names it
WARNING_ENV = (
    "PYPTO_WARNING_LEVEL"  # none, pre_pipeline, post_pass, post_pipeline: RunConfig.diagnostic_phase
)
EMIT_LOC_ENV = "PYPTO_EMIT_PTO_LOC"  # on/off: each statement's source line in the artifacts' .pto files
DEBUG_RUNNER_ENV = "PYPTO_EMIT_DEBUG_RUNNER"  # on/off: accepted; no runner exists to emit on a simulator
TASK_GRAPH_ENV = "PYPTO_TASK_GRAPH"  # FILE.html or DIR: every run writes its task graph's HTML view
CONFIG_FILE = "pyproject.toml"
CONFIG_TABLE = "[tool.pypto]"

DEFAULT_PLATFORM = "a2a3sim"
DEFAULT_PROFILE_ROOT = Path("pypto_profile")
_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}


@dataclass(frozen=True)
class Origin:
    """Where a setting's value came from, as an error names it: ``PYPTO_PLATFORM``,
    ``-p/--platform``, ``[tool.pypto] profile-dir in /p/pyproject.toml`` (with the file's line as
    ``span``), ``RunConfig(profile_dir=...)`` (with the caller's line), the built-in default."""

    name: str
    span: SourceSpan | None = None

    def __str__(self) -> str:
        return self.name


DEFAULT = Origin("the built-in default")
T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """A setting's value and where it came from."""

    value: T
    origin: Origin


@dataclass(frozen=True)
class ConfigFile:
    """The ``[tool.pypto]`` table of one ``pyproject.toml`` (empty when there is none)."""

    path: Path | None
    values: Mapping[str, Any]

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def path_value(self, key: str) -> Path | None:
        """A path setting, relative to the directory of the file that sets it."""
        value = self.values.get(key)
        if value is None or self.path is None:
            return None
        return self.path.parent / Path(value).expanduser()

    def origin(self, key: str) -> Origin:
        """``[tool.pypto] KEY in FILE``, pointing at the line that sets it when it can be found."""
        assert self.path is not None
        return Origin(f"{CONFIG_TABLE} {key} in {self.path}", _key_span(self.path, key))


def _key_span(path: Path, key: str, of_key: bool = False) -> SourceSpan | None:
    """The value of ``key = ...`` inside the ``[tool.pypto]`` table of ``path`` (``of_key``: the
    key itself); None for the spellings this scan does not follow, e.g. a dotted key in ``[tool]``."""
    assignment = re.compile(rf"""^\s*(["']?){re.escape(key)}\1\s*=\s*""")
    in_table = False
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, start=1):
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]+", line)
        if header:
            in_table = header.group(1).replace(" ", "") == "tool.pypto"
            continue
        match = assignment.match(line) if in_table else None
        if match and of_key:
            start = len(line) - len(line.lstrip())
            return SourceSpan(str(path), number, start, start + len(line[start:].split("=", 1)[0].rstrip()))
        if match:
            value = line[match.end() :].split(" #", 1)[0].rstrip()
            return SourceSpan(str(path), number, match.end(), match.end() + max(len(value), 1))
    return None


KNOWN_KEYS = {"platform": str, "profile-dir": str, "cache-dir": str, "cache": bool}
EXAMPLES = {"platform": '"a2a3sim"', "profile-dir": '"prof"', "cache-dir": '".pypto-cache"', "cache": "true"}

_overrides: list[dict[str, Setting[Any]]] = []


@contextmanager
def command_line(**values: Any) -> Iterator[None]:
    """Apply command-line settings (``platform``, ``profile_dir``, ``task_graph``) inside the block.

    ``profile_dir`` here also switches profiling on for every run, as ``PYPTO_PROFILE`` does.
    Values that are None are not set. A value may be a :class:`Setting` that names the option it
    came from, for error messages: ``command_line(platform=Setting("a2a3sim", Origin("-p")))``.
    """
    layer = {
        key: value if isinstance(value, Setting) else Setting(value, Origin("the command line"))
        for key, value in values.items()
        if value is not None
    }
    _overrides.append(layer)
    try:
        yield
    finally:
        _overrides.pop()


def break_at() -> str | None:
    """Where runs stop for the kernel debugger by default (``pypto run --break FILE:LINE``)."""
    chosen = _override("break_at")
    return None if chosen is None else str(chosen.value)


def timing_only() -> bool:
    """Whether runs model the time alone by default (``pypto run --timing-only``,
    ``pypto profile --timing-only``): see ``RunConfig.timing_only``."""
    chosen = _override("timing_only")
    return chosen is not None and bool(chosen.value)


def note_break_line_held() -> None:
    """A program run under ``pypto run --break`` has an op on that line (see :func:`break_line_held`)."""
    for layer in reversed(_overrides):
        if "break_at" in layer:
            layer["break_at_held"] = Setting(True, Origin("--break"))
            return


def break_line_held() -> bool:
    """Whether a program run since ``pypto run --break`` began has an op on its line."""
    return _override("break_at_held") is not None


def _override(key: str) -> Setting[Any] | None:
    return next((layer[key] for layer in reversed(_overrides) if key in layer), None)


def _environment(name: str) -> Setting[str] | None:
    """A variable that is set and not empty, its value stripped."""
    value = os.environ.get(name, "").strip()
    return Setting(value, Origin(name)) if value else None


def find_config_file(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (the current directory)."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            return candidate
    return None


def config_file(start: Path | None = None) -> ConfigFile:
    """The ``[tool.pypto]`` settings in effect for ``start`` (the current directory)."""
    path = find_config_file(start)
    if path is None:
        return ConfigFile(None, {})
    return _read_config(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _read_config(path: Path, mtime_ns: int) -> ConfigFile:
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}", hint="make the file readable") from None
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(path, exc) from None
    tool = data.get("tool", {})
    table = tool.get("pypto", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        problem = f"{CONFIG_TABLE} must be a table of settings, got {table!r}"
        span = _line_span(path, r"^\s*(tool\.)?pypto\s*=\s*")
        raise ConfigError(
            problem if span else f"{path}: {problem}",
            span=span,
            hint=f"write it as a table: {CONFIG_TABLE} on its own line, then a key per line, e.g. "
            'platform = "a2a3sim"',
        )
    for key, value in table.items():
        kind = KNOWN_KEYS.get(key)
        if kind is None:
            known = f"known settings: {', '.join(KNOWN_KEYS)}"
            raise _file_error(path, key, f"unknown setting {key!r} in {CONFIG_TABLE}", known, of_key=True)
        if not isinstance(value, kind):
            problem = f"{CONFIG_TABLE} {key} must be a {kind.__name__}, got {value!r}"
            raise _file_error(path, key, problem, f"write {key} = {EXAMPLES[key]}")
        if isinstance(value, str) and not value.strip():  # an empty name would silently mean the default
            problem = f"{CONFIG_TABLE} {key} is empty"
            raise _file_error(path, key, problem, f"write {key} = {EXAMPLES[key]}, or remove the line")
    return ConfigFile(path, table)


def _syntax_error(path: Path, exc: tomllib.TOMLDecodeError) -> ConfigError:
    """A TOML syntax error at the line and column tomllib names (its message ends with them)."""
    text = str(exc)
    where = re.search(r" \(at line (\d+), column (\d+)\)$", text)
    span = SourceSpan(str(path), int(where[1]), int(where[2]) - 1) if where else None
    reason = text[: where.start()] if where else text
    return ConfigError(
        f"{path} is not valid TOML: {reason}",
        span=span,
        hint='fix the TOML syntax there, e.g. platform = "a2a3sim"',
    )


def _line_span(path: Path, pattern: str) -> SourceSpan | None:
    """The value on the first line of ``path`` that matches ``pattern`` (which ends before it)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, start=1):
        match = re.match(pattern, line)
        if match:
            value = line[match.end() :].split(" #", 1)[0].rstrip()
            return SourceSpan(str(path), number, match.end(), match.end() + max(len(value), 1))
    return None


def _file_error(path: Path, key: str, problem: str, hint: str, of_key: bool = False) -> ConfigError:
    """An error at the line that sets ``key`` (under its value, or ``of_key``: under the key); the
    message names the file when no line is found."""
    span = _key_span(path, key, of_key)
    return ConfigError(problem if span else f"{path}: {problem}", span=span, hint=hint)


def platform_setting() -> Setting[str]:
    """The platform a ``RunConfig()`` without one runs on, and where that name came from."""
    chosen = _override("platform") or _environment(PLATFORM_ENV)
    if chosen is not None:
        return chosen
    config = config_file()
    if config.get("platform"):
        return Setting(config.get("platform"), config.origin("platform"))
    return Setting(DEFAULT_PLATFORM, DEFAULT)


def platform() -> str:
    """The platform a ``RunConfig()`` without one runs on."""
    return platform_setting().value


def _profile_switch() -> Setting[str] | None:
    """``PYPTO_PROFILE`` when it switches profiling on: an on-word, or a directory."""
    chosen = _environment(PROFILE_ENV)
    if chosen is None or chosen.value.lower() in _OFF:
        return None
    return chosen


def profile_everything() -> bool:
    """Whether every run writes a profile: ``pypto profile``, ``pypto run --profile``, or
    ``PYPTO_PROFILE`` set to a directory or to 1, on, true or yes (0, off, false or no: not)."""
    return _override("profile_dir") is not None or _profile_switch() is not None


def profile_root_setting() -> Setting[Path]:
    """Where profiles go, one sub-directory per kernel, when a run asks for none of its own: the
    command line, ``PYPTO_PROFILE=DIR``, ``[tool.pypto] profile-dir``, else ``./pypto_profile``."""
    chosen = _override("profile_dir")
    if chosen is not None:
        return Setting(Path(chosen.value), chosen.origin)
    switch = _profile_switch()
    if switch is not None and switch.value.lower() not in _ON:
        return Setting(Path(switch.value).expanduser(), switch.origin)
    config = config_file()
    configured = config.path_value("profile-dir")
    if configured is not None:
        return Setting(configured, config.origin("profile-dir"))
    return Setting(DEFAULT_PROFILE_ROOT, DEFAULT)


def profile_root() -> Path:
    """Where profiles go, one sub-directory per kernel, when a run asks for none of its own."""
    return profile_root_setting().value


def cache_enabled() -> bool:
    """Whether compiled programs are kept on disk (``PYPTO_CACHE=off`` or ``cache = false``: no)."""
    return cache_enabled_setting().value


def cache_enabled_setting() -> Setting[bool]:
    """:func:`cache_enabled` and where it came from."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        if value.strip().lower() not in _OFF | _ON:
            raise ConfigError(
                f"{CACHE_ENV}={value!r} is neither on nor off", hint=f"set {CACHE_ENV}=on or {CACHE_ENV}=off"
            )
        return Setting(value.strip().lower() in _ON, Origin(CACHE_ENV))
    config = config_file()
    configured = config.get("cache")
    return Setting(True, DEFAULT) if configured is None else Setting(configured, config.origin("cache"))


def verification_level() -> VerificationLevel:
    """The ``RunConfig.verification_level`` a config gets when its call names none:
    ``PYPTO_VERIFICATION_LEVEL`` or, as PyPTO's manual spells it, ``PYPTO_VERIFY_LEVEL`` (``none``,
    ``basic``, ``roundtrip``), else ``BASIC``."""
    return verification_level_setting().value


def verification_level_setting() -> Setting[VerificationLevel]:
    """:func:`verification_level` and the variable it came from."""
    name = next((env for env in (VERIFY_ENV, VERIFY_ENV_MANUAL) if os.environ.get(env)), None)
    if name is None:
        return Setting(VerificationLevel.BASIC, DEFAULT)
    value = os.environ[name]
    try:
        return Setting(VerificationLevel[value.strip().upper()], Origin(name))
    except KeyError:
        known = ", ".join(level.name.lower() for level in VerificationLevel)
        raise ConfigError(
            f"{name}={value!r} names no verification level", hint=f"set it to one of {known}"
        ) from None


def switch(name: str, default: bool) -> Setting[bool]:
    """An on/off variable: ``1``, ``on``, ``true``, ``yes`` or ``0``, ``off``, ``false``, ``no`` (any
    case), else ``default``; any other value is a ConfigError naming the variable."""
    chosen = _environment(name)
    if chosen is None:
        return Setting(default, DEFAULT)
    word = chosen.value.lower()
    if word not in _ON | _OFF:
        raise ConfigError(
            f"{name}={chosen.value!r} is neither on nor off", hint=f"set {name}=1 (on) or {name}=0 (off)"
        )
    return Setting(word in _ON, chosen.origin)


def diagnostic_phase_setting() -> Setting[DiagnosticPhase]:
    """The ``RunConfig.diagnostic_phase`` a config gets when its call names none:
    ``PYPTO_WARNING_LEVEL`` (``none``, ``pre_pipeline``, ``post_pass``, ``post_pipeline``), else
    ``PrePipeline``."""
    chosen = _environment(WARNING_ENV)
    if chosen is None:
        return Setting(DiagnosticPhase.PrePipeline, DEFAULT)
    try:
        return Setting(DiagnosticPhase(chosen.value.lower()), chosen.origin)
    except ValueError:
        known = ", ".join(phase.value for phase in DiagnosticPhase)
        raise ConfigError(
            f"{WARNING_ENV}={chosen.value!r} names no diagnostic phase",
            hint=f"set it to one of {known} (none: no compile warnings or performance hints)",
        ) from None


def diagnostic_phase() -> DiagnosticPhase:
    """The diagnostic phase a ``RunConfig()`` without one gets (see :func:`diagnostic_phase_setting`)."""
    return diagnostic_phase_setting().value


def emit_source_loc() -> bool:
    """The ``RunConfig.emit_source_loc`` a config gets when its call names none:
    ``PYPTO_EMIT_PTO_LOC`` (on or off), else on."""
    return switch(EMIT_LOC_ENV, True).value


def emit_debug_runner() -> Setting[bool]:
    """``PYPTO_EMIT_DEBUG_RUNNER``, checked. On a simulator there is no device binary and so no
    standalone runner to emit: the setting is accepted (on by default) and writes nothing; the
    artifacts' ``program.py`` is what replays a compile (``pl.parse`` it, then run it)."""
    return switch(DEBUG_RUNNER_ENV, True)


def task_graph_setting() -> Setting[Path] | None:
    """Where every run writes its task graph's HTML view: the command line (``pypto run
    --task-graph``), else ``PYPTO_TASK_GRAPH``; None when neither asks. A path ending in
    ``.html`` is the file (each run rewrites it); any other is a directory that gets
    ``<kernel>.html`` per kernel."""
    chosen = _override("task_graph") or _environment(TASK_GRAPH_ENV)
    if chosen is None:
        return None
    return Setting(Path(chosen.value).expanduser(), chosen.origin)


def cache_dir() -> Path:
    """The directory of the compile cache."""
    return cache_dir_setting().value


def cache_dir_setting() -> Setting[Path]:
    """:func:`cache_dir` and where it came from."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Setting(Path(chosen).expanduser(), Origin(CACHE_DIR_ENV))
    config = config_file()
    configured = config.path_value("cache-dir")
    if configured is not None:
        return Setting(configured, config.origin("cache-dir"))
    return Setting(user_cache_dir(), DEFAULT)


def user_cache_dir() -> Path:
    """The per-user cache directory of this OS, plus ``pypto``: ``~/.cache/pypto`` on Linux."""
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local")) / "pypto" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "pypto"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "pypto"


__all__ = [
    "CACHE_DIR_ENV",
    "CACHE_ENV",
    "DEBUG_RUNNER_ENV",
    "DEFAULT",
    "EMIT_LOC_ENV",
    "PLATFORM_ENV",
    "PROFILE_ENV",
    "TASK_GRAPH_ENV",
    "VERIFY_ENV",
    "VERIFY_ENV_MANUAL",
    "WARNING_ENV",
    "ConfigError",
    "ConfigFile",
    "Origin",
    "Setting",
    "cache_dir",
    "cache_dir_setting",
    "cache_enabled",
    "cache_enabled_setting",
    "command_line",
    "config_file",
    "diagnostic_phase",
    "diagnostic_phase_setting",
    "emit_debug_runner",
    "emit_source_loc",
    "find_config_file",
    "platform",
    "platform_setting",
    "profile_everything",
    "profile_root",
    "profile_root_setting",
    "switch",
    "task_graph_setting",
    "user_cache_dir",
    "verification_level",
    "verification_level_setting",
]
