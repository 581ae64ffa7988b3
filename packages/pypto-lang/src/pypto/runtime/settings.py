"""Session defaults: the platform, where profiles and the compile cache go, whether the cache is on.

Each setting is looked up, first match wins, in the command line (``pypto run -p ...``, see
:func:`command_line`), the environment (``PYPTO_PLATFORM``, ``PYPTO_PROFILE``,
``PYPTO_CACHE_DIR``, ``PYPTO_CACHE``), the ``[tool.pypto]`` table of the nearest
``pyproject.toml`` at or above the current directory, and the built-in defaults.

>>> platform()  # "a2a3sim" unless something above says otherwise  # doctest: +SKIP
>>> with command_line(platform="torchref"):  # doctest: +SKIP
...     RunConfig().platform  # "torchref"
"""

from __future__ import annotations

import functools
import os
import sys
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import PyptoError

PLATFORM_ENV = "PYPTO_PLATFORM"
PROFILE_ENV = "PYPTO_PROFILE"  # set: profile every run, into $PYPTO_PROFILE/<kernel>/
CACHE_DIR_ENV = "PYPTO_CACHE_DIR"
CACHE_ENV = "PYPTO_CACHE"  # 0, off, false or no: no disk cache
CONFIG_FILE = "pyproject.toml"
CONFIG_TABLE = "[tool.pypto]"

DEFAULT_PLATFORM = "a2a3sim"
DEFAULT_PROFILE_ROOT = Path("pypto_profile")
_OFF = {"0", "off", "false", "no"}
_ON = {"1", "on", "true", "yes"}


class ConfigError(PyptoError, ValueError):
    """A setting in ``[tool.pypto]`` or the environment that cannot be used."""


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


KNOWN_KEYS = {"platform": str, "profile-dir": str, "cache-dir": str, "cache": bool}

_overrides: list[dict[str, Any]] = []


@contextmanager
def command_line(**values: Any) -> Iterator[None]:
    """Apply command-line settings (``platform``, ``profile_dir``) inside the block.

    ``profile_dir`` here also switches profiling on for every run, as ``PYPTO_PROFILE`` does.
    Values that are None are not set.
    """
    _overrides.append({k: v for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        _overrides.pop()


def _override(key: str) -> Any:
    return next((layer[key] for layer in reversed(_overrides) if key in layer), None)


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
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", hint="fix the file's TOML syntax") from None
    table = data.get("tool", {}).get("pypto", {})
    for key, value in table.items():
        kind = KNOWN_KEYS.get(key)
        if kind is None:
            raise ConfigError(
                f"{path}: unknown setting {key!r} in {CONFIG_TABLE}",
                hint=f"known settings: {', '.join(KNOWN_KEYS)}",
            )
        if not isinstance(value, kind):
            raise ConfigError(f"{path}: {CONFIG_TABLE} {key} must be a {kind.__name__}, got {value!r}")
    return ConfigFile(path, table)


def platform() -> str:
    """The platform a ``RunConfig()`` without one runs on."""
    chosen = _override("platform") or os.environ.get(PLATFORM_ENV) or config_file().get("platform")
    return chosen or DEFAULT_PLATFORM


def profile_everything() -> bool:
    """Whether every run writes a profile: ``pypto profile``, ``pypto run --profile`` or ``PYPTO_PROFILE``."""
    return _override("profile_dir") is not None or bool(os.environ.get(PROFILE_ENV))


def profile_root() -> Path:
    """Where profiles go, one sub-directory per kernel, when a run asks for none of its own."""
    chosen = _override("profile_dir") or os.environ.get(PROFILE_ENV)
    if chosen:
        return Path(chosen)
    return config_file().path_value("profile-dir") or DEFAULT_PROFILE_ROOT


def cache_enabled() -> bool:
    """Whether compiled programs are kept on disk (``PYPTO_CACHE=off`` or ``cache = false``: no)."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        if value.strip().lower() not in _OFF | _ON:
            raise ConfigError(
                f"{CACHE_ENV}={value!r} is neither on nor off", hint=f"set {CACHE_ENV}=on or {CACHE_ENV}=off"
            )
        return value.strip().lower() in _ON
    configured = config_file().get("cache")
    return True if configured is None else configured


def cache_dir() -> Path:
    """The directory of the compile cache."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen).expanduser()
    return config_file().path_value("cache-dir") or user_cache_dir()


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
    "PLATFORM_ENV",
    "PROFILE_ENV",
    "ConfigError",
    "ConfigFile",
    "cache_dir",
    "cache_enabled",
    "command_line",
    "config_file",
    "find_config_file",
    "platform",
    "profile_everything",
    "profile_root",
    "user_cache_dir",
]
