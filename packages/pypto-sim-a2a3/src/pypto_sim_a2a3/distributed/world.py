"""A world of N simulated chips on one modeled clock, run by the HOST orchestrator.

All chips share one :class:`WorldScheduler`: each rank's chip (its cores keep their names,
``cg0.AIV0``; a deadlock report prefixes the rank, ``rank1/cg0.AIV0``) sees the world through a
:class:`RankScheduler`, which keeps its cores' slices for the rank's own report. The HOST entry
runs on a host core of its own (:class:`~.host.WorldHost`); each ``dist.dispatch`` queues a chip
orchestration on its rank, and each rank runs its queue in order, concurrently with the others
(ranks wait for each other only through their signals). Cross-rank effects go through the
:class:`~.interconnect.Fabric` only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import CommError, Function, Program, RunReport, SourceSpan, Target
from pypto.ir.backend import WorldReport
from pypto.ir.launch import LoadedProgram
from pypto_sim_a2a3.distributed.endpoint import RankComm
from pypto_sim_a2a3.distributed.interconnect import Fabric, Message
from pypto_sim_a2a3.distributed.windows import WindowStore
from pypto_sim_a2a3.engine.chip import Chip
from pypto_sim_a2a3.engine.runtime_rings import RuntimeRings
from pypto_sim_a2a3.engine.scheduler import (
    Clocked,
    Coroutine,
    Event,
    Observer,
    Process,
    Scheduler,
    Signal,
    Wait,
)
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.options import SimOptions
from pypto_sim_a2a3.target import A2A3_INTERCONNECT, Interconnect

Steps = Generator[Event, None, Any]


class WorldScheduler(Scheduler):
    """The one scheduler of a world: each rank's observers see only that rank's cores."""

    def __init__(self, on_time: Callable[[int], None] | None = None, check_wakeups: bool = False) -> None:
        super().__init__(on_time, check_wakeups)
        self.rank_of: dict[Clocked, int] = {}
        self.rank_observers: dict[int, list[Observer]] = {}

    def label(self, core: Clocked) -> str:
        rank = self.rank_of.get(core)
        return core.name if rank is None else f"rank{rank}/{core.name}"

    def _notify(self, core: Clocked, cycles: int, event: Event) -> None:
        rank = self.rank_of.get(core)
        if rank is None:
            return
        for observer in self.rank_observers.get(rank, ()):
            observer(core, core.clock, cycles, event)


class RankScheduler:
    """What one rank's chip sees of the world's scheduler: its spawns are its rank's cores, its
    observers see only them."""

    def __init__(self, world: WorldScheduler, rank: int) -> None:
        self.world = world
        self.rank = rank

    @property
    def now(self) -> int:
        return self.world.now

    def spawn(self, core: Clocked, coroutine: Coroutine) -> Process:
        self.world.rank_of[core] = self.rank
        return self.world.spawn(core, coroutine)

    def observe(self, observer: Observer) -> None:
        self.world.rank_observers.setdefault(self.rank, []).append(observer)

    def waiting(self) -> list[tuple[str, Wait]]:
        return [(name, wait) for name, wait in self.world.waiting()]

    def release(self) -> None:
        self.world.rank_observers.pop(self.rank, None)

    def run(self) -> None:
        raise RuntimeError("a rank's chip runs under its world's scheduler")


@dataclass(eq=False)
class Work:
    """One piece of a rank's queue: a dispatched orchestration or a host collective's builtin task.

    ``run(rank)`` is its coroutine on the rank's host core; ``after`` the earlier work (of any rank)
    it must wait for (it shares host tensors with it)."""

    name: str
    run: Callable[[Rank], Steps]
    span: SourceSpan | None
    after: tuple[Work, ...] = ()
    footprint: tuple[tuple[int, int, int, bool], ...] = ()  # (storage, lo, hi, writes)
    done: bool = False
    result: Any = None


@dataclass(eq=False)
class Rank:
    """One rank: its chip, its endpoint, its queue of work."""

    index: int
    chip: Chip
    comm: RankComm
    queue: deque[Work] = field(default_factory=deque)
    arrived: Signal = field(default_factory=Signal)  # work queued, or the host done
    served: bool = False  # its host thread ended (the host is done and its queue empty)
    finished_at: int = 0  # the cycle its last work ended (its report's end)


class World:
    """``ranks`` chips running ``program``'s HOST entry; ``World(...).run(args)`` -> WorldReport."""

    def __init__(
        self,
        program: Program,
        target: Target,
        platform: str,
        ranks: int,
        options: Mapping[str, Any],
        loaded: LoadedProgram,
        interconnect: Interconnect = A2A3_INTERCONNECT,
        local: Sequence[int] | None = None,
        link: Any = None,
    ) -> None:
        self.program = program
        self.target = target
        self.loaded = loaded
        self.size = ranks
        self.options = options
        self.sim = SimOptions.for_run(options)
        self.scheduler = WorldScheduler(on_time=self._until, check_wakeups=self.sim.check_wakeups)
        windows = options.get("windows")
        self.windows: WindowStore = windows if isinstance(windows, WindowStore) else WindowStore(ranks)
        if self.windows.ranks != ranks:
            raise CommError(
                f"the window store kept from earlier runs holds {self.windows.ranks} rank(s), "
                f"this world has {ranks}",
                program.entry_function.span,
                "keep one window store per world size (a persistent worker's devices)",
            )
        # A rank in a process of its own (``link``: the runtime's RankLink) simulates only itself;
        # its messages to the others go through the link.
        self.link = link
        outbound = None if link is None else self._outbound
        self.fabric = Fabric(
            interconnect,
            target.clock_mhz,
            self.scheduler.spawn,
            self._receive,
            frozenset(local or ()),
            outbound,
        )
        self.progress = Signal()  # some work finished
        self.host_done = False
        self.dispatched = [0] * ranks  # work ever queued on each rank (by this process's host)
        self.ranks: dict[int, Rank] = {}
        for index in range(ranks) if local is None else local:
            comm = RankComm(self, index)
            chip = Chip(
                program,
                target,
                platform,
                options.get("on_task"),
                options.get("on_progress"),
                loaded,
                RuntimeRings.from_options(options),
                scheduler=RankScheduler(self.scheduler, index),  # type: ignore[arg-type]
                sim=self.sim,
                comm=comm,
            )
            comm.chip = chip
            self.ranks[index] = Rank(index, chip, comm)

    def _receive(self, message: Message) -> None:
        self.ranks[message.dst].comm.receive(message)

    def _outbound(self, message: Message) -> None:
        self.link.send(message.dst, message, message.sent)

    def _until(self, now: int) -> None:
        for rank in self.ranks.values():
            rank.chip.in_time.until(now)

    def runs(self, rank: int) -> bool:
        """Whether ``rank`` is simulated here (all are, unless each rank has a process)."""
        return rank in self.ranks

    # ------------------------------------------------------------ running

    def run(self, entry: Function, args: Sequence[Any]) -> WorldReport:
        """Run the HOST entry and every rank's work to the end; the world's report."""
        from pypto_sim_a2a3.distributed.host import WorldHost

        host_core = Core("HOST")
        host = self.scheduler.spawn(host_core, self._host(WorldHost(entry, args, self)))
        for rank in self.ranks.values():
            rank.chip.start()
            rank.chip.scheduler.spawn(rank.chip.host, self._serve(rank))
        try:
            if self.link is None:
                self.scheduler.run()
            else:
                self._run_windows(host)
            for rank in self.ranks.values():
                rank.chip.in_time.drain()
            chips = tuple(self._chip_report(rank) for rank in self.ranks.values())
        finally:
            for rank in self.ranks.values():
                rank.chip.release()
            self.scheduler.release()
        return self._report(chips, host.result, host_core.clock)

    def _run_windows(self, host: Process) -> None:
        """A rank in a process of its own: simulate window by window (every event before the
        link's horizon), hand the link what it sent and take what the others sent it."""
        from pypto_sim_a2a3.distributed.processes import run_windows

        run_windows(self, host)

    def _chip_report(self, rank: Rank) -> RunReport:
        """A rank's report: its chip's, ending when its last work did (not when the world did)."""
        report = rank.chip.report(())
        report.total_cycles = rank.finished_at
        return report

    def _host(self, host: Any) -> Steps:
        result = yield from host.run()
        yield from self.drain(host.fn.span, "every rank's work to finish")
        self.host_done = True
        for rank in self.ranks.values():
            rank.arrived.changed()
        return host.resolve(result)

    def drain(self, span: SourceSpan | None, what: str) -> Steps:
        """The host waits until every rank has run all its queued work."""
        ranks = list(self.ranks.values())
        if any(rank.queue for rank in ranks):
            yield Wait(lambda: not any(rank.queue for rank in ranks), what, span, on=(self.progress,))

    def submit(self, rank: int, work: Work) -> None:
        """Queue ``work`` on ``rank``, after the earlier work it shares host tensors with."""
        self.dispatched[rank] += 1
        target = self.ranks.get(rank)
        if target is None:  # another process simulates that rank: it runs its own dispatches
            work.done, work.result = True, ()
            return
        earlier = [w for r in self.ranks.values() for w in r.queue if _conflict(w.footprint, work.footprint)]
        work.after = tuple(earlier)
        target.queue.append(work)
        target.arrived.changed()

    def _serve(self, rank: Rank) -> Steps:
        """A rank's host thread: run its queued work in order until the host is done."""
        while True:
            yield Wait(
                lambda: bool(rank.queue) or self.host_done,
                "a dispatch from the HOST",
                on=(rank.arrived,),
            )
            if not rank.queue:
                break
            work = rank.queue[0]
            if work.after:
                yield Wait(
                    _all_done(work.after),
                    f"the earlier dispatches {work.name} shares host tensors with",
                    work.span,
                    on=(self.progress,),
                )
            work.result = yield from work.run(rank)
            rank.finished_at = rank.chip.host.clock
            work.done = True
            rank.queue.popleft()
            self.progress.changed()
        rank.served = True
        rank.chip.close()

    def idle_ranks(self) -> list[int]:
        """The ranks the host never dispatched to (a peer waiting on one of them waits forever)."""
        return [rank for rank, count in enumerate(self.dispatched) if count == 0]

    # ------------------------------------------------------------ the report

    def _report(self, chips: tuple[RunReport, ...], outputs: Any, host_clock: int) -> WorldReport:
        ids = tuple(self.options.get("device_ids") or range(self.size))
        if self.link is not None:
            self.link.transfers.extend(self.fabric.transfers)
        total = max([host_clock, *(chip.total_cycles for chip in chips)])
        return WorldReport(
            chips=chips,
            total_cycles=total,
            clock_ghz=self.target.clock_mhz / 1000,
            transfers=tuple(self.fabric.transfers),
            device_ids=tuple(int(i) for i in ids),
            outputs=tuple(outputs) if isinstance(outputs, tuple) else (outputs,),
        )


def _all_done(works: Sequence[Work]) -> Callable[[], bool]:
    return lambda: all(w.done for w in works)


def footprint(values: Sequence[Any], writes: Sequence[bool]) -> tuple[tuple[int, int, int, bool], ...]:
    """The host tensors a dispatch touches: (storage, first byte, end byte, written)."""
    found = []
    for value, written in zip(values, writes, strict=True):
        if isinstance(value, torch.Tensor) and value.numel():
            start = int(value.storage_offset()) * value.element_size()
            span = sum((int(n) - 1) * s for n, s in zip(value.shape, value.stride(), strict=True))
            end = start + (span + 1) * value.element_size()
            found.append((value.untyped_storage().data_ptr(), start, end, written))
    return tuple(found)


def _conflict(a: Sequence[tuple[int, int, int, bool]], b: Sequence[tuple[int, int, int, bool]]) -> bool:
    return any(
        sa == sb and lo_a < hi_b and lo_b < hi_a and (wa or wb)
        for sa, lo_a, hi_a, wa in a
        for sb, lo_b, hi_b, wb in b
    )
