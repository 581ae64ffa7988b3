"""The polymorphic builders of transfers and products: each DSL function picks one of several ops.

``pl.load`` is ``tile.load``, or ``tile.load_partial`` when its valid shape is known at run time;
``pl.store`` and ``pl.assemble`` of a tile with a run-time valid shape (or an atomic add) are
``tile.store_partial`` / ``tile.store_atomic``, ``pl.assemble`` into a tile is ``tile.assemble``;
``pl.matmul`` and ``pl.matmul_acc`` take the level of their operands. A builder's parameters after
the ``OpContext`` are its DSL function's.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import AtomicType, Call, Const, DataType, Expr, MemorySpace, TileType, TupleExpr
from pypto.ir.ops import Level, PadValue
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.ops import tile as tile_ops
from pypto.language.annotations import dtype_hint
from pypto.language.dslops import hand_built
from pypto.language.parser import views
from pypto.language.parser.arith import scalar_binary
from pypto.language.parser.convert import enum_member
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    index_tuple,
    is_number,
    is_scalar,
    is_shaped,
    is_tile,
    number,
    static_shape,
    tile_scalar,
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
def build_store(ctx: OpContext, tile: Any, offsets: Any, tensor: Any, shapes: Any = None) -> Any:
    """The tile's valid region written into ``tensor`` at ``offsets`` (into the tensor a view
    views, at the view's offsets); the expression's value is ``tensor``. ``shapes`` (one extent
    per dim, constants or run-time scalars) writes only that leading region of the tile."""
    dst = ctx.tensor(tensor, "destination")
    value = ctx.tile(tile, "value")
    region = None if shapes is None else _stored_region(ctx, value, shapes)
    base, starts = views.through(ctx, dst, index_tuple(offsets, ctx.span))
    _store(ctx, value, starts, base, AtomicType.NONE, region)
    return dst


def _stored_region(ctx: OpContext, value: Expr, shapes: Any) -> TupleExpr | None:
    """The region ``pl.store(tile, offsets, tensor, shapes)`` writes: ``shapes`` cut to the tile's
    valid shape; None when that is the whole tile."""
    tile = value.type
    assert isinstance(tile, TileType)
    if not isinstance(shapes, (list, tuple)) or len(shapes) != len(tile.shape):
        raise ctx.fail(
            f"shapes must hold {len(tile.shape)} extents, one per dim of {describe_value(value)}, got "
            f"{describe_value(shapes)}",
            f"write the region the store writes, e.g. {list(tile.shape)}, or leave shapes out for all of it",
        )
    given = ctx.valid_of(value)
    valid = list(given.elements) if isinstance(given, TupleExpr) else list(tile.valid_shape or tile.shape)
    region: list[Any] = []
    for dim, (extent, full) in enumerate(zip(shapes, tile.shape, strict=True)):
        if is_number(extent):
            n = number(extent)
            if isinstance(n, bool) or not isinstance(n, int) or not 0 < n <= full:
                raise ctx.fail(
                    f"shapes[{dim}] is {n!r}, but the tile holds {full} along dim {dim}",
                    f"write at most {full} there (the store writes a leading region of the tile)",
                )
        elif not is_scalar(extent):
            raise ctx.fail(
                f"shapes[{dim}] must be an int or an INDEX scalar, got {describe_value(extent)}",
                "write the extent of the region the store writes",
            )
        if is_number(extent) and is_number(valid[dim]) and number(valid[dim]) <= number(extent):
            region.append(valid[dim])
        elif is_number(extent) and is_number(valid[dim]):
            region.append(extent)
        else:
            region.append(scalar_binary(ctx, "min", extent, valid[dim]))
    if all(is_number(r) and number(r) == n for r, n in zip(region, tile.shape, strict=True)):
        return None if given is None else given
    return index_tuple(region, ctx.span)


def _store(
    ctx: OpContext,
    value: Expr,
    offsets: Expr,
    dst: Expr,
    atomic: AtomicType,
    region: TupleExpr | None = None,
) -> Any:
    """A tile written into ``dst`` (added to it when atomic), honouring a run-time valid shape
    (or the ``region`` of it a store names)."""
    valid = region if region is not None else ctx.valid_of(value)
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
    if is_shaped(target) and target in ctx.body.fills:  # written into: a fill is a tile, not memory
        ctx.demand(target, Level.TILE)
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
    b = ctx.shaped(b, "right operand")
    if is_tile(a) != is_tile(b) and ctx.body.on_device:
        for x in (a, b):  # the tensor beside a tile is loaded: a pl.full value is a tile instead
            ctx.demand(x, Level.TILE)
        a, b = (_staged_operand(ctx, x) for x in (a, b))
    tile = ctx.level_of(a) == "tile"
    op = tile_ops.matmul if tile else tensor_ops.matmul
    if _batched(a) or _batched(b):  # a batch of matrices: rank 3 or more
        op = tile_ops.batch_matmul if tile else tensor_ops.batch_matmul
    return ctx.call(op, [a, b], attrs)


@hand_built(tile_ops.batch_matmul)
def build_batch_matmul(
    ctx: OpContext,
    a: Any,
    b: Any,
    out_dtype: DataType | None = None,
    a_trans: bool = False,
    b_trans: bool = False,
) -> Any:
    """``pl.batch_matmul(a, b)``: a product of each matrix of a batch of tiles (Left x Right)."""
    for value, what in ((a, "left operand"), (b, "right operand")):
        if not is_tile(value):
            raise ctx.fail(
                f"takes tiles, got {describe_value(value)} as the {what}",
                "on tensors write pl.matmul(a, b): with operands of rank 3 or more it multiplies "
                "the batches (the compiler tiles them)",
            )
    return build_matmul(ctx, a, b, out_dtype, a_trans, b_trans)


def _batched(x: Expr) -> bool:
    return len(x.type.shape) > 2  # type: ignore[attr-defined]


def _staged_operand(ctx: OpContext, x: Expr) -> Expr:
    """An operand of a matmul of a tensor and a tile, as a tile the compiler stages into L0: a
    tensor (or a region of one) loaded into Mat whole, a Vec right operand moved to Mat."""
    if not is_tile(x):
        base, origin = tensor_origin(ctx, x)
        shape = list(x.type.shape)  # type: ignore[attr-defined]
        return build_load(ctx, base, list(origin), shape, target_memory=MemorySpace.Mat)
    return x


@hand_built(tile_ops.matmul_acc)
def build_matmul_acc(ctx: OpContext, acc: Any, a: Any, b: Any) -> Any:
    """``acc + a @ b``: on tensors (the compiler tiles it), or on Acc x Left x Right tiles."""
    acc = ctx.shaped(acc, "acc")
    ctx.settle(acc, a, b)
    op = tile_ops.matmul_acc if ctx.level_of(acc) == "tile" else tensor_ops.matmul_acc
    return ctx.call(op, [acc, ctx.shaped(a, "a"), ctx.shaped(b, "b")])


def tensor_origin(ctx: OpContext, tensor: Expr) -> tuple[Expr, tuple[Any, ...]]:
    """The tensor a region is of and the region's offsets in it (a plain tensor: its origin)."""
    if isinstance(tensor, Call) and tensor.op == tensor_ops.slice:
        offsets = tensor.args[1]
        assert isinstance(offsets, TupleExpr)
        inner, outer = tensor_origin(ctx, tensor.args[0])
        return inner, tuple(offset_sum(ctx, a, b) for a, b in zip(outer, offsets.elements, strict=True))
    rank = len(tensor.type.shape)  # type: ignore[attr-defined]
    return tensor, tuple(0 for _ in range(rank))


