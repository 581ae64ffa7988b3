"""What a run leaves for its report: every core's busy and stalled slices, ring occupancy, transfers.

A :class:`Recorder` watches the scheduler (every ``Advance`` the host and the task dispatcher
spend, every stretch they are blocked in a ``Wait``), is given the slices of each core's pipes
(:mod:`pypto_sim_a2a3.hw.corepipes`), and is told by the cross-core pipes when a ring's occupancy
changes and when a tile has crossed. Everything is in modeled cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from pypto.ir import SourceSpan
from pypto.ir.backend import (
    STALL,
    RingTrack,
    Slice,
    Spans,
    Transfer,
    busy_and_stalled_of,
    core_spans,
    stretches,
)
from pypto.ir.errors import at_line
from pypto.ir.records import frozen_record
from pypto_sim_a2a3.engine.scheduler import Advance, Clocked, Event, Scheduler

_CORE, _START = attrgetter("core"), attrgetter("start")
_FIRST = itemgetter(0)


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
    """The timeline of one run: ``Recorder(scheduler)``, then after the run ``recorder.finish()``,
    ``recorder.busy_and_stalled()`` and ``recorder.timeline()`` (which hands the slices over)."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.slices: list[Slice] = []
        self.rings: list[RingTrack] = []
        self.transfers: list[Transfer] = []
        self._ring_changes: list[tuple[RingTrack, list[tuple[int, int]]]] = []
        # Replayed blocks' slices, made when the timeline is, in the places they were recorded.
        self._replayed: list[_Replayed] = []
        # The stretches of replayed slices still taking more: by (id of their names, shift), and by
        # each core of their block (a slice recorded on one ends its stretch).
        self._replaying: dict[tuple[int, int], _Replayed] = {}
        self._open: dict[str, _Replayed] = {}
        scheduler.observe(self.observe)

    def now(self) -> int:
        """The modeled cycle at which the step being run happens."""
        return self.scheduler.now

    def record(self, piece: Slice) -> None:
        """A slice of a core's pipe, timed by the core's pipes rather than by the scheduler."""
        self.slices.append(piece)
        if self._open:
            self._end_stretch_on(piece.core)

    def record_shifted(self, pieces: Sequence[Slice], names: Mapping[str, str], shift: int) -> None:
        """Block 0's ``pieces`` as a replayed block's (:func:`shifted`), here in the timeline: made
        with the timeline, all at once, if it is read (a replay records tens of thousands).

        A block's steps recorded one after another, with no other slice on its cores between them,
        are kept as one stretch: in the timeline (sorted by start, then core; ties of one core in
        the order met) they take the places they would one by one."""
        stretch = self._replaying.get((id(names), shift))
        if stretch is None:
            stretch = self._stretch(names, shift)
        stretch.pieces.append(pieces)

    def _stretch(self, names: Mapping[str, str], shift: int) -> _Replayed:
        """A new stretch of a replayed block's slices, from here; it ends any other on its cores."""
        stretch = _Replayed(len(self.slices), [], names, shift)
        self._replayed.append(stretch)
        self._replaying[(id(names), shift)] = stretch  # (it holds names: the id stays its own)
        for core in names.values():
            self._end_stretch_on(core)
            self._open[core] = stretch
        return stretch

    def _end_stretch_on(self, core: str) -> None:
        """A slice lands on ``core``: the replayed stretch on it (if any) takes no more."""
        stretch = self._open.get(core)
        if stretch is None:
            return
        del self._replaying[(id(stretch.names), stretch.shift)]
        for name in stretch.names.values():
            if self._open.get(name) is stretch:
                del self._open[name]

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
        self.record(piece)

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
        order; one sample per cycle, where the cycle ends up). The slices are put in time order by
        :meth:`timeline`."""
        for track, changes in self._ring_changes:
            in_use = 0
            track.samples.clear()
            for cycle, delta in sorted(changes, key=lambda change: change[0]):
                in_use += delta
                if track.samples and track.samples[-1][0] == cycle:
                    track.samples.pop()
                track.samples.append((cycle, in_use))
        self._ring_changes.clear()

    def timeline(self) -> Callable[[], list[Slice]]:
        """What makes the run's slices in time order (by start, then core; ties in the order met),
        the replayed blocks' made from block 0's in the places they were recorded: for
        :meth:`pypto.ir.RunReport.make_timeline_when_read`, so that a run whose timeline no one
        reads never makes them. The recorder hands its records over and starts empty."""
        slices, replayed = self.slices, self._replayed
        self.slices, self._replayed = [], []
        self._replaying.clear()
        self._open.clear()

        def make() -> list[Slice]:
            made: list[Slice] = []
            done = 0
            for stretch in replayed:
                made += slices[done : stretch.place]
                names, shift = stretch.names, stretch.shift
                made += [shifted(piece, names, shift) for pieces in stretch.pieces for piece in pieces]
                done = stretch.place
            made += slices[done:]
            # By (start, core), as two stable sorts on the fields themselves: a third of the time
            # of one sort on a key tuple made per slice (a run has tens of thousands).
            made.sort(key=_CORE)
            made.sort(key=_START)
            return made

        return make

    def busy_and_stalled(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per core, its busy and its stalled cycles (:func:`pypto.ir.backend.busy_and_stalled` of
        the timeline :meth:`timeline` makes), without making the replayed blocks' slices.

        A core's time falls into parts: the connected stretches of its own slices, and each
        replayed block's on it, whose figures are block 0's core's (found once per replayed
        recording: they do not move with the shift). Where no two parts overlap, the core's
        figures are their sums; else they are found from all its spans."""
        busy, waits = core_spans(self.slices)
        parts: dict[str, list[_Part]] = {}
        for core in {*busy, *waits}:
            mine = parts[core] = []
            for start, end, cycles in stretches(busy.get(core, []), waits.get(core, [])):
                mine.append((start, end, cycles, end - start, None, 0))
        found: dict[tuple[int, ...], dict[str, _CoreSpans]] = {}
        for stretch in self._replayed:
            key = tuple(sorted(map(id, stretch.pieces)))  # (the same slices, in any order: the same figures)
            of_block0 = found.get(key)
            if of_block0 is None:
                of_block0 = found[key] = _core_spans_of(stretch.pieces)
            shift = stretch.shift
            for core, spans in of_block0.items():
                part = (spans.first + shift, spans.last + shift, spans.busy, spans.covered, spans, shift)
                parts.setdefault(stretch.names[core], []).append(part)
        busy_of: dict[str, int] = {}
        stalled_of: dict[str, int] = {}
        for core, its_parts in parts.items():
            cycles, stalled = _figures(its_parts, busy.get(core, []), waits.get(core, []))
            if core in busy or any(spans is not None and spans.busy_spans for *_, spans, _ in its_parts):
                busy_of[core] = cycles
            if core in waits or any(spans is not None and spans.wait_spans for *_, spans, _ in its_parts):
                stalled_of[core] = stalled
        return busy_of, stalled_of

    def transfer(self, transfer: Transfer) -> None:
        """A tile share has been popped."""
        self.transfers.append(transfer)


