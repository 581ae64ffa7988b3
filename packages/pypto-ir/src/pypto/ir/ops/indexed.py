"""Gather, scatter and sort: ops that move elements to places an index (or their values) says.

Within tiles (and tensors, which the compiler tiles by rows): ``gather`` picks each row's
elements at column indices, ``scatter`` writes them there, ``scatter_update`` writes whole rows
at row indices, ``gatherb`` picks 32-byte blocks at byte offsets. Between global memory and a
tile: ``mgather`` reads rows (or elements) of a tensor at the indices of a tile, ``mscatter``
writes a tile's rows (or elements) there, ``paged_gather`` reads rows of a paged pool through a
block table. Sorting: ``sort32`` sorts each group of 32 elements of a row into (value, index)
pairs, largest first, and ``mrgsort`` merges sorted runs of such pairs.

A sorted pair takes 8 bytes, as the vector unit's sort writes it: an FP32 value then its UINT32
index (two FP32 slots), or an FP16 value, two bytes of padding and the index (four FP16 slots);
``pl.reinterpret_view`` and a strided slice read the indices back out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.rules import check_vec, fail, same_kind, shaped
from pypto.ir.ops.spec import (
    ALL,
    REQUIRED,
    WHOLE_TILE,
    Attr,
    Cost,
    Effect,
    FormatFree,
    GmAccess,
    Level,
    Lowers,
    Operand,
    OpSpec,
    PlacesTile,
    Role,
    SplitPolicy,
    Trait,
    Unit,
    WholeRegion,
    declare_op,
)
from pypto.ir.types import MemorySpace, TensorType, TileType, Type, describe

INDEX_DTYPES = (DataType.INT16, DataType.INT32, DataType.UINT16, DataType.UINT32)
SORT_DTYPES = (DataType.FP16, DataType.FP32)
PAIR_BYTES = 8  # a sorted (value, index) pair
SORT_GROUP = 32  # the elements one sort instruction orders
COALESCE = ("row", "elem")
GATHER_OOB = ("undefined", "clamp", "wrap", "zero")
GATHERB_BLOCK = 32  # bytes one gatherb offset selects


# ---------------------------------------------------------------- shared checks


def _result(x: TileType | TensorType, shape: tuple[Any, ...], dtype: DataType | None = None) -> Type:
    """A value shaped ``shape`` of ``x``'s kind: a Vec tile, or a tensor."""
    dtype = dtype or x.dtype
    if isinstance(x, TileType):
        return TileType(shape, dtype, MemorySpace.Vec)
    return TensorType(shape, dtype)


def _index(op: str, e: Expr, span: SourceSpan | None, what: str = "index") -> TileType | TensorType:
    t = shaped(op, e, span, what)
    if t.dtype not in INDEX_DTYPES:
        names = ", ".join(f"pl.{d.name}" for d in INDEX_DTYPES)
        raise fail(
            op,
            f"the {what} must hold integers ({names}), got {describe(t)}",
            span,
            f"convert it first: pl.cast({what}, pl.INT32)",
        )
    return t


def _matrix(op: str, e: Expr, span: SourceSpan | None, what: str) -> TileType | TensorType:
    t = shaped(op, e, span, what)
    if len(t.shape) != 2:
        raise fail(
            op, f"the {what} must be 2-D, got {describe(t)}", span, f"pl.reshape the {what} to 2-D first"
        )
    if isinstance(t, TileType):
        check_vec(op, t, span)
    return t


def _last_dim(
    op: str, attrs: Mapping[str, Any], span: SourceSpan | None, rank: int = 2, last: int = 1
) -> None:
    """``dim=`` names the axis the op indexes along: here only ``last`` (also written negatively)."""
    dim = attrs.get("dim", -(rank - last))
    if not isinstance(dim, int) or dim not in (last, last - rank):
        raise fail(
            op,
            f"indexes along dim {last - rank} (dim={last} counted from the front), got dim={dim!r}",
            span,
            f"write dim={last - rank}, or leave it out",
        )


def _flat_count(t: TileType | TensorType) -> int:
    return prod(n for n in t.shape if isinstance(n, int))


