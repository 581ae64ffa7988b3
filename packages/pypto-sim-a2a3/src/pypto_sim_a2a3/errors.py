"""Errors a running program can cause that the compiler could not see ahead of time."""

from __future__ import annotations

from pypto.ir import PyptoError
from pypto.ir.errors import LoopStepError, OutOfBoundsError

__all__ = [
    "BarrierError",
    "DivisionByZeroError",
    "EventError",
    "LaunchError",
    "LoopStepError",  # raised by the shared walker (pypto.ir.walker), for every backend
    "OutOfBoundsError",  # raised by the shared walker too (a view the orchestration makes)
    "PipeError",
    "PrefetchError",
    "RingCapacityError",
    "ScalarRangeError",
    "UnsortedRunError",
]


class ScalarRangeError(PyptoError, OverflowError):
    """A run-time scalar does not fit the dtype of the tile it is used with (an INT8 tile plus 300)."""


class DivisionByZeroError(PyptoError, ZeroDivisionError):
    """An integer division (scalar or tile) by zero."""


class PipeError(PyptoError, ValueError):
    """A cross-core pipe used wrongly: mismatched setup, a push or pop on the wrong side or before
    setup, a tile that does not fit a slot or differs from what was pushed, a bad tfree."""


class BarrierError(PyptoError, ValueError):
    """A ``system.syncall`` used wrongly: a non-zero soft-sync workspace, a core the barrier does
    not include."""


class EventError(PyptoError, ValueError):
    """An explicit cross-core event used wrongly: more pending sets than a flag counts, sets left
    over when the kernel ends, an ``ffts_mode`` the simulator does not model."""


class PrefetchError(PyptoError, ValueError):
    """An asynchronous prefetch waited on wrongly: ``pl.prefetch.wait(evt, session)`` with the
    session of another context than the one that issued the event."""


class LaunchError(PyptoError, ValueError):
    """A launch the chip cannot make: a ``pl.spmd(n, sync_start=True)`` of more blocks than it has
    core groups."""


class RingCapacityError(PyptoError, RuntimeError):
    """A task the runtime's ring cannot take, however long the orchestration waits: its task
    window, heap or dep pool is full of the holds of a scope that has not ended (or smaller than
    the task alone). Sized by ``RunConfig(ring_task_window=..., ring_heap=..., ring_dep_pool=...)``."""


class UnsortedRunError(PyptoError, ValueError):
    """A ``pl.mrgsort`` given runs (or lists) of pairs that are not sorted largest first: a merge
    assumes sorted input, and the hardware's would interleave unsorted runs into no order."""
