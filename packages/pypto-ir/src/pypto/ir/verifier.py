"""Type verifier: re-checks every op against the op table and every use against a definition, and
the call graph (no cycles; control functions called from host code only)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from pypto.ir.callgraph import CONTROL_KINDS, call_cycle, host_calls, is_control_call
from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, VerificationError
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Continue,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    Program,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    Var,
    While,
    always_jumps,
    nested_bodies,
    stmt_bindings,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)
from pypto.ir.ops import Communicates, OnHost, OnSide, OpSpec, Side, Unit, dist, get_op, op, tensor
from pypto.ir.types import TASK_ID, ArrayType, ScalarType, TensorType, TileType, Type

_DEVICE_UNITS = (Unit.CUBE, Unit.VECTOR, Unit.MTE)


def verify_program(program: Program) -> None:
    """Raise ``VerificationError`` (or the op's own ``TypeCheckError``) on the first problem."""
    names = {fn.name for fn in program.functions.values()}
    if program.entry not in names:
        raise VerificationError(f"entry function {program.entry!r} is not in the program")
    for fn in program.functions.values():
        verify_function(fn, names)
    _verify_calls(program)


def _verify_calls(program: Program) -> None:
    """No function calls itself, through others or not (a walk would never end), and control
    functions are called from host code only: a kernel or a scope launches no functions."""
    cycle = call_cycle(program)
    if cycle is not None:
        raise VerificationError(
            f"{' -> '.join(cycle)}: the functions call each other in a cycle, which would never end",
            program.function(cycle[0]).span,
        )
    for fn in program.functions.values():
        on_host = {id(c) for c in host_calls(fn.body)} if fn.kind in CONTROL_KINDS else set()
        for call in _calls(fn.body):
            if id(call) not in on_host and is_control_call(program, call):
                where = "a pl.at scope" if fn.kind in CONTROL_KINDS else f"{fn.kind.value} kernel {fn.name}"
                raise VerificationError(
                    f"in {fn.name}: {call.attrs['callee']} is a control function, called from {where}",
                    call.span,
                )


def _calls(body: tuple[Stmt, ...]) -> list[Call]:
    return [
        e
        for stmt in walk_stmts(body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == op.call
    ]


def verify_function(fn: Function, callees: set[str] | None = None) -> None:
    defined: set[Var] = {p.var for p in fn.params}
    _verify_body(fn, fn.body, defined, callees, in_scope=False)


def _defined(fn: Function, var: Var, defined: set[Var]) -> bool:
    """Whether ``var`` is bound here: by a statement before it, or, for a task id, by the ``task``
    attr of a kernel call (which binds it by name)."""
    return var in defined or (var.type == TASK_ID and var.name in call_tasks(fn.body))


def _verify_body(
    fn: Function, body: tuple[Stmt, ...], defined: set[Var], callees: set[str] | None, in_scope: bool
) -> None:
    for stmt in body:
        for expr in stmt_exprs(stmt):
            _verify_expr(fn, expr, defined, callees, in_scope)
        if isinstance(stmt, Assign):
            defined.add(stmt.target)
            if stmt.target.type != stmt.value.type:
                raise VerificationError(
                    f"in {fn.name}: {stmt.target.name} is declared {stmt.target.type} "
                    f"but assigned {stmt.value.type}",
                    stmt.span,
                )
        elif isinstance(stmt, (For, While)):
            _verify_loop(fn, stmt, defined, callees, in_scope)
        elif isinstance(stmt, If):
            _verify_if(fn, stmt, defined, callees, in_scope)
        elif isinstance(stmt, ScopeStmt):
            _verify_task_vars(fn, stmt, defined)
            _verify_body(fn, stmt.body, defined, callees, in_scope=True)
            if stmt.task is not None:
                defined.add(stmt.task)
        elif isinstance(stmt, SplitAivRegion):
            # Values a region binds stay visible after it (aic_gather collects them); its lane does not.
            inner = defined | {stmt.lane}
            _verify_body(fn, stmt.body, inner, callees, in_scope)
            defined |= inner - {stmt.lane}


def _verify_loop(
    fn: Function, loop: For | While, defined: set[Var], callees: set[str] | None, in_scope: bool
) -> None:
    """The body (and a while loop's condition) sees the loop var and the iter_args; the yields
    are checked at its end, the results are defined after the loop; every carried value keeps
    one type; a ``break`` / ``continue`` gives one value per carried value."""
    inner = defined | set(stmt_bindings(loop)) - set(loop.results)
    if isinstance(loop, While):
        _verify_expr(fn, loop.cond, inner, callees, in_scope)
    _verify_body(fn, loop.body, inner, callees, in_scope)
    for expr in loop.yields:
        _verify_expr(fn, expr, inner, callees, in_scope)
    what = f"loop over {loop.var.name}" if isinstance(loop, For) else "while loop"
    _verify_carried_types(fn, what, loop.span, (loop.iter_args, loop.init_values, loop.yields, loop.results))
    for jump in _jumps(loop.body):
        _verify_carried_types(
            fn, f"{type(jump).__name__.lower()} of the {what}", jump.span, (loop.iter_args, jump.values)
        )
    defined.update(loop.results)


def _jumps(body: tuple[Stmt, ...]) -> Iterator[Break | Continue]:
    """The ``break`` / ``continue`` statements of a loop body, not those of the loops inside it."""
    for stmt in body:
        if isinstance(stmt, (Break, Continue)):
            yield stmt
        elif not isinstance(stmt, (For, While)):
            for inner in nested_bodies(stmt):
                yield from _jumps(inner)


def _verify_if(fn: Function, stmt: If, defined: set[Var], callees: set[str] | None, in_scope: bool) -> None:
    """Each arm sees what was defined before the if, and its yields what the arm bound; an arm
    that always jumps yields nothing; the results are defined after the if."""
    _verify_condition(fn, stmt)
    for k, arm in enumerate(nested_bodies(stmt)):
        inner = set(defined)  # names bound in an arm end with it
        _verify_body(fn, arm, inner, callees, in_scope)
        yields = stmt.arm_yields(k)
        if not yields and always_jumps(arm):
            continue
        for expr in yields:
            _verify_expr(fn, expr, inner, callees, in_scope)
        _verify_carried_types(fn, "if", stmt.span, (yields, stmt.results))
    defined.update(stmt.results)


def _verify_carried_types(
    fn: Function, what: str, span: SourceSpan | None, groups: tuple[tuple[Expr, ...], ...]
) -> None:
    """Every group (iter_args, init values, yields, results, a jump's values) has one entry per
    carried value, and the entries of one value have one type."""
    if len({len(g) for g in groups}) != 1:
        raise VerificationError(
            f"in {fn.name}: the {what} has {' / '.join(str(len(g)) for g in groups)} carried values "
            "(iter_args / init / yield / result, or yields / results of an if)",
            span,
        )
    for carried in zip(*groups, strict=True):
        types = {_carried_type(e.type) for e in carried}
        if len(types) != 1:
            raise VerificationError(
                f"in {fn.name}: the value {getattr(carried[0], 'name', '?')} the {what} carries has types "
                f"{' / '.join(str(e.type) for e in carried)}",
                span,
            )


def _carried_type(t: Type) -> Type:
    """A carried tile's type, its valid shape aside (a partial tile is carried in a full buffer)."""
    return replace(t, valid_shape=None) if isinstance(t, TileType) else t


def call_tasks(body: tuple[Stmt, ...]) -> set[str]:
    """The task ids kernel calls bind by name (``call.attrs["task"]``: ``pl.submit``, an outlined
    ``pl.at(...) as tid``), anywhere in ``body``."""
    return {
        str(stmt.value.attrs["task"])
        for stmt in walk_stmts(body)
        if isinstance(stmt, (Eval, Assign))
        and isinstance(stmt.value, Call)
        and stmt.value.op == op.call
        and "task" in stmt.value.attrs
    }


def is_task_ids(t: Type) -> bool:
    """A ``deps=`` entry's type: a task id, or an array of them (every id it holds)."""
    return t == TASK_ID or (isinstance(t, ArrayType) and t.dtype is DataType.TASK_ID)


def _verify_task_vars(fn: Function, scope: ScopeStmt, defined: set[Var]) -> None:
    """A scope's ``deps`` are task ids (or arrays of them) bound before it (by an earlier scope,
    an assignment, or the ``task`` attr of a kernel call: ``pl.submit``); its ``no_dep_args``
    are tensors."""
    submitted = call_tasks(fn.body) if scope.deps else set()
    for var in scope.deps:
        bound = var in defined or var.name in submitted
        if not bound or not is_task_ids(var.type):
            raise VerificationError(
                f"in {fn.name}: deps= names {var.name}, which is not a task id bound before the scope",
                var.span,
            )
    for var in (*scope.no_dep_args, *scope.dumps):
        if var not in defined or not isinstance(var.type, TensorType):
            raise VerificationError(
                f"in {fn.name}: no_dep_args= / dumps= name {var.name}, not a tensor defined before the scope",
                var.span,
            )


def _verify_condition(fn: Function, stmt: If) -> None:
    t = stmt.cond.type
    if not isinstance(t, ScalarType) or not (t.dtype is DataType.BOOL or t.dtype.is_integer):
        raise VerificationError(
            f"in {fn.name}: an if condition must be a boolean or integer scalar, got {t}", stmt.span
        )


# The side each hand-written half-kernel runs on.
_KERNEL_SIDES = {FunctionKind.AIC: Side.CUBE, FunctionKind.AIV: Side.VECTOR}


def _verify_side(fn: Function, spec: OpSpec, call: Call) -> None:
    """An op only one side's cores run (``OnSide(only=True)``) is not in a kernel of the other side."""
    fixed = spec.trait(OnSide)
    side = _KERNEL_SIDES.get(fn.kind)
    if fixed is None or not fixed.only or side is None or side is fixed.side:
        return
    core = "vector core (AIV)" if fixed.side is Side.VECTOR else "cube core (AIC)"
    raise VerificationError(
        f"in {fn.name}: {spec.dsl_name} runs on the {core} only, and {fn.name} is an {fn.kind.value} kernel",
        call.span,
        f"move it into an {'AIV' if fixed.side is Side.VECTOR else 'AIC'} function, or into an "
        "InCore kernel (pl.at scope), whose ops the compiler places on their side",
    )


def _verify_placement(fn: Function, spec: OpSpec, call: Call) -> None:
    """A distributed op stands where it runs: a HOST-only op in a HOST function, a kernel op
    (a notify, a remote load, ...) in a kernel, never in a HOST function."""
    comm = spec.trait(Communicates)
    if comm is None or comm.where == "both":
        return
    if comm.where == "host" and not fn.is_host:
        raise VerificationError(
            f"in {fn.name}: {spec.name} runs on the host, and {fn.name} is no HOST function",
            call.span,
            "move it into the @pl.jit.host function",
        )
    if comm.where == "kernel" and fn.is_host:
        raise VerificationError(
            f"in {fn.name}: {spec.name} runs in a kernel, and {fn.name} is a HOST function",
            call.span,
            "move it into a @pl.jit.incore kernel or a pl.at scope of a chip orchestration",
        )


def _verify_expr(
    fn: Function, expr: Expr, defined: set[Var], callees: set[str] | None, in_scope: bool
) -> None:
    for e in walk_expr(expr):
        if isinstance(e, Var) and not _defined(fn, e, defined):
            raise VerificationError(f"in {fn.name}: {e.name} is used before it is defined", e.span)
        if not isinstance(e, Call):
            continue
        opdef = get_op(e.op)
        problem = opdef.schema_problem(e)
        if problem is not None:
            raise VerificationError(f"in {fn.name}: {e.op} {problem}", e.span)
        if e.op in (op.call, dist.dispatch, dist.call_subworker):
            callee = e.attrs.get("callee")
            if callees is not None and callee not in callees:
                raise VerificationError(f"in {fn.name}: call to unknown kernel {callee!r}", e.span)
            continue
        _verify_side(fn, opdef, e)
        _verify_placement(fn, opdef, e)
        comm = opdef.trait(Communicates)
        host_collective = (
            fn.is_host and comm is not None and comm.where == "both"
        )  # one builtin task per rank
        host_view = fn.is_host and e.op == tensor.reshape  # x[r]: the per-rank piece of a host tensor
        on_core = opdef.unit in _DEVICE_UNITS and not (opdef.has(OnHost) or host_collective or host_view)
        if fn.kind is FunctionKind.Orchestration and not in_scope and on_core:
            raise VerificationError(
                f"in {fn.name}: {opdef.dsl_name} runs on a core but sits in the orchestration body",
                e.span,
            )
        expected = opdef.infer(e.args, e.attrs, e.span)
        if expected != e.type:
            raise VerificationError(
                f"in {fn.name}: {opdef.dsl_name} has type {e.type} but its rule gives {expected}",
                e.span,
            )
