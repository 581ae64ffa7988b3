"""Ops a core runs against its launch rather than on its own tiles: pipe setup and handshakes, the
lane and block indices, cross-core ordering through GM (fence, cacheinvalid, syncall), and the
asynchronous prefetch's issue and wait (their time depends on the core's pipes).

:data:`LAUNCH_OPS` maps each op name to a coroutine ``op(role, call, args, cost)``; the kernel
interpreter dispatches to it before the pure :data:`~pypto_sim_a2a3.engine.semantics.SEMANTICS`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import torch

from pypto.ir import Call, PipeType, SplitMode, TileType
from pypto.ir.errors import at_line
from pypto.ir.ops import op, prefetch, short_name, system, user_name
from pypto.ir.ops import tile as tile_ops
from pypto.ir.semantics import PrefetchEvent, PrefetchSession, prefetched_bytes
from pypto_sim_a2a3.engine.launch import CoreRole
from pypto_sim_a2a3.engine.scheduler import Advance, Event
from pypto_sim_a2a3.errors import EventError, PipeError, PrefetchError
from pypto_sim_a2a3.hw.corepipes import GM_PIPES, Dependency
from pypto_sim_a2a3.hw.cost import CostModel, OpCost, tile_bytes
from pypto_sim_a2a3.hw.pipe import split_of
from pypto_sim_a2a3.hw.ring import RingSlot, Token

Steps = Generator[Event, None, Any]
LaunchOp = Callable[[CoreRole, Call, tuple[Any, ...], CostModel], Steps]

LAUNCH_OPS: dict[str, LaunchOp] = {}


@dataclass(frozen=True)
class Popped:
    """A pop's result: the tile (a view onto ``slot``'s bytes, or a token) and the slot to free."""

    slot: RingSlot
    value: torch.Tensor | Token


def _handles(*names: str) -> Callable[[LaunchOp], LaunchOp]:
    def register(fn: LaunchOp) -> LaunchOp:
        for name in names:
            LAUNCH_OPS[name] = fn
        return fn

    return register


# The scalar unit's steps by their cycles: a core yields one per scalar op, and a step is an
# immutable record, so one of each length serves every core.
_SCALAR_STEPS: dict[int, Advance] = {}


def scalar_step(cycles: int) -> Advance:
    """``Advance.scalar(cycles)``, made once per length."""
    found = _SCALAR_STEPS.get(cycles)
    if found is None:
        found = Advance.scalar(cycles)
        if len(_SCALAR_STEPS) < 4096:
            _SCALAR_STEPS[cycles] = found
    return found


def on_scalar(role: CoreRole, call: Call, cost: OpCost, after: int = 0, what: str = "") -> Steps:
    """``cost`` on the core's scalar unit, which holds the core's clock, not before ``after``."""
    issue = role.core.clock
    waits = (Dependency(after, None, what),) if after else ()
    _, ready = role.core_pipes.run(cost, call, issue, after=waits)
    yield scalar_step(ready - issue)


def _spend(role: CoreRole, cost: CostModel, call: Call) -> Steps:
    yield from on_scalar(role, call, cost.op_cost(call))


def wait_until(role: CoreRole, cycle: int) -> Steps:
    """Hold the core's scalar unit until ``cycle`` (a cross-core flag it waits on)."""
    if cycle > role.core.clock:
        yield scalar_step(cycle - role.core.clock)


def issue(role: CoreRole, cost: CostModel) -> Steps:
    """The scalar unit hands one op to a pipe."""
    yield cost.issue_step()