def offset_sum(ctx: OpContext, a: Any, b: Any) -> Any:
    """``a + b`` of two offsets, a zero offset dropped."""
    if _is_zero(a):
        return b
    return a if _is_zero(b) else scalar_binary(ctx, "add", a, b)


def _is_zero(e: Any) -> bool:
    return (isinstance(e, int) and e == 0) or (isinstance(e, Const) and e.value == 0)


@hand_built(tile_ops.extract)
def build_extract(
    ctx: OpContext,
    src: Any,
    idx_row: Any,
    idx_col: Any = None,
    shape: Any = None,
    target_memory: Any = None,
) -> Any:
    """``pl.tile.extract(src, idx_row, idx_col, shape, target_memory=pl.Mem.Left)``: a block of a
    Mat tile at ``[idx_row, idx_col]`` moved into Left or Right (also written with the offsets
    as one list, ``pl.tile.extract(src, [r, c], shape, target_memory=...)``)."""
    if isinstance(idx_row, (list, tuple)):
        offsets, shape, target_memory = idx_row, idx_col if shape is None else shape, target_memory
        if target_memory is None and isinstance(shape, MemorySpace):
            shape, target_memory = None, shape
    else:
        offsets = [idx_row, idx_col]
    if shape is None or target_memory is None:
        raise ctx.fail(
            "needs the block's shape and target_memory=",
            "write pl.tile.extract(src, row, col, [rows, cols], target_memory=pl.Mem.Left)",
        )
    attrs = {
        "shape": static_shape(shape, ctx.span),
        "target_memory": enum_member(ctx, MemorySpace, "target_memory", target_memory),
    }
    return ctx.call(tile_ops.extract, [ctx.tile(src, "src"), index_tuple(offsets, ctx.span)], attrs)


