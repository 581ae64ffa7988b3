"""The a2a3 chip the simulator models: :data:`A2A3_TARGET` is ``pypto.ir.targets.get_target("a2a3")``.

Every a2a3 figure lives once, in ``pypto/ir/targets/a2a3.toml``; the simulator reads them from
the target, so a second target (a second data file) can differ. Throughputs are modeling
constants, not measurements.
"""

from __future__ import annotations

from enum import Enum

from pypto.ir import MemorySpace, Target
from pypto.ir.targets import get_target

A2A3_TARGET = get_target("a2a3")


class CoreKind(Enum):
    """The two kinds of core in a core group."""

    AIC = "AIC"  # cube core
    AIV = "AIV"  # vector core


def core_memory_spaces(target: Target, kind: CoreKind) -> tuple[MemorySpace, ...]:
    """The on-chip memory spaces a core of ``kind`` owns on ``target`` (the data file says)."""
    return target.spaces_of(kind.value)
