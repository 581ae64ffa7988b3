"""Where a distributed worker's ranks run.

:class:`InProcessEngine` runs every rank in this process: the platform's ``run_world`` simulates
the whole world on one modeled clock, the ranks' chips side by side. The manual's rules that come
from ranks living in processes of their own (host IO tensors in shared memory, resident tensors
owned by the worker that allocated them) are enforced by :class:`DistributedWorker` all the same,
so a program that runs here runs unchanged where each rank is a process.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import PlatformError
from pypto.ir.backend import WorldReport
from pypto.ir.tracebacks import call_site
from pypto.runtime.distributed.compiled import DistributedCompiledProgram, world_backend


class InProcessEngine:
    """Runs each dispatch of a world through the platform's ``run_world``, in this process."""

    def __init__(self, compiled: DistributedCompiledProgram, startup_timeout_s: float | None = None) -> None:
        self.platform = compiled.platform
        self.ranks = compiled.world_size
        self.backend = world_backend(compiled.platform, compiled.config)
        self.startup_timeout_s = startup_timeout_s

    def run_world(
        self, compiled: DistributedCompiledProgram, args: list[Any], options: dict[str, Any]
    ) -> WorldReport:
        report: WorldReport = self.backend.run_world(compiled.lowered, args, options, ranks=self.ranks)
        return report

    def window_store(self, compiled: DistributedCompiledProgram) -> Any:
        """A fresh window store for ``compiled``'s windows, kept by a persistent worker."""
        make = getattr(self.backend, "window_store", None)
        if not callable(make):
            raise PlatformError(
                f"platform {self.platform!r} cannot retain communication windows across dispatches",
                call_site(),
                "prepare without persistent=True on this platform",
            )
        return make(self.ranks)

    def close(self) -> None:
        """Nothing to release: the world lives in this process."""


def make_engine(compiled: DistributedCompiledProgram, startup_timeout_s: float | None) -> InProcessEngine:
    """The engine a worker of ``compiled`` runs its ranks with."""
    return InProcessEngine(compiled, startup_timeout_s)


__all__ = ["InProcessEngine", "make_engine"]
