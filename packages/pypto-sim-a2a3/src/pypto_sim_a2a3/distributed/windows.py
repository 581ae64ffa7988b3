"""Window buffers: per-rank zeroed byte storage at the same place on every rank.

``pld.alloc_window_buffer(size)`` on the HOST makes one :class:`WindowBuffer`: ``size`` bytes on
every rank (at least :data:`WINDOW_FLOOR` of storage, the manual's 4 KiB window floor).
``pld.window(buf, shape, dtype=...)`` makes a :class:`WindowView`, a typed view the HOST holds for
every rank at once; a dispatch to device ``r`` hands the kernel rank ``r``'s torch view of it. A
kernel's remote op finds the same bytes on a peer through :meth:`WindowStore.find` (the view's
storage names the buffer and the rank, its strides and offset the place).

A :class:`WindowStore` keeps the buffers of a world; a persistent worker keeps one across runs
(``options["windows"]``), so a buffer allocated again under the same name and size is the same
storage, not zeroed unless the store is :meth:`~WindowStore.reset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import DataType
from pypto.ir.semantics import torch_dtype

WINDOW_FLOOR = 4096  # bytes: the least storage a window buffer gets on each rank


@dataclass(eq=False)
class WindowBuffer:
    """One ``alloc_window_buffer``: ``size`` bytes on each of ``ranks`` ranks, zeroed.

    ``storage[r]`` is rank ``r``'s bytes (a uint8 tensor of at least :data:`WINDOW_FLOOR`)."""

    name: str
    size: int
    storage: tuple[torch.Tensor, ...]
    key: tuple[str, int] = ("", 0)  # (name, the HOST's allocation number): the same in every process

    @classmethod
    def allocate(cls, name: str, size: int, ranks: int, key: tuple[str, int] = ("", 0)) -> WindowBuffer:
        nbytes = max(int(size), WINDOW_FLOOR)
        storage = tuple(torch.zeros(nbytes, dtype=torch.uint8) for _ in range(ranks))
        return cls(name, int(size), storage, key)

    def zero(self) -> None:
        for storage in self.storage:
            storage.zero_()


@dataclass(frozen=True)
class WindowView:
    """``pld.window(buf, shape, dtype=..., offset=...)`` on the HOST: the same typed view of every
    rank's bytes; :meth:`on` gives rank ``r``'s torch tensor."""

    buffer: WindowBuffer
    shape: tuple[int, ...]
    dtype: DataType
    offset: int = 0

    @property
    def nbytes(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count * self.dtype.nbytes

    def on(self, rank: int) -> torch.Tensor:
        """Rank ``rank``'s bytes of the view, as a tensor of its shape and dtype."""
        raw = self.buffer.storage[rank][self.offset : self.offset + self.nbytes]
        return raw.view(torch_dtype(self.dtype)).reshape(self.shape)


@dataclass(frozen=True)
class CommCtx:
    """``pld.get_comm_ctx(t)``: the comm domain of a window (the whole world here)."""

    rank: int | None  # None on the HOST, which speaks for every rank
    nranks: int


@dataclass(frozen=True)
class PlaceRef:
    """A :class:`Place` as a message names it: its buffer's key and its layout (no storage)."""

    key: tuple[str, int]
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    element_offset: int
    dtype: torch.dtype


@dataclass(frozen=True)
class Place:
    """Where a rank's window tensor lies: its buffer, its rank, and its layout in the storage."""

    buffer: WindowBuffer
    rank: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    element_offset: int  # in elements of ``dtype`` from the storage's start
    dtype: torch.dtype

    def ref(self) -> PlaceRef:
        return PlaceRef(self.buffer.key, self.shape, self.stride, self.element_offset, self.dtype)

    def on(self, rank: int) -> torch.Tensor:
        """The same view on ``rank``'s storage."""
        typed = self.buffer.storage[rank].view(self.dtype)
        return typed.as_strided(self.shape, self.stride, self.element_offset)

    @property
    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    @property
    def byte_offset(self) -> int:
        return self.element_offset * self.element_size

    @property
    def nbytes(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count * self.element_size


@dataclass
class WindowStore:
    """The window buffers of a world of ``ranks`` ranks, kept across runs by a persistent worker.

    ``store = WindowStore(2); store.reset()`` zeroes every buffer it holds."""

    ranks: int
    buffers: dict[tuple[str, int], WindowBuffer] = field(default_factory=dict)
    _by_storage: dict[int, tuple[WindowBuffer, int]] = field(default_factory=dict)

    def allocate(self, name: str, size: int, serial: int) -> WindowBuffer:
        """The buffer of the HOST's ``serial``-th allocation (named ``name``): the one kept from an
        earlier run if its size is the same, else a fresh zeroed one."""
        key = (name, serial)
        kept = self.buffers.get(key)
        if kept is not None and kept.size == size:
            return kept
        if kept is not None:  # resized: its old bytes are no window any more
            for storage in kept.storage:
                self._by_storage.pop(storage.untyped_storage().data_ptr(), None)
        buffer = WindowBuffer.allocate(name, size, self.ranks, key)
        self.buffers[key] = buffer
        for rank, storage in enumerate(buffer.storage):
            self._by_storage[storage.untyped_storage().data_ptr()] = (buffer, rank)
        return buffer

    def place(self, ref: PlaceRef, rank: int) -> Place:
        """The place a message names, on ``rank``'s storage."""
        buffer = self.buffers[ref.key]
        return Place(buffer, rank, ref.shape, ref.stride, ref.element_offset, ref.dtype)

    def reset(self) -> None:
        """Zero every window buffer (``reset_persistent_windows``)."""
        for buffer in self.buffers.values():
            buffer.zero()

    def find(self, tensor: Any) -> Place | None:
        """The window place of a kernel's tensor, None if it is no window's."""
        if not isinstance(tensor, torch.Tensor):
            return None
        found = self._by_storage.get(tensor.untyped_storage().data_ptr())
        if found is None:
            return None
        buffer, rank = found
        shape, stride = tuple(tensor.shape), tuple(tensor.stride())
        return Place(buffer, rank, shape, stride, int(tensor.storage_offset()), tensor.dtype)
