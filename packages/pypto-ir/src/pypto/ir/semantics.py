"""What each op computes, on torch tensors: the numbers every backend shares.

Imported only by backends (it needs torch; the compiler layers never import it, so compiling
needs no torch). :data:`SEMANTICS` maps an op name to ``impl(call, args)``: the ``Call`` (for its
attrs, result type and span) and its evaluated operands (torch tensors for tiles and GM tensors,
Python numbers for scalars, tuples for offset lists); it returns a fresh value. The stores
(``tile.store``, ``tile.store_partial``, ``tile.store_atomic``) write (or, atomically, add into)
a region of a GM tensor and return it; ``tile.gather_row`` and ``tile.assemble`` write into their
destination tile (operand 0) and return it. A run-time valid shape arrives as an operand.

These are the numbers for operands the op accepts. What a backend does with operands it cannot
accept (a region outside its tensor, an integer division by zero, a scalar that does not fit the
tile's dtype) is the backend's own check, made before it calls the semantics: the a2a3 simulator
raises an error at the user's line.

Dtype behaviour: vector ops compute in the operand dtype and every result takes the dtype of the
call's result type; matmuls accumulate fp16/bf16 in fp32 (ints in int32); float->int casts round
as the ``mode`` attr says and saturate. The pipe ops' data movement (a lane's share of a tile) is
here too, as :func:`lane_share`, :func:`padded_share` and :func:`gathered`.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import torch

from pypto.ir.dtypes import DataType
from pypto.ir.extents import WINDOW_ATTR
from pypto.ir.nodes import Call, SplitMode
from pypto.ir.ops import (
    BITWISE_BINARY,
    COL_EXPANDS,
    COL_REDUCTIONS,
    ELEMENTWISE_BINARY,
    ELEMENTWISE_UNARY,
    ROW_EXPANDS,
    ROW_REDUCTIONS,
    SCALAR_BINARY,
    SCALAR_COMPARE,
    CastMode,
    CmpType,
    FormatFree,
    PadValue,
    array,
    debug,
    get_op,
    prefetch,
    scalar,
    split_axis,
    split_shape,
    tensor,
    tile,
)
from pypto.ir.types import TASK_ID, ArrayType, ScalarType, TensorType, TileType

OpImpl = Callable[[Call, Sequence[Any]], Any]

SEMANTICS: dict[str, OpImpl] = {}


def implements(*names: str) -> Callable[[OpImpl], OpImpl]:
    """Register the decorated function as the semantics of each op in ``names``:
    ``@implements(tile.exp)``. An op that computes a fresh value takes unsigned 16- and 32-bit
    operands through :func:`widened` (torch computes with few unsigned dtypes)."""

    def register(fn: OpImpl) -> OpImpl:
        for name in names:
            SEMANTICS[name] = widened(fn) if _computes_fresh(name) else fn
        return fn

    return register


def _computes_fresh(name: str) -> bool:
    """An op that computes with its elements (no pure data movement) and writes no operand."""
    spec = get_op(name)
    return not spec.has(FormatFree) and not spec.writes


# torch has no add, maximum, neg, ... of these: their elements are computed as int64 and wrap back.
_CARRIED = (torch.uint16, torch.uint32)


def widened(impl: OpImpl) -> OpImpl:
    """``impl`` with each ``uint16`` / ``uint32`` tensor operand given as ``int64`` (every value
    fits) and the result brought back to the call's dtype, wrapping modulo its range as the
    hardware's unsigned arithmetic does."""

    def run(call: Call, args: Sequence[Any]) -> Any:
        if not any(isinstance(a, torch.Tensor) and a.dtype in _CARRIED for a in args):
            return impl(call, args)
        wide = [a.to(torch.int64) if isinstance(a, torch.Tensor) and a.dtype in _CARRIED else a for a in args]
        result = impl(call, wide)
        if isinstance(result, torch.Tensor) and isinstance(call.type, (TileType, TensorType)):
            return result.to(torch_dtype(call.type.dtype))
        return result

    run.__wrapped__ = impl  # type: ignore[attr-defined]  # (for operands that are never tensors)
    return run


def torch_dtype(dtype: DataType) -> torch.dtype:
    """The torch dtype holding ``dtype`` elements, e.g. ``DataType.FP16 -> torch.float16``."""
    found = _TORCH_DTYPES.get(id(dtype))
    if found is None:
        found = _TORCH_DTYPES[id(dtype)] = getattr(torch, dtype.torch_name)
    return found


# id of a dtype (an enum member, which lives as long as the program) -> its torch dtype, looked
# up once (by id: an enum member's hash is a Python call)
_TORCH_DTYPES: dict[int, torch.dtype] = {}


def typed(call: Call, value: torch.Tensor) -> torch.Tensor:
    """``value`` in the dtype of the call's result type."""
    assert isinstance(call.type, (TileType, TensorType))
    return value.to(torch_dtype(call.type.dtype))


def region(tensor: torch.Tensor, offsets: Sequence[int], extent: Sequence[int]) -> torch.Tensor:
    """The view ``tensor[offsets : offsets + extent]`` (a backend checks the bounds first)."""
    if len(offsets) == 2 and len(extent) == 2:  # a 2-D tile, the common case, without a generator
        (row, col), (rows, cols) = offsets, extent
        return tensor[row : row + rows, col : col + cols]
    return tensor[tuple(slice(off, off + size) for off, size in zip(offsets, extent, strict=True))]


