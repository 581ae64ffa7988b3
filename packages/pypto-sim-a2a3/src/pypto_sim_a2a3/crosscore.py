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
from pypto_sim_a2a3.cost import CostModel, tile_bytes
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.launch import CoreRole
from pypto_sim_a2a3.pipe import split_of
from pypto_sim_a2a3.ring import RingSlot, Token
from pypto_sim_a2a3.scheduler import Event

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


def _spend(cost: CostModel, call: Call) -> Generator[Event, None, None]:
    yield cost.op_cost(call).on(call)


@_handles(op.aic_initialize_pipe, op.aiv_initialize_pipe)
def _initialize(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    role.launch.initialize_pipes(role, call)
    yield from _spend(cost, call)


@_handles(op.reserve_buffer, op.import_peer_buffer)
def _buffer(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    """The compiler placed the buffer (the kernel's reservations): here it only takes its time."""
    yield from _spend(cost, call)


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
    yield from pipe.push(role.name, role.lane, call, args[0], cost.push_cost(call, nbytes), valid)


@_handles(op.tpop_from_aic, op.tpop_from_aiv)
def _pop(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    declared = tuple(int(n) for n in args[0]) if args else None
    slot, value = yield from pipe.pop(role.name, call, cost.pop_cost, declared)
    return Popped(slot, value)


@_handles(op.tfree_to_aic, op.tfree_to_aiv)
def _free(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    pipe = role.launch.pipe(role, call)
    yield from pipe.free(role.name, role.take_popped(call), call, cost.op_cost(call))


_INDICES: dict[str, Callable[[CoreRole], int]] = {
    op.get_subblock_idx: lambda role: role.lane,
    op.get_block_idx: lambda role: role.launch.site.block,
    op.get_block_num: lambda role: role.launch.site.block_num,
}


@_handles(*_INDICES)
def _index(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    yield from _spend(cost, call)
    return _INDICES[call.op](role)


@_handles(system.fence)
def _fence(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    role.launch.gm.fence(role.launch.gm_core(role))
    yield from _spend(cost, call)


@_handles(system.cacheinvalid)
def _cacheinvalid(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    role.launch.gm.invalidate(role.launch.gm_core(role), call, args)
    yield from _spend(cost, call)


@_handles(system.syncall)
def _syncall(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    launch = role.launch
    round_, counted = launch.barrier.join(launch.member(role), call, args)
    launch.gm.arrive(launch.gm_core(role), (round_.core_type, round_.index), counted)
    yield from launch.barrier.wait(round_, call)
    yield from _spend(cost, call)
