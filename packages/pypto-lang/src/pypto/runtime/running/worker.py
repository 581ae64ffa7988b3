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
from contextvars import Token
from typing import Any, ParamSpec, TypeVar

from pypto.ir import PlatformError, PyptoError
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime.compiling.compiled import CompiledProgram
from pypto.runtime.config import RunConfig
from pypto.runtime.platforms.registry import get_backend
from pypto.runtime.running.device import ACTIVE_WORKER, DeviceTensor, DeviceTensorError, check_device_range

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


class WorkerError(PyptoError, RuntimeError):
    """A ``ChipWorker`` used wrongly: closed, or given a program compiled for another platform."""


class Registration:
    """A compiled program registered with a worker: call it with the program's arguments to launch
    it (``handle(a, weight, out)``), with no lookup per launch. ``with handle:`` releases it at the
    end of the block, as :meth:`unregister` does; the program stays loaded on the worker (its
    other handles keep working) until ``worker.close()``."""

    def __init__(self, worker: ChipWorker, compiled: CompiledProgram) -> None:
        self.worker = worker
        self.compiled = compiled
        self.released = False

    @_at_user_line
    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        self.worker._check_open()  # a closed worker says so, not that the handle was released
        if self.released:
            raise WorkerError(
                f"this registration of {self.compiled.entry.name} was released (unregister())",
                call_site(),
                "register the program again: handle = worker.register(compiled)",
            )
        return self.worker._dispatch(self.compiled, args, config)

    def unregister(self) -> None:
        """Release this handle; calling it afterwards is an error."""
        self.released = True

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()

    def __repr__(self) -> str:
        state = "released" if self.released else "live"
        return f"Registration({self.compiled.entry.name}, {self.worker.platform}, {state})"


# The worker levels of PyPTO's hierarchy: 2 drives one chip; 3 and above drive several chips from
# a host (the distributed programs of pl.Level.HOST and above); below 2 there is no worker: the
# chip's runtime dispatches tasks to its core groups and cores.
CHIP_LEVEL = 2
HOST_LEVEL = 3


