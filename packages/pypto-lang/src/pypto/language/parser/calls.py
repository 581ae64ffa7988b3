"""Calls from a kernel body to other kernels: ``@pl.jit.incore`` helpers, ``@pl.jit.opaque``
control-plane functions and ``@pl.jit.inline`` splices."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from pypto.ir import (
    UNIT,
    DistributedTensorType,
    DynDim,
    Eval,
    Expr,
    Function,
    PyptoError,
    Return,
    ScalarType,
    SourceSpan,
    TensorType,
    TupleType,
    Type,
    TypeCheckError,
    Var,
    make_call,
)
from pypto.ir.extents import ExtentBinding, is_symbolic
from pypto.ir.ops import op
from pypto.ir.types import describe
from pypto.language.annotations import ScalarSpec, TensorSpec
from pypto.language.kernel import KernelFunction
from pypto.language.parser.env import Env
from pypto.language.parser.exprs import ExprParser, KernelCalls
from pypto.language.parser.signature import BoundParam, ParamSignature, signature_of, tensor_params
from pypto.language.parser.stmts import Role, StmtParser
from pypto.language.parser.tasks import NoDep
from pypto.language.parser.values import describe_value, integer_converted, is_number, number, scalar_expr

KernelFor = Callable[[KernelFunction, tuple[BoundParam, ...]], Function]


def bind_arguments(
    parser: ExprParser, callee: KernelFunction, args: list[Any], kwargs: dict[str, Any], node: ast.Call
) -> dict[str, Any]:
    """Match call arguments to ``callee``'s parameters by Python's rules (defaults included)."""
    signature = callee.python_signature
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        params = ", ".join(
            str(p.replace(annotation=inspect.Parameter.empty)) for p in signature.parameters.values()
        )
        raise parser.error(node, f"{callee.name}(): {exc}", f"call it as {callee.name}({params})") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def bind_param(
    parser: ExprParser,
    callee: KernelFunction,
    sig: ParamSignature,
    value: Any,
    node: ast.Call,
    extents: ExtentBinding | None = None,
) -> tuple[BoundParam, Expr]:
    """The helper parameter specialized on the call-site value, and the call's argument.

    A tensor parameter annotated with dynamic extents (``[M, 128]``) takes any extent there and
    keeps its annotated type (the callee binds ``M`` from the tensor it is passed, at each call);
    ``extents`` collects what the call's static extents bind, so that two parameters sharing
    ``M`` are checked against each other at the call."""
    where = f"argument '{sig.name}' of {callee.name}()"
    span = parser.span(node)
    if isinstance(sig.spec, ScalarSpec):
        dtype = sig.spec.dtype
        arg = (
            scalar_expr(number(value), dtype, span)
            if is_number(value)
            else integer_converted(value, dtype, span)
        )
        if isinstance(arg, Expr) and arg.type == ScalarType(dtype):
            constant = number(arg) if is_number(arg) else None
            return BoundParam(sig.name, arg.type, value=constant, span=sig.span), arg
        raise TypeCheckError(
            f"{where} must be a pl.{dtype.name} scalar, got {describe_value(value)}",
            span,
            f"pass a number or a pl.{dtype.name} scalar; convert another scalar with "
            f"pl.cast(x, pl.{dtype.name})",
        )
    spec: TensorSpec = sig.spec  # type: ignore[assignment]
    value = parser.body.atom(value)
    if spec.distributed and isinstance(value, Var) and not isinstance(value.type, DistributedTensorType):
        raise TypeCheckError(
            f"{where} must be a pld.DistributedTensor (a window), got {describe_value(value)}",
            span,
            "pass a window made in the HOST function: buf = pld.alloc_window_buffer(...); "
            "w = pld.window(buf, shape, dtype=...)",
        )
    if not (isinstance(value, Var) and isinstance(value.type, TensorType)):
        raise TypeCheckError(
            f"{where} must be a tensor, got {describe_value(value)}",
            span,
            "pass a tensor: a parameter of the caller or a pl.create_tensor(...) result",
        )
    t = value.type
    try:
        shape = spec.shape_for(t.shape)
    except PyptoError as err:
        raise err.with_span(span) from None
    mismatch = _shape_mismatch(shape, t.shape)
    if mismatch is not None or (spec.dtype is not None and spec.dtype != t.dtype):
        fits = replace(spec, shape=t.shape, dtype=t.dtype, bound_axes=())
        raise TypeCheckError(
            f"{where} is {describe(t)} but the parameter is annotated {spec}{mismatch or ''}",
            span,
            f"pass a tensor that matches the annotation, or annotate the parameter {fits} "
            "(a bare pl.Tensor takes any shape and dtype; a pl.dynamic extent any extent)",
        )
    bound = spec.type_of(shape, t.dtype)
    if extents is not None:
        with _at_call(callee, span):
            extents.bind(sig.name, bound, t.shape, span)
    return BoundParam(sig.name, bound, spec.direction, span=sig.span, view=spec.view), value


def _shape_mismatch(annotated: tuple[Any, ...], actual: tuple[Any, ...]) -> str | None:
    """Where an argument's shape does not fit its annotation (None when it does): another rank,
    or a dim whose number differs (a dynamic extent in the annotation takes any extent there; an
    argument's extent known only at run time is checked when the kernel launches)."""
    if len(annotated) != len(actual):
        return f" ({len(actual)} dim(s), not {len(annotated)})"
    for axis, (want, got) in enumerate(zip(annotated, actual, strict=True)):
        if not is_symbolic(want) and not is_symbolic(got) and want != got:
            return f" (dim {axis} is {got!r}, not {want})"
    return None


def check_call_extents(
    parser: ExprParser, callee: KernelFunction, extents: ExtentBinding, node: ast.Call
) -> None:
    """What the call's static extents bind agrees across its parameters (``M`` of ``x`` and of
    ``out``) and fits each expression extent (``M * 2``); extents known only at run time are
    bound, and checked, by the callee when it runs."""
    with _at_call(callee, parser.span(node)):
        extents.resolve(strict=False)


@contextmanager
def _at_call(callee: KernelFunction, span: SourceSpan) -> Iterator[None]:
    """An extent of the call that does not fit: a TypeCheckError at the call, naming the callee."""
    try:
        yield
    except PyptoError as err:
        raise TypeCheckError(f"{callee.name}(): {err.message}", span, err.hint) from None


def returned_params(fn: Function) -> tuple[list[int], Type]:
    """Which params ``fn`` returns (by index), and the type a call of ``fn`` has."""
    ret = next((s for s in reversed(fn.body) if isinstance(s, Return)), None)
    if ret is None:
        return [], UNIT
    indexes = [next(i for i, p in enumerate(fn.params) if p.var is v) for v in ret.values]
    types = [fn.params[i].var.type for i in indexes]
    return indexes, UNIT if not types else types[0] if len(types) == 1 else TupleType(tuple(types))


def incore_call(
    parser: ExprParser,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    kernel_for: KernelFor,
    task_attrs: dict[str, Any] | None = None,
) -> Any:
    """``y = helper(a, b, out)``: emit ``Eval(call(...))``; ``task_attrs`` join the call's attrs.

    ``y`` aliases the tensor passed for the returned parameter; no new variable is made.
    """
    if parser.body.on_device:
        raise parser.error(
            node,
            f"{callee.name}() is an @pl.jit.incore kernel: call it from the @pl.jit body, "
            "outside pl.at scopes",
            "move the call out of the `with pl.at(...)` block (the kernel is a task of its own), or "
            "mark the helper @pl.jit.inline to splice its body in here",
        )
    return function_call(
        parser, callee, args, kwargs, node, kernel_for, {**parser.body.task_attrs(), **(task_attrs or {})}
    )


def opaque_call(
    parser: ExprParser,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    kernel_for: KernelFor,
) -> Any:
    """``y = block(x, w, out)`` of an ``@pl.jit.opaque`` function: a host-side call, not a task.

    The tasks the callee launches are ordered against the caller's through the tensors it is
    passed, as if its body stood here; ``y`` aliases the tensor passed for the returned parameter.
    """
    where = _device_place(parser)
    if where is not None:
        raise parser.error(
            node,
            f"{callee.name}() is an @pl.jit.opaque function: it runs on the control plane and cannot "
            f"be called {where}",
            "call it from the @pl.jit body (or another @pl.jit.opaque function), outside "
            "`with pl.at(...)`; to compute its body on the core group, mark it @pl.jit.inline",
        )
    if any(isinstance(v, NoDep) for v in (*args, *kwargs.values())):
        raise parser.error(
            node,
            f"pl.no_dep marks an argument of a kernel call, but {callee.name}() is an @pl.jit.opaque "
            "function (its call is no task)",
            f"mark the argument where {callee.name}() calls the kernel, or give its pl.at scope "
            "no_dep_args=[...]",
        )
    task_scope = _task_scope(parser)
    if task_scope is not None:
        raise parser.error(
            node,
            f"{callee.name}() is an @pl.jit.opaque function and cannot be called inside {task_scope}: "
            "the tasks it launches would not take the block's settings",
            f"open {task_scope} inside {callee.name}() around the scopes it should apply to",
        )
    return function_call(parser, callee, args, kwargs, node, kernel_for, {})


def _device_place(parser: ExprParser) -> str | None:
    """Where on a core group the parser stands, in words, or None on the control plane."""
    if parser.body.kernel:
        return "from an @pl.jit.incore kernel (its body runs on a core group)"
    if parser.body.in_scope:
        return "inside a `with pl.at(...)` scope (its body runs on a core group)"
    return None


def _task_scope(parser: ExprParser) -> str | None:
    """The enclosing block that sets attrs of the tasks launched in it, if any."""
    if parser.body.manual:
        return "pl.manual_scope()"
    if parser.body.block_num > 1:
        return "a pl.spmd loop"
    return None


def function_call(
    parser: ExprParser,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    kernel_for: KernelFor,
    attrs: dict[str, Any],
) -> Any:
    """Bind the arguments, get ``callee``'s function for them, and emit ``Eval(call(...))``;
    the value is the tensor(s) passed for the parameters the callee returns."""
    values = bind_arguments(parser, callee, args, kwargs, node)
    bound, call_args, untracked = [], [], []
    extents = ExtentBinding()
    for index, sig in enumerate(signature_of(callee)):
        value = values[sig.name]
        if isinstance(value, NoDep):
            if isinstance(sig.spec, ScalarSpec):
                raise parser.error(
                    node,
                    f"pl.no_dep marks a tensor argument, but '{sig.name}' of {callee.name}() is a scalar",
                    "wrap only the tensors whose dependency tracking this call should skip",
                )
            untracked.append(index)
            value = value.value
        param, arg = bind_param(parser, callee, sig, value, node, extents)
        bound.append(param)
        call_args.append(arg)
    check_call_extents(parser, callee, extents, node)
    fn = kernel_for(callee, tuple(bound))
    returned, result_type = returned_params(fn)
    span = parser.span(node)
    attrs = dict(attrs)
    if untracked:
        attrs["no_dep"] = tuple(sorted({*attrs.get("no_dep", ()), *untracked}))
    dumps = [v.name for v in parser.body.tagged(call_args)]
    if dumps:
        attrs["dumps"] = (*attrs.get("dumps", ()), *(d for d in dumps if d not in attrs.get("dumps", ())))
    call = make_call(op.call, call_args, {"callee": fn.name, **attrs}, span, type=result_type)
    parser.body.emit(Eval(call, span))
    aliases = tuple(call_args[i] for i in returned)
    return None if not aliases else aliases[0] if len(aliases) == 1 else aliases


def inline_call(
    parser: ExprParser,
    callee: KernelFunction,
    args: list[Any],
    kwargs: dict[str, Any],
    node: ast.Call,
    calls: KernelCalls,
) -> Any:
    """Splice an ``@pl.jit.inline`` body into the caller; the call's value is what it returns.

    A tensor parameter annotated with dynamic extents (``[M, 128]``) takes any extent there, and
    the spliced body reads ``M`` as the extent the argument has (``64``, or the caller's own)."""
    env = Env()
    span = parser.span(node)
    extents = ExtentBinding()
    given: dict[DynDim, Any] = {}  # each extent the callee's annotations name: the caller's extent
    tensors = tensor_params(callee)
    for name, value in bind_arguments(parser, callee, args, kwargs, node).items():
        spec = tensors.get(name)
        if spec is not None and (spec.shape or spec.bound_axes):
            sig = ParamSignature(name, spec, parser.span(node))
            param, value = bind_param(parser, callee, sig, value, node, extents)
            for want, got in zip(param.type.shape, value.type.shape, strict=True):  # type: ignore[attr-defined]
                if isinstance(want, DynDim):
                    given.setdefault(want, got)
        env.bind(name, parser.body.atom(value), span)  # an op argument is computed once
    check_call_extents(parser, callee, extents, node)
    given.update(extents.values)
    for name, dim in _extent_names(callee).items():
        if dim in given and env.lookup(name) is None:
            env.bind(name, given[dim], span)
    inner = StmtParser(callee, callee.source, callee.names, env, parser.body, calls, Role.inline)
    inner.stmts(callee.source.tree.body)
    values = inner.returned or ()
    return None if not values else values[0] if len(values) == 1 else values


def _extent_names(callee: KernelFunction) -> dict[str, DynDim]:
    """The names the callee's body reads that are dynamic extents of its module or closure."""
    found: dict[str, DynDim] = {}
    for n in ast.walk(callee.source.tree):
        if isinstance(n, ast.Name) and n.id not in found:
            known, value = callee.names.lookup(n.id)
            if known and isinstance(value, DynDim):
                found[n.id] = value
    return found
