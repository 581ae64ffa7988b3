"""Events handled in the modeled order they happen in, not in the order the simulation meets them.

Each core's scalar unit issues ops ahead of its pipes: a core may meet a store whose transfer starts
at cycle 9000 while another core, later in the simulation, meets a load that starts at cycle 400.
The record of global-memory accesses and of the ordering events between them (fences, cache
invalidations, barrier arrivals) must see them as they happen on the chip, so each is queued with
its modeled cycle and handled once the simulation's clock has passed it: then no core can still
meet an event that comes earlier. A core's own events keep their program order (a later one never
counts as earlier than the one before it).

>>> order = TimeOrder()
>>> order.at(9000, "cg0.AIC", lambda: print("store"))
>>> order.at(400, "cg0.AIV0", lambda: print("load"))
>>> order.until(10_000)
load
store
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class TimeOrder:
    """A queue of actions by modeled cycle (and, at one cycle, by the order they were queued)."""

    def __init__(self) -> None:
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._last: dict[str, int] = {}  # per core, the cycle of its latest event

    def at(self, cycle: int, core: str, action: Callable[[], None]) -> None:
        """Run ``action`` once the clock passes ``cycle``, after ``core``'s earlier events."""
        cycle = max(cycle, self._last.get(core, 0))
        self._last[core] = cycle
        heapq.heappush(self._queue, (cycle, next(self._order), action))

    def note(self, cycle: int, core: str) -> None:
        """``core`` met an event at ``cycle`` that needs no action: its later events come after it."""
        if cycle > self._last.get(core, 0):
            self._last[core] = cycle

    def until(self, now: int) -> None:
        """Run the actions of every cycle before ``now`` (a core can still meet an event at ``now``)."""
        while self._queue and self._queue[0][0] < now:
            heapq.heappop(self._queue)[2]()

    def drain(self) -> None:
        """Run every action left (the simulation has ended)."""
        while self._queue:
            heapq.heappop(self._queue)[2]()
