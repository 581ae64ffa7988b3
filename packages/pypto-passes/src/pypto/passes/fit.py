"""Does a candidate kernel body fit on chip? Asked by tiling before it commits to a block size.

The body is lowered the rest of the way on its own — memory spaces, the vector split, the
expansion into AIC and AIV kernels with their rings — and every resulting kernel is planned
against the target's budgets. Rings are sized at the default depth: a deeper ring is the
author's explicit choice, reported when it does not fit rather than paid for with smaller tiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pypto.ir import Function, PyptoError, Stmt, Target
from pypto.passes.allocate import fitting_stages, over_budget, plan_memory
from pypto.passes.expand_mixed import ExpandMixedKernel
from pypto.passes.memory_space import InferTileMemorySpace
from pypto.passes.vector_split import LowerAutoVectorSplit


def fits_alone(body: Sequence[Stmt], fn: Function, target: Target) -> bool:
    return not overruns(body, fn, target, unlowerable=True)


def overruns(body: Sequence[Stmt], fn: Function, target: Target, unlowerable: bool = False) -> bool:
    """Does some kernel of ``body`` need more of an on-chip space than the target has? A body
    that cannot be lowered at all counts as ``unlowerable`` (a later pass names why)."""
    kernels = _kernels(body, fn, target)
    if kernels is None:
        return unlowerable  # this block size cannot be lowered at all (e.g. it cannot be halved)
    for kernel in kernels:
        plan = plan_memory(kernel.body, target, tuple(kernel.attrs.get("reservations", ())))
        if over_budget(plan, target):
            return True
    return False


def double_buffered(body: Sequence[Stmt], fn: Function, target: Target) -> bool:
    """Does every pipelined loop of ``body``'s kernels get at least two stages in every space (so
    that its next transfer overlaps this iteration's compute)? False when it does not fit."""
    kernels = _kernels(body, fn, target)
    if kernels is None:
        return False
    for kernel in kernels:
        plan, staged = fitting_stages(kernel.body, target, tuple(kernel.attrs.get("reservations", ())))
        if over_budget(plan, target):
            return False
        if any(stages < min(2, loop.stages) for loop, stages, _ in staged.values()):
            return False
    return True


def _kernels(body: Sequence[Stmt], fn: Function, target: Target) -> list[Function] | None:
    """``body`` as ``fn``'s kernels, lowered the rest of the way; None if it cannot be."""
    attrs = {k: v for k, v in fn.attrs.items() if k != "slot_num"}
    probe = replace(fn, body=tuple(body), attrs=attrs)
    try:
        probe = LowerAutoVectorSplit().lower(InferTileMemorySpace().infer(probe, target))
        return list(ExpandMixedKernel().expand(probe, target))
    except PyptoError:
        return None
