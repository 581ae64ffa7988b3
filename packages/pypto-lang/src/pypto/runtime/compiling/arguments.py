"""Checking call arguments (torch tensors, stand-ins and Python numbers) against IR types.

torch is never imported here: a value can only be a torch tensor if its caller imported torch, so
``sys.modules`` tells. A compiler-only install (parse, lower, print) needs no torch at all; a stand-in
such as ``pl.Tensor[[128, 256], pl.FP16]`` passed for a parameter gives its shape and dtype to
``.compile()`` and ``.lower()``.
"""

from __future__ import annotations

import sys
from typing import Any

from pypto.ir import (
    DataType,
    Direction,
    ScalarType,
    SpecializationError,
    TensorType,
    UnsupportedDtypeError,
    dtype_from_torch_name,
    supported_torch_dtypes,
)
from pypto.ir.dtypes import holds
from pypto.ir.extents import shape_fits
from pypto.ir.types import describe


def is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def tensor_type(value: Any, param: str) -> TensorType:
    """The IR type of a tensor passed for ``param``: ``tensor_type(torch.zeros(2, 3), "a")``.

    A stand-in with a ``shape`` and a pl ``dtype`` (``pl.Tensor[[2, 3], pl.FP32]``) gives its own.
    """
    stand_in = _stand_in_type(value)
    if stand_in is not None:
        return stand_in
    if not is_torch_tensor(value):
        kind = type(value).__name__
        numpy = " (a numpy array: convert it with torch.from_numpy(x))" if kind == "ndarray" else ""
        hint = f"pass a torch tensor for the pl.Tensor parameter '{param}'"
        if (
            kind == "DeviceTensor"
        ):  # pypto.runtime.running.worker's: a compiled program takes it, through its worker
            hint = (
                "a @pl.jit call specializes on torch tensors: compile the kernel (kernel.compile(...) or "
                "ir.compile(kernel.lower(...))) and run it with worker.run(compiled, ...)"
            )
        raise SpecializationError(
            f"argument '{param}' must be a torch.Tensor, got {_described(value)}{numpy}", hint=hint
        )
    dtype = dtype_from_torch_name(str(value.dtype))
    if dtype is None:
        raise UnsupportedDtypeError(
            f"argument '{param}' has dtype {value.dtype}, which PyPTO does not support; "
            f"supported dtypes: {', '.join(supported_torch_dtypes())}",
            hint=f"convert it first, e.g. {param}.to(torch.float32)",
        )
    shape = tuple(value.shape)
    if not shape or 0 in shape:
        what = "a 0-dimensional tensor" if not shape else f"an empty tensor of shape {list(shape)}"
        raise SpecializationError(
            f"argument '{param}' is {what}; a pl.Tensor has at least one element in each of "
            "at least one dimension",
            hint=f"pass {param}.reshape(1) for one value, or a non-empty tensor",
        )
    return TensorType(shape, dtype)


