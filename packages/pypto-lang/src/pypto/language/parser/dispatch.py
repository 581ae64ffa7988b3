"""What a HOST function calls: a ``@pl.jit`` chip orchestration on one rank
(``per_rank(x[r], y[r], r, device=r)``, a ``dist.dispatch``), and the per-rank piece ``x[r]`` of a
host tensor whose leading dim counts the ranks.

A HOST function dispatches chip orchestrations only: an ``@pl.jit.incore`` kernel is launched by
the chip orchestration that wraps it, never by the host directly (the manual's rule).
"""

from __future__ import annotations

import ast
from typing import Any

from pypto.ir import DataType, Eval, Expr, Function, ParseError, TensorType, make_call
from pypto.ir.extents import ExtentBinding
from pypto.ir.ops import dist, tensor
from pypto.language.kernel import JitKind, KernelFunction
from pypto.language.parser.calls import (
    KernelFor,
    bind_arguments,
    bind_param,
    check_call_extents,
    returned_params,
)
from pypto.language.parser.signature import signature_of
from pypto.language.parser.values import describe_value, index_tuple, is_number, number, scalar_expr

_MISSING = object()


def host_call(
    parser: Any,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    kernel_for: KernelFor,
) -> Any:
    """``chip(args..., device=r)`` in a HOST function: one ``dist.dispatch`` of ``chip``'s
    function (parsed, with its kernels, for these arguments) on rank ``r``."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", _MISSING)
    if not parser.body.host:
        raise parser.error(
            node,
            f"{callee.name}(..., device=...) runs a chip orchestration on a rank, which only a HOST "
            "function does",
            "dispatch from a @pl.jit.host function (for r in pl.range(pld.world_size()): "
            f"{callee.name}(..., device=r)), or drop device= to call it here",
        )
    if parser.body.on_device:
        raise parser.error(
            node,
            f"{callee.name}() is dispatched from the host, not from inside a pl.at scope",
            "move the call out of the `with pl.at(...)` block",
        )
    _check_dispatchable(parser, callee, node)
    # No device=: the chip of a one-chip world (rank 0), as a HOST function without a rank loop.
    device = 0 if device is _MISSING else device
    return dispatch(parser, callee, args, kwargs, node, kernel_for, device_index(parser, device, node))


def _check_dispatchable(parser: Any, callee: KernelFunction, node: ast.Call) -> None:
    if callee.kind is JitKind.incore:
        raise parser.error(
            node,
            f"{callee.name}() is an @pl.jit.incore kernel: a HOST function dispatches a @pl.jit chip "
            "orchestration, which launches the kernel on its rank",
            f"wrap it: @pl.jit def per_rank(...): return {callee.name}(...); then dispatch "
            "per_rank(..., device=r)",
        )
    if callee.kind is not JitKind.entry and callee.kind is not JitKind.function:
        raise parser.error(
            node,
            f"{callee.name}() is {callee.kind.value}: a HOST function dispatches @pl.jit chip orchestrations",
            f"make {callee.name} a @pl.jit function and dispatch it with device=r",
        )


def device_index(parser: Any, device: Any, node: ast.Call) -> Expr:
    """The rank index ``device=`` names: an integer (>= 0 where known here)."""
    span = parser.span(node)
    if isinstance(device, bool) or not (is_number(device) or isinstance(device, Expr)):
        raise ParseError(
            f"device= is a rank index, got {describe_value(device)}",
            span,
            "write device=r, r the variable of `for r in pl.range(pld.world_size())`",
        )
    if is_number(device) and (not isinstance(number(device), int) or number(device) < 0):
        raise ParseError(
            f"device= is a rank index >= 0, got {number(device)!r}",
            span,
            "the ranks are 0 .. pld.world_size() - 1",
        )
    value = scalar_expr(number(device) if is_number(device) else device, DataType.INDEX, span)
    if not value.type.dtype.is_integer:  # type: ignore[attr-defined]
        raise ParseError(f"device= is a rank index, got {describe_value(device)}", span, "pass an integer")
    return value


def dispatch(
    parser: Any,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    kernel_for: KernelFor,
    device: Expr,
) -> Any:
    """Bind the arguments to ``callee``'s parameters, get its function, emit the dispatch; the
    value is the tensor(s) passed for the parameters the callee returns."""
    values = bind_arguments(parser, callee, args, kwargs, node)
    bound, call_args = [], []
    extents = ExtentBinding()
    for sig in signature_of(callee):
        param, arg = bind_param(parser, callee, sig, values[sig.name], node, extents)
        bound.append(param)
        call_args.append(arg)
    check_call_extents(parser, callee, extents, node)
    fn = kernel_for(callee, tuple(bound))
    return emit_dispatch(parser, fn, device, call_args, parser.span(node))


def emit_dispatch(parser: Any, fn: Function, device: Expr, call_args: list[Any], span: Any) -> Any:
    returned, result_type = returned_params(fn)
    call = make_call(dist.dispatch, [device, *call_args], {"callee": fn.name}, span, type=result_type)
    parser.body.emit(Eval(call, span))
    aliases = tuple(call_args[i] for i in returned)
    return None if not aliases else aliases[0] if len(aliases) == 1 else aliases


def host_index(parser: Any, base: Expr, node: ast.Subscript, dims: list[ast.expr]) -> Expr:
    """``x[r]`` (or ``x[r, :, 0:4]``) in a HOST function: the region at index ``r`` of each indexed
    dim, without those dims (a view of the host tensor: ``tensor.slice`` then ``tensor.reshape``)."""
    t = base.type
    assert isinstance(t, TensorType)
    span = parser.span(node)
    offsets: list[Any] = []
    extents: list[Any] = []
    kept: list[Any] = []
    for dim, full in zip([*dims, *([None] * (len(t.shape) - len(dims)))], t.shape, strict=True):
        if dim is None:
            offsets.append(0)
            extents.append(full)
            kept.append(full)
        elif isinstance(dim, ast.Slice):
            start, extent = parser.slice_bounds(dim, full)
            offsets.append(start)
            extents.append(extent)
            kept.append(extent)
        else:
            index = parser.expr(dim)
            if isinstance(index, bool) or not (is_number(index) or isinstance(index, Expr)):
                raise parser.error(
                    dim, f"an index must be an integer, got {describe_value(index)}", "e.g. x[r]"
                )
            if is_number(index) and isinstance(full, int) and not 0 <= number(index) < full:
                raise parser.error(
                    dim, f"index {number(index)} is outside a dim of {full}", f"index from 0 to {full - 1}"
                )
            offsets.append(index)
            extents.append(1)
    if not kept:
        raise parser.error(
            node,
            "a HOST function passes tensors (the per-rank piece x[r]), not single elements",
            "index fewer dims, e.g. x[r]",
        )
    ctx = parser.op_context(node, ast.unparse(node))
    view = ctx.call(tensor.slice, [base, index_tuple(offsets, span, "offset")], {"shape": tuple(extents)})
    view = parser.body.atom(view)
    return parser.body.atom(ctx.call(tensor.reshape, [view], {"shape": tuple(kept)}))
