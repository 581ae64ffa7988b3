"""Cube ops: matrix products on the cube unit (Left @ Right -> Acc), alone, accumulating, with a
bias row added from the cube's bias table (Bias), or of one row (``gemv``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.rules import check_arithmetic, fail, same_kind, shaped
from pypto.ir.ops.spec import (
    Attr,
    Cost,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Product,
    Role,
    RowShared,
    Trait,
    Unit,
    declare,
)
from pypto.ir.types import MemorySpace, TensorType, TileType, Type, describe


def matmul_result_dtype(a: DataType, b: DataType, out_dtype: DataType | None) -> DataType:
    return out_dtype or (DataType.INT32 if a.is_integer else DataType.FP32)


def matmul(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    accumulates = op.endswith(".matmul_acc")
    operands = args[1:3] if accumulates else args[:2]
    if op.endswith(".gemv"):
        check_one_row(op, shaped(op, args[0], span), bool(attrs.get("a_trans")), span)
    a, b = (shaped(op, x, span) for x in operands)
    same_kind(op, a, b, span)
    if len(a.shape) != 2 or len(b.shape) != 2:
        flat = next(t for t in (a, b) if len(t.shape) != 2)
        raise fail(
            op,
            f"needs 2-D operands, got {describe(a)} and {describe(b)}",
            span,
            advice="matmul.not_2d",
            flat=flat,
        )
    m, ka = (a.shape[1], a.shape[0]) if attrs.get("a_trans") else a.shape
    kb, n = (b.shape[1], b.shape[0]) if attrs.get("b_trans") else b.shape
    if ka != kb:
        raise fail(
            op,
            f"inner dimensions differ: {describe(a)} @ {describe(b)} ({ka} != {kb})",
            span,
            "the left operand's columns must equal the right operand's rows",
        )
    if a.dtype != b.dtype:
        raise fail(
            op,
            f"operand dtype mismatch: {describe(a)} vs {describe(b)}",
            span,
            advice="matmul.dtype_mismatch",
        )
    check_arithmetic(op, a, span)
    dtype = matmul_result_dtype(a.dtype, b.dtype, attrs.get("out_dtype"))
    if isinstance(a, TileType) and isinstance(b, TileType):
        if not staged(op, a, b):
            check_placed(op, a, b, span)
        result: TileType | TensorType = TileType((m, n), dtype, MemorySpace.Acc, _product_valid(a, b, attrs))
    else:
        result = TensorType((m, n), dtype)
    if accumulates:
        check_accumulator(op, args[0].type, result, span)
    if op.endswith(".matmul_bias"):
        check_bias(op, args[2].type, result, a.dtype, span)
    return result


def staged(op: str, a: TileType, b: TileType) -> bool:
    """Operands the compiler stages into L0 itself (AutoTileMatmul): a right operand in Mat and a
    left one in Mat or Vec, of a plain or accumulating matmul. Operands in Left / Right are the
    author's own L0 blocks."""
    plain = op.endswith((".matmul", ".matmul_acc"))
    return (
        plain and b.memory_space is MemorySpace.Mat and a.memory_space in (MemorySpace.Mat, MemorySpace.Vec)
    )


def check_placed(op: str, a: TileType, b: TileType, span: SourceSpan | None) -> None:
    """Hand-placed operands: the left one in Left, the right one in Right."""
    for t, space, side in ((a, MemorySpace.Left, "left"), (b, MemorySpace.Right, "right")):
        if t.memory_space not in (None, space):
            raise fail(
                op,
                f"the {side} operand must be in {space.name}, got {describe(t)}",
                span,
                advice="matmul.operand_space",
                t=t,
                space=space,
            )


def check_one_row(op: str, a: TileType | TensorType, a_trans: bool, span: SourceSpan | None) -> None:
    """``gemv``'s left operand is one row (one column when transposed)."""
    if len(a.shape) == 2 and a.shape[1 if a_trans else 0] != 1:
        raise fail(
            op,
            f"multiplies one row by a matrix, got a left operand {describe(a)}",
            span,
            "pass a [1, K] row (or use pl.matmul for several rows)",
        )


