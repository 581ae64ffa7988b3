"""StampTfree: every tile popped from a pipe is given back with exactly one tfree.

In kernels whose pipes the compiler set up, a ``tfree`` goes right after the popped tile's last
use in the block that popped it. In kernels written with explicit pipe ops the author places
the tfrees; a pop that is not freed on every path is warned about here, since the hardware
would only stall.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto.ir import (
    Assign,
    Call,
    DiagnosticCheck,
    Eval,
    Function,
    FunctionKind,
    Program,
    Stmt,
    Var,
    make_call,
)
from pypto.ir.nodes import nested_bodies, stmt_end_exprs, stmt_exprs, used_vars, walk_stmts, with_bodies
from pypto.ir.ops import PipeAction, PipeEnd, pipe_op, short_name, trait_of
from pypto.ir.rewrite import map_functions
from pypto.passes.manager import PassContext


def _pipe_end(call: object, action: PipeAction) -> PipeEnd | None:
    """The pipe end ``call`` is, if it is one doing ``action``."""
    end = trait_of(call, PipeEnd) if isinstance(call, Call) else None
    return end if end is not None and end.action is action else None


def free_of(pop: Call) -> str:
    """The tfree that hands back the slot of the tile ``pop`` returned."""
    end = _pipe_end(pop, PipeAction.POP)
    assert end is not None and end.direction is not None
    return pipe_op(PipeAction.FREE, end.direction)


def _pop(stmt: Stmt) -> Var | None:
    if isinstance(stmt, Assign) and _pipe_end(stmt.value, PipeAction.POP) is not None:
        return stmt.target
    return None


def _uses(stmt: Stmt, v: Var) -> bool:
    return any(v in used_vars(e) for s in walk_stmts((stmt,)) for e in (*stmt_exprs(s), *stmt_end_exprs(s)))


def _freed(body: tuple[Stmt, ...], v: Var) -> bool:
    return any(
        isinstance(s, Eval)
        and isinstance(s.value, Call)
        and _pipe_end(s.value, PipeAction.FREE) is not None
        and v in s.value.args
        for s in body
    )


@dataclass(frozen=True)
class StampTfree:
    name: ClassVar[str] = "StampTfree"
    pipeline_name: ClassVar[str] = "stamp-tfree"

    def run(self, program: Program, ctx: PassContext) -> Program:
        def stamp(fn: Function) -> Function:
            if fn.attrs.get("pipe_setup") == "automatic":
                return replace(fn, body=_stamp(fn.body))
            _check_freed(fn, fn.body, ctx)
            return fn

        return map_functions(program, (FunctionKind.AIC, FunctionKind.AIV), stamp)


def _stamp(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    out = [with_bodies(s, tuple(map(_stamp, nested_bodies(s)))) if nested_bodies(s) else s for s in body]
    for index in range(len(out) - 1, -1, -1):
        popped = _pop(out[index])
        if popped is None or _freed(tuple(out[index:]), popped):
            continue  # not a pop, or one already freed (a program this pass has run on before)
        last = max((j for j in range(index, len(out)) if _uses(out[j], popped)), default=index)
        call = out[index].value  # type: ignore[attr-defined]
        free = make_call(free_of(call), (popped,), {}, call.span)
        out.insert(last + 1, Eval(free, call.span))
    return tuple(out)


def _check_freed(fn: Function, body: tuple[Stmt, ...], ctx: PassContext) -> None:
    for index, stmt in enumerate(body):
        for inner in nested_bodies(stmt):
            _check_freed(fn, inner, ctx)
        popped = _pop(stmt)
        if popped is not None and not _freed(body[index + 1 :], popped):
            call = stmt.value  # type: ignore[attr-defined]
            where = f"{call.span}: " if call.span else ""
            ctx.warn(
                f"{where}in {fn.name}: the tile {popped.name} popped by pl.{short_name(call.op)} is not "
                f"freed "
                f"on every path; add pl.{free_of(call)}({popped.name}) after its last use, or "
                "the producer stalls once the ring is full",
                DiagnosticCheck.UnfreedPipeTile,
            )
