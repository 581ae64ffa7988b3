"""Building the ``pld.*`` calls: each function of the distributed model checks where it stands
(a HOST function, a kernel, or both), binds its arguments as the manual writes them, and builds its
``dist.*`` op (whose type rule checks the operands).

>>> build_dist(parser, pld.system.notify, [signal], {"peer": p, ...}, node)  # doctest: +SKIP
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.ir import DataType, Eval, Expr, ParseError, ReduceOp, ScalarType, TensorType, TileType, TupleExpr
from pypto.ir.extents import is_symbolic
from pypto.ir.ops import dist, scalar
from pypto.language.builtins import DistBuiltin
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    index_tuple,
    is_number,
    number,
    scalar_expr,
    static_shape,
)

KERNEL_HINT = (
    "put it in a @pl.jit.incore kernel, or inside `with pl.at(level=pl.Level.CORE_GROUP):` of a @pl.jit "
    "chip orchestration"
)
HOST_HINT = (
    "call it in the @pl.jit.host function (or a @pl.function(level=pl.Level.HOST, "
    "role=pl.Role.Orchestrator)), and pass what it gives down to the chip orchestrations"
)


@dataclass
class Build:
    """One ``pld.*`` call being built."""

    parser: Any  # the ExprParser
    ctx: OpContext
    node: ast.Call

    @property
    def host(self) -> bool:
        return bool(self.parser.body.host) and not self.parser.body.on_device

    def op(self, op: str, args: list[Any], attrs: dict[str, Any] | None = None) -> Any:
        return self.ctx.call(op, args, {k: v for k, v in (attrs or {}).items() if v is not None})

    def effect(self, op: str, args: list[Any], attrs: dict[str, Any] | None = None) -> None:
        self.parser.body.emit(Eval(self.op(op, args, attrs), self.ctx.span))

    def scalar(self, value: Any, what: str) -> Expr:
        if isinstance(value, bool) or not (is_number(value) or isinstance(value, Expr)):
            raise self.ctx.fail(
                f"{what} must be an integer scalar, got {describe_value(value)}",
                f"pass {what} as an int or an integer run-time scalar (e.g. a loop index)",
            )
        return scalar_expr(number(value) if is_number(value) else value, DataType.INT32, self.ctx.span)

    def shaped(self, value: Any, what: str) -> Expr:
        if not (isinstance(value, Expr) and isinstance(value.type, (TensorType, TileType))):
            raise self.ctx.fail(
                f"{what} must be a tensor or a tile, got {describe_value(value)}",
                "pass a pld.DistributedTensor parameter (a window) or a tile",
            )
        return self.parser.body.atom(value)

    def offsets(self, value: Any, what: str = "offsets") -> TupleExpr:
        return index_tuple(value, self.ctx.span, what)


# ---------------------------------------------------------------- where each function stands

Where = str  # "host", "kernel", "both"


def _check_where(b: Build, path: str, where: Where) -> None:
    name = b.ctx.name
    body = b.parser.body
    if where == "host" and not b.host:
        inside = " (it stands inside a pl.at scope)" if body.host else ""
        raise b.ctx.fail(f"runs on the host: it belongs in a HOST function{inside}", HOST_HINT)
    if where == "kernel" and not body.on_device:
        place = "a HOST function" if body.host else "an orchestration body, outside pl.at scopes"
        raise b.ctx.fail(f"runs in a kernel on a rank's AIV core, and this is {place}", KERNEL_HINT)
    if where == "both" and not (b.host or body.on_device):
        raise ParseError(
            f"{name} runs in a HOST function or in a kernel, and this is an orchestration body "
            "outside pl.at scopes",
            b.ctx.span,
            KERNEL_HINT,
        )


# ---------------------------------------------------------------- the builders (manual's signatures)


def world_size(b: Build) -> Any:
    return b.op(dist.world_size, [])


def alloc_window_buffer(b: Build, size: Any, *, dtype: Any = None, name: str | None = None) -> Any:
    if name is not None:
        raise b.ctx.fail(
            "name= is taken from the variable the buffer is assigned to: do not pass it",
            "write buf = pld.alloc_window_buffer(...) and drop name=",
        )
    named = {"name": b.parser.body.target_name or ""}
    if isinstance(size, (list, tuple)):
        if not isinstance(dtype, DataType):
            raise b.ctx.fail(
                f"a shape needs dtype=, got {describe_value(dtype)}",
                "write pld.alloc_window_buffer([rows, cols], dtype=pl.FP32)",
            )
        if any(isinstance(d, Expr) and isinstance(d.type, ScalarType) and not is_symbolic(d) for d in size):
            # a run-time extent ([pld.world_size(), 1]): the buffer's bytes, computed when it runs
            nbytes: Any = dtype.get_byte()
            for d in size:
                if is_number(d):
                    nbytes *= number(d)
            for d in size:
                if not is_number(d):
                    extent = b.scalar(d, "an extent of the shape")
                    if not isinstance(nbytes, Expr):  # the constant takes the extent's dtype, as in `n * 4`
                        assert isinstance(extent.type, ScalarType)
                        nbytes = scalar_expr(nbytes, extent.type.dtype, b.ctx.span)
                    nbytes = b.op(scalar.mul, [extent, nbytes])
            return b.op(dist.alloc_window_buffer, [b.scalar(nbytes, "the size in bytes")], named)
        shape = static_shape(size, b.ctx.span, "the shape", dynamic=True)
        return b.op(dist.alloc_window_buffer, [], {"shape": shape, "dtype": dtype, **named})
    if dtype is not None:
        raise b.ctx.fail(
            "dtype= goes with a shape; a size is a number of bytes",
            "write pld.alloc_window_buffer(nbytes) or pld.alloc_window_buffer([rows, cols], dtype=pl.FP32)",
        )
    return b.op(dist.alloc_window_buffer, [b.scalar(size, "the size in bytes")], named)


def window(b: Build, buf: Any, shape: Any, *, dtype: Any, offset: int = 0) -> Any:
    if not isinstance(dtype, DataType):
        raise b.ctx.fail(f"dtype= must be a dtype, got {describe_value(dtype)}", "e.g. dtype=pl.FP32")
    return b.op(dist.window, [buf, b.offsets(shape, "shape")], {"dtype": dtype, "offset": offset})


def get_comm_ctx(b: Build, dist_tensor: Any) -> Any:
    return b.op(dist.get_comm_ctx, [b.shaped(dist_tensor, "the tensor")])


def rank(b: Build, ctx: Any) -> Any:
    return b.op(dist.rank, [ctx])


def nranks(b: Build, ctx: Any) -> Any:
    return b.op(dist.nranks, [ctx])


def notify(b: Build, target: Any, peer: Any, offsets: Any, value: Any, *, op: Any) -> None:
    args = [
        b.shaped(target, "the target"),
        b.scalar(peer, "peer"),
        b.offsets(offsets),
        b.scalar(value, "value"),
    ]
    b.effect(dist.notify, args, {"op": op})


def wait(b: Build, signal: Any, offsets: Any, expected: Any, *, cmp: Any = None) -> None:
    args = [b.shaped(signal, "the signal"), b.offsets(offsets), b.scalar(expected, "expected")]
    b.effect(dist.wait, args, {"cmp": cmp})


def defer_wait(b: Build, signal: Any, offsets: Any, expected: Any, *, cmp: Any = None) -> None:
    body = b.parser.body
    if body.kernel or not body.in_scope:
        raise b.ctx.fail(
            "registers a completion condition of a dedicated pl.at task; a kernel called directly "
            "bypasses the checks that task gets",
            "put it in its own `with pl.at(level=pl.Level.CORE_GROUP) as wait_tid:` scope of a @pl.jit "
            "function, and make the consumers depend on wait_tid",
        )
    if body.block_num > 1:
        raise b.ctx.fail(
            "a deferred wait runs in a single-block task, and this scope is launched on several blocks",
            "move it out of the pl.spmd loop into its own pl.at scope",
        )
    args = [b.shaped(signal, "the signal"), b.offsets(offsets), b.scalar(expected, "expected")]
    b.effect(dist.defer_wait, args, {"cmp": cmp})


def remote_load(b: Build, target: Any, peer: Any, offsets: Any, shape: Any, valid_shape: Any = None) -> Any:
    args = [b.shaped(target, "the target"), b.scalar(peer, "peer"), b.offsets(offsets)]
    if valid_shape is not None:
        args.append(b.offsets(valid_shape, "valid_shape"))
    return b.op(dist.remote_load, args, {"shape": static_shape(shape, b.ctx.span)})


def _stored(b: Build, op: str, src: Any, target: Any, peer: Any, offsets: Any, atomic: Any) -> None:
    args = [b.shaped(src, "the source"), b.shaped(target, "the target"), b.scalar(peer, "peer")]
    b.effect(op, [*args, b.offsets(offsets)], {"atomic": atomic})


def tile_remote_store(
    b: Build, src_tile: Any, target: Any, peer: Any, offsets: Any, *, atomic: Any = None
) -> None:
    _stored(b, dist.remote_store, src_tile, target, peer, offsets, atomic)


def tensor_remote_store(
    b: Build, src: Any, target: Any, peer: Any, offsets: Any, *, atomic: Any = None
) -> None:
    _stored(b, dist.tensor_remote_store, src, target, peer, offsets, atomic)


def remote_store(b: Build, src: Any, target: Any, peer: Any, offsets: Any, *, atomic: Any = None) -> None:
    """The short form: a tile source is the tile op, a tensor source the tensor op."""
    value = b.shaped(src, "the source")
    op = dist.remote_store if isinstance(value.type, TileType) else dist.tensor_remote_store
    _stored(b, op, value, target, peer, offsets, atomic)


def _region_operands(b: Build, dst: Any, src: Any, dst_offsets: Any, src_offsets: Any) -> list[Any]:
    """The optional offsets of put / get: both, or the given one and zeros for the other."""
    if dst_offsets is None and src_offsets is None:
        return []
    zeros = lambda t: [0] * len(t.type.shape)  # noqa: E731
    return [
        b.offsets(dst_offsets if dst_offsets is not None else zeros(dst), "dst_offsets"),
        b.offsets(src_offsets if src_offsets is not None else zeros(src), "src_offsets"),
    ]


def _transfer_attrs(b: Build, shape: Any, chunk_rows: Any, chunk_cols: Any, pipeline: Any) -> dict[str, Any]:
    return {
        "shape": None if shape is None else static_shape(shape, b.ctx.span, dynamic=True),
        "chunk_rows": chunk_rows,
        "chunk_cols": chunk_cols,
        "pipeline": pipeline,
    }


def put(
    b: Build,
    dst: Any,
    peer: Any,
    src: Any,
    dst_offsets: Any = None,
    src_offsets: Any = None,
    shape: Any = None,
    *,
    atomic: Any = None,
    chunk_rows: int = 0,
    chunk_cols: int = 0,
    pipeline: bool = False,
) -> None:
    dst, src = b.shaped(dst, "dst"), b.shaped(src, "src")
    args = [dst, b.scalar(peer, "peer"), src, *_region_operands(b, dst, src, dst_offsets, src_offsets)]
    b.effect(
        dist.put, args, {**_transfer_attrs(b, shape, chunk_rows, chunk_cols, pipeline), "atomic": atomic}
    )


def get(
    b: Build,
    dst: Any,
    peer: Any,
    src: Any,
    dst_offsets: Any = None,
    src_offsets: Any = None,
    shape: Any = None,
    *,
    chunk_rows: int = 0,
    chunk_cols: int = 0,
    pipeline: bool = False,
) -> None:
    dst, src = b.shaped(dst, "dst"), b.shaped(src, "src")
    args = [dst, b.scalar(peer, "peer"), src, *_region_operands(b, dst, src, dst_offsets, src_offsets)]
    b.effect(dist.get, args, _transfer_attrs(b, shape, chunk_rows, chunk_cols, pipeline))


def allreduce(
    b: Build, target: Any, signal: Any = None, *, op: Any = None, mode: Any = None, core_num: Any = None
) -> Any:
    args = [b.shaped(target, "the target")]
    if signal is None and not b.host:
        raise b.ctx.fail(
            "in a kernel it takes the signal window explicitly (only a HOST function's allreduce has "
            "one made for it)",
            "pass a [world_size, 1] INT32 window: pld.tensor.allreduce(data, signal, op=...)",
        )
    if signal is not None:
        args.append(b.shaped(signal, "the signal"))
    if core_num not in (None, 1) and not b.host:
        raise b.ctx.fail(
            "core_num= spreads a HOST allreduce over several cores; a kernel keeps core_num=1",
            "leave core_num out, and launch the kernel with pl.spmd(...) for more cores",
        )
    if signal is None and bool(getattr(b.parser, "loops", None)):
        raise b.ctx.fail(
            "makes its own signal window only outside loops",
            "allocate a signal window before the loop and pass it: pld.tensor.allreduce(data, signal)",
        )
    call = b.op(dist.allreduce, args, {"op": op, "mode": mode, "core_num": core_num})
    dtype = call.type.dtype
    if (mode or "mesh") == "mesh" and dtype not in (DataType.FP16, DataType.FP32):
        raise b.ctx.fail(
            f'mode="mesh" reduces pl.FP16 or pl.FP32 windows, got pl.{dtype.name}',
            'convert the data to pl.FP32 first, or use mode="ring" in a kernel',
        )
    if mode == "ring" and b.host and (dtype is not DataType.FP32 or op not in (None, ReduceOp.Sum)):
        raise b.ctx.fail(
            "the HOST ring allreduce sums pl.FP32 windows only",
            'use op=pld.ReduceOp.Sum on a pl.FP32 window, mode="mesh", or the ring inside a kernel',
        )
    return call


def _host_fp32(b: Build, call: Any) -> Any:
    """The HOST builtins of allgather, reduce_scatter, broadcast and all_to_all move FP32 only."""
    if b.host and call.type.dtype is not DataType.FP32:
        raise b.ctx.fail(
            f"the HOST builtin moves pl.FP32 windows only, got pl.{call.type.dtype.name}",
            "use a pl.FP32 window, or call it inside a kernel (any dtype there)",
        )
    return call


def barrier(b: Build, signal: Any) -> Any:
    return b.op(dist.barrier, [b.shaped(signal, "the signal")])


def broadcast(b: Build, target: Any, signal: Any, *, root: Any = 0) -> Any:
    if isinstance(root, bool) or not isinstance(number(root) if is_number(root) else root, int):
        raise b.ctx.fail(
            f"root= is a rank index known at compile time, got {describe_value(root)}", "e.g. root=0"
        )
    args = [b.shaped(target, "the target"), b.shaped(signal, "the signal")]
    return _host_fp32(b, b.op(dist.broadcast, args, {"root": number(root)}))


def allgather(b: Build, local: Any, target: Any, signal: Any) -> Any:
    args = [
        b.shaped(local, "the local chunk"),
        b.shaped(target, "the target"),
        b.shaped(signal, "the signal"),
    ]
    return _host_fp32(b, b.op(dist.allgather, args))


def reduce_scatter(b: Build, target: Any, signal: Any, *, op: Any = None) -> Any:
    args = [b.shaped(target, "the target"), b.shaped(signal, "the signal")]
    return _host_fp32(b, b.op(dist.reduce_scatter, args, {"op": op}))


def all_to_all(b: Build, input: Any, target: Any, signal: Any) -> Any:
    args = [b.shaped(input, "the input"), b.shaped(target, "the target"), b.shaped(signal, "the signal")]
    return _host_fp32(b, b.op(dist.all_to_all, args))


# path -> (builder, where it may stand)
BUILDERS: dict[str, tuple[Callable[..., Any], Where]] = {
    "system.world_size": (world_size, "host"),
    "system.get_comm_ctx": (get_comm_ctx, "both"),
    "system.rank": (rank, "kernel"),
    "system.nranks": (nranks, "kernel"),
    "system.notify": (notify, "kernel"),
    "system.wait": (wait, "kernel"),
    "system.defer_wait": (defer_wait, "kernel"),
    "tensor.alloc_window_buffer": (alloc_window_buffer, "host"),
    "tensor.window": (window, "host"),
    "tensor.remote_store": (tensor_remote_store, "kernel"),
    "tile.remote_store": (tile_remote_store, "kernel"),
    "remote_store": (remote_store, "kernel"),
    "tile.remote_load": (remote_load, "kernel"),
    "tensor.put": (put, "kernel"),
    "tensor.get": (get, "kernel"),
    "tensor.allreduce": (allreduce, "both"),
    "tensor.barrier": (barrier, "both"),
    "tensor.broadcast": (broadcast, "both"),
    "tensor.allgather": (allgather, "both"),
    "tensor.reduce_scatter": (reduce_scatter, "both"),
    "tensor.all_to_all": (all_to_all, "both"),
}


def _signature(builder: Callable[..., Any]) -> inspect.Signature:
    params = list(inspect.signature(builder).parameters.values())[1:]
    return inspect.Signature(params)


def build_dist(
    parser: Any, callee: DistBuiltin, args: list[Any], kwargs: dict[str, Any], node: ast.Call
) -> Any:
    """Build the ``pld.*`` call ``callee(*args, **kwargs)`` at ``node``."""
    builder, where = BUILDERS[callee.path]
    ctx = OpContext(parser.body, parser.span(node), callee.dsl_name)
    b = Build(parser, ctx, node)
    _check_where(b, callee.path, where)
    signature = _signature(builder)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        shown = str(signature).replace("'", "")
        raise ParseError(
            f"{callee.dsl_name}(): {exc}", ctx.span, f"signature: {callee.dsl_name}{shown}"
        ) from None
    return builder(b, *bound.args, **bound.kwargs)
