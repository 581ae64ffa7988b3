"""The HOST orchestrator of a world, as a coroutine on the world's scheduler.

:class:`WorldHost` walks the HOST entry (its loops, scalar math and views like ``inputs[r]``, as
any host walker does) and gives the ``dist.*`` host ops their meaning: the world size, window
buffers and their typed views, ``dist.dispatch`` (queue a chip orchestration on a rank; the value
is a :class:`Pending` result the host waits for only when it reads it), SubWorker callbacks, and
the collectives as one builtin task per rank.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import torch

from pypto.ir import Call, CommError, DataType, Direction, DynDim, Expr, Function, OutOfBoundsError
from pypto.ir.launch import LaunchPlan
from pypto.ir.ops import dist, tensor
from pypto.ir.walker import HostWalker
from pypto_sim_a2a3.distributed import collectives
from pypto_sim_a2a3.distributed.collectives import Protocol
from pypto_sim_a2a3.distributed.endpoint import spelled
from pypto_sim_a2a3.distributed.windows import CommCtx, WindowBuffer, WindowView
from pypto_sim_a2a3.distributed.world import Rank, Work, World, footprint
from pypto_sim_a2a3.engine.scheduler import Advance, Event, Signal, Wait
from pypto_sim_a2a3.engine.semantics import SEMANTICS
from pypto_sim_a2a3.errors import LaunchError

Steps = Generator[Event, None, Any]
HostOp = Callable[["WorldHost", Call, tuple[Any, ...]], Steps]
HOST_OPS: dict[str, HostOp] = {}


def _handles(*names: str) -> Callable[[HostOp], HostOp]:
    def register(fn: HostOp) -> HostOp:
        for name in names:
            HOST_OPS[name] = fn
        return fn

    return register


@dataclass(eq=False)
class Pending:
    """What a ``dist.dispatch`` gives: the orchestration's result, once its rank has run it."""

    work: Work
    rank: int

    def value(self) -> Any:
        returned = self.work.result
        if not returned:
            return None
        return returned[0] if len(returned) == 1 else returned


class WorldHost(HostWalker):
    """The HOST entry of a distributed program, walked on the world's host core."""

    platform = "a2a3sim"

    def __init__(self, fn: Function, args: Any, world: World) -> None:
        super().__init__(fn, args, world.loaded, SEMANTICS)
        self.world = world
        self.allocations = 0

    def launch(self, plan: LaunchPlan, call: Call, args: tuple[Any, ...]) -> Steps:
        raise self.error(
            f"a HOST function launches no kernel ({plan.kernel.name})",
            call,
            "dispatch a chip orchestration that calls the kernel: chip_orch(..., device=r)",
        )
        yield  # a generator

    def eval(self, expr: Expr) -> Steps:
        value = yield from super().eval(expr)
        if isinstance(value, Pending):
            value = yield from self.wait_for(value, expr)
        return value

    def wait_for(self, pending: Pending, node: Expr) -> Steps:
        """The host reads a dispatch's result: it waits for its rank to have run it."""
        work = pending.work
        if not work.done:
            what = f"{work.name} on rank {pending.rank} to finish"
            yield Wait(lambda: work.done, what, node.span, on=(self.world.progress,))
        return pending.value()

    def resolve(self, value: Any) -> Any:
        """A returned value with every dispatch's result in place (the world has drained)."""
        if isinstance(value, Pending):
            return value.value()
        if isinstance(value, tuple):
            return tuple(self.resolve(v) for v in value)
        return value

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        handler = HOST_OPS.get(call.op)
        if handler is not None:
            return (yield from handler(self, call, args))
        return (yield from super().apply(call, args))

    def extent(self, value: Any) -> int:
        if isinstance(value, DynDim):
            return int(self.extents[value])
        return int(value)

    def spend(self, cycles: int, what: str, call: Call) -> Steps:
        yield Advance("AICPU", cycles, what, call.span)

    @property
    def submit_cycles(self) -> int:
        return next(iter(self.world.ranks.values())).chip.cost.submit_cycles()


# ---------------------------------------------------------------- host tensors and windows


