"""The orchestration's own tensors: ``pl.create_tensor`` of extents it computes at run time, and the
views (``pl.slice``) it makes of its tensors to pass to kernels.

On the host plane (the ``@pl.jit`` body or an Orchestration function, outside ``pl.at`` scopes) an
extent may be a run-time integer scalar: a value read with ``pl.tensor.read``, a loop variable,
arithmetic on them. The tensor's type names such an extent by a dynamic extent
(:class:`~pypto.ir.DynDim`) of its own, one per expression of the function (every tensor sized by
``head_dim_cfg`` has the same one), so that a kernel whose parameter is annotated with a
``pl.dynamic`` extent takes the tensor and binds its extent per call, as it does for the entry's
tensors. The call carries the expressions as its ``shape`` operand; the orchestration evaluates
them when it runs, and the dynamic extent has that value from then on.

A view of a host tensor is a ``tensor.slice`` the orchestration runs: the window of the tensor at
the offsets, no copy, passed to kernels (and to ``pl.at`` scopes) like any tensor; what a kernel
writes through it lands in the tensor, and the task graph orders the kernels by the regions of the
tensor their views cover. Its ``valid_shape=`` is the part the orchestration's scopes read (a
kernel reads its parameter as its annotation says).
"""

from __future__ import annotations

import re
from typing import Any

from pypto.ir import DataType, DynDim, Expr, ScalarType, TupleExpr, Var, get_op
from pypto.ir.extents import Extent, is_symbolic
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.printer import format_expr
from pypto.language.annotations import TensorSpec, dynamic
from pypto.language.dslops import hand_built
from pypto.language.parser import views
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.convert import attribute
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, index_tuple, is_number, static_shape


@hand_built(tensor_ops.create)
def build_create_tensor(ctx: OpContext, shape: Any, dtype: Any, manual_dep: Any = False) -> Any:
    """A fresh global-memory tensor of ``shape`` (ints, dynamic extents, or on the host plane
    run-time integer scalars) and ``dtype``."""
    spec = get_op(tensor_ops.create)
    declared = {a.name: a for a in spec.attrs}
    attrs: dict[str, Any] = {"dtype": attribute(ctx, spec, declared["dtype"], dtype)}
    if attribute(ctx, spec, declared["manual_dep"], manual_dep):
        attrs["manual_dep"] = True
    if not run_time_shape(shape):
        return ctx.call(
            tensor_ops.create, [], {"shape": static_shape(shape, ctx.span, dynamic=True), **attrs}
        )
    if ctx.body.on_device:
        raise ctx.fail(
            f"the shape {describe_value(shape)} holds a run-time value, which only the orchestration can "
            "size a tensor with",
            "create the tensor before the `with pl.at(...)` block, where its extents are known, and use "
            "it in the scope",
        )
    dims, given = host_shape(ctx, shape, "shape")
    return ctx.call(tensor_ops.create, [given], {"shape": dims, **attrs})


def host_view(
    ctx: OpContext,
    x: Expr,
    shape: Any,
    offset: Any,
    valid_shape: Any,
    drop_dims: Any,
    pad_value: Any,
    clamp: Any,
) -> Expr:
    """``pl.slice(tensor, shape, offset, ...)`` in the orchestration: a view of the tensor (see the
    module doc). A window of constant offset and extents past the tensor's end is a ``ParseError``
    here unless ``clamp=True``; one known only at run time is cut at the end when it runs."""
    if drop_dims is not None:
        raise ctx.fail(
            "drop_dims= reshapes a view, which the orchestration does not: it passes views to kernels "
            "as they are",
            "slice without drop_dims= and annotate the kernel parameter with the unit dim, or drop the "
            "dim inside a pl.at scope",
        )
    full = x.type.shape  # type: ignore[attr-defined]
    if run_time_shape(shape):
        dims, given = host_shape(ctx, shape, "shape")
    else:
        dims, given = static_shape(shape, ctx.span, dynamic=True), None
    offsets = index_tuple(offset, ctx.span, "offset")
    if len(dims) != len(full) or len(offsets.elements) != len(full):
        return ctx.call(tensor_ops.slice, [x, offsets], {"shape": dims})  # the type rule says what is wrong
    clamp = views.flag(ctx, clamp, "clamp")
    if not clamp:
        views.check_inside(ctx, dims, offsets.elements, full)
    valid = None
    if valid_shape is not None:
        extents = given.elements if given is not None else tuple(views.consts(dims))
        stated = index_tuple(valid_shape, ctx.span, "valid_shape").elements
        cut = views.narrowed(ctx, list(extents), stated, list(extents))
        if not all(views.same_extent(v, n) for v, n in zip(cut, extents, strict=True)):
            valid = index_tuple(cut, ctx.span, "valid_shape")
    args: list[Any] = [x, offsets]
    if given is not None:  # the window's run-time extents: after the valid shape (all of it, if not cut)
        args += [valid if valid is not None else given, given]
    elif valid is not None:
        args.append(valid)
    attrs: dict[str, Any] = {"shape": dims}
    pad = None if pad_value is None else views.as_pad(ctx, pad_value, "pad_value")
    if pad is not None:
        attrs["pad_value"] = pad
    if clamp:
        attrs["clamp"] = True
    view = ctx.call(tensor_ops.slice, args, attrs)
    if valid is None:
        ctx.body.valid.pop(view, None)  # valid where its window is: no valid shape to read through
    else:
        ctx.body.host_views[view] = valid  # what the orchestration's scopes read of it
    if pad is not None:
        ctx.body.pads[view] = pad
    return view


