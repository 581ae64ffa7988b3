"""Ranks across machines through ``torch.distributed`` (gloo, ``torchrun`` conventions).

When a script runs under ``torchrun`` (or by hand with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and
``MASTER_PORT`` set), or after the user initialised a default process group, every dispatch of a
distributed program simulates only this process's rank (``RANK``): :class:`TorchrunEngine` runs the
backend's ``run_rank`` over a :class:`GlooLink`, the same conservative-window transport as the
forked rank processes (:mod:`.processes`), whose window barrier is a collective exchange
(``all_gather_object``) of every rank's outbox, next event and state. Every process computes the
same next horizon from the same reports, so the modeled cycles are those of one process simulating
the whole world. A stall raises ``Stalled`` in every process with every rank's blocked waits; a rank
that fails tells the others in the next exchange, and every process then raises the same error.

The host is one: at each dispatch every process takes process 0's host arguments (tensors are
overwritten in place, so inputs made with a process's own random numbers agree), and after the run
each process receives what every other rank wrote into them, and every rank's report: each process
ends with the full results and the same :class:`~pypto.ir.backend.WorldReport`.

``PYPTO_TORCHRUN=0`` switches this off (each process then simulates the whole world by itself);
``PYPTO_TORCHRUN_TIMEOUT_S`` bounds how long a process waits for the others at an exchange (the
process group's timeout, when PyPTO initialises it).
"""

from __future__ import annotations

import atexit
import math
import os
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

from pypto.ir import log
from pypto.ir.backend import WorldReport
from pypto.ir.tracebacks import call_site
from pypto.runtime.distributed.compiled import DistributedCompiledProgram, world_backend
from pypto.runtime.distributed.engine import ProcessEngine, RankWindows
from pypto.runtime.distributed.processes import Aborted, Message, RankProcessError, Stalled
from pypto.runtime.settings import ConfigError, switch

TORCHRUN_ENV = "PYPTO_TORCHRUN"  # on/off: a torchrun-launched script simulates one rank per process
TIMEOUT_ENV = "PYPTO_TORCHRUN_TIMEOUT_S"  # seconds a process waits for the others at an exchange
DEFAULT_TIMEOUT_S = 300.0
LAUNCH_ENV = ("RANK", "WORLD_SIZE")

_group_state: dict[str, Any] = {}  # the gloo group the exchanges use, made once per process


def enabled() -> bool:
    """Whether this process is one rank of a ``torch.distributed`` launch PyPTO should join: the
    ``torchrun`` variables are set or a default process group exists, and ``PYPTO_TORCHRUN`` is
    not off."""
    if not switch(TORCHRUN_ENV, True).value:
        return False
    if all(os.environ.get(name) for name in LAUNCH_ENV):
        return True
    dist = sys.modules.get("torch.distributed")  # a script that made a group has imported it
    return dist is not None and bool(dist.is_available() and dist.is_initialized())


