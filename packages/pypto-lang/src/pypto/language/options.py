"""Scope optimizations: the entries of ``pl.at(..., optimizations=[...])``.

These are ordinary Python functions returning plain data, so the parser evaluates them as
written and a bad value fails the same way inside or outside a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from pypto.ir import SplitMode
from pypto.language.errors import ScopeOptionError


@dataclass(frozen=True)
class Split:
    """Marks a scope as a mixed cube + vector kernel, halving the vector work along ``mode``."""

    mode: SplitMode


@dataclass(frozen=True)
class CrossCoreSlot:
    """Depth of the cross-core pipe ring of a mixed scope, in whole tiles."""

    slot_num: int


def split(mode: SplitMode) -> Split:
    """Mark the enclosing ``pl.at`` scope as split, e.g. ``pl.split(pl.SplitMode.UP_DOWN)``."""
    if not isinstance(mode, SplitMode):
        raise ScopeOptionError(
            f"pl.split() takes a pl.SplitMode, got {mode!r}",
            hint="write pl.split(pl.SplitMode.UP_DOWN), LEFT_RIGHT or NONE",
        )
    return Split(mode)


def cross_core_slot(*, slot_num: int) -> CrossCoreSlot:
    """Set the cross-core ring depth, e.g. ``pl.cross_core_slot(slot_num=4)``."""
    if isinstance(slot_num, bool) or not isinstance(slot_num, int) or slot_num < 1:
        raise ScopeOptionError(
            f"pl.cross_core_slot(slot_num={slot_num!r}): slot_num must be a positive int",
            hint="the default ring depth is 2 slots; use slot_num=1 or more",
        )
    return CrossCoreSlot(slot_num)
