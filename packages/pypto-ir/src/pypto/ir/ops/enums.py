"""The enums op attributes take (typed attributes, not strings)."""

from __future__ import annotations

from enum import Enum, StrEnum


class AtomicType(Enum):
    """How a write into global memory combines with what is there: overwrite or accumulate."""

    NONE = "NONE"
    None_ = "NONE"  # the distributed model's spelling (pld.AtomicType.None_): the same member
    Add = "Add"

    def __repr__(self) -> str:
        return f"pl.AtomicType.{self.name}"


class PadValue(Enum):
    """What reads outside a valid shape see: 0, the dtype's lowest or highest value (``pl.fillpad``
    writes it there); ``null``, nothing defined (the default of a view's ``pad=``); ``one``, 1,
    the identity of a product (``pl.row_prod`` of a partial tile is padded with it)."""

    zero = "zero"
    min = "min"
    max = "max"
    null = "null"
    one = "one"

    def __repr__(self) -> str:
        return f"pl.PadValue.{self.name}"


# for hints: pl.PadValue.zero, pl.PadValue.min, pl.PadValue.max (the values PyPTO's fills write)
PAD_VALUES = ", ".join(repr(m) for m in PadValue if m not in (PadValue.null, PadValue.one))


class CmpType(StrEnum):
    """What ``pl.cmp`` / ``pl.cmps`` test: ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``. Written as a
    member (``pl.CmpType.gt``), its name (``cmp_type="gt"``), or the code of its place in that
    order (0 ``eq`` ... 5 ``ge``)."""

    eq = "eq"
    ne = "ne"
    lt = "lt"
    le = "le"
    gt = "gt"
    ge = "ge"

    def __repr__(self) -> str:
        return f"pl.CmpType.{self.name}"


class TileLayout(Enum):
    """How a tile's elements are boxed in its buffer (``pl.TileView(blayout=..., slayout=...)``):
    row-major or column-major blocks, and within a block the same or no boxing (``none_box``)."""

    row_major = "row_major"
    col_major = "col_major"
    none_box = "none_box"

    def __repr__(self) -> str:
        return f"pl.TileLayout.{self.name}"


class CompactMode(Enum):
    """Whether a partial tile is stored packed to its valid region (``normal``) or in its whole
    physical box (``null``, the default): ``pl.TileView(compact=...)``."""

    normal = "normal"
    null = "null"

    def __repr__(self) -> str:
        return f"pl.CompactMode.{self.name}"


class TensorLayout(Enum):
    """How a tensor's logical dims map to memory (``pl.TensorView(layout=...)``): ``ND`` row-major,
    ``DN`` the last two dims swapped (column-major matrices), ``NZ`` the cube's fractal boxes (a
    tile layout only, never a tensor's)."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"

    def __repr__(self) -> str:
        return f"pl.TensorLayout.{self.name}"


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


class NotifyOp(Enum):
    """How ``pld.system.notify`` deposits its value into the peer's signal cell: ``AtomicAdd``
    adds it (many writers of one cell, a barrier), ``Set`` overwrites it (one writer, a handshake)."""

    AtomicAdd = "AtomicAdd"
    Set = "Set"

    def __repr__(self) -> str:
        return f"pld.NotifyOp.{self.name}"


class WaitCmp(Enum):
    """What a wait on a signal cell blocks until: ``Eq`` the cell equals the expected value,
    ``Ge`` it is at least the expected value."""

    Eq = "Eq"
    Ge = "Ge"

    def __repr__(self) -> str:
        return f"pld.WaitCmp.{self.name}"


class ReduceOp(Enum):
    """How a collective combines the ranks' elements (``pld.tensor.allreduce(op=...)``)."""

    Sum = "Sum"
    Max = "Max"
    Min = "Min"
    Prod = "Prod"

    def __repr__(self) -> str:
        return f"pld.ReduceOp.{self.name}"
