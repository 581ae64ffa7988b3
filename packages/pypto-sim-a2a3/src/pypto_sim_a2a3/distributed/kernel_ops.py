"""The ``dist.*`` ops of a kernel, as launch ops (:data:`~pypto_sim_a2a3.engine.crosscore.LAUNCH_OPS`):
each decodes its operands, checks the peer and the region at the user's line, lets the core's
earlier GM work drain (a comm op orders what the core did before it) and runs on the rank's
:class:`~.endpoint.RankComm`. Outside a world of chips they are a ``CommError``.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from typing import Any

import torch

from pypto.ir import Call, CommError, Var
from pypto.ir.ops import dist
from pypto_sim_a2a3.distributed import collectives
from pypto_sim_a2a3.distributed.collectives import Protocol
from pypto_sim_a2a3.distributed.endpoint import Condition, RankComm, check_region, spelled
from pypto_sim_a2a3.distributed.windows import CommCtx
from pypto_sim_a2a3.engine.crosscore import LAUNCH_OPS, LaunchOp, wait_until
from pypto_sim_a2a3.engine.launch import CoreRole
from pypto_sim_a2a3.engine.scheduler import Advance, Event
from pypto_sim_a2a3.hw.corepipes import GM_PIPES
from pypto_sim_a2a3.hw.cost import CostModel

Steps = Generator[Event, None, Any]


def _handles(name: str) -> Any:
    def register(fn: LaunchOp) -> LaunchOp:
        LAUNCH_OPS[name] = fn
        return fn

    return register


def comm_of(role: CoreRole, call: Call) -> RankComm:
    comm = role.launch.site.comm
    if comm is None:
        raise CommError(
            f"{_user(call)} talks to other ranks, but this program runs on one chip",
            call.span,
            "run it as a distributed program: a @pl.jit.host entry run with "
            "RunConfig(distributed_config=DistributedConfig(device_ids=[...]))",
        )
    assert isinstance(comm, RankComm)
    return comm


def _user(call: Call) -> str:
    return spelled(call.op)


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _region(tensor: torch.Tensor, offsets: Sequence[int], extent: Sequence[int]) -> torch.Tensor:
    return tensor[tuple(slice(o, o + n) for o, n in zip(offsets, extent, strict=True))]


def _drain(role: CoreRole) -> Steps:
    """The core's GM transfers so far complete before it talks to a peer."""
    yield from wait_until(role, role.core_pipes.drained(GM_PIPES))


def _enum(value: Any) -> str:
    return str(getattr(value, "value", value))


