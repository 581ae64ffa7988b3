"""Kernel signatures: parameters with their annotations, and parameters bound to concrete types."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pypto.ir import Direction, ParseError, PyptoError, SourceSpan, Type
from pypto.language.annotations import (
    AnnotationSpec,
    ArraySpec,
    ParamSignature,
    TaskIdSpec,
    TensorView,
    TileSpec,
    as_spec,
)
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env, Namer
from pypto.language.parser.exprs import ExprParser

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


def read_signature(kernel: KernelFunction) -> tuple[ParamSignature, ...]:
    """The kernel's parameters; a parameter without annotation is a ``ParseError`` at its name."""
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
        if isinstance(spec, TileSpec):
            raise ParseError(
                f"parameter '{arg.arg}' is annotated as a tile; kernel parameters are tensors or scalars",
                source.span(arg.annotation),
                "pass a pl.Tensor and load tiles from it with pl.load inside the kernel",
            )
        if isinstance(spec, TaskIdSpec):
            raise ParseError(
                f"parameter '{arg.arg}' is annotated as a task id; kernel parameters are tensors or scalars",
                source.span(arg.annotation),
                "bind a task id inside the body with `with pl.at(...) as tid:` and pass it in deps=[tid]",
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
