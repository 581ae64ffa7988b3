"""The ``system.syncall`` barrier of one launch: every core of every block of the task.

The ``core_type`` attr picks the cores a barrier counts: ``"aic"`` (or ``"aic_only"``) the AIC,
``"aiv"`` (or ``"aiv_only"``) the AIV lanes, ``"mix"`` or absent every core of the launch. The
blocks of a ``pl.spmd`` launch share one barrier, so a soft ``syncall(used_cores=n)`` counts
arrivals from all of them. Each core's k-th syncall over one such set
joins round k of that set's barrier. ``mode="hard"`` releases a round when every counted core has
arrived; ``mode="soft"`` when ``used_cores`` have (partial occupancy), and needs a zeroed INT32
GM workspace (checked at every arrival; the simulator does not write it). A core arriving at a
round that has already released passes straight through. Every core joining a round must ask
for the same barrier: a mode, ``used_cores`` or workspace that differs from the first arrival's
is a ``BarrierError`` naming both lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import Call, SourceSpan, Var
from pypto.ir.errors import at_line
from pypto_sim_a2a3.checks.footprints import TensorKey, tensor_key
from pypto_sim_a2a3.engine.scheduler import Blocked, Event, Signal, Wait
from pypto_sim_a2a3.errors import BarrierError
from pypto_sim_a2a3.target import CoreKind

CORE_TYPES: dict[str | None, tuple[CoreKind, ...]] = {
    "aic": (CoreKind.AIC,),
    "aiv": (CoreKind.AIV,),
    "aic_only": (CoreKind.AIC,),
    "aiv_only": (CoreKind.AIV,),
    "mix": (CoreKind.AIC, CoreKind.AIV),
    None: (CoreKind.AIC, CoreKind.AIV),
}
BARRIER_HINT = 'every core a barrier counts must reach each syncall; mode="soft" counts used_cores arrivals'
UNSTARTED_HINT = (
    "a barrier across blocks needs them all running at once: launch with pl.spmd(n, sync_start=True), "
    "or at most pl.system.available_cluster_count() blocks (available_aiv_count() for a vector-only kernel)"
)
# PyPTO's spellings of a core type share the rounds of the plain one.
_ROUNDS_OF = {"aic_only": "aic", "aiv_only": "aiv", None: "mix"}


@dataclass(frozen=True)
class BarrierKind:
    """What one ``system.syncall`` asks for: hard, or soft over ``used_cores`` with a workspace."""

    mode: str
    used_cores: int | None = None
    workspace: TensorKey | None = None
    workspace_name: str | None = field(default=None, compare=False)

    def required(self, members: tuple[str, ...]) -> int:
        """Arrivals that release a round: every member (hard), or ``used_cores`` (soft)."""
        return len(members) if self.used_cores is None else self.used_cores

    def __str__(self) -> str:
        if self.mode == "hard":
            return 'mode="hard"'
        return f'mode="soft", used_cores={self.used_cores}, gm_workspace={self.workspace_name}'


@dataclass(eq=False)
class BarrierRound:
    """Round ``index`` of the barrier over ``members``: who arrived, and how many it needs; the
    first arrival's kind of barrier, core and line."""

    core_type: str
    index: int
    members: tuple[str, ...]
    kind: BarrierKind
    opened_by: tuple[str, SourceSpan | None]
    arrived: list[str] = field(default_factory=list)
    last_arrival: int = 0  # the modeled cycle of the latest counted arrival: the round releases then

    @property
    def required(self) -> int:
        return self.kind.required(self.members)

    @property
    def released(self) -> bool:
        return len(self.arrived) >= self.required


