"""Events handled in the modeled order they happen in, not in the order the simulation meets them.

Each core's scalar unit issues ops ahead of its pipes: a core may meet a store whose transfer starts
at cycle 9000 while another core, later in the simulation, meets a load that starts at cycle 400.
The record of global-memory accesses and of the ordering events between them (fences, cache
invalidations, barrier arrivals) must see them as they happen on the chip, so each is queued with
its modeled cycle and handled once the simulation's clock has passed it: then no core can still
meet an event that comes earlier. A core's own events keep their program order (a later one never
counts as earlier than the one before it). Events of several cores at one cycle are handled core
by core, in the natural order of their names (``cg2.AIC`` before ``cg10.AIC``), not in the order
the simulation met them: so the order does not depend on which core the simulation stepped first.

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
import re
from collections.abc import Callable
from typing import Any


class TimeOrder:
    """A queue of actions by modeled cycle (at one cycle, by core, then in the order queued)."""

    def __init__(self) -> None:
        self._queue: list[tuple[int, tuple[Any, ...], int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._last: dict[str, int] = {}  # per core, the cycle of its latest event
        self._ranks: dict[str, tuple[Any, ...]] = {}  # per core, its name's natural sort key

    def at(self, cycle: int, core: str, action: Callable[[], None]) -> None:
        """Run ``action`` once the clock passes ``cycle``, after ``core``'s earlier events."""
        cycle = max(cycle, self._last.get(core, 0))
        self._last[core] = cycle
        rank = self._ranks.get(core)
        if rank is None:
            rank = self._ranks[core] = natural_key(core)
        heapq.heappush(self._queue, (cycle, rank, next(self._order), action))

    def note(self, cycle: int, core: str) -> None:
        """``core`` met an event at ``cycle`` that needs no action: its later events come after it."""
        if cycle > self._last.get(core, 0):
            self._last[core] = cycle

    def until(self, now: int) -> None:
        """Run the actions of every cycle before ``now`` (a core can still meet an event at ``now``)."""
        while self._queue and self._queue[0][0] < now:
            heapq.heappop(self._queue)[3]()

    def drain(self) -> None:
        """Run every action left (the simulation has ended)."""
        while self._queue:
            heapq.heappop(self._queue)[3]()


def natural_key(name: str) -> tuple[Any, ...]:
    """``name`` split into its text and its numbers, for sorting ``cg2`` before ``cg10``."""
    return tuple(int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", name)))
