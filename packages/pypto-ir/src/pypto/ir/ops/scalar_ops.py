"""Scalar ops: index and number arithmetic, comparisons, negation and casts of scalars, and the
read of one tensor element into a scalar."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.elementwise import cast
from pypto.ir.ops.enums import CastMode
from pypto.ir.ops.rules import check_offsets, check_scalar_fits, fail
from pypto.ir.ops.spec import (
    REQUIRED,
    Attr,
    Cost,
    Effect,
    Fold,
    FormatFree,
    GmAccess,
    Infix,
    Level,
    Operand,
    OpSpec,
    Role,
    Unit,
    declare,
)
from pypto.ir.types import INDEX, ScalarType, TensorType, TileType, Type, describe


def scalar_binary(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    types = [a.type for a in args]
    for t in types:
        if not isinstance(t, ScalarType):
            raise fail(
                op,
                f"needs scalar operands, got {describe(t)}",
                span,
                advice="scalar.non_scalar_operand",
            )
    dtypes = [t.dtype for t in types if isinstance(t, ScalarType)]
    if op.removeprefix("scalar.") in COMPARE:
        return ScalarType(DataType.BOOL)
    floats = [d for d in dtypes if d.is_float]
    if spec.trait(Infix) == Infix("/") and not floats:
        return ScalarType(DataType.FP32)
    if floats:
        return ScalarType(floats[0])
    return INDEX if DataType.INDEX in dtypes else ScalarType(dtypes[0])


def read(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    src = args[0].type
    if op == "tile.read" and isinstance(src, TileType):
        check_offsets(op, args[1], len(src.shape), span)
        return ScalarType(src.dtype)
    if not isinstance(src, TensorType):
        raise fail(
            op,
            f"reads one element of a tensor, got {describe(src)}",
            span,
            advice="read.needs_tensor",
        )
    check_offsets(op, args[1], len(src.shape), span)
    return ScalarType(src.dtype)


def write(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``pl.write(t, [i, j], v)``: one element of a tensor (or a tile) written; the result is the
    written tensor (destination-passing)."""
    op = spec.name
    dst, offsets, value = args
    t = dst.type
    if not isinstance(t, TileType if op == "tile.write" else TensorType):
        raise fail(
            op,
            f"writes one element of a tensor or a tile, got {describe(t)}",
            span,
            "pass a tensor (a kernel parameter) or a tile, the element's offsets, then the value",
        )
    check_offsets(op, offsets, len(t.shape), span)
    if not isinstance(value.type, ScalarType):
        raise fail(
            op,
            f"the written value must be a scalar, got {describe(value.type)}",
            span,
            "write one number or run-time scalar: pl.write(t, [i, j], v) (store a tile with pl.store)",
        )
    check_scalar_fits(op, value, t.dtype, span, "the written value")
    return t


# ---------------------------------------------------------------- declarations

# name: (Python operator symbol or None, fold)
ARITHMETIC: dict[str, tuple[str | None, Callable[[Any, Any], Any]]] = {
    "add": ("+", operator.add),
    "sub": ("-", operator.sub),
    "mul": ("*", operator.mul),
    "floordiv": ("//", operator.floordiv),
    "truediv": ("/", operator.truediv),
    "mod": ("%", operator.mod),
    "min": (None, min),
    "max": (None, max),
}
COMPARE: dict[str, tuple[str | None, Callable[[Any, Any], Any]]] = {
    "lt": ("<", operator.lt),
    "le": ("<=", operator.le),
    "gt": (">", operator.gt),
    "ge": (">=", operator.ge),
    "eq": ("==", operator.eq),
    "ne": ("!=", operator.ne),
}


def _declare() -> None:
    s = Level.SCALAR
    pair = (Operand("lhs", Role.SCALAR), Operand("rhs", Role.SCALAR))
    for name, (symbol, fold) in {**ARITHMETIC, **COMPARE}.items():
        infix = (Infix(symbol),) if symbol else ()
        signature = f"lhs {symbol} rhs" if symbol else f"{name}(lhs, rhs)"
        declare(
            OpSpec(
                f"scalar.{name}",
                s,
                Unit.SCALAR,
                scalar_binary,
                pair,
                traits=(Fold(fold), *infix),
                dsl=name,
                signature=signature,
                doc=f"scalar {name}",
            )
        )
    declare(
        OpSpec(
            "scalar.neg",
            s,
            Unit.SCALAR,
            lambda spec, args, attrs, span: args[0].type,
            (Operand("x", Role.SCALAR),),
            traits=(Fold(operator.neg), Infix("-")),
            dsl="neg",
            signature="-x",
            doc="scalar negation",
        )
    )
    declare(
        OpSpec(
            "scalar.cast",
            s,
            Unit.SCALAR,
            cast,
            (Operand("x", Role.SCALAR),),
            (Attr("dtype", DataType, REQUIRED), Attr("mode", CastMode, CastMode.round)),
            traits=(FormatFree(),),
            dsl="cast",
            signature="pl.cast(x, dtype)",
            doc="a scalar converted to dtype",
        )
    )
    declare(
        OpSpec(
            "scalar.read",
            s,
            Unit.SCALAR,
            read,
            (Operand("tensor", Role.TENSOR), Operand("offsets", Role.OFFSETS)),
            (),
            (Cost("scalar_read"), GmAccess(0, 1)),
            "read",
            "pl.read(tensor, offsets)",
            "one element of a tensor, as a scalar",
        )
    )
    declare(
        OpSpec(
            "tile.read",
            Level.TILE,
            Unit.SCALAR,
            read,
            # Named as scalar.read's operand: one DSL function, pl.read(t, [i, j]), reads both.
            (Operand("tensor", Role.TILE), Operand("offsets", Role.OFFSETS)),
            (),
            (Cost("none"),),
            "read",
            "pl.read(tensor, offsets)",
            "one element of an on-chip tile, as a scalar",
        )
    )
    value = Operand("value", Role.SCALAR)
    declare(
        OpSpec(
            "scalar.write",
            s,
            Unit.SCALAR,
            write,
            (Operand("tensor", Role.TENSOR, effect=Effect.WRITE), Operand("offsets", Role.OFFSETS), value),
            (),
            (Cost("scalar_write"), GmAccess(0, 1, write=True)),
            "write",
            "pl.write(tensor, offsets, value)",
            "one element of a tensor written with a scalar (through the scalar unit's data cache)",
        )
    )
    declare(
        OpSpec(
            "tile.write",
            Level.TILE,
            Unit.SCALAR,
            write,
            # Named as scalar.write's operand: one DSL function, pl.write(t, [i, j], v), writes both.
            (Operand("tensor", Role.TILE, effect=Effect.WRITE), Operand("offsets", Role.OFFSETS), value),
            (),
            (Cost("none"),),
            "write",
            "pl.write(tensor, offsets, value)",
            "one element of an on-chip tile written with a scalar",
        )
    )


_declare()
