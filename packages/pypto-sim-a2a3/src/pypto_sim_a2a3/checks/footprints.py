"""Where a global-memory tensor lies in its storage, so that views of one tensor meet each other.

A tensor the orchestration passes to a task may be a view of another (``pl.slice`` of a tensor,
``x[:, 32:96]`` passed from Python): several tensors then share one storage. Two accesses conflict
when they touch common elements, whichever tensor each names. A tensor whose strides are those of
a row-major array (each a multiple of the next) lies in that array's index space: its *frame*
(the storage, element size, strides and the offset within the innermost stride), at an *origin*
(the index of its element ``[0, 0, ...]`` there). Views of one row-major tensor share its frame,
so a box of one view's index space shifted by its origin is a box of the frame, comparable with
any other view's. A tensor of other strides (a transpose) is a frame of its own, at the origin.

>>> base = torch.zeros(64, 128)
>>> tensor_frame(base[16:32, 64:])[1]
(16, 64)
>>> footprint(base[:32]).overlaps(footprint(base[32:]))
False
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

# An index space of GM elements: (storage, element bytes, strides, offset within the last stride),
# or for a tensor of other strides (storage, storage offset, shape, strides).
TensorKey = tuple[Any, ...]


def tensor_frame(tensor: torch.Tensor) -> tuple[TensorKey, tuple[int, ...]]:
    """The frame ``tensor`` lies in and its origin there (see the module doc)."""
    storage = tensor.untyped_storage().data_ptr()
    strides, shape, offset = tensor.stride(), tuple(tensor.shape), int(tensor.storage_offset())
    placed = _row_major_place(strides, shape, offset)
    if placed is not None:
        rest, origin = placed
        return (storage, tensor.element_size(), strides, rest), origin
    return (storage, offset, shape, strides), (0,) * len(shape)


@lru_cache(maxsize=4096)  # (the views of a run's tensors take few shapes and places)
def _row_major_place(
    strides: tuple[int, ...], shape: tuple[int, ...], offset: int
) -> tuple[int, tuple[int, ...]] | None:
    """For a tensor of row-major strides (each positive, a multiple of the next) lying inside that
    array (each index within the extent the stride before it spans): the offset left within its
    innermost stride, and its origin in the array; else None. (Every GM access of a new view asks.)"""
    origin = []
    rest = offset
    outer = 0
    for stride in strides:
        if stride <= 0 or (outer and outer % stride):
            return None
        origin.append(rest // stride)
        rest %= stride
        outer = stride
    for i in range(1, len(strides)):
        if origin[i] + shape[i] > strides[i - 1] // strides[i]:
            return None
    return rest, tuple(origin)


def tensor_key(tensor: torch.Tensor) -> TensorKey:
    """The frame of a GM tensor: the same for the views of one tensor."""
    return tensor_frame(tensor)[0]


@dataclass(frozen=True)
class Footprint:
    """The elements a tensor covers: its storage and byte range, and its box in its frame."""

    storage: int
    first: int  # the byte range [first, end) of the storage its elements lie in
    end: int
    frame: TensorKey
    lo: tuple[int, ...]  # its box in the frame: [lo, hi) per dim
    hi: tuple[int, ...]

    def overlaps(self, other: Footprint) -> bool:
        """Whether the two share an element: exactly for two boxes of one frame, else (tensors of
        other strides) whenever their byte ranges meet."""
        if self.storage != other.storage or self.end <= other.first or other.end <= self.first:
            return False
        if self.frame != other.frame:
            return True
        return all(a < d and c < b for a, b, c, d in zip(self.lo, self.hi, other.lo, other.hi, strict=True))

    def covers(self, other: Footprint) -> bool:
        """Whether every element of ``other`` is one of this footprint's (known only in one frame)."""
        return self.frame == other.frame and all(
            a <= c and d <= b for a, b, c, d in zip(self.lo, self.hi, other.lo, other.hi, strict=True)
        )


def footprint(tensor: torch.Tensor) -> Footprint:
    """The elements of GM ``tensor``, as a :class:`Footprint`."""
    frame, origin = tensor_frame(tensor)
    size = tensor.element_size()
    first = int(tensor.storage_offset()) * size
    last = sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride(), strict=True) if n > 0)
    end = first + (last + 1) * size if tensor.numel() else first
    hi = tuple(o + n for o, n in zip(origin, tensor.shape, strict=True))
    return Footprint(tensor.untyped_storage().data_ptr(), first, end, frame, origin, hi)
