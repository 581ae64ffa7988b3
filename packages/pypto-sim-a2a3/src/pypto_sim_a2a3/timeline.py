"""What a run leaves for its report: every core's busy and stalled slices, ring occupancy, transfers.

A :class:`Recorder` watches the scheduler (every ``Advance`` the host and the task dispatcher
spend, every stretch they are blocked in a ``Wait``), is given the slices of each core's pipes
(:mod:`pypto_sim_a2a3.corepipes`), and is told by the cross-core pipes when a ring's occupancy
changes and when a tile has crossed. Everything is in modeled cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter

from pypto.ir import SourceSpan
from pypto.ir.backend import STALL, RingTrack, Slice, Transfer, busy_and_stalled
from pypto.ir.errors import at_line
from pypto.ir.records import frozen_record
from pypto_sim_a2a3.scheduler import Advance, Clocked, Event, Scheduler

_CORE, _START = attrgetter("core"), attrgetter("start")


def make_slice(
    core: str,
    start: int,
    cycles: int,
    name: str,
    unit: str,
    task: str,
    source: str | None,
    peak_cycles: float = 0.0,
    roof: str | None = None,
    pipe: str | None = None,
    flag_from: str | None = None,
    flag_at: int | None = None,
) -> Slice:
    """``Slice(core, start, ...)``, the same object, made as a :func:`~pypto.ir.records.frozen_record`:
    the cores' pipes make one or two for every op they run."""
    return frozen_record(
        Slice,
        {
            "core": core,
            "start": start,
            "cycles": cycles,
            "name": name,
            "unit": unit,
            "task": task,
            "source": source,
            "peak_cycles": peak_cycles,
            "roof": roof,
            "pipe": pipe,
            "flag_from": flag_from,
            "flag_at": flag_at,
        },
    )


def shifted(piece: Slice, names: Mapping[str, str], shift: int) -> Slice:
    """Block 0's slice as a replayed block's: on its core (``names``), ``shift`` cycles later (a
    :func:`~pypto.ir.records.frozen_record`: a replay makes thousands)."""
    fields = piece.__dict__.copy()
    fields["core"] = names[piece.core]
    fields["start"] = piece.start + shift
    if piece.flag_at is not None:
        fields["flag_at"] = piece.flag_at + shift
    return frozen_record(Slice, fields)


class Recorder:
    """The timeline of one run: ``Recorder(scheduler)`` then ``recorder.slices`` after the run."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.slices: list[Slice] = []
        self.rings: list[RingTrack] = []
        self.transfers: list[Transfer] = []
        self._ring_changes: list[tuple[RingTrack, list[tuple[int, int]]]] = []
        # Replayed slices made when the run finishes: (their place in slices, block 0's, names, shift).
        self._shifted: list[tuple[int, Sequence[Slice], Mapping[str, str], int]] = []
        scheduler.observe(self.observe)

    def now(self) -> int:
        """The modeled cycle at which the step being run happens."""
        return self.scheduler.now

    def record(self, piece: Slice) -> None:
        """A slice of a core's pipe, timed by the core's pipes rather than by the scheduler."""
        self.slices.append(piece)

    def record_shifted(self, pieces: Sequence[Slice], names: Mapping[str, str], shift: int) -> None:
        """Block 0's ``pieces`` as a replayed block's (:func:`shifted`), here in the timeline: made
        when the run finishes, all at once (a replay records tens of thousands)."""
        self._shifted.append((len(self.slices), pieces, names, shift))

    def observe(self, core: Clocked, start: int, cycles: int, event: Event) -> None:
        """A scheduler observer: one slice per busy or stalled stretch (a kernel core's events are
        silent: its pipes record its slices)."""
        if event.silent:
            return
        task = getattr(core, "task", "")
        where = _source(event.span)
        if isinstance(event, Advance):
            name = event.op or event.unit
            piece = Slice(
                core.name, start, cycles, name, event.unit, task, where, event.peak_cycles, event.roof
            )
        else:
            piece = Slice(core.name, start, cycles, f"wait for {event.what}", STALL, task, where)
        self.slices.append(piece)

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int, int], None]:
        """A new ring's track; returns the callback its ring calls with each change of the slots in
        use (+1 or -1) and the modeled cycle it happens at (not always in time order: each core's
        pipes run ahead of the scheduler)."""
        track = RingTrack(pipe, owner, slots)
        self.rings.append(track)
        changes: list[tuple[int, int]] = []
        self._ring_changes.append((track, changes))

        def change(delta: int, cycle: int) -> None:
            changes.append((cycle, delta))

        return change

    def finish(self) -> None:
        """After the run: each ring's samples (its slots in use from each change on, in time
        order; one sample per cycle, where the cycle ends up) and the slices in time order."""
        for track, changes in self._ring_changes:
            in_use = 0
            track.samples.clear()
            for cycle, delta in sorted(changes, key=lambda change: change[0]):
                in_use += delta
                if track.samples and track.samples[-1][0] == cycle:
                    track.samples.pop()
                track.samples.append((cycle, in_use))
        self._ring_changes.clear()
        if self._shifted:
            made: list[Slice] = []
            done = 0
            for place, pieces, names, shift in self._shifted:
                made += self.slices[done:place]
                made += [shifted(piece, names, shift) for piece in pieces]
                done = place
            self.slices = made + self.slices[done:]
            self._shifted.clear()
        # By (start, core), as two stable sorts on the fields themselves: a third of the time of one
        # sort on a key tuple made per slice (a run has tens of thousands).
        self.slices.sort(key=_CORE)
        self.slices.sort(key=_START)

    def busy_and_stalled(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per core, its busy and its stalled cycles (:func:`pypto.ir.backend.busy_and_stalled`)."""
        return busy_and_stalled(self.slices)

    def transfer(self, transfer: Transfer) -> None:
        """A tile share has been popped."""
        self.transfers.append(transfer)


def _source(span: SourceSpan | None) -> str | None:
    return at_line(span) if span else None