@_handles(system.aic_initialize_pipe, system.aiv_initialize_pipe)
def _initialize(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    role.launch.initialize_pipes(role, call)
    yield from _spend(role, cost, call)


@_handles(system.reserve_buffer, system.import_peer_buffer)
def _buffer(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """The compiler placed the buffer (the kernel's reservations): here it only takes its time."""
    yield from _spend(role, cost, call)


@_handles(tile_ops.tpush_to_aiv, tile_ops.tpush_to_aic)
def _push(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    tile = call.args[0].type
    assert isinstance(tile, TileType)
    if isinstance(args[0], Token) and split_of(call) is not SplitMode.NONE:
        raise PipeError(
            f"{short_name(call.op)}"
            f"(split={split_of(call).name}) on {role.name} pushes a share it has no data for: "
            "under split=NONE lane 1 popped a data-less token",
            call.span,
            "push lane 1's token back with split=NONE, or split the incoming tile UP_DOWN / LEFT_RIGHT",
        )
    nbytes = 0 if isinstance(args[0], Token) else tile_bytes(tile)
    valid = tuple(int(n) for n in args[1]) if len(args) > 1 else tile.valid_shape
    issued = role.core.clock
    yield pipe.writable_wait(role.name, call)
    source = (
        role.core.memory.region(args[0]) if isinstance(args[0], torch.Tensor) and role.core.memory else None
    )
    # The wait for the slot's free flag holds the pipe that sends the tile, not the scalar unit:
    # the core issues on (the next loads, moves and matmuls) while the push waits.
    pipe.push(
        role.name,
        role.lane,
        call,
        args[0],
        valid,
        role.core_pipes,
        cost.push_cost(call, nbytes),
        issued,
        source,
    )
    yield cost.issue_step()  # the scalar unit hands it to its pipe


@_handles(tile_ops.tpop_from_aic, tile_ops.tpop_from_aiv)
def _pop(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    declared = tuple(int(n) for n in args[0]) if args else None
    issued = role.core.clock
    yield pipe.readable_wait(role.name, call)
    slot, value, ready_at = pipe.pop(role.name, call, cost.pop_cost, declared, role.core_pipes, issued)
    if ready_at > role.core.clock:  # the scalar unit waited for the slot's ready flag
        yield scalar_step(ready_at - role.core.clock)
    yield cost.issue_step()
    return Popped(slot, value)


@_handles(system.tfree_to_aic, system.tfree_to_aiv)
def _free(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    pipe.free(role.name, role.take_popped(call), call, cost.op_cost(call), role.core_pipes, role.core.clock)
    yield cost.issue_step()


_INDICES: dict[str, Callable[[CoreRole], int]] = {
    tile_ops.get_subblock_idx: lambda role: role.lane,
    op.get_block_idx: lambda role: role.launch.site.block,
    op.get_block_num: lambda role: role.launch.site.block_num,
}


@_handles(*_INDICES)
def _index(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    yield from _spend(role, cost, call)
    return _INDICES[call.op](role)


@_handles(system.fence)
def _fence(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """Order the core's GM writes: it waits for its memory pipes to drain."""
    launch, drained = role.launch, role.core_pipes.drained(GM_PIPES)
    core = launch.gm_core(role)
    launch.in_time(role, max(role.core.clock, drained), lambda: launch.gm.fence(core))
    yield from on_scalar(role, call, cost.op_cost(call), drained, "the memory pipes to drain")


@_handles(system.cacheinvalid)
def _cacheinvalid(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    launch, drained = role.launch, role.core_pipes.drained(GM_PIPES)
    core = launch.gm_core(role)
    launch.in_time(role, max(role.core.clock, drained), lambda: launch.gm.invalidate(core, call, args))
    yield from on_scalar(role, call, cost.op_cost(call), drained, "the memory pipes to drain")


@_handles(system.syncall)
def _syncall(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """A barrier: the core arrives once every pipe has drained, and goes on once the round's last
    counted core has arrived."""
    launch = role.launch
    arrival = max(role.core.clock, role.core_pipes.drained())
    round_, counted = launch.barrier.join(launch.member(role), call, args, arrival)
    core, key = launch.gm_core(role), (round_.core_type, round_.index)
    launch.in_time(role, arrival, lambda: launch.gm.arrive(core, key, counted))
    yield from launch.barrier.wait(round_, call)
    what = f"round {round_.index} of the {round_.core_type} barrier"
    yield from on_scalar(role, call, cost.op_cost(call), max(arrival, round_.last_arrival), what)


# The core's pipe a PipeType names (ALL: every pipe).
_PIPE_UNITS = {
    PipeType.MTE1: "MTE1",
    PipeType.MTE2: "MTE2",
    PipeType.MTE3: "MTE3",
    PipeType.M: "CUBE",
    PipeType.V: "VECTOR",
    PipeType.S: "SCALAR",
    PipeType.FIX: "FIXPIPE",
}
_EVENT_IDS = range(14)
_GM_WRITE_PIPES = ("MTE3", "FIXPIPE")


def _event(call: Call, args: tuple[Any, ...]) -> int:
    """The event id: the ``event_id`` attr, or the run-time operand (checked here)."""
    mode = call.attrs.get("ffts_mode")
    if mode is not None and mode != 2:
        raise EventError(
            f"{short_name(call.op)}(ffts_mode={mode}): a2a3sim models the events of one core group "
            "(ffts_mode=2) only",
            call.span,
            "leave ffts_mode out (or pass 2) for an event between a core group's AIC and AIV lanes; "
            "use pl.system.syncall for a barrier across blocks",
        )
    if not args:
        return int(call.attrs["event_id"])
    event = int(args[0])
    if event not in _EVENT_IDS:
        raise EventError(
            f"{short_name(call.op)}: the run-time event id is {event}, outside 0..13 "
            "(14 and 15 are reserved)",
            call.span,
            "keep the event id in 0..13",
        )
    return event


@_handles(system.sync_set)
def _sync_set(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """Raise an event toward the peer core type once the named pipe has drained; the scalar unit
    issues on (the set waits in the pipe)."""
    event = _event(call, args)
    pipe = call.attrs.get("pipe") or PipeType.ALL
    unit = _PIPE_UNITS.get(pipe)
    fired = max(role.core.clock, role.core_pipes.drained(None if unit is None else (unit,)))
    note = None
    if role.core_pipes.drained(_GM_WRITE_PIPES) > fired:
        note = (
            f"{role.name} set event {event} at {at_line(call.span)} on the {pipe.name} pipe while its GM "
            "writes were still running (the set does not wait for them: set it on pipe=pl.PipeType.MTE3, "
            "FIX or ALL)"
        )
    launch = role.launch
    points = launch.events.set(role.name, call, event, fired)
    core = launch.gm_core(role)
    launch.in_time(role, fired, lambda: launch.gm.event(core, points, True, note))
    yield from _spend(role, cost, call)


@_handles(system.sync_wait)
def _sync_wait(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """Wait until the peer core type set the event (one set from each peer core); the core goes
    on from the cycle the set fired."""
    event = _event(call, args)
    launch = role.launch
    fired, points = yield from launch.events.wait(role.name, call, event)
    core = launch.gm_core(role)
    launch.in_time(role, max(role.core.clock, fired), lambda: launch.gm.event(core, points, False))
    yield from on_scalar(role, call, cost.op_cost(call), fired, f"event {event}")


# ---------------------------------------------------------------- asynchronous prefetch


@_handles(prefetch.async_prefetch)
def _async_prefetch(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """Put the prefetch on the core's MTE2 queue behind the GM writes of its source this core
    made; the scalar unit issues on at once. The event keeps the cycle the prefetch lands."""
    src, context = args
    _, ready = role.core_pipes.run(cost.op_cost(call), call, role.core.clock, gm_reads=[src])
    yield from issue(role, cost)
    return PrefetchEvent(context, prefetched_bytes(call), ready)


@_handles(prefetch.wait)
def _prefetch_wait(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """Hold the scalar unit until the event's prefetch has landed (at once if it has)."""
    event, session = args
    if isinstance(event, Token):  # a lane mirroring lane 0 left the prefetch to it: nothing to wait for
        yield from _spend(role, cost, call)
        return True
    if not isinstance(event, PrefetchEvent) or not isinstance(session, PrefetchSession):
        raise PrefetchError(f"{user_name(call.op)} takes an event and a session", call.span)
    if event.context is not session.context:
        raise PrefetchError(
            f"{user_name(call.op)} waits for an event of one prefetch context in the session of another",
            call.span,
            "wait in the session of the context that issued the prefetch: evt = "
            "pl.prefetch.async_prefetch(x, ctx) pairs with session = pl.prefetch.session(ctx)",
        )
    yield from on_scalar(role, call, cost.op_cost(call), event.ready, "the prefetch to land in L2")
    return True


@_handles(system.set_ffts)
def _set_ffts(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """The FFTS setup: the simulator's event flags need none, so it only takes its time."""
    yield from _spend(role, cost, call)
