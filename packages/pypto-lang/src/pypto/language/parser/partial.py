"""Builders that give a tile a valid shape, and the padding that makes reductions honour one.

``pl.set_validshape(t, rows, cols)`` is ``tile.set_validshape``: from then on only the leading
``rows x cols`` region of the tile is real (stores write only it, reductions see only it).
``pl.slice(x, shape, offset, valid_shape=[r, c])`` is a slice followed by that op. A reduction
of a tile with a valid shape is built on ``pl.fillpad(x, pad_value=identity)`` of it, the
reduction's identity (0 for sums, the lowest value for maxima, the highest for minima), so the
padding takes no part in the result.
"""

from __future__ import annotations

from typing import Any

from pypto.ir import (
    INDEX,
    Const,
    Expr,
    MemorySpace,
    ParseError,
    TileType,
    TupleExpr,
    TypeCheckError,
    Var,
    get_op,
)
from pypto.ir.ops import PadValue
from pypto.ir.ops import tile as tile_ops
from pypto.ir.valid import is_partial
from pypto.ir.validflow import same
from pypto.language.annotations import TileView, check_view
from pypto.language.dslops import hand_built
from pypto.language.parser import views
from pypto.language.parser.convert import attribute, enum_member
from pypto.language.parser.host_tensors import host_view, run_time_shape
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import index_tuple, static_shape


@hand_built(tile_ops.set_validshape)
def build_set_validshape(ctx: OpContext, x: Any, rows: Any, cols: Any = None) -> Any:
    """``pl.set_validshape(t, rows, cols)`` (or ``(t, [rows, cols])``, as the printer writes it): a
    tile with that valid shape, or a view of a tensor with it (no data moves)."""
    value = ctx.shaped(x, "the tile or tensor")
    extents = rows if cols is None and isinstance(rows, (list, tuple)) else [rows, cols]
    if any(e is None for e in extents):
        raise ctx.fail(
            "needs the valid rows and columns", "write pl.set_validshape(t, rows, cols), e.g. (t, n, 64)"
        )
    given = index_tuple(extents, ctx.span, "valid_shape")
    if ctx.level_of(value) == "tensor":
        return views.set_tensor_validshape(ctx, value, given)
    return ctx.call(tile_ops.set_validshape, [value, given])


@hand_built(tile_ops.slice)
def build_slice(
    ctx: OpContext,
    x: Any,
    shape: Any,
    offset: Any,
    valid_shape: Any = None,
    drop_dims: Any = None,
    pad_value: Any = None,
    clamp: Any = False,
) -> Any:
    """A region of ``x``: of a tensor, a view (see :mod:`.views`); of a tile, a sub-tile whose
    ``valid_shape`` (constants or run-time scalars) is its valid part, filled with ``pad_value``
    outside it."""
    value = ctx.shaped(x, "the sliced value")
    # On the control plane a view is the orchestration's (in an Opaque function, of no plane yet,
    # one only the orchestration can make: of a run-time extent).
    host = not ctx.body.on_device and (not ctx.body.plane_free or run_time_shape(shape))
    if ctx.level_of(value) == "tensor" and host:
        return host_view(ctx, value, shape, offset, valid_shape, drop_dims, pad_value, clamp)
    if ctx.level_of(value) == "tensor":
        return views.tensor_slice(ctx, value, shape, offset, valid_shape, drop_dims, pad_value, clamp)
    if clamp is not False:
        raise ctx.fail(
            "clamp= applies to a view of a tensor; a slice of a tile lies inside the tile",
            "drop clamp=, and give the slice a valid_shape= for the part that is real",
        )
    attrs = {"shape": static_shape(shape, ctx.span)}
    piece: Expr = ctx.call(tile_ops.slice, [value, index_tuple(offset, ctx.span, "offset")], attrs)
    if valid_shape is not None:
        piece = ctx.call(tile_ops.set_validshape, [piece, index_tuple(valid_shape, ctx.span, "valid_shape")])
    if pad_value is not None:
        piece = with_view(
            ctx, ctx.body.atom(piece), TileView(pad=views.as_pad(ctx, pad_value, "pad_value")), "the slice"
        )
    if drop_dims is not None:
        piece = _dropped_tile(ctx, piece, drop_dims)
    return piece


