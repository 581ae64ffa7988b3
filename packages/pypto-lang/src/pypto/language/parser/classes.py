"""The explicit program form: a ``@pl.program`` class whose ``@pl.function`` methods are its functions.

>>> @pl.program
... class Add:
...     @pl.function(type=pl.FunctionType.InCore)
...     def add(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
...         ...
...     @pl.function(type=pl.FunctionType.Orchestration)
...     def main(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
...         return self.add(a, out)

The same parser reads printed IR back (:func:`parse`), since the printer writes this form: the
class is parsed from the AST, never executed. Each function is parsed once with the types its
annotations give; calls between functions are ``self.f(...)``; a standalone ``@pl.function``
called by its bare name joins the program.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import itertools
import linecache
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, NoReturn

from pypto.ir import (
    UNIT,
    Assign,
    Call,
    Eval,
    Expr,
    Function,
    FunctionKind,
    Level,
    Param,
    ParseError,
    Program,
    PyptoError,
    Return,
    Role,
    ScalarType,
    SourceSpan,
    Stmt,
    TextSyntaxError,
    Var,
    make_call,
)
from pypto.ir.launch import returned_params
from pypto.ir.nodes import walk_stmts
from pypto.ir.ops import dist, op
from pypto.ir.tasks import AccessMode
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.ir.types import TASK_ID
from pypto.language.annotations import ScalarSpec, TensorSpec
from pypto.language.kernel import JitKind, KernelFunction
from pypto.language.parser.attrs import LiteralReader
from pypto.language.parser.calls import bind_arguments, incore_call, inline_call, opaque_call
from pypto.language.parser.dispatch import device_index, dispatch, host_call
from pypto.language.parser.env import Namer
from pypto.language.parser.exprs import ExprParser
from pypto.language.parser.function import parse_function
from pypto.language.parser.program import not_a_task
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.signature import BoundParam, signature_of
from pypto.language.parser.source import KernelSource

# Keyword arguments of a call between functions that are task attributes, not parameters (the
# printer writes them after the arguments): how each is read back.
TASK_KEYWORDS: dict[str, Callable[[Any], Any]] = {
    "access": lambda v: tuple(None if m is None else AccessMode[m] for m in v),
    "task": str,
    "deps": lambda v: tuple(str(x) for x in v),
    "no_dep": tuple,
    "no_dep_args": lambda v: tuple(str(x) for x in v),
    "manual": bool,
    "block_num": int,
    "sync_start": bool,
    "allow_early_resolve": bool,
    "predicate": lambda v: v,  # read from its AST as a Predicate (TaskParser.task_keyword)
    "dumps": lambda v: tuple(str(x) for x in v),
}
# The decorator options of @pl.function besides type= and attrs=: auto_scope=False lets the
# author place the AUTO runtime scopes (pl.scope()) of a control-plane function.
FUNCTION_OPTIONS = ("auto_scope", "strict_ssa")
# The kinds of function that run on a core: no runtime scope can stand in them.
KERNEL_KINDS = (FunctionKind.InCore, FunctionKind.AIC, FunctionKind.AIV, FunctionKind.Group)


class ClassNames(GlobalNames):
    """A function's names with its class body's names in front of the module's (``M = 64`` in
    the class is visible to annotations and bodies)."""

    def __init__(self, globals_: dict[str, Any], class_names: dict[str, Any], closure: dict[str, Any]):
        self.globals = globals_
        self.closure = closure
        self.class_names = class_names
        self.enclosing = {}
        self.self_ref: SelfRef | None = None  # what `self` is in a method body (set by the program)
        raw = globals_.get("__builtins__", builtins)
        self.builtins = raw if isinstance(raw, dict) else vars(raw)

    @classmethod
    def of(
        cls, func: Callable[..., Any] | None, globals_: dict[str, Any], class_names: dict[str, Any]
    ) -> ClassNames:
        code = getattr(func, "__code__", None)
        cells = getattr(func, "__closure__", None) or ()
        closure = dict(zip(code.co_freevars, cells, strict=True)) if code is not None else {}
        return cls(globals_, class_names, closure)

    def _lookup(self, name: str) -> tuple[bool, Any]:
        if name == "self" and self.self_ref is not None:
            return True, self.self_ref
        if name in self.closure:
            return super()._lookup(name)
        if name in self.class_names:
            return True, self.class_names[name]
        return super()._lookup(name)


class ProgramFunction(KernelFunction):
    """A ``@pl.function``: a method of a ``@pl.program`` class, or a standalone function that
    joins the program calling it. ``func_type`` is its ``pl.FunctionType``."""

    def __init__(
        self,
        func: Callable[..., Any] | None,
        func_type: FunctionKind,
        attrs: dict[str, Any] | None = None,
        *,
        node: ast.FunctionDef | None = None,
        source: KernelSource | None = None,
        names: GlobalNames | None = None,
    ) -> None:
        super().__init__(func, JitKind.function)  # type: ignore[arg-type]
        self.func_type = func_type
        self.decorator_attrs = dict(attrs or {})
        self._node = node
        self._given_source = source
        self._given_names = names
        self.method = True  # set False for a standalone function (no `self`)
        self.auto_scope = bool(self.decorator_attrs.get("auto_scope", True))
        # strict_ssa=True: a name is bound once (a parse-time check only, no attribute of the IR)
        self.strict_ssa = bool(self.decorator_attrs.pop("strict_ssa", False))

    @property
    def name(self) -> str:
        return self._node.name if self._node is not None else self.func.__name__

    @functools.cached_property
    def source(self) -> KernelSource:
        return self._given_source if self._given_source is not None else KernelSource.of(self.func)

    @functools.cached_property
    def names(self) -> GlobalNames:
        return self._given_names if self._given_names is not None else GlobalNames(self.func)

    @property
    def skips_self(self) -> bool:
        args = self.source.tree.args.args
        return self.method and bool(args) and args[0].arg == "self"

    @property
    def is_host(self) -> bool:
        """A HOST function (``@pl.function(level=pl.Level.HOST, role=...)``)."""
        return self.decorator_attrs.get("level") is Level.HOST

    @property
    def is_sub_worker(self) -> bool:
        return self.is_host and self.decorator_attrs.get("role") is Role.SubWorker

    @functools.cached_property
    def python_signature(self) -> inspect.Signature:
        """The parameters calls bind to (``self`` dropped), from the ``def`` itself."""
        args = self.source.tree.args
        positional = args.args[1:] if self.skips_self else args.args
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(a.arg, kind) for a in positional]
        params += [inspect.Parameter(a.arg, inspect.Parameter.KEYWORD_ONLY) for a in args.kwonlyargs]
        return inspect.Signature(params)

    def __repr__(self) -> str:
        return f"<@pl.function {self.name} ({self.func_type.value})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ParseError(
            f"{self.name}() is a @pl.function: it runs as part of a @pl.program, not from Python",
            self.source.span(self.source.tree),
            "decorate the class with @pl.program and run the program: "
            "pypto.runtime.run(program, *tensors, config=RunConfig())",
        )


class SelfRef:
    """What ``self`` is in a program's function body: ``self.f`` is the program's function ``f``,
    ``self.M`` a name bound in the class body (a constant, as a Python method would read it)."""

    def __init__(self, program: ClassProgram) -> None:
        self._program = program

    def __getattr__(self, name: str) -> Any:
        found = self._program.members.get(name)
        if found is not None:
            return found
        if name in self._program.class_names:
            return self._program.class_names[name]
        known = ", ".join(self._program.members) or "none"
        raise AttributeError(f"the program has no function or class constant {name!r} (functions: {known})")

    def __repr__(self) -> str:
        return f"self (program {self._program.name})"


class ClassProgram:
    """The functions of one ``@pl.program`` being parsed: each parsed once, on first use."""

    def __init__(
        self,
        name: str,
        members: dict[str, ProgramFunction],
        attrs: dict[str, Any] | None = None,
        class_names: dict[str, Any] | None = None,
    ):
        self.name = name
        self.members = members
        self.class_names = dict(class_names or {})
        self.attrs = dict(attrs or {})
        self.parsed: dict[str, Function] = {}
        self.parsing: list[str] = []
        self.joined: dict[int, ProgramFunction] = {}  # standalone functions called by bare name
        self.planes: dict[str, FunctionKind] = {}  # the plane each Opaque function takes, found once
        self.names = Namer(members)
        for member in members.values():
            self.adopt(member)

    def adopt(self, member: ProgramFunction) -> None:
        """Let ``member``'s body read ``self`` as this program."""
        if member.method and isinstance(member.names, ClassNames):
            member.names.self_ref = SelfRef(self)

    def build(self) -> Program:
        for member in self.members.values():
            self.check_self(member)
        for member in list(self.members.values()):
            if member.func_type is not FunctionKind.Inline:
                self.function(member)
        order = list(self.members)  # as written (callees are parsed first, on demand)
        parsed = sorted(self.parsed.values(), key=lambda f: order.index(f.name))
        by_name = {f.name: f for f in parsed}
        functions = tuple(_launches_only(f, by_name) if f.kind is FunctionKind.Group else f for f in parsed)
        if not functions:
            raise ParseError(
                f"@pl.program {self.name} has no functions",
                None,
                "decorate its methods with @pl.function(type=pl.FunctionType.Orchestration / InCore)",
            )
        return Program(self.name, functions, _entry(functions), self.attrs)

    def check_self(self, member: ProgramFunction) -> None:
        """Every method of a ``@pl.program`` takes ``self`` first (the parser strips it)."""
        if member.is_sub_worker and not member.skips_self:
            member.method = False  # a host callback takes only its arguments
        if member.method and not member.skips_self:
            tree = member.source.tree
            where = tree.args.args[0] if tree.args.args else tree
            raise ParseError(
                f"method {member.name} of @pl.program {self.name} has no self parameter",
                member.source.span(where),
                f"add self first: def {member.name}(self, ...); it is not one of the function's parameters",
            )

    def function(self, member: ProgramFunction) -> Function:
        """The parsed function of ``member`` (parsed now if it is not yet)."""
        name = member.name
        if name in self.parsed:
            return self.parsed[name]
        if name in self.parsing:
            chain = " -> ".join([*self.parsing[self.parsing.index(name) :], name])
            raise ParseError(
                f"functions of {self.name} call each other in a cycle ({chain})",
                member.source.span(member.source.tree),
                "a program's calls form a tree: write the repetition as a loop in the caller",
            )
        self.parsing.append(name)
        try:
            self.parsed[name] = parse_program_function(member, self, self.plane(member))
        finally:
            self.parsing.pop()
        return self.parsed[name]

    def plane(self, member: ProgramFunction) -> FunctionKind:
        """The kind a function is parsed as: its own, or for ``Opaque`` the one its use implies.

        An ``Opaque`` function that dispatches (``pl.at`` scopes, calls of non-inline functions)
        is on the control plane: the entry (called by no other function) is the Orchestration
        function, one called by another stays ``Opaque`` (a control function, as
        ``@pl.jit.opaque`` makes: OutlineScopes gives it its plane). One that only computes is
        the program's entry if nothing calls it, else a kernel (InCore).
        """
        kind = member.func_type
        if kind is not FunctionKind.Opaque:
            return kind
        if member.name not in self.planes:
            self.planes[member.name] = self._opaque_plane(member)
        return self.planes[member.name]

    def _opaque_plane(self, member: ProgramFunction) -> FunctionKind:
        body = member.source.tree
        dispatches = any(isinstance(n, ast.With) for n in ast.walk(body)) or any(
            self.members[name].func_type is not FunctionKind.Inline
            for name in _self_calls(body)
            if name in self.members
        )
        called = any(
            member.name in _self_calls(m.source.tree) for m in self.members.values() if m is not member
        )
        if not called:
            return FunctionKind.Orchestration
        return FunctionKind.Opaque if dispatches else FunctionKind.InCore

    def call_kernel(
        self,
        parser: ExprParser,
        callee: KernelFunction,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call,
        task_attrs: dict[str, Any] | None = None,
    ) -> Any:
        if not isinstance(callee, ProgramFunction):
            raise parser.error(
                node,
                f"{callee!r} cannot be called from a @pl.program function",
                "call the program's own functions as self.f(...), or standalone @pl.function functions",
            )
        member = self.member(callee, parser, node)
        if parser.body.host or member.is_host or "device" in kwargs:
            return self.host_call(parser, member, args, kwargs, node)
        if member.func_type is FunctionKind.Inline:
            return inline_call(parser, member, args, kwargs, node, self)
        caller_on_core = parser.body.kernel
        if caller_on_core or parser.body.in_scope:
            raise parser.error(
                node,
                f"{member.name}() is a {member.func_type.value} function: it is called from the "
                "control plane (an Orchestration or Group function, outside pl.at scopes)",
                "mark it @pl.function(type=pl.FunctionType.Inline) to splice it in here",
            )
        task = {k: kwargs.pop(k) for k in list(kwargs) if k in TASK_KEYWORDS and k not in _params(member)}
        attrs = {**{k: TASK_KEYWORDS[k](v) for k, v in task.items()}, **(task_attrs or {})}
        if "task" in task:  # printed form: `self.k(..., task='t0')` binds t0 for later deps=[t0]
            name = attrs["task"]
            parser.body.namer.fresh(name)  # taken from here on
            parser.env.bind(name, Var(name, TASK_ID, parser.span(node)), parser.span(node))
        kernel_for: Callable[[Any, Any], Function] = self.kernel_for
        if self.plane(member) in (FunctionKind.Opaque, FunctionKind.Orchestration):
            if task_attrs is not None:
                raise not_a_task(parser, member.name, node)
            return opaque_call(parser, member, args, kwargs, node, kernel_for)  # a control function
        return incore_call(parser, member, args, kwargs, node, kernel_for, attrs)

    def host_call(
        self,
        parser: ExprParser,
        member: ProgramFunction,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call,
    ) -> Any:
        """A call in a HOST function: a chip orchestration dispatched to a rank (``device=``, rank
        0 without it), or a sub-worker called on the host; a HOST function is called by no chip code."""
        if not parser.body.host:
            if member.is_host:
                raise parser.error(
                    node,
                    f"{member.name}() is a HOST function: only the HOST orchestrator calls it",
                    "call it from the @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator) function",
                )
            return host_call(parser, member, args, kwargs, node, self.kernel_for)
        if member.is_sub_worker:
            fn = self.function(member)
            values = bind_arguments(parser, member, args, kwargs, node)
            call_args = [parser.body.atom(values[p.var.name]) for p in fn.params]
            span = parser.span(node)
            call = make_call(dist.call_subworker, call_args, {"callee": fn.name}, span, type=UNIT)
            parser.body.emit(Eval(call, span))
            return None
        if member.is_host:
            raise parser.error(
                node,
                f"{member.name}() is the HOST orchestrator: no function calls it",
                "call the chip orchestrations (self.chip(..., device=r)) and sub-workers from it",
            )
        kwargs = dict(kwargs)
        device = kwargs.pop("device", 0)  # without device=: rank 0, the chip of a one-chip world
        if self.plane(member) is not FunctionKind.Orchestration:
            raise parser.error(
                node,
                f"{member.name}() is a {self.plane(member).value} function: a HOST function dispatches "
                "chip orchestrations (type=pl.FunctionType.Orchestration), which launch the kernels",
                f"add an Orchestration function that calls self.{member.name}(...) and dispatch that one",
            )
        return dispatch(
            parser,
            member,
            args,
            kwargs,
            node,
            self.kernel_for,
            device_index(parser, device, node),
        )

    def kernel_for(self, kernel: KernelFunction, _params: Any) -> Function:
        """The parsed function of a program member (parsed once, whatever the call's arguments)."""
        assert isinstance(kernel, ProgramFunction)
        return self.function(kernel)

    def member(self, callee: ProgramFunction, parser: ExprParser, node: ast.Call) -> ProgramFunction:
        """The program's function for ``callee``; a standalone one joins the program here."""
        if self.members.get(callee.name) is callee:
            return callee
        if id(callee) in self.joined:
            return self.joined[id(callee)]
        if callee.name in self.members:
            raise parser.error(
                node,
                f"{callee.name}() is a standalone @pl.function, but {self.name} has a function of that name",
                "rename one of them",
            )
        callee.method = False
        self.members[callee.name] = callee
        self.joined[id(callee)] = callee
        return callee


