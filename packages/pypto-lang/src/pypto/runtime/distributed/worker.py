"""``DistributedWorker``: one prepared world of chips that dispatches distributed programs many
times (PyPTO's manual, "Execution").

``compiled.prepare()`` (or ``DistributedWorker(compiled)``, ``DistributedWorker([a, b])``) sets the
world up once; ``rt(*args)`` / ``rt.run(compiled, *args)`` dispatch and block, ``rt.submit(compiled,
*args)`` returns a :class:`DistributedRunHandle` (at most two dispatches in flight; a third waits
for the oldest). Resident buffers: ``alloc_tensor`` (a :class:`DeviceTensor` on one rank's device),
``alloc_stacked_tensor`` (a :class:`StackedDeviceTensor`, shard ``i`` on rank ``i``), the staged
copies ``copy_to`` / ``copy_from`` / ``copy_stacked_from``. ``persistent=True`` keeps the
communication windows across dispatches (zeroed before each reuse unless
``reset_persistent_windows=False``); ``callbacks={name: fn}`` binds the HOST SubWorkers.

Host tensors given to ``rt(...)`` / ``rt.run`` must be ``.share_memory_()``'d (before
``prepare()``): the ranks' processes see only shared memory. A private tensor is a ``TypeError``
at dispatch naming the argument. The staged APIs take any CPU-contiguous tensor.

The ranks run through :mod:`pypto.runtime.distributed.engine`: today in this process, one world
on one modeled clock (see that module).

>>> with compiled.prepare() as rt:  # doctest: +SKIP
...     rt(host_x, host_out)
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, ParamSpec, TypeVar

from pypto.ir import PyptoError
from pypto.ir.backend import WorldReport
from pypto.ir.errors import CommError
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime.config import RunConfig
from pypto.runtime.distributed.compiled import DistributedCompiledProgram, sub_workers
from pypto.runtime.distributed.engine import Engine, make_engine
from pypto.runtime.distributed.tensors import StackedDeviceTensor
from pypto.runtime.running.device import DeviceTensor, DeviceTensorError, check_device_range
from pypto.runtime.running.worker import _host_address, _nbytes, _shape
from pypto.runtime.settings import ConfigError

P = ParamSpec("P")
R = TypeVar("R")

IN_FLIGHT = 2  # the worker's dispatch metadata frames: at most two dispatches in flight


class DistributedWorkerError(PyptoError, RuntimeError):
    """A ``DistributedWorker`` used wrongly: closed, or given something it cannot dispatch."""


class NotDistributedError(PyptoError, TypeError):
    """Something other than a ``DistributedCompiledProgram`` where a worker needs one."""


class UnsharedTensorError(PyptoError, TypeError):
    """A host tensor given to ``rt(...)`` / ``rt.run`` that is not in shared memory."""


class UnpreparedProgramError(PyptoError, ValueError):
    """``rt.run(compiled, ...)`` of a program this worker was not prepared with."""


class AmbiguousDispatchError(PyptoError, TypeError):
    """``rt(*args)`` on a worker prepared with several programs: which one is meant?"""


class DispatchTimeoutError(PyptoError, TimeoutError):
    """``handle.result(timeout)`` ran out of time before the dispatch finished."""


def _at_user_line(method: Callable[P, R]) -> Callable[P, R]:
    """Raise a PyptoError of a worker method from the user's line, not from the worker's frames."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except PyptoError as err:
            failure = err.with_span(call_site())
        raise_at_user_line(failure, "DistributedWorker")

    return wrapper


