"""``ChipWorker`` and ``DeviceTensor``: dispatching compiled programs explicitly, with buffers that
stay on the device between launches (PyPTO's manual, "Running").

A worker is bound to one platform (``RunConfig.platform``) and device. It runs a
:class:`~pypto.runtime.CompiledProgram` compiled for that platform (``worker.run(compiled, *args)``),
or registers it once and hands back a callable (``worker.register(compiled)``). ``alloc_tensor``
makes a :class:`DeviceTensor`: a buffer the worker keeps on its device, which a compiled program
takes wherever it takes a ``torch.Tensor``, with no copy in or out; it is read back with
``copy_from`` and released with ``free_tensor`` (``close()`` releases what is left).

On a simulator the device's memory is the host's: a ``DeviceTensor`` holds a torch tensor the
worker owns, and the launches read and write it in place, as the chip would its HBM.

>>> with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:  # doctest: +SKIP
...     weight = w.alloc_tensor((128, 128), torch.float32, init=b)
...     w.run(compiled, a, weight, out)
...     w.free_tensor(weight)
"""

from __future__ import annotations

import ctypes
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from pypto.ir import PlatformError, PyptoError
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime.compiling.compiled import CompiledProgram
from pypto.runtime.config import RunConfig
from pypto.runtime.platforms.registry import get_backend

P = ParamSpec("P")
R = TypeVar("R")