class ChipWorker:
    """The connection to one device of ``config.platform`` (``config.device_id``): it runs compiled
    programs and holds device buffers. Use it in a ``with`` block (inside it, ``compiled(...)``
    dispatches through this worker), or ``close()`` it.

    ``level`` is the hierarchy level the worker drives: 2, one chip (the only level a
    ``ChipWorker`` has; 3 and above are the multi-chip workers of distributed programs, and below
    2 the chip's own runtime dispatches). ``enable_sdma`` asks for the SDMA workspace prefetching
    kernels use; no simulator provides one, so there it is an error, as on a runtime without it.

    ``ChipWorker(config=RunConfig(platform="a2a3sim"))``
    """

    @_at_user_line
    def __init__(
        self, config: RunConfig | None = None, *, level: int = CHIP_LEVEL, enable_sdma: bool = False
    ) -> None:
        if config is not None and not isinstance(config, RunConfig):
            raise WorkerError(
                f"ChipWorker(config=...) takes a RunConfig, got {type(config).__name__}",
                call_site(),
                'from pypto.runtime import RunConfig; ChipWorker(config=RunConfig(platform="a2a3sim"))',
            )
        _check_level(level)
        self.config = config or RunConfig()
        self.level = level
        self.backend = get_backend(self.config.platform_name, self.config.platform_origin)
        _check_sdma(enable_sdma, self.config.platform_name, self.backend)
        self.enable_sdma = enable_sdma
        self._tensors: dict[int, DeviceTensor] = {}
        self._loaded: dict[int, CompiledProgram] = {}  # id(chip_callable) -> its program
        self._registered: dict[int, Registration] = {}
        self._handles = itertools.count(1)
        self._active: list[Token[Any]] = []
        self.aicpu_dlopen_count = 0
        self.closed = False

    @property
    def platform(self) -> str:
        return self.config.platform_name

    @property
    def device_id(self) -> int:
        return self.config.device_id

    def __enter__(self) -> ChipWorker:
        self._active.append(ACTIVE_WORKER.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._active:
            ACTIVE_WORKER.reset(self._active.pop())
        self.close()

    # ------------------------------------------------------------ device buffers

    @_at_user_line
    def alloc_tensor(self, shape: Sequence[int], dtype: Any, *, init: Any = None) -> DeviceTensor:
        """A buffer of ``shape`` and ``dtype`` (a torch dtype) on the device, zeroed or a copy of
        ``init`` (a tensor of that many elements; one H2D copy)."""
        import torch

        self._check_open()
        dims = _shape(shape)
        if not isinstance(dtype, torch.dtype):
            raise DeviceTensorError(
                f"alloc_tensor takes a torch dtype, got {dtype!r}",
                call_site(),
                "write it like worker.alloc_tensor((128, 128), torch.float32)",
            )
        data = torch.zeros(dims, dtype=dtype)
        if init is not None:
            source = init if isinstance(init, torch.Tensor) else torch.as_tensor(init)
            if source.numel() != data.numel():
                raise DeviceTensorError(
                    f"alloc_tensor(shape={dims}) was given init of {source.numel()} elements, "
                    f"not {data.numel()}",
                    call_site(),
                    "pass init of the buffer's shape, or leave it out for a zeroed buffer",
                )
            data.copy_(source.detach().reshape(data.shape).to(dtype))
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
    def copy_to(self, device_ptr: int, host_ptr: Any, nbytes: int) -> None:
        """Copy ``nbytes`` from the host address ``host_ptr`` (``t.data_ptr()`` of a host tensor, or
        the tensor itself) to the device address ``device_ptr`` (inside a ``DeviceTensor`` of this
        worker: ``d.data_ptr``)."""
        self._check_open()
        count = _nbytes(nbytes, "copy_to")
        source = _host_address(host_ptr, count, "copy_to")
        self._device_range(device_ptr, count, "copy_to")
        ctypes.memmove(device_ptr, source, count)

    @_at_user_line
    def copy_from(self, host_ptr: Any, device_ptr: int, nbytes: int) -> None:
        """Copy ``nbytes`` from the device address ``device_ptr`` (a ``DeviceTensor.data_ptr``) to the
        host address ``host_ptr`` (``out.data_ptr()`` of a host tensor big enough, or the tensor)."""
        self._check_open()
        count = _nbytes(nbytes, "copy_from")
        target = _host_address(host_ptr, count, "copy_from")
        self._device_range(device_ptr, count, "copy_from")
        ctypes.memmove(target, device_ptr, count)

    # ------------------------------------------------------------ launches

    @_at_user_line
    def register(self, compiled: CompiledProgram) -> Registration:
        """Check and load ``compiled`` on this worker now (once per program: later registrations
        return aliases) and return a callable that launches it."""
        self._check_program(compiled)
        self._load(compiled)
        found = self._registered.get(id(compiled.chip_callable))
        if found is None or found.released:
            found = self._registered[id(compiled.chip_callable)] = Registration(self, compiled)
        return found

    @_at_user_line
    def run(self, compiled: CompiledProgram, *args: Any, config: RunConfig | None = None) -> Any:
        """Launch ``compiled`` on ``args`` (torch tensors, this worker's ``DeviceTensor`` s, scalars);
        returns what its entry returns. ``config`` gives this launch's runtime settings (default:
        the worker's). The harness options (``codegen_only``, tolerances) play no part: the
        program is dispatched."""
        self._check_program(compiled)
        return self._dispatch(compiled, args, config)

    def _dispatch(self, compiled: CompiledProgram, args: tuple[Any, ...], config: RunConfig | None) -> Any:
        self._check_open()
        if config is not None and not isinstance(config, RunConfig):
            raise WorkerError(
                f"config= takes a RunConfig, got {type(config).__name__}",
                call_site(),
                "pass config=RunConfig(...), or leave it out for the worker's",
            )
        call = compiled.build_call_config(self._launch_config(config))
        self._load(compiled)
        values = tuple(self._device_value(arg) for arg in args)
        orch = compiled.build_orch_args(*values)
        result = compiled.launch(orch.values, call)
        if result is None and orch.made:
            return orch.made[0] if len(orch.made) == 1 else orch.made
        return result

    def _launch_config(self, config: RunConfig | None) -> RunConfig:
        """A launch's config: the worker's, or the one given, which must name this worker's device."""
        if config is None:
            return self.config
        if config.platform_name != self.platform or config.device_id != self.device_id:
            raise WorkerError(
                f"config= names {config.platform_name} device {config.device_id}, but this worker runs "
                f"{self.platform} device {self.device_id}",
                call_site(),
                "give a config of this worker's platform and device_id, or leave config= out",
            )
        return config

    def _load(self, compiled: CompiledProgram) -> None:
        """Load ``compiled``'s callable on the worker once: ``aicpu_dlopen_count`` counts the loads."""
        key = id(compiled.chip_callable)
        if key not in self._loaded:
            self._loaded[key] = compiled  # keeps the callable, and so its id, alive
            self.aicpu_dlopen_count += 1

    def close(self) -> None:
        """Release the registrations, the loaded programs and every ``DeviceTensor`` still held."""
        for tensor in list(self._tensors.values()):
            tensor._data = None
        self._tensors.clear()
        for handle in self._registered.values():
            handle.released = True
        self._registered.clear()
        self._loaded.clear()
        self.closed = True

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._tensors)} tensor(s), {len(self._loaded)} program(s)"
        return f"ChipWorker({self.platform}, device {self.device_id}, {state})"

    # ------------------------------------------------------------ checks

    def _device_value(self, arg: Any) -> Any:
        if isinstance(arg, DeviceTensor):
            self._own(arg)
            return arg._live()
        return arg

    def _own(self, tensor: Any) -> None:
        self._check_open()
        if not isinstance(tensor, DeviceTensor):
            raise DeviceTensorError(
                f"expected a DeviceTensor, got {type(tensor).__name__}",
                call_site(),
                "pass what worker.alloc_tensor(...) returned",
            )
        if tensor.worker is not self:
            raise DeviceTensorError(
                f"device tensor {tensor.handle} belongs to another ChipWorker",
                call_site(),
                "a DeviceTensor is bound to the worker that allocated it: allocate one with this worker",
            )
        tensor._live()

    def _device_range(self, device_ptr: Any, nbytes: int, what: str) -> None:
        """``nbytes`` at ``device_ptr`` lie inside one live buffer of this worker."""
        check_device_range(
            device_ptr,
            nbytes,
            what,
            self._tensors.values(),
            "this worker holds (freed, of another worker, or never allocated)",
            f"{what} with t.data_ptr of a live DeviceTensor t allocated by this worker",
        )

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


