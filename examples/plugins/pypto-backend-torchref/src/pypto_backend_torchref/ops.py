"""What each op computes, on torch tensors and Python numbers: one entry per op name.

Vector ops compute in the operand dtype; matmuls accumulate fp16/bf16 in fp32 (ints in int32);
every result takes the dtype of the call's result type. Stores write into the GM tensor.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch

from pypto.ir import Call, DataType, ScalarType, TensorType, TileType

OpFn = Callable[[Call, Sequence[Any]], Any]
OPS: dict[str, OpFn] = {}


def torch_dtype(dtype: DataType) -> torch.dtype:
    return getattr(torch, dtype.torch_name)


def _typed(call: Call, value: torch.Tensor) -> torch.Tensor:
    assert isinstance(call.type, (TileType, TensorType))
    return value.to(torch_dtype(call.type.dtype))


def _region(tensor: torch.Tensor, offsets: Sequence[int], extent: Sequence[int]) -> torch.Tensor:
    return tensor[tuple(slice(o, o + n) for o, n in zip(offsets, extent, strict=True))]


def _product(call: Call, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a = a.T if call.attrs.get("a_trans") else a
    b = b.T if call.attrs.get("b_trans") else b
    acc = torch.float32 if a.is_floating_point() else torch.int32
    return a.to(acc) @ b.to(acc)


def _matmul_acc(call: Call, args: Sequence[Any]) -> torch.Tensor:
    product = _product(call, args[1], args[2])
    return _typed(call, args[0].to(product.dtype) + product)


def _load(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tensor, offsets = args
    assert isinstance(call.type, TileType)
    valid = call.type.valid_shape or call.type.shape
    tile = torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))
    tile[tuple(slice(0, n) for n in valid)] = _region(tensor, offsets, valid)
    return tile


def _store(call: Call, args: Sequence[Any]) -> torch.Tensor:
    tile, offsets, tensor = args
    tile_type = call.args[0].type
    assert isinstance(tile_type, TileType)
    valid = tile_type.valid_shape or tile_type.shape
    _region(tensor, offsets, valid).copy_(tile[tuple(slice(0, n) for n in valid)])
    return tensor


def _new(call: Call, args: Sequence[Any]) -> torch.Tensor:
    assert isinstance(call.type, (TileType, TensorType))
    return torch.zeros(call.type.shape, dtype=torch_dtype(call.type.dtype))


def _scalar(call: Call, value: Any) -> Any:
    assert isinstance(call.type, ScalarType)
    if call.type.dtype is DataType.BOOL:
        return bool(value)
    return float(value) if call.type.dtype.is_float else int(value)


_BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
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
_REDUCE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "row_max": lambda x: x.amax(dim=1, keepdim=True),
    "row_sum": lambda x: x.sum(dim=1, keepdim=True),
    "row_min": lambda x: x.amin(dim=1, keepdim=True),
    "col_sum": lambda x: x.sum(dim=0, keepdim=True),
    "col_max": lambda x: x.amax(dim=0, keepdim=True),
}
_SCALAR: dict[str, Callable[[Any, Any], Any]] = {
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


def _families() -> None:
    for name, fn in _BINARY.items():
        OPS[f"tile.{name}"] = lambda call, args, fn=fn: _typed(call, fn(args[0], args[1]))
        OPS[f"tile.{name}s"] = lambda call, args, fn=fn: _typed(
            call, fn(args[0], torch.tensor(args[1], dtype=args[0].dtype))
        )
    for name, fn in _UNARY.items():
        OPS[f"tile.{name}"] = lambda call, args, fn=fn: _typed(call, fn(args[0]))
    for name, fn in _REDUCE.items():
        OPS[f"tile.{name}"] = lambda call, args, fn=fn: _typed(call, fn(args[0]))
    for name in ("add", "sub", "mul", "div"):
        fn = _BINARY[name]
        OPS[f"tile.row_expand_{name}"] = lambda call, args, fn=fn: _typed(
            call, fn(args[0], args[1].expand_as(args[0]))
        )
    for name, fn in _SCALAR.items():
        OPS[f"scalar.{name}"] = lambda call, args, fn=fn: _scalar(call, fn(args[0], args[1]))


_families()
OPS.update(
    {
        "tile.load": _load,
        "tile.store": _store,
        "tile.move": lambda call, args: args[0].clone(),
        "tile.create": _new,
        "tensor.create": _new,
        "tile.cast": lambda call, args: _typed(call, args[0]),
        "tile.matmul": lambda call, args: _typed(call, _product(call, args[0], args[1])),
        "tile.matmul_acc": _matmul_acc,
        "tile.concat": lambda call, args: _typed(call, torch.cat([args[0], args[1]], dim=1)),
        "tile.col_expand": lambda call, args: _typed(call, args[1].expand_as(args[0])),
        "tile.col_expand_mul": lambda call, args: _typed(call, args[0] * args[1].expand_as(args[0])),
        "tile.reshape": lambda call, args: args[0].reshape(tuple(call.attrs["shape"])).clone(),
        "scalar.neg": lambda call, args: -args[0],
        "aic_initialize_pipe": lambda call, args: None,
        "aiv_initialize_pipe": lambda call, args: None,
        "system.fence": lambda call, args: None,
    }
)
