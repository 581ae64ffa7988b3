"""OutlineScopes: each ``pl.at(CORE_GROUP)`` scope of a control function becomes an InCore kernel.

The control functions are the entry and every ``Opaque`` (``@pl.jit.opaque``) or Orchestration
function its host code calls (see :mod:`pypto.ir.callgraph`); after this pass each of them is an
Orchestration function: an Opaque function takes its plane here, from where it is used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto.ir import (
    UNIT,
    Assign,
    AtomicType,
    Const,
    Direction,
    Eval,
    For,
    Function,
    FunctionKind,
    If,
    Level,
    Param,
    ParseError,
    Program,
    ScalarType,
    ScopeStmt,
    Stmt,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    get_op,
    make_call,
)
from pypto.ir.callgraph import control_functions
from pypto.ir.nodes import Call, Expr, While, nested_bodies, stmt_exprs, walk_expr, walk_stmts, with_bodies
from pypto.ir.ops import op, tensor
from pypto.ir.rewrite import NameGen, defined_vars, free_vars, substitute_body, vars_used_in
from pypto.ir.types import INDEX, describe
from pypto.passes.carried import carry_tensors_in_memory
from pypto.passes.manager import PassContext


def zero_offsets(rank: int) -> TupleExpr:
    zeros = tuple(Const(0, INDEX) for _ in range(rank))
    return TupleExpr(zeros, TupleType(tuple(INDEX for _ in range(rank))))


def tensor_access(body: tuple[Stmt, ...]) -> tuple[set[Var], set[Var]]:
    """(vars read, vars written in place) by the ops of ``body``, by the op table's effects."""
    read: set[Var] = set()
    written: set[Var] = set()
    for stmt in walk_stmts(body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if not isinstance(e, Call) or e.op == op.call:
                    continue
                spec = get_op(e.op)
                for index, arg in enumerate(e.args):
                    if not isinstance(arg, Var):
                        continue
                    if index in spec.writes:
                        written.add(arg)
                    # An atomic write adds to what the tensor holds: it reads it too.
                    if index not in spec.writes or index in spec.reads or _atomic(e):
                        read.add(arg)
    return read, written


def _atomic(call: Call) -> bool:
    return call.attrs.get("atomic", AtomicType.NONE) is not AtomicType.NONE


@dataclass(frozen=True)
class OutlineScopes:
    """Turn scopes into InCore kernels called from the orchestration.

    Tensors a scope reads become In params, tensors it writes Out (or InOut when also read);
    scalars it uses become scalar params. A tensor value computed in the scope and used after
    it is allocated by the orchestration (``tensor.create``) and written by the kernel.
    """

    name: ClassVar[str] = "OutlineScopes"
    pipeline_name: ClassVar[str] = "outline-scopes"

    def run(self, program: Program, ctx: PassContext) -> Program:
        names = NameGen(fn.name for fn in program.functions.values())
        kernels: list[Function] = []
        outlined: dict[str, Function] = {}
        for fn in control_functions(program):
            first = len(kernels)
            fn = replace(fn, body=carry_tensors_in_memory(fn.body, NameGen.for_function(fn)))
            body = self._block(fn, fn.body, names, kernels)
            # `c2 = pl.store(t, [0, 0], c)` inside a scope names `c` itself once outside it.
            aliases: dict[Var, Expr] = {}
            for kernel in kernels[first:]:
                aliases.update(_write_aliases(kernel.body))
            body = substitute_body(body, aliases)
            outlined[fn.name] = replace(fn, body=body, kind=FunctionKind.Orchestration)
        funcs = tuple(outlined.get(f.name, f) for f in program.functions.values())
        return program.with_functions(funcs + tuple(kernels))

    def _block(
        self, entry: Function, body: tuple[Stmt, ...], names: NameGen, kernels: list[Function]
    ) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            if isinstance(stmt, ScopeStmt):
                out.extend(self._outline(entry, stmt, names, kernels))
            elif isinstance(stmt, (For, While, If)):
                bodies = tuple(self._block(entry, b, names, kernels) for b in nested_bodies(stmt))
                out.append(with_bodies(stmt, bodies))
            else:
                out.append(stmt)
        return tuple(out)

    def _outline(
        self, entry: Function, scope: ScopeStmt, names: NameGen, kernels: list[Function]
    ) -> list[Stmt]:
        if scope.level is not Level.CORE_GROUP:
            raise ParseError(
                f"pl.at(level=pl.Level.{scope.level.name}) does not make a kernel yet",
                scope.span,
                "use pl.at(level=pl.Level.CORE_GROUP)",
            )
        kernel_name = names.fresh(scope.name_hint or f"{entry.name}_incore")
        kernel_names = NameGen(v.name for v in (*defined_vars(scope.body), *free_vars(scope.body)))
        outside_uses = set(vars_used_in(_without(entry.body, scope)))
        aliased = _write_aliases(scope.body)
        escaping = [v for v in _assigned(scope.body) if v in outside_uses and v not in aliased]

        read, written = tensor_access(scope.body)
        params: list[Param] = []
        for v in free_vars(scope.body):
            if isinstance(v.type, TensorType):
                params.append(Param(v, _direction(v in read, v in written)))
            elif isinstance(v.type, ScalarType):
                params.append(Param(v))
            else:
                raise ParseError(
                    f"{v.name} ({describe(v.type)}) is defined outside scope "
                    f"'{kernel_name}' and cannot be passed into it",
                    v.span or scope.span,
                    "only tensors and scalars cross a pl.at(...) boundary",
                )

        pre: list[Stmt] = []
        renames: dict[Var, Expr] = {}
        call_args: list[Expr] = [p.var for p in params]
        tail: list[Stmt] = []
        for v in escaping:
            if not isinstance(v.type, TensorType):
                raise ParseError(
                    f"{v.name} ({describe(v.type)}) is computed in scope '{kernel_name}' "
                    "but used after it; only tensors can leave a scope",
                    v.span or scope.span,
                    "store the tile into a tensor (pl.store) and use the tensor outside",
                )
            # The orchestration now owns `v` (allocated before the call); the kernel computes
            # into a renamed value and writes it to an Out param of the same name.
            inner = Var(kernel_names.fresh(v.name), v.type, v.span)
            renames[v] = inner
            out_param = Var(v.name, v.type, v.span)
            params.append(Param(out_param, Direction.Out))
            call_args.append(v)
            create = make_call(tensor.create, (), {"shape": v.type.shape, "dtype": v.type.dtype}, v.span)
            pre.append(Assign(v, create, v.span))
            offsets = zero_offsets(len(v.type.shape))
            tail.append(Eval(make_call(tensor.assemble, (out_param, inner, offsets), {}, v.span), v.span))
        kernel_body = substitute_body(scope.body, renames) + tuple(tail)
        attrs: dict[str, object] = {"name_hint": scope.name_hint or kernel_name}
        if scope.split is not None:
            attrs["split"] = scope.split
        if scope.slot_num is not None:
            attrs["slot_num"] = scope.slot_num
        kernels.append(
            Function(kernel_name, tuple(params), kernel_body, FunctionKind.InCore, scope.span, attrs)
        )
        call_attrs = {"callee": kernel_name, **_task_attrs(scope, kernel_name, params)}
        call = make_call(op.call, tuple(call_args), call_attrs, scope.span, type=UNIT)
        return [*pre, Eval(call, scope.span)]


def _task_attrs(scope: ScopeStmt, kernel: str, params: list[Param]) -> dict[str, object]:
    """What the scope says about its task, as ``call`` attrs naming orchestration variables."""
    passed = {p.var for p in params}
    for named in scope.no_dep_args:
        if named not in passed:
            raise ParseError(
                f"no_dep_args= names {named.name}, which scope '{kernel}' does not use",
                scope.span,
                "name only tensors the scope reads or writes",
            )
    attrs: dict[str, object] = {}
    if scope.task is not None:
        attrs["task"] = scope.task.name
    if scope.deps:
        attrs["deps"] = tuple(v.name for v in scope.deps)
    if scope.no_dep_args:
        attrs["no_dep_args"] = tuple(v.name for v in scope.no_dep_args)
    if scope.manual:
        attrs["manual"] = True
    if scope.block_num > 1:
        attrs["block_num"] = scope.block_num
    if scope.sync_start:
        attrs["sync_start"] = True
    if scope.allow_early_resolve:
        attrs["allow_early_resolve"] = True
    return attrs


def _write_aliases(body: tuple[Stmt, ...]) -> dict[Var, Expr]:
    """Targets of ops that write a tensor in place and return it: target -> written tensor."""
    aliases: dict[Var, Expr] = {}
    for stmt in walk_stmts(body):
        if isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op != op.call:
            writes = get_op(stmt.value.op).writes
            if writes:
                aliases[stmt.target] = stmt.value.args[writes[0]]
    return aliases


def _direction(read: bool, written: bool) -> Direction:
    if written:
        return Direction.InOut if read else Direction.Out
    return Direction.In


def _assigned(body: tuple[Stmt, ...]) -> list[Var]:
    return [s.target for s in walk_stmts(body) if isinstance(s, Assign)]


def _without(body: tuple[Stmt, ...], scope: ScopeStmt) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        if stmt is scope:
            continue
        if isinstance(stmt, (For, While, ScopeStmt, If)):
            stmt = with_bodies(stmt, tuple(_without(b, scope) for b in nested_bodies(stmt)))
        out.append(stmt)
    return tuple(out)
