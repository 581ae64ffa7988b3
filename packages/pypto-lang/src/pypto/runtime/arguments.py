"""Checking call arguments (torch tensors and Python numbers) against IR types."""

from __future__ import annotations

from typing import Any

import torch

from pypto.ir import (
    DataType,
    ScalarType,
    SpecializationError,
    TensorType,
    UnsupportedDtypeError,
    dtype_from_torch_name,
    supported_torch_dtypes,
)
from pypto.ir.types import describe


def tensor_type(value: Any, param: str) -> TensorType:
    """The IR type of a torch tensor passed for ``param``: ``tensor_type(torch.zeros(2, 3), "a")``."""
    if not isinstance(value, torch.Tensor):
        raise SpecializationError(
            f"argument {param!r} must be a torch.Tensor, got {type(value).__name__}",
            hint="pass a torch tensor for every pl.Tensor parameter",
        )
    dtype = dtype_from_torch_name(str(value.dtype))
    if dtype is None:
        raise UnsupportedDtypeError(
            f"argument {param!r} has dtype {value.dtype}, which PyPTO does not support; "
            f"supported dtypes: {', '.join(supported_torch_dtypes())}",
            hint=f"convert it first, e.g. {param}.to(torch.float32)",
        )
    return TensorType(tuple(value.shape), dtype)


def scalar_value(value: Any, dtype: DataType, param: str) -> int | float | bool:
    """A Python number passed for a scalar ``param``, converted to ``dtype``'s Python kind."""
    if isinstance(value, torch.Tensor) or not isinstance(value, (int, float, bool)):
        raise SpecializationError(
            f"argument {param!r} must be a Python number for pl.Scalar[pl.{dtype.name}], "
            f"got {type(value).__name__}",
        )
    if dtype is DataType.BOOL:
        return bool(value)
    if dtype.is_float:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise SpecializationError(f"argument {param!r} must be an integer for pl.{dtype.name}, got {value!r}")
    return int(value)


def check_argument(value: Any, expected: Any, param: str) -> None:
    """Raise ``SpecializationError`` when ``value`` does not fit the compiled param type."""
    if isinstance(expected, TensorType):
        actual = tensor_type(value, param)
        if actual != expected:
            raise SpecializationError(
                f"argument {param!r} is {describe(actual)} but the program was compiled for "
                f"{describe(expected)}",
                hint="compile again for these arguments (calling the @pl.jit function does that)",
            )
    elif isinstance(expected, ScalarType):
        scalar_value(value, expected.dtype, param)
