"""Cube ops: matrix products on the cube unit (Left @ Right -> Acc), alone, accumulating, with a
bias row added from the cube's bias table (Bias), of one row (``gemv``, ``gemv_acc``,
``gemv_bias``), or of a batch of matrices (``batch_matmul``: leading dims broadcast)."""

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


# The operand dtypes a one-row product (gemv) multiplies: int8 into INT32, the floats into FP32.
GEMV_DTYPES = (DataType.INT8, DataType.FP16, DataType.BF16, DataType.FP32)
# How far a one-row product has come over the K chunks of its row (a hint for the cube's
# accumulation; the numbers are the same).
ACC_PHASES = ("unspecified", "partial", "final")


def matmul(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    accumulates = op.endswith(("_acc",))
    operands = args[1:3] if accumulates else args[:2]
    if ".gemv" in op:
        check_one_row(op, shaped(op, operands[0], span), bool(attrs.get("a_trans")), span)
        check_gemv_dtype(op, shaped(op, operands[0], span), span)
        phase = attrs.get("acc_phase", "unspecified")
        if phase not in ACC_PHASES:
            raise fail(
                op,
                f"acc_phase must be one of {', '.join(map(repr, ACC_PHASES))}, got {phase!r}",
                span,
                'write acc_phase="partial" while K chunks remain and "final" for the last one',
            )
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
    if op.endswith("_bias"):
        check_bias(op, args[2].type, result, a.dtype, span)
    return result


def check_gemv_dtype(op: str, a: TileType | TensorType, span: SourceSpan | None) -> None:
    if a.dtype not in GEMV_DTYPES:
        names = ", ".join(f"pl.{d.name}" for d in GEMV_DTYPES)
        raise fail(
            op,
            f"multiplies rows of {names}, got {describe(a)}",
            span,
            "cast the operands first: pl.cast(x, pl.FP16) (the product accumulates in FP32)",
        )


def batch_matmul(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """``a @ b`` of each matrix of a batch: the last two dims multiply, the leading ones broadcast
    (numpy's rule), so ``[B, M, K] @ [K, N]`` multiplies every ``[M, K]`` by the one ``[K, N]``."""
    op = spec.name
    a, b = (shaped(op, x, span) for x in args)
    same_kind(op, a, b, span)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise fail(
            op,
            f"needs operands of rank 2 or more, got {describe(a)} and {describe(b)}",
            span,
            "pass matrices",
        )
    m, ka = (a.shape[-1], a.shape[-2]) if attrs.get("a_trans") else a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if attrs.get("b_trans") else b.shape[-2:]
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
    batch = broadcast_batch(op, a.shape[:-2], b.shape[:-2], span)
    dtype = matmul_result_dtype(a.dtype, b.dtype, attrs.get("out_dtype"))
    shape = (*batch, m, n)
    if isinstance(a, TileType) and isinstance(b, TileType):
        check_placed(op, a, b, span)
        return TileType(shape, dtype, MemorySpace.Acc)
    return TensorType(shape, dtype)


def broadcast_batch(op: str, a: Sequence[Any], b: Sequence[Any], span: SourceSpan | None) -> tuple[Any, ...]:
    """The batch dims of a product of operands with batch dims ``a`` and ``b``: aligned from the
    right, a dim of 1 (or a missing one) takes the other's."""
    rank = max(len(a), len(b))
    padded_a = (1,) * (rank - len(a)) + tuple(a)
    padded_b = (1,) * (rank - len(b)) + tuple(b)
    dims = []
    for x, y in zip(padded_a, padded_b, strict=True):
        if x != y and 1 not in (x, y):
            raise fail(
                op,
                f"batch dims {list(a)} and {list(b)} do not broadcast ({x} vs {y})",
                span,
                "give both operands the same batch dims, or 1 (or none) where one matrix serves every batch",
            )
        dims.append(y if x == 1 else x)
    return tuple(dims)


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
        and isinstance(acc, TileType) is isinstance(result, TileType)
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
        (
            "gemv_acc",
            (
                operand("acc", MemorySpace.Acc),
                operand("a", MemorySpace.Left),
                operand("b", MemorySpace.Right),
            ),
            "acc + a @ b of a [1, K] row (the next chunk of K)",
        ),
        (
            "gemv_bias",
            (
                operand("a", MemorySpace.Left),
                operand("b", MemorySpace.Right),
                operand("bias", MemorySpace.Bias),
            ),
            "a @ b + bias of a [1, K] row",
        ),
    ):
        # The right operand (and a bias row) is the same for every row block of the product.
        shared = RowShared(1, also=(2,)) if name.endswith("_bias") else RowShared(len(operands) - 1)
        lowered: tuple[Trait, ...] = (PlacesTile(),) if tile else (Lowers(f"tile.{name}"), shared)
        a_at = [o.name for o in operands].index("a")
        traits: tuple[Trait, ...] = (Cost("matmul"), Product(a_at, a_at + 1), *lowered)
        args = ", ".join(o.name for o in operands)
        own = attrs if not name.endswith("_acc") else attrs[:2]
        phase = (
            (Attr("acc_phase", str, "unspecified", choices=ACC_PHASES),) if name.startswith("gemv") else ()
        )
        declare(
            OpSpec(
                f"{prefix}.{name}",
                level,
                Unit.CUBE,
                matmul,
                operands,
                (*own, *phase),
                traits,
                dsl=name,
                signature=f"pl.{name}({args}, a_trans=False, b_trans=False)",
                doc=doc,
            )
        )
    # A batch of products: a tile op written pl.batch_matmul; on tensors pl.matmul of rank-3 (or
    # more) operands is this op, which the tiler runs over blocks of the leading (batch) dim.
    batch = (Cost("matmul"), *((PlacesTile(),) if tile else (Lowers("tile.batch_matmul"),)))
    declare(
        OpSpec(
            f"{prefix}.batch_matmul",
            level,
            Unit.CUBE,
            batch_matmul,
            (operand("a", MemorySpace.Left), operand("b", MemorySpace.Right)),
            attrs,
            batch,
            dsl="batch_matmul" if tile else "matmul",
            signature=("pl.batch_matmul" if tile else "pl.matmul")
            + "(a, b, out_dtype=None, a_trans=False, b_trans=False)",
            doc="a @ b of each matrix of a batch (the leading dims broadcast)",
        )
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare(_level)
