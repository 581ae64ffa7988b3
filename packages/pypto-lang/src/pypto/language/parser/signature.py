"""Kernel signatures: parameters with their annotations, and parameters bound to concrete types."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pypto.ir import DataType, Direction, DynDim, ParseError, PyptoError, SourceSpan, Type
from pypto.ir.extents import is_symbolic
from pypto.language.annotations import (
    AnnotationSpec,
    ArraySpec,
    HandleSpec,
    ParamSignature,
    ScalarSpec,
    TensorSpec,
    TensorView,
    TileSpec,
    as_spec,
)
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env, Namer
from pypto.language.parser.exprs import ExprParser
from pypto.language.parser.resolve import recording_reads
from pypto.language.parser.values import describe_value, is_number, number

if TYPE_CHECKING:
    from pypto.language.kernel import KernelFunction


@dataclass(frozen=True)
class BoundParam:
    """A parameter specialized for one call: its IR type, direction, and (for a scalar passed
    as a Python number) the compile-time value."""

    name: str
    type: Type
    direction: Direction = Direction.In
    value: int | float | bool | None = None
    span: SourceSpan | None = None
    view: TensorView | None = None  # a tensor's pl.TensorView: its valid shape, in the body


class _AnnotationCalls:
    """Annotations are constants: calling a kernel in one is an error."""

    def call_kernel(
        self,
        parser: ExprParser,
        callee: Any,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call,
        task_attrs: dict[str, Any] | None = None,
    ) -> Any:
        raise parser.error(
            node,
            f"an annotation cannot call {callee!r}",
            "an annotation names a type, e.g. pl.Tensor[[64, 64], pl.FP32]: compute its shape from constants",
        )


def evaluate_annotation(kernel: KernelFunction, node: ast.expr, env: Env | None = None) -> AnnotationSpec:
    """Evaluate an annotation's AST against the kernel's names: ``pl.Tile[[64, 64], pl.FP32]``."""
    parser = ExprParser(
        kernel.source, kernel.names, env or Env(), BodyBuilder(Namer(), False), _AnnotationCalls()
    )
    value = parser.expr(node)
    try:
        return as_spec(value)
    except PyptoError as err:
        raise err.with_span(kernel.source.span(node)) from None


def signature_of(kernel: KernelFunction) -> tuple[ParamSignature, ...]:
    """The kernel's parameters with their evaluated annotations, read once and again when a global
    or closure value a postponed, string annotation names has changed since."""
    cached = kernel.signature_cache
    if cached is None or cached[1].changed() is not None:
        with recording_reads() as reads:
            params = read_signature(kernel)
        cached = kernel.signature_cache = (params, reads)
    return cached[0]


def read_signature(kernel: KernelFunction) -> tuple[ParamSignature, ...]:
    """The kernel's parameters; a parameter without annotation is a ``ParseError`` at its name."""
    return _with_dynamic_binds(kernel, _declared(kernel))


def tensor_params(kernel: KernelFunction) -> dict[str, TensorSpec]:
    """The parameters of an ``@pl.jit.inline`` helper annotated as tensors (``bind_dynamic``
    applied): an inline helper's other parameters may be unannotated or tiles."""
    declared = _declared(kernel, strict=False)
    return {p.name: p.spec for p in _with_dynamic_binds(kernel, declared) if isinstance(p.spec, TensorSpec)}


def _declared(kernel: KernelFunction, strict: bool = True) -> tuple[ParamSignature, ...]:
    """The parameters with their annotations; not ``strict``: those without one, or with one no
    kernel parameter may have (a tile), are left out instead of being an error."""
    source = kernel.source
    args = source.tree.args
    for extra in (args.vararg, args.kwarg, *args.posonlyargs):
        if extra is not None:
            raise ParseError(
                f"parameter '{extra.arg}': *args, **kwargs and positional-only parameters are not supported",
                source.span(extra),
                "declare each parameter by name with its annotation, e.g. "
                "def k(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]])"
                + ("; drop the `/`" if extra in args.posonlyargs else ""),
            )
    evaluated = getattr(kernel.func, "__annotations__", {})
    params = []
    positional = args.args[1:] if kernel.skips_self else args.args
    for arg in (*positional, *args.kwonlyargs):
        span = source.span(arg)
        if arg.annotation is None and not strict:
            continue
        if arg.annotation is None:
            raise ParseError(
                f"Parameter '{arg.arg}' missing type annotation",
                span,
                f"annotate it, e.g. {arg.arg}: pl.Tensor[[128, 128], pl.FP32], or {arg.arg}: pl.Tensor "
                "to take shape and dtype from the argument",
            )
        raw = evaluated.get(arg.arg)
        # Python already evaluated the annotation at def time (closure names included) unless
        # annotations are postponed strings.
        if raw is None or isinstance(raw, str):
            spec = evaluate_annotation(kernel, arg.annotation)
        else:
            try:
                spec = as_spec(raw)
            except PyptoError as err:
                raise err.with_span(source.span(arg.annotation)) from None
        if not strict and not isinstance(spec, (TensorSpec, ScalarSpec)):
            continue
        if isinstance(spec, TileSpec):
            raise ParseError(
                f"parameter '{arg.arg}' is annotated as a tile; kernel parameters are tensors or scalars",
                source.span(arg.annotation),
                "pass a pl.Tensor and load tiles from it with pl.load inside the kernel",
            )
        if isinstance(spec, ScalarSpec) and spec.dtype is DataType.TASK_ID:
            raise ParseError(
                f"parameter '{arg.arg}' is annotated as a task id; kernel parameters are tensors or scalars",
                source.span(arg.annotation),
                "bind a task id inside the body with `with pl.at(...) as tid:` and pass it in deps=[tid]",
            )
        if isinstance(spec, HandleSpec):
            raise ParseError(
                f"parameter '{arg.arg}' is annotated {spec}, a handle; kernel parameters are tensors "
                "or scalars",
                source.span(arg.annotation),
                "make the handle inside the kernel that uses it: ctx = pl.prefetch.make_context(), "
                "evt = pl.prefetch.async_prefetch(x, ctx), session = pl.prefetch.session(ctx)",
            )
        if isinstance(spec, ArraySpec):
            raise ParseError(
                f"parameter '{arg.arg}' is annotated as a scalar array; kernel parameters are tensors "
                "or scalars",
                source.span(arg.annotation),
                "pass the values in a pl.Tensor and copy them into an array made in the kernel with "
                "pl.array.create(n, dtype)",
            )
        params.append(ParamSignature(arg.arg, spec, span))
    return tuple(params)