class SyncAll:
    """The launch's barrier. ``members`` maps each core of the launch (e.g. ``"AIV0"``, or
    ``"AIV0 of block 2"`` in a launch of several blocks) to its kind; ``seated`` are those whose
    block has started, ``finished`` those whose kernel has returned."""

    def __init__(self, members: Mapping[str, CoreKind]):
        self.members = dict(members)
        self.seated: set[str] = set()
        self.finished: set[str] = set()
        self._rounds: dict[tuple[str, int], BarrierRound] = {}
        self._passed: Counter[tuple[str, str]] = Counter()
        self.changed = Signal()  # at every counted arrival: what a core waiting for a round waits on

    def join(self, core: str, call: Call, args: Sequence[Any], at: int = 0) -> tuple[BarrierRound, bool]:
        """``core`` arrives at its next round at cycle ``at``; returns the round and whether the
        arrival counted."""
        core_type = call.attrs.get("core_type")
        kinds = CORE_TYPES.get(core_type)
        if kinds is None:
            raise BarrierError(
                'pl.system.syncall: core_type must be "aic", "aiv" or "mix" (or "aic_only" / "aiv_only"), '
                f"got {core_type!r}",
                call.span,
                'leave core_type out to count every core of the launch, like "mix"',
            )
        members = tuple(name for name, kind in self.members.items() if kind in kinds)
        name: str = _ROUNDS_OF.get(core_type, core_type or "mix")
        if core not in members:
            raise BarrierError(
                f'pl.system.syncall(core_type="{core_type or name}") reached on {core}, which that barrier '
                "does not count",
                call.span,
                'use core_type="mix" for a barrier of every core, or call it only on the counted cores',
            )
        kind = _barrier_kind(call, args)
        index = self._passed[(core, name)]
        self._passed[(core, name)] += 1
        key = (name, index)
        if key not in self._rounds:
            self._rounds[key] = BarrierRound(name, index, members, kind, (core, call.span))
        round_ = self._rounds[key]
        if round_.kind != kind:
            first, span = round_.opened_by
            raise BarrierError(
                f"pl.system.syncall on {core} at {at_line(call.span)} joins round {index} of the {name} "
                f"barrier with {kind}, but {first} joined it at {at_line(span)} with {round_.kind}",
                call.span,
                "every core of a barrier must reach the same pl.system.syncall: the same mode, "
                "used_cores and gm_workspace on each side",
            )
        counted = not round_.released
        if counted:
            round_.arrived.append(core)
            round_.last_arrival = max(round_.last_arrival, at)
            self.changed.changed()
        return round_, counted

    def wait(self, round_: BarrierRound, call: Call) -> Generator[Event, None, None]:
        """Block until ``round_`` releases."""
        yield Wait(
            lambda: round_.released,
            f"round {round_.index} of the {round_.core_type} barrier",
            call.span,
            lambda: self._blocked(round_, call),
            silent=True,
            on=(self.changed,),
        )

    def _blocked(self, round_: BarrierRound, call: Call) -> Blocked:
        arrived = _listed(round_.arrived)
        text = (
            f"pl.system.syncall blocks at {at_line(call.span)}: {len(round_.arrived)} of {round_.required} "
            f"core(s) arrived ({arrived})"
        )
        gone = [m for m in round_.members if m in self.finished and m not in round_.arrived]
        if gone:
            return Blocked(f"{text}; {', '.join(gone)} finished without reaching it", call.span, BARRIER_HINT)
        unstarted = [m for m in round_.members if m not in self.seated]
        if unstarted and round_.required > len(round_.members) - len(unstarted):
            note = (
                f"{len(unstarted)} counted core(s) never started ({_listed(unstarted)}): the launch's blocks "
                "wait for core groups the blocked ones hold"
            )
            return Blocked(f"{text}; {note}", call.span, UNSTARTED_HINT)
        if round_.required > len(round_.members):
            note = (
                f"it needs {round_.required} but only {len(round_.members)} core(s) of this launch take part"
            )
            return Blocked(f"{text}; {note}", call.span, BARRIER_HINT)
        return Blocked(text)


def _listed(names: Sequence[str], shown: int = 4) -> str:
    """``a, b, c, d and 20 more``: a long list of cores, cut short."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _barrier_kind(call: Call, args: Sequence[Any]) -> BarrierKind:
    """The barrier ``call`` asks for; a soft one's workspace must be zero."""
    if call.attrs.get("mode", "hard") == "hard":
        return BarrierKind("hard")
    workspace = args[0]
    assert isinstance(workspace, torch.Tensor)
    name = call.args[0].name if isinstance(call.args[0], Var) else "the workspace"
    nonzero = torch.nonzero(workspace.flatten())
    if len(nonzero):
        index = int(nonzero[0])
        raise BarrierError(
            f'pl.system.syncall(mode="soft") needs a zeroed INT32 gm_workspace, but {name} holds '
            f"{int(workspace.flatten()[index])} at flat index {index}",
            call.span,
            "pass torch.zeros(16, dtype=torch.int32) (or larger) as the workspace, and do not reuse it "
            "for anything else",
        )
    return BarrierKind("soft", int(call.attrs["used_cores"]), tensor_key(workspace), name)
