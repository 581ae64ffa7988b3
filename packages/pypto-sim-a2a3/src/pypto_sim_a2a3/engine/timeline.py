"""What a run leaves for its report: every core's busy and stalled slices, ring occupancy, transfers.

A :class:`Recorder` watches the scheduler (every ``Advance`` the host and the task dispatcher
spend, every stretch they are blocked in a ``Wait``), is given the slices of each core's pipes
(:mod:`pypto_sim_a2a3.hw.corepipes`), and is told by the cross-core pipes when a ring's occupancy
changes and when a tile has crossed. Everything is in modeled cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter

from pypto.ir import SourceSpan
from pypto.ir.backend import STALL, RingTrack, Slice, Spans, Transfer, busy_and_stalled_of, core_spans
from pypto.ir.errors import at_line
from pypto.ir.records import frozen_record
from pypto_sim_a2a3.engine.scheduler import Advance, Clocked, Event, Scheduler

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
    """The timeline of one run: ``Recorder(scheduler)``, then after the run ``recorder.finish()``,
    ``recorder.busy_and_stalled()`` and ``recorder.timeline()`` (which hands the slices over)."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.slices: list[Slice] = []
        self.rings: list[RingTrack] = []
        self.transfers: list[Transfer] = []
        self._ring_changes: list[tuple[RingTrack, list[tuple[int, int]]]] = []
        # Replayed slices, made when the timeline is: (their place in slices, block 0's, names, shift).
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
        with the timeline, all at once, if it is read (a replay records tens of thousands)."""
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
        slices, replayed = self.slices, self._shifted
        self.slices, self._shifted = [], []

        def make() -> list[Slice]:
            made: list[Slice] = []
            done = 0
            for place, pieces, names, shift in replayed:
                made += slices[done:place]
                made += [shifted(piece, names, shift) for piece in pieces]
                done = place
            made += slices[done:]
            # By (start, core), as two stable sorts on the fields themselves: a third of the time
            # of one sort on a key tuple made per slice (a run has tens of thousands).
            made.sort(key=_CORE)
            made.sort(key=_START)
            return made

        return make

    def busy_and_stalled(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per core, its busy and its stalled cycles (:func:`pypto.ir.backend.busy_and_stalled` of
        the timeline :meth:`timeline` makes), without making the replayed blocks' slices. A core
        whose slices are all one replayed block's has the figures of block 0's core: the same
        slices, shifted (found once for all such cores); another core's are found from its spans."""
        busy, waits = core_spans(self.slices)
        # Per core of a replayed block: (its pieces, block 0's core, the shift) of each step.
        replayed: dict[str, list[tuple[int, str, int]]] = {}
        spans_of: dict[int, dict[str, tuple[Spans, Spans]]] = {}  # id(pieces) -> block 0's spans per core
        for _, pieces, names, shift in self._shifted:
            key = id(pieces)
            by_core = spans_of.get(key)
            if by_core is None:
                mine, theirs = core_spans(pieces)
                by_core = spans_of[key] = {c: (mine.get(c, []), theirs.get(c, [])) for c in {*mine, *theirs}}
            for core in by_core:
                replayed.setdefault(names[core], []).append((key, core, shift))
        figures = {
            core: _figures([], busy.get(core, []), waits.get(core, []))
            for core in {*busy, *waits}
            if core not in replayed
        }
        alike: dict[tuple[tuple[int, str], ...], _Figures] = {}
        for target, parts in replayed.items():
            shift = parts[0][2]
            if target in busy or target in waits or any(at != shift for _, _, at in parts):
                shifted_parts = [(*spans_of[key][core], at) for key, core, at in parts]
                figures[target] = _figures(shifted_parts, busy.get(target, []), waits.get(target, []))
                continue
            # Block 0's spans, unshifted: the figures do not move with the shift.
            signature = tuple((key, core) for key, core, _ in parts)
            found = alike.get(signature)
            if found is None:
                found = alike[signature] = _figures(
                    [(*spans_of[key][core], 0) for key, core in signature], [], []
                )
            figures[target] = found
        busy_of = {core: f[0] for core, f in figures.items() if f[2]}
        return busy_of, {core: f[1] for core, f in figures.items() if f[3]}

    def transfer(self, transfer: Transfer) -> None:
        """A tile share has been popped."""
        self.transfers.append(transfer)


# One core's (busy cycles, stalled cycles, whether it has a busy span, whether it has a wait).
_Figures = tuple[int, int, bool, bool]


def _figures(parts: list[tuple[Spans, Spans, int]], busy: Spans, waits: Spans) -> _Figures:
    """One core's figures from its own ``busy`` and ``waits`` spans and each part's (block 0's
    spans of a step), shifted by the part's shift."""
    busy, waits = list(busy), list(waits)
    for part_busy, part_waits, at in parts:
        busy += [(start + at, end + at) for start, end in part_busy] if at else part_busy
        waits += [(start + at, end + at) for start, end in part_waits] if at else part_waits
    return (*busy_and_stalled_of(busy, waits), bool(busy), bool(waits))


def _source(span: SourceSpan | None) -> str | None:
    return at_line(span) if span else None
