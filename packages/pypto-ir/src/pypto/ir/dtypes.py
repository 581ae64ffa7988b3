"""Data types: one table of name, bit width, torch dtype name and what an element can do.

``pypto.ir`` does not import torch; backends map ``DataType.torch_name`` with
``getattr(torch, dtype.torch_name)``.

Besides the formats vector and cube units compute with, the table holds *storage formats*: the
4-bit ones (``INT4``, ``UINT4``, ``FP4``, ``HF4``, packed two to a byte), the 8-bit float formats of
the MX matmul (``FP8E4M3FN``, ``FP8E5M2``, the scale exponent ``FP8E8M0``, ``HF8``) and ``UINT64``.
Their elements can be moved, viewed and converted (:attr:`DataType.computes` is False), not
computed with; the 4-bit ones have no torch dtype and no on-chip form at all
(:attr:`DataType.packed`).
"""

from __future__ import annotations

from enum import Enum


class DataType(Enum):
    """An element type. ``value`` is ``(name, bits, torch_name, kind, computes)``: ``torch_name``
    is None for a format torch has no dtype of; ``computes`` says whether ops compute with it."""

    FP16 = ("FP16", 16, "float16", "float", True)
    BF16 = ("BF16", 16, "bfloat16", "float", True)
    FP32 = ("FP32", 32, "float32", "float", True)
    INT8 = ("INT8", 8, "int8", "int", True)
    INT16 = ("INT16", 16, "int16", "int", True)
    INT32 = ("INT32", 32, "int32", "int", True)
    INT64 = ("INT64", 64, "int64", "int", True)
    UINT8 = ("UINT8", 8, "uint8", "int", True)
    UINT16 = ("UINT16", 16, "uint16", "int", True)
    UINT32 = ("UINT32", 32, "uint32", "int", True)
    UINT64 = ("UINT64", 64, "uint64", "int", False)
    INT4 = ("INT4", 4, None, "int", False)
    UINT4 = ("UINT4", 4, None, "int", False)
    FP4 = ("FP4", 4, None, "float", False)  # MXFP4 E2M1, two to a byte
    FP8E4M3FN = ("FP8E4M3FN", 8, "float8_e4m3fn", "float", False)
    FP8E5M2 = ("FP8E5M2", 8, "float8_e5m2", "float", False)
    FP8E8M0 = ("FP8E8M0", 8, "float8_e8m0fnu", "float", False)  # the MX block-scale exponent
    HF4 = ("HF4", 4, None, "float", False)
    HF8 = ("HF8", 8, None, "float", False)
    BOOL = ("BOOL", 8, "bool", "bool", True)
    INDEX = ("INDEX", 64, "int64", "index", True)
    # a handle naming a submitted task: no number to compute with
    TASK_ID = ("TASK_ID", 64, "int64", "task", True)

    @property
    def bits(self) -> int:
        bits: int = self.value[1]
        return bits

    @property
    def nbytes(self) -> int:
        """Bytes of one element, a 4-bit one rounded up to a byte (a packed buffer of ``n`` 4-bit
        elements holds ``ceil(n / 2)`` bytes: see :func:`storage_bytes`)."""
        return -(-self.bits // 8)

    def get_byte(self) -> int:
        """The size of one element in bytes (PyPTO's spelling of ``nbytes``): ``pl.FP16.get_byte() == 2``,
        ``pl.INT4.get_byte() == 1`` (rounded up to one byte)."""
        return self.nbytes

    @property
    def torch_name(self) -> str:
        """The torch dtype's name; a format torch has no dtype of (``INT4``) has none (a ValueError)."""
        name: str | None = self.value[2]
        if name is None:
            raise ValueError(f"pl.{self.name} has no torch dtype")
        return name

    @property
    def has_torch_dtype(self) -> bool:
        return self.value[2] is not None

    @property
    def computes(self) -> bool:
        """Whether vector and cube ops compute with elements of this dtype; the storage formats
        (4-bit, FP8, ``UINT64``) can only be moved, viewed and converted."""
        computes: bool = self.value[4]
        return computes

    @property
    def packed(self) -> bool:
        """A 4-bit format, packed two elements to a byte: a2a3 kernels hold no tile of it."""
        return self.bits < 8

    @property
    def is_unsigned(self) -> bool:
        return self.name.startswith("UINT")

    @property
    def kind(self) -> str:
        """``"float"``, ``"int"``, ``"bool"``, ``"index"`` or ``"task"``."""
        kind: str = self.value[3]
        return kind

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "index")

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
        if self.name not in _FLOAT_MAX:
            raise ValueError(f"{self.name} is not a float dtype with a known range")
        return _FLOAT_MAX[self.name]

    @property
    def int_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer (or bool) dtype: ``INT8.int_range == (-128, 127)``."""
        if self is DataType.BOOL:
            return 0, 1
        if not self.is_integer:
            raise ValueError(f"{self.name} is not an integer dtype")
        if self.is_unsigned:
            return 0, 2**self.bits - 1
        return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __str__(self) -> str:
        return self.name


_FLOAT_MAX = {
    "FP16": 65504.0,
    "BF16": 3.3895313892515355e38,
    "FP32": 3.4028234663852886e38,
    "FP8E4M3FN": 448.0,
    "FP8E5M2": 57344.0,
    "FP8E8M0": 1.7014118346046923e38,
    "FP4": 6.0,
}


def storage_bytes(elements: int, dtype: DataType) -> int:
    """Bytes ``elements`` elements of ``dtype`` take in memory (4-bit ones packed two to a byte)."""
    return -(-elements * dtype.bits // 8)


# torch dtype name -> DataType, for binding call arguments. INDEX and TASK_ID are never inferred from torch.
DTYPE_BY_TORCH_NAME: dict[str, DataType] = {
    dt.torch_name: dt
    for dt in DataType
    if dt not in (DataType.INDEX, DataType.TASK_ID) and dt.has_torch_dtype
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