def _self_calls(tree: ast.AST) -> set[str]:
    """The names ``f`` of the ``self.f(...)`` calls in a function's body."""
    return {
        n.func.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "self"
    }


def _params(member: ProgramFunction) -> set[str]:
    return set(member.python_signature.parameters)


def _entry(functions: Iterable[Function]) -> str:
    """The program's entry: its Orchestration function that no other function calls (else an
    uncalled Opaque or Group function, else any uncalled one, else the first)."""
    fns = list(functions)
    host = [fn for fn in fns if fn.is_host and fn.role is Role.Orchestrator]
    if host:
        return host[0].name
    called = {
        s.value.attrs.get("callee")
        for fn in fns
        for s in walk_stmts(fn.body)
        if isinstance(s, (Eval, Assign)) and isinstance(s.value, Call) and s.value.op == op.call
    }
    for kinds in (
        (FunctionKind.Orchestration,),
        (FunctionKind.Opaque, FunctionKind.Group),
        tuple(FunctionKind),
    ):
        roots = [fn for fn in fns if fn.kind in kinds and fn.name not in called]
        if roots:
            return roots[0].name
    return fns[0].name


def bound_params(member: ProgramFunction) -> tuple[BoundParam, ...]:
    """The parameters of a program function, typed by their annotations alone."""
    params = []
    for sig in signature_of(member):
        spec = sig.spec
        if isinstance(spec, ScalarSpec):
            params.append(BoundParam(sig.name, ScalarType(spec.dtype), span=sig.span))
            continue
        if not isinstance(spec, TensorSpec) or spec.shape is None or spec.dtype is None:
            raise ParseError(
                f"parameter '{sig.name}' of {member.name} is annotated {spec}, which fixes no shape "
                "and dtype",
                sig.span,
                "a @pl.function is parsed once, from its annotations: write the shape and dtype, "
                "e.g. pl.Tensor[[128, 128], pl.FP32]",
            )
        t = spec.type_of(spec.shape, spec.dtype)
        params.append(BoundParam(sig.name, t, spec.direction, span=sig.span, view=spec.view))
    return tuple(params)


