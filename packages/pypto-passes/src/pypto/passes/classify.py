"""ClassifyKernels: each InCore kernel becomes an AIC (cube) or an AIV (vector) kernel."""

from __future__ import annotations

from dataclasses import dataclass, replace

from pypto.ir import Call, Function, FunctionKind, ParseError, Program, SourceSpan, Unit, get_op
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.passes.manager import PassContext
from pypto.passes.rewrite import map_functions
from pypto.passes.sides import Side, call_side


def first_ops_by_side(fn: Function) -> dict[Side, Call]:
    """The first op of ``fn`` that runs on each side (cube, vector), compute ops preferred
    over transfers so messages name the matmul or the add rather than a load."""
    compute: dict[Side, Call] = {}
    transfer: dict[Side, Call] = {}
    for stmt in walk_stmts(fn.body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                side = call_side(e) if isinstance(e, Call) else None
                if side is not None:
                    found = compute if get_op(e.op).unit in (Unit.CUBE, Unit.VECTOR) else transfer
                    found.setdefault(side, e)
    return {**transfer, **compute}


def _where(call: Call) -> str:
    name = "pl." + call.op.split(".", 1)[1]
    return f"{name} at line {call.span.line}" if isinstance(call.span, SourceSpan) else name


@dataclass(frozen=True)
class ClassifyKernels:
    """Pure cube kernels run on the AIC, pure vector kernels on an AIV lane.

    A kernel with work on both sides is a mixed kernel; it needs the mixed-kernel passes.
    """

    name: str = "ClassifyKernels"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return map_functions(program, (FunctionKind.InCore,), self.classify)

    def classify(self, fn: Function) -> Function:
        sides = first_ops_by_side(fn)
        if Side.CUBE in sides and Side.VECTOR in sides:
            cube, vector = sides[Side.CUBE], sides[Side.VECTOR]
            raise ParseError(
                f"scope '{fn.name}' mixes cube work ({_where(cube)}) and vector work "
                f"({_where(vector)}); mixed cube+vector kernels are not supported by this "
                "compiler version",
                fn.span,
                "write the cube part and the vector part as two pl.at(...) scopes; the "
                "intermediate tensor carries the data between them",
            )
        kind = FunctionKind.AIC if Side.CUBE in sides else FunctionKind.AIV
        return replace(fn, kind=kind)
