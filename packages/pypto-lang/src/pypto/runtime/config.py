"""``RunConfig``: where and how a kernel is compiled and run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.runtime import settings
from pypto.runtime.settings import DEFAULT_PROFILE_ROOT, PROFILE_ENV

# Where dump_passes=True writes, one sub-directory per kernel.
DEFAULT_DUMP_ROOT = Path("pypto_passes")

__all__ = ["DEFAULT_DUMP_ROOT", "DEFAULT_PROFILE_ROOT", "PROFILE_ENV", "RunConfig"]


@dataclass
class RunConfig:
    """Options for compiling and running a kernel.

    ``platform`` names a registered backend (``"a2a3sim"``) or a compile-only target
    (``"a2a3"``); None takes the session default (``pypto run -p``, ``PYPTO_PLATFORM``,
    ``[tool.pypto] platform``, else ``"a2a3sim"``: see :mod:`pypto.runtime.settings`).
    ``dump_passes`` is False, True (dump under ``./pypto_passes/<kernel>``) or a directory.
    ``enable_profiling`` writes a profile of every run (see :meth:`profile_path`);
    ``enable_chip_swimlane`` is its alias and ``profile_dir`` implies it. ``options`` go to
    the passes and the backend as they are. ``pipeline`` names the passes to run (None: the
    default pipeline of ``pypto.passes``).

    >>> RunConfig(platform="a2a3sim", dump_passes="dumps/", options={"verify": True})
    >>> RunConfig(enable_profiling=True)  # profiles go to ./pypto_profile/<kernel>/
    """

    platform: str | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    dump_passes: bool | str | Path = False
    enable_profiling: bool = False
    enable_chip_swimlane: bool = False
    profile_dir: str | Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    pipeline: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.platform is None:
            self.platform = settings.platform()
        if not isinstance(self.platform, str) or not self.platform:
            raise ValueError(f"RunConfig.platform must be a platform name, got {self.platform!r}")
        enabled = self.enable_profiling or self.enable_chip_swimlane or self.profile_dir is not None
        self.enable_profiling = self.enable_chip_swimlane = enabled
        if self.pipeline is not None:
            self.pipeline = tuple(self.pipeline)

    def dump_dir(self, kernel: str) -> Path | None:
        """The directory pass dumps of ``kernel`` go to, or None when dumping is off."""
        if self.dump_passes is False or self.dump_passes is None:
            return None
        if self.dump_passes is True:
            return DEFAULT_DUMP_ROOT / kernel
        return Path(self.dump_passes)

    def profile_path(self, kernel: str) -> Path | None:
        """Where a run of ``kernel`` writes its profile, or None when profiling is off.

        ``profile_dir`` if given; else, with profiling on here or for the whole session
        (``PYPTO_PROFILE=DIR``, ``pypto profile -o DIR``), ``ROOT/<kernel>`` where ROOT is that
        directory, ``[tool.pypto] profile-dir`` or ``./pypto_profile``.
        """
        if self.profile_dir is not None:
            return Path(self.profile_dir)
        if not (self.enable_profiling or settings.profile_everything()):
            return None
        return settings.profile_root() / kernel

    def backend_options(self) -> dict[str, Any]:
        """What a backend's ``run`` receives: the user options plus the profiling switches."""
        return {
            **self.options,
            "enable_profiling": self.enable_profiling,
            "profile_dir": self.profile_dir,
            "rtol": self.rtol,
            "atol": self.atol,
        }

    def cache_key(self) -> tuple[Any, ...]:
        """The part of the config a compiled program depends on."""
        options = tuple(sorted((k, repr(v)) for k, v in self.options.items()))
        return (self.platform, options, self.pipeline)
