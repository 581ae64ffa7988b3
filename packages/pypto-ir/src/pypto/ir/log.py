"""PyPTO's log: one threshold for what the compiler, the runtime and the tools say on stderr.

Levels, from silent to loudest: ``NONE``, ``FATAL``, ``ERROR``, ``WARN``, ``INFO`` (the default),
``EVENT``, ``DEBUG``. A message is shown when its level is at or above the threshold's severity:

- ``WARN``: pypto's own warnings (``CompileWarning``, ``CacheWarning``, ``PluginWarning``, ...);
  below ``WARN`` they are not shown (still issued, so ``pytest.warns`` and filters see them).
- ``INFO``: a one-line summary of a compile's performance hints.
- ``EVENT``: one line per compile (what, for which platform, how long, from the cache or not) and
  per launch (the modeled cycles).
- ``DEBUG``: each pass with its wall time, the compile cache's hits and misses, where artifacts go.

The threshold is ``set_log_level(...)`` if it was called, else ``PYPTO_LOG_LEVEL`` (a level's
name, any case), else ``INFO``. Messages go to the ``pypto`` logger of Python's :mod:`logging`,
which writes them to ``sys.stderr`` as ``pypto: info: ...``.

>>> import pypto
>>> pypto.set_log_level(pypto.LogLevel.DEBUG)
>>> pypto.get_log_level()
<LogLevel.DEBUG: 10>
>>> pypto.set_log_level("warn")  # a name works too
"""

from __future__ import annotations

import enum
import logging
import os
import sys
import warnings
from typing import TextIO

from pypto.ir.errors import ConfigError

LOG_LEVEL_ENV = "PYPTO_LOG_LEVEL"
LOGGER_NAME = "pypto"


class LogLevel(enum.IntEnum):
    """A log threshold; the values are :mod:`logging`'s (``EVENT`` sits between ``DEBUG`` and
    ``INFO``), so a lower value lets more through."""

    DEBUG = 10
    EVENT = 15
    INFO = 20
    WARN = 30
    ERROR = 40
    FATAL = 50
    NONE = 100

    def __str__(self) -> str:
        return f"LogLevel.{self.name}"


DEFAULT_LOG_LEVEL = LogLevel.INFO
# Other spellings a level's name is given in (Python's logging says WARNING and CRITICAL).
_ALIASES = {"WARNING": LogLevel.WARN, "CRITICAL": LogLevel.FATAL, "OFF": LogLevel.NONE}
_explicit: LogLevel | None = None


def _known() -> str:
    return ", ".join(level.name.lower() for level in LogLevel)


def parse_log_level(value: object, where: str = "set_log_level") -> LogLevel:
    """``value`` as a level: a :class:`LogLevel`, its name (any case) or its number; else a
    :class:`ConfigError` that names ``where`` the value came from."""
    if isinstance(value, str):
        name = value.strip().upper()
        level = LogLevel.__members__.get(name) or _ALIASES.get(name)
        if level is not None:
            return level
    elif isinstance(value, int) and not isinstance(value, bool) and value in LogLevel._value2member_map_:
        return LogLevel(value)
    shown = f"{where}={value!r}" if where == LOG_LEVEL_ENV else f"{where}({value!r})"
    raise ConfigError(
        f"{shown} names no log level",
        hint=f"use one of {_known()} (pypto.LogLevel.DEBUG, or its name as a string)",
    )


def set_log_level(level: LogLevel | str) -> None:
    """Set the threshold for this process (it beats ``PYPTO_LOG_LEVEL``): ``set_log_level(LogLevel.WARN)``
    or ``set_log_level("warn")``. A library that lowers it should put back what
    :func:`get_log_level` returned before."""
    global _explicit
    _explicit = parse_log_level(level)
    _logger.setLevel(_explicit)


def get_log_level() -> LogLevel:
    """The threshold in effect: ``set_log_level``'s, else ``PYPTO_LOG_LEVEL``'s, else ``INFO``."""
    return log_level_origin()[0]


