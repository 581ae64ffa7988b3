"""Data types: one table of name, bit width and torch dtype name.

``pypto.ir`` does not import torch; backends map ``DataType.torch_name`` with
``getattr(torch, dtype.torch_name)``.
"""

from __future__ import annotations

from enum import Enum


class DataType(Enum):
    """An element type. ``value`` is ``(name, bits, torch_name, kind)``."""

    FP16 = ("FP16", 16, "float16", "float")
    BF16 = ("BF16", 16, "bfloat16", "float")
    FP32 = ("FP32", 32, "float32", "float")
    INT8 = ("INT8", 8, "int8", "int")
    INT16 = ("INT16", 16, "int16", "int")
    INT32 = ("INT32", 32, "int32", "int")
    INT64 = ("INT64", 64, "int64", "int")
    UINT8 = ("UINT8", 8, "uint8", "int")
    BOOL = ("BOOL", 8, "bool", "bool")
    INDEX = ("INDEX", 64, "int64", "index")
    TASK_ID = ("TASK_ID", 64, "int64", "task")  # a handle naming a submitted task: no number to compute with

    @property
    def bits(self) -> int:
        return self.value[1]

    @property
    def nbytes(self) -> int:
        return self.value[1] // 8

    def get_byte(self) -> int:
        """The size of one element in bytes (PyPTO's spelling of ``nbytes``): ``pl.FP16.get_byte() == 2``."""
        return self.nbytes

    @property
    def torch_name(self) -> str:
        return self.value[2]

    @property
    def is_float(self) -> bool:
        return self.value[3] == "float"

    @property
    def is_integer(self) -> bool:
        return self.value[3] in ("int", "index")

    @property
    def is_bool(self) -> bool:
        return self is DataType.BOOL

    @property
    def is_task_id(self) -> bool:
        """``pl.TASK_ID``: the dtype of a task handle (``pl.TaskId`` is ``pl.Scalar[pl.TASK_ID]``)."""
        return self is DataType.TASK_ID

    @property
    def is_numeric(self) -> bool:
        """Whether an element holds a number (a bool counts): every dtype but ``TASK_ID``."""
        return not self.is_task_id

    @property
    def float_max(self) -> float:
        """The largest finite value of a float dtype: ``FP16.float_max == 65504.0``."""
        if not self.is_float:
            raise ValueError(f"{self.name} is not a float dtype")
        return _FLOAT_MAX[self.name]

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer (or bool) dtype: ``INT8.int_range == (-128, 127)``."""
        if self is DataType.BOOL:
            return 0, 1
        if not self.is_integer:
            raise ValueError(f"{self.name} is not an integer dtype")
        if self is DataType.UINT8:
            return 0, 2**self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __str__(self) -> str:
        return self.name


_FLOAT_MAX = {"FP16": 65504.0, "BF16": 3.3895313892515355e38, "FP32": 3.4028234663852886e38}

# torch dtype name -> DataType, for binding call arguments. INDEX and TASK_ID are never inferred from torch.
DTYPE_BY_TORCH_NAME: dict[str, DataType] = {
    dt.torch_name: dt for dt in DataType if dt not in (DataType.INDEX, DataType.TASK_ID)
}


def dtype_from_torch_name(name: str) -> DataType | None:
    """``"float16"`` or ``"torch.float16"`` -> ``DataType.FP16``; ``None`` if unsupported."""
    return DTYPE_BY_TORCH_NAME.get(name.removeprefix("torch."))


def holds(annotated: DataType, given: DataType) -> bool:
    """Whether a tensor of ``given`` elements binds a parameter annotated with ``annotated`` ones:
    the same dtype, or 64-bit integers (``torch.int64``) for ``pl.INDEX``, the index type."""
    return annotated is given or (annotated is DataType.INDEX and given is DataType.INT64)


def supported_torch_dtypes() -> list[str]:
    return [f"torch.{name}" for name in DTYPE_BY_TORCH_NAME]
