"""``pl.optimizations``: the entries a ``pl.at(..., optimizations=[...])`` list takes.

>>> import pypto.language as pl
>>> pl.optimizations.split(pl.SplitMode.UP_DOWN) == pl.split(pl.SplitMode.UP_DOWN)
True
"""

from pypto.language.options import AUTO, CrossCoreSlot, Split, cross_core_slot, split

__all__ = ["AUTO", "CrossCoreSlot", "Split", "cross_core_slot", "split"]
