"""``RunConfig``: where and how a kernel is compiled and run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Where dump_passes=True writes, one sub-directory per kernel.
DEFAULT_DUMP_ROOT = Path("pypto_passes")
# Where profiles go when profiling is on without a directory, one sub-directory per kernel.
DEFAULT_PROFILE_ROOT = Path("pypto_profile")
# PYPTO_PROFILE=DIR profiles every run, into DIR/<kernel>/.
PROFILE_ENV = "PYPTO_PROFILE"


@dataclass
class RunConfig:
    """Options for compiling and running a kernel.

    ``platform`` names a registered backend (``"a2a3sim"``) or a compile-only target
    (``"a2a3"``). ``dump_passes`` is False, True (dump under ``./pypto_passes/<kernel>``) or a
    directory. ``enable_profiling`` writes a profile of every run (see :meth:`profile_path`);
    ``enable_chip_swimlane`` is its alias and ``profile_dir`` implies it. ``options`` go to
    the passes and the backend as they are. ``pipeline`` names the passes to run (None: the
    default pipeline of ``pypto.passes``).

    >>> RunConfig(platform="a2a3sim", dump_passes="dumps/", options={"verify": True})
    >>> RunConfig(enable_profiling=True)  # profiles go to ./pypto_profile/<kernel>/
    """

    platform: str = "a2a3sim"
    rtol: float = 1e-5
    atol: float = 1e-5
    dump_passes: bool | str | Path = False
    enable_profiling: bool = False
    enable_chip_swimlane: bool = False
    profile_dir: str | Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    pipeline: Sequence[str] | None = None

    def __post_init__(self) -> None:
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

        ``profile_dir`` if given; else, with profiling on or ``PYPTO_PROFILE=DIR`` set,
        ``DIR/<kernel>`` (``./pypto_profile/<kernel>`` without the variable).
        """
        if self.profile_dir is not None:
            return Path(self.profile_dir)
        root = os.environ.get(PROFILE_ENV)
        if not (self.enable_profiling or root):
            return None
        return Path(root or DEFAULT_PROFILE_ROOT) / kernel

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
