"""Op builders: one function per DSL op, with the op's DSL signature after the ``OpContext``.

``pl.<op>`` dispatches on the operand kind: tensors -> ``tensor.X``, tiles -> ``tile.X``, a
scalar right operand -> ``Xs``, scalars on both sides -> scalar arithmetic.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pypto.ir import AtomicType, CastMode, DataType, Expr, MemorySpace, PadValue, ParseError
from pypto.ir.ops import COL_EXPANDS, COL_REDUCTIONS, PAD_VALUES, ROW_EXPANDS, ROW_REDUCTIONS
from pypto.language.annotations import dtype_hint
from pypto.language.parser.arith import SCALAR_UNARY, scalar_binary, scalar_unary
from pypto.language.parser.crosscore import CROSS_CORE_BUILDERS
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    element_dtype,
    index_tuple,
    is_number,
    is_scalar,
    is_tile,
    scalar_expr,
    static_shape,
    tile_scalar,
)

COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})
# How to write ``c - x`` and ``c / x`` with the scalar c on the right.
SCALAR_LEFT = {
    "sub": "write c - x as pl.add(pl.neg(x), c)",
    "div": "write c / x as pl.mul(pl.recip(x), c)",
}
# The memory spaces a tile can be made in (DDR is global memory, where tensors live).
TILE_SPACES = ", ".join(repr(m) for m in MemorySpace if m is not MemorySpace.DDR)

Builder = Callable[..., Any]


def _binary(name: str) -> Builder:
    def build(ctx: OpContext, lhs: Any, rhs: Any) -> Any:
        if is_scalar(lhs) and is_scalar(rhs):
            return scalar_binary(ctx, name, lhs, rhs)
        if is_scalar(lhs):
            if name not in COMMUTATIVE:
                raise ctx.fail("the scalar form takes the scalar as the right operand", SCALAR_LEFT[name])
            lhs, rhs = rhs, lhs
        x = ctx.shaped(lhs, "left operand")
        level = ctx.level_of(x)
        if is_scalar(rhs):
            return ctx.call(f"{level}.{name}s", [x, tile_scalar(rhs, element_dtype(x), ctx.span)])
        return ctx.call(f"{level}.{name}", [x, ctx.shaped(rhs, "right operand")])

    return build


def _unary(name: str) -> Builder:
    def build(ctx: OpContext, x: Any) -> Any:
        if is_scalar(x):
            return scalar_unary(ctx, name, x)
        x = ctx.shaped(x)
        return ctx.call(f"{ctx.level_of(x)}.{name}", [x])

    return build


def build_cast(ctx: OpContext, x: Any, dtype: Any, mode: Any = CastMode.round) -> Any:
    if not isinstance(dtype, DataType):
        raise ctx.fail(
            f"dtype must be a pl dtype such as pl.FP32, got {describe_value(dtype)}", dtype_hint(dtype)
        )
    attrs = {"dtype": dtype, "mode": cast_mode(ctx, mode)}
    if is_scalar(x):
        return ctx.call("scalar.cast", [scalar_expr(x, None, ctx.span)], attrs)
    x = ctx.shaped(x)
    return ctx.call(f"{ctx.level_of(x)}.cast", [x], attrs)


def cast_mode(ctx: OpContext, mode: Any) -> CastMode:
    """``mode=`` of ``pl.cast``: a ``pl.CastMode`` or its name (``"rint"``)."""
    if isinstance(mode, CastMode):
        return mode
    try:
        return CastMode(mode)
    except ValueError:
        names = ", ".join(repr(m.value) for m in CastMode)
        raise ctx.fail(
            f"unknown rounding mode {describe_value(mode)}",
            f"use one of {names} (or pl.CastMode.<name>); float -> float casts round to nearest even",
        ) from None


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
        raise ctx.fail(
            f"out_dtype must be a pl dtype, got {describe_value(out_dtype)}",
            f"{dtype_hint(out_dtype)}; leave it out for FP32 (INT32 for integer operands)",
        )
    attrs: dict[str, Any] = {"out_dtype": out_dtype} if out_dtype is not None else {}
    attrs.update({k: True for k, v in (("a_trans", a_trans), ("b_trans", b_trans)) if v})
    return ctx.call(f"{ctx.level_of(a)}.matmul", [a, ctx.shaped(b, "right operand")], attrs)


def build_matmul_acc(ctx: OpContext, acc: Any, a: Any, b: Any) -> Any:
    """``acc + a @ b``: on tensors (the compiler tiles it), or on Acc x Left x Right tiles."""
    acc = ctx.shaped(acc, "acc")
    return ctx.call(f"{ctx.level_of(acc)}.matmul_acc", [acc, ctx.shaped(a, "a"), ctx.shaped(b, "b")])


def _row_reduction(name: str) -> Builder:
    def build(ctx: OpContext, x: Any, tmp: Any = None) -> Any:
        # On tiles the scratch tile is required, on tensors refused: the op table says which.
        x = ctx.shaped(x)
        args = [x] if tmp is None else [x, ctx.shaped(tmp, "tmp")]
        return ctx.call(f"{ctx.level_of(x)}.{name}", args)

    return build


def _col_reduction(name: str) -> Builder:
    def build(ctx: OpContext, x: Any) -> Any:
        x = ctx.shaped(x)
        return ctx.call(f"{ctx.level_of(x)}.{name}", [x])

    return build


def _row_expand(name: str) -> Builder:
    def build(ctx: OpContext, x: Any, row_vec: Any) -> Any:
        x = ctx.shaped(x)
        return ctx.call(f"{ctx.level_of(x)}.{name}", [x, ctx.shaped(row_vec, "row_vec")])

    return build


def _col_expand(name: str) -> Builder:
    def build(ctx: OpContext, x: Any, col_vec: Any) -> Any:
        x = ctx.shaped(x)
        return ctx.call(f"{ctx.level_of(x)}.{name}", [x, ctx.shaped(col_vec, "col_vec")])

    return build


def build_reshape(ctx: OpContext, x: Any, shape: Any) -> Any:
    x = ctx.shaped(x)
    return ctx.call(f"{ctx.level_of(x)}.reshape", [x], {"shape": static_shape(shape, ctx.span)})


def build_slice(ctx: OpContext, x: Any, shape: Any, offset: Any) -> Any:
    """A sub-tensor (a view the compiler loads from) or a sub-tile; offsets may be run-time."""
    x = ctx.shaped(x)
    args = [x, index_tuple(offset, ctx.span, "offset")]
    return ctx.call(f"{ctx.level_of(x)}.slice", args, {"shape": static_shape(shape, ctx.span)})


def build_fillpad(ctx: OpContext, x: Any, pad_value: Any = PadValue.zero) -> Any:
    """Fill the tile outside its valid shape (static, or run-time from its load)."""
    tile = ctx.tile(x, "the padded value")
    if not isinstance(pad_value, PadValue):
        raise ctx.fail(
            f"pad_value must be pl.PadValue.zero, min or max, got {describe_value(pad_value)}",
            f"write pad_value= one of {PAD_VALUES}",
        )
    valid = ctx.valid_of(tile)
    args = [tile] if valid is None else [tile, valid]
    return ctx.call("tile.fillpad", args, {"pad_value": pad_value})


def build_full(ctx: OpContext, shape: Any, dtype: Any, value: Any) -> Any:
    """A Vec tile of ``shape`` holding ``value`` (a number or a run-time scalar) everywhere."""
    if not isinstance(dtype, DataType):
        raise ctx.fail(f"dtype must be a pl dtype, got {describe_value(dtype)}", dtype_hint(dtype))
    if not is_scalar(value):
        raise ctx.fail(
            f"the fill value must be a scalar, got {describe_value(value)}",
            f"fill with a number or a run-time scalar: pl.full(shape, pl.{dtype.name}, 0)",
        )
    attrs = {"shape": static_shape(shape, ctx.span), "dtype": dtype}
    return ctx.call("tile.full", [tile_scalar(value, dtype, ctx.span)], attrs)


def _memory(ctx: OpContext, value: Any) -> MemorySpace:
    if not isinstance(value, MemorySpace):
        hint = f"write target_memory= one of {TILE_SPACES}"
        if isinstance(value, str) and value in MemorySpace.__members__:
            hint = f"write target_memory=pl.Mem.{value}, not the string {value!r}"
        raise ctx.fail(f"target_memory must be a pl.Mem member, got {describe_value(value)}", hint)
    return value


def build_load(
    ctx: OpContext,
    tensor: Any,
    offsets: Any,
    shape: Any,
    target_memory: Any = MemorySpace.Vec,
    valid_shape: Any = None,
) -> Any:
    """A tile of ``shape``; a ``valid_shape`` with run-time entries makes a ``tile.load_partial``."""
    attrs: dict[str, Any] = {
        "shape": static_shape(shape, ctx.span),
        "target_memory": _memory(ctx, target_memory),
    }
    args = [ctx.tensor(tensor, "source"), index_tuple(offsets, ctx.span)]
    if valid_shape is not None and _run_time(valid_shape):
        return ctx.call(
            "tile.load_partial", [*args, index_tuple(valid_shape, ctx.span, "valid_shape")], attrs
        )
    if valid_shape is not None:
        attrs["valid_shape"] = static_shape(valid_shape, ctx.span, "valid_shape")
    return ctx.call("tile.load", args, attrs)


def _run_time(values: Any) -> bool:
    return isinstance(values, (list, tuple)) and any(not is_number(v) for v in values)


def build_store(ctx: OpContext, tile: Any, offsets: Any, tensor: Any) -> Any:
    dst = ctx.tensor(tensor, "destination")
    return _store(ctx, ctx.tile(tile, "value"), index_tuple(offsets, ctx.span), dst, AtomicType.NONE)


def _store(ctx: OpContext, tile: Expr, offsets: Expr, dst: Expr, atomic: AtomicType) -> Any:
    """A tile written into ``dst`` (added to it when atomic), honouring a run-time valid shape."""
    valid = ctx.valid_of(tile)
    extra = [] if valid is None else [valid]
    if atomic is not AtomicType.NONE:
        return ctx.effect("tile.store_atomic", [tile, offsets, dst, *extra], {"atomic": atomic}, dst)
    op = "tile.store" if valid is None else "tile.store_partial"
    return ctx.effect(op, [tile, offsets, dst, *extra], None, dst)


def build_assemble(
    ctx: OpContext, target: Any, value: Any, offsets: Any, atomic: Any = AtomicType.NONE
) -> Any:
    """``value`` written into a region of ``target``: a tensor (added in when atomic), or a tile."""
    if not isinstance(atomic, AtomicType):
        raise ctx.fail(
            f"atomic must be a pl.AtomicType such as pl.AtomicType.Add, got {describe_value(atomic)}",
            "write atomic=pl.AtomicType.Add to add into the target, or leave it out to overwrite",
        )
    if ctx.level == "tile" or (ctx.level is None and is_tile(target)):
        return _assemble_tile(ctx, target, value, offsets, atomic)
    dst = ctx.tensor(target, "target")
    value = ctx.shaped(value, "value")
    starts = index_tuple(offsets, ctx.span)
    if is_tile(value) and (atomic is not AtomicType.NONE or ctx.valid_of(value) is not None):
        return _store(ctx, value, starts, dst, atomic)
    attrs = {} if atomic is AtomicType.NONE else {"atomic": atomic}
    return ctx.effect("tensor.assemble", [dst, value, starts], attrs, dst)


def _assemble_tile(ctx: OpContext, target: Any, value: Any, offsets: Any, atomic: AtomicType) -> Any:
    """Destination-passing, like gather_row: ``value`` lands in ``target``, the expression's value."""
    if atomic is not AtomicType.NONE:
        raise ctx.fail(
            "atomic= applies to writes into global memory; a tile assembly overwrites",
            "drop atomic=, or add into a tensor: pl.assemble(out, tile, [0, 0], atomic=pl.AtomicType.Add)",
        )
    dst = ctx.body.atom(ctx.tile(target, "target"))
    args = [dst, ctx.tile(value, "value"), index_tuple(offsets, ctx.span)]
    return ctx.effect("tile.assemble", args, None, dst)


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
        raise ctx.fail(f"dtype must be a pl dtype, got {describe_value(dtype)}", dtype_hint(dtype))
    attrs = {
        "shape": static_shape(shape, ctx.span),
        "dtype": dtype,
        "target_memory": _memory(ctx, target_memory),
    }
    return ctx.call("tile.create", [], attrs)