def host_shape(ctx: OpContext, values: Any, what: str) -> tuple[tuple[Extent, ...], TupleExpr]:
    """A host tensor's extents (ints, dynamic extents, and a dynamic extent for each run-time
    scalar) and the ``shape`` operand that computes them when the orchestration runs."""
    if not isinstance(values, (list, tuple)) or not values:
        static_shape(values, ctx.span, what, dynamic=True)  # the error it gives
    dims: list[Extent] = []
    for axis, value in enumerate(values):
        if is_number(value) or is_symbolic(value):
            dims.extend(static_shape([value], ctx.span, what, dynamic=True))
        elif _integer_scalar(value):
            dims.append(host_dim(ctx, value, axis))
        else:
            raise ctx.fail(
                f"{what} must hold ints or integer scalars, got {describe_value(value)}",
                f"write each extent as an int or an integer run-time scalar (convert another with "
                f"pl.cast(x, pl.INDEX)), e.g. {what}=[16, n]",
            )
    return tuple(dims), index_tuple(list(values), ctx.span, what)


def host_dim(ctx: OpContext, value: Expr, axis: int) -> DynDim:
    """The dynamic extent standing for run-time ``value``: the one an annotation of the assignment
    names at ``axis`` (``x: pl.Tensor[[16, D], ...] = pl.create_tensor([16, n], ...)``, as the
    printer writes it), else the function's one for that expression, made on first use."""
    key: Any = value if isinstance(value, Var) else format_expr(value)
    annotated = ctx.body.annotation
    if isinstance(annotated, TensorSpec) and annotated.shape is not None and axis < len(annotated.shape):
        named = annotated.shape[axis]
        if isinstance(named, DynDim):
            ctx.body.host_dims.setdefault(key, named)
            return named
    known = ctx.body.host_dims.get(key)
    if known is None:
        known = dynamic(_extent_name(value))
        ctx.body.host_dims[key] = known
    return known


def annotated_shape(body: BodyBuilder, shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """An annotation's tensor shape with each run-time extent (``x: pl.Tensor[[16, n], ...]``)
    the dynamic extent the function names it by, where it has one."""
    return tuple(
        body.host_dims.get(d if isinstance(d, Var) else format_expr(d), d)
        if isinstance(d, Expr) and not is_symbolic(d)
        else d
        for d in shape
    )


def _extent_name(value: Expr) -> str:
    """A name for the dynamic extent of a run-time expression: its variable's, else its text as
    an identifier (``n * 2`` -> ``n_2``)."""
    text = format_expr(value)
    name = re.sub(r"\W+", "_", text).strip("_") or "extent"
    return name if name.isidentifier() else f"extent_{name}"


def _integer_scalar(value: Any) -> bool:
    if not isinstance(value, Expr) or not isinstance(value.type, ScalarType):
        return False
    return value.type.dtype.is_integer and value.type.dtype is not DataType.BOOL


def run_time_shape(values: Any) -> bool:
    """Whether a shape list holds a run-time scalar (not a number, not a dynamic extent)."""
    if not isinstance(values, (list, tuple)):
        return False
    return any(
        not (is_number(v) or is_symbolic(v)) and isinstance(v, Expr) and isinstance(v.type, ScalarType)
        for v in values
    )
