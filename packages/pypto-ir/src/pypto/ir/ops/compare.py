"""Comparisons and selections: ``cmp`` / ``cmps`` give a BOOL mask of where a test holds;
``sel`` / ``sels`` pick each element from one operand where a mask holds, from another (or a
scalar) elsewhere.

``cmp`` compares two operands of one shape and dtype, ``cmps`` an operand with a scalar, by the
``cmp_type`` attribute (a :class:`~pypto.ir.ops.enums.CmpType`: eq, ne, lt, le, gt, ge), on
tensors and tiles; Python's ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` on them are these ops.
``sel(mask, lhs, rhs)`` and ``sels(mask, lhs, scalar)`` are tile ops: a mask element that is
true (non-zero) picks ``lhs``. Their optional ``tmp`` is the scratch tile the hardware's TSEL /
TSELS use, named for parity; the numbers do not depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.elementwise import check_element_kind, check_scratch, shaped_and_scalar
from pypto.ir.ops.enums import CmpType
from pypto.ir.ops.rules import (
    check_arithmetic,
    check_scalar_fits,
    check_vec,
    fail,
    same_kind,
    shaped,
    with_changes,
)
from pypto.ir.ops.spec import (
    Attr,
    Cost,
    Effect,
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


def _same_shape(op: str, a: TileType | TensorType, b: TileType | TensorType, span: SourceSpan | None) -> None:
    same_kind(op, a, b, span)
    if a.shape != b.shape:
        raise fail(
            op,
            f"operand shape mismatch: {describe(a)} vs {describe(b)}",
            span,
            "give both operands one shape",
        )


def _check_cmp_type(op: str, attrs: Mapping[str, Any], span: SourceSpan | None) -> None:
    mode = attrs.get("cmp_type", CmpType.eq)
    if not isinstance(mode, CmpType):
        names = ", ".join(repr(m.value) for m in CmpType)
        raise fail(op, f"unknown cmp_type {mode!r}", span, f"use one of {names}")


def _mask(x: TileType | TensorType) -> Type:
    changes: dict[str, Any] = {"dtype": DataType.BOOL}
    if isinstance(x, TileType):
        changes["memory_space"] = MemorySpace.Vec
    return with_changes(x, **changes)


def compare(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Two operands of one shape and dtype -> a BOOL mask of that shape."""
    op = spec.name
    lhs, rhs = (shaped(op, a, span) for a in args)
    _same_shape(op, lhs, rhs, span)
    if lhs.dtype != rhs.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            advice="binary.dtype_mismatch",
        )
    check_element_kind(spec, lhs, span)
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    _check_cmp_type(op, attrs, span)
    return _mask(lhs)


def compare_scalar(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """An operand and a scalar that fits its dtype -> a BOOL mask of the operand's shape."""
    op = spec.name
    lhs = shaped_and_scalar(spec, args, span, '(x, 0.0, cmp_type="gt")')
    _check_cmp_type(op, attrs, span)
    return _mask(lhs)


def _check_mask(
    op: str, mask: TileType | TensorType, like: TileType | TensorType, span: SourceSpan | None
) -> None:
    _same_shape(op, mask, like, span)
    if not (mask.dtype.is_bool or mask.dtype.is_integer):
        raise fail(
            op,
            f"the mask must be BOOL (or an integer, non-zero for true), got {describe(mask)}",
            span,
            'make it with a comparison: mask = pl.cmp(a, b, cmp_type="gt"), or a > b',
        )
    check_vec(op, mask, span)


def select(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``sel(mask, lhs, rhs[, tmp])``: a mask of the operands' shape; operands of one dtype."""
    op = spec.name
    mask, lhs, rhs = (shaped(op, a, span) for a in args[:3])
    _check_mask(op, mask, lhs, span)
    _same_shape(op, lhs, rhs, span)
    if lhs.dtype != rhs.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}",
            span,
            advice="binary.dtype_mismatch",
        )
    check_vec(op, lhs, span)
    check_vec(op, rhs, span)
    if len(args) == 4:
        check_scratch(op, args[3], lhs, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec)


