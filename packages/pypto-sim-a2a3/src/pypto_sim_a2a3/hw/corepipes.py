"""The pipes inside one core: separate hardware queues that run at once and synchronise on flags.

Each op issues on its pipe (MTE2: GM -> L1 / UB; MTE1: L1 -> L0A / L0B / BT; CUBE: the cube's
matmuls; VECTOR: vector instructions; FIXPIPE: L0C -> GM / L1 and C->V pushes; MTE3: UB -> GM and
V->C pushes; SCALAR: scalar work, flags and synchronisation), in program order per pipe. It
starts when its pipe is free and the ops it depends on are done:

- *read after write*: an operand's bytes (an on-chip byte range, or a GM tensor this core wrote)
  were last written by an op that must have finished;
- *write after read / write*: the bytes it writes must no longer be read or written by an
  earlier op — reusing a buffer waits for its last reader;
- *cross-core*: a pop waits for the push that fills its slot, a push for the free that empties
  it, a barrier for its last arrival (the caller passes that time as ``after``).

A dependency on another pipe of the core costs the flag handshake (``pipe_sync_cycles``). An op
keeps its pipe busy for its ``occupancy`` (a GM load streams behind its latency, so the next load
may start before the previous one's data arrives) and its result is ready ``cycles`` after it
starts. The core's scalar unit issues the ops in program order and only waits where the program
does (a cross-core flag, a barrier, a scalar read from GM).

Every busy stretch, and every stretch an op waited on its pipe for another pipe or core, becomes a
:class:`~pypto.ir.backend.Slice` of the core's timeline.

>>> pipes = CorePipes(core, recorder, flag_cycles=10)  # doctest: +SKIP
>>> start, ready = pipes.run(cost, call, issue=120, reads=[Region(Mem.Mat, 0, 65536)])  # doctest: +SKIP
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from pypto.ir import Call, MemorySpace
from pypto.ir.backend import STALL
from pypto.ir.errors import at_line
from pypto_sim_a2a3.engine.timeline import Recorder, make_slice
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.hw.cost import OpCost
from pypto_sim_a2a3.hw.memory import Region

__all__ = ["GM_PIPES", "CorePipes", "Dependency", "Region"]

# The pipes whose work touches GM, drained by a fence and before a kernel counts as settled.
GM_PIPES = ("MTE2", "MTE3", "FIXPIPE")


@dataclass
class _Use:
    """What last happened to one byte range: when its last write is done (and on which pipe), and
    when its last read is (and on which pipe)."""

    region: Region
    written: int = 0
    writer: str = ""
    read: int = 0
    reader: str = ""
    # When its bytes were last claimed, (claim, place in it): the records of a space are searched
    # in that order, so that of two equally late events the one claimed first is named.
    claimed: tuple[int, int] = (0, 0)

    def cut(self, lo: int, hi: int) -> _Use:
        """The record of the part ``[lo, hi)`` of these bytes: what happened to them, as here."""
        return _Use(
            Region(self.region.space, lo, hi), self.written, self.writer, self.read, self.reader, self.claimed
        )


class _Ranges:
    """The records of one space, ordered by address (they never overlap), for bisection."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.uses: list[_Use] = []

    def span(self, region: Region) -> tuple[int, int]:
        """The indices ``[first, stop)`` of the records that share a byte with ``region``."""
        first = bisect_right(self.starts, region.lo) - 1
        if first < 0 or self.uses[first].region.hi <= region.lo:
            first += 1
        return first, max(first, bisect_left(self.starts, region.hi))


@dataclass(frozen=True)
class Dependency:
    """The time an op may start at the earliest because of one thing it waits for, and what."""

    at: int
    pipe: str | None  # the producing pipe on this core (None: another core, a barrier, a slot)
    what: str
    ready: int = 0  # when the producing op's result was ready (``at`` adds the flag handshake)