@dataclass(eq=False)
class _Replayed:
    """Replayed slices recorded one after another: block 0's ``pieces`` (a tuple per step) on the
    cores ``names`` gives, ``shift`` cycles later, from ``place`` in the recorder's slices."""

    place: int
    pieces: list[Sequence[Slice]]
    names: Mapping[str, str]
    shift: int


@dataclass(frozen=True)
class _CoreSpans:
    """One core's spans among a replayed block's slices (as block 0 had them): its busy and wait
    spans, its busy cycles, the cycles it is busy or waits, and the first and last cycle of both."""

    busy_spans: Spans
    wait_spans: Spans
    busy: int
    covered: int
    first: int
    last: int


def _core_spans_of(pieces: Sequence[Sequence[Slice]]) -> dict[str, _CoreSpans]:
    busy, waits = core_spans(piece for step in pieces for piece in step)
    found = {}
    for core in {*busy, *waits}:
        mine, theirs = busy.get(core, []), waits.get(core, [])
        cycles, stalled = busy_and_stalled_of(mine, theirs)
        first = min(start for start, _ in (*mine, *theirs))
        last = max(end for _, end in (*mine, *theirs))
        found[core] = _CoreSpans(mine, theirs, cycles, cycles + stalled, first, last)
    return found


# A part of a core's time: (first cycle, end, busy cycles, busy or waiting cycles, and, for a
# replayed block's, block 0's spans and the shift; None and 0 for the core's own stretch).
_Part = tuple[int, int, int, int, "_CoreSpans | None", int]


def _figures(parts: list[_Part], busy: Spans, waits: Spans) -> tuple[int, int]:
    """One core's (busy, stalled) cycles from its parts (its own ``busy`` and ``waits`` spans in
    stretches, and replayed blocks'): the sums of the parts' if none overlaps another, else from
    every span."""
    parts.sort(key=_FIRST)
    reach = None
    for first, last, *_ in parts:
        if reach is not None and first < reach:
            break
        reach = last
    else:
        cycles = sum(part[2] for part in parts)
        return cycles, sum(part[3] for part in parts) - cycles
    busy, waits = list(busy), list(waits)
    for *_, spans, at in parts:
        if spans is not None:
            busy += [(start + at, end + at) for start, end in spans.busy_spans]
            waits += [(start + at, end + at) for start, end in spans.wait_spans]
    return busy_and_stalled_of(busy, waits)


def _source(span: SourceSpan | None) -> str | None:
    return at_line(span) if span else None
