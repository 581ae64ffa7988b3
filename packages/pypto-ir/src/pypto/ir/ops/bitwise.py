"""Bitwise logic and shifts of integer tensors and tiles: ``and``, ``or``, ``xor``, ``shl``, ``shr``
(and their scalar forms ``ands`` ... ``shrs``), and ``not``.

The registered names are ``tensor.and`` / ``tile.and`` (and ``or``, ``not``); the DSL spells the
three that are Python keywords with a trailing underscore, ``pl.and_``, ``pl.or_``, ``pl.not_``,
and the printer writes them so. Both operands of a two-operand form have the same shape: there
is no broadcast of a ``[R, 1]`` column here. ``and`` / ``or`` / ``xor`` of two integer widths
compute in the wider one; a shift keeps its left operand's dtype and takes its amount from 0 to
the width less one. ``not`` is defined on 16-bit integers, as the hardware's TNOT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Const, Expr
from pypto.ir.ops.elementwise import check_element_kind, check_scratch, unary
from pypto.ir.ops.rules import (
    check_scalar_fits,
    check_vec,
    fail,
    promoted_integer,
    same_kind,
    shaped,
    user_name,
    with_changes,
)
from pypto.ir.ops.spec import (
    Commutative,
    Cost,
    Effect,
    Elementwise,
    IntegerOnly,
    KeepsValid,
    Level,
    Lowers,
    OnlyDtypes,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, ScalarType, TileType, Type, describe

SHIFTS = ("shl", "shr")


def bitwise(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Two integer operands of one shape; ``tmp``, a scratch tile of the tile form of ``xor``."""
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args[:2])
    same_kind(op, lhs, rhs, span)
    if lhs.shape != rhs.shape:
        raise fail(
            op,
            f"operand shape mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            f"bitwise ops do not broadcast: give both operands one shape (repeat a vector with "
            f"pl.row_expand / pl.col_expand first), e.g. {user_name(op)}(x, y)",
        )
    check_element_kind(spec, lhs, span)
    check_element_kind(spec, rhs, span)
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    dtype = lhs.dtype if _shift(spec) else promoted_integer(lhs.dtype, rhs.dtype)
    if len(args) == 3:
        check_scratch(op, args[2], lhs, span)
    return _result(lhs, dtype)


def bitwise_scalar(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """An integer operand and an integer scalar (a shift's amount within the operand's width)."""
    op = spec.name
    lhs = shaped(op, args[0], span)
    scalar = args[1]
    if not isinstance(scalar.type, ScalarType):
        raise fail(
            op,
            f"right operand must be a scalar, got {describe(scalar.type)}",
            span,
            f"pass an integer or a run-time integer scalar, e.g. {user_name(op)}(x, 3)",
        )
    check_element_kind(spec, lhs, span)
    check_vec(op, lhs, span)
    if _shift(spec):
        _check_shift_amount(op, scalar, lhs.dtype.bits, span)
    else:
        check_scalar_fits(op, scalar, lhs.dtype, span, "the scalar operand")
    if len(args) == 3:
        check_scratch(op, args[2], lhs, span)
    return _result(lhs, lhs.dtype)


def _check_shift_amount(op: str, amount: Expr, bits: int, span: SourceSpan | None) -> None:
    t = amount.type
    assert isinstance(t, ScalarType)
    if not t.dtype.is_integer:
        raise fail(
            op,
            f"the shift amount is a {t.dtype.name} scalar, not an integer",
            span,
            "shift by an integer, or convert a run-time scalar with pl.cast(n, pl.INT32)",
        )
    if isinstance(amount, Const) and not 0 <= amount.value < bits:
        raise fail(
            op,
            f"the shift amount {amount.value} is outside 0..{bits - 1} for {bits}-bit elements",
            span,
            f"shift by 0 to {bits - 1} places",
        )


def _shift(spec: OpSpec) -> bool:
    return (spec.dsl or "") in SHIFTS


def _result(x: Any, dtype: Any) -> Type:
    changes: dict[str, Any] = {"dtype": dtype}
    if isinstance(x, TileType):
        changes["memory_space"] = MemorySpace.Vec
    return with_changes(x, **changes)


# ---------------------------------------------------------------- declarations

# DSL name: (registered name, commutative, takes a scratch tile on tiles, one-line doc)
BINARY: dict[str, tuple[str, bool, bool, str]] = {
    "and_": ("and", True, False, "bitwise and of each pair of elements"),
    "or_": ("or", True, False, "bitwise or of each pair of elements"),
    "xor": ("xor", True, True, "bitwise exclusive or of each pair of elements"),
    "shl": ("shl", False, False, "each element shifted left by the other's element places"),
    "shr": ("shr", False, False, "each element shifted right (arithmetically) by the other's element places"),
}
NOT_DTYPES = ("INT16", "UINT16")
_VEC = (MemorySpace.Vec,)


def _operand(name: str, level: Level) -> Operand:
    return Operand(name, Role.TILE, _VEC) if level is Level.TILE else Operand(name, Role.TENSOR)


def _traits(level: Level, name: str, *extra: Trait) -> tuple[Trait, ...]:
    placed: Trait = Lowers(f"tile.{name}") if level is Level.TENSOR else PlacesTile()
    return (Cost("vector"), KeepsValid(), IntegerOnly(), placed, *extra)


def _scratch(level: Level, takes: bool) -> tuple[Operand, ...]:
    if level is not Level.TILE or not takes:
        return ()
    return (Operand("tmp", Role.TILE, _VEC, optional=True, effect=Effect.NONE),)


def _declare(level: Level) -> None:
    prefix = level.value
    for dsl, (name, commutative, scratch, doc) in BINARY.items():
        swap: tuple[Trait, ...] = (Commutative(),) if commutative else ()
        tmp = _scratch(level, scratch)
        extra = ", tmp=None" if tmp else ""
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.VECTOR,
                bitwise,
                (_operand("lhs", level), _operand("rhs", level), *tmp),
                traits=(*_traits(level, name, Elementwise(f"{prefix}.{name}s", broadcast=False)), *swap),
                dsl=dsl,
                signature=f"pl.{dsl}(lhs, rhs{extra})",
                doc=doc,
            )
        )
        declare(
            OpSpec(
                f"{prefix}.{name}s",
                level,
                Unit.VECTOR,
                bitwise_scalar,
                (_operand("lhs", level), Operand("rhs", Role.SCALAR), *tmp),
                traits=(*_traits(level, f"{name}s", Elementwise()), *swap),
                dsl=dsl,
                signature=f"pl.{dsl}(lhs, scalar{extra})",
                doc=f"{doc}, with a scalar right operand",
            )
        )
    declare(
        OpSpec(
            f"{prefix}.not",
            level,
            Unit.VECTOR,
            unary,
            (_operand("x", level),),
            traits=_traits(level, "not", Elementwise(), OnlyDtypes(NOT_DTYPES)),
            dsl="not_",
            signature="pl.not_(x)",
            doc="bitwise complement of each element (16-bit integers)",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
