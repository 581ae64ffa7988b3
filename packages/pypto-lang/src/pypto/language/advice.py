"""How to fix what the IR's type rules find, in the DSL's words.

A type rule of :mod:`pypto.ir.ops` knows what is wrong (a dtype mismatch, a tile in the wrong
memory space) but not how a ``pl`` user spells the fix; it raises its ``TypeCheckError`` with
an advice key and the facts of the case (``advice=("binary.dtype_mismatch", {})``), and this
table words the hint. Importing :mod:`pypto.language` registers it with
:func:`pypto.ir.errors.register_advisor`. A new rule's problem gets one entry here;
``tests`` check that every key a rule raises has one, and that none is left unused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pypto.ir.errors import register_advisor
from pypto.ir.ops import system as system_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.ops.rules import matrix_shape, ranked, user_name
from pypto.ir.types import MemorySpace, TensorType, TileType, describe

# What each pipe setup option is, and what each boundary op takes.
_PIPE_OPTION = {
    "slot_size": "write slot_size= the bytes of the largest tile that crosses, e.g. 16384 for [64, 64] FP32",
    "slot_num": "write slot_num= the ring depth in tiles, e.g. slot_num=2 (both sides the same)",
}
_TILE_ARG = {
    tile_ops.tpush_to_aiv: "the cube pushes Acc or Mat tiles (e.g. a pl.matmul result); "
    "Vec tiles go from the vector lanes to the cube with pl.tpush_to_aic",
    tile_ops.tpush_to_aic: "the vector lanes push Vec tiles; "
    "Acc or Mat tiles go from the cube with pl.tpush_to_aiv",
    system_ops.tfree_to_aic: "free the Vec tile pl.tpop_from_aic returned: pl.tfree_to_aic(t)",
    system_ops.tfree_to_aiv: "free the Mat tile pl.tpop_from_aiv returned: pl.tfree_to_aiv(t)",
    tile_ops.aiv_shard: "shard a cube-side tile (Acc, e.g. a pl.matmul result, or Mat); "
    "a Vec tile is on the lanes already",
    tile_ops.aic_gather: "gather the lanes' Vec tiles (e.g. the result of a vector op in the region)",
}
_WORKSPACE = (
    "pass a parameter ws: pl.Tensor[[16], pl.INT32] filled with zeros by the caller: "
    'pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)'
)


def _operand_space(t: TileType, space: MemorySpace) -> str:
    """How a tile gets into the cube's Left / Right buffer: moved there from Mat."""
    if t.memory_space is MemorySpace.Mat:
        return (
            f"move it first: pl.move(tile, target_memory=pl.Mem.{space.name}); or keep both operands in "
            "Mat (the left one may be Vec) and the compiler moves them into L0 in blocks that fit"
        )
    return (
        f"{space.name} tiles are moved from Mat: load the data into Mat and move it, "
        f"pl.move(pl.load(t, [0, 0], {list(t.shape)}, target_memory=pl.Mem.Mat), "
        f"target_memory=pl.Mem.{space.name})"
    )


def _concat_shape(lhs: TileType | TensorType, rhs: TileType | TensorType) -> str:
    for t in (lhs, rhs):
        if len(t.shape) != 2:
            return f"reshape {describe(t)} to 2-D first: pl.reshape(x, {matrix_shape(t.shape)})"
    return (
        f"pl.concat(a, b) puts b's columns after a's: give both the same number of rows "
        f"(here {lhs.shape[0]} and {rhs.shape[0]})"
    )


