"""A watch over the machine's free memory while a long benchmark runs (Linux; elsewhere it watches
nothing): the benchmark stops itself before the kernel's out-of-memory killer picks a process, which
on a shared machine may be someone else's.

>>> with MemoryWatch(floor_gb=2.0) as watch:  # doctest: +SKIP
...     run_the_step()
>>> watch.peak_gb  # the process's largest anonymous memory seen  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import TracebackType

MEMINFO, ROLLUP = Path("/proc/meminfo"), Path("/proc/self/smaps_rollup")


def available_gb() -> float | None:
    """The machine's available memory (``MemAvailable``), or None where /proc does not tell."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return None


def anonymous_gb() -> float | None:
    """This process's anonymous memory (its heap and tensors, not the shared mappings)."""
    try:
        for line in ROLLUP.read_text().splitlines():
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return None


class MemoryWatch:
    """Samples the machine's available memory every ``interval`` seconds on a thread; when it
    falls under ``floor_gb`` the process prints why and exits (status 3) at once. Keeps the peak of
    this process's anonymous memory."""

    def __init__(self, floor_gb: float = 2.0, interval: float = 1.0, what: str = "the benchmark") -> None:
        self.floor_gb, self.interval, self.what = floor_gb, interval, what
        self.peak_gb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="memory-watch", daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_gb = max(self.peak_gb, anonymous_gb() or 0.0)
            free = available_gb()
            if free is not None and free < self.floor_gb:
                print(
                    f"\nstopped {self.what}: the machine has {free:.1f} GB available, under the "
                    f"{self.floor_gb:.1f} GB floor (this process held {self.peak_gb:.1f} GB)",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(3)  # now: the main thread may be deep in one torch call
