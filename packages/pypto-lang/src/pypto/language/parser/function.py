"""Parsing one kernel into an IR ``Function`` for one specialization of its parameters."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from pypto.ir import INDEX, Const, DynDim, Expr, Function, FunctionKind, Param, ScalarType, TensorType, Var
from pypto.ir import Level as HierarchyLevel
from pypto.ir import Role as FunctionRole
from pypto.ir.ops import Level, PadValue
from pypto.language.kernel import KernelFunction
from pypto.language.parser.attrs import leading_func_attr
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env, Namer
from pypto.language.parser.exprs import KernelCalls
from pypto.language.parser.fills import FillLevels, parse_with_fill_levels
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.signature import BoundParam, is_bind_dynamic
from pypto.language.parser.stmts import Role, StmtParser
from pypto.language.parser.values import const, index_tuple
from pypto.language.parser.views import same_extent, set_tensor_validshape

_ROLES = {FunctionKind.InCore: Role.incore, FunctionKind.Opaque: Role.opaque}


def parse_function(
    kernel: KernelFunction,
    kind: FunctionKind,
    params: Sequence[BoundParam],
    calls: KernelCalls,
    name: str | None = None,
    body: Sequence[ast.stmt] | None = None,
    decorator_attrs: dict[str, Any] | None = None,
    plane_free: bool = False,
    host: bool = False,
) -> Function:
    """Parse ``kernel``'s body with ``params`` bound.

    >>> parse_function(helper, FunctionKind.InCore, bound, program)  # doctest: +SKIP


    ``body``: the statements to parse (default: the whole ``def`` body); ``decorator_attrs``: the
    attributes ``@pl.function(attrs=...)`` gives it; ``plane_free``: an ``Opaque`` ``@pl.function``,
    which takes its plane from where it is used, may hold tensor and tile ops anywhere; ``host``: a
    HOST function, which drives the ranks (``pld.*`` host ops, dispatches). ``InCore``, ``AIC``
    and ``AIV`` bodies run on a core (tile ops, pipes); the other kinds are on the control plane.
    A ``pl.func_attr({...})`` opening the body gives the function its attributes (an
    ``@pl.jit.incore`` kernel's ``{"split": ...}`` as much as a ``@pl.function``'s).
    A scalar parameter bound to a value reads as that ``Const`` in the body (the value is part
    of the specialization); the parameter itself stays in the signature. The body is parsed
    again while a ``pl.full`` must take the other level (:mod:`~pypto.language.parser.fills`).
    """
    # A fill is a tensor where the compiler tiles tensor ops, a tile in a cube or vector function.
    default = Level.TILE if kind in (FunctionKind.AIC, FunctionKind.AIV) else Level.TENSOR
    levels = FillLevels(default)
    return parse_with_fill_levels(
        levels,
        lambda: _parse_once(
            kernel, kind, params, calls, name, body, decorator_attrs, plane_free, levels, host
        ),
    )


def _parse_once(
    kernel: KernelFunction,
    kind: FunctionKind,
    params: Sequence[BoundParam],
    calls: KernelCalls,
    name: str | None,
    body: Sequence[ast.stmt] | None,
    decorator_attrs: dict[str, Any] | None,
    plane_free: bool,
    levels: FillLevels,
    host: bool = False,
) -> Function:
    namer = Namer()
    env = Env()
    ir_params: list[Param] = []
    for p in params:
        var = Var(namer.fresh(p.name), p.type, p.span)
        ir_params.append(Param(var, p.direction))
        if p.value is not None and isinstance(p.type, ScalarType):
            env.bind(p.name, const(p.value, p.type.dtype, p.span), p.span)
        else:
            env.bind(p.name, var, p.span)
    on_core = kind in (FunctionKind.InCore, FunctionKind.AIC, FunctionKind.AIV)
    builder = BodyBuilder(namer, kernel=on_core, fill_levels=levels)
    outputs = tuple(p.var for p in ir_params if p.direction.writes)
    role = _ROLES.get(kind, Role.incore if on_core else Role.entry)
    attrs, nodes = leading_func_attr(
        kernel.source,
        kernel.names,
        {p.name: p for p in params},
        list(kernel.source.tree.body if body is None else body),
    )
    # A function marked split_aiv is written per lane: its boundary ops need no region.
    merged = {**(decorator_attrs or {}), **attrs}
    builder.per_lane = bool(merged.get("split_aiv"))
    builder.function_split = merged.get("split")
    builder.plane_free = plane_free
    builder.host = host
    nodes = [n for n in nodes if not is_bind_dynamic(n)]  # read with the signature
    if not kernel.auto_scope and not on_core and not host:
        attrs = {**attrs, "auto_scope": False}  # the author places its AUTO runtime scopes
    if host:  # host-ness is the level/role pair (no kind of its own)
        attrs = {"level": HierarchyLevel.HOST, "role": merged.get("role", FunctionRole.Orchestrator), **attrs}
    parser = StmtParser(kernel, kernel.source, kernel.names, env, builder, calls, role, outputs)
    param_views(builder, env, params, ir_params)
    parser.function_body(nodes)
    span = kernel.source.span(kernel.source.tree)
    return Function(name or kernel.name, tuple(ir_params), builder.statements, kind, span, attrs)


def param_views(
    body: BodyBuilder, env: Env, params: Sequence[BoundParam], ir_params: Sequence[Param]
) -> None:
    """The parameters whose ``pl.TensorView`` states a valid shape (or a pad) have it in the body: a
    kernel's name reads a view of the parameter made first thing; the entry's tensors take it in
    each ``pl.at`` scope that uses them (:meth:`BodyBuilder.localize`). A ``pl.dynamic`` extent no
    parameter's shape binds leaves its dim whole."""
    bound = {d for p in params for d in getattr(p.type, "shape", ()) if isinstance(d, DynDim)}
    for p, ir in zip(params, ir_params, strict=True):
        view = p.view
        if view is None or not isinstance(p.type, TensorType):
            continue
        shape = p.type.shape
        stated = view.valid_shape or shape
        extents = [
            Const(v, INDEX) if isinstance(v, int) else v if isinstance(v, DynDim) and v in bound else _dim(n)
            for v, n in zip(stated, shape, strict=True)
        ]
        valid = index_tuple(extents, p.span, "valid_shape")
        if (
            all(same_extent(e, _dim(n)) for e, n in zip(extents, shape, strict=True))
            and view.pad is PadValue.null
        ):
            continue
        if not body.kernel:
            body.host_views[ir.var] = valid
            body.valid[ir.var] = valid
            if view.pad is not PadValue.null:
                body.pads[ir.var] = view.pad
            continue
        ctx = OpContext(body, p.span, f"parameter '{p.name}'")
        made = set_tensor_validshape(ctx, ir.var, valid)
        if view.pad is not PadValue.null:
            body.pads[made] = view.pad
        env.bind(p.name, body.assign(p.name, made, p.span), p.span)


def _dim(n: Any) -> Expr:
    return n if isinstance(n, DynDim) else Const(n, INDEX)
