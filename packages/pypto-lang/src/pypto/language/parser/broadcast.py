"""Broadcasting of elementwise ops: ``x - pl.row_max(x)``, ``acc + bias_row``.

An elementwise op on a ``[R, C]`` operand and a ``[R, 1]`` column (or a ``[1, C]`` row) repeats
the vector along the other axis, as torch does. The IR ops stay shape-strict: the parser lowers
the call to the broadcast ops of the registry — the fused one when the vector is the right
operand and one exists (``row_expand_sub``, ``col_expand_mul``), else the plain repeat
(``row_expand`` / ``col_expand``) joined to the other operand by the op itself, which keeps the
operand order of ``v - x`` and ``v / x``. Bitwise ops do not broadcast (their ``Elementwise``
trait says so): their operands have one shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pypto.ir import Expr, TensorType, TileType
from pypto.ir.ops import Commutative, Level
from pypto.language.dslops import dsl_function
from pypto.language.parser.opcall import OpContext

# The fused broadcast op of a binary op, by the axis the vector repeats along (1: a [R, 1]
# column across the columns, 0: a [1, C] row down the rows).
_FUSED_SUFFIX = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "max", "minimum": "min"}
FUSED: dict[int, dict[str, str]] = {
    1: {name: f"row_expand_{suffix}" for name, suffix in _FUSED_SUFFIX.items()},
    0: {name: f"col_expand_{suffix}" for name, suffix in _FUSED_SUFFIX.items()},
}
REPEAT = {1: "row_expand", 0: "col_expand"}


def _shape(value: Expr) -> tuple[int, ...]:
    assert isinstance(value.type, (TensorType, TileType))
    return tuple(value.type.shape)


def broadcast_axis(full: Expr, vec: Expr) -> int | None:
    """The axis ``vec`` repeats along to match ``full`` (1 for ``[R, 1]``, 0 for ``[1, C]``), or
    None when the two are not a matrix and a vector of it."""
    shape, small = _shape(full), _shape(vec)
    if len(shape) != 2 or len(small) != 2 or shape == small:
        return None
    rows, cols = shape
    if small == (rows, 1):
        return 1
    if small == (1, cols):
        return 0
    return None


def broadcast_binary(
    ctx: OpContext, name: str, lhs: Expr, rhs: Expr, attrs: Mapping[str, Any] | None = None
) -> Any | None:
    """``pl.<name>(lhs, rhs)`` with one operand a vector of the other, lowered to the broadcast
    ops; None when neither operand broadcasts to the other (the op's type rule judges them).
    ``attrs`` are the op's own (``cmp_type=``): an op with any is joined to the plain repeat."""
    attrs = dict(attrs or {})
    axis = broadcast_axis(lhs, rhs)
    if axis is not None:
        return _vector_right(ctx, name, lhs, rhs, axis, attrs)
    axis = broadcast_axis(rhs, lhs)
    if axis is None:
        return None
    function = dsl_function(name)
    assert function is not None
    if all(spec.has(Commutative) for spec in function.forms):
        return _vector_right(ctx, name, rhs, lhs, axis, attrs)
    return _call(ctx, name, _repeat(ctx, rhs, lhs, axis), rhs, attrs)  # v - x: the repeat keeps the order


def _vector_right(ctx: OpContext, name: str, full: Expr, vec: Expr, axis: int, attrs: dict[str, Any]) -> Any:
    fused = FUSED[axis].get(name)
    if fused is not None and not attrs:
        return _call(ctx, fused, full, vec)
    return _call(ctx, name, full, _repeat(ctx, full, vec, axis), attrs)


def _repeat(ctx: OpContext, full: Expr, vec: Expr, axis: int) -> Expr:
    """``vec`` repeated to ``full``'s shape, computed once into a variable."""
    return ctx.body.atom(_call(ctx, REPEAT[axis], full, vec))


def _call(ctx: OpContext, name: str, x: Expr, vec: Expr, attrs: Mapping[str, Any] | None = None) -> Any:
    """The ``name`` op at the level of the operands (both tensors, or both tiles)."""
    function = dsl_function(name)
    assert function is not None
    form = function.at_level(Level(ctx.level_of(x)))
    assert form is not None
    return ctx.call(form.name, [x, vec], attrs)
