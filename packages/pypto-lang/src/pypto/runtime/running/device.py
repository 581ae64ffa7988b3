"""Device-side state shared by the compiled program and the worker: ``DeviceTensor`` (a buffer a
``ChipWorker`` keeps on its device) and the worker a ``with ChipWorker(...):`` block makes active,
which ``compiled(...)`` inside the block dispatches through."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from pypto.ir import PyptoError
from pypto.ir.tracebacks import call_site

# The worker of the innermost ``with ChipWorker(...):`` block of this context, if any.
ACTIVE_WORKER: ContextVar[Any] = ContextVar("pypto_active_chip_worker", default=None)


class DeviceTensorError(PyptoError, ValueError):
    """A ``DeviceTensor`` or a device address used where it cannot be: freed, of another worker,
    of a closed one, or a copy outside the buffer."""


class DeviceTensor:
    """A buffer on a worker's device: ``shape``, ``dtype``, ``nbytes`` and ``data_ptr`` (its
    device address). Made by ``ChipWorker.alloc_tensor`` or ``DistributedWorker.alloc_tensor``;
    bound to that worker (``worker_id``: the rank whose device holds it, 0 for a ``ChipWorker``)."""

    def __init__(self, worker: Any, data: Any, handle: int, worker_id: int = 0) -> None:
        self.worker = worker
        self.handle = handle
        self.worker_id = worker_id
        self._data: Any = data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._live().shape)

    @property
    def dtype(self) -> Any:
        return self._live().dtype

    @property
    def nbytes(self) -> int:
        data = self._live()
        return int(data.numel() * data.element_size())

    @property
    def data_ptr(self) -> int:
        """The buffer's device address (on a simulator, where its bytes are in host memory)."""
        return int(self._live().data_ptr())

    @property
    def freed(self) -> bool:
        return self._data is None

    def _live(self) -> Any:
        if self._data is None:
            raise DeviceTensorError(
                f"device tensor {self.handle} was freed",
                call_site(),
                "allocate it again with worker.alloc_tensor(...), and free it once it is no longer used",
            )
        return self._data

    def __repr__(self) -> str:
        if self._data is None:
            return f"DeviceTensor({self.handle}, freed)"
        return f"DeviceTensor({self.handle}, shape={self.shape}, dtype={self.dtype})"


__all__ = ["ACTIVE_WORKER", "DeviceTensor", "DeviceTensorError"]
