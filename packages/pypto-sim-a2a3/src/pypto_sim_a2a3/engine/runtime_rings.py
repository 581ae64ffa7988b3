"""The runtime's four rings on the simulated chip: what a submitted task holds until it is reclaimed.

The orchestration runs in *scopes*: its function body at depth 0, and one scope more deeply
nested for each iteration of a loop, each arm of an ``if`` and each control function it calls
(the scopes the compiler places by default). A task uses ring ``min(depth, 3)`` of its scope, and
holds there, from its submission on:

- one slot of the ring's **task window**;
- in its **heap**, the bytes of each tensor the orchestration created that the task is the first
  to write (the runtime allocates a task's outputs);
- in its **dep pool**, one entry per dependency edge the task takes.

A ring reclaims in submission order (first in, first out): a task's hold is released once the task
has retired *and* its scope has ended, and the ring's head moves past released holds only. A task
that finds its ring full waits (the host stalls, in modeled time) until the head has moved far
enough; when the holds in the way belong to a scope that is still open, so that only submitting
more could end it, no wait can end, and the submission is a :class:`RingCapacityError`.

``RunConfig(ring_task_window=..., ring_heap=..., ring_dep_pool=...)`` sizes the rings; a ring the
config leaves at 0 gets the default below.

>>> rings = RuntimeRings.from_options({"ring_task_window": (64, 0, 0, 0)})
>>> rings.rings[0].capacity, rings.rings[1].capacity[0]
((64, 1073741824, 65536), 16384)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import SourceSpan
from pypto.ir.backend import RuntimeRing
from pypto.ir.errors import at_line
from pypto_sim_a2a3.engine.taskgraph import Task
from pypto_sim_a2a3.errors import RingCapacityError

RING_COUNT = 4
# Each ring's size when the config leaves it at 0: slots, bytes, dependency-edge entries.
DEFAULT_TASK_WINDOW = 16384
DEFAULT_HEAP = 1 << 30
DEFAULT_DEP_POOL = 65536
_FIELDS = ("ring_task_window", "ring_heap", "ring_dep_pool")
_DEFAULTS = (DEFAULT_TASK_WINDOW, DEFAULT_HEAP, DEFAULT_DEP_POOL)
_WHAT = ("task window", "heap", "dep pool")
_UNITS = ("task slots", "bytes", "dependency-edge entries")
_ENV = ("PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL")


@dataclass(eq=False)
class Scope:
    """One scope of the running orchestration: its depth, where it is (a function, a loop's
    iteration, an arm), and whether it has ended."""

    depth: int
    span: SourceSpan | None
    what: str
    open: bool = True

    @property
    def ring(self) -> int:
        return min(self.depth, RING_COUNT - 1)

    @property
    def label(self) -> str:
        where = f" at {at_line(self.span)}" if self.span is not None else ""
        return f"{self.what}{where}"


@dataclass(eq=False)
class Hold:
    """What one task holds of its ring: one slot, ``heap`` bytes, ``deps`` dep-pool entries."""

    task: Task
    scope: Scope
    heap: int
    deps: int

    @property
    def amounts(self) -> tuple[int, int, int]:
        return (1, self.heap, self.deps)

    @property
    def released(self) -> bool:
        return self.task.retired and not self.scope.open


@dataclass(eq=False)
class Ring:
    """One ring: its three capacities, the holds in submission order, what they add up to, and
    the most each resource held at once."""

    index: int
    capacity: tuple[int, int, int]
    held: deque[Hold] = field(default_factory=deque)
    used: list[int] = field(default_factory=lambda: [0, 0, 0])
    peak: list[int] = field(default_factory=lambda: [0, 0, 0])

    def reclaim(self) -> None:
        """Move the head past the released holds at the front."""
        while self.held and self.held[0].released:
            gone = self.held.popleft()
            self.used = [u - a for u, a in zip(self.used, gone.amounts, strict=True)]

    def fits(self, hold: Hold) -> bool:
        self.reclaim()
        return all(u + a <= c for u, a, c in zip(self.used, hold.amounts, self.capacity, strict=True))

    def take(self, hold: Hold) -> None:
        self.held.append(hold)
        self.used = [u + a for u, a in zip(self.used, hold.amounts, strict=True)]
        self.peak = [max(p, u) for p, u in zip(self.peak, self.used, strict=True)]

    def check_reachable(self, hold: Hold) -> None:
        """A :class:`RingCapacityError` when ``hold`` cannot fit however long the host waits: it is
        bigger than the ring, or the holds before the first one of a still-open scope (all that
        can ever be released while the host waits here) free too little."""
        freeable = [0, 0, 0]
        blocker: Hold | None = None
        for held in self.held:
            if held.scope.open:
                blocker = held
                break
            freeable = [f + a for f, a in zip(freeable, held.amounts, strict=True)]
        for kind, (used, free, want, size) in enumerate(
            zip(self.used, freeable, hold.amounts, self.capacity, strict=True)
        ):
            if used - free + want > size:
                raise self._full(kind, hold, blocker)

    def _full(self, kind: int, hold: Hold, blocker: Hold | None) -> RingCapacityError:
        size, field_name = self.capacity[kind], _FIELDS[kind]
        want = hold.amounts[kind]
        what = f"ring {self.index}'s {_WHAT[kind]} ({size} {_UNITS[kind]})"
        if want > size:
            reason = f"{hold.task.label} needs {want} {_UNITS[kind]} of {what}: more than all of it"
        else:
            assert blocker is not None
            reason = (
                f"{what} is full when {hold.task.label} is submitted, held by tasks of "
                f"{blocker.scope.label}, which has not ended: a scope's tasks are reclaimed only once "
                "it ends and they retire"
            )
        example = [0] * RING_COUNT
        example[self.index] = _bigger(size, kind)
        return RingCapacityError(
            reason,
            hold.task.call.span,
            f"raise RunConfig({field_name}=...) for ring {self.index}, e.g. {field_name}={example} "
            f"(0 leaves a ring at its default; {_ENV[kind]} sets it for every run), or split the "
            "scope so that fewer of its tasks are live at once",
        )

    def use(self) -> RuntimeRing:
        return RuntimeRing(self.index, *self.capacity, *self.peak)


def _bigger(size: int, kind: int) -> int:
    """A size the hint may suggest: the next power of two above ``size`` (twice it for the pool)."""
    return size * 2 if kind < 2 else min(size * 2, 2**31 - 1)


class RuntimeRings:
    """The four rings of one run, and the scopes of the orchestration."""

    def __init__(self, capacities: list[tuple[int, int, int]]) -> None:
        self.rings = [Ring(index, capacity) for index, capacity in enumerate(capacities)]
        self.scopes: list[Scope] = []

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RuntimeRings:
        """The rings ``options`` size (``ring_task_window`` etc.: four sizes each, 0 the default)."""
        sizes = [_sizes(options.get(name), default) for name, default in zip(_FIELDS, _DEFAULTS, strict=True)]
        return cls([(sizes[0][r], sizes[1][r], sizes[2][r]) for r in range(RING_COUNT)])

    def open_scope(self, span: SourceSpan | None, what: str) -> Scope:
        scope = Scope(len(self.scopes), span, what)
        self.scopes.append(scope)
        return scope

    def close_scope(self, scope: Scope) -> None:
        assert self.scopes and self.scopes[-1] is scope
        self.scopes.pop()
        scope.open = False

    def hold(self, task: Task, heap: int) -> tuple[Ring, Hold]:
        """The hold ``task`` (submitted in the innermost open scope) asks of its ring."""
        scope = self.scopes[-1]
        return self.rings[scope.ring], Hold(task, scope, heap, len(task.deps))

    def report(self) -> list[RuntimeRing]:
        return [ring.use() for ring in self.rings]


def _sizes(given: Any, default: int) -> tuple[int, ...]:
    """Four per-ring sizes from an option (None, an int, or four ints, 0 meaning the default)."""
    if given is None:
        return (default,) * RING_COUNT
    if isinstance(given, int):
        given = (given,) * RING_COUNT
    return tuple(int(size) or default for size in given)


__all__ = ["DEFAULT_DEP_POOL", "DEFAULT_HEAP", "DEFAULT_TASK_WINDOW", "Hold", "Ring", "RuntimeRings", "Scope"]
