"""Explicit cross-core events of one launch: ``system.sync_set`` / ``system.sync_wait``.

A core group's AIC and AIV lanes signal each other through event ids 0..13 (the FFTS flags of a
core group, ``ffts_mode=2``). The AIC's ``sync_set(e)`` raises event ``e`` on every AIV lane of its
group; an AIV lane's ``sync_wait(e)`` takes one of those (its k-th wait takes the AIC's k-th set).
An AIV lane's ``sync_set(e)`` raises ``e`` toward the AIC, whose ``sync_wait(e)`` takes one set from
each lane of the group. A set fires once the setter's work on the named pipe (``pipe=``) has
drained; the waiter goes on at that cycle at the earliest.

A flag counts at most :data:`MAX_PENDING` sets nobody has waited for yet; one more is an
``EventError`` (hardware loses it). Sets still pending when the launch ends are an ``EventError``
too: they would satisfy the next kernel's wait of the same id. A wait no set will ever satisfy
is a deadlock, reported by the scheduler with what the wait needs.

The k-th set and the wait that takes it are one ordering point of the GM access record
(:mod:`pypto_sim_a2a3.checks.coherence`): the setter's GM accesses before it come before the waiter's
after it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass

from pypto.ir import Call
from pypto.ir.errors import at_line
from pypto_sim_a2a3.engine.scheduler import Blocked, Event, Signal, Wait
from pypto_sim_a2a3.errors import EventError
from pypto_sim_a2a3.target import CoreKind

MAX_PENDING = 15  # the sets one event flag counts before the hardware drops one
EVENT_HINT = "pair each pl.system.sync_set with one pl.system.sync_wait of the same id on the peer core type"


@dataclass(frozen=True)
class Flag:
    """One event flag: event ``event`` toward ``to`` (``AIC`` or an AIV lane), raised by ``by``."""

    event: int
    by: str
    to: str

    def key(self, k: int) -> tuple[str, int]:
        """The ordering point of the flag's ``k``-th set in the GM access record."""
        return (f"event {self.event} {self.by}->{self.to}", k)


class Events:
    """The event flags of one core group in a launch: ``cores`` maps each core's name in the
    group (``AIC``, ``AIV0``) to its kind."""

    def __init__(self, cores: dict[str, CoreKind]):
        self.aic = [name for name, kind in cores.items() if kind is CoreKind.AIC]
        self.aiv = [name for name, kind in cores.items() if kind is CoreKind.AIV]
        self.sets: Counter[Flag] = Counter()
        self.taken: Counter[Flag] = Counter()
        self.fired: dict[tuple[Flag, int], int] = {}  # (flag, k) -> the cycle of its k-th set
        self.first_set: dict[Flag, Call] = {}
        self.changed = Signal()

    def _peers(self, core: str) -> list[str]:
        return self.aiv if core in self.aic else self.aic

    def set(self, core: str, call: Call, event: int, at: int) -> list[tuple[str, int]]:
        """``core`` sets ``event`` at cycle ``at``; returns the ordering points it gives."""
        keys = []
        for peer in self._peers(core):
            flag = Flag(event, core, peer)
            k = self.sets[flag]
            if k - self.taken[flag] >= MAX_PENDING:
                raise EventError(
                    f"pl.system.sync_set({event}) on {core} at {at_line(call.span)}: {peer} has not waited "
                    f"for the last {MAX_PENDING} sets of event {event}, and the flag counts no more",
                    call.span,
                    "wait for the event on the peer before setting it again (a flag counts at most "
                    f"{MAX_PENDING} sets)",
                )
            self.sets[flag] += 1
            self.fired[(flag, k)] = at
            self.first_set.setdefault(flag, call)
            keys.append(flag.key(k))
        self.changed.changed()
        return keys

    def _flags(self, core: str, event: int) -> list[Flag]:
        return [Flag(event, peer, core) for peer in self._peers(core)]

    def wait(
        self, core: str, call: Call, event: int
    ) -> Generator[Event, None, tuple[int, list[tuple[str, int]]]]:
        """``core`` waits for ``event``: one set from each peer. Returns the cycle the last of them
        fired and the ordering points it takes."""
        flags = self._flags(core, event)

        def ready() -> bool:
            return all(self.sets[f] > self.taken[f] for f in flags)

        if not ready():
            yield Wait(
                ready,
                f"event {event}",
                call.span,
                lambda: self._blocked(core, call, event, flags),
                silent=True,
                on=(self.changed,),
            )
        fired, keys = 0, []
        for flag in flags:
            k = self.taken[flag]
            self.taken[flag] += 1
            fired = max(fired, self.fired[(flag, k)])
            keys.append(flag.key(k))
        return fired, keys

    def _blocked(self, core: str, call: Call, event: int, flags: list[Flag]) -> Blocked:
        if not flags:
            return Blocked(
                f"pl.system.sync_wait({event}) on {core} blocks at {at_line(call.span)}: no "
                f"{'AIV lane' if core in self.aic else 'AIC'} in this launch can set it",
                call.span,
                "wait for an event only in a kernel whose peer core type runs too (a mixed kernel or a "
                "Group of AIC and AIV functions)",
            )
        missing = [f.by for f in flags if self.sets[f] <= self.taken[f]]
        return Blocked(
            f"pl.system.sync_wait({event}) on {core} blocks at {at_line(call.span)}: its wait number "
            f"{self.taken[flags[0]] + 1} needs a sync_set({event}) from {', '.join(missing)}, which set it "
            f"{min(self.sets[f] for f in flags if f.by in missing)} time(s)",
            call.span,
            EVENT_HINT,
        )

    def undrained(self, launch: str) -> EventError | None:
        """After the launch: an EventError if a set was never waited for."""
        for flag, count in self.sets.items():
            left = count - self.taken[flag]
            if left:
                call = self.first_set[flag]
                return EventError(
                    f"{launch}: {flag.by} set event {flag.event} {count} time(s) "
                    f"(first at {at_line(call.span)}), "
                    f"but {flag.to} waited for it only {self.taken[flag]} time(s): the {left} left over "
                    "would release the next kernel's wait",
                    call.span,
                    EVENT_HINT,
                )
        return None