def timeout_s() -> float:
    """``PYPTO_TORCHRUN_TIMEOUT_S``, checked (a positive number of seconds), else 300."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds",
            hint=f"set {TIMEOUT_ENV}=300 (how long a rank's process waits for the others), or unset it",
        )
    return value


def gloo_group() -> tuple[Any, int, int]:
    """The gloo group the exchanges run on, this process's rank and the group's size: the user's
    default group if it is gloo, a gloo group beside it if it is not, else one PyPTO initialises
    from the ``torchrun`` variables (destroyed at exit)."""
    if "group" in _group_state:
        return _group_state["group"], _group_state["rank"], _group_state["size"]
    import torch.distributed as dist

    timeout = timedelta(seconds=timeout_s())
    group = None
    if not dist.is_initialized():
        _initialise(dist, timeout)
        atexit.register(_destroy)
    elif dist.get_backend() != "gloo":
        group = dist.new_group(backend="gloo", timeout=timeout)
    _group_state.update(group=group, rank=dist.get_rank(), size=dist.get_world_size())
    return group, _group_state["rank"], _group_state["size"]


def _initialise(dist: Any, timeout: timedelta) -> None:
    missing = [n for n in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not os.environ.get(n)]
    if missing:
        raise ConfigError(
            f"this process joins a torch.distributed launch, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set",
            call_site(),
            "launch with torchrun --nproc-per-node N script.py (it sets RANK, WORLD_SIZE, MASTER_ADDR, "
            f"MASTER_PORT), set all four by hand, or set {TORCHRUN_ENV}=0 to run the whole world here",
        )
    try:
        dist.init_process_group("gloo", timeout=timeout)
    except (RuntimeError, ValueError) as err:
        raise RankProcessError(
            f"rank {os.environ['RANK']} could not join the torch.distributed group at "
            f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}: {err}",
            call_site(),
            "start every rank's process with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and a "
            "distinct RANK in [0, WORLD_SIZE)",
        ) from None


def _destroy() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    _group_state.clear()


class ExchangeError(RankProcessError):
    """A rank's process is gone, or did not reach an exchange within the timeout."""


def exchange(group: Any, size: int, value: Any) -> list[Any]:
    """Every rank's ``value``, in rank order (a collective: every rank calls it). A process that
    is gone or silent past the timeout is a :class:`RankProcessError`."""
    import torch.distributed as dist

    gathered: list[Any] = [None] * size
    try:
        dist.all_gather_object(gathered, value, group=group)
    except RuntimeError as err:
        raise ExchangeError(
            f"a rank's process stopped answering the window exchange: {err}",
            call_site(),
            f"look at the other processes' output for their error; a slow start needs a longer {TIMEOUT_ENV}",
        ) from None
    return gathered


class GlooLink:
    """One rank's end of the conservative-window transport over a gloo group: the interface of
    :class:`~pypto.runtime.distributed.processes.RankLink`, with the barrier a collective."""

    Stalled = Stalled

    def __init__(self, rank: int, ranks: int, lookahead: int, group: Any) -> None:
        self.rank = rank
        self.ranks = ranks
        self.lookahead = lookahead
        self.horizon = lookahead  # the first window is [0, lookahead)
        self.clock = [0] * ranks
        self.transfers: list[Any] = []  # the backend's LinkTransfer records of what this rank sent
        self.done = False  # the world finished: no more windows
        self.ended = False  # the window protocol is over (finished, stalled or aborted)
        self._outbox: list[Message] = []
        self._group = group

    def send(self, dst: int, payload: Any, at: int) -> Message:
        """Send ``payload`` to rank ``dst`` at modeled cycle ``at`` (before the current horizon)."""
        if not 0 <= dst < self.ranks:
            raise RankProcessError(
                f"rank {self.rank} sent a message to rank {dst}, outside [0, {self.ranks})"
            )
        if at >= self.horizon:
            raise RankProcessError(
                f"rank {self.rank} sent a message at cycle {at}, at or after its window's horizon "
                f"{self.horizon}: it simulated past the window"
            )
        self.clock[self.rank] += 1
        message = Message(at, self.rank, dst, tuple(self.clock), payload)
        self._outbox.append(message)
        return message

    def advance(self, next_event: int | None, finished: bool, blocked: Any = None) -> list[Message]:
        """The window barrier (as :meth:`RankLink.advance`): every rank's report is gathered and
        every rank decides alike. Raises :class:`Stalled` with every rank's blocked waits when no
        rank can move, :class:`Aborted` when another rank failed."""
        reports = exchange(self._group, self.ranks, ("window", self._outbox, next_event, finished, blocked))
        self._outbox = []
        kind, detail = decide(reports, self.horizon, self.lookahead)
        self.ended = kind != "go"
        if kind == "done":
            self.done = True
            return []
        if kind == "stalled":
            raise Stalled(detail)
        if kind == "abort":
            raise Aborted()
        self.horizon = detail
        inbox = sorted(m for report in reports for m in report[1] if m.dst == self.rank)
        for message in inbox:
            self.clock = [max(a, b) for a, b in zip(self.clock, message.clock, strict=True)]
        self.clock[self.rank] += len(inbox)
        return inbox

    def fail(self) -> None:
        """This rank failed: tell the others in the exchange they wait in (once)."""
        if not self.ended:
            self.ended = True
            exchange(self._group, self.ranks, ("error", self.rank))

    def finish(self) -> None:
        """The rank's simulation returned before the world finished: keep serving the barrier."""
        while not self.ended:
            self.advance(None, True)


