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
import re
from collections import deque
from collections.abc import Callable
from typing import Any


class TimeOrder:
    """A queue of actions by modeled cycle (at one cycle, by core, then in the order queued).

    Each core's actions come in the order they will run (a core's events keep their program
    order, and their cycles never go back), so each core has a first-in first-out queue and only
    the cores' first actions are ordered against each other: a heap of at most one entry per core,
    however far ahead the cores queued (a replayed block queues all its GM accesses at once)."""

    def __init__(self) -> None:
        # Each waiting core's first action: (cycle, the core's rank, the queue's number, the queue).
        self._heads: list[tuple[int, tuple[Any, ...], int, _CoreQueue]] = []
        self._queues: dict[str, _CoreQueue] = {}
        self._last: dict[str, int] = {}  # per core, the cycle of its latest event

    def at(self, cycle: int, core: str, action: Callable[[], None]) -> None:
        """Run ``action`` once the clock passes ``cycle``, after ``core``'s earlier events."""
        last = self._last.get(core, 0)
        if cycle < last:
            cycle = last
        self._last[core] = cycle
        queue = self._queues.get(core)
        if queue is None:
            queue = self._queues[core] = _CoreQueue(natural_key(core), len(self._queues))
        if not queue:
            heapq.heappush(self._heads, (cycle, queue.rank, queue.number, queue))
        queue.append((cycle, action))

    def note(self, cycle: int, core: str) -> None:
        """``core`` met an event at ``cycle`` that needs no action: its later events come after it."""
        if cycle > self._last.get(core, 0):
            self._last[core] = cycle

    def until(self, now: int) -> None:
        """Run the actions of every cycle before ``now`` (a core can still meet an event at ``now``)."""
        heads = self._heads
        while heads and heads[0][0] < now:
            _, rank, number, queue = heads[0]  # (what _next does: the scheduler calls this per step)
            action = queue.popleft()[1]
            if queue:
                heapq.heapreplace(heads, (queue[0][0], rank, number, queue))
            else:
                heapq.heappop(heads)
            action()

    def drain(self) -> None:
        """Run every action left (the simulation has ended)."""
        while self._heads:
            self._next()()

    def _next(self) -> Callable[[], None]:
        """The first action of the core that comes first, taken off its queue."""
        heads = self._heads
        _, rank, number, queue = heads[0]
        action = queue.popleft()[1]
        if queue:
            heapq.heapreplace(heads, (queue[0][0], rank, number, queue))
        else:
            heapq.heappop(heads)
        return action


class _CoreQueue(deque[tuple[int, Callable[[], None]]]):
    """One core's queued actions with their cycles, in order; ``rank`` orders the core's name and
    ``number`` (the queues made before it) two names of one rank (``cg2`` and ``cg02``)."""

    def __init__(self, rank: tuple[Any, ...], number: int) -> None:
        super().__init__()
        self.rank = rank
        self.number = number


def natural_key(name: str) -> tuple[Any, ...]:
    """``name`` split into its text and its numbers, for sorting ``cg2`` before ``cg10``."""
    return tuple(int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", name)))
