"""Device-side state shared by the compiled program and the worker: ``DeviceTensor`` (a buffer a
``ChipWorker`` keeps on its device) and the worker a ``with ChipWorker(...):`` block makes active,
which ``compiled(...)`` inside the block dispatches through."""

from __future__ import annotations

from collections.abc import Iterable
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


def check_device_range(
    device_ptr: Any,
    nbytes: int,
    what: str,
    resident: Iterable[Any],
    holder: str,
    owner_hint: str,
    handles: tuple[type, ...] = (),
) -> None:
    """``nbytes`` at ``device_ptr`` lie inside one of the live buffers ``resident`` (the device
    tensors of a worker, or of one card of a distributed worker); else a DeviceTensorError saying
    so (not an address, a freed buffer, another worker's, past the end). ``holder`` ends the
    message's "not inside a buffer ..." clause, ``owner_hint`` is the hint for it; ``handles`` are
    further tensor types passed by mistake for an address (a stacked tensor)."""
    if isinstance(device_ptr, (DeviceTensor, *handles)):
        raise DeviceTensorError(
            f"{what} takes a device address, got the {type(device_ptr).__name__} itself",
            call_site(),
            "pass its address: t.data_ptr (and t.nbytes) of the DeviceTensor t",
        )
    if isinstance(device_ptr, bool) or not isinstance(device_ptr, int):
        raise DeviceTensorError(
            f"{what}: the device address must be an int, got {type(device_ptr).__name__}",
            call_site(),
            "pass t.data_ptr of a DeviceTensor t of this worker",
        )
    owner = next((t for t in resident if t.data_ptr <= device_ptr < t.data_ptr + t.nbytes), None)
    if owner is None:
        raise DeviceTensorError(
            f"{what}: device address {device_ptr:#x} is not inside a buffer {holder}", call_site(), owner_hint
        )
    end = owner.data_ptr + owner.nbytes
    if device_ptr + nbytes > end:
        raise DeviceTensorError(
            f"{what}: {nbytes} bytes at device address {device_ptr:#x} run past the end of device "
            f"tensor {owner.handle} ({owner.nbytes} bytes)",
            call_site(),
            f"copy at most {end - device_ptr} bytes from that address (t.nbytes from t.data_ptr)",
        )
