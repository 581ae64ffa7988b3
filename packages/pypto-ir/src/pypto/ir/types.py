"""IR types: scalars, global-memory tensors, on-chip tiles, scalar arrays, opaque handles, tuples."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from math import prod

from pypto.ir.dtypes import DataType, storage_bytes


class MemorySpace(Enum):
    """Where a value lives. DDR is global memory; the rest are on-chip buffers."""

    DDR = "DDR"
    Vec = "Vec"  # UB, vector side
    Mat = "Mat"  # L1, cube side
    Left = "Left"  # L0A
    Right = "Right"  # L0B
    Acc = "Acc"  # L0C
    Bias = "Bias"  # BT

    def __repr__(self) -> str:
        return f"pl.Mem.{self.name}"

    def __str__(self) -> str:
        return self.name


class Direction(Enum):
    """Parameter direction; decides which tensors a task reads and writes."""

    In = "In"
    Out = "Out"
    InOut = "InOut"

    @property
    def writes(self) -> bool:
        return self is not Direction.In

    @property
    def reads(self) -> bool:
        return self is not Direction.Out


class Type:
    """Base of all IR types."""


@dataclass(frozen=True)
class UnitType(Type):
    """The type of an op that produces nothing (a store, a pipe free)."""

    def __str__(self) -> str:
        return "None"


@dataclass(frozen=True)
class ScalarType(Type):
    dtype: DataType

    def __str__(self) -> str:
        return "pl.TaskId" if self.dtype is DataType.TASK_ID else f"pl.Scalar[pl.{self.dtype.name}]"


@dataclass(frozen=True)
class TensorType(Type):
    """A global-memory array. Its extents are ints, or a ``DynDim`` for an extent bound per launch
    (``pl.dynamic``): code that does arithmetic on ``shape`` must first check the entry is an int
    (see :mod:`pypto.ir.extents`)."""

    shape: tuple[int, ...]
    dtype: DataType

    @property
    def nbytes(self) -> int:
        return storage_bytes(prod(self.shape), self.dtype)

    def __str__(self) -> str:
        return f"pl.Tensor[{list(self.shape)}, pl.{self.dtype.name}]"


@dataclass(frozen=True)
class DistributedTensorType(TensorType):
    """A global-memory tensor bound to a window buffer (``pld.DistributedTensor``): every rank has
    one at the same place of its window, so a peer can read, write and signal it. Every op that
    takes a tensor takes it (a kernel loads and stores its own window like any tensor); the
    communication ops need it on their window side. Passes that rebuild a tensor type keep the
    class (``dataclasses.replace``)."""

    def __str__(self) -> str:
        return f"pld.DistributedTensor[{list(self.shape)}, pl.{self.dtype.name}]"


@dataclass(frozen=True)
class TileType(Type):
    """An on-chip buffer. ``memory_space`` is None until InferTileMemorySpace decides it."""

    shape: tuple[int, ...]
    dtype: DataType
    memory_space: MemorySpace | None = MemorySpace.Vec
    valid_shape: tuple[int, ...] | None = None

    @property
    def nbytes(self) -> int:
        return storage_bytes(prod(self.shape), self.dtype)

    def __str__(self) -> str:
        parts = [str(list(self.shape)), f"pl.{self.dtype.name}"]
        if self.memory_space is not None:
            parts.append(f"pl.Mem.{self.memory_space.name}")
        if self.valid_shape is not None and self.valid_shape != self.shape:
            parts.append(f"valid_shape={list(self.valid_shape)}")
        return f"pl.Tile[{', '.join(parts)}]"


@dataclass(frozen=True)
class ArrayType(Type):
    """A fixed-size array of scalars in a core's scalar memory (``pl.array.create(n, dtype)``).

    A value, like a scalar: writing an element (``array.update_element``) gives a new array value, so a
    loop carries an array it writes like any other rebound name."""

    size: int
    dtype: DataType

    def __str__(self) -> str:
        return f"pl.Array[{self.size}, pl.{self.dtype.name}]"


@dataclass(frozen=True)
class HandleType(Type):
    """An opaque handle a kernel holds and passes back to the ops that made it: no shape, no
    elements, no buffer (``pl.prefetch.make_context()`` gives a ``pl.PrefetchAsyncContext``).
    ``name`` is how it is written, ``pl.<name>``; :data:`HANDLES` holds the kinds there are."""

    name: str
    # The DSL module that names it (``pld.CommCtx``): not part of its identity.
    namespace: str = field(default="pl", compare=False)

    def __str__(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass(frozen=True)
class TupleType(Type):
    types: tuple[Type, ...]

    def __str__(self) -> str:
        return f"tuple[{', '.join(map(str, self.types))}]"


INDEX = ScalarType(DataType.INDEX)
UNIT = UnitType()
# A task id (``pl.TaskId``): bound by ``with pl.at(...) as tid`` or ``pl.submit``, named in ``deps=[tid]``.
TASK_ID = ScalarType(DataType.TASK_ID)
# The handles of the asynchronous GM -> L2 prefetch (pl.prefetch.*): a context that issues
# prefetches, the event of one prefetch in flight, and the session its completion is waited in.
PREFETCH_CONTEXT = HandleType("PrefetchAsyncContext")
ASYNC_EVENT = HandleType("AsyncEvent")
ASYNC_SESSION = HandleType("AsyncSession")
# The distributed model's handles (pld.*): the communication context a kernel asks its rank and
# the rank count from, and a per-rank window buffer that windows (pld.window) are views of.
COMM_CTX = HandleType("CommCtx", "pld")
WINDOW_BUFFER = HandleType("WindowBuffer", "pld")
HANDLES = (PREFETCH_CONTEXT, ASYNC_EVENT, ASYNC_SESSION, COMM_CTX, WINDOW_BUFFER)


def describe(t: Type) -> str:
    """Short user-facing description: ``Tile[[64, 64], FP32, Vec]``."""
    if isinstance(t, TileType):
        space = f", {t.memory_space.name}" if t.memory_space else ""
        return f"Tile[{list(t.shape)}, {t.dtype.name}{space}]"
    if isinstance(t, DistributedTensorType):
        return f"DistributedTensor[{list(t.shape)}, {t.dtype.name}]"
    if isinstance(t, TensorType):
        return f"Tensor[{list(t.shape)}, {t.dtype.name}]"
    if t == TASK_ID:
        return "a task id"
    if isinstance(t, ScalarType):
        return f"Scalar[{t.dtype.name}]"
    if isinstance(t, ArrayType):
        return f"Array[{t.size}, {t.dtype.name}]"
    if isinstance(t, HandleType):
        return t.name
    return str(t)
