"""Tensor views and their valid shapes: ``pl.slice`` of a tensor, ``pl.set_validshape`` of one,
and the loads, stores and fills that read through them.

A view is a window of a tensor (``tensor.slice``) whose valid region is the tensor's valid region
shifted by the window's offset and cut to the window (and to the tensor's end, with
``clamp=True``); ``valid_shape=`` narrows it further. Reads outside it see the view's pad value.
The parser records, for every view, where it lies in the tensor it views (:class:`Window`), its
valid extents and its pad; a ``pl.load`` / ``pl.store`` / ``pl.read`` of a view is one of the
viewed tensor at the window's offsets, a load reading only the valid part (``tile.load_partial``)
and writing the pad value into the rest of the tile. Tensor-level ops on views are tiled by
ConvertTensorToTileOps, which reads the same ops.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import INDEX, Const, DynDim, Expr, TensorType, TupleExpr
from pypto.ir.extents import is_symbolic
from pypto.ir.ops import PadValue
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.rewrite import index_add, scalar_call
from pypto.language.annotations import as_pad_value
from pypto.language.parser.body import Window
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import index_tuple, is_number, number, static_shape


def extents(ctx: OpContext, x: Expr) -> tuple[Expr, ...]:
    """The valid extents of tensor ``x``: a view's, else its whole shape."""
    known = ctx.valid_of(x)
    if known is not None:
        return known.elements
    t = x.type
    assert isinstance(t, TensorType)
    return tuple(n if isinstance(n, DynDim) else Const(n, INDEX) for n in t.shape)


def window(ctx: OpContext, x: Expr) -> Window:
    """Where tensor ``x`` lies in the tensor it views (itself, at offset 0, when it is no view)."""
    found = ctx.body.windows.get(x)
    return found if found is not None else Window(x, tuple(Const(0, INDEX) for _ in x.type.shape))  # type: ignore[attr-defined]


def pad_of(ctx: OpContext, x: Expr) -> PadValue:
    return ctx.body.pads.get(x, PadValue.null)


def tensor_slice(
    ctx: OpContext,
    x: Expr,
    shape: Any,
    offset: Any,
    valid_shape: Any,
    drop_dims: Any,
    pad_value: Any,
    clamp: Any,
) -> Expr:
    """``pl.slice(tensor, shape, offset, valid_shape=, drop_dims=, pad_value=, clamp=)``: a view."""
    dims = static_shape(shape, ctx.span, dynamic=True)
    offsets = index_tuple(offset, ctx.span, "offset")
    full = x.type.shape  # type: ignore[attr-defined]
    if len(dims) != len(full) or len(offsets.elements) != len(full):
        return ctx.call(tensor_ops.slice, [x, offsets], {"shape": dims})  # the type rule says what is wrong
    clamp = flag(ctx, clamp, "clamp")
    if not clamp:
        check_inside(ctx, dims, offsets.elements, full)
    window_extents = consts(dims)
    if ctx.valid_of(x) is None and not clamp:
        valid = window_extents  # inside the tensor (a run-time offset past its end fails the load)
    else:  # the source's valid region (with clamp: up to its end) from the offset on, cut to the window
        valid = [
            _min(n, _max0(_sub(v, off)))
            for n, v, off in zip(window_extents, extents(ctx, x), offsets.elements, strict=True)
        ]
    if valid_shape is not None:
        given = index_tuple(valid_shape, ctx.span, "valid_shape").elements
        valid = narrowed(ctx, valid, given, consts(dims))
    pad = pad_of(ctx, x) if pad_value is None else as_pad(ctx, pad_value, "pad_value")
    args: list[Any] = [x, offsets]
    if not all(same_extent(v, n) for v, n in zip(valid, consts(dims), strict=True)):
        args.append(index_tuple(valid, ctx.span, "valid_shape"))
    attrs: dict[str, Any] = {"shape": dims}
    if pad is not PadValue.null:
        attrs["pad_value"] = pad
    if clamp:
        attrs["clamp"] = True
    view = ctx.call(tensor_ops.slice, args, attrs)
    base = window(ctx, x)
    ctx.body.windows[view] = Window(
        base.base, tuple(index_add(a, b) for a, b in zip(base.offsets, offsets.elements, strict=True))
    )
    if pad is not PadValue.null:
        ctx.body.pads[view] = pad
    return view if drop_dims is None else dropped(ctx, view, dims, drop_dims)


