"""Ops a core runs against its launch rather than on its own tiles: pipe setup and handshakes, the
lane and block indices, and cross-core ordering through GM (fence, cacheinvalid, syncall).

:data:`LAUNCH_OPS` maps each op name to a coroutine ``op(role, call, args, cost)``; the kernel
interpreter dispatches to it before the pure :data:`~pypto_sim_a2a3.semantics.SEMANTICS`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import torch

from pypto.ir import Call, SplitMode, TileType
from pypto.ir.ops import op, system
from pypto_sim_a2a3.corepipes import GM_PIPES, Dependency
from pypto_sim_a2a3.cost import CostModel, OpCost, tile_bytes
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.launch import CoreRole
from pypto_sim_a2a3.pipe import split_of
from pypto_sim_a2a3.ring import RingSlot, Token
from pypto_sim_a2a3.scheduler import Advance, Event

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


def on_scalar(role: CoreRole, call: Call, cost: OpCost, after: int = 0, what: str = "") -> Steps:
    """``cost`` on the core's scalar unit, which holds the core's clock, not before ``after``."""
    issue = role.core.clock
    waits = (Dependency(after, None, what),) if after else ()
    _, ready = role.core_pipes.run(cost, call, issue, after=waits)
    yield Advance.scalar(ready - issue)


def _spend(role: CoreRole, cost: CostModel, call: Call) -> Steps:
    yield from on_scalar(role, call, cost.op_cost(call))


def wait_until(role: CoreRole, cycle: int) -> Steps:
    """Hold the core's scalar unit until ``cycle`` (a cross-core flag it waits on)."""
    if cycle > role.core.clock:
        yield Advance.scalar(cycle - role.core.clock)


def issue(role: CoreRole, cost: CostModel) -> Steps:
    """The scalar unit hands one op to a pipe."""
    yield cost.issue_step()


@_handles(op.aic_initialize_pipe, op.aiv_initialize_pipe)
def _initialize(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    role.launch.initialize_pipes(role, call)
    yield from _spend(role, cost, call)


@_handles(op.reserve_buffer, op.import_peer_buffer)
def _buffer(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """The compiler placed the buffer (the kernel's reservations): here it only takes its time."""
    yield from _spend(role, cost, call)


@_handles(op.tpush_to_aiv, op.tpush_to_aic)
def _push(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    tile = call.args[0].type
    assert isinstance(tile, TileType)
    if isinstance(args[0], Token) and split_of(call) is not SplitMode.NONE:
        raise PipeError(
            f"{call.op}(split={split_of(call).name}) on {role.name} pushes a share it has no data for: "
            "under split=NONE lane 1 popped a data-less token",
            call.span,
            "push lane 1's token back with split=NONE, or split the incoming tile UP_DOWN / LEFT_RIGHT",
        )
    nbytes = 0 if isinstance(args[0], Token) else tile_bytes(tile)
    valid = tuple(int(n) for n in args[1]) if len(args) > 1 else tile.valid_shape
    issued = role.core.clock
    yield from pipe.wait_writable(role.name, call)
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
    yield from issue(role, cost)


@_handles(op.tpop_from_aic, op.tpop_from_aiv)
def _pop(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    declared = tuple(int(n) for n in args[0]) if args else None
    issued = role.core.clock
    yield from pipe.wait_readable(role.name, call)
    slot, value, ready_at = pipe.pop(role.name, call, cost.pop_cost, declared, role.core_pipes, issued)
    yield from wait_until(role, ready_at)  # the scalar unit waited for the slot's ready flag
    yield from issue(role, cost)
    return Popped(slot, value)


@_handles(op.tfree_to_aic, op.tfree_to_aiv)
def _free(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    pipe.free(role.name, role.take_popped(call), call, cost.op_cost(call), role.core_pipes, role.core.clock)
    yield from issue(role, cost)


_INDICES: dict[str, Callable[[CoreRole], int]] = {
    op.get_subblock_idx: lambda role: role.lane,
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
