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
from pypto.ir.extents import dynamic_extents, extent_dims
from pypto.ir.launch import returned_params
from pypto.ir.nodes import (
    Call,
    DynDim,
    Expr,
    While,
    nested_bodies,
    stmt_end_exprs,
    stmt_exprs,
    walk_expr,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import op, tensor
from pypto.ir.rewrite import NameGen, defined_vars, free_vars, substitute_body, vars_used_in
from pypto.ir.types import INDEX, describe
from pypto.passes.carried import HOMES, carry_tensors_in_memory
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
            homes: set[Var] = set()
            fn = replace(fn, body=carry_tensors_in_memory(fn.body, NameGen.for_function(fn), homes))
            # `out2 = self.vector(x, out)` in a cluster names `out` itself once outside it.
            aliases: dict[Var, Expr] = {}
            body = self._block(fn, fn.body, names, kernels, _Cluster(program, aliases), homes)
            # `c2 = pl.store(t, [0, 0], c)` inside a scope names `c` itself once outside it.
            for kernel in kernels[first:]:
                aliases.update(_write_aliases(kernel.body))
            body = substitute_body(body, aliases)
            outlined[fn.name] = replace(fn, body=body, kind=FunctionKind.Orchestration)
        funcs = tuple(outlined.get(f.name, f) for f in program.functions.values())
        return program.with_functions(funcs + tuple(kernels))

    def _block(
        self,
        entry: Function,
        body: tuple[Stmt, ...],
        names: NameGen,
        kernels: list[Function],
        cluster: _Cluster,
        homes: set[Var],
    ) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            if isinstance(stmt, ScopeStmt) and stmt.level is Level.CLUSTER:
                out.append(cluster.outline(entry, stmt, names, kernels))
            elif isinstance(stmt, ScopeStmt):
                out.extend(self._outline(entry, stmt, names, kernels, homes))
            elif isinstance(stmt, (For, While, If)):
                bodies = tuple(
                    self._block(entry, b, names, kernels, cluster, homes) for b in nested_bodies(stmt)
                )
                out.append(with_bodies(stmt, bodies))
            else:
                out.append(stmt)
        return tuple(out)

    def _outline(
        self, entry: Function, scope: ScopeStmt, names: NameGen, kernels: list[Function], homes: set[Var]
    ) -> list[Stmt]:
        if scope.level is not Level.CORE_GROUP:
            raise ParseError(
                f"pl.at(level=pl.Level.{scope.level.name}) does not make a kernel yet",
                scope.span,
                "use pl.at(level=pl.Level.CORE_GROUP)",
            )
        kernel_name = names.fresh(scope.name_hint or _anonymous_name(entry, names))
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

        params += _extent_carriers(entry, scope, params)
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
        kept = [p.var.name for p in params if p.var in homes]
        if kept:
            attrs[HOMES] = kept  # the tensors the compiler made to keep values in (carried.py)
        kernels.append(
            Function(kernel_name, tuple(params), kernel_body, FunctionKind.InCore, scope.span, attrs)
        )
        call_attrs = {"callee": kernel_name, **_task_attrs(scope, kernel_name, params)}
        call = make_call(op.call, tuple(call_args), call_attrs, scope.span, type=UNIT)
        return [*pre, Eval(call, scope.span)]


CLUSTER_HINT = (
    "call one AIC kernel and one AIV kernel in the cluster (@pl.function(type=pl.FunctionType.AIC) "
    "and type=pl.FunctionType.AIV), or one InCore kernel; put other work in pl.at scopes around it"
)


@dataclass
class _Cluster:
    """Outlines ``with pl.cluster():`` blocks: the AIC and the AIV kernel a block calls become a
    ``Group`` function that launches both on one core group (AIC first, as a Group runs them); a
    block calling one InCore kernel is that kernel's launch."""

    program: Program
    aliases: dict[Var, Expr]  # a call's target -> the tensor its kernel returns (written in place)

    def outline(self, entry: Function, scope: ScopeStmt, names: NameGen, kernels: list[Function]) -> Stmt:
        members = [self._member(stmt, scope) for stmt in scope.body]
        if len(members) == 1 and members[0][1].kind is FunctionKind.InCore:
            return self._incore(scope, *members[0])
        kinds = sorted(callee.kind.name for _, callee in members)
        if kinds != ["AIC", "AIV"]:
            called = ", ".join(f"{c.name} ({c.kind.name})" for _, c in members) or "nothing"
            raise ParseError(
                f"a pl.cluster() runs one AIC kernel and one AIV kernel together; this one calls {called}",
                scope.span,
                CLUSTER_HINT,
            )
        members.sort(key=lambda m: m[1].kind is not FunctionKind.AIC)
        launch = self._launch(scope, [call for call, _ in members])
        directions: dict[Var, Direction] = {}
        for call, callee in members:
            for arg, param in zip(call.args, callee.params, strict=True):
                if isinstance(arg, Var) and isinstance(arg.type, TensorType):
                    directions[arg] = _joined(directions.get(arg), param.direction)
        params = [
            Param(v, directions.get(v, Direction.In)) if isinstance(v.type, TensorType) else Param(v)
            for v in free_vars(scope.body)
        ]
        name = names.fresh(scope.name_hint or f"{entry.name}_cluster")
        body = tuple(Eval(call, call.span) for call, _ in members)
        kernels.append(
            Function(name, tuple(params), body, FunctionKind.Group, scope.span, {"name_hint": name})
        )
        for stmt in scope.body:
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                returned = returned_params(self.program.functions[stmt.value.attrs["callee"]])
                if returned:
                    self.aliases[stmt.target] = stmt.value.args[returned[0]]
        attrs = {"callee": name, **_task_attrs(scope, name, params), **launch}
        return Eval(
            make_call(op.call, tuple(p.var for p in params), attrs, scope.span, type=UNIT), scope.span
        )

    def _launch(self, scope: ScopeStmt, calls: list[Call]) -> dict[str, object]:
        """How the cluster's Group is launched: a ``pl.spmd`` inside the cluster launched its AIC
        and AIV kernels on ``block_num`` blocks, so the Group is. Its scheduling hints have no task
        of their own to ride on: an error, as is a launch the two calls disagree on."""
        for call in calls:
            for hint in ("predicate", "allow_early_resolve"):
                if call.attrs.get(hint):
                    raise ParseError(
                        f"{hint}= on a pl.spmd inside a pl.cluster(): the cluster's launch carries no "
                        "such hint",
                        call.span or scope.span,
                        f"move {hint}= out of the cluster (onto a launch of its own), or drop it",
                    )
        shapes = {(call.attrs.get("block_num", 1), bool(call.attrs.get("sync_start"))) for call in calls}
        if len(shapes) > 1:
            raise ParseError(
                "the AIC and AIV kernels of a pl.cluster() are launched on different block counts",
                scope.span,
                "launch both in one `with pl.spmd(n):` inside the cluster",
            )
        ((blocks, sync_start),) = shapes
        launch: dict[str, object] = {}
        if blocks > 1:
            launch["block_num"] = blocks
        if sync_start:
            launch["sync_start"] = True
        return launch

    def _incore(self, scope: ScopeStmt, call: Call, callee: Function) -> Stmt:
        """A cluster around one InCore kernel (a ``pl.spmd`` launch of it, say): the kernel runs on
        core groups anyway, its cube and vector halves made one Group when it is mixed, so the
        launch is the kernel's own. The scheduling hints of a launch nested in a cluster have no
        task of their own to ride on."""
        for hint in ("predicate", "allow_early_resolve"):
            if call.attrs.get(hint):
                raise ParseError(
                    f"{hint}= on a launch inside a pl.cluster(): the cluster's launch carries no such hint",
                    call.span or scope.span,
                    f"move {hint}= out of the cluster, or drop the pl.cluster() around this one kernel",
                )
        (stmt,) = scope.body
        return stmt

    def _member(self, stmt: Stmt, scope: ScopeStmt) -> tuple[Call, Function]:
        call = stmt.value if isinstance(stmt, (Assign, Eval)) else None
        if not (isinstance(call, Call) and call.op == op.call):
            raise ParseError(
                "a pl.cluster() body holds kernel calls only",
                stmt.span or scope.span,
                CLUSTER_HINT,
            )
        callee = self.program.functions.get(call.attrs["callee"])
        assert callee is not None, call.attrs["callee"]
        return call, callee


def _joined(seen: Direction | None, more: Direction) -> Direction:
    """A tensor's direction for a Group whose kernels take it as ``seen`` and ``more``."""
    if seen is None or seen is more:
        return more
    return (
        Direction.InOut if Direction.In in (seen, more) or Direction.InOut in (seen, more) else Direction.Out
    )


def _extents_used(body: tuple[Stmt, ...]) -> list[DynDim]:
    """The dynamic extents ``body`` names, each once: in expressions (loop bounds, valid shapes)
    and in the shapes of the values it makes."""
    found: dict[DynDim, None] = {}
    for stmt in walk_stmts(body):
        for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
            for e in walk_expr(expr):
                extents = [e] if isinstance(e, DynDim) else []
                if isinstance(e, Call):
                    for d in e.attrs.get("shape", ()):
                        extents += extent_dims(d)
                found.update(dict.fromkeys(extents))
    return list(found)


def _extent_carriers(entry: Function, scope: ScopeStmt, params: list[Param]) -> list[Param]:
    """Tensors the kernel takes only for their extents: a kernel binds a dynamic extent from the
    shapes of its tensor arguments, so one the scope names but none of its tensors has comes
    with a tensor of the caller that has it (read only for its shape)."""
    bound = {d for p in params for d in dynamic_extents(p.var.type)}
    carriers: list[Param] = []
    for dim in _extents_used(scope.body):
        if dim in bound:
            continue
        carrier = next(
            (p.var for p in entry.params if dim in dynamic_extents(p.var.type)),
            None,
        )
        if carrier is None:
            raise ParseError(
                f"the scope uses the dynamic extent {dim.name}, but no tensor of {entry.name} has it",
                dim.span or scope.span,
                f"annotate a parameter of {entry.name} with {dim.name} "
                f"(pl.Tensor[[{dim.name}, ...], ...]), or use an extent of the tensors the scope touches",
            )
        carriers.append(Param(carrier))
        bound.update(dynamic_extents(carrier.type))
    return carriers


def _task_attrs(scope: ScopeStmt, kernel: str, params: list[Param]) -> dict[str, object]:
    """What the scope says about its task, as ``call`` attrs naming orchestration variables."""
    passed = {p.var for p in params}
    for key, named_list in (("no_dep_args", scope.no_dep_args), ("dumps", scope.dumps)):
        for named in named_list:
            if named not in passed:
                raise ParseError(
                    f"{key}= names {named.name}, which scope '{kernel}' does not use",
                    named.span or scope.span,
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
    if scope.predicate is not None:
        attrs["predicate"] = scope.predicate
    if scope.dumps:
        attrs["dumps"] = tuple(v.name for v in scope.dumps)
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


def _anonymous_name(entry: Function, names: NameGen) -> str:
    """A scope without ``name_hint``: ``<function>_incore_<n>``, numbered from 0 in the order the
    function's scopes are outlined (as PyPTO names them)."""
    n = 0
    while f"{entry.name}_incore_{n}" in names.taken:
        n += 1
    return f"{entry.name}_incore_{n}"
