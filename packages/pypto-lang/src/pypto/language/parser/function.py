"""Parsing one kernel into an IR ``Function`` for one specialization of its parameters."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from pypto.ir import Function, FunctionKind, Param, ScalarType, Var
from pypto.language.kernel import KernelFunction
from pypto.language.parser.attrs import leading_func_attr
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env, Namer
from pypto.language.parser.exprs import KernelCalls
from pypto.language.parser.signature import BoundParam, is_bind_dynamic
from pypto.language.parser.stmts import Role, StmtParser
from pypto.language.parser.values import const

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
) -> Function:
    """Parse ``kernel``'s body with ``params`` bound.

    >>> parse_function(helper, FunctionKind.InCore, bound, program)  # doctest: +SKIP


    ``body``: the statements to parse (default: the whole ``def`` body); ``decorator_attrs``: the
    attributes ``@pl.function(attrs=...)`` gives it; ``plane_free``: an ``Opaque`` ``@pl.function``,
    which takes its plane from where it is used, may hold tensor and tile ops anywhere. ``InCore``, ``AIC``
    and ``AIV`` bodies run on a core (tile ops, pipes); the other kinds are on the control plane.
    A ``pl.func_attr({...})`` opening the body gives the function its attributes (an
    ``@pl.jit.incore`` kernel's ``{"split": ...}`` as much as a ``@pl.function``'s).
    A scalar parameter bound to a value reads as that ``Const`` in the body (the value is part
    of the specialization); the parameter itself stays in the signature.
    """
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
    builder = BodyBuilder(namer, kernel=on_core)
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
    nodes = [n for n in nodes if not is_bind_dynamic(n)]  # read with the signature
    if not kernel.auto_scope and not on_core:
        attrs = {**attrs, "auto_scope": False}  # the author places its AUTO runtime scopes
    parser = StmtParser(kernel, kernel.source, kernel.names, env, builder, calls, role, outputs)
    parser.function_body(nodes)
    span = kernel.source.span(kernel.source.tree)
    return Function(name or kernel.name, tuple(ir_params), builder.statements, kind, span, attrs)
