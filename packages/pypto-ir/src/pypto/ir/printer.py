"""Print IR as pl-style Python text, for dumps, ``.lower()`` output and golden tests."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.memory import MemoryPlan
from pypto.ir.nodes import (
    Assign,
    Call,
    Const,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    Program,
    Return,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    TupleExpr,
    Var,
)
from pypto.ir.ops import OPS, CastMode, Infix, op
from pypto.ir.tasks import AccessMode
from pypto.ir.types import Direction, MemorySpace, TensorType, TileType, Type

_INDENT = "    "


def format_value(value: Any) -> str:
    """An attribute value as DSL text."""
    if isinstance(value, DataType):
        return f"pl.{value.name}"
    if isinstance(value, MemorySpace):
        return f"pl.Mem.{value.name}"
    if isinstance(value, CastMode):
        return repr(value.value)  # as users write it: mode="rint"
    if isinstance(value, Enum):
        return f"pl.{type(value).__name__}.{value.name}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def _carried_names(exprs: tuple[Expr, ...]) -> str:
    """``a, b`` for two values, ``a,`` for one (a Python tuple of one)."""
    text = ", ".join(format_expr(e) for e in exprs)
    return text + "," if len(exprs) == 1 else text


def format_type(t: Type) -> str:
    return str(t)


def format_expr(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, TupleExpr):
        return "[" + ", ".join(format_expr(x) for x in e.elements) + "]"
    if isinstance(e, Call):
        infix = _infix(e)
        if infix is not None and len(e.args) == 2:
            lhs, rhs = (_operand(a) for a in e.args)
            return f"{lhs} {infix} {rhs}"
        if infix is not None:
            return f"{infix}{_operand(e.args[0])}"
        args = [format_expr(a) for a in e.args]
        if e.op == op.call:
            return f"self.{e.attrs['callee']}({', '.join(args)})"
        args += [f"{k}={format_value(v)}" for k, v in e.attrs.items()]
        return f"pl.{e.op}({', '.join(args)})"
    raise TypeError(f"cannot print {e!r}")


def _infix(call: Call) -> str | None:
    """The Python operator a scalar op prints as (its spec's ``Infix`` trait), if any."""
    spec = OPS.get(call.op)
    trait = spec.trait(Infix) if spec is not None else None
    return trait.symbol if trait is not None else None


def _operand(e: Expr) -> str:
    text = format_expr(e)
    return f"({text})" if isinstance(e, Call) and _infix(e) is not None else text


class _Printer:
    def __init__(self, plan: MemoryPlan | None) -> None:
        self.plan = plan
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def body(self, stmts: tuple[Stmt, ...], depth: int) -> None:
        if not stmts:
            self.emit(depth, "pass")
        for stmt in stmts:
            self.stmt(stmt, depth)

    def loop(self, s: For, depth: int) -> None:
        """``for i, (a,) in pl.range(.., init_values=(a0,)):`` ... ``a_1 = pl.yield_(..)``."""
        rng = ", ".join(format_expr(x) for x in (s.start, s.stop, s.step))
        if not s.iter_args:
            self.emit(depth, f"for {s.var.name} in pl.{s.kind.value}({rng}):")
            self.body(s.body, depth + 1)
            return
        carried = _carried_names(s.iter_args)
        inits = _carried_names(s.init_values)
        self.emit(depth, f"for {s.var.name}, ({carried}) in pl.{s.kind.value}({rng}, init_values=({inits})):")
        self.body(s.body, depth + 1)
        yields = ", ".join(format_expr(y) for y in s.yields)
        results = ", ".join(r.name for r in s.results)
        self.emit(depth + 1, f"{results} = pl.yield_({yields})")

    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            text = f"{s.target.name}: {format_type(s.target.type)} = {format_expr(s.value)}"
            self.emit(depth, text + self.placement(s.target))
        elif isinstance(s, Eval):
            self.emit(depth, format_expr(s.value) + _task_comment(s.value))
        elif isinstance(s, For):
            self.loop(s, depth)
        elif isinstance(s, If):
            self.emit(depth, f"if {format_expr(s.cond)}:")
            self.body(s.then_body, depth + 1)
            if s.else_body:
                self.emit(depth, "else:")
                self.body(s.else_body, depth + 1)
        elif isinstance(s, Return):
            self.emit(depth, "return " + ", ".join(format_expr(v) for v in s.values))
        elif isinstance(s, SplitAivRegion):
            self.emit(depth, f"for {s.lane.name} in pl.split_aiv(2, mode={format_value(s.mode)}):")
            self.body(s.body, depth + 1)
        elif isinstance(s, ScopeStmt):
            opts = []
            if s.split is not None:
                opts.append(f"pl.split({format_value(s.split)})")
            if s.slot_num is not None:
                opts.append(f"pl.cross_core_slot(slot_num={s.slot_num})")
            args = [f"level=pl.Level.{s.level.name}"]
            if opts:
                args.append(f"optimizations=[{', '.join(opts)}]")
            if s.name_hint:
                args.append(f"name_hint={s.name_hint!r}")
            for key, names in (("deps", s.deps), ("no_dep_args", s.no_dep_args)):
                if names:
                    args.append(f"{key}=[{', '.join(v.name for v in names)}]")
            bound = f" as {s.task.name}" if s.task is not None else ""
            notes = [
                text
                for flag, text in ((s.manual, "manual_scope"), (s.block_num > 1, f"spmd({s.block_num})"))
                if flag
            ]
            note = f"  # {', '.join(notes)}" if notes else ""
            self.emit(depth, f"with pl.at({', '.join(args)}){bound}:{note}")
            self.body(s.body, depth + 1)
        else:
            raise TypeError(f"cannot print {s!r}")

    def placement(self, var: Var) -> str:
        if self.plan is None or not isinstance(var.type, TileType):
            return ""
        alloc = self.plan.of(var.name)
        if alloc is None:
            return ""
        return f"  # {alloc.space.name}[{alloc.offset:#x}, +{alloc.size}]"


# Task attrs of a kernel call (see pypto.ir.tasks), printed after it as a comment.
_TASK_ATTRS = ("task", "deps", "access", "no_dep", "no_dep_args", "manual", "block_num")


def _task_comment(e: Expr) -> str:
    if not (isinstance(e, Call) and e.op == op.call):
        return ""
    parts = [f"{key}={_task_value(e.attrs[key])}" for key in _TASK_ATTRS if key in e.attrs]
    return f"  # {', '.join(parts)}" if parts else ""


def _task_value(value: Any) -> str:
    """Access modes by name (``[In, Out]``, ``-`` for a scalar); other values as DSL text."""
    if isinstance(value, tuple) and any(isinstance(v, AccessMode) for v in value):
        return "[" + ", ".join(v.name if isinstance(v, AccessMode) else "-" for v in value) + "]"
    return format_value(value)


def _param(p: Any) -> str:
    t = format_type(p.var.type)
    if isinstance(p.var.type, TensorType) and p.direction is not Direction.In:
        t = f"pl.{p.direction.value}[{t}]"
    return f"{p.var.name}: {t}"


def print_function(fn: Function, depth: int = 0) -> str:
    plan = fn.attrs.get("memory_plan")
    printer = _Printer(plan if isinstance(plan, MemoryPlan) else None)
    printer.emit(depth, f"@pl.function(type=pl.FunctionType.{fn.kind.value})")
    for key, value in fn.attrs.items():
        if key not in ("memory_plan", "reservations"):
            printer.emit(depth, f"# {key} = {format_value(value)}")
    for r in fn.attrs.get("reservations", ()):
        printer.emit(depth, f"# reserved {r.space.name}[0x0, +{r.size}]: {r.reason}")
    params = ", ".join(["self"] + [_param(p) for p in fn.params])
    printer.emit(depth, f"def {fn.name}({params}):")
    printer.body(fn.body, depth + 1)
    return "\n".join(printer.lines)


def print_program(program: Program) -> str:
    """The whole program as a ``@pl.program`` class: the entry, the other Orchestration functions,
    then the kernels."""
    funcs = sorted(
        program.functions, key=lambda f: (f.name != program.entry, f.kind is not FunctionKind.Orchestration)
    )
    parts = [f"@pl.program\nclass {program.name}:"]
    parts += [print_function(fn, depth=1) for fn in funcs]
    return "\n\n".join(parts) + "\n"


def print_ir(node: Program | Function | Stmt | Expr) -> str:
    if isinstance(node, Program):
        return print_program(node)
    if isinstance(node, Function):
        return print_function(node)
    if isinstance(node, Expr):
        return format_expr(node)
    printer = _Printer(None)
    printer.stmt(node, 0)
    return "\n".join(printer.lines)