class DistributedRunHandle:
    """One accepted dispatch: ``result(timeout=None)`` (alias ``wait``) blocks until it finishes and
    returns what the HOST entry returned, or raises the dispatch's error; ``done`` says whether it
    finished, without blocking; ``report`` is its :class:`~pypto.ir.backend.WorldReport` once done.
    The handle keeps its arguments alive until it finishes."""

    def __init__(
        self, compiled: DistributedCompiledProgram, future: Future[Any], args: tuple[Any, ...]
    ) -> None:
        self.compiled = compiled
        self._future = future
        self._args: tuple[Any, ...] | None = args
        self.report: WorldReport | None = None
        self.observed = False  # result() was asked: its error, if any, reached the caller

    @property
    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Any:
        """Wait (at most ``timeout`` seconds) and return the dispatch's result, or raise its error."""
        try:
            value = self._future.result(timeout)
        except FutureTimeout:
            raise DispatchTimeoutError(
                f"the dispatch of {self.compiled.entry.name} did not finish within {timeout} s",
                call_site(),
                "wait longer (handle.result() waits until it finishes), or check handle.done first",
            ) from None
        except BaseException:
            self.observed = True
            self._args = None
            raise
        self.observed = True
        self._args = None
        return value

    wait = result

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        return f"DistributedRunHandle({self.compiled.entry.name}, {state})"


