"""The enums op attributes take (typed attributes, not strings)."""

from __future__ import annotations

from enum import Enum, StrEnum


class AtomicType(Enum):
    """How a write into global memory combines with what is there: overwrite or accumulate."""

    NONE = "NONE"
    Add = "Add"

    def __repr__(self) -> str:
        return f"pl.AtomicType.{self.name}"


class PadValue(Enum):
    """What ``pl.fillpad`` writes outside a tile's valid shape: 0, the dtype's lowest or highest."""

    zero = "zero"
    min = "min"
    max = "max"

    def __repr__(self) -> str:
        return f"pl.PadValue.{self.name}"


PAD_VALUES = ", ".join(repr(m) for m in PadValue)  # for hints: pl.PadValue.zero, pl.PadValue.min, ...


class CastMode(StrEnum):
    """How ``pl.cast`` rounds a float converted to an integer dtype; float -> float casts round to
    nearest even whatever the mode. ``pl.cast(x, pl.INT32, mode="rint")`` or ``mode=pl.CastMode.rint``
    (a member equals its name: ``CastMode.rint == "rint"``)."""

    round = "round"  # half away from zero
    rint = "rint"  # half to even
    floor = "floor"
    ceil = "ceil"
    trunc = "trunc"

    def __repr__(self) -> str:
        return f"pl.CastMode.{self.name}"


class PipeType(Enum):
    """A core's pipelines, as explicit synchronization names them: the memory transfer engines
    (``MTE1`` L1 -> L0, ``MTE2`` GM -> on-chip, ``MTE3`` on-chip -> GM), the cube (``M``), the
    vector unit (``V``), the scalar unit (``S``), the fixpipe (``FIX``), or ``ALL`` of them."""

    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    M = "M"
    V = "V"
    S = "S"
    FIX = "FIX"
    ALL = "ALL"

    def __repr__(self) -> str:
        return f"pl.PipeType.{self.name}"