def _launches_only(group: Function, functions: dict[str, Function]) -> Function:
    """A Group written ``r = self.aic(...); self.aiv(...); return r``: its kernels launched for
    their effects, and what it returns named by the tensors the kernels return (the arguments the
    Group passed for their returned parameters)."""
    named: dict[Var, Expr] = {}
    body: list[Stmt] = []
    for stmt in group.body:
        if isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op == op.call:
            callee = functions.get(str(stmt.value.attrs.get("callee")))
            returned = returned_params(callee) if callee is not None else ()
            if len(returned) == 1:
                named[stmt.target] = stmt.value.args[returned[0]]
            stmt = Eval(replace(stmt.value, type=UNIT), stmt.span)
        elif isinstance(stmt, Return):
            stmt = replace(
                stmt, values=tuple(named.get(v, v) if isinstance(v, Var) else v for v in stmt.values)
            )
        body.append(stmt)
    return replace(group, body=tuple(body))


def parse_program_function(member: ProgramFunction, program: ClassProgram, kind: FunctionKind) -> Function:
    """One function of the program: its attributes (the decorator's, then ``pl.func_attr``), then the body."""
    if member.is_sub_worker and _abstract_body(member):
        return _runtime_bound(member)
    fn = parse_function(
        member,
        kind,
        bound_params(member),
        program,
        member.name,
        decorator_attrs=member.decorator_attrs,
        plane_free=kind is FunctionKind.Opaque,
        host=member.is_host,
    )
    return replace(fn, attrs={**member.decorator_attrs, **fn.attrs})