@_handles(tensor.reshape)
def _reshape(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    """``x[r]`` on the HOST: the row of the host tensor, reshaped without the leading dim, as a
    view (the rank writes the caller's tensor in place)."""
    shape = tuple(host.extent(d) for d in call.attrs["shape"])
    source = args[0]
    if not isinstance(source, torch.Tensor):
        raise host.error("tensor.reshape on the HOST takes a host tensor", call)
    return source.view(shape)
    yield  # a generator


@_handles(dist.world_size)
def _world_size(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    return host.world.size
    yield  # a generator


@_handles(dist.alloc_window_buffer)
def _alloc(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    if args:
        size = int(args[0])
    else:
        dtype = call.attrs["dtype"]
        assert isinstance(dtype, DataType)
        size = dtype.nbytes
        for extent in call.attrs.get("shape", ()):
            size *= host.extent(extent)
    if size <= 0:
        raise CommError(
            f"pld.alloc_window_buffer: a window buffer of {size} bytes",
            call.span,
            "allocate a positive number of bytes, e.g. SIZE * pl.FP32.get_byte()",
        )
    host.allocations += 1
    name = str(call.attrs.get("name") or f"window{host.allocations}")
    return host.world.windows.allocate(name, size, host.allocations)
    yield  # a generator


@_handles(dist.window)
def _window(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    buffer, shape = args[0], tuple(int(n) for n in args[1])
    assert isinstance(buffer, WindowBuffer)
    view = WindowView(buffer, shape, call.attrs["dtype"], int(call.attrs.get("offset", 0)))
    if view.offset < 0 or view.offset + view.nbytes > buffer.size:
        raise OutOfBoundsError(
            f"pld.window: a view of {list(shape)} {view.dtype.name} ({view.nbytes} bytes) at byte "
            f"{view.offset} leaves the window buffer {buffer.name!r} of {buffer.size} bytes",
            call.span,
            f"allocate at least {view.offset + view.nbytes} bytes, or view a smaller shape",
        )
    return view
    yield  # a generator


@_handles(dist.get_comm_ctx)
def _comm_ctx(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    return CommCtx(None, host.world.size)
    yield  # a generator


# ---------------------------------------------------------------- dispatch and callbacks


def check_device(host: WorldHost, device: Any, call: Call) -> int:
    value = int(device)
    if not 0 <= value < host.world.size:
        raise CommError(
            f"{call.attrs.get('callee')}(..., device={value}): device {value} is outside the world's "
            f"ranks [0, {host.world.size})",
            call.span,
            "dispatch to device=r for r in pl.range(pld.world_size()); the world has as many ranks as "
            "DistributedConfig(device_ids=[...]) names devices",
        )
    return value


def on_rank(value: Any, rank: int) -> Any:
    """A HOST value as rank ``rank`` receives it: a window is the rank's own bytes."""
    if isinstance(value, WindowView):
        return value.on(rank)
    if isinstance(value, CommCtx):
        return CommCtx(rank, value.nranks)
    return value


@_handles(dist.dispatch)
def _dispatch(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    rank = check_device(host, args[0], call)
    name = str(call.attrs["callee"])
    fn = host.world.program.function(name)
    values = tuple(on_rank(v, rank) for v in args[1:])
    writes = [p.direction is not Direction.In for p in fn.params]
    yield from host.spend(host.submit_cycles, f"dispatch {name} to rank {rank}", call)

    def run(target: Rank) -> Steps:
        return (yield from target.chip.orchestrate(fn, values))

    work = Work(name, run, call.span, footprint=footprint(values, writes[: len(values)]))
    host.world.submit(rank, work)
    return Pending(work, rank)


@_handles(dist.call_subworker)
def _call_subworker(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    name = str(call.attrs["callee"])
    fn = host.world.program.function(name)
    yield from host.world.drain(call.span, f"the dispatches before {name}")
    if not host.world.runs(0):  # ranks in processes of their own: rank 0's process calls it
        return None
    if not fn.requires_runtime_binding:
        return (yield from host.call_control(fn, args))
    callbacks = host.world.options.get("callbacks") or {}
    callback = callbacks.get(name)
    if callback is None:
        raise CommError(
            f"the SubWorker {name} has no implementation bound at run time",
            call.span,
            f"bind it: compiled.prepare(callbacks={{{name!r}: fn}}), fn taking the list of its arguments",
        )
    yield from host.spend(host.submit_cycles, f"callback {name}", call)
    callback(list(args))
    return None


# ---------------------------------------------------------------- collectives, one builtin task per rank


def _builtin(host: WorldHost, call: Call, blocks: int, protocol: Callable[[Protocol, int], Steps]) -> Steps:
    """Queue one builtin task per rank: ``blocks`` AIV cores each run ``protocol(p, block)``."""
    what = spelled(call.op)
    yield from host.spend(host.submit_cycles, f"dispatch {what}", call)
    for rank in range(host.world.size):

        def run(target: Rank) -> Steps:
            chip, finished = target.chip, Signal()
            left = [blocks]

            def block(index: int) -> Steps:
                core = chip.core_group(index).aiv[0]
                yield from protocol(Protocol(target.comm, core, call.span, call.op), index)
                left[0] -= 1
                finished.changed()

            for index in range(blocks):
                core = chip.core_group(index).aiv[0]
                core.clock = max(core.clock, chip.host.clock)
                chip.scheduler.spawn(core, block(index))
            yield Wait(lambda: left[0] == 0, f"{what} to finish", call.span, on=(finished,))
            return ()

        host.world.submit(rank, Work(what, run, call.span))


def _views(values: tuple[Any, ...], rank: int) -> list[Any]:
    return [on_rank(v, rank) for v in values]


def _signal(host: WorldHost, call: Call, args: tuple[Any, ...], index: int, lanes: int) -> Any:
    """The call's signal, or one the host makes for it (``[world_size, lanes]`` INT32, zeroed)."""
    if len(args) > index and args[index] is not None:
        return args[index]
    host.allocations += 1
    size = host.world.size * lanes * DataType.INT32.nbytes
    buffer = host.world.windows.allocate("the allreduce signal", size, host.allocations)
    return WindowView(buffer, (host.world.size, lanes), DataType.INT32)


def _op(call: Call) -> str:
    op = call.attrs.get("op", "Sum")
    return str(getattr(op, "value", op))


@_handles(dist.allreduce)
def _allreduce(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    blocks = int(call.attrs.get("core_num", 1))
    chip = host.world.target
    if blocks > chip.core_groups * chip.aiv_per_group:
        raise LaunchError(
            f"pld.tensor.allreduce(core_num={blocks}) launches {blocks} AIV blocks per rank that must all "
            f"run at once, but {chip.name} has {chip.core_groups * chip.aiv_per_group} AIV cores",
            call.span,
            f"use core_num <= {chip.core_groups * chip.aiv_per_group}",
        )
    target, signal = args[0], _signal(host, call, args, 1, blocks)
    op, ring = _op(call), call.attrs.get("mode", "mesh") == "ring"

    def protocol(p: Protocol, block: int) -> Steps:
        data, sig = _views((target, signal), p.me)
        if ring:
            yield from collectives.allreduce_ring(p, data, sig, op)
        else:
            yield from collectives.allreduce_mesh(p, data, sig, op, block, blocks)

    yield from _builtin(host, call, blocks, protocol)
    return target


@_handles(dist.barrier)
def _barrier(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    def protocol(p: Protocol, block: int) -> Steps:
        yield from collectives.barrier(p, on_rank(args[0], p.me))

    yield from _builtin(host, call, 1, protocol)
    return args[0]


@_handles(dist.broadcast)
def _broadcast(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    root = int(call.attrs.get("root", 0))

    def protocol(p: Protocol, block: int) -> Steps:
        target, signal = _views(args[:2], p.me)
        yield from collectives.broadcast(p, target, signal, root)

    yield from _builtin(host, call, 1, protocol)
    return args[0]


@_handles(dist.allgather)
def _allgather(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    def protocol(p: Protocol, block: int) -> Steps:
        yield from collectives.allgather(p, *_views(args[:3], p.me))

    yield from _builtin(host, call, 1, protocol)
    return args[1]


@_handles(dist.reduce_scatter)
def _reduce_scatter(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    op = _op(call)

    def protocol(p: Protocol, block: int) -> Steps:
        target, signal = _views(args[:2], p.me)
        yield from collectives.reduce_scatter(p, target, signal, op)

    yield from _builtin(host, call, 1, protocol)
    return args[0]


@_handles(dist.all_to_all)
def _all_to_all(host: WorldHost, call: Call, args: tuple[Any, ...]) -> Steps:
    def protocol(p: Protocol, block: int) -> Steps:
        yield from collectives.all_to_all(p, *_views(args[:3], p.me))

    yield from _builtin(host, call, 1, protocol)
    return args[1]
