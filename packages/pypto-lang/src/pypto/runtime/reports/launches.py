"""A record of every kernel launch, for whoever asks: ``pypto profile`` lists the profiles written.

>>> with recording_launches() as launches:  # doctest: +SKIP
...     mixed(a, b, bias, out)
>>> launches[0].kernel, launches[0].profile  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pypto.ir import RunReport
from pypto.runtime.reports.profiling import ProfileFiles


@dataclass(frozen=True)
class Launch:
    """One run of a compiled program: its kernel, platform, report, profile files and wall time."""

    kernel: str
    platform: str
    report: RunReport
    profile: ProfileFiles | None
    seconds: float


_recorders: list[list[Launch]] = []


@contextmanager
def recording_launches() -> Iterator[list[Launch]]:
    """Collect every launch made inside the block, in order."""
    launches: list[Launch] = []
    _recorders.append(launches)
    try:
        yield launches
    finally:
        _recorders.remove(launches)


def record(launch: Launch) -> None:
    """Tell every active recorder about ``launch``."""
    for launches in _recorders:
        launches.append(launch)