def _dropped_tile(ctx: OpContext, piece: Expr, drop_dims: Any) -> Expr:
    """A sub-tile without the unit dims ``drop_dims`` names; tiles stay 2-D (``[N]`` is ``[1, N]``)."""
    t = piece.type
    assert isinstance(t, TileType)
    if ctx.valid_of(piece) is not None or is_partial(t):
        raise ctx.fail(
            "drop_dims= reshapes the sub-tile, which then loses its valid shape",
            "slice without valid_shape= to drop dims, or keep the dims and give the valid shape",
        )
    drop = views.dims_to_drop(ctx, drop_dims, len(t.shape))
    if any(t.shape[d] != 1 for d in drop):
        raise ctx.fail(
            f"drop_dims={list(drop_dims)} must name dims of extent 1 of the {list(t.shape)} slice",
            "drop only dims of extent 1, e.g. drop_dims=[0] of a [1, 16, 64] slice",
        )
    kept = [n for d, n in enumerate(t.shape) if d not in drop]
    kept = [1] * (2 - len(kept)) + kept
    return ctx.call(tile_ops.reshape, [piece], {"shape": tuple(kept)})


@hand_built(tile_ops.fillpad)
def build_fillpad(ctx: OpContext, x: Any, pad_value: Any = PadValue.zero) -> Any:
    """``pl.fillpad(x, pad_value=...)``: ``x`` (a tile or a tensor) with ``pad_value`` (a
    ``pl.PadValue``, or 0, ``math.inf``, ``-math.inf``) outside its valid shape."""
    value = ctx.shaped(x, "the padded value")
    pad = views.as_pad(ctx, pad_value, "pad_value")
    level = ctx.level_of(value)
    valid = ctx.valid_of(value)
    args = [value] if valid is None else [value, valid]
    return ctx.call(f"{level}.fillpad", args, {"pad_value": pad})


def reduced_valid(ctx: OpContext, x: Expr, axis: int) -> TupleExpr | None:
    """The valid shape a reduction along ``axis`` of ``x`` has (None: ``x`` is valid everywhere):
    the valid rows of a row reduction, the valid columns of a column reduction."""
    valid = ctx.valid_of(x)
    t = x.type
    if (
        valid is None
        and isinstance(t, TileType)
        and t.valid_shape is not None
        and tuple(t.valid_shape) != t.shape
    ):
        valid = index_tuple(list(t.valid_shape), ctx.span, "valid_shape")
    if valid is None:
        return None
    rows, cols = valid.elements
    one = Const(1, INDEX)
    return index_tuple([rows, one] if axis == 1 else [one, cols], ctx.span, "valid_shape")


def with_valid(ctx: OpContext, value: Expr, valid: TupleExpr | None) -> Expr:
    """``value`` with the valid shape ``valid`` (unchanged when None)."""
    return value if valid is None else ctx.call(tile_ops.set_validshape, [value, valid])


def padded_for_reduction(ctx: OpContext, x: Expr, identity: PadValue) -> Expr:
    """``x``, or ``x`` filled with ``identity`` outside its valid shape when it has one, so a
    reduction of it sees only the valid region."""
    run_time = ctx.valid_of(x)
    t = x.type
    partial = isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) != t.shape
    if run_time is None and not partial:
        return x
    args = [x] if run_time is None else [x, run_time]
    return ctx.call(tile_ops.fillpad, args, {"pad_value": identity})


@hand_built(tile_ops.create)
def build_create_tile(
    ctx: OpContext, shape: Any, dtype: Any, target_memory: Any = MemorySpace.Vec, tile_view: Any = None
) -> Any:
    """An uninitialised tile; ``tile_view=pl.TileView(valid_shape=[r, c])`` makes it a partial
    tile (``tile.create`` followed by ``tile.set_validshape``), as PyPTO's tile views describe one."""
    spec = get_op(tile_ops.create)
    attrs: dict[str, Any] = {
        "shape": static_shape(shape, ctx.span),
        "dtype": attribute(ctx, spec, _dtype_attr(spec), dtype),
    }
    if target_memory is not None:
        attrs["target_memory"] = enum_member(ctx, MemorySpace, "target_memory", target_memory)
    tile = ctx.call(tile_ops.create, [], attrs)
    if tile_view is None:
        return tile
    if not isinstance(tile_view, TileView):
        raise ctx.fail(
            f"tile_view= must be a pl.TileView, got {tile_view!r}",
            "write tile_view=pl.TileView(valid_shape=[r, c]) (constants or run-time scalars)",
        )
    try:
        check_view(tile_view, attrs["shape"])
    except ParseError as e:
        raise ctx.fail(e.message, e.hint or "") from None
    return with_view(ctx, tile, tile_view, "the created tile")