@_handles(dist.get_comm_ctx)
def _get_comm_ctx(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    comm.place(args[0], call.span, _user(call))
    yield Advance.scalar(1)
    return CommCtx(comm.rank, comm.nranks)


@_handles(dist.rank)
def _rank(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    yield Advance.scalar(1)
    return args[0].rank


@_handles(dist.nranks)
def _nranks(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    yield Advance.scalar(1)
    return args[0].nranks


def _cell(comm: RankComm, call: Call, signal: torch.Tensor, offsets: Any) -> tuple[Any, tuple[int, ...]]:
    index = _ints(offsets)
    check_region(tuple(signal.shape), index, (1,) * len(index), call.span, _user(call))
    return comm.place(_region(signal, index, (1,) * len(index)), call.span, _user(call)), index


@_handles(dist.notify)
def _notify(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    target, peer, offsets, value = args
    peer = comm.check_peer(peer, call.span, _user(call))
    place, index = _cell(comm, call, target, offsets)
    yield from _drain(role)
    name = call.args[0].name if isinstance(call.args[0], Var) else "signal"
    yield from comm.notify(
        role.core, peer, place, index, int(value), _enum(call.attrs["op"]), call.span, name
    )


def _condition(comm: RankComm, call: Call, args: tuple[Any, ...]) -> Condition:
    signal, offsets, expected = args
    place, index = _cell(comm, call, signal, offsets)
    cmp = _enum(call.attrs.get("cmp", "Ge"))
    name = call.args[0].name if isinstance(call.args[0], Var) else "signal"
    return Condition(place, index, int(expected), cmp, call.span, _user(call), name)


@_handles(dist.wait)
def _wait(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    yield from comm.wait(role.core, _condition(comm, call, args))


@_handles(dist.defer_wait)
def _defer_wait(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    comm.defer(role.launch, _condition(comm, call, args))
    yield Advance.scalar(1)


@_handles(dist.remote_load)
def _remote_load(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    target, peer, offsets = args[0], args[1], _ints(args[2])
    shape = _ints(call.attrs["shape"])
    valid = _ints(args[3]) if len(args) > 3 and args[3] is not None else shape
    peer = comm.check_peer(peer, call.span, _user(call))
    check_region(tuple(target.shape), offsets, valid, call.span, _user(call))
    place = comm.place(_region(target, offsets, valid), call.span, _user(call))
    yield from _drain(role)
    data = yield from comm.read(role.core, peer, place, call.span, call.op)
    tile = torch.zeros(shape, dtype=target.dtype)
    _region(tile, (0,) * len(shape), valid).copy_(data)
    return tile


def _store(
    role: CoreRole, call: Call, data: torch.Tensor, target: torch.Tensor, peer: Any, offsets: Any
) -> Steps:
    comm = comm_of(role, call)
    peer = comm.check_peer(peer, call.span, _user(call))
    index = _ints(offsets)
    check_region(tuple(target.shape), index, tuple(data.shape), call.span, _user(call))
    place = comm.place(_region(target, index, tuple(data.shape)), call.span, _user(call))
    atomic = _enum(call.attrs.get("atomic", "NONE")) == "Add"
    yield from _drain(role)
    yield from comm.write(role.core, peer, place, data, call.span, call.op, atomic)


@_handles(dist.remote_store)
def _remote_store(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    tile, target, peer, offsets = args
    yield from _store(role, call, tile, target, peer, offsets)


@_handles(dist.tensor_remote_store)
def _tensor_remote_store(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    src, target, peer, offsets = args
    yield from _store(role, call, src, target, peer, offsets)


def _transfer_regions(
    call: Call, dst: torch.Tensor, src: torch.Tensor, args: tuple[Any, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The regions a put / get moves: ``shape`` at the offsets (zeros if not given), or the whole
    source into the whole destination."""
    shape = call.attrs.get("shape")
    dst_offsets = _ints(args[3]) if len(args) > 3 and args[3] is not None else (0,) * dst.dim()
    src_offsets = _ints(args[4]) if len(args) > 4 and args[4] is not None else (0,) * src.dim()
    extent = _ints(shape) if shape else tuple(src.shape)
    what = _user(call)
    check_region(tuple(dst.shape), dst_offsets, extent, call.span, f"{what}: its destination")
    check_region(tuple(src.shape), src_offsets, extent, call.span, f"{what}: its source")
    return _region(dst, dst_offsets, extent), _region(src, src_offsets, extent)


def _chunks(call: Call, extent: Sequence[int]) -> int:
    rows = extent[-2] if len(extent) > 1 else 1
    cols = extent[-1] if extent else 1
    chunk_rows, chunk_cols = int(call.attrs.get("chunk_rows", 0)), int(call.attrs.get("chunk_cols", 0))
    return math.ceil(rows / (chunk_rows or rows or 1)) * math.ceil(cols / (chunk_cols or cols or 1))


@_handles(dist.put)
def _put(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    dst, peer, src = args[0], args[1], args[2]
    peer = comm.check_peer(peer, call.span, _user(call))
    to, data = _transfer_regions(call, dst, src, args)
    place = comm.place(to, call.span, _user(call))
    atomic = _enum(call.attrs.get("atomic", "NONE")) == "Add"
    yield from _drain(role)
    chunks, pipelined = _chunks(call, tuple(to.shape)), bool(call.attrs.get("pipeline", False))
    yield from comm.write(role.core, peer, place, data, call.span, call.op, atomic, chunks, pipelined)


@_handles(dist.get)
def _get(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    comm = comm_of(role, call)
    dst, peer, src = args[0], args[1], args[2]
    peer = comm.check_peer(peer, call.span, _user(call))
    into, source = _transfer_regions(call, dst, src, args)
    place = comm.place(source, call.span, _user(call))
    yield from _drain(role)
    data = yield from comm.read(role.core, peer, place, call.span, call.op)
    into.copy_(data)
    local = comm.world.windows.find(into)
    if local is not None:
        comm.log.wrote(local, comm.rank, comm.rank, tuple(comm.clock), call.span, f"{_user(call)} writes")


# ---------------------------------------------------------------- collectives in a kernel


def _protocol(role: CoreRole, call: Call) -> Steps:
    comm = comm_of(role, call)
    yield from _drain(role)
    return Protocol(comm, role.core, call.span, call.op)


def _signal(call: Call, args: tuple[Any, ...], index: int) -> torch.Tensor:
    if len(args) <= index or args[index] is None:
        raise CommError(
            f"{_user(call)} in a kernel needs its signal window",
            call.span,
            "pass a signal: pld.tensor.allreduce(data, signal) with signal an INT32 window [nranks, 1]",
        )
    signal: torch.Tensor = args[index]
    return signal


@_handles(dist.allreduce)
def _allreduce(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    target, signal = args[0], _signal(call, args, 1)
    op = _enum(call.attrs.get("op", "Sum"))
    if call.attrs.get("mode", "mesh") == "ring":
        yield from collectives.allreduce_ring(p, target, signal, op)
    else:
        yield from collectives.allreduce_mesh(p, target, signal, op)
    return target


@_handles(dist.barrier)
def _barrier(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    yield from collectives.barrier(p, args[0])
    return args[0]


@_handles(dist.broadcast)
def _broadcast(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    yield from collectives.broadcast(p, args[0], args[1], int(call.attrs.get("root", 0)))
    return args[0]


@_handles(dist.allgather)
def _allgather(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    yield from collectives.allgather(p, args[0], args[1], args[2])
    return args[1]


@_handles(dist.reduce_scatter)
def _reduce_scatter(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    yield from collectives.reduce_scatter(p, args[0], args[1], _enum(call.attrs.get("op", "Sum")))
    return args[0]


@_handles(dist.all_to_all)
def _all_to_all(role: CoreRole, call: Call, args: tuple[Any, ...], cost: CostModel) -> Steps:
    p = yield from _protocol(role, call)
    yield from collectives.all_to_all(p, args[0], args[1], args[2])
    return args[1]