def _abstract_body(member: ProgramFunction) -> bool:
    """A body of ``...`` alone (after a docstring): what a runtime-bound sub-worker is written as."""
    body = [
        s
        for s in member.source.tree.body
        if not (
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
        )
    ]
    return (
        len(body) == 1 and isinstance(body[0], ast.Expr) and getattr(body[0].value, "value", None) is Ellipsis
    )


def _runtime_bound(member: ProgramFunction) -> Function:
    """A HOST sub-worker written with an ``...`` body: its parameters, no body; the runtime binds a
    Python callable to it (``prepare(callbacks={name: fn})``)."""
    params = tuple(Param(Var(p.name, p.type, p.span), p.direction) for p in bound_params(member))
    attrs = {**member.decorator_attrs, "requires_runtime_binding": True}
    span = member.source.span(member.source.tree)
    return Function(member.name, params, (), FunctionKind.Orchestration, span, attrs)


# ---------------------------------------------------------------- decorators


def function(
    func: Callable[..., Any] | None = None,
    *,
    type: FunctionKind = FunctionKind.Opaque,
    attrs: dict[str, Any] | None = None,
    auto_scope: bool = True,
    strict_ssa: bool = False,
    level: Level | None = None,
    role: Role | None = None,
    **options: Any,
) -> Any:
    """``@pl.function(type=pl.FunctionType.InCore)``: one function of a ``@pl.program``.

    ``level=pl.Level.HOST, role=pl.Role.Orchestrator`` makes the program's HOST orchestrator
    (it dispatches chip orchestrations, ``self.chip(..., device=r)``); ``role=pl.Role.SubWorker``
    a host callback, whose ``...`` body is bound at run time (``requires_runtime_binding``).

    ``auto_scope=False`` (a control-plane function) leaves its AUTO runtime scopes to the author
    (``with pl.scope():``). ``strict_ssa=True`` makes binding a name twice an
    ``SSAViolationError`` (and so the ``dst[...] = src`` write sugar, which rebinds ``dst``).
    ``attrs=`` is the old spelling of ``pl.func_attr({...})`` (a ``DeprecationWarning``).
    """
    if options:
        _decorator_error(
            f"pl.function() has no option {', '.join(map(repr, options))}",
            "it takes type=pl.FunctionType.X, auto_scope=, strict_ssa= and (deprecated) attrs={...}",
        )
    if not isinstance(type, FunctionKind):
        kinds = ", ".join(f"pl.FunctionType.{k.name}" for k in FunctionKind)
        _decorator_error(f"pl.function(type=...) takes a pl.FunctionType, got {type!r}", f"one of {kinds}")
    problem = auto_scope_problem(type, auto_scope)
    if problem is not None:
        _decorator_error(*problem)
    if attrs is not None:
        warnings.warn(
            "@pl.function(attrs=...) is deprecated: write pl.func_attr({...}) as the first statement "
            "of the body",
            DeprecationWarning,
            stacklevel=2,
        )
    if not isinstance(strict_ssa, bool):
        _decorator_error(f"strict_ssa= takes True or False, got {strict_ssa!r}", "write strict_ssa=True")
    placed = _level_and_role(type, level, role)
    if placed:
        type = FunctionKind.Orchestration
    given = {
        **placed,
        **(attrs or {}),
        **({} if auto_scope else {"auto_scope": False}),
        **({"strict_ssa": True} if strict_ssa else {}),
    }

    def decorate(f: Callable[..., Any]) -> ProgramFunction:
        return ProgramFunction(f, type, given)

    return decorate if func is None else decorate(func)


