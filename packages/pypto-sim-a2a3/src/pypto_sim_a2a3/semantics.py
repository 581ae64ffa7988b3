"""What each op computes: one function per op name, looked up in :data:`SEMANTICS`.

An implementation takes the ``Call`` (for its attrs, result type and span) and its evaluated
operands (torch tensors for tiles and GM tensors, Python numbers for scalars, tuples for offset
lists) and returns a fresh value; the interpreter copies tile results into their buffers. The
stores (``tile.store``, ``tile.store_partial``, ``tile.store_atomic``) have an effect: they write
(or, atomically, add into) a region of a GM tensor. ``tile.gather_row`` and ``tile.assemble`` are
destination-passing: they write into their destination tile's buffer (the op table says they
write operand 0) and return that tile. A run-time valid shape arrives as an operand (a tuple).

Hardware dtype behaviour: vector ops compute in the operand dtype, matmuls accumulate fp16/bf16
in fp32 (ints in int32), and float->int casts round as the ``mode`` attr says and saturate.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch

from pypto.ir import Call, CastMode, DataType, PadValue, ScalarType, TensorType, TileType, Var
from pypto.ir.ops import user_name
from pypto_sim_a2a3.errors import DivisionByZeroError, OutOfBoundsError, ScalarRangeError
from pypto_sim_a2a3.memory import torch_dtype

OpImpl = Callable[[Call, Sequence[Any]], Any]

SEMANTICS: dict[str, OpImpl] = {}


def implements(*names: str) -> Callable[[OpImpl], OpImpl]:
    """Register the decorated function as the semantics of each op in ``names``."""

    def register(fn: OpImpl) -> OpImpl:
        for name in names:
            SEMANTICS[name] = fn
        return fn

    return register


def _result(call: Call, value: torch.Tensor) -> torch.Tensor:
    """``value`` in the dtype of the call's result type."""
    assert isinstance(call.type, (TileType, TensorType))
    return value.to(torch_dtype(call.type.dtype))


def _user_op(call: Call) -> str:
    """The op as the user wrote it: ``pl.add`` for ``tile.adds``, ``pl.load`` for ``tile.load_partial``."""
    return user_name(call.op)


# ---------------------------------------------------------------- elementwise


