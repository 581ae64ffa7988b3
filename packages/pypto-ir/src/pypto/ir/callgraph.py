"""Which functions of a program run on the control plane, and who calls whom.

A program's entry runs on the host; so does every ``Orchestration`` function and every ``Opaque``
one (``@pl.jit.opaque``: no plane of its own yet) that host code calls. Host code is a control
function's body outside its ``pl.at`` scopes. A ``call`` there of a kernel is a task; a ``call``
of another control function runs that function's body on the host, as if it stood at the call
site: the tasks it launches take their edges from the tensors it is passed.

>>> [fn.name for fn in control_functions(program)]  # doctest: +SKIP
['model', 'mlp_block']
"""

from __future__ import annotations

from collections.abc import Iterator

from pypto.ir.nodes import (
    Call,
    Function,
    FunctionKind,
    Program,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    nested_bodies,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)
from pypto.ir.ops import dist, op

# The kinds a function called from host code runs on the host as: no task of its own.
CONTROL_KINDS = (FunctionKind.Orchestration, FunctionKind.Opaque)


def host_calls(body: tuple[Stmt, ...]) -> Iterator[Call]:
    """The ``call`` ops of ``body`` outside its ``pl.at`` scopes and vector regions, in order."""
    for stmt in body:
        for root in stmt_exprs(stmt):
            yield from (e for e in walk_expr(root) if isinstance(e, Call) and e.op == op.call)
        if not isinstance(stmt, (ScopeStmt, SplitAivRegion)):
            for inner in nested_bodies(stmt):
                yield from host_calls(inner)


def callee(program: Program, call: Call) -> Function | None:
    """The function a ``call`` names, or None if the program has none of that name."""
    try:
        return program.function(str(call.attrs.get("callee")))
    except KeyError:
        return None


def is_control_call(program: Program, call: Call) -> bool:
    """Whether host code's ``call`` runs another control function (rather than launching a task)."""
    fn = callee(program, call)
    return fn is not None and fn.kind in CONTROL_KINDS


def control_functions(program: Program) -> list[Function]:
    """The entry, then each control function its host code calls (transitively), once each.

    A distributed program's entry is a HOST function, which the passes leave as written: its
    control functions are the chip orchestrations the HOST functions dispatch to the ranks (and
    what those call), each a root of its own."""
    found = [fn for fn in chip_roots(program) if not fn.is_host]
    for fn in found:  # grows while it is walked
        for call in host_calls(fn.body):
            target = callee(program, call)
            if target is not None and target.kind in CONTROL_KINDS and target not in found:
                found.append(target)
    return found


def chip_roots(program: Program) -> list[Function]:
    """The functions the chip side starts from: the entry, or for a HOST entry the chip
    orchestrations its HOST functions dispatch (``dist.dispatch``), in program order."""
    entry = program.entry_function
    if not entry.is_host:
        return [entry]
    dispatched = {
        str(e.attrs.get("callee"))
        for fn in _functions(program)
        if fn.is_host
        for stmt in walk_stmts(fn.body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == dist.dispatch
    }
    return [fn for fn in _functions(program) if fn.name in dispatched]


def call_cycle(program: Program) -> list[str] | None:
    """A chain of function names that calls its own first one (``['a', 'b', 'a']``), or None."""
    calls = {fn.name: _callees(fn) for fn in _functions(program)}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        for target in calls.get(name, ()):
            cycle = visit(target, [*path, name])
            if cycle is not None:
                return cycle
        done.add(name)
        return None

    for name in calls:
        cycle = visit(name, [])
        if cycle is not None:
            return cycle
    return None


def _callees(fn: Function) -> list[str]:
    """The names every ``call`` of ``fn`` names, scopes included."""
    return [
        str(e.attrs.get("callee"))
        for stmt in walk_stmts(fn.body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op in (op.call, dist.dispatch, dist.call_subworker)
    ]


def _functions(program: Program) -> list[Function]:
    """Every function of the program (one place to adapt to how ``Program`` holds them)."""
    return list(program.functions.values())
