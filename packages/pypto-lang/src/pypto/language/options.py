"""Scope options: the entries of ``pl.at(..., optimizations=[...])``, and the mode of a runtime
scope (``pl.scope(mode=pl.ScopeMode.MANUAL)``).

These are ordinary Python functions returning plain data, so the parser evaluates them as
written and a bad value fails the same way inside or outside a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pypto.ir import SplitMode
from pypto.language.errors import ScopeOptionError


class Auto:
    """``pl.AUTO``: the value of an option left to the compiler. Given for an optional argument
    of a ``pl`` op, of ``pl.at``, ``pl.split`` or ``pl.cross_core_slot``, it means what leaving
    the argument out means; a required argument has no automatic value."""

    _instance: Auto | None = None

    def __new__(cls) -> Auto:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "pl.AUTO"


AUTO = Auto()


class ScopeMode(Enum):
    """The mode of a runtime scope (``with pl.scope(mode=...):``): ``AUTO`` tracks the tasks'
    dependencies through the tensors they touch; ``MANUAL`` (``pl.manual_scope()``) turns that
    tracking off, so only ``deps=`` orders the tasks inside."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"

    def __repr__(self) -> str:
        return f"pl.ScopeMode.{self.name}"


@dataclass(frozen=True)
class Split:
    """Marks a scope as a mixed cube + vector kernel, halving the vector work along ``mode``."""

    mode: SplitMode


@dataclass(frozen=True)
class CrossCoreSlot:
    """Depth of the cross-core pipe ring of a mixed scope, in whole tiles (None: the default)."""

    slot_num: int | None


def split(mode: SplitMode) -> Split:
    """Mark the enclosing ``pl.at`` scope as split, e.g. ``pl.split(pl.SplitMode.UP_DOWN)``;
    ``pl.split(pl.AUTO)`` leaves the mode to the compiler, which picks ``NONE`` (the vector work
    on one AIV: every mixed kernel runs so)."""
    if mode is AUTO:
        return Split(SplitMode.NONE)
    if not isinstance(mode, SplitMode):
        raise ScopeOptionError(
            f"pl.split() takes a pl.SplitMode, got {mode!r}",
            hint="write pl.split(pl.SplitMode.UP_DOWN), LEFT_RIGHT or NONE",
        )
    return Split(mode)


def cross_core_slot(*, slot_num: int | Auto) -> CrossCoreSlot:
    """Set the cross-core ring depth, e.g. ``pl.cross_core_slot(slot_num=4)``;
    ``slot_num=pl.AUTO`` keeps the default depth."""
    if slot_num is AUTO:
        return CrossCoreSlot(None)
    if isinstance(slot_num, bool) or not isinstance(slot_num, int) or slot_num < 1:
        raise ScopeOptionError(
            f"pl.cross_core_slot(slot_num={slot_num!r}): slot_num must be a positive int",
            hint="the default ring depth is 2 slots; use slot_num=1 or more",
        )
    return CrossCoreSlot(slot_num)