def _divide(call: Call, lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
    if lhs.is_floating_point():
        return lhs / rhs
    if bool((rhs == 0).any()):
        raise DivisionByZeroError(
            f"{_user_op(call)}: integer division by zero", call.span, "guard the divisor or divide in floats"
        )
    return torch.div(lhs, rhs, rounding_mode="trunc")


_BINARY: dict[str, Callable[[Call, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": lambda call, a, b: a + b,
    "sub": lambda call, a, b: a - b,
    "mul": lambda call, a, b: a * b,
    "div": _divide,
    "maximum": lambda call, a, b: torch.maximum(a, b),
    "minimum": lambda call, a, b: torch.minimum(a, b),
}

_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "recip": torch.reciprocal,
    "neg": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
}


def _binary_impl(name: str) -> OpImpl:
    fn = _BINARY[name]
    return lambda call, args: _result(call, fn(call, args[0], args[1]))


def element_scalar(call: Call, value: int | float | bool, dtype: torch.dtype) -> torch.Tensor:
    """A scalar operand as the vector unit reads it: in the tile's dtype. The type rule rejects a
    float or an out-of-range constant for an integer tile; a run-time integer out of range stops here."""
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
    return torch.tensor(value, dtype=dtype)


def _binary_scalar_impl(name: str) -> OpImpl:
    fn = _BINARY[name]

    def impl(call: Call, args: Sequence[Any]) -> torch.Tensor:
        tile, scalar = args
        return _result(call, fn(call, tile, element_scalar(call, scalar, tile.dtype)))

    return impl


def _unary_impl(name: str) -> OpImpl:
    fn = _UNARY[name]
    return lambda call, args: _result(call, fn(args[0]))


@implements("tile.concat")
def _concat(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return _result(call, torch.cat([args[0], args[1]], dim=1))


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


@implements("tile.cast")
def _cast(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return cast_tensor(call, args[0], call.attrs["dtype"])


@implements("scalar.cast")
def _scalar_cast(call: Call, args: Sequence[Any]) -> int | float | bool:
    value = args[0]
    dtype = call.attrs["dtype"]
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
    # torch.tensor infers bool and int64 itself but would narrow a Python float to float32.
    x = torch.tensor(value, dtype=torch.float64) if isinstance(value, float) else torch.tensor(value)
    return cast_tensor(call, x, call.attrs["dtype"]).item()


# ---------------------------------------------------------------- cube


def _accumulation_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float32 if x.is_floating_point() else torch.int32


def _product(call: Call, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` (transposed per the a_trans/b_trans attrs) in the cube's accumulation dtype."""
    a = a.T if call.attrs.get("a_trans") else a
    b = b.T if call.attrs.get("b_trans") else b
    acc = _accumulation_dtype(a)
    return a.to(acc) @ b.to(acc)


@implements("tile.matmul")
def _matmul(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return _result(call, _product(call, args[0], args[1]))


@implements("tile.matmul_acc")
def _matmul_acc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    acc, a, b = args
    product = _product(call, a, b)
    return _result(call, acc.to(product.dtype) + product)


# ---------------------------------------------------------------- data movement


def _gm_region(
    call: Call, tensor: torch.Tensor, offsets: Sequence[int], extent: Sequence[int]
) -> torch.Tensor:
    """The view ``tensor[offsets : offsets + extent]``, or an OutOfBoundsError at the call."""
    for dim, (off, size, full) in enumerate(zip(offsets, extent, tensor.shape, strict=True)):
        if off < 0 or off + size > full:
            raise OutOfBoundsError(
                f"{_user_op(call)}: region [{off}:{off + size}] is outside dim {dim} of size {full} "
                f"(offsets {list(offsets)})",
                call.span,
                "keep offset + tile size inside the tensor; give an edge tile a smaller valid_shape",
            )
    return tensor[tuple(slice(off, off + size) for off, size in zip(offsets, extent, strict=True))]


def _leading(shape: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(0, n) for n in shape)


@implements("tile.load")
def _load(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tensor, offsets = args
    assert isinstance(call.type, TileType)
    valid = call.type.valid_shape or call.type.shape
    tile = torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))
    tile[_leading(valid)] = _gm_region(call, tensor, offsets, valid)
    return tile


@implements("tile.store")
def _store(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets, tensor = args
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    valid = tile_type.valid_shape or tile_type.shape
    _gm_region(call, tensor, offsets, valid).copy_(tile[_leading(valid)])
    return tensor


@implements("tile.gather_row")
def _gather_row(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing: the row lands in the destination tile's own bytes.
    dst, src, dst_offsets, src_offsets = args
    shape = tuple(call.attrs["shape"])
    _gm_region(call, dst, dst_offsets, shape).copy_(_gm_region(call, src, src_offsets, shape))
    return dst


@implements("scalar.read")
def _read(call: Call, args: Sequence[Any]) -> int | float | bool:
    tensor, offsets = args
    return _scalar_result(call, _gm_region(call, tensor, offsets, (1,) * tensor.dim()).item())


@implements("tile.move")
def _move(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return args[0].clone()


@implements("tile.create", "tensor.create")
def _create(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # The simulator clears new tiles so results never depend on stale bytes.
    assert isinstance(call.type, (TileType, TensorType))
    return torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))


# ---------------------------------------------------------------- reductions and broadcasts

_REDUCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "row_max": lambda x: x.amax(dim=1, keepdim=True),
    "row_sum": lambda x: x.sum(dim=1, keepdim=True),
    "row_min": lambda x: x.amin(dim=1, keepdim=True),
    "col_sum": lambda x: x.sum(dim=0, keepdim=True),
    "col_max": lambda x: x.amax(dim=0, keepdim=True),
}


def _reduction_impl(name: str) -> OpImpl:
    # The whole tile takes part (a row reduction's scratch operand holds nothing the result needs):
    # pad a partial tile with pl.fillpad first.
    reduce = _REDUCTIONS[name]
    return lambda call, args: _result(call, reduce(args[0]))


def _row_expand_impl(name: str) -> OpImpl:
    fn = _BINARY[name]
    return lambda call, args: _result(call, fn(call, args[0], args[1].expand_as(args[0])))


@implements("tile.col_expand")
def _col_expand(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return _result(call, args[1].expand_as(args[0]))


@implements("tile.col_expand_mul")
def _col_expand_mul(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return _result(call, args[0] * args[1].expand_as(args[0]))


# ---------------------------------------------------------------- views, fills, tile assembly


@implements("tile.reshape")
def _reshape(call: Call, args: Sequence[Any]) -> torch.Tensor:
    return args[0].reshape(tuple(call.attrs["shape"])).clone()


@implements("tile.slice")
def _slice(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets = args
    return _gm_region(call, tile, offsets, tuple(call.attrs["shape"])).clone()


def pad_scalar(pad: PadValue, dtype: torch.dtype) -> float | int:
    """The value ``pad`` stands for in ``dtype``: 0, or the lowest / highest value (±inf for floats)."""
    if pad is PadValue.zero:
        return 0
    if dtype.is_floating_point:
        return -torch.inf if pad is PadValue.min else torch.inf
    info = torch.iinfo(dtype)
    return info.min if pad is PadValue.min else info.max


def _valid_extent(call: Call, valid: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """A run-time valid shape, checked against the tile's shape."""
    for dim, (size, full) in enumerate(zip(valid, shape, strict=True)):
        if not 0 <= size <= full:
            raise OutOfBoundsError(
                f"{_user_op(call)}: valid_shape {list(valid)} leaves the tile's {list(shape)} in dim {dim}",
                call.span,
                "keep each valid extent between 0 and the tile's extent, e.g. pl.minimum(rows, n - row)",
            )
    return tuple(valid)


@implements("tile.fillpad")
def _fillpad(call: Call, args: Sequence[Any]) -> torch.Tensor:
    x = args[0]
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    valid = args[1] if len(args) == 2 else tile_type.valid_shape or tile_type.shape
    valid = _valid_extent(call, valid, tile_type.shape)
    padded = torch.full_like(x, pad_scalar(call.attrs["pad_value"], x.dtype))
    padded[_leading(valid)] = x[_leading(valid)]
    return padded


@implements("tile.full")
def _full(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, TileType)
    dtype = torch_dtype(call.type.dtype)
    return element_scalar(call, args[0], dtype).expand(call.type.shape).clone()


@implements("tile.assemble")
def _assemble(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # Destination-passing, like gather_row: the source lands in the destination tile's own bytes.
    dst, src, offsets = args
    _gm_region(call, dst, offsets, tuple(src.shape)).copy_(src)
    return dst


@implements("tile.load_partial")
def _load_partial(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tensor, offsets, valid = args
    assert isinstance(call.type, TileType)
    valid = _valid_extent(call, valid, call.type.shape)
    tile = torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))
    tile[_leading(valid)] = _gm_region(call, tensor, offsets, valid)
    return tile


@implements("tile.store_partial")
def _store_partial(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets, tensor, valid = args
    valid = _valid_extent(call, valid, tuple(tile.shape))
    _gm_region(call, tensor, offsets, valid).copy_(tile[_leading(valid)])
    return tensor


@implements("tile.store_atomic")
def _store_atomic(call: Call, args: Sequence[Any]) -> torch.Tensor:
    # AtomicType.Add: the tile's valid region is added to what global memory holds.
    tile, offsets, tensor = args[:3]
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    valid = args[3] if len(args) == 4 else tile_type.valid_shape or tile_type.shape
    valid = _valid_extent(call, valid, tuple(tile.shape))
    _gm_region(call, tensor, offsets, valid).add_(tile[_leading(valid)].to(tensor.dtype))
    return tensor


# ---------------------------------------------------------------- scalar (index) math

_SCALAR_BINARY: dict[str, Callable[[Any, Any], Any]] = {
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


# How the user writes the scalar ops that can divide by zero.
_OPERATORS = {"floordiv": "//", "truediv": "/", "mod": "%"}


def _scalar_impl(name: str) -> OpImpl:
    fn = _SCALAR_BINARY[name]

    def impl(call: Call, args: Sequence[Any]) -> Any:
        try:
            value = fn(args[0], args[1])
        except ZeroDivisionError:
            divisor = call.args[1]
            named = f" ({divisor.name} is 0 at run time)" if isinstance(divisor, Var) else ""
            raise DivisionByZeroError(
                f"{args[0]} {_OPERATORS.get(name, name)} {args[1]}: division by zero{named}",
                call.span,
                "guard the divisor",
            ) from None
        return _scalar_result(call, value)

    return impl


def _scalar_result(call: Call, value: Any) -> int | float | bool:
    assert isinstance(call.type, ScalarType)
    dtype = call.type.dtype
    if dtype is DataType.BOOL:
        return bool(value)
    return float(value) if dtype.is_float else int(value)


@implements("scalar.neg")
def _scalar_neg(call: Call, args: Sequence[Any]) -> Any:
    return -args[0]


def _register_op_families() -> None:
    for name in _BINARY:
        implements(f"tile.{name}")(_binary_impl(name))
        implements(f"tile.{name}s")(_binary_scalar_impl(name))
    for name in _UNARY:
        implements(f"tile.{name}")(_unary_impl(name))
    for name in _REDUCTIONS:
        implements(f"tile.{name}")(_reduction_impl(name))
    for name in ("add", "sub", "mul", "div"):
        implements(f"tile.row_expand_{name}")(_row_expand_impl(name))
    for name in _SCALAR_BINARY:
        implements(f"scalar.{name}")(_scalar_impl(name))


_register_op_families()
