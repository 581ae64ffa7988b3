"""A rank simulated in a process of its own (the runtime's ``RankLink``, DIST_CONTRACT.md "Ranks
as processes"): the rank's world simulates its own chip window by window. In each window it steps
every event before the link's horizon; what it sent to other ranks went to the link as
:class:`~.interconnect.Message` data; at the window barrier it reports its next event and takes
the messages the others sent it, each handed to its rank when it lands (never before the horizon:
the lookahead is the smallest link latency). Modeled cycles are those of one process simulating
the whole world.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pypto.ir import DeadlockError

if TYPE_CHECKING:
    from pypto_sim_a2a3.distributed.world import World
    from pypto_sim_a2a3.engine.scheduler import Process


def run_windows(world: World, host: Process) -> None:
    """Run ``world`` (one local rank) on its link until every rank is done."""
    link = world.link
    scheduler = world.scheduler
    while True:
        next_event = scheduler.run_until(link.horizon)
        finished = host.done and all(rank.served for rank in world.ranks.values())
        blocked = _blocked(world) if next_event is None and not scheduler.idle else None
        try:
            inbox = link.advance(next_event, finished and scheduler.idle, blocked)
        except Exception as err:
            if type(err).__name__ == "Stalled":
                raise _deadlock(getattr(err, "blocked", [])) from None
            raise
        if link.done:
            return
        for message in inbox:
            world.fabric.inject(message.payload)


def _blocked(world: World) -> list[tuple[str, str, Any, str | None]]:
    """This rank's blocked waits, as plain data for the other ranks' deadlock reports."""
    return [
        (name, reason.text, reason.cause, reason.hint) for name, reason in world.scheduler.blocked_reasons()
    ]


def _deadlock(blocked: list[Any]) -> DeadlockError:
    """Every rank is blocked or idle and nothing is in flight: the world's deadlock, naming every
    rank's blocked waits."""
    # Every rank's process walks the HOST entry: its wait is reported once, as one process would.
    lines = list(dict.fromkeys(entry for rank in blocked if rank for entry in rank))
    causes = [entry for entry in lines if entry[2] is not None]
    first = causes[0] if causes else (lines[0] if lines else ("", "", None, None))
    text = "\n".join(f"  {name}: {reason}" for name, reason, _, _ in lines)
    return DeadlockError(
        "every live core is blocked:\n" + text,
        first[2],
        first[3] or "each wait needs another rank to make progress; check the notifies and waits",
    )
