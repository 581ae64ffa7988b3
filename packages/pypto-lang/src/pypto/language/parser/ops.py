"""Op builders: one function per DSL op, with the op's DSL signature after the ``OpContext``.

``pl.<op>`` dispatches on the operand kind: tensors -> ``tensor.X``, tiles -> ``tile.X``, a
scalar right operand -> ``Xs``, scalars on both sides -> scalar arithmetic.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pypto.ir import DataType, MemorySpace, ParseError
from pypto.language.builtins import BUILTIN_DOCS
from pypto.language.parser.arith import SCALAR_UNARY, scalar_binary, scalar_unary
from pypto.language.parser.crosscore import CROSS_CORE_BUILDERS
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, index_tuple, is_scalar, scalar_expr, static_shape

COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})
CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")

Builder = Callable[..., Any]


def _binary(name: str) -> Builder:
    def build(ctx: OpContext, lhs: Any, rhs: Any) -> Any:
        if is_scalar(lhs) and is_scalar(rhs):
            return scalar_binary(ctx, name, lhs, rhs)
        if is_scalar(lhs):
            if name not in COMMUTATIVE:
                raise ctx.fail(
                    "the scalar form takes the scalar as the right operand",
                    f"rewrite it with the tensor or tile on the left of pl.{name}",
                )
            lhs, rhs = rhs, lhs
        x = ctx.shaped(lhs, "left operand")
        level = ctx.level_of(x)
        if is_scalar(rhs):
            return ctx.call(f"{level}.{name}s", [x, scalar_expr(rhs, x.type.dtype, ctx.span)])
        return ctx.call(f"{level}.{name}", [x, ctx.shaped(rhs, "right operand")])

    return build


def _unary(name: str) -> Builder:
    def build(ctx: OpContext, x: Any) -> Any:
        if is_scalar(x):
            return scalar_unary(ctx, name, x)
        x = ctx.shaped(x)
        return ctx.call(f"{ctx.level_of(x)}.{name}", [x])

    return build


def build_cast(ctx: OpContext, x: Any, dtype: Any, mode: str = "round") -> Any:
    if not isinstance(dtype, DataType):
        raise ctx.fail(f"dtype must be a pl dtype such as pl.FP32, got {describe_value(dtype)}")
    if mode not in CAST_MODES:
        raise ctx.fail(f"unknown rounding mode {mode!r}", f"use one of {', '.join(CAST_MODES)}")
    attrs = {"dtype": dtype, "mode": mode}
    if is_scalar(x):
        return ctx.call("scalar.cast", [scalar_expr(x, None, ctx.span)], attrs)
    x = ctx.shaped(x)
    return ctx.call(f"{ctx.level_of(x)}.cast", [x], attrs)


def build_concat(ctx: OpContext, a: Any, b: Any) -> Any:
    a = ctx.shaped(a, "first operand")
    return ctx.call(f"{ctx.level_of(a)}.concat", [a, ctx.shaped(b, "second operand")])


def build_matmul(
    ctx: OpContext,
    a: Any,
    b: Any,
    out_dtype: DataType | None = None,
    a_trans: bool = False,
    b_trans: bool = False,
) -> Any:
    a = ctx.shaped(a, "left operand")
    if out_dtype is not None and not isinstance(out_dtype, DataType):
        raise ctx.fail(f"out_dtype must be a pl dtype, got {describe_value(out_dtype)}")
    attrs: dict[str, Any] = {"out_dtype": out_dtype} if out_dtype is not None else {}
    attrs.update({k: True for k, v in (("a_trans", a_trans), ("b_trans", b_trans)) if v})
    return ctx.call(f"{ctx.level_of(a)}.matmul", [a, ctx.shaped(b, "right operand")], attrs)


def build_matmul_acc(ctx: OpContext, acc: Any, a: Any, b: Any) -> Any:
    return ctx.call("tile.matmul_acc", [ctx.tile(acc, "acc"), ctx.tile(a, "a"), ctx.tile(b, "b")])


def _memory(ctx: OpContext, value: Any) -> MemorySpace:
    if not isinstance(value, MemorySpace):
        raise ctx.fail(f"target_memory must be a pl.Mem member, got {describe_value(value)}")
    return value


def build_load(
    ctx: OpContext,
    tensor: Any,
    offsets: Any,
    shape: Any,
    target_memory: Any = MemorySpace.Vec,
    valid_shape: Any = None,
) -> Any:
    attrs: dict[str, Any] = {
        "shape": static_shape(shape, ctx.span),
        "target_memory": _memory(ctx, target_memory),
    }
    if valid_shape is not None:
        attrs["valid_shape"] = static_shape(valid_shape, ctx.span, "valid_shape")
    return ctx.call("tile.load", [ctx.tensor(tensor, "source"), index_tuple(offsets, ctx.span)], attrs)


def build_store(ctx: OpContext, tile: Any, offsets: Any, tensor: Any) -> Any:
    dst = ctx.tensor(tensor, "destination")
    args = [ctx.tile(tile, "value"), index_tuple(offsets, ctx.span), dst]
    return ctx.effect("tile.store", args, None, dst)


def build_assemble(ctx: OpContext, target: Any, value: Any, offsets: Any) -> Any:
    dst = ctx.tensor(target, "target")
    args = [dst, ctx.shaped(value, "value"), index_tuple(offsets, ctx.span)]
    return ctx.effect("tensor.assemble", args, None, dst)


def build_read(ctx: OpContext, tensor: Any, offsets: Any) -> Any:
    return ctx.call("scalar.read", [ctx.tensor(tensor, "source"), index_tuple(offsets, ctx.span)])


def build_gather_row(
    ctx: OpContext, dst_tile: Any, src_tensor: Any, dst_offset: Any, src_offset: Any, shape: Any
) -> Any:
    """Destination-passing: the row lands in ``dst_tile``, which is also the expression's value."""
    dst = ctx.body.atom(ctx.tile(dst_tile, "destination"))
    args = [
        dst,
        ctx.tensor(src_tensor, "source"),
        index_tuple(dst_offset, ctx.span, "dst_offset"),
        index_tuple(src_offset, ctx.span, "src_offset"),
    ]
    return ctx.effect("tile.gather_row", args, {"shape": static_shape(shape, ctx.span)}, dst)