def _level_and_role(kind: FunctionKind, level: Any, role: Any) -> dict[str, Any]:
    """The ``level`` / ``role`` attributes ``@pl.function(level=..., role=...)`` gives (a HOST
    function is an Orchestration function at level HOST), checked."""
    if level is None and role is None:
        return {}
    if not isinstance(level, Level):
        _decorator_error(
            f"pl.function(level=...) takes a pl.Level, got {level!r}",
            "write level=pl.Level.HOST, role=pl.Role.Orchestrator (or pl.Role.SubWorker)",
        )
    if not isinstance(role, Role):
        _decorator_error(
            f"pl.function(level=pl.Level.{level.name}) needs role= a pl.Role, got {role!r}",
            "write role=pl.Role.Orchestrator (the HOST entry) or role=pl.Role.SubWorker (a host callback)",
        )
    if level is not Level.HOST or role is Role.Worker:
        _decorator_error(
            f"pl.function(level=pl.Level.{level.name}, role=pl.Role.{role.name}) is not a function this "
            "compiler builds: level= with role= declares a HOST orchestrator or sub-worker",
            "write level=pl.Level.HOST with role=pl.Role.Orchestrator or role=pl.Role.SubWorker; a chip "
            "function is type=pl.FunctionType.Orchestration / InCore",
        )
    if kind not in (FunctionKind.Opaque, FunctionKind.Orchestration):
        _decorator_error(
            f"a HOST function is an Orchestration function, not type=pl.FunctionType.{kind.value}",
            "drop type=: level=pl.Level.HOST with role= says what it is",
        )
    return {"level": level, "role": role}