def select_scalar(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """``sels(mask, lhs, scalar[, tmp])``: a mask of ``lhs``'s shape, a scalar that fits its dtype."""
    op = spec.name
    mask, lhs = (shaped(op, a, span) for a in args[:2])
    _check_mask(op, mask, lhs, span)
    if not isinstance(args[2].type, ScalarType):
        raise fail(
            op,
            f"the third operand must be a scalar, got {describe(args[2].type)}",
            span,
            "pick between two tiles with pl.sel(mask, a, b)",
        )
    check_arithmetic(op, lhs, span)
    check_scalar_fits(op, args[2], lhs.dtype, span, "the scalar operand")
    check_vec(op, lhs, span)
    if len(args) == 4:
        check_scratch(op, args[3], lhs, span)
    return with_changes(lhs, memory_space=MemorySpace.Vec)


# ---------------------------------------------------------------- declarations

_VEC = (MemorySpace.Vec,)
_CMP_TYPE = Attr("cmp_type", CmpType, CmpType.eq)


def _operand(name: str, level: Level) -> Operand:
    return Operand(name, Role.TILE, _VEC) if level is Level.TILE else Operand(name, Role.TENSOR)


def _placed(level: Level, name: str) -> Trait:
    return Lowers(f"tile.{name}") if level is Level.TENSOR else PlacesTile()


def _declare_compares(level: Level) -> None:
    prefix = level.value
    declare(
        OpSpec(
            f"{prefix}.cmp",
            level,
            Unit.VECTOR,
            compare,
            (_operand("lhs", level), _operand("rhs", level)),
            (_CMP_TYPE,),
            traits=(Cost("vector"), KeepsValid(), _placed(level, "cmp"), Elementwise(f"{prefix}.cmps")),
            dsl="cmp",
            signature='pl.cmp(lhs, rhs, cmp_type="eq")',
            doc="a BOOL mask: where lhs and rhs meet the test cmp_type (eq, ne, lt, le, gt, ge)",
        )
    )
    declare(
        OpSpec(
            f"{prefix}.cmps",
            level,
            Unit.VECTOR,
            compare_scalar,
            (_operand("lhs", level), Operand("rhs", Role.SCALAR)),
            (_CMP_TYPE,),
            traits=(Cost("vector"), KeepsValid(), _placed(level, "cmps"), Elementwise()),
            dsl="cmp",
            signature='pl.cmp(lhs, scalar, cmp_type="eq")',
            doc="a BOOL mask: where lhs and a scalar meet the test cmp_type",
        )
    )


def _declare_selects() -> None:
    tmp = Operand("tmp", Role.TILE, _VEC, optional=True, effect=Effect.NONE)
    tile = (Cost("vector"), KeepsValid(), PlacesTile(), Elementwise())
    declare(
        OpSpec(
            "tile.sel",
            Level.TILE,
            Unit.VECTOR,
            select,
            (
                Operand("mask", Role.TILE, _VEC),
                Operand("lhs", Role.TILE, _VEC),
                Operand("rhs", Role.TILE, _VEC),
                tmp,
            ),
            traits=tile,
            dsl="sel",
            signature="pl.sel(mask, lhs, rhs, tmp=None)",
            doc="lhs where the mask is true, rhs elsewhere",
        )
    )
    declare(
        OpSpec(
            "tile.sels",
            Level.TILE,
            Unit.VECTOR,
            select_scalar,
            (
                Operand("mask", Role.TILE, _VEC),
                Operand("lhs", Role.TILE, _VEC),
                Operand("scalar", Role.SCALAR),
                tmp,
            ),
            traits=tile,
            dsl="sels",
            signature="pl.sels(mask, lhs, scalar, tmp=None)",
            doc="lhs where the mask is true, the scalar elsewhere",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare_compares(_level)
_declare_selects()