def decide(reports: Sequence[tuple[Any, ...]], horizon: int, lookahead: int) -> tuple[str, Any]:
    """The window barrier's decision from every rank's report, the same on every rank:
    ``("abort", None)`` when a rank failed, ``("done", None)`` when every rank finished with
    nothing in flight, ``("stalled", blocked)`` when no rank can move, else ``("go", horizon)``
    (the next window starts at the earliest pending event or landing message: idle stretches are
    skipped)."""
    if any(report[0] != "window" for report in reports):
        return "abort", None
    messages = [m for report in reports for m in report[1]]
    pending = [report[2] for report in reports if report[2] is not None]
    if not messages and not pending:
        if all(report[3] for report in reports):
            return "done", None
        return "stalled", [report[4] for report in reports]
    earliest = min([*pending, *(m.at + lookahead for m in messages)])
    return "go", max(horizon, earliest) + lookahead


class TorchrunEngine(ProcessEngine):
    """The engine of a process that is one rank of a ``torch.distributed`` launch: it simulates
    its rank with the backend's ``run_rank`` over a :class:`GlooLink`, and shares host arguments,
    host writes and reports with the other processes."""

    in_processes = True

    def __init__(
        self,
        programs: Sequence[DistributedCompiledProgram],
        callbacks: Mapping[str, Callable[..., Any]],
        group: Any,
        rank: int,
    ) -> None:
        # No forked processes: this process is its rank (ProcessEngine's fork is not run).
        first = programs[0]
        self.platform = first.platform
        self.ranks = first.world_size
        self.programs = list(programs)
        self.callbacks = dict(callbacks)
        self.backend = world_backend(first.platform, first.config)
        self.lookahead = int(self.backend.link_lookahead(self.ranks))
        self._stores: dict[int, Any] = {}
        self.group = group
        self.rank = rank

    def run_world(
        self, compiled: DistributedCompiledProgram, args: list[Any], options: dict[str, Any]
    ) -> WorldReport:
        index = next(i for i, p in enumerate(self.programs) if p is compiled)
        windows = options.get("windows")
        persistent = None
        if isinstance(windows, RankWindows):
            persistent = windows.reset_requested
            windows.reset_requested = False
        kept = {k: v for k, v in options.items() if k not in ("windows", "callbacks")}
        link = GlooLink(self.rank, self.ranks, self.lookahead, self.group)
        failure: BaseException | None = None
        try:
            args = self._host_arguments(compiled, args)
            before = [_clone(a) for a in args]
            # (a GlooLink is a RankLink in all but its barrier)
            report, sent = self._serve_rank(self.rank, cast(Any, link), (index, args, kept, persistent))
            link.finish()
            outcome: tuple[Any, ...] = ("result", report, sent, _writes(before, args))
        except ExchangeError:
            raise  # a process is gone: there is no one to tell
        except BaseException as err:  # every rank must reach the outcome exchange
            failure = err
            link.fail()
            outcome = ("error", _portable(err))
        outcome = _sendable(outcome)
        outcomes = exchange(self.group, self.ranks, outcome)
        self._raise_first_error(outcomes, failure)
        for rank, (_, _, _, writes) in enumerate(outcomes):
            if rank != self.rank:
                _apply(writes, args)
        chips = tuple(o[1] for o in outcomes)
        transfers = tuple(sorted((t for o in outcomes for t in o[2]), key=lambda t: (t.start, t.src)))
        clock_ghz = chips[0].clock_mhz / 1000.0 if chips else 0.0
        log.event(f"rank {self.rank} of {self.ranks} (torch.distributed): received every rank's results")
        return WorldReport(chips, max((c.total_cycles for c in chips), default=0), clock_ghz, transfers)

    def _host_arguments(self, compiled: DistributedCompiledProgram, args: list[Any]) -> list[Any]:
        """Process 0's host arguments, in every process: tensors are overwritten in place (the host
        is one), scalars taken."""
        import torch.distributed as dist

        shared = [a if _portable_value(a) else None for a in args]
        box = [shared if self.rank == 0 else None]
        try:
            dist.broadcast_object_list(box, src=_global_rank(self.group, 0), group=self.group)
        except RuntimeError as err:
            raise ExchangeError(
                f"rank {self.rank} did not receive the host arguments from rank 0: {err}",
                call_site(),
                "every process must run the same script and dispatch the same programs in the same order",
            ) from None
        theirs = box[0]
        if self.rank == 0 or theirs is None:
            return args
        names = compiled.param_names
        out = list(args)
        for i, (mine, value) in enumerate(zip(args, theirs, strict=False)):
            if value is None:
                continue
            if _is_tensor(mine) and _is_tensor(value):
                if tuple(mine.shape) != tuple(value.shape) or mine.dtype != value.dtype:
                    name = names[i] if i < len(names) else f"#{i}"
                    raise ConfigError(
                        f"argument {name!r} is {list(mine.shape)} {mine.dtype} in rank {self.rank}'s process "
                        f"but {list(value.shape)} {value.dtype} in rank 0's",
                        call_site(),
                        "every process must pass host tensors of the same shapes and dtypes (the host "
                        "program is one; process 0's values are used)",
                    )
                mine.copy_(value)
            else:
                out[i] = value
        return out

    def _raise_first_error(self, outcomes: Sequence[tuple[Any, ...]], mine: BaseException | None) -> None:
        """If any rank failed, raise the lowest failing rank's error (not another rank's abort) in
        every process: this process's own exception when it is that rank."""
        failed = [(rank, o[1]) for rank, o in enumerate(outcomes) if o[0] == "error"]
        if not failed:
            return
        real = [(rank, parts) for rank, parts in failed if not issubclass(parts[0], Aborted)]
        rank, parts = (real or failed)[0]
        if rank == self.rank and mine is not None:
            raise mine
        raise _rebuilt(parts)

    def close(self) -> None:
        """Nothing to stop: the process group outlives the worker (it is the user's, or PyPTO's
        until exit)."""


