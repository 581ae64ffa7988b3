"""Checking run-time values (torch tensors, Python numbers) against parameter types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from pypto.ir import (
    DataType,
    Function,
    Param,
    ScalarType,
    SpecializationError,
    TensorType,
    UnsupportedDtypeError,
    dtype_from_torch_name,
    supported_torch_dtypes,
)
from pypto.ir.dtypes import holds
from pypto.ir.extents import ExtentBinding, argument_shape, is_dynamic, shape_fits
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
    if dtype is None or not holds(expected.dtype, dtype):
        return f"expects {describe(expected)}, got a {value.dtype} tensor"
    shape = argument_shape(value)
    assert shape is not None
    if not shape_fits(shape, expected):
        return f"expects {describe(expected)}, got shape {list(shape)}"
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


def check_arguments(entry: Function, args: Sequence[Any]) -> None:
    """Every argument fits its parameter of the entry; an error points at the parameter."""
    if len(args) != len(entry.params):
        names = ", ".join(p.var.name for p in entry.params)
        raise SpecializationError(
            f"{entry.name} takes {len(entry.params)} argument(s) ({names}) but got {len(args)}",
            entry.span,
            "pass one value per parameter, in order",
        )
    extents = ExtentBinding()
    for param, value in zip(entry.params, args, strict=True):
        if isinstance(value, torch.Tensor) and dtype_from_torch_name(str(value.dtype)) is None:
            raise UnsupportedDtypeError(
                f"{entry.name}: argument {param.var.name} is a {value.dtype} tensor, which PyPTO cannot hold",
                param.var.span or entry.span,
                f"supported dtypes: {', '.join(supported_torch_dtypes())}",
            )
        problem = argument_mismatch(param, value)
        if problem is not None:
            raise SpecializationError(
                f"{entry.name}: parameter {param.var.name} {problem}",
                param.var.span or entry.span,
                "convert the argument (e.g. tensor.to(torch.float16)) or change the annotation",
            )
        if is_dynamic(param.var.type):
            try:
                extents.bind(param.var.name, param.var.type, tuple(value.shape), param.var.span or entry.span)
            except SpecializationError as err:
                raise err.with_span(param.var.span or entry.span) from None
    extents.resolve()
