"""What each op computes on the simulated chip: the shared numbers of :mod:`pypto.ir.semantics`,
behind the checks the hardware makes.

:data:`SEMANTICS` maps each op name to ``impl(call, args)``: the op's :data:`CHECKS` first (a region
outside its tensor is an ``OutOfBoundsError``, a valid shape outside its tile too, an integer
division by zero a ``DivisionByZeroError``, a run-time scalar that does not fit the tile's dtype
or a NaN cast to an integer a ``ScalarRangeError``, each at the user's line), then the numbers.

The same table tells the fast path how each op's numbers are computed for several blocks at once
(:mod:`pypto_sim_a2a3.fast.batch`): :data:`BATCHING` says, per op, whether its own numbers
(:data:`NUMBERS`) serve every block in one call (an ``Elementwise`` op of the op table, a cast),
run block by block (ops that index a tile's own dimensions), run per block only when the blocks'
scalars differ (scalar math), or whether the batch has its own way (loads, stores, moves, the
matmul family, ``full``, ``create``); an op it does not name is not batched. :data:`ELEMENT_CHECKS`
are the checks that read a tile's elements, not only its shape (made for every block).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import torch

from pypto.ir import ArrayType, Call, DataType, TileType, Var
from pypto.ir import semantics as shared
from pypto.ir.extents import WINDOW_ATTR
from pypto.ir.ops import (
    COL_EXPANDS,
    COL_REDUCTIONS,
    ELEMENTWISE_BINARY,
    OPS,
    ROW_EXPANDS,
    ROW_REDUCTIONS,
    Elementwise,
    array,
    scalar,
    tile,
    user_name,
)
from pypto.ir.semantics import OpImpl, valid_of
from pypto_sim_a2a3.errors import DivisionByZeroError, OutOfBoundsError, ScalarRangeError, UnsortedRunError

Check = Callable[[Call, Sequence[Any]], None]

CHECKS: dict[str, Check] = {}
ELEMENT_CHECKS: set[str] = set()  # the ops whose check reads a tile's elements (an index, a divisor)


# The checks of where an op reads and writes (regions, valid shapes, a GM index), which read no
# value the op computes: a timing-only run makes them for the ops whose numbers it skips.
ADDRESS_CHECKS: dict[str, Check] = {}


def checks(*names: str, reads_elements: bool = False, address: bool = False) -> Callable[[Check], Check]:
    """Register the decorated function as a check of each op in ``names``, run before its numbers
    (``reads_elements``: it reads a tile's elements, not only shapes and scalars; ``address``: one
    of :data:`ADDRESS_CHECKS` too)."""

    def register(fn: Check) -> Check:
        for name in names:
            CHECKS[name] = fn
            if reads_elements:
                ELEMENT_CHECKS.add(name)
            if address:
                ADDRESS_CHECKS[name] = fn
        return fn

    return register


def _user_op(call: Call) -> str:
    """The op as the user wrote it: ``pl.add`` for ``tile.adds``, ``pl.load`` for ``tile.load_partial``."""
    return user_name(call.op)


# ---------------------------------------------------------------- regions and valid shapes


def check_region(call: Call, tensor: torch.Tensor, offsets: Sequence[int], extent: Sequence[int]) -> None:
    """An OutOfBoundsError at the call unless ``tensor[offsets : offsets + extent]`` lies inside it.
    An empty region (a lane's share past the end of a dynamic extent) touches nothing, anywhere."""
    shape = tensor.shape
    if len(offsets) == 2 and len(extent) == 2 and len(shape) == 2:  # a 2-D region, the common case
        (row, col), (rows, cols), (height, width) = offsets, extent, shape
        if rows == 0 or cols == 0 or (row >= 0 and row + rows <= height and col >= 0 and col + cols <= width):
            return
    if any(size == 0 for size in extent):
        return
    for dim, (off, size, full) in enumerate(zip(offsets, extent, tensor.shape, strict=True)):
        if off < 0 or off + size > full:
            window = getattr(tensor, WINDOW_ATTR, None)
            cut = (
                f"; the view passed here runs past the end of its tensor: {full} of its {window[dim]} "
                "exist in that dim"
                if window is not None and window[dim] != full
                else ""
            )
            raise OutOfBoundsError(
                f"{_user_op(call)}: region [{off}:{off + size}] is outside dim {dim} of size {full} "
                f"(offsets {list(offsets)}){cut}",
                call.span,
                "keep offset + tile size inside the tensor; give an edge tile a smaller valid_shape"
                + (" (or slice the view inside its tensor)" if cut else ""),
            )


def check_valid(call: Call, valid: Sequence[int], shape: Sequence[int], whose: str = "tile") -> None:
    """A run-time valid shape must lie within the tile's shape (a gather's: its window's)."""
    for dim, (size, full) in enumerate(zip(valid, shape, strict=True)):
        if not 0 <= size <= full:
            raise OutOfBoundsError(
                f"{_user_op(call)}: valid_shape {list(valid)} leaves the {whose}'s {list(shape)} "
                f"in dim {dim}",
                call.span,
                f"keep each valid extent between 0 and the {whose}'s extent, e.g. pl.minimum(rows, n - row)",
            )


@checks(tile.load, address=True)
def _load(call: Call, args: Sequence[Any]) -> None:
    check_region(call, args[0], args[1], valid_of(call.type))


@checks(tile.load_partial, address=True)
def _load_partial(call: Call, args: Sequence[Any]) -> None:
    tensor, offsets, valid = args
    assert isinstance(call.type, TileType)
    check_valid(call, valid, call.type.shape)
    check_region(call, tensor, offsets, valid)


@checks(tile.store, address=True)
def _store(call: Call, args: Sequence[Any]) -> None:
    check_region(call, args[2], args[1], valid_of(call.args[0].type))


@checks(tile.store_partial, tile.store_atomic, address=True)
def _store_valid(call: Call, args: Sequence[Any]) -> None:
    tile_value, offsets, tensor = args[:3]
    valid = args[3] if len(args) == 4 else valid_of(call.args[0].type)
    check_valid(call, valid, tuple(tile_value.shape))
    check_region(call, tensor, offsets, valid)


@checks(tile.fillpad, address=True)
def _fillpad(call: Call, args: Sequence[Any]) -> None:
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    check_valid(call, args[1] if len(args) == 2 else valid_of(tile_type), tile_type.shape)


@checks(tile.gather_row, address=True)
def _gather_row(call: Call, args: Sequence[Any]) -> None:
    dst, src, dst_offsets, src_offsets = args[:4]
    shape = tuple(call.attrs["shape"])
    if len(args) == 5:  # only the valid part of the window is copied: it alone must fit both sides
        check_valid(call, args[4], shape, "window")
        shape = tuple(args[4])
    check_region(call, dst, dst_offsets, shape)
    check_region(call, src, src_offsets, shape)


@checks(tile.slice, address=True)
def _slice(call: Call, args: Sequence[Any]) -> None:
    check_region(call, args[0], args[1], tuple(call.attrs["shape"]))


@checks(tile.set_validshape, address=True)
def _set_validshape(call: Call, args: Sequence[Any]) -> None:
    assert isinstance(call.type, TileType)
    check_valid(call, [int(n) for n in args[1]], call.type.shape)


@checks(tile.assemble, address=True)
def _assemble(call: Call, args: Sequence[Any]) -> None:
    dst, src, offsets = args
    check_region(call, dst, offsets, tuple(src.shape))


@checks(scalar.read, address=True)
def _read(call: Call, args: Sequence[Any]) -> None:
    check_region(call, args[0], args[1], (1,) * args[0].dim())


@checks(scalar.write, tile.write)
def _write(call: Call, args: Sequence[Any]) -> None:
    _write_region(call, args)
    check_element_scalar(call, args[2], args[0].dtype)


def _write_region(call: Call, args: Sequence[Any]) -> None:
    target, offsets = args[:2]
    check_region(call, target, offsets, (1,) * target.dim())


ADDRESS_CHECKS[scalar.write] = ADDRESS_CHECKS[tile.write] = _write_region


@checks(tile.tri, address=True)
def _tri(call: Call, args: Sequence[Any]) -> None:
    assert isinstance(call.type, TileType)
    if len(args) > 1:
        check_valid(call, [int(n) for n in args[1]], call.type.shape)


@checks(tile.ci)
def _ci(call: Call, args: Sequence[Any]) -> None:
    assert isinstance(call.type, TileType)
    check_element_scalar(call, args[0], shared.torch_dtype(call.type.dtype))


def check_indices(call: Call, index: torch.Tensor, count: int, what: str) -> None:
    """An OutOfBoundsError at the call unless every entry of ``index`` is in ``0..count - 1``."""
    flat = index.reshape(-1).to(torch.int64)
    outside = (flat < 0) | (flat >= count)
    if bool(outside.any()):
        at = int(outside.nonzero()[0, 0])
        raise OutOfBoundsError(
            f"{_user_op(call)}: index {int(flat[at])} (entry {at} of the index) is outside the "
            f"{count} {what}",
            call.span,
            f"keep every index in 0..{count - 1}",
        )


@checks(tile.gather, reads_elements=True)
def _gather(call: Call, args: Sequence[Any]) -> None:
    check_indices(call, args[1], args[0].shape[1], "columns of the source")


@checks(tile.scatter, reads_elements=True)
def _scatter(call: Call, args: Sequence[Any]) -> None:
    check_indices(call, args[1], args[0].shape[1], "columns of the input")


@checks(tile.scatter_update, reads_elements=True)
def _scatter_update(call: Call, args: Sequence[Any]) -> None:
    check_indices(call, args[1], args[0].shape[0], "rows of the input")


@checks(tile.mgather, reads_elements=True, address=True)
def _mgather(call: Call, args: Sequence[Any]) -> None:
    if call.attrs.get("gather_oob", "undefined") != "undefined":
        return  # an out-of-range index is clamped, wrapped or reads zeros, as asked
    rows = call.attrs.get("coalesce", "row") == "row"
    count = args[0].shape[0] if rows else args[0].numel()
    check_indices(call, args[1], count, "rows of the source" if rows else "elements of the source")


@checks(tile.mscatter, reads_elements=True, address=True)
def _mscatter(call: Call, args: Sequence[Any]) -> None:
    rows = call.attrs.get("coalesce", "row") == "row"
    output = args[2]
    count = output.shape[0] if rows else output.numel()
    check_indices(call, args[1], count, "rows of the output" if rows else "elements of the output")


@checks(tile.gatherb, reads_elements=True)
def _gatherb(call: Call, args: Sequence[Any]) -> None:
    src, offsets = args
    nbytes = src.numel() * src.element_size()
    flat = offsets.reshape(-1).to(torch.int64)
    bad = (flat % 32 != 0) | (flat < 0) | (flat + 32 > nbytes)
    if bool(bad.any()):
        offset = int(flat[int(bad.nonzero()[0, 0])])
        raise OutOfBoundsError(
            f"pl.gatherb: byte offset {offset} selects no whole 32-byte block of the {nbytes}-byte source",
            call.span,
            f"give multiples of 32 from 0 to {nbytes - 32}",
        )


def check_sorted_runs(call: Call, pairs: torch.Tensor, run: int) -> None:
    """The merges need sorted input: each run of ``run`` pairs largest first."""
    values, _ = shared.from_pairs(pairs)
    count = values.shape[1]
    for start in range(0, count, run):
        part = values[:, start : start + run].to(torch.float64)
        rising = part[:, 1:] > part[:, :-1]
        if bool(rising.any()):
            row = int(rising.nonzero()[0, 0])
            raise UnsortedRunError(
                f"{_user_op(call)}: the run of pairs {start}..{min(start + run, count) - 1} of row {row} "
                "is not sorted largest first",
                call.span,
                "merge what pl.sort32 (or an earlier pl.mrgsort) made: merging assumes sorted runs",
            )


@checks(tile.mrgsort_format1, reads_elements=True)
def _mrgsort_runs(call: Call, args: Sequence[Any]) -> None:
    check_sorted_runs(call, args[0], int(call.attrs["block_len"]))


@checks(tile.mrgsort_format2, reads_elements=True)
def _mrgsort_lists(call: Call, args: Sequence[Any]) -> None:
    for pairs in args:
        check_sorted_runs(call, pairs, pairs.shape[1])


@checks(tile.fillpad_expand, address=True)
def _fillpad_expand(call: Call, args: Sequence[Any]) -> None:
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    check_valid(call, args[1] if len(args) == 2 else valid_of(tile_type), tile_type.shape)


@checks(array.get_element)
def _array_get(call: Call, args: Sequence[Any]) -> None:
    check_array_index(call, args[1])


@checks(array.update_element)
def _array_set(call: Call, args: Sequence[Any]) -> None:
    check_array_index(call, args[1])
    array_type = call.type
    assert isinstance(array_type, ArrayType)
    if array_type.dtype is not DataType.TASK_ID:  # a task handle is stored as it is
        check_element_scalar(call, args[2], shared.torch_dtype(array_type.dtype))


def check_array_index(call: Call, index: int) -> None:
    """An OutOfBoundsError at the call unless the run-time ``index`` is inside the scalar array."""
    array_type = call.args[0].type
    assert isinstance(array_type, ArrayType)
    if not 0 <= index < array_type.size:
        raise OutOfBoundsError(
            f"{_user_op(call)}: index {index} is outside the scalar array of {array_type.size} elements",
            call.span,
            f"keep the run-time index from 0 to {array_type.size - 1} (clamp it with pl.min / pl.max)",
        )


# ---------------------------------------------------------------- numbers out of range


def check_element_scalar(call: Call, value: int | float | bool, dtype: torch.dtype) -> None:
    """A scalar operand must fit the tile's dtype. The type rule rejects a float or an out-of-range
    constant for an integer tile; a run-time value out of range stops here."""
    if not dtype.is_floating_point and dtype is not torch.bool:
        info = torch.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise ScalarRangeError(
                f"{_user_op(call)}: the scalar {value!r} does not fit {dtype} elements, whose range is "
                f"[{info.min}, {info.max}]",
                call.span,
                "keep the run-time value in range, or convert the tile to a wider dtype with pl.cast first",
            )
    elif dtype.is_floating_point and math.isfinite(value) and abs(value) > torch.finfo(dtype).max:
        raise ScalarRangeError(
            f"{_user_op(call)}: the scalar {value!r} does not fit {dtype} elements, whose largest value "
            f"is {torch.finfo(dtype).max:g}",
            call.span,
            "keep the run-time value in range, or compute in pl.FP32",
        )


def _scalar_operand(call: Call, args: Sequence[Any]) -> None:
    check_element_scalar(call, args[1], args[0].dtype)


@checks(tile.full)
def _full(call: Call, args: Sequence[Any]) -> None:
    assert isinstance(call.type, TileType)
    check_element_scalar(call, args[0], shared.torch_dtype(call.type.dtype))


def _integer_divisor(call: Call, divisor: torch.Tensor, dividend: torch.Tensor) -> None:
    if not dividend.is_floating_point() and bool((divisor == 0).any()):
        raise DivisionByZeroError(
            f"{_user_op(call)}: integer division by zero", call.span, "guard the divisor or divide in floats"
        )


@checks(tile.div, tile.rem, tile.fmod, tile.row_expand_div, tile.col_expand_div, reads_elements=True)
def _div(call: Call, args: Sequence[Any]) -> None:
    _integer_divisor(call, args[1], args[0])


@checks(tile.divs, tile.rems, tile.fmods)
def _divs(call: Call, args: Sequence[Any]) -> None:
    check_element_scalar(call, args[1], args[0].dtype)
    _integer_divisor(call, shared.element_scalar(args[1], args[0].dtype), args[0])


def _check_shift(call: Call, amount: torch.Tensor | int, bits: int) -> None:
    """A shift amount (every element of a tile of them) must lie in 0..bits-1."""
    if isinstance(amount, torch.Tensor):
        low, high = int(amount.min().item()), int(amount.max().item())
    else:
        low = high = int(amount)
    if low < 0 or high >= bits:
        bad = low if low < 0 else high
        raise ScalarRangeError(
            f"{_user_op(call)}: shift amount {bad} is outside 0..{bits - 1} for {bits}-bit elements",
            call.span,
            f"keep every shift amount from 0 to {bits - 1} (clamp it first, e.g. with pl.minimum)",
        )


@checks(tile.shl, tile.shr, reads_elements=True)
def _shift(call: Call, args: Sequence[Any]) -> None:
    if args[1].numel():
        _check_shift(call, args[1], _bits(call))


@checks(tile.shls, tile.shrs)
def _shift_scalar(call: Call, args: Sequence[Any]) -> None:
    _check_shift(call, args[1], _bits(call))


def _bits(call: Call) -> int:
    assert isinstance(call.type, TileType)
    return call.type.dtype.bits


def _second_scalar(call: Call, args: Sequence[Any]) -> None:
    """An op whose scalar operand is its third (``pl.sels(mask, x, s)``, the tile its second)."""
    check_element_scalar(call, args[2], args[1].dtype)


@checks(tile.addsc, tile.subsc)
def _carry_scalar(call: Call, args: Sequence[Any]) -> None:
    check_element_scalar(call, args[1], args[0].dtype)


@checks(scalar.cast)
def _scalar_cast(call: Call, args: Sequence[Any]) -> None:
    value, dtype = args[0], call.attrs["dtype"]
    if (
        isinstance(value, float)
        and not math.isfinite(value)
        and not dtype.is_float
        and dtype is not DataType.BOOL
    ):
        raise ScalarRangeError(
            f"pl.cast: {value} has no pl.{dtype.name} value",
            call.span,
            "a NaN or infinite float has no integer value: check where it comes from before casting it",
        )


# How the user writes the scalar ops that can divide by zero.
_OPERATORS = {scalar.floordiv: "//", scalar.truediv: "/", scalar.mod: "%"}


@checks(*_OPERATORS)
def _scalar_divisor(call: Call, args: Sequence[Any]) -> None:
    if args[1] == 0:
        divisor = call.args[1]
        named = f" ({divisor.name} is 0 at run time)" if isinstance(divisor, Var) else ""
        raise DivisionByZeroError(
            f"{args[0]} {_OPERATORS[call.op]} {args[1]}: division by zero{named}",
            call.span,
            "guard the divisor",
        )


def _checked(check: Check, impl: OpImpl) -> OpImpl:
    def run(call: Call, args: Sequence[Any]) -> Any:
        check(call, args)
        return impl(call, args)

    return run


def _checked_semantics() -> dict[str, OpImpl]:
    """The shared semantics of every op, each behind its checks (composed once, so running an op
    looks it up once)."""
    for name in ELEMENTWISE_BINARY:
        CHECKS.setdefault(getattr(tile, f"{name}s"), _scalar_operand)
    for op in (tile.ands, tile.ors, tile.xors, tile.cmps, tile.lrelu, tile.expands):
        CHECKS.setdefault(op, _scalar_operand)
    CHECKS.setdefault(tile.sels, _second_scalar)
    return {
        name: _checked(CHECKS[name], impl) if name in CHECKS else impl
        for name, impl in shared.SEMANTICS.items()
    }


SEMANTICS: dict[str, OpImpl] = _checked_semantics()


def _unwidened() -> dict[str, OpImpl]:
    """The checked semantics of each op that widens unsigned 16- and 32-bit tensor operands
    (:func:`pypto.ir.semantics.widened`), without the widening: for a call none of whose operands
    is such a tensor, which has nothing to widen."""
    found = {}
    for name, impl in shared.SEMANTICS.items():
        bare = getattr(impl, "__wrapped__", None)
        if bare is not None:
            found[name] = _checked(CHECKS[name], bare) if name in CHECKS else bare
    return found


UNWIDENED: dict[str, OpImpl] = _unwidened()
NUMBERS: dict[str, OpImpl] = shared.SEMANTICS  # each op's numbers alone (its checks made apart)


class Batching(Enum):
    """How an op's numbers are computed for the blocks of a batch (tiles ``[blocks, ...]``)."""

    WHOLE = "whole"  # its numbers on the batch's tiles are each block's, element by element: one call
    PER_BLOCK = "per block"  # its numbers index a tile's own dimensions: each block's tile on its own
    SCALAR = "scalar"  # scalar math: once where every block has the same operands, else per block
    OWN = "own"  # the batch has its own way (pypto_sim_a2a3.fast.batch)


def _batching() -> dict[str, Batching]:
    whole = [name for name, spec in OPS.items() if name.startswith("tile.") and spec.has(Elementwise)]
    per_block = [
        *(getattr(tile, n) for n in (*ROW_REDUCTIONS, *COL_REDUCTIONS, *ROW_EXPANDS, *COL_EXPANDS)),
        *(tile.row_expand, tile.part_add, tile.part_mul, tile.part_max, tile.part_min, tile.expand_clone),
        *(tile.concat, tile.reshape, tile.transpose, tile.slice, tile.set_validshape, tile.fillpad),
        tile.assemble,
    ]
    # (a scalar read from GM too: each block's from its own offsets, checked block by block)
    scalars = [name for name in SEMANTICS if name.startswith("scalar.")]
    own = [tile.load, tile.load_partial, tile.store, tile.store_partial, tile.move, tile.full, tile.create]
    own += [tile.matmul, tile.matmul_acc, tile.matmul_bias]
    table = {name: Batching.WHOLE for name in whole}
    table.update({name: Batching.PER_BLOCK for name in per_block})
    table.update({name: Batching.SCALAR for name in scalars})
    table.update({name: Batching.OWN for name in own})
    return {name: kind for name, kind in table.items() if name in NUMBERS}


BATCHING: dict[str, Batching] = _batching()