def torchrun_engine(
    programs: Sequence[DistributedCompiledProgram], callbacks: Mapping[str, Callable[..., Any]]
) -> TorchrunEngine | None:
    """The engine of this process's rank when it is part of a ``torch.distributed`` launch (see
    :func:`enabled`); None otherwise, or when the platform simulates whole worlds only."""
    if not enabled():
        return None
    first = programs[0]
    backend = world_backend(first.platform, first.config)
    if not (
        callable(getattr(backend, "run_rank", None)) and callable(getattr(backend, "link_lookahead", None))
    ):
        log.event(f"platform {first.platform!r} simulates whole worlds only: each process runs all of it")
        return None
    _check_world_size(first.world_size)
    group, rank, size = gloo_group()
    if size != first.world_size:
        _mismatch(size, first.world_size, "the torch.distributed group has")
    return TorchrunEngine(programs, callbacks, group, rank)


def _check_world_size(ranks: int) -> None:
    text = os.environ.get("WORLD_SIZE", "").strip()
    if text and text.isdigit() and int(text) != ranks:
        _mismatch(int(text), ranks, "WORLD_SIZE is")


def _mismatch(size: int, ranks: int, what: str) -> None:
    raise ConfigError(
        f"{what} {size} process(es), but the program runs on {ranks} rank(s) (len(device_ids)): under "
        "torch.distributed each process simulates one rank",
        call_site(),
        f"launch one process per rank (torchrun --nproc-per-node {ranks} ...), give DistributedConfig "
        f"{size} device id(s), or set {TORCHRUN_ENV}=0 to simulate the whole world in every process",
    )


