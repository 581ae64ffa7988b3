"""Scalar arithmetic: folds on compile-time numbers, ``scalar.*`` ops on run-time scalars."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from pypto.ir import Expr
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    element_dtype,
    is_number,
    is_scalar,
    number,
    scalar_expr,
)

# DSL name -> (scalar op, Python fold)
SCALAR_BINARY: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "add": ("scalar.add", operator.add),
    "sub": ("scalar.sub", operator.sub),
    "mul": ("scalar.mul", operator.mul),
    "div": ("scalar.truediv", operator.truediv),
    "floordiv": ("scalar.floordiv", operator.floordiv),
    "mod": ("scalar.mod", operator.mod),
    "maximum": ("scalar.max", max),
    "minimum": ("scalar.min", min),
    "lt": ("scalar.lt", operator.lt),
    "le": ("scalar.le", operator.le),
    "gt": ("scalar.gt", operator.gt),
    "ge": ("scalar.ge", operator.ge),
    "eq": ("scalar.eq", operator.eq),
    "ne": ("scalar.ne", operator.ne),
}

# Unary ops that fold on compile-time numbers.
SCALAR_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "abs": abs,
    "exp": math.exp,
    "log": math.log,
    "sqrt": math.sqrt,
    "rsqrt": lambda x: 1.0 / math.sqrt(x),
    "recip": lambda x: 1.0 / x,
    "relu": lambda x: max(x, 0),
}


def scalar_binary(ctx: OpContext, name: str, lhs: Any, rhs: Any) -> Any:
    """``lhs <name> rhs`` on scalars: a Python number when both fold, else a ``scalar.*`` call."""
    op, fold = SCALAR_BINARY[name]
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
    dtype = element_dtype(lhs if isinstance(lhs, Expr) and not is_number(lhs) else rhs)
    return ctx.call(op, [scalar_expr(lhs, dtype, ctx.span), scalar_expr(rhs, dtype, ctx.span)])


def scalar_unary(ctx: OpContext, name: str, value: Any) -> Any:
    """A unary op on a scalar: folds on numbers; ``neg`` of a run-time scalar is ``scalar.neg``."""
    if is_number(value):
        try:
            return SCALAR_UNARY[name](number(value))
        except (ZeroDivisionError, ValueError, OverflowError) as exc:
            raise ctx.fail(f"cannot fold {number(value)!r}: {exc}", _fold_hint(exc)) from None
    if name == "neg":
        return ctx.call("scalar.neg", [value])
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
