"""Building distributed programs by hand for the simulator's tests: a HOST orchestrator that
allocates windows and dispatches a chip orchestration to each rank, and kernels that talk to
their peers through the ``dist.*`` ops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sim_lowered import FP32, FunctionBuilder, Mem, expr, launcher, tensor_t, tile_t

from pypto.ir import (
    UNIT,
    Assign,
    Call,
    DataType,
    Direction,
    DistributedTensorType,
    Eval,
    Function,
    FunctionKind,
    Level,
    Program,
    Role,
    Var,
    make_call,
)
from pypto_sim_a2a3 import A2A3SimBackend

INT32 = DataType.INT32


def window_t(shape: Sequence[int], dtype: DataType = FP32) -> DistributedTensorType:
    return DistributedTensorType(tuple(shape), dtype)


def host(b: FunctionBuilder, role: Role = Role.Orchestrator) -> Function:
    fn = b.build()
    return replace(fn, attrs={**fn.attrs, "level": Level.HOST, "role": role})


def world_program(entry: Function, *functions: Function) -> Program:
    return Program(entry.name, (entry, *functions), entry.name)


def run_world(prog: Program, args: Sequence[Any], ranks: int, **options: Any) -> Any:
    return A2A3SimBackend().run_world(prog, list(args), options, ranks=ranks)


def do(b: FunctionBuilder, op_name: str, /, *args: Any, **attrs: Any) -> Call:
    """``b.do`` for an op with an attribute named ``op`` (``dist.notify(..., op=...)``)."""
    span = b.span()
    call = make_call(op_name, [expr(a) for a in args], attrs, span)
    b._emit(Eval(call, span))
    return call


def assign(b: FunctionBuilder, target: str, op_name: str, /, *args: Any, **attrs: Any) -> Var:
    """``b.op`` for an op with an attribute named ``op`` (``dist.allreduce(..., op=...)``)."""
    span = b.span()
    call = make_call(op_name, [expr(a) for a in args], attrs, span)
    var = Var(target, call.type, span)
    b._emit(Assign(var, call, span))
    return var


def peers(b: FunctionBuilder, me: Var, n: Var, body: Callable[[Var], None]) -> None:
    """``for k in range(1, n): peer = (me + k) % n; body(peer)``: every other rank, in ring order."""
    with b.loop("k", 1, n) as k:
        total = b.op("total", "scalar.add", me, k)
        peer = b.op("peer", "scalar.mod", total, n)
        body(peer)


def dispatch_each_rank(
    name: str,
    chip: Function,
    host_params: Sequence[tuple[str, Any, Direction]],
    windows: Sequence[tuple[str, int, Sequence[int], DataType]],
    per_rank: Callable[[FunctionBuilder, dict[str, Var], Var], list[Any]],
    ranks_to_cover: Any = None,
) -> Function:
    """A HOST orchestrator: its parameters, one window buffer per ``windows`` entry (name, bytes,
    view shape, dtype), and a loop over the ranks (or ``range(ranks_to_cover)``) dispatching
    ``chip`` with the arguments ``per_rank(b, values, r)`` gives."""
    b = FunctionBuilder(name, FunctionKind.Orchestration)
    values: dict[str, Var] = {}
    for pname, ptype, direction in host_params:
        values[pname] = b.param(pname, ptype, direction)
    buffers = {
        wname: assign(b, f"{wname}_buf", "dist.alloc_window_buffer", size, name=f"{wname}_buf")
        for wname, size, _, _ in windows
    }
    world = b.op("world", "dist.world_size")
    stop = world if ranks_to_cover is None else ranks_to_cover
    with b.loop("r", 0, stop) as r:
        for wname, _, shape, dtype in windows:
            values[wname] = b.op(wname, "dist.window", buffers[wname], list(shape), dtype=dtype)
        span = b.span()
        args = [expr(a) for a in (r, *per_rank(b, values, r))]
        b._emit(Eval(make_call("dist.dispatch", args, {"callee": chip.name}, span, type=UNIT), span))
    return host(b)


def row_of(b: FunctionBuilder, tensor: Var, r: Var, cols: int, name: str) -> Var:
    """``tensor[r : r + 1, 0 : cols]`` (a view of the host tensor)."""
    return b.op(name, "tensor.slice", tensor, [r, 0], shape=[1, cols])


__all__ = ["FP32", "INT32", "Mem", "launcher", "tensor_t", "tile_t", "window_t"]