def set_tensor_validshape(ctx: OpContext, x: Expr, extents_given: TupleExpr) -> Expr:
    """``pl.set_validshape(tensor, rows, cols)``: a view of the whole tensor with that valid shape."""
    view = ctx.call(tensor_ops.set_validshape, [x, extents_given])
    ctx.body.windows[view] = window(ctx, x)
    if x in ctx.body.pads:
        ctx.body.pads[view] = ctx.body.pads[x]
    return view


def dims_to_drop(ctx: OpContext, drop_dims: Any, rank: int) -> set[int]:
    """The dims ``drop_dims`` names: a list of ints in ``-rank..rank - 1`` (negative from the end)."""
    listed = isinstance(drop_dims, (list, tuple))
    plain = [number(d) if is_number(d) else d for d in drop_dims] if listed else [None]
    dims = [d for d in plain if isinstance(d, int) and not isinstance(d, bool) and -rank <= d < rank]
    if len(dims) != len(plain):
        raise ctx.fail(
            f"drop_dims= takes a list of the value's dims (0..{rank - 1}), got {drop_dims!r}",
            "write drop_dims=[0] to drop dim 0 (of extent 1)",
        )
    return {d % rank for d in dims}


def dropped(ctx: OpContext, view: Expr, dims: tuple[Any, ...], drop_dims: Any) -> Expr:
    """``drop_dims=[0]``: the view without the listed unit dims (a reshape of it)."""
    drop = dims_to_drop(ctx, drop_dims, len(dims))
    wide = [d for d in sorted(drop) if dims[d] != 1]
    if wide or len(drop) >= len(dims):
        raise ctx.fail(
            f"drop_dims={list(drop_dims)} drops dims of extent {[dims[d] for d in wide]}"
            if wide
            else f"drop_dims={list(drop_dims)} drops every dim",
            "drop only dims of extent 1, and keep at least one",
        )
    kept = tuple(n for d, n in enumerate(dims) if d not in drop)
    valid = ctx.valid_of(view)
    flat = ctx.call(tensor_ops.reshape, [view], {"shape": kept})
    if valid is None:
        return flat
    keep = [e for d, e in enumerate(valid.elements) if d not in drop]
    return set_tensor_validshape(ctx, flat, index_tuple(keep, ctx.span, "valid_shape"))


def as_pad(ctx: OpContext, value: Any, what: str) -> PadValue:
    try:
        return as_pad_value(value, what)
    except Exception as err:
        message = getattr(err, "message", str(err))
        raise ctx.fail(
            message, getattr(err, "hint", None) or "write pl.PadValue.zero, .max or .min"
        ) from None


def through(ctx: OpContext, x: Expr, offsets: TupleExpr) -> tuple[Expr, TupleExpr]:
    """Offsets into tensor ``x`` as the tensor it views (itself, when it is no view) and the
    offsets there."""
    where = window(ctx, x)
    if where.base is x or len(offsets.elements) != len(where.offsets):
        return x, offsets  # (a rank the type rule reports)
    moved = [index_add(a, b) for a, b in zip(where.offsets, offsets.elements, strict=True)]
    return where.base, index_tuple(moved, ctx.span)


def load_through(
    ctx: OpContext, view: Expr, offsets: TupleExpr, shape: tuple[int, ...], valid: TupleExpr | None
) -> tuple[Expr, TupleExpr, TupleExpr | None, PadValue]:
    """A load of ``shape`` at ``offsets`` of tensor ``view``, as a load of the tensor it views: that
    tensor, the offsets there, the tile's valid shape (the view's valid region the tile covers, cut
    by ``valid``; None when all of the tile is valid and no ``valid`` was given) and its pad."""
    where = window(ctx, view)
    moved = index_tuple(
        [index_add(a, b) for a, b in zip(where.offsets, offsets.elements, strict=True)], ctx.span
    )
    if ctx.valid_of(view) is None:
        return where.base, moved, valid, pad_of(ctx, view)
    covered = [
        _min(Const(n, INDEX), _max0(_sub(v, off)))
        for n, v, off in zip(shape, extents(ctx, view), offsets.elements, strict=True)
    ]
    if valid is not None:
        covered = [_min(a, b) for a, b in zip(covered, valid.elements, strict=True)]
    return where.base, moved, index_tuple(covered, ctx.span, "valid_shape"), pad_of(ctx, view)


