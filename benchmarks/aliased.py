"""One tensor's bytes seen several times in a row: a model's layers sharing one layer's weights.

Qwen3-32B's 64 layers hold about 62 GB of BF16 weights and, at batch 16 and 4096 positions, 17 GB
of KV cache; the benchmark machine has 24 GB. :func:`repeated` maps the same physical pages (a
``memfd``) at ``times`` consecutive places of one virtual range, so that a ``[times * rows, ...]``
tensor costs one block's memory: every layer reads its own rows of a normal, contiguous tensor (a
kernel, torch and the simulator's checks see distinct addresses), and the rows of all layers hold
the same values. A write through one layer's rows is seen by every layer's: a KV cache made so
holds, after a step, the last layer's new keys (the reference sees the same, in the same order).

Linux only (``os.memfd_create`` and ``mmap`` with ``MAP_FIXED``); the mappings live as long as
the process.
"""

from __future__ import annotations

import ctypes
import mmap
import os

import torch

_PROT_NONE, _MAP_FIXED, _MAP_NORESERVE, _MAP_POPULATE = 0, 0x10, 0x4000, 0x8000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_FAILED = ctypes.c_void_p(-1).value


def available() -> bool:
    """Whether this platform can alias memory so (Linux)."""
    return hasattr(os, "memfd_create") and hasattr(mmap, "MAP_SHARED")


def repeated(block: torch.Tensor, times: int) -> torch.Tensor:
    """A contiguous ``[times * block.shape[0], *block.shape[1:]]`` tensor whose ``times`` row
    blocks are the same memory, holding ``block``'s values; the block's size must be a whole
    number of pages."""
    nbytes = block.numel() * block.element_size()
    if nbytes % mmap.PAGESIZE:
        raise ValueError(f"a block of {nbytes} bytes is not a whole number of {mmap.PAGESIZE}-byte pages")
    fd = os.memfd_create("pypto-bench-repeated")
    try:
        os.ftruncate(fd, nbytes)
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
        base = _libc.mmap(None, nbytes * times, _PROT_NONE, flags, -1, 0)
        if base in (None, _FAILED):
            raise OSError(ctypes.get_errno(), f"cannot reserve {nbytes * times} bytes of address space")
        for i in range(times):
            where = base + i * nbytes
            # Populated now: else every page of every block faults on its first touch, inside the
            # timed run (35 million faults, 850 s of system time, in a 64-layer step).
            flags = mmap.MAP_SHARED | _MAP_FIXED | _MAP_POPULATE
            got = _libc.mmap(where, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, 0)
            if got != where:
                raise OSError(ctypes.get_errno(), f"cannot map block {i} of {times}")
    finally:
        os.close(fd)  # the mappings keep the memory
    buffer = (ctypes.c_byte * (nbytes * times)).from_address(base)
    whole = torch.frombuffer(buffer, dtype=block.dtype).view(times * block.shape[0], *block.shape[1:])
    whole[: block.shape[0]].copy_(block)
    return whole