def _check_level(level: Any) -> None:
    """``level`` is 2 (one chip); 3 and above belong to distributed programs (a DistributedWorker)."""
    if isinstance(level, bool) or not isinstance(level, int):
        raise WorkerError(
            f"ChipWorker(level=...) takes an int, got {type(level).__name__} {level!r}",
            call_site(),
            "leave level= out: a ChipWorker drives one chip, level 2",
        )
    if level >= HOST_LEVEL:
        raise WorkerError(
            f"ChipWorker(level={level}): level {level} drives several chips from a host (the "
            "distributed programs of pl.Level.HOST and above), which is a DistributedWorker's",
            call_site(),
            "use level=2 (one chip) for a ChipWorker; for a HOST program, compiled.prepare() gives its "
            "DistributedWorker",
        )
    if level != CHIP_LEVEL:
        raise WorkerError(
            f"ChipWorker(level={level}): there is no worker below the chip (level 2); the chip's "
            "runtime dispatches each task to its core groups and cores",
            call_site(),
            "use level=2, or leave level= out",
        )


def _check_sdma(enable_sdma: Any, platform: str, backend: Any) -> None:
    if not isinstance(enable_sdma, bool):
        raise WorkerError(
            f"ChipWorker(enable_sdma=...) takes True or False, got {enable_sdma!r}",
            call_site(),
            "leave enable_sdma= out",
        )
    if enable_sdma and not getattr(backend, "sdma", False):
        raise WorkerError(
            f"ChipWorker(enable_sdma=True): {platform} provides no SDMA workspace",
            call_site(),
            "leave enable_sdma= out: only an onboard runtime with an SDMA provider takes it",
        )


def _shape(shape: Any) -> tuple[int, ...]:
    """A buffer's shape: a sequence of ints >= 0 (an int is a 1-d shape)."""
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else shape
    try:
        values = tuple(dims)
    except TypeError:
        values = ()
    if not values or any(isinstance(d, bool) or not hasattr(d, "__index__") or int(d) < 0 for d in values):
        raise DeviceTensorError(
            f"alloc_tensor takes a shape of ints >= 0, got {shape!r}",
            call_site(),
            "write it like worker.alloc_tensor((128, 128), torch.float32)",
        )
    return tuple(int(d) for d in values)


def _nbytes(nbytes: Any, what: str) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise DeviceTensorError(
            f"{what} takes a byte count (an int >= 0), got {nbytes!r}",
            call_site(),
            f"pass t.nbytes: worker.{what}(..., t.nbytes)",
        )
    return nbytes


def _host_address(host: Any, nbytes: int, what: str) -> int:
    """The host address of ``host`` (an int, or a contiguous CPU tensor of at least ``nbytes``)."""
    import torch

    if isinstance(host, DeviceTensor):
        raise DeviceTensorError(
            f"{what}: the host side is a DeviceTensor",
            call_site(),
            "pass a host tensor (or its data_ptr()) on the host side",
        )
    if isinstance(host, torch.Tensor):
        if host.device.type != "cpu" or not host.is_contiguous():
            raise DeviceTensorError(
                f"{what}: the host tensor must be a contiguous CPU tensor",
                call_site(),
                "pass t.contiguous() of a CPU tensor",
            )
        size = host.numel() * host.element_size()
        if nbytes > size:
            raise DeviceTensorError(
                f"{what}: {nbytes} bytes do not fit the host tensor of {size} bytes",
                call_site(),
                "pass a host tensor at least as large as the copy",
            )
        return int(host.data_ptr())
    if isinstance(host, bool) or not isinstance(host, int) or host <= 0:
        raise DeviceTensorError(
            f"{what}: the host address must be a tensor's data_ptr() (an int > 0), got {host!r}",
            call_site(),
            "pass out.data_ptr() of a host tensor large enough, or the tensor itself",
        )
    return host


__all__ = ["ChipWorker", "DeviceTensor", "DeviceTensorError", "Registration", "WorkerError"]
