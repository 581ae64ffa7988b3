"""Errors a running program can cause that the compiler could not see ahead of time."""

from __future__ import annotations

from pypto.ir import PyptoError


class OutOfBoundsError(PyptoError, IndexError):
    """A load or store touches global memory outside its tensor (offsets known only at run time)."""


class DivisionByZeroError(PyptoError, ZeroDivisionError):
    """An integer division (scalar or tile) by zero."""
