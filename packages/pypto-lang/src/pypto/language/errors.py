"""Errors raised by the ``pl`` surface itself (not by the parser or the compiler)."""

from __future__ import annotations

from pypto.ir import PyptoError


class ScopeOptionError(PyptoError, ValueError):
    """A ``pl.at(optimizations=[...])`` entry got a bad value, e.g. ``pl.cross_core_slot(slot_num=0)``."""


class KernelOnlyError(PyptoError, RuntimeError):
    """A DSL builtin such as ``pl.add`` was called as plain Python, outside a kernel being parsed."""


class RunConfigError(PyptoError, TypeError):
    """``config=`` of a kernel call is not a ``RunConfig`` (e.g. the platform name as a string)."""


class JitOptionError(PyptoError, TypeError):
    """A ``@pl.jit`` decorator (or ``.incore`` / ``.inline`` / ``.opaque``) got options it does not
    take, e.g. ``@pl.jit.incore(optimizations=[...])``, or something that is not a function."""