def _choice(
    op: str, attrs: Mapping[str, Any], name: str, choices: tuple[str, ...], span: SourceSpan | None
) -> str:
    value = attrs.get(name, choices[0])
    if value not in choices:
        raise fail(
            op,
            f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}",
            span,
            f'write {name}="{choices[0]}" (the default) or another of them',
        )
    return str(value)


# ---------------------------------------------------------------- gather, scatter (within values)


def gather(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``out[i, j] = src[i, index[i, j]]``: each row's elements at its column indices."""
    op = spec.name
    src = _matrix(op, args[0], span, "source")
    index = _index(op, args[1], span)
    same_kind(op, src, index, span)
    if len(index.shape) != 2 or index.shape[0] != src.shape[0]:
        raise fail(
            op,
            f"the index must be 2-D with the source's {src.shape[0]} rows, got {describe(index)}",
            span,
            "give one row of column indices per row of the source",
        )
    _last_dim(op, attrs, span)
    return _result(src, tuple(index.shape))


def scatter(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``out[i, index[i, k]] = src[i, k]`` over ``input`` (the rest of it kept)."""
    op = spec.name
    dst = _matrix(op, args[0], span, "input")
    index = _index(op, args[1], span)
    src = _matrix(op, args[2], span, "source")
    same_kind(op, dst, src, span)
    same_kind(op, dst, index, span)
    if tuple(index.shape) != tuple(src.shape) or src.shape[0] != dst.shape[0]:
        raise fail(
            op,
            f"the index {describe(index)} and the source {describe(src)} must have one shape, with the "
            f"input's {dst.shape[0]} rows",
            span,
            "give each source element its column index: index and source of one shape",
        )
    if src.dtype != dst.dtype:
        raise fail(
            op, f"dtype mismatch: {describe(src)} into {describe(dst)}", span, "pl.cast the source first"
        )
    _last_dim(op, attrs, span)
    return dst if isinstance(dst, TileType) else TensorType(tuple(dst.shape), dst.dtype)


def _rows_index(op: str, index: TileType | TensorType, rows: Any, span: SourceSpan | None, of: str) -> None:
    """An index of one entry per row of ``of``: 1-D, or 2-D with a dim of 1 (read flat)."""
    flat = len(index.shape) == 1 or (len(index.shape) == 2 and 1 in index.shape)
    if not flat or (isinstance(rows, int) and _flat_count(index) != rows):
        raise fail(
            op,
            f"the index must hold one row index per row of the {of} ({rows}), got {describe(index)}",
            span,
            f"give a [{rows}] or [1, {rows}] index",
        )


def scatter_update(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """``input[index[k], :] = src[k, :]``: whole rows written at row indices (the rest kept)."""
    op = spec.name
    dst = shaped(op, args[0], span, "input")
    if spec.level is Level.TENSOR and not isinstance(dst, TensorType):
        raise fail(op, f"writes rows of a tensor, got {describe(dst)}", span, "on tiles the op is the same")
    dst = _matrix(op, args[0], span, "input")
    index = _index(op, args[1], span)
    src = _matrix(op, args[2], span, "source")
    same_kind(op, dst, src, span)
    _rows_index(op, index, src.shape[0], span, "source")
    if src.shape[1] != dst.shape[1] or src.dtype != dst.dtype:
        raise fail(
            op,
            f"writes rows of {describe(src)} into {describe(dst)}: the column count and dtype must match",
            span,
            "give source rows as wide as the input's, of its dtype",
        )
    _last_dim(op, {"dim": attrs.get("dim", -2)}, span, last=0)
    return dst


# ---------------------------------------------------------------- between global memory and tiles


def mgather(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Rows (``coalesce="row"``) or elements (``"elem"``) of a tensor at a tile's indices."""
    op = spec.name
    src = args[0].type
    if not isinstance(src, TensorType):
        raise fail(
            op, f"gathers from a tensor, got {describe(src)}", span, "the source is a tensor in global memory"
        )
    index = _index(op, args[1], span)
    if not isinstance(index, TileType):
        raise fail(op, f"the index is a tile, got {describe(index)}", span, "pl.load the index first")
    check_vec(op, index, span)
    coalesce = _choice(op, attrs, "coalesce", COALESCE, span)
    _choice(op, attrs, "gather_oob", GATHER_OOB, span)
    if coalesce == "row":
        if len(src.shape) != 2:
            raise fail(op, f"gathers rows of a 2-D tensor, got {describe(src)}", span, "pl.reshape it to 2-D")
        count = _flat_count(index)
        _rows_index(op, index, count, span, "result")
        return TileType((count, src.shape[1]), src.dtype, MemorySpace.Vec)
    return TileType(tuple(index.shape), src.dtype, MemorySpace.Vec)


def mscatter(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """A tile's rows (``coalesce="row"``) or elements (``"elem"``) written into a tensor at the
    positions an index tile holds."""
    op = spec.name
    src = args[0].type
    if not isinstance(src, TileType):
        raise fail(
            op, f"scatters a tile, got {describe(src)}", span, "pl.load (or compute) the tile to scatter"
        )
    check_vec(op, src, span)
    index = _index(op, args[1], span)
    if not isinstance(index, TileType):
        raise fail(op, f"the index is a tile, got {describe(index)}", span, "pl.load the index first")
    dst = args[2].type
    if not isinstance(dst, TensorType):
        raise fail(
            op,
            f"scatters into a tensor, got {describe(dst)}",
            span,
            "the output is a tensor in global memory",
        )
    if src.dtype != dst.dtype:
        raise fail(
            op, f"dtype mismatch: {describe(src)} into {describe(dst)}", span, "pl.cast the tile first"
        )
    if _choice(op, attrs, "coalesce", COALESCE, span) == "row":
        if len(src.shape) != 2 or len(dst.shape) != 2 or src.shape[1] != dst.shape[1]:
            raise fail(
                op,
                f"scatters rows of {describe(src)} into {describe(dst)}: both 2-D, of one row width",
                span,
                "give tile rows as wide as the tensor's",
            )
        _rows_index(op, index, src.shape[0], span, "tile")
    elif _flat_count(index) != _flat_count(src):
        raise fail(
            op,
            f"the index {describe(index)} must give one position per element of {describe(src)}",
            span,
            "give an index of the tile's element count",
        )
    return dst


def paged_gather(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """``[max_indices, size]`` rows of a paged pool: row ``i`` is pool row
    ``block_table[idx // block_size] * block_size + idx % block_size`` of ``idx = indices[i]``,
    from column ``col_offset``."""
    op = spec.name
    src, indices, table = (a.type for a in args)
    for t, what in ((src, "pool"), (indices, "indices"), (table, "block table")):
        if not isinstance(t, TensorType):
            raise fail(
                op, f"the {what} must be a tensor, got {describe(t)}", span, "pass tensors in global memory"
            )
    assert isinstance(src, TensorType) and isinstance(indices, TensorType) and isinstance(table, TensorType)
    if len(src.shape) != 2:
        raise fail(
            op, f"gathers rows of a 2-D pool, got {describe(src)}", span, "give the pool as [rows, width]"
        )
    for t, what in ((indices, "indices"), (table, "block table")):
        if t.dtype not in (*INDEX_DTYPES, DataType.INT64, DataType.INDEX) or not (
            len(t.shape) == 1 or (len(t.shape) == 2 and t.shape[0] == 1)
        ):
            raise fail(
                op,
                f"the {what} must be a 1-D (or [1, n]) integer tensor, got {describe(t)}",
                span,
                f"pass the {what} as a [n] INT32 tensor",
            )
    block_size, max_indices = attrs["block_size"], attrs["max_indices"]
    size = attrs.get("size") or src.shape[1]
    col = attrs.get("col_offset", 0)
    for value, what in ((block_size, "block_size"), (max_indices, "max_indices"), (size, "size")):
        if not isinstance(value, int) or value < 1:
            raise fail(
                op, f"{what} must be a positive int, got {value!r}", span, f"give {what}= as a constant"
            )
    if isinstance(src.shape[1], int) and not 0 <= col <= src.shape[1] - size:
        raise fail(
            op,
            f"columns [{col}:{col + size}] are outside the pool's {src.shape[1]}",
            span,
            "keep col_offset + size within the pool's width",
        )
    count = indices.shape[-1]
    if isinstance(count, int) and count > max_indices:
        raise fail(
            op,
            f"gathers {count} rows into a buffer of max_indices={max_indices}",
            span,
            f"give max_indices={count} or more (the buffer's rows)",
        )
    space = attrs.get("target_memory", MemorySpace.Mat)
    if space not in (MemorySpace.Mat, MemorySpace.Vec):
        raise fail(
            op, f"gathers into Mat or Vec, got {space!r}", span, "write target_memory=pl.Mem.Mat (L1) or Vec"
        )
    if attrs.get("is_trans") and space is not MemorySpace.Mat:
        raise fail(
            op, "is_trans=True lays rows out as an L1 operand's columns: Mat only", span, "drop is_trans"
        )
    return TensorType((max_indices, size), src.dtype)


def gatherb(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """32-byte blocks of a tile at byte offsets: each offset column becomes ``32 / element bytes``
    elements of the result (a valid shape widens alike)."""
    op = spec.name
    src = args[0].type
    offsets = args[1].type
    if not isinstance(src, TileType) or not isinstance(offsets, TileType):
        raise fail(
            op, f"takes tiles, got {describe(src)} and {describe(offsets)}", span, "pl.load both first"
        )
    check_vec(op, src, span)
    check_vec(op, offsets, span)
    if offsets.dtype is not DataType.UINT32 or len(offsets.shape) != 2 or offsets.shape[1] % 8:
        raise fail(
            op,
            f"the offsets must be a 2-D pl.UINT32 tile of rows of a multiple of 8 byte offsets, got "
            f"{describe(offsets)}",
            span,
            "give [rows, 8 * n] UINT32 byte offsets (pl.cast or pl.reinterpret_view INT32 ones)",
        )
    dtype = attrs.get("output_dtype") or src.dtype
    if dtype.nbytes not in (1, 2, 4) or not dtype.has_torch_dtype or dtype.is_bool:
        raise fail(
            op, f"reads blocks as 1-, 2- or 4-byte elements, got {dtype!r}", span, "pick such an output_dtype"
        )
    per_block = GATHERB_BLOCK // dtype.nbytes
    shape = (offsets.shape[0], offsets.shape[1] * per_block)
    valid = None
    if offsets.valid_shape is not None and tuple(offsets.valid_shape) != offsets.shape:
        valid = (offsets.valid_shape[0], offsets.valid_shape[1] * per_block)
    return TileType(shape, dtype, MemorySpace.Vec, valid)


# ---------------------------------------------------------------- sorting


def pair_slots(dtype: DataType) -> int:
    """The slots of ``dtype`` one sorted (value, index) pair takes."""
    return PAIR_BYTES // dtype.nbytes


def _sortable(op: str, e: Expr, span: SourceSpan | None, what: str) -> TileType | TensorType:
    t = _matrix(op, e, span, what)
    if t.dtype not in SORT_DTYPES:
        raise fail(
            op, f"sorts FP16 or FP32 values, got {describe(t)}", span, "pl.cast the values to pl.FP32 first"
        )
    return t


def sort32(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Each group of 32 elements of a row sorted, largest first, into (value, index) pairs: the
    index is ``idx``'s element (the column, without ``idx``)."""
    op = spec.name
    src = _sortable(op, args[0], span, "source")
    rows, cols = src.shape
    if isinstance(cols, int) and cols % SORT_GROUP:
        raise fail(
            op,
            f"sorts groups of {SORT_GROUP} elements: the {cols} columns of {describe(src)} are no whole "
            "number of them",
            span,
            f"pad the rows to a multiple of {SORT_GROUP} columns "
            "(pl.fillpad_expand with pad_value=pl.PadValue.min)",
        )
    if len(args) == 2:
        idx = _index(op, args[1], span, "idx")
        same_kind(op, src, idx, span)
        if tuple(idx.shape) != tuple(src.shape) or idx.dtype not in (DataType.UINT32, DataType.INT32):
            raise fail(
                op,
                f"idx must be a {list(src.shape)} UINT32 index per element, got {describe(idx)}",
                span,
                "give each element its index (pl.arange makes one; pl.reinterpret_view it to UINT32)",
            )
    return _result(src, (rows, cols * pair_slots(src.dtype)))


def _pairs(op: str, e: Expr, span: SourceSpan | None, what: str) -> TileType | TensorType:
    t = _sortable(op, e, span, what)
    slots = pair_slots(t.dtype)
    if isinstance(t.shape[1], int) and t.shape[1] % slots:
        raise fail(
            op,
            f"the {what} {describe(t)} holds no whole number of (value, index) pairs of {slots} slots",
            span,
            "merge what pl.sort32 (or pl.mrgsort) made",
        )
    return t


def mrgsort_runs(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """Each row's runs of ``block_len`` sorted pairs merged four at a time into runs four times
    as long (largest first)."""
    op = spec.name
    src = _pairs(op, args[0], span, "source")
    block = attrs["block_len"]
    pairs = src.shape[1] // pair_slots(src.dtype) if isinstance(src.shape[1], int) else None
    if not isinstance(block, int) or block < 1 or (pairs is not None and pairs % block):
        raise fail(
            op,
            f"block_len must be a positive int dividing the {pairs} pairs of a row, got {block!r}",
            span,
            f"give the length of the sorted runs ({SORT_GROUP} after pl.sort32)",
        )
    return _result(src, tuple(src.shape))


def mrgsort_lists(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    """Two to four sorted lists of pairs merged into one (largest first), row by row."""
    op = spec.name
    lists = [_pairs(op, a, span, f"list {i}") for i, a in enumerate(args)]
    first = lists[0]
    for other in lists[1:]:
        same_kind(op, first, other, span)
        if other.dtype != first.dtype or other.shape[0] != first.shape[0]:
            raise fail(
                op,
                f"merges lists of one dtype and row count, got {describe(first)} and {describe(other)}",
                span,
                "merge what sorts of one dtype made, row for row",
            )
    width = sum(t.shape[1] for t in lists)
    return _result(first, (first.shape[0], width))


# ---------------------------------------------------------------- declarations

_ROWS_LOCAL = SplitPolicy(cols=ALL)  # a row is the unit: the lanes may share out rows, not columns


def _declare_within(level: Level) -> None:
    """The ops within values: on tiles one instruction, on tensors tiled by rows."""
    prefix = level.value
    tile = level is Level.TILE
    role = Role.TILE if tile else Role.TENSOR
    vec = (MemorySpace.Vec,) if tile else None

    def operand(name: str, effect: Effect = Effect.READ) -> Operand:
        return Operand(name, role, vec, effect=effect)

    def made(name: str, whole: bool = False) -> tuple[Trait, ...]:
        if tile:
            return (PlacesTile(), WHOLE_TILE if whole else _ROWS_LOCAL)
        return (Lowers(f"tile.{name}"),)

    dim = Attr("dim", int, -1)
    declare_op(
        f"{prefix}.gather",
        level,
        Unit.VECTOR,
        gather,
        (operand("src"), operand("index")),
        (dim,),
        (Cost("vector"), FormatFree(), *made("gather")),
        "gather",
        "pl.gather(src, index, dim=-1)",
        "each row's elements at its column indices: out[i, j] = src[i, index[i, j]]",
    )
    # On a tile the input is updated in place (the result is it); on tensors a new value.
    updated = Effect.UPDATE if tile else Effect.READ
    declare_op(
        f"{prefix}.scatter",
        level,
        Unit.VECTOR,
        scatter,
        (operand("input", updated), operand("index"), operand("src")),
        (dim,),
        (Cost("vector"), FormatFree(), *made("scatter")),
        "scatter",
        "pl.scatter(input, index, src, dim=-1)",
        "input with each row's source elements written at their column indices",
    )
    rows_written = Effect.UPDATE if tile else Effect.WRITE
    scatter_update_traits: tuple[Trait, ...] = (
        (PlacesTile(), WHOLE_TILE) if tile else (GmAccess(0, None, write=True, indexed=1),)
    )
    declare_op(
        f"{prefix}.scatter_update",
        level,
        Unit.VECTOR if tile else Unit.MTE,
        scatter_update,
        (operand("input", rows_written), operand("index"), operand("src")),
        (Attr("dim", int, -2),),
        (Cost("vector" if tile else "store"), FormatFree(), *scatter_update_traits),
        "scatter_update",
        "pl.scatter_update(input, index, src, dim=-2)",
        "input with whole source rows written at row indices: input[index[k], :] = src[k, :]",
    )
    declare_op(
        f"{prefix}.sort32",
        level,
        Unit.VECTOR,
        sort32,
        (operand("src"), Operand("idx", role, vec, optional=True)),
        (),
        (Cost("vector_slow"), *made("sort32")),
        "sort32",
        "pl.sort32(src, idx=None)",
        "each 32 elements of a row sorted largest first into (value, index) pairs",
    )
    declare_op(
        f"{prefix}.mrgsort_format1",
        level,
        Unit.VECTOR,
        mrgsort_runs,
        (operand("src"),),
        (Attr("block_len", int, REQUIRED),),
        (Cost("vector_slow"), *made("mrgsort_format1")),
        "mrgsort",
        "pl.mrgsort(src, block_len)",
        "each row's sorted runs of block_len pairs merged four at a time",
    )
    lists = tuple(Operand(f"src{i}", role, vec, optional=i > 1) for i in range(4))
    declare_op(
        f"{prefix}.mrgsort_format2",
        level,
        Unit.VECTOR,
        mrgsort_lists,
        lists,
        (),
        (Cost("vector_slow"), *made("mrgsort_format2")),
        "mrgsort",
        "pl.mrgsort(src0, src1, src2=None, src3=None)",
        "two to four sorted lists of pairs merged into one, row by row",
    )


def _declare_memory() -> None:
    T = Level.TILE
    index = Operand("index", Role.TILE, (MemorySpace.Vec,))
    declare_op(
        "tile.mgather",
        T,
        Unit.MTE,
        mgather,
        (Operand("src", Role.TENSOR), index),
        (Attr("coalesce", str, "row", COALESCE), Attr("gather_oob", str, "undefined", GATHER_OOB)),
        (Cost("load"), PlacesTile(), GmAccess(0, None, indexed=1), WHOLE_TILE, FormatFree()),
        "mgather",
        'pl.mgather(src, index, coalesce="row", gather_oob="undefined")',
        "rows (or elements) of a tensor at the indices of a tile",
    )
    declare_op(
        "tile.mscatter",
        T,
        Unit.MTE,
        mscatter,
        (
            Operand("src", Role.TILE, (MemorySpace.Vec,)),
            index,
            Operand("output_tensor", Role.TENSOR, effect=Effect.WRITE),
        ),
        (Attr("coalesce", str, "row", COALESCE),),
        (Cost("store"), GmAccess(2, None, write=True, indexed=1), WHOLE_TILE, FormatFree()),
        "mscatter",
        'pl.mscatter(src, index, output_tensor, coalesce="row")',
        "a tile's rows (or elements) written into a tensor at the indices of a tile",
    )
    declare_op(
        "tile.gatherb",
        T,
        Unit.VECTOR,
        gatherb,
        (Operand("src", Role.TILE, (MemorySpace.Vec,)), Operand("offsets", Role.TILE, (MemorySpace.Vec,))),
        (Attr("output_dtype", DataType),),
        (Cost("vector"), PlacesTile(), WHOLE_TILE, FormatFree()),
        "gatherb",
        "pl.gatherb(src, offsets, output_dtype=None)",
        "32-byte blocks of a tile at UINT32 byte offsets",
    )
    declare_op(
        "tensor.paged_gather",
        Level.TENSOR,
        Unit.MTE,
        paged_gather,
        (Operand("src", Role.TENSOR), Operand("indices", Role.TENSOR), Operand("block_table", Role.TENSOR)),
        (
            Attr("block_size", int, REQUIRED),
            Attr("max_indices", int, REQUIRED),
            Attr("size", int),
            Attr("col_offset", int, 0),
            Attr("target_memory", MemorySpace, MemorySpace.Mat),
            Attr("is_trans", bool, False),
        ),
        (Cost("load"), WholeRegion(), FormatFree()),
        "paged_gather",
        "pl.paged_gather(src, indices, block_table, block_size, max_indices, size=None, col_offset=0, "
        "target_memory=pl.Mem.Mat, is_trans=False)",
        "rows of a paged pool through a block table, into an on-chip buffer of max_indices rows",
    )


for _level in (Level.TENSOR, Level.TILE):
    _declare_within(_level)
_declare_memory()