def auto_scope_problem(kind: FunctionKind, auto_scope: Any) -> tuple[str, str] | None:
    """What is wrong with ``auto_scope=`` on a function of ``kind`` (message, hint), or None."""
    if not isinstance(auto_scope, bool):
        return f"auto_scope= takes True or False, got {auto_scope!r}", "write auto_scope=False"
    if not auto_scope and kind in KERNEL_KINDS:
        return (
            f"auto_scope= is for control-plane functions, not kernels (type={kind.value}): no runtime "
            "scope stands in a kernel",
            "put auto_scope=False on the Orchestration function (or an Inline helper) that places the scopes",
        )
    return None


def func_attr(attrs: dict[str, Any]) -> None:
    """``pl.func_attr({"key": value})``: the function's attributes; the first statement of a body."""
    raise ParseError(
        "pl.func_attr(...) is read by the parser as the first statement of a @pl.function or "
        "@pl.jit.incore body",
        None,
        "use it inside a @pl.function or a @pl.jit.incore kernel, not from Python",
    )


def program(cls: type) -> Program:
    """``@pl.program`` on a class: the class *is* the IR program of its ``@pl.function`` methods."""
    if not isinstance(cls, type):
        _decorator_error(f"@pl.program decorates a class, got {cls!r}", "write it above `class Name:`")
    try:
        return _class_program(cls)
    except PyptoError as err:  # at the user's line, without the parser's frames
        failure = err
    raise_at_user_line(failure, cls.__name__)


