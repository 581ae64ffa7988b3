"""Where a distributed worker's ranks run.

:class:`ProcessEngine` runs each rank in its own forked process (:mod:`.processes`) when the
platform's backend can simulate one rank of a world (``backend.run_rank``, DIST_CONTRACT.md "Ranks
as processes"): the ranks exchange their cross-rank effects as messages in conservative time
windows, so the modeled cycles equal those of one process simulating the whole world.
:class:`InProcessEngine` runs the world in this process through ``backend.run_world`` (every rank's
chip side by side on one modeled clock): the engine for a backend without ``run_rank``. The
manual's rules that come from ranks living in processes (host IO tensors in shared memory,
resident tensors owned by their worker) hold under both.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir import PlatformError
from pypto.ir.backend import WorldReport
from pypto.ir.tracebacks import call_site
from pypto.runtime.distributed.compiled import DistributedCompiledProgram, world_backend
from pypto.runtime.distributed.processes import RankLink, RankProcesses


class InProcessEngine:
    """Runs each dispatch of a world through the platform's ``run_world``, in this process."""

    in_processes = False

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


class RankWindows:
    """A persistent worker's windows of one program when the ranks are processes: each rank keeps
    its own store; this handle asks them to zero it before the next dispatch (``reset()``)."""

    def __init__(self, program: int) -> None:
        self.program = program
        self.reset_requested = False

    def reset(self) -> None:
        self.reset_requested = True


class ProcessEngine:
    """Each rank in a forked process running ``backend.run_rank`` (the programs and the SubWorker
    bindings are inherited at the fork, at ``prepare()``)."""

    in_processes = True

    def __init__(
        self,
        programs: Sequence[DistributedCompiledProgram],
        callbacks: Mapping[str, Callable[..., Any]],
        startup_timeout_s: float | None = None,
    ) -> None:
        first = programs[0]
        self.platform = first.platform
        self.ranks = first.world_size
        self.programs = list(programs)
        self.callbacks = dict(callbacks)
        self.backend = world_backend(first.platform, first.config)
        self.lookahead = int(self.backend.link_lookahead(self.ranks))
        self._stores: dict[int, Any] = {}  # in a rank's process: program index -> its window store
        self.processes = RankProcesses(self.ranks, self._serve_rank, startup_timeout_s)

    def run_world(
        self, compiled: DistributedCompiledProgram, args: list[Any], options: dict[str, Any]
    ) -> WorldReport:
        index = next(i for i, p in enumerate(self.programs) if p is compiled)
        windows = options.get("windows")
        persistent = None
        if isinstance(windows, RankWindows):
            persistent = windows.reset_requested
            windows.reset_requested = False
        sent = {k: v for k, v in options.items() if k not in ("windows", "callbacks") and _picklable(v)}
        results = self.processes.run((index, args, sent, persistent), self.lookahead)
        chips = tuple(report for report, _ in results)
        transfers = tuple(
            sorted((t for _, sent_by in results for t in sent_by), key=lambda t: (t.start, t.src))
        )
        clock_ghz = chips[0].clock_mhz / 1000.0 if chips else 0.0
        return WorldReport(chips, max((c.total_cycles for c in chips), default=0), clock_ghz, transfers)

    def _serve_rank(self, rank: int, link: RankLink, job: Any) -> tuple[Any, list[Any]]:
        """In rank ``rank``'s process: simulate its part of one dispatch."""
        index, args, options, persistent = job
        program = self.programs[index]
        windows = None
        if persistent is not None:
            if index not in self._stores:
                self._stores[index] = self.backend.window_store(self.ranks)
            elif persistent:
                self._stores[index].reset()
            windows = self._stores[index]
        options = {**options, "windows": windows, "callbacks": self.callbacks}
        report = self.backend.run_rank(program.lowered, args, options, rank=rank, ranks=self.ranks, link=link)
        return report, link.transfers

    def window_store(self, compiled: DistributedCompiledProgram) -> RankWindows:
        if not callable(getattr(self.backend, "window_store", None)):
            raise PlatformError(
                f"platform {self.platform!r} cannot retain communication windows across dispatches",
                call_site(),
                "prepare without persistent=True on this platform",
            )
        return RankWindows(next(i for i, p in enumerate(self.programs) if p is compiled))

    def close(self) -> None:
        self.processes.close()


Engine = InProcessEngine | ProcessEngine


def make_engine(
    programs: Sequence[DistributedCompiledProgram],
    callbacks: Mapping[str, Callable[..., Any]],
    startup_timeout_s: float | None,
    *,
    processes: bool = True,
) -> Engine:
    """The engine a worker of ``programs`` runs its ranks with: a process per rank when the
    platform's backend simulates one rank at a time (``run_rank``) and ``processes`` (a prepared
    worker), else this process (a one-shot call: every chip on one modeled clock, the engine the
    issue's default and the reference). A process launched as one rank of a ``torch.distributed``
    world (``torchrun``) simulates only its rank either way."""
    from pypto.runtime.distributed.torchrun import torchrun_engine

    launched = torchrun_engine(programs, callbacks)
    if launched is not None:
        return launched
    backend = world_backend(programs[0].platform, programs[0].config)
    rank_at_a_time = callable(getattr(backend, "run_rank", None)) and callable(
        getattr(backend, "link_lookahead", None)
    )
    if processes and rank_at_a_time:
        return ProcessEngine(programs, callbacks, startup_timeout_s)
    return InProcessEngine(programs[0], startup_timeout_s)


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # anything a rank process cannot be sent stays home
        return False
    return True


__all__ = ["Engine", "InProcessEngine", "ProcessEngine", "RankWindows", "make_engine"]
