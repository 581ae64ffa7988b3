"""Small IR-rewriting tools the front end and the passes share: fresh names, substitution,
def/use queries, index arithmetic."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TypeVar

from pypto.ir.errors import PyptoError
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    MemRefSlot,
    Program,
    Return,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    TupleExpr,
    Var,
    While,
    nested_bodies,
    stmt_bindings,
    stmt_end_exprs,
    stmt_exprs,
    used_vars,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import Fold, get_op, make_call, scalar, trait_of
from pypto.ir.types import INDEX, ScalarType, TupleType

T = TypeVar("T")


class NameGen:
    """Hands out names unique within one function: ``acc``, ``acc_1``, ``acc_2`` ..."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)

    @classmethod
    def for_function(cls, fn: Function) -> NameGen:
        names = {p.var.name for p in fn.params}
        names |= {v.name for v in defined_vars(fn.body)}
        return cls(names)

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def defined_vars(body: tuple[Stmt, ...]) -> Iterator[Var]:
    """Assignment targets, loop variables and carried values, if results, region lanes and task
    ids, nested bodies included."""
    for stmt in walk_stmts(body):
        yield from stmt_bindings(stmt)


def vars_used_in(body: tuple[Stmt, ...]) -> Iterator[Var]:
    for stmt in walk_stmts(body):
        for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
            yield from used_vars(expr)


def free_vars(body: tuple[Stmt, ...]) -> list[Var]:
    """Vars ``body`` uses but does not define, in first-use order."""
    defined = set(defined_vars(body))
    seen: dict[Var, None] = {}
    for v in vars_used_in(body):
        if v not in defined:
            seen.setdefault(v, None)
    return list(seen)


def substitute_expr(expr: Expr, mapping: Mapping[Var, Expr]) -> Expr:
    """Replace vars by ``mapping``; calls whose operands changed are re-typed by the op table."""
    if isinstance(expr, Var):
        return mapping.get(expr, expr)
    if isinstance(expr, TupleExpr):
        elements = tuple(substitute_expr(e, mapping) for e in expr.elements)
        if all(a is b for a, b in zip(elements, expr.elements, strict=True)):
            return expr
        return replace(expr, elements=elements)
    if isinstance(expr, Call):
        args = tuple(substitute_expr(a, mapping) for a in expr.args)
        if all(a is b for a, b in zip(args, expr.args, strict=True)):
            return expr
        if get_op(expr.op).open:  # a call of a function (a kernel, a dispatch): its type is the callee's
            return replace(expr, args=args)
        return make_call(expr.op, args, expr.attrs, expr.span)
    return expr


def substitute_body(body: tuple[Stmt, ...], mapping: dict[Var, Expr]) -> tuple[Stmt, ...]:
    """Substitute through a body. An assignment whose target maps to a Var is renamed; a
    re-typed assignment gets a new target var, recorded in ``mapping`` so later uses follow it."""
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, Assign):
            value = substitute_expr(stmt.value, mapping)
            renamed = mapping.get(stmt.target)
            target = renamed if isinstance(renamed, Var) else stmt.target
            if value.type != target.type:
                target = replace(target, type=value.type)
                mapping[stmt.target] = target
            out.append(replace(stmt, target=target, value=value, memref=_substitute_memref(stmt, mapping)))
        elif isinstance(stmt, Eval):
            out.append(replace(stmt, value=substitute_expr(stmt.value, mapping)))
        elif isinstance(stmt, (Return, Break, Continue)):
            out.append(replace(stmt, values=tuple(substitute_expr(v, mapping) for v in stmt.values)))
        elif isinstance(stmt, (For, While)):
            out.append(_substitute_loop(stmt, mapping))
        elif isinstance(stmt, ScopeStmt):
            out.append(_substitute_scope(stmt, mapping))
        elif isinstance(stmt, SplitAivRegion):
            out.append(replace(stmt, body=substitute_body(stmt.body, mapping)))
        elif isinstance(stmt, If):
            out.append(_substitute_if(stmt, mapping))
        else:
            out.append(stmt)
    return tuple(out)


def _substitute_scope(scope: ScopeStmt, mapping: dict[Var, Expr]) -> ScopeStmt:
    """Substitute through a scope: its body, and the variables its ``deps=``, ``no_dep_args=``
    and ``dumps=`` name (renamed when ``mapping`` maps them to variables)."""

    def renamed(names: tuple[Var, ...]) -> tuple[Var, ...]:
        return tuple(new if isinstance(new := mapping.get(v, v), Var) else v for v in names)

    return replace(
        scope,
        body=substitute_body(scope.body, mapping),
        deps=renamed(scope.deps),
        no_dep_args=renamed(scope.no_dep_args),
        dumps=renamed(scope.dumps),
    )


def _substitute_memref(stmt: Assign, mapping: Mapping[Var, Expr]) -> MemRefSlot | None:
    """The ``pl.MemRef`` slot of ``stmt`` over the substituted loop variable: renamed along with
    it, or a fixed slot when the variable becomes a constant."""
    slot = stmt.memref
    new = mapping.get(slot.var) if slot is not None and slot.var is not None else None
    if slot is None or new is None:
        return slot
    if isinstance(new, Var):
        return replace(slot, var=new)
    if isinstance(new, Const) and isinstance(new.value, int):
        return replace(slot, var=None, scale=1, shift=slot.slot(new.value))
    return slot