def _decorator_error(message: str, hint: str) -> NoReturn:
    """A mistake in a decorator's arguments: a ParseError at the user's decorator line."""
    where = call_site()
    err = ParseError(message, where, hint)
    if where is None:
        raise err
    raise_at_user_line(err, "decorator")


def _class_program(cls: type) -> Program:
    class_names = {
        k: v for k, v in vars(cls).items() if not k.startswith("__") and not isinstance(v, ProgramFunction)
    }
    members: dict[str, ProgramFunction] = {}
    for key, value in vars(cls).items():
        if isinstance(value, ProgramFunction):
            value._given_names = ClassNames.of(value.func, value.func.__globals__, class_names)
            members[key] = value
        elif inspect.isfunction(value) and not key.startswith("__"):
            span = SourceSpan(value.__code__.co_filename, value.__code__.co_firstlineno)
            raise ParseError(
                f"method {key} of @pl.program {cls.__name__} is not a @pl.function",
                span,
                "decorate it with @pl.function(type=pl.FunctionType.InCore) (or another type), or move it "
                "out of the class",
            )
    return ClassProgram(cls.__name__, members, class_names=class_names).build()


# ---------------------------------------------------------------- text


_texts = itertools.count(1)


def _namespace(tree: ast.Module, reader: LiteralReader, names: dict[str, Any]) -> None:
    """Module-level imports and constant assignments of a parsed text, as names (imports are done;
    nothing else runs)."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                module = importlib.import_module(alias.name)
                if alias.asname:
                    names[alias.asname] = module
                else:
                    names[alias.name.split(".")[0]] = importlib.import_module(alias.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            module = importlib.import_module(stmt.module)
            for alias in stmt.names:
                names[alias.asname or alias.name] = getattr(module, alias.name)
        elif isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = reader.value(stmt.value)
            names.update({t.id: value for t in stmt.targets})  # type: ignore[attr-defined]


def parse(text: str, filename: str | None = None, globals: dict[str, Any] | None = None) -> Any:
    """Parse ``pl`` source text: a ``@pl.program`` class gives a ``Program``, a lone
    ``@pl.function`` a ``Function``. Nothing in the text is executed (imports are done).

    >>> program = pl.parse(program.as_python())  # doctest: +SKIP
    """
    if not isinstance(text, str):
        raise TypeError(f"pl.parse takes the source text, got {type(text).__name__}")
    filename = filename or f"<pl.parse-{next(_texts)}>"
    lines = text.splitlines(keepends=True)
    if filename.startswith("<"):
        linecache.cache[filename] = (len(text), None, lines, filename)
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        raise TextSyntaxError(
            f"the text is not valid Python: {exc.msg}",
            SourceSpan(filename, exc.lineno or 1, (exc.offset or 1) - 1),
            "fix the syntax; pl.parse reads a @pl.program class as the printer writes it",
        ) from None
    import pypto.language as pl

    module_names: dict[str, Any] = {"pl": pl, **(globals or {})}
    whole = KernelSource(filename, tree, 1, tuple(lines), 0)  # type: ignore[arg-type]
    _namespace(tree, LiteralReader(whole, _Names(module_names)), module_names)
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef)]
    defs = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    if classes:
        return _parse_class(classes[0], filename, tuple(lines), module_names)
    if len(defs) > 1:
        raise ParseError(
            f"the text holds {len(defs)} functions ({', '.join(d.name for d in defs)}); pl.parse reads one "
            "@pl.function, or one @pl.program class",
            SourceSpan(filename, defs[1].lineno),
            "parse each function's text on its own, or put the functions in a @pl.program class",
        )
    if defs:
        member = _text_function(defs[0], filename, tuple(lines), module_names, {}, method=False)
        prog = ClassProgram(member.name, {member.name: member})
        # A lone function keeps its own type: an Opaque one has no plane until it is used.
        return parse_program_function(member, prog, member.func_type)
    raise ParseError(
        "the text holds no @pl.program class and no @pl.function",
        SourceSpan(filename, 1),
        "pass the text the printer writes (program.as_python()), or a class decorated @pl.program",
    )


def loads(path: str | os.PathLike[str], globals: dict[str, Any] | None = None) -> Any:
    """``pl.parse`` of the text of the file at ``path``: a ``Program`` or a ``Function``.

    >>> fn = pl.loads("kernels/add.py")  # doctest: +SKIP
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return parse(text, str(path), globals)