def _at_user_line(method: Callable[P, R]) -> Callable[P, R]:
    """Raise a PyptoError of a worker method from the user's line, not from the worker's frames."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except PyptoError as err:
            failure = err
        raise_at_user_line(failure, "ChipWorker")

    return wrapper


class DeviceTensorError(PyptoError, ValueError):
    """A ``DeviceTensor`` used where it cannot be: freed, of another worker, or of a closed one."""


class WorkerError(PyptoError, RuntimeError):
    """A ``ChipWorker`` used wrongly: closed, or given a program compiled for another platform."""


class DeviceTensor:
    """A buffer on a worker's device: ``shape``, ``dtype``, ``nbytes`` and ``data_ptr`` (its
    device address). Made by :meth:`ChipWorker.alloc_tensor`; bound to that worker."""

    def __init__(self, worker: ChipWorker, data: Any, handle: int) -> None:
        self.worker = worker
        self.handle = handle
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


class Registration:
    """A compiled program registered with a worker: call it with the program's arguments to launch
    it (``handle(a, weight, out)``), with no lookup per launch."""

    def __init__(self, worker: ChipWorker, compiled: CompiledProgram) -> None:
        self.worker = worker
        self.compiled = compiled

    def __call__(self, *args: Any) -> Any:
        return self.worker.run(self.compiled, *args)


class ChipWorker:
    """The connection to one device of ``config.platform`` (``config.device_id``): it runs compiled
    programs and holds device buffers. Use it in a ``with`` block, or ``close()`` it.

    ``ChipWorker(config=RunConfig(platform="a2a3sim"))``
    """

    @_at_user_line
    def __init__(self, config: RunConfig | None = None) -> None:
        if config is not None and not isinstance(config, RunConfig):
            raise WorkerError(
                f"ChipWorker(config=...) takes a RunConfig, got {type(config).__name__}",
                call_site(),
                'from pypto.runtime import RunConfig; ChipWorker(config=RunConfig(platform="a2a3sim"))',
            )
        self.config = config or RunConfig()
        self.backend = get_backend(self.config.platform_name, self.config.platform_origin)
        self._tensors: dict[int, DeviceTensor] = {}
        self._registered: dict[int, Registration] = {}
        self._handles = itertools.count(1)
        self.closed = False

    @property
    def platform(self) -> str:
        return self.config.platform_name

    def __enter__(self) -> ChipWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ device buffers

    @_at_user_line
    def alloc_tensor(self, shape: Sequence[int], dtype: Any, init: Any = None) -> DeviceTensor:
        """A buffer of ``shape`` and ``dtype`` (a torch dtype) on the device, zeroed or a copy of
        ``init`` (a tensor of that many elements)."""
        import torch

        self._check_open()
        data = torch.zeros(tuple(int(d) for d in shape), dtype=dtype)
        if init is not None:
            source = torch.as_tensor(init)
            if source.numel() != data.numel():
                raise DeviceTensorError(
                    f"alloc_tensor(shape={tuple(data.shape)}) was given init of {source.numel()} elements, "
                    f"not {data.numel()}",
                    call_site(),
                    "pass init of the buffer's shape, or leave it out for a zeroed buffer",
                )
            data.copy_(source.reshape(data.shape).to(dtype))
        tensor = DeviceTensor(self, data, next(self._handles))
        self._tensors[tensor.handle] = tensor
        return tensor

    @_at_user_line
    def free_tensor(self, tensor: DeviceTensor) -> None:
        """Release ``tensor``'s buffer; using it afterwards is an error."""
        self._own(tensor)
        del self._tensors[tensor.handle]
        tensor._data = None

    @_at_user_line
    def copy_from(self, host_ptr: int, device_ptr: int, nbytes: int) -> None:
        """Copy ``nbytes`` from the device address ``device_ptr`` (a ``DeviceTensor.data_ptr``) to the
        host address ``host_ptr`` (``out.data_ptr()`` of a host tensor big enough)."""
        self._check_open()
        owner = next(
            (t for t in self._tensors.values() if t.data_ptr <= device_ptr < t.data_ptr + t.nbytes), None
        )
        if owner is None or device_ptr + nbytes > owner.data_ptr + owner.nbytes:
            raise DeviceTensorError(
                f"copy_from: {nbytes} bytes at device address {device_ptr:#x} are not inside a buffer "
                "this worker holds",
                call_site(),
                "copy from t.data_ptr with at most t.nbytes bytes of a live DeviceTensor t of this worker",
            )
        ctypes.memmove(host_ptr, device_ptr, nbytes)

    # ------------------------------------------------------------ launches

    @_at_user_line
    def register(self, compiled: CompiledProgram) -> Registration:
        """Check ``compiled`` against this worker once and return a callable that launches it."""
        self._check_program(compiled)
        found = self._registered.get(id(compiled))
        if found is None:
            found = self._registered[id(compiled)] = Registration(self, compiled)
        return found

    @_at_user_line
    def run(self, compiled: CompiledProgram, *args: Any) -> Any:
        """Launch ``compiled`` on ``args`` (torch tensors, this worker's ``DeviceTensor`` s, scalars);
        returns what its entry returns. The harness options of the worker's config
        (``codegen_only``, tolerances) play no part: the program is dispatched."""
        self._check_program(compiled)
        values = tuple(self._device_value(arg) for arg in args)
        return compiled.dispatch(values, self.config)

    def close(self) -> None:
        """Release the registrations and every ``DeviceTensor`` still held."""
        for tensor in list(self._tensors.values()):
            tensor._data = None
        self._tensors.clear()
        self._registered.clear()
        self.closed = True

    # ------------------------------------------------------------ checks

    def _device_value(self, arg: Any) -> Any:
        if isinstance(arg, DeviceTensor):
            self._own(arg)
            return arg._live()
        return arg

    def _own(self, tensor: DeviceTensor) -> None:
        self._check_open()
        if tensor.worker is not self:
            raise DeviceTensorError(
                f"device tensor {tensor.handle} belongs to another ChipWorker",
                call_site(),
                "a DeviceTensor is bound to the worker that allocated it: allocate one with this worker",
            )
        tensor._live()

    def _check_open(self) -> None:
        if self.closed:
            raise WorkerError(
                "this ChipWorker is closed",
                call_site(),
                "make a new ChipWorker, or keep the work inside its `with` block",
            )

    def _check_program(self, compiled: Any) -> None:
        self._check_open()
        if not isinstance(compiled, CompiledProgram):
            raise WorkerError(
                f"a ChipWorker runs a CompiledProgram, got {type(compiled).__name__}",
                call_site(),
                "compile it first: ir.compile(program, platform=...) or kernel.compile(*args, config=...)",
            )
        if compiled.platform != self.platform:
            raise PlatformError(
                f"the program was compiled for {compiled.platform!r}, but this worker runs on "
                f"{self.platform!r}",
                call_site(),
                "compile it for the platform you dispatch on: "
                f"ir.compile(program, platform={self.platform!r})",
            )


__all__ = ["ChipWorker", "DeviceTensor", "DeviceTensorError", "Registration", "WorkerError"]
