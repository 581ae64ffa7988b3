"""Ops that combine tiles beyond the two-operand elementwise family.

- ``addc(lhs, rhs, carry)`` is ``lhs + rhs + carry``, ``subc`` is ``lhs - rhs + carry``, and
  ``addsc`` / ``subsc`` take a scalar for ``rhs`` (tile ops: the hardware's TADD / TSUB with a
  TADD of the carry operand).
- ``part_add`` / ``part_mul`` / ``part_max`` / ``part_min`` combine two operands whose valid
  shapes may differ: where both are valid, the op of the two; where one is, its element. The
  result is valid over the union of the two regions, which must be one of them (one region
  contains the other); on tensors and tiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.elementwise import check_element_kind
from pypto.ir.ops.rules import check_scalar_fits, check_vec, fail, same_kind, shaped, with_changes
from pypto.ir.ops.spec import (
    WHOLE_TILE,
    Cost,
    Elementwise,
    KeepsValid,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, TensorType, TileType, Type, describe


def _alike(op: str, a: TileType | TensorType, b: TileType | TensorType, span: SourceSpan | None) -> None:
    same_kind(op, a, b, span)
    if (a.shape, a.dtype) != (b.shape, b.dtype):
        raise fail(
            op,
            f"operands must have one shape and dtype: {describe(a)} vs {describe(b)}",
            span,
            "convert with pl.cast(x, dtype) or reshape with pl.reshape(x, shape) first",
        )


def with_carry(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``addc(lhs, rhs, carry)`` (or ``addsc(lhs, scalar, carry)``): tiles of one shape and dtype."""
    op = spec.name
    lhs = shaped(op, args[0], span)
    carry = shaped(op, args[2], span, "carry operand")
    check_element_kind(spec, lhs, span)
    if isinstance(args[1].type, ScalarType):
        check_scalar_fits(op, args[1], lhs.dtype, span, "the scalar operand")
    else:
        _alike(op, lhs, shaped(op, args[1], span), span)
    _alike(op, lhs, carry, span)
    for a in args:
        check_vec(op, a.type, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec)


def partial(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``part_add(lhs, rhs)``: one shape and dtype; valid over the larger of two nested regions."""
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args)
    _alike(op, lhs, rhs, span)
    check_element_kind(spec, lhs, span)
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    if not isinstance(lhs, TileType) or not isinstance(rhs, TileType):
        return lhs
    a, b = lhs.valid_shape or lhs.shape, rhs.valid_shape or rhs.shape
    union = tuple(max(m, n) for m, n in zip(a, b, strict=True))
    if union not in (tuple(a), tuple(b)):
        raise fail(
            op,
            f"the valid regions {list(a)} and {list(b)} overlap without one containing the other: "
            f"their union is no rectangle",
            span,
            "give one operand a valid shape that covers the other's in every dim (pl.set_validshape)",
        )
    valid = None if union == tuple(lhs.shape) else union
    return with_changes(lhs, memory_space=MemorySpace.Vec, valid_shape=valid)


# ---------------------------------------------------------------- declarations

_VEC = (MemorySpace.Vec,)
# name: (the second operand is a scalar, one-line doc)
CARRIES = {
    "addc": (False, "lhs + rhs + carry"),
    "subc": (False, "lhs - rhs + carry"),
    "addsc": (True, "lhs + scalar + carry"),
    "subsc": (True, "lhs - scalar + carry"),
}
# name: the elementwise op (DSL name) combining two valid elements
PARTS = {"part_add": "add", "part_mul": "mul", "part_max": "maximum", "part_min": "minimum"}


def _declare_carries() -> None:
    traits: tuple[Trait, ...] = (Cost("vector"), KeepsValid(), PlacesTile(), Elementwise())
    for name, (scalar, doc) in CARRIES.items():
        rhs = Operand("scalar", Role.SCALAR) if scalar else Operand("rhs", Role.TILE, _VEC)
        declare(
            OpSpec(
                f"tile.{name}",
                Level.TILE,
                Unit.VECTOR,
                with_carry,
                (Operand("lhs", Role.TILE, _VEC), rhs, Operand("carry", Role.TILE, _VEC)),
                traits=traits,
                dsl=name,
                signature=f"pl.{name}(lhs, {'scalar' if scalar else 'rhs'}, carry)",
                doc=doc,
            )
        )


def _declare_parts(level: Level) -> None:
    prefix = level.value
    for name, join in PARTS.items():
        placed: Trait = Lowers(f"tile.{name}") if level is Level.TENSOR else PlacesTile()
        role, spaces = (Role.TILE, _VEC) if level is Level.TILE else (Role.TENSOR, None)
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                partial,
                (Operand("lhs", role, spaces), Operand("rhs", role, spaces)),
                traits=(Cost("vector"), placed, WHOLE_TILE),
                dsl=name,
                signature=f"pl.{name}(lhs, rhs)",
                doc=f"pl.{join} of lhs and rhs where both are valid, the valid one's element elsewhere "
                "(valid over the larger region)",
            )
        )


_declare_carries()
for _level in (Level.TENSOR, Level.TILE):
    _declare_parts(_level)