class DistributedWorker:
    """A prepared world for one or more ``DistributedCompiledProgram`` s of the same platform and
    devices (``compiled.prepare()`` is the documented way to make one).

    ``config``: an optional ``RunConfig`` used only to warm the world up for that sizing; not kept
    (each dispatch takes its own ``config=``, default the program's). ``persistent``: keep each
    program's communication windows for the worker's lifetime; ``reset_persistent_windows``
    (default True with ``persistent``) zeroes them before each reuse. ``callbacks`` binds HOST
    SubWorkers by name (every ``...``-body SubWorker must be bound: a ``ValueError`` here
    otherwise); ``sub_worker_overrides`` replaces SubWorkers that have a body. ``startup_timeout_s``
    bounds how long the ranks may take to come up (a positive number of seconds; None: the
    default).
    """

    @_at_user_line
    def __init__(
        self,
        compiled: DistributedCompiledProgram | Sequence[DistributedCompiledProgram],
        config: RunConfig | None = None,
        *,
        extra_compiled: Sequence[DistributedCompiledProgram] = (),
        persistent: bool = False,
        reset_persistent_windows: bool | None = None,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        sub_worker_overrides: Mapping[str, Callable[..., Any]] | None = None,
        startup_timeout_s: float | None = None,
    ) -> None:
        self.closed = False
        self.programs = _programs(compiled, extra_compiled)
        first = self.programs[0]
        self.platform = first.platform
        self.device_ids = first.device_ids
        _check_prewarm(config)
        self.persistent = _flag("persistent", persistent)
        self.reset_persistent_windows = _reset_flag(reset_persistent_windows, self.persistent)
        self.callbacks = _bindings(self.programs, callbacks, sub_worker_overrides)
        self.startup_timeout_s = _timeout(startup_timeout_s)
        self.last_report: WorldReport | None = None
        self._tensors: dict[int, DeviceTensor] = {}
        self._stacks: dict[int, StackedDeviceTensor] = {}
        self._handles = itertools.count(1)
        self._windows: dict[int, Any] = {}  # id(program) -> its retained window store
        self._used_windows: set[int] = set()
        self._inherited: list[Any] = []  # host tensors of dispatches, kept alive as a forked child would
        self._in_flight: deque[DistributedRunHandle] = deque()
        self._admission = threading.Lock()
        # The ranks come up first: a process engine forks them before the dispatch thread exists.
        self.engine: Engine = make_engine(self.programs, self.callbacks, self.startup_timeout_s)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pypto-world")

    @property
    def world_size(self) -> int:
        return len(self.device_ids)

    @property
    def multi_program(self) -> bool:
        return len(self.programs) > 1

    def __enter__(self) -> DistributedWorker:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._close(raise_errors=exc_type is None)

    def __repr__(self) -> str:
        names = ", ".join(p.entry.name for p in self.programs)
        state = (
            "closed" if self.closed else f"{len(self._tensors)} tensor(s), {len(self._in_flight)} in flight"
        )
        return (
            f"DistributedWorker([{names}] on {self.world_size} {self.platform} chip(s), devices "
            f"{list(self.device_ids)}, persistent={self.persistent}, {state})"
        )

    # ------------------------------------------------------------ dispatch

    @_at_user_line
    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Dispatch the worker's one program on ``args`` and block: ``rt(host_x, host_out)``."""
        self._check_open()
        if self.multi_program:
            names = ", ".join(p.entry.name for p in self.programs)
            raise AmbiguousDispatchError(
                f"this worker holds {len(self.programs)} programs ({names}): rt(*args) does not say which "
                "to dispatch",
                call_site(),
                "dispatch each program explicitly: rt.run(compiled, *args)",
            )
        return self._accept(self.programs[0], args, config).result()

    @_at_user_line
    def run(self, compiled: DistributedCompiledProgram, *args: Any, config: RunConfig | None = None) -> Any:
        """Dispatch ``compiled`` (one of the worker's programs) on ``args`` and block."""
        return self._accept(compiled, args, config).result()

    @_at_user_line
    def submit(
        self, compiled: DistributedCompiledProgram, *args: Any, config: RunConfig | None = None
    ) -> DistributedRunHandle:
        """Dispatch ``compiled`` on ``args`` without blocking; returns its handle. Two dispatches may
        be in flight; a third waits for the oldest first. Overlapping dispatches need distinct
        mutable buffers; do not touch them before the handle's ``result()`` returns."""
        return self._accept(compiled, args, config)

    def _accept(self, compiled: Any, args: tuple[Any, ...], config: RunConfig | None) -> DistributedRunHandle:
        self._check_open()
        program = self._registered(compiled)
        chosen = program.checked_config(config)
        values = tuple(self._resolve(program, index, arg) for index, arg in enumerate(args))
        orch = program.build_orch_args(*values)
        made = list(orch.made)
        with self._admission:
            while len(self._in_flight) >= IN_FLIGHT:
                oldest = self._in_flight.popleft()
                oldest._future.exception()  # wait; its error stays for its own result()
            windows = self._windows_for(program)
            self._inherited += [a for a in args if _is_tensor(a)]
            handle = DistributedRunHandle(program, Future(), tuple(args))
            handle._future = self._executor.submit(self._run, handle, orch.values, chosen, windows, made)
            self._in_flight.append(handle)
        return handle

    def _run(
        self,
        handle: DistributedRunHandle,
        args: tuple[Any, ...],
        config: RunConfig,
        windows: Any,
        made: list[Any],
    ) -> Any:
        """One dispatch, on the worker's dispatch thread (dispatches run one after another)."""
        program = handle.compiled
        result = program.run_world(
            args, config, windows=windows, callbacks=self.callbacks, engine=self.engine
        )
        handle.report = program.world_report
        self.last_report = handle.report
        return program._or_made(result, made)

    def _registered(self, compiled: Any) -> DistributedCompiledProgram:
        for program in self.programs:
            if program is compiled:
                return program
        if isinstance(compiled, DistributedCompiledProgram):
            raise UnpreparedProgramError(
                f"{compiled.entry.name} was not prepared on this worker",
                call_site(),
                "prepare it with the others: first.prepare(extra_compiled=[this]) or "
                "DistributedWorker([first, this])",
            )
        raise NotDistributedError(
            f"rt.run takes a DistributedCompiledProgram first, got {type(compiled).__name__}",
            call_site(),
            "write rt.run(compiled, *args), or rt(*args) on a worker of one program",
        )

    def _resolve(self, program: DistributedCompiledProgram, index: int, arg: Any) -> Any:
        """An argument as the world takes it: a resident tensor's buffer; a host tensor, which must
        be in shared memory."""
        names = program.param_names
        name = names[index] if index < len(names) else f"#{index}"
        if isinstance(arg, DeviceTensor):
            self._own(arg)
            return arg._live()
        if isinstance(arg, StackedDeviceTensor):
            self._own_stack(arg)
            return arg._live()
        if _is_tensor(arg) and arg.device.type == "cpu" and not arg.is_shared():
            raise UnsharedTensorError(
                f"argument {name!r} of {program.entry.name} is a host tensor in private memory: the "
                "ranks' worker processes cannot see it",
                call_site(),
                f"call {name}.share_memory_() before compiled.prepare() (per-call IO buffers are "
                "shared-memory host tensors, refreshed in place), or upload it with "
                "rt.alloc_tensor(init=...)",
            )
        return arg

    def _windows_for(self, program: DistributedCompiledProgram) -> Any:
        """A persistent worker's window store of ``program`` (None otherwise), zeroed before reuse
        when ``reset_persistent_windows``; the first dispatch gets it fresh."""
        if not self.persistent:
            return None
        key = id(program)
        if key not in self._windows:
            self._windows[key] = self.engine.window_store(program)
        elif self.reset_persistent_windows:
            self._windows[key].reset()
        return self._windows[key]

    # ------------------------------------------------------------ resident tensors

    @_at_user_line
    def alloc_tensor(
        self, shape: Sequence[int], dtype: Any, *, init: Any = None, worker_id: int = 0
    ) -> DeviceTensor:
        """A buffer of ``shape`` and ``dtype`` (a torch dtype) on rank ``worker_id``'s device, zeroed
        or a copy of ``init`` (a CPU tensor of that many elements; one staged upload)."""
        import torch

        self._check_open()
        rank = self._worker_id(worker_id, "alloc_tensor")
        dims = _shape(shape)
        if not isinstance(dtype, torch.dtype):
            raise DeviceTensorError(
                f"alloc_tensor takes a torch dtype, got {dtype!r}",
                call_site(),
                "write it like rt.alloc_tensor((128, 128), torch.float32)",
            )
        data = torch.zeros(dims, dtype=dtype).share_memory_()
        if init is not None:
            source = _host_tensor(init, "alloc_tensor(init=...)")
            if source.numel() != data.numel():
                raise DeviceTensorError(
                    f"alloc_tensor(shape={dims}) was given init of {source.numel()} elements, "
                    f"not {data.numel()}",
                    call_site(),
                    "pass init of the buffer's shape, or leave it out for a zeroed buffer",
                )
            data.copy_(source.detach().reshape(dims).to(dtype))
        tensor = DeviceTensor(self, data, next(self._handles), worker_id=rank)
        self._tensors[tensor.handle] = tensor
        return tensor

    @_at_user_line
    def free_tensor(self, tensor: DeviceTensor, *, worker_id: int | None = None) -> None:
        """Release ``tensor``; using it afterwards is an error. ``worker_id``, if given, must be
        the one it was allocated on."""
        self._own(tensor)
        if worker_id is not None and self._worker_id(worker_id, "free_tensor") != tensor.worker_id:
            raise DeviceTensorError(
                f"device tensor {tensor.handle} lives on worker {tensor.worker_id}, not {worker_id}",
                call_site(),
                f"pass the worker_id it was allocated with: rt.free_tensor(t, worker_id={tensor.worker_id})",
            )
        del self._tensors[tensor.handle]
        tensor._data = None

    @_at_user_line
    def copy_to(self, dst_dev_ptr: int, src_host_ptr: Any, nbytes: int, *, worker_id: int = 0) -> None:
        """Staged upload: ``nbytes`` from the host (a CPU-contiguous tensor or its ``data_ptr()``)
        to the device address ``dst_dev_ptr`` (inside a ``DeviceTensor`` on ``worker_id``)."""
        self._check_open()
        count = _nbytes(nbytes, "copy_to")
        source = _host_address(src_host_ptr, count, "copy_to")
        self._device_range(dst_dev_ptr, count, "copy_to", self._worker_id(worker_id, "copy_to"))
        ctypes.memmove(dst_dev_ptr, source, count)

    @_at_user_line
    def copy_from(self, dst_host_ptr: Any, src_dev_ptr: int, nbytes: int, *, worker_id: int = 0) -> None:
        """Staged read-back: ``nbytes`` from the device address ``src_dev_ptr`` (a ``DeviceTensor``
        on ``worker_id``) to the host (a CPU-contiguous tensor or its ``data_ptr()``)."""
        self._check_open()
        count = _nbytes(nbytes, "copy_from")
        target = _host_address(dst_host_ptr, count, "copy_from")
        self._device_range(src_dev_ptr, count, "copy_from", self._worker_id(worker_id, "copy_from"))
        ctypes.memmove(target, src_dev_ptr, count)

    @_at_user_line
    def alloc_stacked_tensor(
        self, host_w: Any, *, worker_ids: Sequence[int] | None = None
    ) -> StackedDeviceTensor:
        """Shard ``host_w`` (a CPU-contiguous ``[B, *tail]`` tensor) along dim 0: shard ``i`` is
        uploaded once to worker ``worker_ids[i]`` (default ``i``). ``B`` must equal the number of
        workers the shards go to."""
        self._check_open()
        source = _host_tensor(host_w, "alloc_stacked_tensor")
        if source.dim() == 0:
            raise DeviceTensorError(
                "alloc_stacked_tensor takes a tensor with a leading shard dimension, got a scalar tensor",
                call_site(),
                "pass a [B, ...] tensor whose host_w[i] goes to card i",
            )
        ids = self._shard_workers(int(source.shape[0]), worker_ids)
        data = source.detach().clone().share_memory_()
        shards = [
            DeviceTensor(self, data[i], next(self._handles), worker_id=rank) for i, rank in enumerate(ids)
        ]
        stacked = StackedDeviceTensor(self, data, shards, ids)
        self._stacks[id(stacked)] = stacked
        return stacked

    @_at_user_line
    def free_stacked_tensor(self, stacked: StackedDeviceTensor) -> None:
        """Release every shard of ``stacked``."""
        self._own_stack(stacked)
        del self._stacks[id(stacked)]
        for shard in stacked.shards:
            shard._data = None
        stacked._data = None

    @_at_user_line
    def copy_stacked_from(self, stacked: StackedDeviceTensor, host_out: Any) -> None:
        """Staged read-back of every shard: ``host_out[i]`` receives shard ``i`` (a CPU-contiguous
        tensor of the stack's shape and dtype)."""
        self._own_stack(stacked)
        out = _host_tensor(host_out, "copy_stacked_from")
        data = stacked._live()
        if tuple(out.shape) != tuple(data.shape) or out.dtype != data.dtype:
            raise DeviceTensorError(
                f"copy_stacked_from: host_out is {list(out.shape)} {out.dtype}, the stack is "
                f"{list(data.shape)} {data.dtype}",
                call_site(),
                "pass a tensor like torch.empty_like of the host tensor the stack was made from",
            )
        out.copy_(data)

    def release_inherited_host_tensor_refs(self) -> None:
        """Drop the references this worker keeps to the host tensors of finished dispatches (kept so
        that a buffer the ranks may still map is not freed under them)."""
        self._inherited = [t for h in self._in_flight if not h.done for t in (h._args or ()) if _is_tensor(t)]

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Drain the accepted dispatches (in order), release the resident tensors, the retained
        windows and the ranks. A dispatch that failed and was never waited for raises here."""
        self._close(raise_errors=True)

    def _close(self, raise_errors: bool) -> None:
        if self.closed:
            return
        self.closed = True
        failure: BaseException | None = None
        while self._in_flight:
            handle = self._in_flight.popleft()
            error = handle._future.exception()
            if error is not None and not handle.observed and failure is None:
                failure = error
        self._executor.shutdown(wait=True)
        for tensor in self._tensors.values():
            tensor._data = None
        for stacked in self._stacks.values():
            for shard in stacked.shards:
                shard._data = None
            stacked._data = None
        self._tensors.clear()
        self._stacks.clear()
        self._windows.clear()
        self._inherited.clear()
        self.engine.close()
        if failure is not None and raise_errors:
            raise failure

    # ------------------------------------------------------------ checks

    def _check_open(self) -> None:
        if self.closed:
            raise DistributedWorkerError(
                "this DistributedWorker is closed",
                call_site(),
                "prepare a new one (compiled.prepare()), or keep the work inside its `with` block",
            )

    def _worker_id(self, worker_id: Any, what: str) -> int:
        if (
            isinstance(worker_id, bool)
            or not isinstance(worker_id, int)
            or not 0 <= worker_id < self.world_size
        ):
            raise DeviceTensorError(
                f"{what}(worker_id={worker_id!r}): the world has workers 0..{self.world_size - 1}",
                call_site(),
                f"pass a rank in [0, {self.world_size}) (worker r is device_ids[r])",
            )
        return worker_id

    def _shard_workers(self, count: int, worker_ids: Sequence[int] | None) -> tuple[int, ...]:
        if worker_ids is None:
            if count != self.world_size:
                raise DeviceTensorError(
                    f"alloc_stacked_tensor: the tensor has {count} shard(s) along dim 0, the world "
                    f"{self.world_size} worker(s)",
                    call_site(),
                    "give one shard per card (host_w.shape[0] == len(device_ids)), or pass worker_ids=[...]",
                )
            return tuple(range(count))
        ids = tuple(self._worker_id(w, "alloc_stacked_tensor") for w in worker_ids)
        if len(set(ids)) != len(ids) or len(ids) != count:
            raise DeviceTensorError(
                f"alloc_stacked_tensor(worker_ids={list(worker_ids)}) must name {count} distinct workers, "
                "one per shard",
                call_site(),
                "list the worker each shard x[i] is dispatched to, each once",
            )
        return ids

    def _own(self, tensor: Any) -> None:
        self._check_open()
        if not isinstance(tensor, DeviceTensor):
            raise DeviceTensorError(
                f"expected a DeviceTensor, got {type(tensor).__name__}",
                call_site(),
                "pass what rt.alloc_tensor(...) returned",
            )
        if tensor.worker is not self:
            raise DeviceTensorError(
                f"device tensor {tensor.handle} was not allocated by this DistributedWorker",
                call_site(),
                "a resident tensor is bound to the worker that allocated it: allocate one with "
                "rt.alloc_tensor",
            )
        tensor._live()

    def _own_stack(self, stacked: Any) -> None:
        self._check_open()
        if not isinstance(stacked, StackedDeviceTensor):
            raise DeviceTensorError(
                f"expected a StackedDeviceTensor, got {type(stacked).__name__}",
                call_site(),
                "pass what rt.alloc_stacked_tensor(...) returned",
            )
        if stacked.worker is not self:
            raise DeviceTensorError(
                "this StackedDeviceTensor was not allocated by this DistributedWorker",
                call_site(),
                "allocate it with this worker's rt.alloc_stacked_tensor(host_w)",
            )
        stacked._live()

    def _device_range(self, device_ptr: Any, nbytes: int, what: str, worker_id: int) -> None:
        """``nbytes`` at ``device_ptr`` lie inside one live buffer on card ``worker_id``."""
        resident = [*self._tensors.values(), *(s for st in self._stacks.values() for s in st.shards)]
        check_device_range(
            device_ptr,
            nbytes,
            what,
            (t for t in resident if t.worker_id == worker_id),
            f"of worker {worker_id} (freed, on another worker, or never allocated)",
            "pass t.data_ptr of a live DeviceTensor t and the worker_id it was allocated on",
            handles=(StackedDeviceTensor,),
        )


# ------------------------------------------------------------ preparing


def _programs(compiled: Any, extra: Sequence[Any]) -> list[DistributedCompiledProgram]:
    """The worker's programs: ``compiled`` (one, or a list) and ``extra``, all of one platform and
    one set of devices."""
    given = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]
    given += list(extra)
    if not given:
        raise DistributedWorkerError(
            "DistributedWorker([]) was given no program",
            call_site(),
            "pass the compiled program(s): DistributedWorker(compiled) or "
            "DistributedWorker([prefill, decode])",
        )
    for program in given:
        if not isinstance(program, DistributedCompiledProgram):
            raise NotDistributedError(
                f"a DistributedWorker prepares DistributedCompiledPrograms, got {type(program).__name__}",
                call_site(),
                "compile with a DistributedConfig first: kernel.compile(*args, "
                "config=RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1])))",
            )
    first = given[0]
    for program in given[1:]:
        if program.platform != first.platform or program.device_ids != first.device_ids:
            raise ConfigError(
                f"{program.entry.name} was compiled for {program.platform} devices "
                f"{list(program.device_ids)}, "
                f"{first.entry.name} for {first.platform} devices {list(first.device_ids)}: one worker "
                "needs one platform and one set of devices",
                call_site(),
                "compile every program of the worker with the same platform and DistributedConfig",
            )
    unique: list[DistributedCompiledProgram] = []
    for program in given:
        if all(program is not seen for seen in unique):
            unique.append(program)
    return unique


def _check_prewarm(config: Any) -> None:
    if config is not None and not isinstance(config, RunConfig):
        raise ConfigError(
            f"prepare(config=...) takes a RunConfig, got {type(config).__name__}",
            call_site(),
            "pass config=RunConfig(...) (used only to warm the worker up), or leave it out",
        )


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(
            f"prepare({name}=...) takes True or False, got {value!r}",
            call_site(),
            f"write prepare({name}=True)",
        )
    return value


def _reset_flag(value: Any, persistent: bool) -> bool:
    if value is None:
        return True
    _flag("reset_persistent_windows", value)
    if not persistent:
        raise ConfigError(
            "prepare(reset_persistent_windows=...) applies to retained windows, but persistent=False",
            call_site(),
            "pass persistent=True with it, or leave reset_persistent_windows out",
        )
    return bool(value)


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(
            f"prepare(startup_timeout_s=...) takes a positive, finite number of seconds, got {value!r}",
            call_site(),
            "leave it None for the default, or give more seconds for a slow cold start: "
            "startup_timeout_s=120",
        )
    return float(value)


def _bindings(
    programs: list[DistributedCompiledProgram],
    callbacks: Mapping[str, Callable[..., Any]] | None,
    overrides: Mapping[str, Callable[..., Any]] | None,
) -> dict[str, Callable[..., Any]]:
    """The SubWorker implementations: ``callbacks`` for ``...``-body ones, ``sub_worker_overrides``
    replacing ones with a body. Each must name a SubWorker of a program and be callable; every
    ``...``-body SubWorker must be bound (a ValueError at prepare, not at dispatch)."""
    workers: dict[str, Any] = {}
    for program in programs:
        workers.update(sub_workers(program.lowered))
    bound: dict[str, Callable[..., Any]] = {}
    for what, given in (("callbacks", callbacks), ("sub_worker_overrides", overrides)):
        if given is None:
            continue
        if not isinstance(given, Mapping):
            raise ConfigError(
                f"prepare({what}=...) takes a dict of SubWorker name -> function, got {type(given).__name__}",
                call_site(),
                f'write prepare({what}={{"inspect_result": fn}})',
            )
        for name, fn in given.items():
            if name not in workers:
                known = ", ".join(sorted(workers)) or "none"
                raise ConfigError(
                    f"prepare({what}=...) binds {name!r}, which is no HOST SubWorker of the prepared "
                    f"program(s) (their SubWorkers: {known})",
                    call_site(),
                    "bind the program's @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker) "
                    "functions by name",
                )
            if not callable(fn):
                raise ConfigError(
                    f"prepare({what}=...)[{name!r}] is a {type(fn).__name__}, not a function",
                    call_site(),
                    "bind a function that takes the list of the call's arguments",
                )
            bound[name] = fn
    for name, fn in workers.items():
        if fn.requires_runtime_binding and name not in bound:
            raise CommError(
                f"the SubWorker {name!r} has no implementation (its body is `...`) and prepare() bound none",
                call_site(),
                f'bind it: compiled.prepare(callbacks={{"{name}": fn}}), where fn takes the list of the '
                "call's arguments",
            )
    return bound


# ------------------------------------------------------------ helpers


def _is_tensor(value: Any) -> bool:
    try:
        import torch
    except ImportError:  # no torch: nothing is a tensor
        return False
    return isinstance(value, torch.Tensor)


def _host_tensor(value: Any, what: str) -> Any:
    """``value`` as a CPU-contiguous host tensor (the staged APIs' host side)."""
    import torch

    if isinstance(value, (DeviceTensor, StackedDeviceTensor)):
        raise DeviceTensorError(
            f"{what}: the host side is a {type(value).__name__}",
            call_site(),
            "pass a host torch.Tensor on the host side",
        )
    tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
    if tensor.device.type != "cpu" or not tensor.is_contiguous():
        raise DeviceTensorError(
            f"{what}: the host tensor must be a contiguous CPU tensor",
            call_site(),
            "pass t.contiguous() of a CPU tensor",
        )
    return tensor


__all__ = [
    "AmbiguousDispatchError",
    "DispatchTimeoutError",
    "DistributedRunHandle",
    "DistributedWorker",
    "DistributedWorkerError",
    "NotDistributedError",
    "UnpreparedProgramError",
    "UnsharedTensorError",
]
