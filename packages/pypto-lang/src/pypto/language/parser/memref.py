"""The index of a ``pl.MemRef``: ``pl.MemRef("ub", slots=2)[i % 2]`` in a tile annotation.

An index is a constant slot, or an affine form of one loop variable modulo the slot count:
``i % 2``, ``(i + 1) % 2``, ``(2 * i) % 4``, ``(i - 1) % 3``, or ``i`` alone (taken modulo the
slot count too). It is read from the AST, not evaluated into run-time ops: the slot is the
allocator's business, the kernel computes nothing for it. That the variable is a loop's is
checked where the annotated assignment is parsed (:func:`check_loop_variable`), which sees the
loops around it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir import Expr, MemRefError, MemRefSlot, ScalarType, SourceSpan, Var
from pypto.language.annotations import MemRef, constant_slot
from pypto.language.parser.values import describe_value, is_number, number


class ExprParser(Protocol):
    """What reading an index needs of the expression parser: values of names and constants,
    and spans."""

    def expr(self, node: ast.expr) -> Any: ...

    def span(self, node: ast.AST) -> SourceSpan: ...


@dataclass(frozen=True)
class _Affine:
    """``scale * var + shift``; ``var`` is None for a constant."""

    var: Var | None
    scale: int
    shift: int


def _forms(ref: MemRef) -> str:
    n = ref.slots
    return f"a slot number (0 to {n - 1}) or a loop variable's affine form modulo {n}: i % {n}, (i + 1) % {n}"


def memref_slot(parser: ExprParser, ref: MemRef, node: ast.expr) -> MemRefSlot:
    """The slot ``ref[node]`` names; an index of another form is a ``MemRefError`` at ``node``."""
    written = _written(parser, node)
    modulus: int | None = None
    inner = node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        modulus = _constant_int(parser, ref, node.right, written)
        inner = node.left
    form = _affine(parser, ref, inner, written)
    if form.var is None:
        value = form.shift % modulus if modulus else form.shift
        try:
            return constant_slot(ref, value)
        except MemRefError as err:
            raise err.with_span(parser.span(node)) from None
    if modulus is not None and modulus != ref.slots:
        raise MemRefError(
            f"pl.MemRef({ref.name!r}) index {written} is taken modulo {modulus}, but the allocation "
            f"has {ref.slots} slot(s)",
            parser.span(node),
            f"take it modulo the slot count: ({ast.unparse(inner)}) % {ref.slots}, or give the "
            f"allocation slots={modulus}",
        )
    scale, shift = form.scale % ref.slots, form.shift % ref.slots
    if scale == 0:  # every iteration picks one slot
        return MemRefSlot(ref.name, ref.slots, None, 1, shift)
    return MemRefSlot(ref.name, ref.slots, form.var, scale, shift)


def _written(parser: ExprParser, node: ast.expr) -> str:
    """The index as the user wrote it (parentheses kept), else as Python reads it."""
    span = parser.span(node)
    line = span.source_line()
    if line and span.end_col is not None and span.end_col > span.col:
        return line[span.col : span.end_col]
    return ast.unparse(node)


def _affine(parser: ExprParser, ref: MemRef, node: ast.expr, written: str) -> _Affine:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        lhs, rhs = _affine(parser, ref, node.left, written), _affine(parser, ref, node.right, written)
        if isinstance(node.op, ast.Mult):
            if lhs.var is not None and rhs.var is not None:
                raise _not_affine(parser, ref, node, written, "it multiplies the loop variable by itself")
            factor, term = (lhs.shift, rhs) if lhs.var is None else (rhs.shift, lhs)
            return _Affine(term.var, term.scale * factor, term.shift * factor)
        sign = 1 if isinstance(node.op, ast.Add) else -1
        if lhs.var is not None and rhs.var is not None and lhs.var is not rhs.var:
            raise _not_affine(parser, ref, node, written, "it depends on two variables")
        var = lhs.var if lhs.var is not None else rhs.var
        scale = (lhs.scale if lhs.var is not None else 0) + sign * (rhs.scale if rhs.var is not None else 0)
        return _Affine(var, scale, lhs.shift + sign * rhs.shift)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _affine(parser, ref, node.operand, written)
        sign = -1 if isinstance(node.op, ast.USub) else 1
        return _Affine(inner.var, sign * inner.scale, sign * inner.shift)
    if isinstance(node, ast.BinOp):
        raise _not_affine(parser, ref, node, written, f"{ast.unparse(node)} is not a sum of multiples")
    value = parser.expr(node)
    plain = number(value) if is_number(value) else None
    if isinstance(plain, int) and not isinstance(plain, bool):
        return _Affine(None, 0, plain)
    if isinstance(value, Var) and isinstance(value.type, ScalarType) and value.type.dtype.is_integer:
        return _Affine(value, 1, 0)
    what = describe_value(value) if isinstance(value, Expr) else repr(value)
    raise _not_affine(parser, ref, node, written, f"{ast.unparse(node)} is {what}")


def _constant_int(parser: ExprParser, ref: MemRef, node: ast.expr, written: str) -> int:
    value = parser.expr(node)
    plain: Any = number(value) if is_number(value) else value
    if not isinstance(plain, int) or isinstance(plain, bool) or plain < 1:
        raise _not_affine(parser, ref, node, written, "the modulus is not a positive constant")
    return plain


def _not_affine(parser: ExprParser, ref: MemRef, node: ast.expr, written: str, why: str) -> MemRefError:
    return MemRefError(
        f"pl.MemRef({ref.name!r}) index {written} is not a constant or an affine form of one loop "
        f"variable: {why}",
        parser.span(node),
        f"index it with {_forms(ref)}",
    )


def check_loop_variable(slot: MemRefSlot, loops: list[Var], node: ast.AST, parser: ExprParser) -> None:
    """A slot's variable is the variable of a loop around the tile, inside its kernel."""
    if slot.var is None or any(slot.var is v for v in loops):
        return
    name = slot.var.name
    raise MemRefError(
        f"pl.MemRef({slot.name!r}) index depends on '{name}', which is not the variable of a loop "
        "around this tile in its kernel",
        parser.span(node),
        f"index it by the variable of a pl.range / pl.pipeline loop inside the same pl.at scope "
        f"(for i in pl.range(n): ... pl.MemRef({slot.name!r}, slots={slot.slots})[i % {slot.slots}]), "
        "or with a constant slot",
    )