def _global_rank(group: Any, rank: int) -> int:
    if group is None:
        return rank
    import torch.distributed as dist

    return int(dist.get_global_rank(group, rank))


# ------------------------------------------------------------ host tensors across processes


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _portable_value(value: Any) -> bool:
    return _is_tensor(value) or isinstance(value, (bool, int, float, str)) or value is None


def _clone(value: Any) -> Any:
    return value.detach().clone() if _is_tensor(value) else None


def _bits(tensor: Any) -> Any:
    """``tensor``'s elements as integers of the same width (NaNs and -0.0 compare by their bits)."""
    import torch

    if tensor.dtype.is_complex:
        tensor = torch.view_as_real(tensor)
    if tensor.dtype == torch.bool:
        return tensor
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.view(width)


def _writes(before: Sequence[Any], after: Sequence[Any]) -> list[Any]:
    """What this rank wrote into each host tensor argument: None, or (runs of flat element
    indices as starts and ends, the values written)."""
    import torch

    found: list[Any] = []
    for old, new in zip(before, after, strict=True):
        if old is None or not _is_tensor(new) or new.numel() == 0:
            found.append(None)
            continue
        changed = (_bits(old).reshape(-1) != _bits(new).reshape(-1)).to(torch.int8)
        if not bool(changed.any()):
            found.append(None)
            continue
        zero = changed.new_zeros(1)
        edges = torch.diff(changed, prepend=zero, append=zero)
        starts = (edges == 1).nonzero().squeeze(1)
        ends = (edges == -1).nonzero().squeeze(1)
        found.append((starts, ends, new.reshape(-1)[changed.bool()].clone()))
    return found


def _apply(writes: Sequence[Any], args: Sequence[Any]) -> None:
    """Write another rank's changes into this process's host tensors."""
    import torch

    for change, target in zip(writes, args, strict=False):
        if change is None or not _is_tensor(target):
            continue
        starts, ends, values = change
        delta = torch.zeros(target.numel() + 1, dtype=torch.int32)
        delta.index_add_(0, starts, torch.ones_like(starts, dtype=torch.int32))
        delta.index_add_(0, ends, -torch.ones_like(ends, dtype=torch.int32))
        mask = delta.cumsum(0)[:-1] > 0
        target[mask.view(target.shape)] = values


def _portable(err: BaseException) -> tuple[type[BaseException], tuple[Any, ...], dict[str, Any]]:
    """An exception as plain parts that survive pickling with their attributes (span, hint)."""
    return (type(err), err.args, dict(getattr(err, "__dict__", {})))


def _sendable(outcome: tuple[Any, ...]) -> tuple[Any, ...]:
    """``outcome`` if it pickles (the exchange must not fail in one process only), else its error
    as text."""
    try:
        pickle.dumps(outcome)
    except Exception as err:  # an attribute of an error, or a report, that cannot travel
        what = outcome[1][1] if outcome[0] == "error" else (f"this rank's results ({err})",)
        return ("error", (RankProcessError, tuple(str(a) for a in what), {}))
    return outcome


def _rebuilt(parts: tuple[type[BaseException], tuple[Any, ...], dict[str, Any]]) -> BaseException:
    cls, args, attrs = parts
    err = cls.__new__(cls)
    BaseException.__init__(err, *args)
    err.__dict__.update(attrs)
    return err


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "TIMEOUT_ENV",
    "TORCHRUN_ENV",
    "GlooLink",
    "TorchrunEngine",
    "decide",
    "enabled",
    "exchange",
    "gloo_group",
    "timeout_s",
    "torchrun_engine",
]