def _stand_in_type(value: Any) -> TensorType | None:
    """The type of a ``pl.Tensor[[shape], dtype]`` annotation passed as a stand-in argument."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(dtype, DataType) and isinstance(shape, tuple) and not is_torch_tensor(value):
        return TensorType(shape, dtype)
    return None


def check_runnable(
    value: Any, direction: Direction, param: str, strides: tuple[int, ...] | None = None
) -> None:
    """A tensor a kernel reads (and, for ``pl.Out`` / ``pl.InOut``, writes in place) must hold data on
    the CPU; a written one must also be contiguous (each element its own storage) and need no grad,
    or have the ``strides`` its parameter declares (a window into a larger buffer)."""
    if _stand_in_type(value) is not None:
        raise SpecializationError(
            f"argument '{param}' is a stand-in ({value}), which holds no data",
            hint="stand-ins give shapes to .compile() and .lower(); to run, pass torch tensors",
        )
    if not is_torch_tensor(value):
        return  # a scalar; tensor_type reports a wrong kind
    if value.is_meta:
        raise SpecializationError(
            f"argument '{param}' is a meta tensor, which holds no data to run on",
            hint="pass a tensor with data (e.g. torch.zeros(...)); meta tensors only give .compile() shapes",
        )
    if value.device.type != "cpu":
        raise SpecializationError(
            f"argument '{param}' is on {value.device}; the simulator runs on CPU tensors",
            hint=f"pass {param}.cpu() (and copy a written result back to the device)",
        )
    if value.layout is not _torch().strided:
        raise SpecializationError(
            f"argument '{param}' has layout {value.layout}; kernels take dense tensors",
            hint=f"pass {param}.to_dense()",
        )
    if not direction.writes:
        return
    if value.requires_grad:
        raise SpecializationError(
            f"argument '{param}' requires grad, but the kernel writes it in place (pl.{direction.value})",
            hint=f"pass {param}.detach(), or create it without requires_grad=True",
        )
    if not value.is_contiguous() and not (
        strides is not None and tuple(value.stride()) == strides and 0 not in strides
    ):
        expanded = (
            " (a stride-0 expand() view: many elements share one storage)" if 0 in value.stride() else ""
        )
        raise SpecializationError(
            f"argument '{param}' is not contiguous (strides {list(value.stride())}){expanded}, but the "
            f"kernel writes it in place (pl.{direction.value})",
            hint=f"pass a contiguous tensor, e.g. {param} = torch.zeros(shape) or {param}.contiguous(), "
            "and read the result from it",
        )


def _torch() -> Any:
    return sys.modules["torch"]


def _described(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        return f"the {type(value).__name__} {value!r}"
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("a builtins.", "a ")


def scalar_value(value: Any, dtype: DataType, param: str) -> int | float | bool:
    """A Python number passed for a scalar ``param``, converted to ``dtype``'s Python kind."""
    if isinstance(value, bool) and dtype is not DataType.BOOL:
        raise SpecializationError(
            f"argument '{param}' is the bool {value!r}, but pl.Scalar[pl.{dtype.name}] takes a number",
            hint=f"pass {int(value)} (or annotate '{param}' as pl.Scalar[pl.BOOL])",
        )
    if is_torch_tensor(value) or not isinstance(value, (int, float, bool)):
        tensor = (
            " (pass tensor.item() for the value of a one-element tensor)" if is_torch_tensor(value) else ""
        )
        raise SpecializationError(
            f"argument '{param}' must be a Python number for pl.Scalar[pl.{dtype.name}], "
            f"got {_described(value)}{tensor}",
            hint=f"pass a Python {'float' if dtype.is_float else 'int'}, or annotate '{param}' as pl.Tensor",
        )
    if dtype is DataType.BOOL:
        if value not in (0, 1):
            raise SpecializationError(
                f"argument '{param}' is {value!r}, but pl.Scalar[pl.BOOL] takes True or False",
                hint="pass True or False",
            )
        return bool(value)
    if dtype.is_float:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise SpecializationError(
            f"argument '{param}' must be an integer for pl.{dtype.name}, got {value!r}",
            hint=f"pass an int, or annotate '{param}' as pl.Scalar[pl.FP32]",
        )
    low, high = dtype.int_range
    if not low <= value <= high:
        raise SpecializationError(
            f"argument '{param}' is {int(value)}, outside the range [{low}, {high}] of pl.{dtype.name}",
            hint=f"pass a value in range, or annotate '{param}' with a wider dtype",
        )
    return int(value)


def check_argument(value: Any, expected: Any, param: str) -> None:
    """Raise ``SpecializationError`` when ``value`` does not fit the compiled param type."""
    if isinstance(expected, TensorType):
        actual = tensor_type(value, param)
        if not holds(expected.dtype, actual.dtype) or not shape_fits(actual.shape, expected):
            raise SpecializationError(
                f"argument '{param}' is {describe(actual)} but the program was compiled for "
                f"{describe(expected)}",
                hint="compile again for these arguments (calling the @pl.jit function does that)",
            )
    elif isinstance(expected, ScalarType):
        scalar_value(value, expected.dtype, param)
