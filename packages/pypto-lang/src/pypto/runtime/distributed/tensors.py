"""``StackedDeviceTensor``: a host tensor sharded along its leading dimension, shard ``i`` resident
on the device of worker ``worker_ids[i]`` (``DistributedWorker.alloc_stacked_tensor``)."""

from __future__ import annotations

from typing import Any

from pypto.ir.tracebacks import call_site
from pypto.runtime.running.device import DeviceTensor, DeviceTensorError


class StackedDeviceTensor:
    """Shards of one ``[B, *tail]`` tensor, shard ``i`` a :class:`DeviceTensor` on worker
    ``worker_ids[i]``. Passed to a dispatch in place of the whole host tensor, ``x[r]`` in the HOST
    orchestrator resolves to the resident shard ``r``: no upload per dispatch.

    ``shape`` / ``dtype`` are the whole stack's; ``shards`` the per-worker ``DeviceTensor`` s."""

    def __init__(
        self, worker: Any, data: Any, shards: list[DeviceTensor], worker_ids: tuple[int, ...]
    ) -> None:
        self.worker = worker
        self.shards = shards
        self.worker_ids = worker_ids
        self._data: Any = data

    @property
    def freed(self) -> bool:
        return self._data is None

    def _live(self) -> Any:
        if self._data is None:
            raise DeviceTensorError(
                "this StackedDeviceTensor was freed",
                call_site(),
                "allocate it again with rt.alloc_stacked_tensor(host_w), and free it once it is no "
                "longer used",
            )
        return self._data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._live().shape)

    @property
    def dtype(self) -> Any:
        return self._live().dtype

    def __len__(self) -> int:
        return len(self.shards)

    def __repr__(self) -> str:
        if self._data is None:
            return "StackedDeviceTensor(freed)"
        return (
            f"StackedDeviceTensor(shape={self.shape}, dtype={self.dtype}, "
            f"shards on workers {list(self.worker_ids)})"
        )


__all__ = ["StackedDeviceTensor"]
