"""Parsing a ``@pl.jit`` entry and the kernels it calls into one IR ``Program``."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from pypto.ir import Eval, Function, FunctionKind, Param, ParseError, Program, Return, Var, make_call
from pypto.ir.ops import op
from pypto.language.kernel import JitKind, KernelFunction
from pypto.language.parser.calls import incore_call, inline_call, opaque_call, returned_params
from pypto.language.parser.dispatch import host_call
from pypto.language.parser.env import Namer
from pypto.language.parser.exprs import ExprParser
from pypto.language.parser.function import parse_function
from pypto.language.parser.signature import BoundParam

# The function kind each called helper's decorator gives (an inline helper leaves no function).
_HELPER_KINDS = {
    JitKind.incore: FunctionKind.InCore,
    JitKind.opaque: FunctionKind.Opaque,
    JitKind.entry: FunctionKind.Orchestration,  # a chip orchestration a HOST function dispatches
}


class ProgramBuilder:
    """The functions of the program being parsed: one InCore (``@pl.jit.incore``) or Opaque
    (``@pl.jit.opaque``) function per helper specialization, wherever the helper is defined."""

    def __init__(self, entry_name: str, entry: KernelFunction | None = None) -> None:
        self.names = Namer([entry_name])
        self.kernels: dict[tuple[Any, ...], Function] = {}
        self.inlining: list[KernelFunction] = []
        # The functions being parsed, outermost first: calling one of them again is recursion.
        self.parsing: list[KernelFunction] = [entry] if entry is not None else []

    def kernel_for(self, kernel: KernelFunction, params: tuple[BoundParam, ...]) -> Function:
        """The function of ``kernel`` for ``params``; a new specialization gets a suffixed name."""
        key = (kernel, tuple((p.type, p.value) for p in params))
        if key not in self.kernels:
            name = self.names.fresh(kernel.name)
            self.parsing.append(kernel)
            try:
                fn = parse_function(kernel, _HELPER_KINDS[kernel.kind], params, self, name)
            finally:
                self.parsing.pop()
            self.kernels[key] = fn
        return self.kernels[key]

    def check_not_recursive(self, parser: ExprParser, callee: KernelFunction, node: ast.Call) -> None:
        """A call of a function still being parsed would make the program call itself forever."""
        if callee not in self.parsing:
            return
        chain = [k.name for k in self.parsing[self.parsing.index(callee) :]] + [callee.name]
        raise parser.error(
            node,
            f"{callee.kind.value} {callee.name}() calls itself ({' -> '.join(chain)}); "
            "a program has no recursion",
            "write the repetition as a loop (for i in pl.range(n):) around one call in the caller",
        )

    def call_kernel(
        self,
        parser: ExprParser,
        callee: KernelFunction,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call,
        task_attrs: dict[str, Any] | None = None,
    ) -> Any:
        if parser.body.host or "device" in kwargs:
            return host_call(parser, callee, args, kwargs, node, self.kernel_for)
        if callee.kind is JitKind.host:
            raise parser.error(
                node,
                f"{callee.name}() is a @pl.jit.host orchestrator: it drives the ranks, called from Python",
                "call it from Python with the host tensors (and config=RunConfig(distributed_config=...))",
            )
        if callee.kind is JitKind.incore:
            return incore_call(parser, callee, args, kwargs, node, self.kernel_for, task_attrs)
        if task_attrs is not None:
            raise not_a_task(parser, callee.name, node)
        if callee.kind is JitKind.opaque:
            self.check_not_recursive(parser, callee, node)
            return opaque_call(parser, callee, args, kwargs, node, self.kernel_for)
        if callee.kind is JitKind.inline:
            if callee in self.inlining:
                raise parser.error(
                    node,
                    f"@pl.jit.inline {callee.name}() calls itself; inlining would not end",
                    "write the repetition as a loop (for i in pl.range(n):) around one call in the caller",
                )
            self.inlining.append(callee)
            try:
                return inline_call(parser, callee, args, kwargs, node, self)
            finally:
                self.inlining.pop()
        raise parser.error(
            node,
            f"{callee.name}() is a @pl.jit entry and cannot be called from a kernel",
            "mark it @pl.jit.incore (a kernel), @pl.jit.opaque (a control-plane function) or "
            "@pl.jit.inline (spliced in) to call it here",
        )


def not_a_task(parser: ExprParser, name: str, node: ast.Call) -> ParseError:
    """``pl.submit`` of a function that is no kernel."""
    return parser.error(
        node,
        f"pl.submit() launches a kernel, and {name}() is none",
        "submit an @pl.jit.incore function (or a program's InCore function); call other functions directly",
    )


def parse_program(kernel: KernelFunction, params: Sequence[BoundParam]) -> Program:
    """The parsed (not lowered) program of ``kernel`` for ``params``: ``parse_program(k, bound)``.

    An ``@pl.jit.incore`` kernel parsed on its own gets an Orchestration entry of the same name
    that calls it (the kernel itself is named ``<name>_kernel``); an ``@pl.jit.opaque`` function
    parsed on its own is the entry.
    """
    builder = ProgramBuilder(kernel.name, kernel)
    if kernel.kind is JitKind.incore:
        return _standalone_incore(kernel, tuple(params), builder)
    host = kernel.kind is JitKind.host
    entry = parse_function(kernel, FunctionKind.Orchestration, params, builder, host=host)
    return Program(kernel.name, (entry, *builder.kernels.values()), kernel.name)


def _standalone_incore(
    kernel: KernelFunction, params: tuple[BoundParam, ...], builder: ProgramBuilder
) -> Program:
    builder.names.taken.add(kernel.name)
    fn = parse_function(
        kernel, FunctionKind.InCore, params, builder, builder.names.fresh(f"{kernel.name}_kernel")
    )
    entry_params = tuple(Param(Var(p.var.name, p.var.type, p.var.span), p.direction) for p in fn.params)
    returned, result_type = returned_params(fn)
    call = make_call(op.call, [p.var for p in entry_params], {"callee": fn.name}, fn.span, type=result_type)
    body = (Eval(call, fn.span), Return(tuple(entry_params[i].var for i in returned), fn.span))
    entry = Function(kernel.name, entry_params, body, FunctionKind.Orchestration, fn.span)
    return Program(kernel.name, (entry, fn), kernel.name)