def _substitute_loop(loop: For | While, mapping: dict[Var, Expr]) -> For | While:
    """Substitute through a loop: bounds (or condition), init values, body and yields; iter_args
    and results that ``mapping`` renames are renamed."""

    def exprs(values: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(substitute_expr(e, mapping) for e in values)

    init_values, iter_args = exprs(loop.init_values), _renamed(loop.iter_args, mapping)
    if isinstance(loop, For):
        start, stop, step = exprs((loop.start, loop.stop, loop.step))
        loop = replace(loop, start=start, stop=stop, step=step)
    else:
        loop = replace(loop, cond=substitute_expr(loop.cond, mapping))
    body = substitute_body(loop.body, mapping)
    return replace(
        loop,
        body=body,
        iter_args=iter_args,
        init_values=init_values,
        yields=exprs(loop.yields),
        results=_renamed(loop.results, mapping),
    )


def _substitute_if(stmt: If, mapping: dict[Var, Expr]) -> If:
    """Substitute through an if: condition, arms and their yields; results ``mapping`` renames
    are renamed."""
    then_body, else_body = (substitute_body(b, mapping) for b in (stmt.then_body, stmt.else_body))
    return replace(
        stmt,
        cond=substitute_expr(stmt.cond, mapping),
        then_body=then_body,
        else_body=else_body,
        then_yields=tuple(substitute_expr(e, mapping) for e in stmt.then_yields),
        else_yields=tuple(substitute_expr(e, mapping) for e in stmt.else_yields),
        results=_renamed(stmt.results, mapping),
    )


def _renamed(vars_: tuple[Var, ...], mapping: Mapping[Var, Expr]) -> tuple[Var, ...]:
    return tuple(v2 if isinstance(v2 := mapping.get(v, v), Var) else v for v in vars_)


def map_effect_calls(body: tuple[Stmt, ...], change: Callable[[Call], Call]) -> tuple[Stmt, ...]:
    """``body`` with each call made as a statement (an ``Eval``: a store, a pipe op, a kernel call)
    replaced by ``change(call)``, in nested bodies too."""
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, Eval) and isinstance(stmt.value, Call):
            stmt = replace(stmt, value=change(stmt.value))
        bodies = nested_bodies(stmt)
        if bodies:
            stmt = with_bodies(stmt, tuple(map_effect_calls(b, change) for b in bodies))
        out.append(stmt)
    return tuple(out)


def map_functions(
    program: Program, kinds: Container[FunctionKind], fn_pass: Callable[[Function], Function]
) -> Program:
    """Apply ``fn_pass(fn)`` to every function whose kind is in ``kinds``."""
    funcs = tuple(at_function(fn_pass, fn) if fn.kind in kinds else fn for fn in program.functions.values())
    return program.with_functions(funcs)


def at_function(fn_pass: Callable[[Function], T], fn: Function) -> T:
    """``fn_pass(fn)``; an error it raises about an op the compiler made (which has no span of its
    own) is reported at ``fn``'s span, the user's ``pl.at(...)`` line."""
    try:
        return fn_pass(fn)
    except PyptoError as err:
        err.with_span(fn.span)
        raise


def folded(expr: Expr) -> Expr:
    """``expr`` with its scalar calls on constants computed (``0 * 64`` is ``0``), as the parser
    folds them: a substituted expression then prints and parses back as itself."""
    if isinstance(expr, TupleExpr):
        elements = tuple(folded(e) for e in expr.elements)
        if all(a is b for a, b in zip(elements, expr.elements, strict=True)):
            return expr
        return replace(expr, elements=elements)
    if not isinstance(expr, Call):
        return expr
    args = tuple(folded(a) for a in expr.args)
    fold = trait_of(expr.op, Fold)
    if fold is not None and isinstance(expr.type, ScalarType) and all(isinstance(a, Const) for a in args):
        try:
            value = fold.fn(*(a.value for a in args if isinstance(a, Const)))
        except (ArithmeticError, ValueError):
            value = None  # left as a call: the backend reports it where it runs
        if isinstance(value, (bool, int, float)):
            return Const(value, expr.type, expr.span)
    identity = {scalar.add: 0, scalar.mul: 1}.get(expr.op)
    if identity is not None and len(args) == 2:
        for const, other in (args, args[::-1]):
            if isinstance(const, Const) and const.value == identity and other.type == expr.type:
                return other  # 0 + x is x, 1 * x is x
    if all(a is b for a, b in zip(args, expr.args, strict=True)):
        return expr
    if get_op(expr.op).open:
        return replace(expr, args=args)
    return make_call(expr.op, args, expr.attrs, expr.span)


def scalar_call(op_name: str, a: Expr, b: Expr) -> Expr:
    """``op_name(a, b)`` on scalars as the parser builds it from printed text: a constant operand
    takes the other operand's dtype (``pl.min(64, rows)`` of an INT32 ``rows`` is INT32); folded
    when both are constants."""
    if isinstance(a, Const) and not isinstance(b, Const) and isinstance(b.type, ScalarType):
        a = Const(a.value, b.type, a.span)
    elif isinstance(b, Const) and not isinstance(a, Const) and isinstance(a.type, ScalarType):
        b = Const(b.value, a.type, b.span)
    return folded(make_call(op_name, (a, b)))


def index_add(a: Expr, b: Expr) -> Expr:
    """``a + b`` on indices, folded when both are constants."""
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value, INDEX)
    return make_call(scalar.add, (a, b))


def index_tuple(elements: list[Expr]) -> TupleExpr:
    return TupleExpr(tuple(elements), TupleType(tuple(e.type for e in elements)))
