"""DeriveTaskDependencies: every kernel call of the orchestration becomes an annotated task.

Every control function is annotated (the entry and the ``@pl.jit.opaque`` functions it calls); a
call of a control function is no task, and its own calls are annotated where they stand.

The edges themselves depend on the tensors each task instance actually gets (a call in a loop is
many tasks), so a runtime derives them at submission; this pass says, per call, what it needs to:

- ``access``: one :class:`~pypto.ir.AccessMode` per argument (None for scalars), from the
  callee's parameter directions; an ``InOut`` tensor the kernel only adds into atomically
  (``tile.store_atomic``) is ``Accumulate``, so accumulating tasks need not wait for each other.
- ``no_dep``: the argument indices whose tracking is off (the task takes no edge through them,
  and later tasks none from them): its scope's ``no_dep_args``, the arguments the front end
  marked (``pl.no_dep(t)``), tensors made with ``pl.create_tensor(..., manual_dep=True)`` (and
  the views the orchestration makes of them), and
  every tensor of a task inside ``pl.manual_scope()``.
- ``task`` and ``deps`` (task-id names, of task ids or ``pl.TASK_ID`` arrays), ``block_num``,
  ``predicate`` and ``dumps`` stay as the front end set them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar, TypeGuard

from pypto.ir import (
    AccessMode,
    Assign,
    Call,
    Direction,
    Eval,
    Function,
    FunctionKind,
    Program,
    ScalarType,
    Stmt,
    TensorType,
    Var,
)
from pypto.ir.callgraph import control_functions, is_control_call
from pypto.ir.nodes import nested_bodies, stmt_exprs, walk_expr, walk_stmts, with_bodies
from pypto.ir.ops import GmAccess, op, tensor, trait_of
from pypto.passes.manager import PassContext

# Front-end attrs this pass folds into ``no_dep``.
_FOLDED = ("no_dep_args", "manual")


@dataclass(frozen=True)
class DeriveTaskDependencies:
    """Annotate each kernel ``call`` of the control functions with ``access`` modes and ``no_dep``
    argument indices."""

    name: ClassVar[str] = "DeriveTaskDependencies"
    pipeline_name: ClassVar[str] = "task-deps"

    def run(self, program: Program, ctx: PassContext) -> Program:
        for fn in control_functions(program):
            manual = _manual_dep_tensors(fn.body)
            program = program.replace_function(replace(fn, body=_annotate_body(fn.body, program, manual)))
        return program


def _manual_dep_tensors(body: tuple[Stmt, ...]) -> set[str]:
    """Names of the tensors made by ``pl.create_tensor(..., manual_dep=True)``, and of the views
    the orchestration makes of them (``pl.slice``: part of the same tensor)."""
    names: set[str] = set()
    for s in walk_stmts(body):
        if not (isinstance(s, Assign) and isinstance(s.value, Call)):
            continue
        made = s.value.op == tensor.create and s.value.attrs.get("manual_dep")
        base = s.value.args[0] if s.value.op == tensor.slice and s.value.args else None
        if made or (isinstance(base, Var) and base.name in names):
            names.add(s.target.name)
    return names


def _annotate_body(body: tuple[Stmt, ...], program: Program, manual: set[str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, (Eval, Assign)) and _is_task_call(stmt.value, program):
            stmt = replace(stmt, value=_annotate(stmt.value, program, manual))
        bodies = nested_bodies(stmt)
        if bodies:
            stmt = with_bodies(stmt, tuple(_annotate_body(b, program, manual) for b in bodies))
        out.append(stmt)
    return tuple(out)


def _is_call(expr: object) -> TypeGuard[Call]:
    return isinstance(expr, Call) and expr.op == op.call


def _is_task_call(expr: object, program: Program) -> TypeGuard[Call]:
    """A kernel launch; a call of another control function (``@pl.jit.opaque``) is none."""
    return _is_call(expr) and not is_control_call(program, expr)


def _annotate(call: Call, program: Program, manual: set[str]) -> Call:
    kernel = program.function(call.attrs["callee"])
    access = tuple(param_modes(program, kernel))
    untracked = set(call.attrs.get("no_dep_args", ())) | manual
    marked = set(call.attrs.get("no_dep", ()))  # pl.no_dep(t) at these arguments
    no_dep = tuple(
        index
        for index, (arg, mode) in enumerate(zip(call.args, access, strict=True))
        if mode is not None
        and (call.attrs.get("manual") or index in marked or (isinstance(arg, Var) and arg.name in untracked))
    )
    attrs = {key: value for key, value in call.attrs.items() if key not in _FOLDED}
    attrs["access"] = access
    if no_dep:
        attrs["no_dep"] = no_dep
    return replace(call, attrs=attrs)


def param_modes(program: Program, kernel: Function) -> list[AccessMode | None]:
    """How a launch of ``kernel`` touches each parameter: an access mode, or None for a scalar."""
    if kernel.kind is FunctionKind.Group:
        return _group_modes(program, kernel)
    modes: list[AccessMode | None] = []
    for param in kernel.params:
        if isinstance(param.var.type, ScalarType):
            modes.append(None)
            continue
        mode = AccessMode.of(param.direction)
        if mode is AccessMode.InOut and _only_accumulates(kernel, param.var.name):
            mode = AccessMode.Accumulate
        modes.append(mode)
    return modes


def _group_modes(program: Program, group: Function) -> list[AccessMode | None]:
    """A Group's modes: what its AIC and AIV kernels do with each parameter, joined."""
    joined: dict[str, AccessMode] = {}
    for member in _calls(group.body):
        for arg, mode in zip(
            member.args, param_modes(program, program.function(member.attrs["callee"])), strict=True
        ):
            if isinstance(arg, Var) and mode is not None:
                joined[arg.name] = joined[arg.name].join(mode) if arg.name in joined else mode
    return [_group_param_mode(p.var, p.direction, joined) for p in group.params]


def _group_param_mode(var: Var, direction: Direction, joined: Mapping[str, AccessMode]) -> AccessMode | None:
    if not isinstance(var.type, TensorType):
        return None
    return joined.get(var.name, AccessMode.of(direction))


def _calls(body: Iterable[Stmt]) -> list[Call]:
    return [s.value for s in body if isinstance(s, Eval) and _is_call(s.value)]


def _only_accumulates(kernel: Function, name: str) -> bool:
    """Whether every use of tensor ``name`` in ``kernel`` is the target of an atomic add."""
    uses = [
        (trait_of(e, GmAccess), index)
        for stmt in walk_stmts(kernel.body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call)
        for index, arg in enumerate(e.args)
        if isinstance(arg, Var) and arg.name == name
    ]
    return bool(uses) and all(
        access is not None and access.atomic and access.tensor == index for access, index in uses
    )
