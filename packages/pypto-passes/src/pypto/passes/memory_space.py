"""InferTileMemorySpace: give every tile a memory space and check every transfer's path."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto.ir import (
    Assign,
    Call,
    Expr,
    Function,
    FunctionKind,
    MemorySpace,
    Program,
    Target,
    TileType,
    TypeCheckError,
    Var,
    make_call,
)
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import GmAccess, Level, Unit, get_op, tile
from pypto.ir.rewrite import map_functions, substitute_body
from pypto.ir.sides import is_crossing
from pypto.passes.manager import PassContext

_KERNELS = (FunctionKind.InCore, FunctionKind.AIC, FunctionKind.AIV)
# A tile moved into one of these spaces is staged in Mat first.
_FED_FROM_MAT = (MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias)


def _operand_space(call: Call, index: int) -> MemorySpace | None:
    """Where operand ``index`` must live for ``call``: the one space its spec accepts there."""
    operands = get_op(call.op).operands
    spaces = operands[index].spaces if index < len(operands) else None
    return spaces[0] if spaces is not None and len(spaces) == 1 else None


def _transfer(call: Call) -> str | None:
    """ "load" (global memory -> tile), "store" (tile -> global memory), "move", or None."""
    spec = get_op(call.op)
    access = spec.trait(GmAccess)
    if spec.level is not Level.TILE or spec.unit is not Unit.MTE:
        return None
    if access is not None:
        return "store" if access.write else "load"
    return "move" if call.op == tile.move else None


@dataclass(frozen=True)
class InferTileMemorySpace:
    """Tiles created or loaded without ``target_memory`` take the space their first use needs
    (Mat when they are moved on to Left/Right, Vec otherwise). Then every load, store and
    move must follow a legal data path of the target; a move between the cube and the vector
    side is left for the mixed-kernel passes."""

    name: ClassVar[str] = "InferTileMemorySpace"
    pipeline_name: ClassVar[str] = "infer-memory-space"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return map_functions(program, _KERNELS, lambda fn: self.infer(fn, ctx.target))

    def infer(self, fn: Function, target: Target) -> Function:
        needs = _first_use_spaces(fn)
        mapping: dict[Var, Expr] = {}
        body = list(fn.body)
        for stmt in walk_stmts(fn.body):
            if isinstance(stmt, Assign) and _unplaced(stmt.target):
                space = needs.get(stmt.target, MemorySpace.Vec)
                call = stmt.value
                assert isinstance(call, Call)
                placed = make_call(call.op, call.args, {**call.attrs, "target_memory": space}, call.span)
                mapping[stmt.target] = Var(stmt.target.name, placed.type, stmt.target.span)
                body = [replace(s, value=placed) if s is stmt else s for s in body]
        fn = replace(fn, body=substitute_body(tuple(body), mapping)) if mapping else fn
        _check_paths(fn, target)
        return fn


def _unplaced(v: Var) -> bool:
    return isinstance(v.type, TileType) and v.type.memory_space is None


def _first_use_spaces(fn: Function) -> dict[Var, MemorySpace]:
    needs: dict[Var, MemorySpace] = {}
    for stmt in walk_stmts(fn.body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if not isinstance(e, Call):
                    continue
                for index, arg in enumerate(e.args):
                    if not isinstance(arg, Var) or arg in needs or not _unplaced(arg):
                        continue
                    space = _operand_space(e, index)
                    if e.op == tile.move and e.attrs["target_memory"] in _FED_FROM_MAT:
                        space = MemorySpace.Mat
                    needs[arg] = space or MemorySpace.Vec
    return needs


def _check_paths(fn: Function, target: Target) -> None:
    for stmt in walk_stmts(fn.body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if isinstance(e, Call) and _transfer(e) is not None:
                    _check_path(e, target)


def _check_path(call: Call, target: Target) -> None:
    kind = _transfer(call)
    if kind == "load":
        src, dst = MemorySpace.DDR, call.type.memory_space  # type: ignore[attr-defined]
    elif kind == "store":
        src, dst = call.args[0].type.memory_space, MemorySpace.DDR  # type: ignore[attr-defined]
    else:
        if is_crossing(call):
            return
        src, dst = call.args[0].type.memory_space, call.attrs["target_memory"]  # type: ignore[attr-defined]
    if src is None or dst is None or src is dst or target.is_legal_path(src, dst):
        return
    raise TypeCheckError(
        f"pl.{call.op.split('.')[1]}: there is no {src.name}->{dst.name} data path on {target.name}",
        call.span,
        f"legal paths: {', '.join(target.routes())}",
    )