# ---------------------------------------------------------------- extents, folded where constant


def consts(dims: tuple[Any, ...]) -> list[Expr]:
    """A shape's extents as INDEX expressions: numbers as constants, dynamic extents as they are."""
    return [n if is_symbolic(n) else Const(n, INDEX) for n in dims]


def same_extent(a: Expr, b: Expr) -> bool:
    return (isinstance(a, Const) and isinstance(b, Const) and a.value == b.value) or (a is b)


def _sub(a: Expr, b: Expr) -> Expr:
    if isinstance(b, Const) and b.value == 0:
        return a
    return scalar_call(scalar_ops.sub, a, b)


def _max0(a: Expr) -> Expr:
    if isinstance(a, Const):
        return Const(max(a.value, 0), a.type)
    if isinstance(a, DynDim):
        return a  # an extent is never negative
    return scalar_call(scalar_ops.max, a, Const(0, INDEX))


def _min(a: Expr, b: Expr) -> Expr:
    """``min(a, b)``: folded for constants; ``a`` for two of one value."""
    if isinstance(a, Const) and isinstance(b, Const):
        return a if a.value <= b.value else b
    if a is b or (isinstance(a, DynDim) and a == b):
        return a
    return scalar_call(scalar_ops.min, a, b)


def narrowed(ctx: OpContext, valid: list[Expr], given: tuple[Expr, ...], dims: list[Expr]) -> list[Expr]:
    """The view's valid extents cut to ``given`` (``valid_shape=``): narrowing is fine, widening an
    error where both are constants; a run-time extent is cut to the view's (unless the view is
    valid to the window's end, which every load of it stays within anyway)."""
    if len(given) != len(valid):
        raise ctx.fail(
            f"valid_shape= has {len(given)} extents for a view of rank {len(valid)}",
            "give one valid extent per dim of the view",
        )
    out = []
    for dim, (have, want, n) in enumerate(zip(valid, given, dims, strict=True)):
        if isinstance(have, Const) and isinstance(want, Const) and want.value > have.value:
            raise ctx.fail(
                f"valid_shape= extent {want.value} of dim {dim} is wider than the view's valid "
                f"extent {have.value}",
                "a view's valid region is the source's valid region in the window: valid_shape= can "
                f"narrow it (an extent up to {have.value}), never widen it",
            )
        whole = same_extent(have, n)
        out.append(
            want if whole or (isinstance(have, Const) and isinstance(want, Const)) else _min(have, want)
        )
    return out


def flag(ctx: OpContext, value: Any, name: str) -> bool:
    plain = number(value) if is_number(value) else value
    if not isinstance(plain, bool):
        raise ctx.fail(f"{name}= must be True or False, got {value!r}", f"write {name}=True")
    return plain


def check_inside(
    ctx: OpContext, dims: tuple[Any, ...], offsets: tuple[Expr, ...], full: tuple[Any, ...]
) -> None:
    """A window of constant offset and extents past the tensor's end is an error (without clamp)."""
    for dim, (n, off, size) in enumerate(zip(dims, offsets, full, strict=True)):
        if not (isinstance(off, Const) and isinstance(n, int) and isinstance(size, int)):
            continue
        if off.value < 0 or off.value + n > size:
            raise ctx.fail(
                f"the window [{off.value}:{off.value + n}] of dim {dim} lies outside the tensor's {size} "
                f"elements there",
                f"keep offset + extent within 0..{size}, or pass clamp=True: the view's valid region "
                "then stops at the tensor's end",
            )