def leading(shape: Sequence[int]) -> tuple[slice, ...]:
    """The index of a tile's leading (valid) part of ``shape``."""
    return tuple(slice(0, n) for n in shape)


def valid_of(tile_type: Any) -> tuple[int, ...]:
    """A tile type's constant valid shape (its whole shape when it has none)."""
    assert isinstance(tile_type, TileType)
    return tile_type.valid_shape or tile_type.shape


# ---------------------------------------------------------------- elementwise

BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": lambda a, b: a / b if a.is_floating_point() else integer_quotient(a, b),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "rem": torch.remainder,
    "fmod": torch.fmod,
}


def integer_quotient(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a / b`` of integers, truncated toward zero. The one quotient that does not fit its dtype,
    the lowest value divided by -1, wraps to the lowest value (two's complement), as the
    operands' bits would: it is defined, never a trap of the host."""
    b = b.to(a.dtype) if b.dtype != a.dtype else b
    low = torch.iinfo(a.dtype).min
    overflow = (a == low) & (b == -1)
    quotient = torch.div(a, torch.where(overflow, torch.ones_like(b), b), rounding_mode="trunc")
    return torch.where(overflow, a, quotient)


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "recip": torch.reciprocal,
    "neg": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "sin": torch.sin,
    "cos": torch.cos,
}


def element_scalar(value: int | float | bool, dtype: torch.dtype) -> torch.Tensor:
    """A scalar operand as the vector unit reads it: in the tile's dtype."""
    return torch.tensor(value, dtype=dtype)


def _binary(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    return lambda call, args: typed(call, fn(args[0], args[1]))


def _binary_scalar(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    return lambda call, args: typed(call, fn(args[0], element_scalar(args[1], args[0].dtype)))


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> OpImpl:
    return lambda call, args: typed(call, fn(args[0]))


@implements(tile.concat)
def _concat(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return typed(call, torch.cat([args[0], args[1]], dim=1))


# ---------------------------------------------------------------- bitwise logic and shifts

BITWISE: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "and": torch.bitwise_and,
    "or": torch.bitwise_or,
    "xor": torch.bitwise_xor,
    "shl": torch.bitwise_left_shift,
    "shr": torch.bitwise_right_shift,  # arithmetic on signed integers
}


def _bitwise(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    """Two integer tiles in the result's dtype (the wider of two for and / or / xor; a shift's
    left operand's), the amount of a shift in it too."""

    def run(call: Call, args: Sequence[Any]) -> torch.Tensor:
        assert isinstance(call.type, TileType)
        dtype = torch_dtype(call.type.dtype)
        return fn(args[0].to(dtype), args[1].to(dtype))

    return run


def _bitwise_scalar(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    return lambda call, args: typed(call, fn(args[0], element_scalar(args[1], args[0].dtype)))


@implements(getattr(tile, "not"))
def _not(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return typed(call, torch.bitwise_not(args[0]))


# ---------------------------------------------------------------- comparisons and selections

COMPARISONS: dict[CmpType, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    CmpType.eq: torch.eq,
    CmpType.ne: torch.ne,
    CmpType.lt: torch.lt,
    CmpType.le: torch.le,
    CmpType.gt: torch.gt,
    CmpType.ge: torch.ge,
}


@implements(tile.cmp)
def _cmp(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return COMPARISONS[call.attrs.get("cmp_type", CmpType.eq)](args[0], args[1])


@implements(tile.cmps)
def _cmps(call: Call, args: Sequence[Any]) -> torch.Tensor:
    test = COMPARISONS[call.attrs.get("cmp_type", CmpType.eq)]
    return test(args[0], element_scalar(args[1], args[0].dtype))


@implements(tile.sel)
def _sel(call: Call, args: Sequence[Any]) -> torch.Tensor:
    mask, lhs, rhs = args[:3]
    return typed(call, torch.where(mask != 0, lhs, rhs))


@implements(tile.sels)
def _sels(call: Call, args: Sequence[Any]) -> torch.Tensor:
    mask, lhs, value = args[:3]
    return typed(call, torch.where(mask != 0, lhs, element_scalar(value, lhs.dtype)))


# ---------------------------------------------------------------- activations, carries, partial ops


@implements(tile.prelu)
def _prelu(call: Call, args: Sequence[Any]) -> torch.Tensor:
    x, slope = args[:2]
    return typed(call, torch.where(x > 0, x, x * slope))


@implements(tile.lrelu)
def _lrelu(call: Call, args: Sequence[Any]) -> torch.Tensor:
    x, slope = args
    return typed(call, torch.where(x > 0, x, x * element_scalar(slope, x.dtype)))


def _operand_value(value: Any, like: torch.Tensor) -> torch.Tensor:
    """A tile operand as it is, a scalar operand in the tile's dtype."""
    return value if isinstance(value, torch.Tensor) else element_scalar(value, like.dtype)


@implements(tile.addc, tile.addsc)
def _addc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    lhs, rhs, carry = args
    return typed(call, lhs + _operand_value(rhs, lhs) + carry)


@implements(tile.subc, tile.subsc)
def _subc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    lhs, rhs, carry = args
    return typed(call, lhs - _operand_value(rhs, lhs) + carry)


def _partial(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    """``fn`` of the two operands where both are valid, the valid one's element where only one is,
    0 outside the result's valid shape (the larger of the two regions)."""

    def run(call: Call, args: Sequence[Any]) -> torch.Tensor:
        lhs, rhs = args
        a, b = valid_of(call.args[0].type), valid_of(call.args[1].type)
        out = torch.zeros_like(lhs)
        out[leading(a)] = lhs[leading(a)]
        out[leading(b)] = rhs[leading(b)]
        both = tuple(min(m, n) for m, n in zip(a, b, strict=True))
        out[leading(both)] = fn(lhs[leading(both)], rhs[leading(both)])
        return typed(call, out)

    return run


PARTS = {
    "part_add": operator.add,
    "part_mul": operator.mul,
    "part_max": torch.maximum,
    "part_min": torch.minimum,
}


# ---------------------------------------------------------------- casts

ROUNDING_MODES: dict[CastMode, Callable[[torch.Tensor], torch.Tensor]] = {
    CastMode.round: lambda x: torch.sign(x) * torch.floor(torch.abs(x) + 0.5),  # half away from zero
    CastMode.rint: torch.round,  # half to even
    CastMode.floor: torch.floor,
    CastMode.ceil: torch.ceil,
    CastMode.trunc: torch.trunc,
}


def cast_tensor(call: Call, x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """``x`` as ``dtype``; float->int rounds per ``call.attrs["mode"]`` (a ``CastMode``, default
    ``round``: the op table's type rule admits no other value) and saturates."""
    target = torch_dtype(dtype)
    if not (x.is_floating_point() and dtype.is_integer):
        return x.to(target)
    info = torch.iinfo(target)
    rounded = ROUNDING_MODES[call.attrs.get("mode", CastMode.round)](x.to(torch.float64))
    return rounded.clamp(info.min, info.max).to(target)


@implements(tile.cast)
def _cast(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return cast_tensor(call, args[0], call.attrs["dtype"])


@implements(scalar.cast)
def _scalar_cast(call: Call, args: Sequence[Any]) -> int | float | bool:
    value = args[0]
    # torch.tensor infers bool and int64 itself but would narrow a Python float to float32.
    x = torch.tensor(value, dtype=torch.float64) if isinstance(value, float) else torch.tensor(value)
    return cast_tensor(call, x, call.attrs["dtype"]).item()


# ---------------------------------------------------------------- cube


def product(call: Call, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` (transposed per the a_trans/b_trans attrs) in the cube's accumulation dtype."""
    a = a.T if call.attrs.get("a_trans") else a
    b = b.T if call.attrs.get("b_trans") else b
    acc = torch.float32 if a.is_floating_point() else torch.int32
    return a.to(acc) @ b.to(acc)


@implements(tile.matmul)
def _matmul(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return typed(call, product(call, args[0], args[1]))


@implements(tile.matmul_acc)
def _matmul_acc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    acc, a, b = args
    result = product(call, a, b)
    return typed(call, acc.to(result.dtype) + result)


@implements(tile.matmul_bias)
def _matmul_bias(call: Call, args: Sequence[Any]) -> torch.Tensor:
    a, b, bias = args
    result = product(call, a, b)
    return typed(call, result + bias.to(result.dtype))


@implements(tile.gemv)
def _gemv(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return typed(call, product(call, args[0], args[1]))


@implements(tile.gemv_acc)
def _gemv_acc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    acc, a, b = args
    result = product(call, a, b)
    return typed(call, acc.to(result.dtype) + result)


@implements(tile.gemv_bias)
def _gemv_bias(call: Call, args: Sequence[Any]) -> torch.Tensor:
    a, b, bias = args
    result = product(call, a, b)
    return typed(call, result + bias.to(result.dtype))


@implements(tile.batch_matmul)
def _batch_matmul(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Each matrix of the batch as the cube multiplies it (in its accumulation dtype); the leading
    # dims broadcast as torch.matmul broadcasts them.
    a, b = args
    a = a.transpose(-1, -2) if call.attrs.get("a_trans") else a
    b = b.transpose(-1, -2) if call.attrs.get("b_trans") else b
    acc = torch.float32 if a.is_floating_point() else torch.int32
    return typed(call, torch.matmul(a.to(acc), b.to(acc)))


# ---------------------------------------------------------------- data movement


def _new_tile(call: Call, valid: Sequence[int], data: torch.Tensor) -> torch.Tensor:
    """A tile of the call's type holding ``data`` in its leading ``valid`` part and, elsewhere, the
    load's ``pad_value`` (zeros when it has none)."""
    assert isinstance(call.type, TileType)
    shape = call.type.shape
    dtype = torch_dtype(call.type.dtype)
    if tuple(valid) == tuple(shape):  # all of it is data: nothing to fill first
        return torch.empty(shape, dtype=dtype).copy_(data)
    tile = torch.full(shape, load_padding(call, dtype), dtype=dtype)
    tile[leading(valid)] = data
    return tile


def load_padding(call: Call, dtype: torch.dtype) -> float | int:
    """What a load writes outside the region it reads: its ``pad_value``, else 0."""
    pad = call.attrs.get("pad_value") if call.op in (tile.load, tile.load_partial) else None
    return 0 if pad is None or pad is PadValue.null else pad_scalar(pad, dtype)


@implements(tile.load)
def _load(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tensor, offsets = args
    valid = valid_of(call.type)
    return _new_tile(call, valid, region(tensor, offsets, valid))


@implements(tile.load_partial)
def _load_partial(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tensor, offsets, valid = args
    return _new_tile(call, valid, region(tensor, offsets, valid))


@implements(tile.store)
def _store(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets, tensor = args
    valid = valid_of(call.args[0].type)
    region(tensor, offsets, valid).copy_(tile[leading(valid)])
    result: torch.Tensor = tensor
    return result


@implements(tile.store_partial)
def _store_partial(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets, tensor, valid = args
    region(tensor, offsets, valid).copy_(tile[leading(valid)])
    result: torch.Tensor = tensor
    return result


@implements(tile.store_atomic)
def _store_atomic(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # AtomicType.Add: the tile's valid region is added to what global memory holds.
    tile, offsets, tensor = args[:3]
    valid = args[3] if len(args) == 4 else valid_of(call.args[0].type)
    region(tensor, offsets, valid).add_(tile[leading(valid)].to(tensor.dtype))
    result: torch.Tensor = tensor
    return result


@implements(tile.gather_row)
def _gather_row(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing: the rows land in the destination tile's own bytes; with a valid shape
    # only that leading part of the window is copied.
    dst, src, dst_offsets, src_offsets = args[:4]
    extent = args[4] if len(args) == 5 else tuple(call.attrs["shape"])
    region(dst, dst_offsets, extent).copy_(region(src, src_offsets, extent))
    result: torch.Tensor = dst
    return result


@implements(scalar.read, tile.read)
def _read(call: Call, args: Sequence[Any]) -> int | float | bool:
    tensor, offsets = args
    return scalar_result(call, region(tensor, offsets, (1,) * tensor.dim()).item())


@implements(scalar.write, tile.write)
def _write(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing: the element is written in the tensor's (or tile's) own storage.
    target, offsets, value = args
    region(target, offsets, (1,) * target.dim()).fill_(element_scalar(value, target.dtype))
    result: torch.Tensor = target
    return result


@implements(tile.move)
def _move(call: Call, args: Sequence[Any]) -> torch.Tensor:
    result: torch.Tensor = args[0].clone()
    return result


@implements(tile.create, tensor.create)
def _create(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # New tiles and tensors are cleared so results never depend on stale bytes.
    assert isinstance(call.type, (TileType, TensorType))
    return torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))


@implements(tensor.slice)
def _view(call: Call, args: Sequence[Any]) -> torch.Tensor:
    """A view the orchestration makes of a tensor (``call`` with its window's extents of this run):
    the elements of the window, no copy, so what a kernel writes through it lands in the tensor. A
    window that runs past the tensor's end is cut there, and keeps the window it declares."""
    tensor, offsets = args[0], args[1]
    window = tuple(int(n) for n in call.attrs["shape"])
    index = tuple(
        slice(off, min(off + n, full)) for off, n, full in zip(offsets, window, tensor.shape, strict=True)
    )
    view: torch.Tensor = tensor[index]
    if tuple(view.shape) != window:
        setattr(view, WINDOW_ATTR, window)
    return view


# ---------------------------------------------------------------- reductions and broadcasts

# The whole tile takes part (a scratch operand holds nothing the result needs): a partial tile is
# padded with the reduction's identity first (pl.fillpad). An index of an extremum is the first
# one's.
REDUCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "row_max": lambda x: x.amax(dim=1, keepdim=True),
    "row_sum": lambda x: x.sum(dim=1, keepdim=True),
    "row_min": lambda x: x.amin(dim=1, keepdim=True),
    "row_prod": lambda x: x.prod(dim=1, keepdim=True),
    "row_argmax": lambda x: x.argmax(dim=1, keepdim=True),
    "row_argmin": lambda x: x.argmin(dim=1, keepdim=True),
    "col_sum": lambda x: x.sum(dim=0, keepdim=True),
    "col_max": lambda x: x.amax(dim=0, keepdim=True),
    "col_min": lambda x: x.amin(dim=0, keepdim=True),
    "col_prod": lambda x: x.prod(dim=0, keepdim=True),
    "col_argmax": lambda x: x.argmax(dim=0, keepdim=True),
    "col_argmin": lambda x: x.argmin(dim=0, keepdim=True),
}
# How a column reduction joins two partial results when it reduces as a binary tree.
TREE_JOINS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "col_sum": operator.add,
    "col_prod": operator.mul,
    "col_max": torch.maximum,
    "col_min": torch.minimum,
}


def tree_reduce(x: torch.Tensor, join: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """The rows of ``x`` joined pairwise, level by level, in x's dtype (the order a column
    reduction with a scratch tile adds in): [R, C] -> [1, C]."""
    while x.shape[0] > 1:
        half = x.shape[0] // 2
        joined = join(x[:half], x[half : 2 * half])
        x = torch.cat([joined, x[2 * half :]]) if x.shape[0] % 2 else joined
    return x


def _reduction(name: str) -> OpImpl:
    """A reduction; a column reduction given a scratch tile (``tmp_tile``) reduces as a binary tree."""
    reduce = REDUCTIONS[name]
    tree = TREE_JOINS.get(name)

    def run(call: Call, args: Sequence[Any]) -> torch.Tensor:
        if tree is not None and len(args) == 2:
            return typed(call, tree_reduce(args[0], tree))
        return typed(call, reduce(args[0]))

    return run


# How each broadcast op combines x with the repeated vector v.
EXPANDS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": BINARY["div"],
    "max": torch.maximum,
    "min": torch.minimum,
    "expdif": lambda x, v: torch.exp(x - v),
}


def _expand(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> OpImpl:
    return lambda call, args: typed(call, fn(args[0], args[1].expand_as(args[0])))


@implements(tile.row_expand, tile.col_expand)
def _expand_plain(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return typed(call, args[1].expand_as(args[0]))


@implements(tile.expand_clone)
def _expand_clone(call: Call, args: Sequence[Any]) -> torch.Tensor:
    result: torch.Tensor = args[0].expand(tuple(call.attrs["shape"])).clone()
    return result


@implements(tile.expands)
def _expands(call: Call, args: Sequence[Any]) -> torch.Tensor:
    x, value = args
    return torch.full_like(x, element_scalar(value, x.dtype).item())


# ---------------------------------------------------------------- views, fills, tile assembly


@implements(tile.reshape)
def _reshape(call: Call, args: Sequence[Any]) -> torch.Tensor:
    result: torch.Tensor = args[0].reshape(tuple(call.attrs["shape"])).clone()
    return result


@implements(tile.transpose)
def _transpose(call: Call, args: Sequence[Any]) -> torch.Tensor:
    result: torch.Tensor = args[0].transpose(call.attrs["axis1"], call.attrs["axis2"]).contiguous().clone()
    return result


@implements(tile.transpose_view)
def _transpose_view(call: Call, args: Sequence[Any]) -> torch.Tensor:
    result: torch.Tensor = args[0].transpose(0, 1).contiguous().clone()
    return result


@implements(tile.slice, tile.extract)
def _slice(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets = args
    return region(tile, offsets, tuple(call.attrs["shape"])).clone()


@implements(tile.reinterpret_view)
def _reinterpret_view(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # The same bytes, row-major, read as the new dtype's elements in the result's shape.
    assert isinstance(call.type, TileType)
    viewed = args[0].contiguous().view(torch_dtype(call.type.dtype))
    result: torch.Tensor = viewed.reshape(call.type.shape).clone()
    return result


@implements(tile.fillpad_expand)
def _fillpad_expand(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, TileType)
    x = args[0]
    valid = args[1] if len(args) == 2 else valid_of(call.args[0].type)
    expanded = torch.full(
        call.type.shape, pad_scalar(call.attrs.get("pad_value", PadValue.zero), x.dtype), dtype=x.dtype
    )
    expanded[leading(valid)] = x[leading(valid)]
    return expanded


@implements(tile.set_validshape)
def _set_validshape(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # The elements stay as they are; only what later ops read as valid changes.
    result: torch.Tensor = args[0].clone()
    return result


def pad_scalar(pad: PadValue, dtype: torch.dtype) -> float | int:
    """The value ``pad`` stands for in ``dtype``: 0, 1, or the lowest / highest value (±inf for floats)."""
    if pad is PadValue.zero:
        return 0
    if pad is PadValue.one:
        return 1
    if dtype.is_floating_point:
        return -torch.inf if pad is PadValue.min else torch.inf
    info = torch.iinfo(dtype)
    return info.min if pad is PadValue.min else info.max


@implements(tile.fillpad)
def _fillpad(call: Call, args: Sequence[Any]) -> torch.Tensor:
    x = args[0]
    valid = args[1] if len(args) == 2 else valid_of(call.args[0].type)
    padded = torch.full_like(x, pad_scalar(call.attrs["pad_value"], x.dtype))
    padded[leading(valid)] = x[leading(valid)]
    return padded


@implements(tile.full)
def _full(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, TileType)
    return element_scalar(args[0], torch_dtype(call.type.dtype)).expand(call.type.shape).clone()


@implements(tile.assemble)
def _assemble(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing, like gather_row: the source lands in the destination tile's own bytes.
    dst, src, offsets = args
    region(dst, offsets, tuple(src.shape)).copy_(src)
    result: torch.Tensor = dst
    return result


# ---------------------------------------------------------------- generators


@implements(tile.ci)
def _ci(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # start, start + 1, ... (descending: start - 1, ...) at each row-major position, wrapping in
    # the dtype as the vector unit's counter does.
    assert isinstance(call.type, TileType)
    steps = torch.arange(prod(call.type.shape), dtype=torch.int64)
    values = int(args[0]) - steps if call.attrs.get("descending") else int(args[0]) + steps
    return values.reshape(call.type.shape).to(torch_dtype(call.type.dtype))


_WORD = 0xFFFFFFFF


def _times(x: torch.Tensor, factor: int) -> torch.Tensor:
    """``x * factor`` modulo 2**32 for 32-bit words held in int64 (in 16-bit halves: no overflow)."""
    low, high = factor & 0xFFFF, factor >> 16
    return (x * low + ((x * high) << 16)) & _WORD


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (xor-shift-multiply rounds) of each word: every bit of the input
    moves every bit of the output."""
    x = _times(x ^ (x >> 16), 0x7FEB352D)
    x = _times(x ^ (x >> 15), 0x846CA68B)
    return x ^ (x >> 16)


def random_words(seed: int, offset: int, count: int) -> torch.Tensor:
    """The 32-bit words ``pl.random`` draws for positions ``offset .. offset + count - 1`` of
    ``seed`` (int64 tensor): a hash of the seed and the position, so a block of a tensor gets the
    same numbers as the whole tensor has there."""
    key = _mix(torch.tensor(seed & _WORD, dtype=torch.int64) ^ 0x9E3779B9)
    positions = (torch.arange(count, dtype=torch.int64) + offset) & _WORD
    return _mix(_mix(positions ^ key) ^ key)


# Bits of a float dtype's uniform draw: as many as its significand holds, so none rounds to 1.
_UNIFORM_BITS = {DataType.FP16: 11, DataType.BF16: 8, DataType.FP32: 24}


@implements(tile.random)
def _random(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, TileType)
    offset = int(args[1]) if len(args) > 1 else 0
    words = random_words(int(args[0]), offset, prod(call.type.shape)).reshape(call.type.shape)
    dtype = call.type.dtype
    if dtype.is_float:
        bits = _UNIFORM_BITS[dtype]
        uniform: torch.Tensor = (words >> (32 - bits)).to(torch.float64) / 2**bits
        return uniform.to(torch_dtype(dtype))
    return words.to(torch_dtype(dtype))  # the low bits, wrapping over the whole range


@implements(tile.tri)
def _tri(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, TileType)
    rows, cols = call.type.shape
    i = torch.arange(rows).unsqueeze(1)
    j = torch.arange(cols).unsqueeze(0)
    shifted = i + int(args[0])
    ones = j >= shifted if call.attrs.get("upper") else j <= shifted
    valid = tuple(int(n) for n in args[1]) if len(args) > 1 else valid_of(call.type)
    mask = torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))  # only the valid part is written
    mask[leading(valid)] = ones[leading(valid)].to(mask.dtype)
    return mask


# ---------------------------------------------------------------- gather, scatter, sort


def positions(index: torch.Tensor) -> torch.Tensor:
    """An index operand's entries, flat, as int64."""
    return index.reshape(-1).to(torch.int64)


def write_last_wins(
    target: torch.Tensor, places: torch.Tensor, values: torch.Tensor, flat: bool = False
) -> None:
    """``target[places[k]] = values[k]`` in order: where two entries name one place, the later one
    is what stays. A place is a row of ``target`` (``values[k]`` a row), or with ``flat`` an
    element at that row-major position (``target`` may be a strided view either way)."""
    order = torch.arange(places.numel())
    unique, inverse = torch.unique(places, return_inverse=True)
    last = torch.full((unique.numel(),), -1, dtype=torch.int64).scatter_reduce(
        0, inverse, order, reduce="amax"
    )
    at = torch.unravel_index(places[last], tuple(target.shape)) if flat else places[last]
    target[at] = values[last].to(target.dtype)


@implements(tile.gather)
def _gather(call: Call, args: Sequence[Any]) -> torch.Tensor:
    src, index = args
    return typed(call, torch.gather(src, 1, index.to(torch.int64)))


@implements(tile.scatter)
def _scatter(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing: each row's source elements land in the input tile's own bytes.
    dst, index, src = args
    rows = torch.arange(dst.shape[0]).unsqueeze(1).expand_as(index)
    flat = (rows * dst.shape[1] + index.to(torch.int64)).reshape(-1)
    write_last_wins(dst, flat, src.reshape(-1), flat=True)
    result: torch.Tensor = dst
    return result


@implements(tile.scatter_update)
def _scatter_update(call: Call, args: Sequence[Any]) -> torch.Tensor:
    dst, index, src = args
    write_last_wins(dst, positions(index), src)
    result: torch.Tensor = dst
    return result


def wrapped_positions(places: torch.Tensor, count: int, policy: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions an index names among ``count``, by an out-of-range policy, and which are in range:
    ``clamp`` to the ends, ``wrap`` around, ``zero``/``undefined`` as they are (a backend checks an
    undefined one first)."""
    if policy == "clamp":
        places = places.clamp(0, count - 1)
    elif policy == "wrap":
        places = places.remainder(count)
    inside = (places >= 0) & (places < count)
    return places.clamp(0, max(count - 1, 0)), inside


@implements(tile.mgather)
def _mgather(call: Call, args: Sequence[Any]) -> torch.Tensor:
    src, index = args
    policy = call.attrs.get("gather_oob", "undefined")
    rows = call.attrs.get("coalesce", "row") == "row"
    source = src if rows else src.reshape(-1)
    places, inside = wrapped_positions(positions(index), source.shape[0], policy)
    picked = source[places].clone()
    picked[~inside] = 0  # a row (element) past the end reads as zeros (gather_oob="zero")
    assert isinstance(call.type, TileType)
    return typed(call, picked.reshape(call.type.shape))


@implements(tile.mscatter)
def _mscatter(call: Call, args: Sequence[Any]) -> torch.Tensor:
    src, index, output = args
    if call.attrs.get("coalesce", "row") == "row":
        write_last_wins(output, positions(index), src)
    else:
        write_last_wins(output, positions(index), src.reshape(-1), flat=True)
    result: torch.Tensor = output
    return result


@implements(tile.gatherb)
def _gatherb(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Each UINT32 byte offset selects the 32 bytes of the source tile from there.
    src, offsets = args
    block = 32
    data = src.contiguous().view(torch.uint8).reshape(-1)
    starts = offsets.to(torch.int64).unsqueeze(-1) + torch.arange(block)
    picked = data[starts].reshape(offsets.shape[0], -1)
    assert isinstance(call.type, TileType)
    blocks: torch.Tensor = picked.contiguous().view(torch_dtype(call.type.dtype))
    return blocks.reshape(call.type.shape).clone()


PAIR_BYTES = 8


def to_pairs(values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """Sorted (value, index) pairs as the vector unit writes them, 8 bytes each: the value, zero
    padding to 4 bytes, the UINT32 index; ``values`` [R, n] give [R, n * 8 / value bytes]."""
    rows, count = values.shape
    width = values.element_size()
    pairs = torch.zeros(rows, count, PAIR_BYTES, dtype=torch.uint8)
    pairs[..., :width] = values.contiguous().view(torch.uint8).reshape(rows, count, width)
    pairs[..., 4:] = (
        indices.to(torch.int64).to(torch.int32).contiguous().view(torch.uint8).reshape(rows, count, 4)
    )
    return pairs.view(values.dtype).reshape(rows, -1)


def from_pairs(pairs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The values and the index bytes (``[R, n, 4]``) of a tile of pairs."""
    rows = pairs.shape[0]
    raw = pairs.contiguous().view(torch.uint8).reshape(rows, -1, PAIR_BYTES)
    width = pairs.element_size()
    values = raw[..., :width].contiguous().view(pairs.dtype).reshape(rows, -1)
    return values, raw[..., 4:]


def sorted_groups(
    values: torch.Tensor, carried: torch.Tensor, group: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's groups of ``group`` values sorted largest first (ties keep their order), with
    ``carried`` (one entry per value, trailing dims kept) in the same order."""
    rows, count = values.shape
    grouped = values.reshape(rows, count // group, group)
    order = torch.sort(grouped.to(torch.float64), dim=-1, descending=True, stable=True).indices
    picked = torch.gather(grouped, -1, order).reshape(rows, count)
    flat = (order + torch.arange(0, count, group).reshape(1, -1, 1)).reshape(rows, count)
    moved = carried[torch.arange(rows).unsqueeze(1), flat]
    return picked, moved


@implements(tile.sort32)
def _sort32(call: Call, args: Sequence[Any]) -> torch.Tensor:
    src = args[0]
    rows, cols = src.shape
    indices = args[1] if len(args) > 1 else torch.arange(cols).expand(rows, cols)
    values, order = sorted_groups(src, indices.to(torch.int64), 32)
    return to_pairs(values, order)


def _merged(pairs: torch.Tensor, group: int) -> torch.Tensor:
    """Rows of pairs with each group of ``group`` pairs merged largest first (a trailing group
    shorter)."""
    values, index_bytes = from_pairs(pairs)
    rows, count = values.shape
    out_values, out_bytes = values.clone(), index_bytes.clone()
    for start in range(0, count, group):
        end = min(start + group, count)
        v, b = sorted_groups(values[:, start:end], index_bytes[:, start:end], end - start)
        out_values[:, start:end], out_bytes[:, start:end] = v, b
    index = out_bytes.contiguous().view(torch.int32).reshape(rows, count)
    return to_pairs(out_values, index)


@implements(tile.mrgsort_format1)
def _mrgsort_runs(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return _merged(args[0], 4 * int(call.attrs["block_len"]))


@implements(tile.mrgsort_format2)
def _mrgsort_lists(call: Call, args: Sequence[Any]) -> torch.Tensor:
    joined = torch.cat(list(args), dim=1)
    return _merged(joined, joined.shape[1])


# ---------------------------------------------------------------- scalar (index) math

SCALAR_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "truediv": operator.truediv,
    "mod": operator.mod,
    "min": min,
    "max": max,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}


def scalar_result(call: Call, value: Any) -> int | float | bool:
    """``value`` as the Python number of the call's scalar result type."""
    assert isinstance(call.type, ScalarType)
    dtype = call.type.dtype
    number = _NUMBERS.get(id(dtype))
    if number is None:
        number = _NUMBERS[id(dtype)] = bool if dtype is DataType.BOOL else float if dtype.is_float else int
    return number(value)


# id of a scalar dtype -> its Python number type, found once (by id, as _TORCH_DTYPES)
_NUMBERS: dict[int, Callable[[Any], int | float | bool]] = {}


def _scalar_binary(fn: Callable[[Any, Any], Any]) -> OpImpl:
    return lambda call, args: scalar_result(call, fn(args[0], args[1]))


# ---------------------------------------------------------------- scalar arrays

# A scalar array's value is a tuple of Python numbers, one per element; array.update_element gives a new one.
# A pl.TASK_ID array (in an orchestration) holds the backend's task handles as they are, and None
# in every element never written: an id that names no task, so a deps= on it waits for nothing.


@implements(array.create)
def _array_create(call: Call, args: Sequence[Any]) -> tuple[Any, ...]:
    # Fresh arrays are zeroed, like new tiles: results never depend on stale scalar memory.
    assert isinstance(call.type, ArrayType)
    if call.type.dtype is DataType.TASK_ID:
        return (None,) * call.type.size
    zero: int | float = 0.0 if call.type.dtype.is_float else 0
    return (zero,) * call.type.size


@implements(array.get_element)
def _array_get(call: Call, args: Sequence[Any]) -> Any:
    values, index = args
    element = values[int(index)]
    return element if call.type == TASK_ID else scalar_result(call, element)


@implements(array.update_element)
def _array_set(call: Call, args: Sequence[Any]) -> tuple[Any, ...]:
    values, index, value = args
    assert isinstance(call.type, ArrayType)
    if call.type.dtype is DataType.TASK_ID:
        stored = value  # a task handle, kept as the backend made it
    else:
        stored = element_scalar(value, torch_dtype(call.type.dtype)).item()  # as the element dtype holds it
    at = int(index)
    return (*values[:at], stored, *values[at + 1 :])


@implements(scalar.neg)
def _scalar_neg(call: Call, args: Sequence[Any]) -> Any:
    return -args[0]


# ---------------------------------------------------------------- a lane's share of a pipe tile


def lane_share(
    data: torch.Tensor, mode: SplitMode, lane: int, lead: int = 0, stride: int | None = None
) -> torch.Tensor | None:
    """Lane ``lane``'s rows (UP_DOWN) or columns (LEFT_RIGHT) of ``data``; lane 0 takes the
    ceiling half, or ``stride`` of them when the split is balanced (``lane_stride=``: lane L owns
    ``[L * stride, L * stride + stride)``). Under NONE lane 0 takes the whole tile and lane 1
    nothing (None: a token). ``data`` may hold several tiles along ``lead`` leading dimensions (a
    simulator's batch)."""
    axis = split_axis(mode)
    if axis is None:
        return data if lane == 0 else None
    axis += lead
    extent = data.shape[axis]
    half = stride or -(-extent // 2)
    start = min(lane * half, extent)
    return data.narrow(axis, start, min(half, extent - start))


def padded_share(
    data: torch.Tensor, mode: SplitMode, lane: int, stride: int | None = None
) -> torch.Tensor | None:
    """What lane ``lane`` pops of a cube tile pushed with ``mode``: its share (``stride`` rows or
    columns of it with ``lane_stride=``), zero-padded to ``split_shape`` (the short half of an odd
    extent), or None (a token)."""
    share = lane_share(data, mode, lane, stride=stride)
    if share is None or split_axis(mode) is None:
        return share
    padded = torch.zeros(split_shape(tuple(data.shape), mode), dtype=data.dtype)
    padded[leading(share.shape)] = share
    return padded


def gathered(shares: Sequence[torch.Tensor], mode: SplitMode) -> torch.Tensor:
    """What the cube pops of the lanes' pushes with ``mode``: the shares side by side along the
    split axis, in lane order (lane 0's tile alone under NONE)."""
    axis = split_axis(mode)
    return shares[0] if axis is None else torch.cat(list(shares), dim=axis)


# ---------------------------------------------------------------- asynchronous prefetch
#
# A prefetch only warms L2: it computes nothing, so its numbers are its handles. Each handle is
# a fresh object (compared by identity): an event and a session know the context they belong to,
# so a backend can tell a wait on a foreign event.


class PrefetchContext:
    """The value of a ``pl.PrefetchAsyncContext``."""


@dataclass(eq=False)
class PrefetchEvent:
    """The value of a ``pl.AsyncEvent``: the prefetch of ``nbytes`` issued through ``context``;
    ``ready`` is when a timing backend models it landed (0 where time is not modeled)."""

    context: PrefetchContext
    nbytes: int
    ready: int = 0


@dataclass(eq=False)
class PrefetchSession:
    """The value of a ``pl.AsyncSession``: the session of ``context``."""

    context: PrefetchContext


@implements(prefetch.make_context)
def _make_context(call: Call, args: Sequence[Any]) -> PrefetchContext:
    return PrefetchContext()


def prefetched_bytes(call: Call) -> int:
    """The bytes ``prefetch.async_prefetch`` pulls into L2: its whole source tensor."""
    src = call.args[0].type
    assert isinstance(src, TensorType)
    return src.nbytes


@implements(prefetch.async_prefetch)
def _async_prefetch(call: Call, args: Sequence[Any]) -> PrefetchEvent:
    return PrefetchEvent(args[1], prefetched_bytes(call))


@implements(prefetch.session)
def _session(call: Call, args: Sequence[Any]) -> PrefetchSession:
    return PrefetchSession(args[0])


@implements(prefetch.wait)
def _wait(call: Call, args: Sequence[Any]) -> bool:
    return True


# ---------------------------------------------------------------- kernel debugging
#
# pl.debug.print and pl.debug.breakpoint only look: a backend without a kernel debugger drops them
# with a warning (a2a3sim shows them: pypto_sim_a2a3.engine.debugger).


class DebugOpIgnored(UserWarning):
    """A ``pl.debug`` op ran on a backend that cannot show it: it was dropped."""


@implements(debug.print, debug.breakpoint)
def _dropped_debug_op(call: Call, args: Sequence[Any]) -> None:
    where = f" at {call.span.file}:{call.span.line}" if call.span is not None else ""
    warnings.warn(
        f"{call.op}{where} is ignored: this backend has no kernel debugger (a2a3sim has)",
        DebugOpIgnored,
        stacklevel=2,
    )


def _register_families() -> None:
    for name in ELEMENTWISE_BINARY:
        implements(getattr(tile, name))(_binary(BINARY[name]))
        implements(getattr(tile, f"{name}s"))(_binary_scalar(BINARY[name]))
    for name in ELEMENTWISE_UNARY:
        implements(getattr(tile, name))(_unary(UNARY[name]))
    for name in BITWISE_BINARY:
        implements(getattr(tile, name))(_bitwise(BITWISE[name]))
        implements(getattr(tile, f"{name}s"))(_bitwise_scalar(BITWISE[name]))
    for name in ROW_REDUCTIONS + COL_REDUCTIONS:
        implements(getattr(tile, name))(_reduction(name))
    for name in (*ROW_EXPANDS, *COL_EXPANDS):
        if name != "col_expand":  # the plain repeat, above
            implements(getattr(tile, name))(_expand(EXPANDS[name.rsplit("_", 1)[1]]))
    for name, fn in PARTS.items():
        implements(getattr(tile, name))(_partial(fn))
    for name in SCALAR_BINARY + SCALAR_COMPARE:
        implements(getattr(scalar, name))(_scalar_binary(SCALAR_OPS[name]))


_register_families()
