"""Tensor parameters a function writes but declares ``In`` (neither ``pl.Out`` nor ``pl.InOut``).

The compiler orders tasks by the directions the signature declares, so a write to an ``In``
tensor is not ordered against other tasks' reads of it, and a device need not hand it back (PyPTO's
manual: "Output tensor comes back unchanged ... Add the direction"). Found on the parsed program,
before lowering; :func:`warn_undeclared_writes` warns once per parameter, at the parameter.

A write counts whatever its route: a store or an element write into the tensor, ``t[...] = v``
(an assemble), a scatter, a write into a view of it (``pl.slice``), a loop-carried or
in-place-returned name for it, or passing it to a function whose parameter is ``Out``/``InOut``
or is itself written.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from pypto.ir import Assign, Call, DistributedTensorType, Function, Param, Program, Stmt, TensorType, Var
from pypto.ir.errors import CompileWarning, SourceSpan
from pypto.ir.nodes import For, If, While, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import get_op, op, tensor

# The tensor ops whose result is a view of operand 0 (tensor_to_tile's VIEW_OPS; not imported
# from there, since every compile runs this check and no pass should load before it is asked for).
VIEW_OPS = frozenset({tensor.slice, tensor.set_validshape})


@dataclass(frozen=True)
class UndeclaredWrite:
    """``param`` of ``function`` is declared ``In`` and written (first at ``written_at``)."""

    function: str
    param: Param
    written_at: SourceSpan | None


def undeclared_writes(program: Program) -> list[UndeclaredWrite]:
    """Every ``In`` tensor parameter of ``program``'s functions that some route writes."""
    written = _written_params(program)
    found: list[UndeclaredWrite] = []
    for fn in program.functions.values():
        writes = written[fn.name]
        for index, param in enumerate(fn.params):
            # A window (pld.DistributedTensor) is shared with the other ranks, who write it too: its
            # declared direction orders this chip's tasks only, and leaving it In is the manual's way.
            window = isinstance(param.var.type, DistributedTensorType)
            if (
                index in writes
                and not param.direction.writes
                and isinstance(param.var.type, TensorType)
                and not window
            ):
                found.append(UndeclaredWrite(fn.name, param, writes[index]))
    return found


def warn_undeclared_writes(program: Program) -> None:
    """A :class:`CompileWarning` at each parameter :func:`undeclared_writes` finds (filter it as
    any Python warning: ``warnings.filterwarnings("ignore", category=CompileWarning)``)."""
    for found in undeclared_writes(program):
        name = found.param.var.name
        where = f" (at line {found.written_at.line})" if found.written_at is not None else ""
        warning = CompileWarning(
            f"tensor parameter '{name}' of {found.function}() is written{where} but is not "
            "declared pl.Out or pl.InOut",
            found.param.var.span,
            "declare it pl.Out[...] or pl.InOut[...] (InOut when the kernel also reads what it "
            "held): tasks are ordered by the declared directions, and a device need not return "
            "what a kernel writes into an input",
        )
        span = found.param.var.span
        warnings.warn_explicit(
            warning, CompileWarning, span.file if span else "<pypto>", span.line if span else 0
        )


def _written_params(program: Program) -> dict[str, dict[int, SourceSpan | None]]:
    """Per function, the positions of its parameters that it writes, each with its first write.
    Repeated until stable, since a function's calls write what their callees write."""
    written: dict[str, dict[int, SourceSpan | None]] = {name: {} for name in program.functions}
    changed = True
    while changed:
        changed = False
        for fn in program.functions.values():
            found = _writes_of(fn, program, written)
            if found.keys() != written[fn.name].keys():
                written[fn.name] = found
                changed = True
    return written


def _writes_of(
    fn: Function, program: Program, written: dict[str, dict[int, SourceSpan | None]]
) -> dict[int, SourceSpan | None]:
    """The parameters (by position) ``fn``'s body writes through any name that may hold them."""
    aliases = _Aliases()
    targets: list[tuple[Var, SourceSpan | None]] = []
    for stmt in walk_stmts(fn.body):
        _note_aliases(stmt, aliases)
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if isinstance(e, Call):
                    targets += [(v, getattr(stmt, "span", None)) for v in _written_args(e, program, written)]
    roots = {aliases.root(p.var): i for i, p in enumerate(fn.params)}
    found: dict[int, SourceSpan | None] = {}
    for var, span in targets:
        index = roots.get(aliases.root(var))
        if index is not None and index not in found:
            found[index] = span
    return found


def _written_args(
    call: Call, program: Program, written: dict[str, dict[int, SourceSpan | None]]
) -> list[Var]:
    """The tensors ``call`` writes: an op's written operands, or what a called function's
    ``Out``/``InOut`` (or written) parameters receive."""
    if call.op == op.call:
        callee = program.functions.get(str(call.attrs.get("callee")))
        if callee is None:
            return []
        picked = [
            arg
            for i, (arg, param) in enumerate(zip(call.args, callee.params, strict=False))
            if param.direction.writes or i in written[callee.name]
        ]
        return [v for v in picked if isinstance(v, Var)]
    spec = get_op(call.op)
    return [v for i in spec.writes if i < len(call.args) and isinstance(v := call.args[i], Var)]


def _note_aliases(stmt: Stmt, aliases: _Aliases) -> None:
    """Names that may hold the same tensor: a view and what it views, an in-place write's result
    and its target, a carried value and its initial, next and last values."""
    if isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op != op.call:
        call = stmt.value
        if call.op in VIEW_OPS and call.args:
            aliases.join(stmt.target, call.args[0])
        else:
            for i in get_op(call.op).writes[:1]:
                aliases.join(stmt.target, call.args[i])
    elif isinstance(stmt, (For, While)):
        for carried, init, step, last in zip(
            stmt.iter_args, stmt.init_values, stmt.yields, stmt.results, strict=False
        ):
            aliases.join(carried, init)
            aliases.join(carried, step)
            aliases.join(carried, last)
    elif isinstance(stmt, If):
        for arm in (stmt.then_yields, stmt.else_yields):
            for result, value in zip(stmt.results, arm, strict=False):
                aliases.join(result, value)


class _Aliases:
    """A union-find over variables: names joined may hold the same global tensor."""

    def __init__(self) -> None:
        self._parent: dict[Var, Var] = {}

    def root(self, var: Var) -> Var:
        while var in self._parent:
            var = self._parent[var]
        return var

    def join(self, a: object, b: object) -> None:
        if isinstance(a, Var) and isinstance(b, Var):
            ra, rb = self.root(a), self.root(b)
            if ra is not rb:
                self._parent[ra] = rb