def is_bind_dynamic(node: ast.stmt) -> bool:
    """Whether ``node`` is an ``x.bind_dynamic(axis, M)`` statement."""
    call = node.value if isinstance(node, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "bind_dynamic"
        and isinstance(call.func.value, ast.Name)
    )


BIND_DYNAMIC_HINT = (
    'write x.bind_dynamic(axis, M) with M = pl.dynamic("M") at module level, as a statement at the '
    "top level of the body: dim `axis` of parameter x is then M, bound per call"
)


def _with_dynamic_binds(
    kernel: KernelFunction, params: tuple[ParamSignature, ...]
) -> tuple[ParamSignature, ...]:
    """``params`` with the dims that ``x.bind_dynamic(axis, M)`` statements at the top level of the
    body make dynamic: they are no part of the specialization, and the body reads them as ``M``."""
    by_name = {p.name: p for p in params}
    for node in kernel.source.tree.body:
        if not is_bind_dynamic(node):
            continue
        call: ast.Call = node.value  # type: ignore[attr-defined]
        name = call.func.value.id  # type: ignore[attr-defined]
        param = by_name.get(name)
        if param is None or not isinstance(param.spec, TensorSpec):
            what = "no parameter" if param is None else f"the parameter '{name}', annotated {param.spec}"
            raise ParseError(
                f"{name}.bind_dynamic(...) names {what}: it makes a dim of a tensor parameter dynamic",
                kernel.source.span(call.func),
                BIND_DYNAMIC_HINT,
            )
        axis, dim = _bind_dynamic_args(kernel, call)
        by_name[name] = replace(param, spec=_bound(param.spec, axis, dim, kernel.source.span(call)))
    return tuple(by_name[p.name] for p in params)


def _bind_dynamic_args(kernel: KernelFunction, call: ast.Call) -> tuple[int, DynDim]:
    """The ``(axis, M)`` of ``x.bind_dynamic(axis, M)``: a whole number and a ``pl.dynamic`` extent."""
    if len(call.args) != 2 or call.keywords:
        raise ParseError(
            f"{ast.unparse(call.func)}() takes the dim and the extent, got {ast.unparse(call)}",
            kernel.source.span(call),
            BIND_DYNAMIC_HINT,
        )
    parser = ExprParser(kernel.source, kernel.names, Env(), BodyBuilder(Namer(), False), _AnnotationCalls())
    axis, dim = (parser.expr(a) for a in call.args)
    axis = number(axis) if is_number(axis) else axis
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ParseError(
            f"bind_dynamic's dim must be a whole number known at compile time, got {describe_value(axis)}",
            kernel.source.span(call.args[0]),
            BIND_DYNAMIC_HINT,
        )
    if not isinstance(dim, DynDim):
        raise ParseError(
            f"bind_dynamic's extent must be a pl.dynamic extent, got {describe_value(dim)}",
            kernel.source.span(call.args[1]),
            BIND_DYNAMIC_HINT,
        )
    return axis, dim


def _bound(spec: TensorSpec, axis: int, dim: DynDim, span: SourceSpan) -> TensorSpec:
    """``spec`` with dim ``axis`` the dynamic extent ``dim``."""
    if spec.shape is None:
        if any(a == axis and d != dim for a, d in spec.bound_axes):
            raise ParseError(f"dim {axis} is made dynamic twice", span, "bind each dim once")
        return replace(spec, bound_axes=(*spec.bound_axes, (axis, dim)))
    rank = len(spec.shape)
    if not -rank <= axis < rank:
        raise ParseError(
            f"bind_dynamic names dim {axis} of a parameter annotated {spec}, which has {rank} dim(s)",
            span,
            f"name a dim from 0 to {rank - 1}",
        )
    current = spec.shape[axis]
    if is_symbolic(current) and current != dim:
        raise ParseError(
            f"dim {axis} of the parameter is already the dynamic extent {current!r}",
            span,
            "drop the bind_dynamic, or annotate the dim with a number",
        )
    shape = list(spec.shape)
    shape[axis] = dim
    return replace(spec, shape=tuple(shape))