def check_bias(
    op: str, bias: Type, result: TileType | TensorType, operand: DataType, span: SourceSpan | None
) -> None:
    """``matmul_bias``'s bias is a ``[1, N]`` row of the result's (or the operands') dtype, of the
    result's kind (a Bias tile for a tile product)."""
    n = result.shape[1]
    kind = TileType if isinstance(result, TileType) else TensorType
    fits = (
        isinstance(bias, kind)
        and tuple(bias.shape) == (1, n)
        and bias.dtype in (result.dtype, operand)
        and not (isinstance(bias, TileType) and bias.memory_space not in (None, MemorySpace.Bias))
    )
    if not fits:
        want = "Bias tile" if kind is TileType else "tensor"
        raise fail(
            op,
            f"bias must be a [1, {n}] {result.dtype.name} {want}, got {describe(bias)}",
            span,
            "the bias is one row added to every row of the product: "
            + ("pl.move a [1, N] Mat tile to pl.Mem.Bias" if kind is TileType else "pass a [1, N] tensor"),
        )


def _product_valid(a: TileType, b: TileType, attrs: Mapping[str, Any]) -> tuple[int, int] | None:
    """The valid shape of ``a @ b``: the left operand's valid rows by the right one's valid
    columns (a partial edge tile stays partial through the cube), None when both are whole."""
    if a.valid_shape is None and b.valid_shape is None:
        return None
    a_valid, b_valid = a.valid_shape or a.shape, b.valid_shape or b.shape
    rows = a_valid[1] if attrs.get("a_trans") else a_valid[0]
    cols = b_valid[0] if attrs.get("b_trans") else b_valid[1]
    m = a.shape[1] if attrs.get("a_trans") else a.shape[0]
    n = b.shape[0] if attrs.get("b_trans") else b.shape[1]
    return None if (rows, cols) == (m, n) else (rows, cols)


def check_accumulator(op: str, acc: Type, result: TileType | TensorType, span: SourceSpan | None) -> None:
    """``acc`` of ``matmul_acc`` must be what the product adds to: same kind, shape and dtype (in Acc)."""
    fits = (
        isinstance(acc, (TileType, TensorType))
        and type(acc) is type(result)
        and (acc.shape, acc.dtype) == (result.shape, result.dtype)
    )
    if isinstance(acc, TileType) and acc.memory_space not in (None, MemorySpace.Acc):
        fits = False
    if not fits:
        want = "Acc tile" if isinstance(result, TileType) else "tensor"
        raise fail(
            op,
            f"accumulator must be a {list(result.shape)} {result.dtype.name} {want}, got {describe(acc)}",
            span,
            advice="matmul.accumulator",
        )


# ---------------------------------------------------------------- declarations


def _declare(level: Level) -> None:
    prefix = level.value
    tile = level is Level.TILE

    def operand(name: str, space: MemorySpace) -> Operand:
        return Operand(name, Role.TILE, (space,)) if tile else Operand(name, Role.TENSOR)

    attrs = (Attr("a_trans", bool, False), Attr("b_trans", bool, False), Attr("out_dtype", DataType))
    for name, operands, doc in (
        ("matmul", (operand("a", MemorySpace.Left), operand("b", MemorySpace.Right)), "a @ b"),
        (
            "matmul_acc",
            (
                operand("acc", MemorySpace.Acc),
                operand("a", MemorySpace.Left),
                operand("b", MemorySpace.Right),
            ),
            "acc + a @ b",
        ),
        (
            "matmul_bias",
            (
                operand("a", MemorySpace.Left),
                operand("b", MemorySpace.Right),
                operand("bias", MemorySpace.Bias),
            ),
            "a @ b + bias (a [1, N] row added to every row)",
        ),
        ("gemv", (operand("a", MemorySpace.Left), operand("b", MemorySpace.Right)), "a @ b of a [1, K] row"),
    ):
        # The right operand (and a bias row) is the same for every row block of the product.
        shared = RowShared(1, also=(2,)) if name == "matmul_bias" else RowShared(len(operands) - 1)
        lowered: tuple[Trait, ...] = (PlacesTile(),) if tile else (Lowers(f"tile.{name}"), shared)
        a_at = [o.name for o in operands].index("a")
        traits: tuple[Trait, ...] = (Cost("matmul"), Product(a_at, a_at + 1), *lowered)
        args = ", ".join(o.name for o in operands)
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.CUBE,
                matmul,
                operands,
                attrs if name != "matmul_acc" else attrs[:2],
                traits,
                dsl=name,
                signature=f"pl.{name}({args}, a_trans=False, b_trans=False)",
                doc=doc,
            )
        )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