@hand_built(scalar_ops.read, tile_ops.read)
def build_read(ctx: OpContext, tensor: Any, offsets: Any) -> Any:
    """``pl.read(t, [i, j])``: one element of a tensor (global memory; of the tensor a view views)
    or a tile, as a scalar. ``pl.read(t, k)`` reads the element at the flat (row-major) index
    ``k`` (a 1-D tensor's element by its index)."""
    source = ctx.shaped(tensor, "the read value")
    ctx.demand(source, Level.TILE)  # a pl.full value is read as a tile (it is in no memory)
    shape = source.type.shape  # type: ignore[attr-defined]
    if not isinstance(offsets, (list, tuple)):
        offsets = flat_offsets(ctx, offsets, shape)
    starts = index_tuple(offsets, ctx.span)
    if is_tile(source):
        return ctx.call(tile_ops.read, [source, starts])
    src, starts = views.through(ctx, source, starts)  # of a view: of the tensor it views
    return ctx.call(scalar_ops.read, [src, starts])


@hand_built(scalar_ops.write, tile_ops.write)
def build_write(ctx: OpContext, tensor: Any, offsets: Any, value: Any) -> Any:
    """``pl.write(t, [i, j], v)``: one element of a tensor (of the tensor a view views) or a tile
    written with the scalar ``v``; ``pl.write(t, k, v)`` writes the element at the flat index
    ``k``. The expression is the written tensor or tile (destination-passing)."""
    target = ctx.shaped(tensor, "destination")
    shape = target.type.shape  # type: ignore[attr-defined]
    if not isinstance(offsets, (list, tuple)):
        offsets = flat_offsets(ctx, offsets, shape)
    starts = index_tuple(offsets, ctx.span)
    if not is_scalar(value):
        raise ctx.fail(
            f"the written value must be a scalar, got {describe_value(value)}",
            "write one number or run-time scalar (store a region of a tile with pl.store or pl.assemble)",
        )
    element = tile_scalar(value, target.type.dtype, ctx.span)  # type: ignore[attr-defined]
    if is_tile(target):
        return ctx.effect(tile_ops.write, [target, starts, element], None, target)
    dst, starts = views.through(ctx, target, starts)  # of a view: of the tensor it views
    return ctx.effect(scalar_ops.write, [dst, starts, element], None, target)


def flat_offsets(ctx: OpContext, index: Any, shape: tuple[Any, ...]) -> list[Any]:
    """The per-dimension offsets of the row-major flat ``index`` into a value of ``shape``."""
    if isinstance(index, bool) or not (is_number(index) or is_scalar(index)):
        raise ctx.fail(
            f"the index must be a list of offsets or one flat integer index, got {describe_value(index)}",
            "write pl.read(t, [i, j]) or pl.read(t, i * n + j)",
        )
    offsets: list[Any] = []
    rest = index
    for dim in range(len(shape) - 1, 0, -1):
        offsets.insert(0, scalar_binary(ctx, "mod", rest, shape[dim]))
        rest = scalar_binary(ctx, "floordiv", rest, shape[dim])
    return [rest, *offsets]