class CorePipes:
    """The pipes of one core during a launch, and what its on-chip bytes and GM tensors wait for."""

    def __init__(self, core: Core, recorder: Recorder, flag_cycles: int):
        self.core = core
        self.recorder = recorder
        self.flag_cycles = flag_cycles
        self.free: dict[str, int] = {}
        self._uses: dict[MemorySpace, _Ranges] = {}
        self._claims = 0  # regions claimed so far: each claim's records are searched after the last's
        self._gm: dict[int, _Use] = {}  # GM storage -> its last write and read by this core

    # ------------------------------------------------------------ the state of the core

    def drained(self, pipes: Iterable[str] | None = None) -> int:
        """The cycle at which ``pipes`` (every pipe by default) have finished what they were given."""
        chosen = self.free if pipes is None else {p: self.free.get(p, 0) for p in pipes}
        return max(chosen.values(), default=0)

    def ready(self, regions: Sequence[Region]) -> int:
        """When the last write to any of ``regions`` is done."""
        return max((use.written for r in regions for use in self._overlapping(r)), default=0)

    def last_read(self, regions: Sequence[Region]) -> tuple[int, str]:
        """When the last read of any of ``regions`` is done, and on which pipe."""
        uses = [use for r in regions for use in self._overlapping(r)]
        latest = max(uses, key=lambda use: use.read, default=None)
        return (latest.read, latest.reader) if latest is not None else (0, "")

    def gm_written(self, tensor: torch.Tensor) -> int:
        """When this core's last write to ``tensor`` is done."""
        use = self._gm.get(_storage(tensor))
        return use.written if use is not None else 0

    # ------------------------------------------------------------ running one op

    def run(
        self,
        cost: OpCost,
        call: Call | None,
        issue: int,
        reads: Sequence[Region] = (),
        writes: Sequence[Region] = (),
        gm_reads: Sequence[torch.Tensor] = (),
        gm_writes: Sequence[torch.Tensor] = (),
        after: Sequence[Dependency] = (),
        name: str | None = None,
    ) -> tuple[int, int]:
        """Put ``call``, costing ``cost``, on its pipe: it was issued at ``issue``; returns when it
        starts and when its result is ready. ``after`` are the waits beyond its operands (a ring
        slot, a barrier) with their times."""
        pipe = cost.unit
        free = max(issue, self.free.get(pipe, 0))
        binding = self._binding(pipe, after, reads, writes, gm_reads, gm_writes)
        start = free if binding is None or binding.at <= free else binding.at
        ready = start + cost.cycles
        self.free[pipe] = start + cost.occupancy
        self._note(pipe, ready, reads, writes, gm_reads, gm_writes)
        label = name or (call.op if call is not None else pipe)
        source = at_line(call.span) if call is not None and call.span is not None else None
        if start > free and binding is not None:
            self.recorder.record(
                make_slice(
                    self.core.name,
                    free,
                    start - free,
                    f"wait for {binding.what}",
                    STALL,
                    self.core.task,
                    source,
                    pipe=pipe,
                    flag_from=binding.pipe,
                    flag_at=binding.ready if binding.pipe else None,
                )
            )
        # The op's start waited for a flag from another pipe of the core (the trace draws it).
        flagged = (
            binding
            if binding is not None and binding.at == start and binding.pipe not in (None, pipe)
            else None
        )
        if cost.occupancy:
            self.recorder.record(
                make_slice(
                    self.core.name,
                    start,
                    cost.occupancy,
                    label,
                    pipe,
                    self.core.task,
                    source,
                    cost.peak_cycles,
                    cost.roof,
                    pipe=pipe,
                    flag_from=flagged.pipe if flagged is not None else None,
                    flag_at=flagged.ready if flagged is not None else None,
                )
            )
        return start, ready

    def copied(self, source: Region, dest: Region) -> None:
        """A carried value copied into its loop buffer: ``dest`` holds ``source``'s bytes once they
        are ready (the copy itself is not modeled)."""
        uses = self._overlapping(source)
        latest = max(uses, key=lambda use: use.written, default=None)
        for use in self._claim(dest):
            use.written = max(use.written, latest.written if latest is not None else 0)
            use.writer = latest.writer if latest is not None else use.writer

    def _binding(
        self,
        pipe: str,
        after: Sequence[Dependency],
        reads: Sequence[Region],
        writes: Sequence[Region],
        gm_reads: Sequence[torch.Tensor],
        gm_writes: Sequence[torch.Tensor],
    ) -> Dependency | None:
        """The latest of what an op on ``pipe`` waits for: ``after``, then its operands' last
        writes, its outputs' last reads and writes (the first of equally late ones); None if it
        waits for nothing. Only that one is described."""
        best: Dependency | None = None
        best_at = 0
        for dependency in after:
            if best is None or dependency.at > best_at:
                best, best_at = dependency, dependency.at
        # The latest dependency on this core's pipes: (at, ready, producer, what, region).
        found: tuple[int, int, str, str, Region | None] | None = None
        flag_cycles = self.flag_cycles

        def on(at: int, producer: str, what: str, region: Region | None) -> None:
            nonlocal found
            if at and producer:
                waited = at + (flag_cycles if producer != pipe else 0)
                if (found is None or waited > found[0]) and (best is None or waited > best_at):
                    found = (waited, at, producer, what, region)

        for region in reads:
            for use in self._overlapping(region):
                on(use.written, use.writer, "data", region)
        for region in writes:
            for use in self._overlapping(region):
                on(use.read, use.reader, "read", region)
                on(use.written, use.writer, "written", region)
        for tensor in gm_reads:
            gm = self._gm.get(_storage(tensor))
            if gm is not None:
                on(gm.written, gm.writer, "written", None)
        for tensor in gm_writes:
            gm = self._gm.get(_storage(tensor))
            if gm is not None:
                on(gm.read, gm.reader, "read", None)
                on(gm.written, gm.writer, "written", None)
        if found is None:
            return best
        waited, at, producer, what, where = found
        return Dependency(waited, producer, _describe(what, where, producer), at)

    def _note(
        self,
        pipe: str,
        ready: int,
        reads: Sequence[Region],
        writes: Sequence[Region],
        gm_reads: Sequence[torch.Tensor],
        gm_writes: Sequence[torch.Tensor],
    ) -> None:
        for region in reads:
            for use in self._claim(region):
                if ready >= use.read:
                    use.read, use.reader = ready, pipe
        for region in writes:
            for use in self._claim(region):
                use.written, use.writer = ready, pipe
        for tensor in gm_reads:
            use = self._gm.setdefault(_storage(tensor), _Use(Region(MemorySpace.DDR, 0, 0)))
            if ready >= use.read:
                use.read, use.reader = ready, pipe
        for tensor in gm_writes:
            use = self._gm.setdefault(_storage(tensor), _Use(Region(MemorySpace.DDR, 0, 0)))
            use.written, use.writer = ready, pipe

    # ------------------------------------------------------------ byte ranges

    def _overlapping(self, region: Region) -> list[_Use]:
        ranges = self._uses.get(region.space)
        if ranges is None:
            return []
        first, stop = ranges.span(region)
        found = ranges.uses[first:stop]
        if len(found) > 1:
            found.sort(key=lambda u: (u.claimed, u.region.lo))
        return found

    def _claim(self, region: Region) -> list[_Use]:
        """The records of exactly ``region``'s bytes: the records of a space never overlap, so a
        record that reaches past the region is cut at its edges first (each piece keeps what
        happened to it), and bytes nothing has touched yet get a fresh record. Two buffers that
        share no byte never wait for each other, whatever buffer held their bytes before."""
        ranges = self._uses.get(region.space)
        if ranges is None:
            ranges = self._uses[region.space] = _Ranges()
        first, stop = ranges.span(region)
        self._claims += 1
        before: list[_Use] = []
        after: list[_Use] = []
        filled: list[_Use] = []
        at = region.lo
        for u in ranges.uses[first:stop]:
            lo, hi = u.region.lo, u.region.hi
            if lo < region.lo:  # the part before the region keeps its place in the search order
                before.append(u.cut(lo, region.lo))
            if region.hi < hi:
                after.append(u.cut(region.hi, hi))
            if region.lo <= lo and hi <= region.hi:
                inside = u  # wholly inside: kept as it is
            else:
                inside = u.cut(max(lo, region.lo), min(hi, region.hi))
            if at < inside.region.lo:
                filled.append(_Use(Region(region.space, at, inside.region.lo)))
            filled.append(inside)
            at = inside.region.hi
        if at < region.hi:
            filled.append(_Use(Region(region.space, at, region.hi)))
        for place, use in enumerate(filled):  # searched after every record claimed before
            use.claimed = (self._claims, place)
        pieces = before + filled + after
        ranges.uses[first:stop] = pieces
        ranges.starts[first:stop] = [u.region.lo for u in pieces]
        return filled


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _describe(what: str, region: Region | None, producer: str) -> str:
    """What an op waits for: ``Vec data from MTE2``, ``Mat buffer read by MTE1``, ``GM written by MTE3``."""
    if region is None:
        return f"GM {what} by {producer}"
    if what == "data":
        return f"{region.space.name} data from {producer}"
    return f"{region.space.name} buffer {what} by {producer}"
