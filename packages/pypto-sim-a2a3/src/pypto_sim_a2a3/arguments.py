"""Checking run-time values (torch tensors, Python numbers) against parameter types."""

from __future__ import annotations

from typing import Any

import torch

from pypto.ir import DataType, Param, ScalarType, TensorType, dtype_from_torch_name
from pypto.ir.types import describe


def argument_mismatch(param: Param, value: Any) -> str | None:
    """Why ``value`` cannot bind to ``param`` (a sentence fragment), or None if it fits."""
    expected = param.var.type
    if isinstance(expected, TensorType):
        return _tensor_mismatch(expected, value)
    if isinstance(expected, ScalarType):
        return _scalar_mismatch(expected.dtype, value)
    return f"has type {describe(expected)}, which a kernel parameter cannot have"


def _tensor_mismatch(expected: TensorType, value: Any) -> str | None:
    if not isinstance(value, torch.Tensor):
        return f"expects a torch tensor {describe(expected)}, got {type(value).__name__}"
    dtype = dtype_from_torch_name(str(value.dtype))
    if dtype is not expected.dtype:
        return f"expects {describe(expected)}, got a {value.dtype} tensor"
    if tuple(value.shape) != expected.shape:
        return f"expects {describe(expected)}, got shape {list(value.shape)}"
    return None


def _scalar_mismatch(dtype: DataType, value: Any) -> str | None:
    if dtype is DataType.BOOL:
        ok = isinstance(value, bool)
    elif dtype.is_integer:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        return None
    return f"expects a Python scalar of {dtype.name}, got {type(value).__name__} {value!r}"