def build_move(ctx: OpContext, tile: Any, target_memory: Any) -> Any:
    return ctx.call("tile.move", [ctx.tile(tile, "source")], {"target_memory": _memory(ctx, target_memory)})


def build_create_tile(ctx: OpContext, shape: Any, dtype: Any, target_memory: Any = MemorySpace.Vec) -> Any:
    if not isinstance(dtype, DataType):
        raise ctx.fail(f"dtype must be a pl dtype, got {describe_value(dtype)}")
    attrs = {
        "shape": static_shape(shape, ctx.span),
        "dtype": dtype,
        "target_memory": _memory(ctx, target_memory),
    }
    return ctx.call("tile.create", [], attrs)


def build_create_tensor(ctx: OpContext, shape: Any, dtype: Any) -> Any:
    if not isinstance(dtype, DataType):
        raise ctx.fail(f"dtype must be a pl dtype, got {describe_value(dtype)}")
    return ctx.call("tensor.create", [], {"shape": static_shape(shape, ctx.span), "dtype": dtype})


BUILDERS: dict[str, Builder] = {
    **{name: _binary(name) for name in ("add", "sub", "mul", "div", "maximum", "minimum")},
    **{name: _unary(name) for name in SCALAR_UNARY},
    "cast": build_cast,
    "concat": build_concat,
    "matmul": build_matmul,
    "matmul_acc": build_matmul_acc,
    "load": build_load,
    "store": build_store,
    "assemble": build_assemble,
    "move": build_move,
    "create_tile": build_create_tile,
    "create_tensor": build_create_tensor,
    "read": build_read,
    "gather_row": build_gather_row,
    **CROSS_CORE_BUILDERS,
}


def build_op(ctx: OpContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Bind ``args``/``kwargs`` to the op's DSL signature and build it.

    >>> build_op(ctx, "add", [a, b], {})  # doctest: +SKIP
    """
    builder = BUILDERS[name]
    try:
        bound = inspect.signature(builder).bind(ctx, *args, **kwargs)
    except TypeError as exc:
        raise ParseError(f"{ctx.name}(): {exc}", ctx.span, f"signature: pl.{BUILTIN_DOCS[name][0]}") from None
    return builder(*bound.args, **bound.kwargs)
