"""The polymorphic builders of transfers and products: each DSL function picks one of several ops.

``pl.load`` is ``tile.load``, or ``tile.load_partial`` when its valid shape is known at run time;
``pl.store`` and ``pl.assemble`` of a tile with a run-time valid shape (or an atomic add) are
``tile.store_partial`` / ``tile.store_atomic``, ``pl.assemble`` into a tile is ``tile.assemble``;
``pl.matmul`` and ``pl.matmul_acc`` take the level of their operands. A builder's parameters after
the ``OpContext`` are its DSL function's.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import AtomicType, Const, DataType, Expr, MemorySpace
from pypto.ir.ops import PadValue
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.ops import tile as tile_ops
from pypto.language.annotations import dtype_hint
from pypto.language.dslops import hand_built
from pypto.language.parser import views
from pypto.language.parser.convert import enum_member
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    index_tuple,
    is_number,
    is_scalar,
    is_tile,
    number,
    static_shape,
)


@hand_built(tile_ops.load)
def build_load(
    ctx: OpContext,
    tensor: Any,
    offsets: Any,
    shape: Any,
    target_memory: Any = MemorySpace.Vec,
    valid_shape: Any = None,
) -> Any:
    """A tile of ``shape``; a ``valid_shape`` with run-time entries makes a ``tile.load_partial``.
    A load of a tensor view is one of the tensor it views, reading only the view's valid region
    the tile covers and writing the view's pad value into the rest (:mod:`.views`)."""
    attrs: dict[str, Any] = {
        "shape": static_shape(shape, ctx.span),
        "target_memory": enum_member(ctx, MemorySpace, "target_memory", target_memory),
    }
    src, starts = ctx.tensor(tensor, "source"), index_tuple(offsets, ctx.span)
    given = None
    if valid_shape is not None and not _run_time(valid_shape):
        given = index_tuple(list(static_shape(valid_shape, ctx.span, "valid_shape")), ctx.span)
    elif valid_shape is not None:
        given = index_tuple(valid_shape, ctx.span, "valid_shape")
    if len(starts.elements) != len(attrs["shape"]):
        return ctx.call(tile_ops.load, [src, starts], attrs)  # the type rule says what is wrong
    base, starts, valid, pad = views.load_through(ctx, src, starts, attrs["shape"], given)
    args = [base, starts]
    if valid is not None and all(isinstance(e, Const) for e in valid.elements):
        extents = tuple(e.value for e in valid.elements)  # type: ignore[attr-defined]
        if extents == attrs["shape"]:
            return ctx.call(tile_ops.load, args, attrs)
        if 0 not in extents:
            return ctx.call(tile_ops.load, args, {**attrs, "valid_shape": extents, **_padding(pad)})
    if valid is None:
        return ctx.call(tile_ops.load, args, attrs)
    return ctx.call(tile_ops.load_partial, [*args, valid], {**attrs, **_padding(pad)})


def _run_time(values: Any) -> bool:
    return isinstance(values, (list, tuple)) and any(not is_number(v) for v in values)


def _padding(pad: PadValue) -> dict[str, Any]:
    """A load's attrs for a view's pad: what it writes outside the region it reads."""
    return {} if pad is PadValue.null else {"pad_value": pad}


@hand_built(tile_ops.store)
def build_store(ctx: OpContext, tile: Any, offsets: Any, tensor: Any) -> Any:
    """The tile's valid region written into ``tensor`` at ``offsets`` (into the tensor a view
    views, at the view's offsets); the expression's value is ``tensor``."""
    dst = ctx.tensor(tensor, "destination")
    base, starts = views.through(ctx, dst, index_tuple(offsets, ctx.span))
    _store(ctx, ctx.tile(tile, "value"), starts, base, AtomicType.NONE)
    return dst


def _store(ctx: OpContext, value: Expr, offsets: Expr, dst: Expr, atomic: AtomicType) -> Any:
    """A tile written into ``dst`` (added to it when atomic), honouring a run-time valid shape."""
    valid = ctx.valid_of(value)
    extra = [] if valid is None else [valid]
    if atomic is not AtomicType.NONE:
        return ctx.effect(tile_ops.store_atomic, [value, offsets, dst, *extra], {"atomic": atomic}, dst)
    op = tile_ops.store if valid is None else tile_ops.store_partial
    return ctx.effect(op, [value, offsets, dst, *extra], None, dst)


@hand_built(tensor_ops.assemble)
def build_assemble(
    ctx: OpContext, target: Any, value: Any, offsets: Any, atomic: Any = AtomicType.NONE
) -> Any:
    """``value`` written into a region of ``target``: a tensor (added in when atomic), or a tile."""
    atomic = enum_member(ctx, AtomicType, "atomic", atomic)
    if ctx.level == "tile" or (ctx.level is None and is_tile(target)):
        return _assemble_tile(ctx, target, value, offsets, atomic)
    dst = ctx.tensor(target, "target")
    value = ctx.shaped(value, "value")
    starts = index_tuple(offsets, ctx.span)
    dst, starts = views.through(ctx, dst, starts)  # into a view: into the tensor it views
    if is_tile(value) and (atomic is not AtomicType.NONE or ctx.valid_of(value) is not None):
        return _store(ctx, value, starts, dst, atomic)
    attrs = {} if atomic is AtomicType.NONE else {"atomic": atomic}
    ctx.effect(tensor_ops.assemble, [dst, value, starts], attrs, dst)
    return target


@hand_built(scalar_ops.read)
def build_read(ctx: OpContext, tensor: Any, offsets: Any) -> Any:
    """``pl.read(t, [i, j])``: one element of a tensor (of the tensor a view views); a 1-D
    tensor's element also by its index alone, ``pl.read(t, i)``."""
    if is_scalar(offsets) and not isinstance(number(offsets) if is_number(offsets) else offsets, bool):
        offsets = [offsets]
    src, starts = views.through(ctx, ctx.tensor(tensor, "source"), index_tuple(offsets, ctx.span))
    return ctx.call(scalar_ops.read, [src, starts])


def _assemble_tile(ctx: OpContext, target: Any, value: Any, offsets: Any, atomic: AtomicType) -> Any:
    """Destination-passing, like gather_row: ``value`` lands in ``target``, the expression's value."""
    if atomic is not AtomicType.NONE:
        raise ctx.fail(
            "atomic= applies to writes into global memory; a tile assembly overwrites",
            "drop atomic=, or add into a tensor: pl.assemble(out, tile, [0, 0], atomic=pl.AtomicType.Add)",
        )
    dst = ctx.body.atom(ctx.tile(target, "target"))
    args = [dst, ctx.tile(value, "value"), index_tuple(offsets, ctx.span)]
    return ctx.effect(tile_ops.assemble, args, None, dst)


@hand_built(tile_ops.matmul)
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
    op = tile_ops.matmul if ctx.level_of(a) == "tile" else tensor_ops.matmul
    return ctx.call(op, [a, ctx.shaped(b, "right operand")], attrs)


@hand_built(tile_ops.matmul_acc)
def build_matmul_acc(ctx: OpContext, acc: Any, a: Any, b: Any) -> Any:
    """``acc + a @ b``: on tensors (the compiler tiles it), or on Acc x Left x Right tiles."""
    acc = ctx.shaped(acc, "acc")
    op = tile_ops.matmul_acc if ctx.level_of(acc) == "tile" else tensor_ops.matmul_acc
    return ctx.call(op, [acc, ctx.shaped(a, "a"), ctx.shaped(b, "b")])
