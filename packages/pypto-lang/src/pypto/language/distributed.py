"""``import pypto.language.distributed as pld``: PyPTO's distributed model.

A ``@pl.jit.host`` orchestrator allocates per-rank window buffers and dispatches a ``@pl.jit``
chip orchestration to each rank; kernels talk to the other ranks through ``pld.DistributedTensor``
windows: signals (``pld.system.notify`` / ``wait``), remote loads and stores, put / get, and the
collectives (``pld.tensor.allreduce``, ...).

Each function has a full path (``pld.system.*``, ``pld.tensor.*``, ``pld.tile.*``); a few have a
short form too (``pld.rank``, ``pld.window``, ``pld.remote_load``, ``pld.remote_store``, ...). The
signal, put / get and collective ops have none: ``pld.system.notify``, ``pld.tensor.put``.

>>> @pl.jit.host
... def hello(x: pl.Tensor[[2, 8, 8], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 8], pl.FP32]]):
...     for r in pl.range(pld.world_size()):
...         per_rank(x[r], y[r], r, device=r)
"""

from __future__ import annotations

from typing import Any

from pypto.ir import AtomicType, NotifyOp, ReduceOp, WaitCmp
from pypto.language.annotations import CommCtx, DistributedTensor, WindowBuffer
from pypto.language.builtins import DistBuiltin

# Each namespace's members: name -> one line of what it does.
_SYSTEM = {
    "world_size": "the number of ranks (HOST functions only), an INT64",
    "get_comm_ctx": "the communication context of a window (HOST functions and kernels)",
    "rank": "this rank's index, an INT32 (kernels only)",
    "nranks": "the number of ranks, an INT32 (kernels only)",
    "notify": "deposit a value into a peer's signal cell, added or set (kernels only)",
    "wait": "block until this rank's signal cell satisfies cmp(expected) (kernels only)",
    "defer_wait": "complete the enclosing pl.at task only once a signal cell reaches expected",
}
_TENSOR = {
    "alloc_window_buffer": "a per-rank window buffer of a size in bytes, or of a shape and dtype= (HOST)",
    "window": "a pld.DistributedTensor view of a window buffer (HOST)",
    "remote_store": "a local tensor written into a peer's window (kernels only)",
    "put": "write a local tensor into a peer's window (kernels only)",
    "get": "read a peer's window into a local tensor (kernels only)",
    "allreduce": "every rank's window reduced over the ranks, in place",
    "barrier": "block until every rank arrives",
    "broadcast": "the root rank's window on every rank",
    "allgather": "every rank's chunk gathered into row r of every rank's window",
    "reduce_scatter": "row r of the window summed over the ranks, on rank r",
    "all_to_all": "row d of each rank's input sent to rank d",
}
_TILE = {
    "remote_load": "a region of a peer's window read into a local tile (kernels only)",
    "remote_store": "a local tile written into a peer's window (kernels only)",
}
# The short forms, and the path each stands for ("remote_store" picks the tile or tensor form).
SHORT_FORMS = {
    "world_size": "system.world_size",
    "rank": "system.rank",
    "nranks": "system.nranks",
    "get_comm_ctx": "system.get_comm_ctx",
    "alloc_window_buffer": "tensor.alloc_window_buffer",
    "window": "tensor.window",
    "remote_load": "tile.remote_load",
    "remote_store": "remote_store",
}


class Namespace:
    """``pld.system``, ``pld.tensor``, ``pld.tile``: the distributed functions of one namespace."""

    def __init__(self, name: str, members: dict[str, str]) -> None:
        self._name = name
        self._members = {m: DistBuiltin(f"{name}.{m}", doc) for m, doc in members.items()}

    def __getattr__(self, name: str) -> DistBuiltin:
        member = self._members.get(name)
        if member is None:
            raise AttributeError(
                f"pld.{self._name} has no function {name!r} (it has: {', '.join(sorted(self._members))})"
            )
        return member

    def __dir__(self) -> list[str]:
        return sorted(self._members)

    def __repr__(self) -> str:
        return f"<pld.{self._name}: {', '.join(sorted(self._members))}>"


system = Namespace("system", _SYSTEM)
tensor = Namespace("tensor", _TENSOR)
tile = Namespace("tile", _TILE)

world_size = system.world_size
rank = system.rank
nranks = system.nranks
get_comm_ctx = system.get_comm_ctx
alloc_window_buffer = tensor.alloc_window_buffer
window = tensor.window
remote_load = tile.remote_load
remote_store = DistBuiltin("remote_store", "a local tile or tensor written into a peer's window")

# The functions with no short form: where to find each.
_FULL_PATHS = {
    name: f"pld.{space}.{name}"
    for space, members in (("system", _SYSTEM), ("tensor", _TENSOR), ("tile", _TILE))
    for name in members
    if name not in SHORT_FORMS
}


def __getattr__(name: str) -> Any:
    if name in _FULL_PATHS:
        raise AttributeError(
            f"pld.{name} has no short form: write {_FULL_PATHS[name]}(...) (the signal, put / get and "
            "collective functions are spelled with their namespace)"
        )
    raise AttributeError(f"module 'pypto.language.distributed' has no attribute {name!r}")


__all__ = [
    "AtomicType",
    "CommCtx",
    "DistributedTensor",
    "NotifyOp",
    "ReduceOp",
    "WaitCmp",
    "WindowBuffer",
    "alloc_window_buffer",
    "get_comm_ctx",
    "nranks",
    "rank",
    "remote_load",
    "remote_store",
    "system",
    "tensor",
    "tile",
    "window",
    "world_size",
]