def parse_program(text: str, filename: str | None = None, globals: dict[str, Any] | None = None) -> Program:
    """Parse the text of a ``@pl.program`` class into a ``Program`` (see :func:`parse`)."""
    result = parse(text, filename, globals)
    if isinstance(result, Function):
        return Program(result.name, (result,), result.name)
    return result


def loads_program(path: str | os.PathLike[str], globals: dict[str, Any] | None = None) -> Program:
    """``pl.parse_program`` of the text of the file at ``path`` (a pass dump, ``program.py``).

    >>> prog = pl.loads_program("passes_dump/03_after_ConvertTensorToTileOps.py")  # doctest: +SKIP
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return parse_program(text, str(path), globals)


class _Names(GlobalNames):
    """The names of a parsed text's module (no Python function behind it)."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.globals = names
        self.closure = {}
        self.enclosing = {}
        self.builtins = vars(builtins)


def _parse_class(cls: ast.ClassDef, filename: str, lines: tuple[str, ...], names: dict[str, Any]) -> Program:
    whole = KernelSource(filename, cls, 1, lines, 0)  # type: ignore[arg-type]
    class_names: dict[str, Any] = {}
    reader = LiteralReader(whole, _Names({**names}))
    members: dict[str, ProgramFunction] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = LiteralReader(whole, _Names({**names, **class_names})).value(stmt.value)
            class_names.update({t.id: value for t in stmt.targets})  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.FunctionDef):
            members[stmt.name] = _text_function(stmt, filename, lines, names, class_names, method=True)
        elif not (isinstance(stmt, (ast.Pass, ast.Expr))):
            raise reader.error(
                stmt, "a @pl.program class holds @pl.function methods", "move this out of the class"
            )
    return ClassProgram(cls.name, members, class_names=class_names).build()


def _text_function(
    node: ast.FunctionDef,
    filename: str,
    lines: tuple[str, ...],
    names: dict[str, Any],
    class_names: dict[str, Any],
    method: bool,
) -> ProgramFunction:
    """A ``@pl.function`` read from text: its decorator's ``type=`` and ``attrs=`` evaluated as literals."""
    source = KernelSource(filename, node, 1, lines, 0)
    scope = ClassNames(names, class_names, {})
    reader = LiteralReader(source, scope)
    func_type, attrs = FunctionKind.Opaque, None
    level = role = None
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if reader.value(target) is not function:
            raise reader.error(
                deco, f"unsupported decorator @{ast.unparse(deco)}", "decorate with @pl.function(type=...)"
            )
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "type":
                    func_type = reader.value(kw.value)
                elif kw.arg == "level":
                    level = reader.value(kw.value)
                elif kw.arg == "role":
                    role = reader.value(kw.value)
                elif kw.arg in FUNCTION_OPTIONS:
                    attrs = {**(attrs or {}), kw.arg: reader.value(kw.value)}
                elif kw.arg == "attrs":
                    attrs = {**(attrs or {}), **reader.value(kw.value)}
                    span = source.span(kw)
                    warnings.warn_explicit(
                        "@pl.function(attrs=...) is deprecated: write pl.func_attr({...}) as the first "
                        "statement of the body",
                        DeprecationWarning,
                        span.file,
                        span.line,
                    )
                else:
                    raise reader.error(
                        kw,
                        f"pl.function has no option {kw.arg!r}",
                        "it takes type=, level=, role=, auto_scope=, strict_ssa= and attrs=",
                    )
    try:
        placed = _level_and_role(func_type, level, role)
    except PyptoError as err:
        raise reader.error(node, err.message, err.hint or "") from None
    if placed:
        func_type, attrs = FunctionKind.Orchestration, {**placed, **(attrs or {})}
    if not isinstance(func_type, FunctionKind):
        raise reader.error(
            node, f"type= takes a pl.FunctionType, got {func_type!r}", "e.g. type=pl.FunctionType.InCore"
        )
    problem = auto_scope_problem(func_type, (attrs or {}).get("auto_scope", True))
    if problem is not None:
        message, hint = problem
        raise reader.error(node, message, hint)
    member = ProgramFunction(None, func_type, attrs, node=node, source=source, names=scope)
    member.method = method
    return member
