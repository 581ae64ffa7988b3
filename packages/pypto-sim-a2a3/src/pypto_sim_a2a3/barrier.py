"""The ``system.syncall`` barrier of one launch.

The ``core_type`` attr picks the cores a barrier counts: ``"aic"`` the AIC, ``"aiv"`` the AIV
lanes, ``"mix"`` or absent every core of the launch. Each core's k-th syncall over one such set
joins round k of that set's barrier. ``mode="hard"`` releases a round when every counted core has
arrived; ``mode="soft"`` when ``used_cores`` have (partial occupancy), and needs a zeroed INT32
GM workspace (checked at every arrival; the simulator does not write it). A core arriving at a
round that has already released passes straight through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import Call, Var
from pypto_sim_a2a3.errors import BarrierError
from pypto_sim_a2a3.ring import at_line
from pypto_sim_a2a3.scheduler import Blocked, Event, Wait
from pypto_sim_a2a3.target import CoreKind

CORE_TYPES: dict[str | None, tuple[CoreKind, ...]] = {
    "aic": (CoreKind.AIC,),
    "aiv": (CoreKind.AIV,),
    "mix": (CoreKind.AIC, CoreKind.AIV),
    None: (CoreKind.AIC, CoreKind.AIV),
}
BARRIER_HINT = 'every core a barrier counts must reach each syncall; mode="soft" counts used_cores arrivals'


@dataclass(eq=False)
class BarrierRound:
    """Round ``index`` of the barrier over ``members``: who arrived, and how many it needs."""

    core_type: str
    index: int
    members: tuple[str, ...]
    required: int
    arrived: list[str] = field(default_factory=list)

    @property
    def released(self) -> bool:
        return len(self.arrived) >= self.required


class SyncAll:
    """The launch's barrier. ``members`` maps each core of the launch (e.g. ``"AIV0"``) to its kind."""

    def __init__(self, members: Mapping[str, CoreKind], finished: set[str]):
        self.members = dict(members)
        self.finished = finished
        self._rounds: dict[tuple[str, int], BarrierRound] = {}
        self._passed: Counter[tuple[str, str]] = Counter()

    def join(self, core: str, call: Call, args: Sequence[Any]) -> tuple[BarrierRound, bool]:
        """``core`` arrives at its next round; returns the round and whether the arrival counted."""
        core_type = call.attrs.get("core_type")
        kinds = CORE_TYPES.get(core_type)
        if kinds is None:
            raise BarrierError(
                f'pl.system.syncall: core_type must be "aic", "aiv" or "mix", got {core_type!r}',
                call.span,
                'leave core_type out to count every core of the launch, like "mix"',
            )
        members = tuple(name for name, kind in self.members.items() if kind in kinds)
        name = core_type or "mix"
        if core not in members:
            raise BarrierError(
                f'pl.system.syncall(core_type="{name}") reached on {core}, which that barrier does not count',
                call.span,
                'use core_type="mix" for a barrier of every core, or call it only on the counted cores',
            )
        index = self._passed[(core, name)]
        self._passed[(core, name)] += 1
        key = (name, index)
        if key not in self._rounds:
            self._rounds[key] = BarrierRound(name, index, members, _required(call, args, members))
        round_ = self._rounds[key]
        counted = not round_.released
        if counted:
            round_.arrived.append(core)
        return round_, counted

    def wait(self, round_: BarrierRound, call: Call) -> Generator[Event, None, None]:
        """Block until ``round_`` releases."""
        yield Wait(
            lambda: round_.released,
            f"round {round_.index} of the {round_.core_type} barrier",
            call.span,
            lambda: self._blocked(round_, call),
        )

    def _blocked(self, round_: BarrierRound, call: Call) -> Blocked:
        arrived = ", ".join(round_.arrived)
        text = (
            f"pl.system.syncall blocks at {at_line(call.span)}: {len(round_.arrived)} of {round_.required} "
            f"core(s) arrived ({arrived})"
        )
        gone = [m for m in round_.members if m in self.finished and m not in round_.arrived]
        if gone:
            return Blocked(f"{text}; {', '.join(gone)} finished without reaching it", call.span, BARRIER_HINT)
        if round_.required > len(round_.members):
            note = (
                f"it needs {round_.required} but only {len(round_.members)} core(s) of this launch take part"
            )
            return Blocked(f"{text}; {note}", call.span, BARRIER_HINT)
        return Blocked(text)


def _required(call: Call, args: Sequence[Any], members: tuple[str, ...]) -> int:
    """Arrivals that release a round: every member (hard), or ``used_cores`` (soft)."""
    if call.attrs.get("mode", "hard") == "hard":
        return len(members)
    workspace = args[0]
    assert isinstance(workspace, torch.Tensor)
    nonzero = torch.nonzero(workspace.flatten())
    if len(nonzero):
        index = int(nonzero[0])
        name = call.args[0].name if isinstance(call.args[0], Var) else "the workspace"
        raise BarrierError(
            f'pl.system.syncall(mode="soft") needs a zeroed INT32 gm_workspace, but {name} holds '
            f"{int(workspace.flatten()[index])} at flat index {index}",
            call.span,
            "pass torch.zeros(16, dtype=torch.int32) (or larger) as the workspace, and do not reuse it "
            "for anything else",
        )
    return int(call.attrs["used_cores"])