# Problem key -> the hint, from the facts the rule gives. The comment is the rule's message.
ADVICE: dict[str, Callable[..., str]] = {
    # f"computes on numbers, got {describe(t)}"
    "arith.bool_operand": lambda **_: "convert it first, e.g. pl.cast(x, pl.INT32) or pl.cast(x, pl.FP32)",
    # f"is defined on floats, got {describe(t)}"
    "arith.float_only": lambda t, **_: (
        f"convert it first: pl.cast(x, pl.FP32) (then back with pl.cast(y, pl.{t.dtype.name}) if needed)"
    ),
    # f"is defined on integers, got {describe(t)}"
    "arith.integer_only": lambda t, **_: (
        "convert it first: pl.cast(x, pl.INT32) (bitwise logic and shifts work on the bits of integers)"
        if not t.dtype.is_bool
        else "select with a BOOL mask by pl.sel; convert a mask to integers with pl.cast(m, pl.INT16)"
    ),
    # f"atomic must be a pl.AtomicType, got {attrs['atomic']!r}"
    "assemble.atomic_type": lambda **_: (
        "write atomic=pl.AtomicType.Add to add into the target, or leave it out to overwrite"
    ),
    # f"dtype mismatch: writing {describe(v)} into {describe(dst.type)}"
    "assemble.dtype_mismatch": lambda **_: "cast the value with pl.cast(x, dtype) first",
    # f"writes a tile into a tile, got {describe(v)} into {describe(d)}"
    "assemble.needs_tiles": lambda **_: (
        "pass tiles on both sides; write into a tensor with pl.assemble(out, value, offsets)"
    ),
    # f"rank mismatch: {describe(v)} into {describe(dst.type)}"
    "assemble.rank_mismatch": lambda v, dst, **_: (
        f"give the value the tensor's rank first, pl.reshape(x, "
        f"{ranked(v.shape, len(dst.type.shape))}), and write it into a region of that shape"
    ),
    # f"writes into a tensor, got {describe(dst.type)}"
    "assemble.target_not_tensor": lambda **_: (
        "the target is a global-memory tensor (a pl.Out parameter or a pl.create_tensor result)"
    ),
    # f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}"
    "binary.dtype_mismatch": lambda **_: (
        "PyPTO has no implicit promotion: convert one side with pl.cast(x, dtype)"
    ),
    # f"operand dtype mismatch: {describe(x)} vs {describe(vec)}"
    "broadcast.dtype_mismatch": lambda x, **_: (
        f"convert the broadcast operand first: pl.cast(v, pl.{x.dtype.name})"
    ),
    # f"the broadcast operand must be {list(want)} for {describe(x)}, got {describe(vec)}"
    "broadcast.vector_shape": lambda **_: (
        "row vectors come from pl.row_max/row_sum, column vectors from pl.col_sum or a [1, C] load"
    ),
    # f"invalidates a tensor region, got {describe(t)}"
    "cacheinvalid.needs_tensor": lambda **_: (
        "name a global-memory tensor, or call pl.system.cacheinvalid() for all of it"
    ),
    # f"a region of {describe(t)} needs a shape of rank {len(t.shape)}"
    "cacheinvalid.rank_mismatch": lambda t, **_: (
        f"give one extent per dimension, e.g. pl.system.cacheinvalid(t, {[0] * len(t.shape)}, "
        f"{list(t.shape)})"
    ),
    # f"unknown rounding mode {mode!r}"
    "cast.unknown_mode": lambda modes, **_: f"use a pl.CastMode: one of {modes}",
    # f"operand dtype mismatch: {describe(lhs)} vs {describe(rhs)}"
    "concat.dtype_mismatch": lambda lhs, **_: f"convert one side first, e.g. pl.cast(b, pl.{lhs.dtype.name})",
    # f"fills a tile outside its valid shape, got {describe(x)}"
    "fillpad.needs_tile": lambda **_: (
        "pad a tile loaded with valid_shape=: pl.fillpad(pl.load(t, [0, 0], [64, 64], valid_shape=[n, 64]))"
    ),
    # f"the fill value must be a scalar, got {got}"
    "full.value_not_scalar": lambda attrs, **_: (
        f"fill with a number or a run-time scalar: pl.full(shape, pl.{attrs['dtype'].name}, 0)"
    ),
    # f"gathers into a tile, got {describe(dst.type)}"
    "gather_row.dst_not_tile": lambda **_: (
        "the destination is a Vec tile, e.g. rows = pl.create_tile([8, 64], pl.FP32)"
    ),
    # f"dtype mismatch: {describe(src.type)} into {describe(dst.type)}"
    "gather_row.dtype_mismatch": lambda src, **_: (
        f"create the destination tile with the tensor's dtype, pl.{src.type.dtype.name}"
    ),
    # f"copies a 2-D window of rows: shape must be [R, C], got {list(shape)}"
    "gather_row.not_2d": lambda columns, **_: (
        f"pass the window's rows and columns, e.g. shape=[1, {columns}] for one row"
    ),
    # f"loads from a tensor, got {describe(src)}"
    "load.needs_tensor": lambda **_: (
        "load from a global-memory tensor (a kernel parameter): pl.load(t, [0, 0], [64, 64])"
    ),
    # f"accumulator must be a {list(result.shape)} {result.dtype.name} {want}, got {describe(acc)}"
    "matmul.accumulator": lambda **_: (
        "start the sum with acc = pl.matmul(a, b), then acc = pl.matmul_acc(acc, a2, b2)"
    ),
    # f"operand dtype mismatch: {describe(a)} vs {describe(b)}"
    "matmul.dtype_mismatch": lambda **_: "cast one operand with pl.cast(x, dtype)",
    # f"needs 2-D operands, got {describe(a)} and {describe(b)}"
    "matmul.not_2d": lambda flat, **_: (
        f"reshape {describe(flat)} to 2-D first: pl.reshape(x, {matrix_shape(flat.shape)})"
    ),
    # f"moves a tile, got {describe(t)}"
    "move.needs_tile": lambda **_: (
        "pl.move changes the memory space of a tile; bring a tensor on chip with pl.load"
    ),
    # f"{what} must be integers, got {describe(el.type)}"
    "offsets.not_integer": lambda **_: "convert a float with pl.cast(x, pl.INDEX)",
    # f"{what} must be 2-D, got {describe(t)}"
    "operand.not_2d": lambda t, **_: f"reshape it to 2-D first: pl.reshape(x, {matrix_shape(t.shape)})",
    # f"{what} must be a tensor or a tile, got {describe(e.type)}"
    "operand.not_shaped": lambda what, **_: (
        f"pass a tensor (global memory) or a tile (e.g. a pl.load result) as the {what}"
    ),
    # f"operands mix a tensor and a tile: {describe(lhs)} and {describe(rhs)}"
    "operands.tensor_and_tile": lambda **_: (
        "load the tensor into a tile with pl.load first, or use tensors on both sides"
    ),
    # f"takes a tile, got {describe(t)}"
    "pipe.needs_tile": lambda op, **_: _TILE_ARG[op],
    # "needs shape=[...] and dtype= of the tile it pops"
    "pipe.pop_needs_shape": lambda op, **_: (
        f"give the shape and dtype the other side pushes, e.g. pl.{op}(shape=[64, 64], dtype=pl.FP32), or "
        f"annotate the name it is assigned to: t: pl.Tile[[64, 64], pl.FP32] = pl.{op}(...)"
    ),
    # f"{name} must be a positive int, got {value!r}"
    "pipe.slot_option": lambda name, **_: _PIPE_OPTION[name],
    # f"takes a tile in {names}, got {describe(t)}"
    "pipe.tile_space": lambda op, **_: _TILE_ARG[op],
    # f"reads one element of a tensor, got {describe(src)}"
    "read.needs_tensor": lambda **_: (
        "read from a global-memory tensor: pl.read(t, [i, j]); store a tile into a tensor first"
    ),
    # f"needs a scratch tile shaped like {describe(x)}, got {got}"
    "row_reduce.scratch": lambda op, **_: (
        f"pass one: tmp = pl.create_tile(x.shape, x.dtype); {user_name(op)}(x, tmp)"
    ),
    # f"{what} {scalar.value!r} does not fit {name}, whose largest value is {largest:g}"
    "scalar.beyond_float_range": lambda largest, **_: (
        f"use a value within +-{largest:g} (or math.inf for infinity), or compute in pl.FP32"
    ),
    # f"{what} {scalar.value!r} does not fit {name}, whose range is [{low}, {high}]"
    "scalar.beyond_int_range": lambda low, high, **_: (
        f"use a value in [{low}, {high}], or convert the tile to a wider dtype with pl.cast first"
    ),
    # f"{what} is a {t.dtype.name} scalar{value}, which {name} elements cannot hold exactly"
    "scalar.float_for_integer": lambda **_: (
        "use an integer scalar, or convert the tile first: pl.cast(x, pl.FP32)"
    ),
    # f"needs scalar operands, got {describe(t)}"
    "scalar.non_scalar_operand": lambda **_: (
        "scalar arithmetic takes numbers and run-time scalars; use pl.* ops on tensors and tiles"
    ),
    # f"cannot halve {describe(t)} along dim {axis} for {mode!r}"
    "shard.cannot_halve": lambda **_: "split along the other axis, or use pl.SplitMode.NONE",
    # f"a slice of {describe(x)} needs a shape of rank {len(x.shape)}"
    "slice.rank_mismatch": lambda x, **_: (
        f"give one extent per dimension, e.g. pl.slice(x, {list(x.shape)}, {[0] * len(x.shape)})"
    ),
    # f"atomic must be pl.AtomicType.Add, got {attrs.get('atomic')!r}"
    "store.atomic_type": lambda **_: "use pl.store",
    # f"dtype mismatch: {describe(tile.type)} into {describe(dst.type)}"
    "store.dtype_mismatch": lambda **_: "cast the tile with pl.cast(tile, dtype) before storing",
    # f"stores into a tensor, got {describe(dst.type)}"
    "store.needs_tensor": lambda **_: (
        "store into a global-memory tensor (a pl.Out parameter); pl.assemble writes a tile into a tile"
    ),
    # f"stores a tile, got {describe(tile.type)}"
    "store.needs_tile": lambda **_: (
        "store an on-chip tile (e.g. a pl.load or vector op result): pl.store(tile, [0, 0], out)"
    ),
    # f"gm_workspace must be an INT32 tensor of at least 16 elements, got {describe(ws)}"
    "syncall.bad_workspace": lambda **_: _WORKSPACE,
    # 'mode="soft" needs gm_workspace=, a zeroed INT32 tensor of at least 16 elements'
    "syncall.no_workspace": lambda **_: _WORKSPACE,
    # f"the {side} operand must be in {space.name}, got {describe(t)}"
    "matmul.operand_space": _operand_space,
    # f"concatenates columns of 2-D operands with equal row counts, got ..."
    "concat.shape": _concat_shape,
    # f"writes {describe(v)} into {describe(d)}: dtype or rank differs" (the dtype)
    "assemble.tile_dtype": lambda d, **_: f"convert the value first: pl.cast(v, pl.{d.dtype.name})",
    # f"writes {describe(v)} into {describe(d)}: dtype or rank differs" (the rank)
    "assemble.tile_rank": lambda v, d, **_: (
        f"give the value the target's rank: pl.reshape(v, {ranked(v.shape, len(d.shape))})"
    ),
    # f"vector op needs its tiles in Vec, got {describe(t)}" (a cube-side tile)
    "vector.cube_tile": lambda **_: (
        "this tile is on the cube side, which has no path to Vec: compute on the tensor "
        "(a mixed pl.split scope crosses it for you), or send it with pl.tpush_to_aiv / pl.aiv_shard"
    ),
    # f"vector op needs its tiles in Vec, got {describe(t)}"
    "vector.not_in_vec": lambda **_: "load the data with pl.load(..., target_memory=pl.Mem.Vec)",
}


def advise(key: str, facts: Mapping[str, Any]) -> str | None:
    """The hint for problem ``key`` with ``facts`` (None for a key this table does not know)."""
    words = ADVICE.get(key)
    return words(**facts) if words is not None else None


register_advisor(advise)