def build_create_tensor(ctx: OpContext, shape: Any, dtype: Any, manual_dep: Any = False) -> Any:
    if not isinstance(dtype, DataType):
        raise ctx.fail(f"dtype must be a pl dtype, got {describe_value(dtype)}", dtype_hint(dtype))
    if not isinstance(manual_dep, bool):
        raise ctx.fail(
            f"manual_dep= must be True or False, got {describe_value(manual_dep)}",
            "write manual_dep=True for a tensor no task takes an edge through, or leave it out",
        )
    attrs: dict[str, Any] = {"shape": static_shape(shape, ctx.span), "dtype": dtype}
    if manual_dep:
        attrs["manual_dep"] = True  # tasks are never ordered through this tensor
    return ctx.call("tensor.create", [], attrs)


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
    **{name: _row_reduction(name) for name in ROW_REDUCTIONS},
    **{name: _col_reduction(name) for name in COL_REDUCTIONS},
    **{name: _row_expand(name) for name in ROW_EXPANDS},
    **{name: _col_expand(name) for name in COL_EXPANDS},
    "reshape": build_reshape,
    "slice": build_slice,
    "fillpad": build_fillpad,
    "full": build_full,
    **CROSS_CORE_BUILDERS,
}


def build_op(ctx: OpContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Bind ``args``/``kwargs`` to the op's DSL signature and build it.

    >>> build_op(ctx, "add", [a, b], {})  # doctest: +SKIP
    """
    builder = BUILDERS[name]
    ctx = replace(ctx, builtin=name)
    try:
        bound = inspect.signature(builder).bind(ctx, *args, **kwargs)
    except TypeError as exc:
        raise ParseError(f"{ctx.name}(): {exc}", ctx.span, f"signature: {ctx.signature()}") from None
    return builder(*bound.args, **bound.kwargs)