def valid_extents(ctx: OpContext, x: Expr) -> tuple[Expr, ...]:
    """The extents of ``x``'s valid shape: run-time ones, else its constant (or whole) shape."""
    run_time = ctx.valid_of(x)
    if run_time is not None:
        return run_time.elements
    t = x.type
    assert isinstance(t, TileType)
    return tuple(Const(n, INDEX) for n in (t.valid_shape or t.shape))


def with_view(ctx: OpContext, value: Expr, view: TileView, what: str) -> Expr:
    """``value`` (a tile) with the valid shape and padding ``view`` states: a value valid everywhere
    takes the view's valid shape (``pl.set_validshape``); one with a valid shape of its own must
    have the view's (a ``TypeCheckError`` otherwise); a Vec tile with a partial valid shape is
    filled with the view's ``pad`` outside it, keeping its valid shape."""
    t = value.type
    assert isinstance(t, TileType)
    if view.valid_shape is not None:
        want = index_tuple(list(view.valid_shape), ctx.span, "valid_shape")
        have = valid_extents(ctx, value)
        if not is_partial(t) and ctx.valid_of(value) is None:
            if not all(same(w, Const(n, INDEX)) for w, n in zip(want.elements, t.shape, strict=True)):
                value = ctx.call(tile_ops.set_validshape, [value, want])
        elif not all(same(w, h) for w, h in zip(want.elements, have, strict=True)):
            raise _view_conflict(ctx, what, want.elements, have)
    if view.pad is PadValue.null or not (is_partial(value.type) or ctx.valid_of(value) is not None):
        return value
    if value.type.memory_space not in (MemorySpace.Vec, None):  # type: ignore[attr-defined]
        raise ctx.fail(
            f"pl.TileView(pad={view.pad!r}) fills the padding of a Vec tile, and {what} is in "
            f"{value.type.memory_space.name}",  # type: ignore[attr-defined]
            "fill it in Vec (pl.fillpad) before it moves, or load it with a padded view: "
            "pl.slice(t, shape, offset, valid_shape=[...], pad_value=...)",
        )
    valid = index_tuple(list(valid_extents(ctx, value)), ctx.span, "valid_shape")
    run_time = ctx.valid_of(value)
    filled = ctx.call(
        tile_ops.fillpad, [value] if run_time is None else [value, run_time], {"pad_value": view.pad}
    )
    return ctx.call(tile_ops.set_validshape, [filled, valid])


def _view_conflict(
    ctx: OpContext, what: str, want: tuple[Expr, ...], have: tuple[Expr, ...]
) -> TypeCheckError:
    shown_want, shown_have = _shown(want), _shown(have)
    extents = ", ".join(shown_want)
    return TypeCheckError(
        f"{what} is annotated with valid shape [{', '.join(shown_want)}] but the value's valid shape "
        f"is [{', '.join(shown_have)}]",
        ctx.span,
        f"set it with pl.set_validshape(value, {extents}), or annotate "
        f"pl.TileView(valid_shape=[{', '.join(shown_have)}])",
    )


def _shown(extents: tuple[Expr, ...]) -> list[str]:
    """Extents as messages show them: numbers, or the variable (or expression) they are."""
    return [
        str(e.value) if isinstance(e, Const) else e.name if isinstance(e, Var) else "a run-time value"
        for e in extents
    ]


def _dtype_attr(spec: Any) -> Any:
    """The op's dtype attribute (tile.create declares one)."""
    attr = spec.attr("dtype")
    assert attr is not None
    return attr
