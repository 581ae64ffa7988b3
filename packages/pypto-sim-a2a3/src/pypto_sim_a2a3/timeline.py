"""What a run leaves for its report: every core's busy and stalled slices, ring occupancy, transfers.

A :class:`Recorder` watches the scheduler (every ``Advance`` a core spends, every stretch it is
blocked in a ``Wait``) and is told by the pipes when a ring's occupancy changes and when a tile has
crossed. Everything is in modeled cycles, stamped with the scheduler's clock.
"""

from __future__ import annotations

from collections.abc import Callable

from pypto.ir import SourceSpan
from pypto.ir.backend import STALL, RingTrack, Slice, Transfer
from pypto.ir.errors import at_line
from pypto_sim_a2a3.scheduler import Advance, Clocked, Event, Scheduler


class Recorder:
    """The timeline of one run: ``Recorder(scheduler)`` then ``recorder.slices`` after the run."""

    def __init__(self, scheduler: Scheduler):
        self.scheduler = scheduler
        self.slices: list[Slice] = []
        self.rings: list[RingTrack] = []
        self.transfers: list[Transfer] = []
        scheduler.observe(self.observe)

    def now(self) -> int:
        """The modeled cycle at which the step being run happens."""
        return self.scheduler.now

    def observe(self, core: Clocked, start: int, cycles: int, event: Event) -> None:
        """A scheduler observer: one slice per busy or stalled stretch."""
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

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int], None]:
        """A new ring's track; returns the callback its ring calls with the slots in use."""
        track = RingTrack(pipe, owner, slots)
        self.rings.append(track)

        def sample(in_use: int) -> None:
            cycle = self.now()
            if track.samples and track.samples[-1][0] == cycle:
                track.samples.pop()  # several changes in one step: keep where it ends up
            track.samples.append((cycle, in_use))

        return sample

    def transfer(self, transfer: Transfer) -> None:
        """A tile share has been popped."""
        self.transfers.append(transfer)


def _source(span: SourceSpan | None) -> str | None:
    return at_line(span) if span else None