def log_level_origin() -> tuple[LogLevel, str]:
    """The threshold in effect and where it came from: ``set_log_level()``, ``PYPTO_LOG_LEVEL``
    or ``default``. A ``PYPTO_LOG_LEVEL`` that names no level is a :class:`ConfigError`."""
    if _explicit is not None:
        return _explicit, "set_log_level()"
    given = os.environ.get(LOG_LEVEL_ENV, "").strip()
    if given:
        return parse_log_level(given, LOG_LEVEL_ENV), LOG_LEVEL_ENV
    return DEFAULT_LOG_LEVEL, "default"


def reset_log_level() -> None:
    """Forget ``set_log_level``: the threshold is ``PYPTO_LOG_LEVEL``'s again, else ``INFO``."""
    global _explicit
    _explicit = None


def enabled(level: LogLevel) -> bool:
    """Whether a message of ``level`` is shown now."""
    threshold = get_log_level()
    _logger.setLevel(threshold)  # kept in step, for handlers a user adds to the logger
    return level >= threshold and threshold is not LogLevel.NONE


def log(level: LogLevel, message: str) -> None:
    """Say ``message`` at ``level`` if the threshold lets it through."""
    if enabled(level):
        _logger.log(level, message)


def debug(message: str) -> None:
    """Pass by pass, cache by cache: what a developer chasing a problem reads."""
    log(LogLevel.DEBUG, message)


def event(message: str) -> None:
    """One line per compile or launch, with its time."""
    log(LogLevel.EVENT, message)


def info(message: str) -> None:
    """What a user wants to know by default (a summary of performance hints)."""
    log(LogLevel.INFO, message)


def is_pyptos(category: type[Warning]) -> bool:
    """Whether a warning category is PyPTO's own (``CompileWarning``, ``CacheWarning``, ...), the
    warnings the threshold governs; a script's own warnings are left alone."""
    return category.__module__.split(".")[0] in ("pypto", "pypto_sim_a2a3")


def shows_warning(category: type[Warning]) -> bool:
    """Whether a warning of ``category`` is shown now: any other package's always; PyPTO's at
    ``WARN`` or louder. (Warnings are still issued, so filters, ``pytest.warns`` and the compile
    cache's record of them see each one: the threshold decides only what is printed.)"""
    if not is_pyptos(category):
        return True
    try:
        return enabled(LogLevel.WARN)
    except ConfigError:  # a bad PYPTO_LOG_LEVEL is reported where a message is logged
        return True


def _gated_showwarning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    if shows_warning(category):
        _python_showwarning(message, category, filename, lineno, file, line)


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is when a message comes (a test's capture, a redirect)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # a closed stream must not break a compile
            self.handleError(record)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        name = LogLevel(record.levelno).name if record.levelno in LogLevel._value2member_map_ else "LOG"
        return f"pypto: {name.lower()}: {record.getMessage()}"


def _make_logger() -> logging.Logger:
    made = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h, _StderrHandler) for h in made.handlers):
        handler = _StderrHandler()
        handler.setFormatter(_Formatter())
        made.addHandler(handler)
    made.propagate = False  # our handler shows it; the root's would show it twice
    return made


_logger = _make_logger()
# PyPTO's warnings are shown through the threshold; installed once, however often this is reloaded.
_python_showwarning = getattr(warnings.showwarning, "python_form", warnings.showwarning)
_gated_showwarning.python_form = _python_showwarning  # type: ignore[attr-defined]
warnings.showwarning = _gated_showwarning

__all__ = [
    "DEFAULT_LOG_LEVEL",
    "LOG_LEVEL_ENV",
    "LogLevel",
    "debug",
    "enabled",
    "event",
    "get_log_level",
    "info",
    "is_pyptos",
    "log",
    "log_level_origin",
    "parse_log_level",
    "reset_log_level",
    "set_log_level",
    "shows_warning",
]
