"""Scalar arithmetic: folds on compile-time numbers, ``scalar.*`` ops on run-time scalars.

The scalar op of a DSL name is the scalar spec of that name, the one with a ``Fold`` trait
(``pl.add`` on two scalars and ``+`` are ``scalar.add``, ``//`` is ``scalar.floordiv``, ``<`` is
``scalar.lt``); compile-time operands fold with the trait's function instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pypto.ir import Const, Expr
from pypto.ir.extents import dim_op, is_symbolic
from pypto.ir.nodes import DIM_OPS
from pypto.ir.ops import Elementwise, Fold, Level, OpSpec, get_op, ops_with
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    element_dtype,
    is_number,
    is_scalar,
    number,
    scalar_expr,
)


def scalar_op(name: str) -> OpSpec | None:
    """The scalar spec computing DSL op ``name`` on scalars, if any: the ``on_scalars`` op of an
    elementwise op (``div`` -> ``scalar.truediv``), else the scalar op of that name (``floordiv``,
    ``lt``, ``neg``)."""
    for spec in ops_with(Elementwise, Level.TILE):
        elementwise = spec.trait(Elementwise)
        if spec.dsl == name and elementwise is not None and elementwise.on_scalars is not None:
            return get_op(elementwise.on_scalars)
    return next((s for s in ops_with(Fold, Level.SCALAR) if s.dsl == name), None)


def _fold(spec: OpSpec | None, name: str) -> Callable[..., Any] | None:
    """How DSL op ``name`` folds on numbers: its scalar spec's Fold, else its elementwise one's
    (``pl.exp(1.0)``)."""
    trait = spec.trait(Fold) if spec is not None else None
    if trait is None:
        unary = next((s for s in ops_with(Fold, Level.TILE) if s.dsl == name), None)
        trait = unary.trait(Fold) if unary is not None else None
    return trait.fn if trait is not None else None


def scalar_binary(ctx: OpContext, name: str, lhs: Any, rhs: Any) -> Any:
    """``lhs <name> rhs`` on scalars: a Python number when both fold, else a ``scalar.*`` call."""
    spec = scalar_op(name)
    fold = _fold(spec, name)
    if spec is None or fold is None:
        raise ctx.fail(
            f"has no scalar form: {describe_value(lhs)} and {describe_value(rhs)}",
            "compute it on tiles, e.g. on pl.full([1, 16], pl.FP32, x) for a scalar x",
        )
    if is_number(lhs) and is_number(rhs):
        try:
            return fold(number(lhs), number(rhs))
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ctx.fail(
                f"cannot fold {number(lhs)!r} and {number(rhs)!r}: {exc}", _fold_hint(exc)
            ) from None
    for value in (lhs, rhs):
        if not is_scalar(value):
            raise ctx.fail(f"mixes a scalar and {describe_value(value)}", _mixed_hint(name))
    extent = _extent_op(spec.name, lhs, rhs)
    if extent is not None:
        return extent
    dtype = element_dtype(lhs if isinstance(lhs, Expr) and not is_number(lhs) else rhs)
    return ctx.call(spec.name, [scalar_expr(lhs, dtype, ctx.span), scalar_expr(rhs, dtype, ctx.span)])


def _extent_op(op: str, lhs: Any, rhs: Any) -> Any:
    """``M * 2``, ``M // N``, ``pl.min(M, 64)`` on dynamic extents and whole numbers: an extent (a
    value that can size a tensor and compares equal to the same expression written again), or
    None when an operand is some other scalar or the op is no extent op."""
    name = op.removeprefix("scalar.")
    if f"scalar.{name}" not in DIM_OPS:
        return None
    operands = [int(number(v)) if _whole(v) else v for v in (lhs, rhs)]
    if not all(_whole(v) or is_symbolic(v) for v in operands):
        return None
    if name in ("floordiv", "mod") and operands[1] == 0:
        return None  # folded (and reported) as the division it is
    return dim_op(name, operands[0], operands[1])


def _whole(value: Any) -> bool:
    """A whole compile-time number (an INDEX or Python int)."""
    if isinstance(value, Const):
        return isinstance(value.value, int) and not isinstance(value.value, bool)
    return isinstance(value, int) and not isinstance(value, bool)


def scalar_unary(ctx: OpContext, name: str, value: Any) -> Any:
    """A unary op on a scalar: folds on numbers; on a run-time scalar only an op with a scalar
    spec (``neg``: ``scalar.neg``) applies."""
    spec = scalar_op(name)
    if is_number(value):
        fold = _fold(spec, name)
        if fold is None:
            raise ctx.fail(
                f"has no compile-time form: cannot fold {number(value)!r}",
                f"compute it on a tile, e.g. pl.{name}(pl.full([1, 16], pl.FP32, {number(value)!r}))",
            )
        try:
            return fold(number(value))
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ctx.fail(f"cannot fold {number(value)!r}: {exc}", _fold_hint(exc)) from None
    if spec is not None:
        return ctx.call(spec.name, [value])
    raise ctx.fail(
        f"is not supported on a run-time scalar ({describe_value(value)})",
        f"only negation (-x) applies to a run-time scalar x: pass pl.{name}(x) in as a scalar "
        f"parameter, or compute it on a tile, e.g. pl.{name}(pl.full([1, 16], pl.FP32, x))",
    )


def _fold_hint(exc: Exception) -> str:
    """What to change when Python cannot evaluate an op on compile-time numbers."""
    if isinstance(exc, ZeroDivisionError):
        return "the divisor is 0 when the kernel is compiled: divide by a non-zero value"
    if isinstance(exc, OverflowError):
        return "the result is too large for a Python float: use smaller constants"
    return "the constant lies outside the op's domain (e.g. log of 0, sqrt of a negative number): change it"


def _mixed_hint(name: str) -> str:
    """Scalar-only operators (``//``, ``%``, comparisons) applied to a tensor or tile."""
    if name in ("floordiv", "mod"):
        return "// and % compute on scalars (e.g. i // 2 on a loop index); tensors and tiles have no // or %"
    return (
        "comparisons take scalars (e.g. `if i < n:` on a loop index); read one element of a tensor "
        "with pl.read(t, [i, j]) to compare it"
    )
