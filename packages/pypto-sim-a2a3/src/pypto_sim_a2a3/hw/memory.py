"""On-chip memory of one core: real byte buffers, and tiles as views at their allocated offsets.

Because a tile is ``buffer[offset:offset + nbytes]`` reinterpreted, two tiles whose allocations
overlap share bytes, and a planning bug shows up as wrong numbers, as it would on the chip.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import torch

from pypto.ir import (
    Allocation,
    Function,
    MemoryPlan,
    MemorySpace,
    SourceSpan,
    Target,
    TileType,
    Var,
    VerificationError,
)
from pypto.ir.semantics import torch_dtype

__all__ = ["CoreMemory", "Region", "torch_dtype"]


class Region(NamedTuple):
    """A byte range of one on-chip space of a core: ``Mem.Vec[lo:hi]``."""

    space: MemorySpace
    lo: int
    hi: int


# The allocations of each kernel's tiles already checked against a core's spaces on a target:
# a plan does not change as it runs, and every core of a kind has the same spaces, so the check
# is made once per program, not per core or run.
_Checked = dict[tuple[str, int, tuple[MemorySpace, ...]], tuple[Target, Allocation]]
_CHECKED: weakref.WeakKeyDictionary[Function, _Checked] = weakref.WeakKeyDictionary()


class SpaceBuffers(dict[MemorySpace, torch.Tensor]):
    """A core's byte buffers by space, each made (zeroed) when first used: a kernel touches few of
    its core's spaces, and a chip has 72 cores."""

    def __init__(
        self,
        capacities: Mapping[MemorySpace, int],
        storages: dict[int, tuple[MemorySpace, int]],
        lanes: tuple[int, ...] = (),
    ):
        super().__init__()
        self.capacities = capacities
        self.storages = storages  # storage address -> (its space, the address of its first byte)
        self.lanes = lanes  # leading dimensions: (blocks,) for the memories of many blocks at once

    def __missing__(self, space: MemorySpace) -> torch.Tensor:
        if space not in self.capacities:
            raise KeyError(space)
        buffer = self[space] = self.make(space)
        self.storages[buffer.untyped_storage().data_ptr()] = (space, buffer.data_ptr())
        return buffer

    def make(self, space: MemorySpace) -> torch.Tensor:
        """The zeroed bytes of ``space``."""
        return torch.zeros((*self.lanes, self.capacities[space]), dtype=torch.uint8)


class CoreMemory:
    """One ``torch.uint8`` buffer per on-chip space a core owns, sized by the target's capacity.

    ``CoreMemory(A2A3_TARGET, [MemorySpace.Vec]).buffers[MemorySpace.Vec]`` holds the Vec's capacity
    of zero bytes (made at its first use). ``high_water`` is, per space, the end of the highest tile
    or ring slot placed since it was last cleared (the chip clears it when a kernel starts on the core).
    """

    def __init__(self, target: Target, spaces: Iterable[MemorySpace], lanes: tuple[int, ...] = ()):
        self.target = target
        self._spaces = tuple(spaces)
        # storage address -> (its space, the address of its first byte), of the buffers made so far
        self._storages: dict[int, tuple[MemorySpace, int]] = {}
        self.buffers = SpaceBuffers({s: target.spec(s).capacity for s in self._spaces}, self._storages, lanes)
        self.high_water: dict[MemorySpace, int] = {}
        # (space, offset, dtype, shape) -> the view of those bytes as those elements, and its end
        self._views: dict[tuple[MemorySpace, int, Any, tuple[Any, ...]], tuple[torch.Tensor, int]] = {}
        # id of a view handed out -> (the view, its region): a view's region is known when it is made
        self._regions: dict[int, tuple[torch.Tensor, Region]] = {}

    @property
    def spaces(self) -> tuple[MemorySpace, ...]:
        """The on-chip spaces this core has."""
        return self._spaces

    def shares_storage(self, tensor: torch.Tensor) -> bool:
        """True if ``tensor`` is a view into one of this core's buffers."""
        return id(tensor) in self._regions or tensor.untyped_storage().data_ptr() in self._storages

    def region(self, tensor: torch.Tensor) -> tuple[MemorySpace, int, int] | None:
        """The space and the byte range ``[lo, hi)`` a tile view covers (a :class:`Region`), or
        None for a tensor that lives elsewhere (in GM)."""
        known = self._regions.get(id(tensor))
        if known is not None and known[0] is tensor:
            return known[1]
        found = self._storages.get(tensor.untyped_storage().data_ptr())
        if found is None:
            return None
        space, base = found
        lo = tensor.data_ptr() - base
        return Region(space, lo, lo + tensor.numel() * tensor.element_size())

    def view(self, allocation: Allocation, tile: TileType, slot_value: int = 0) -> torch.Tensor:
        """The tile's elements: ``buffer[offset:offset + nbytes]`` as ``tile.dtype`` of ``tile.shape``
        (of a slotted buffer, the slot ``slot_value`` of its slot variable picks)."""
        return self.view_at(allocation.space, allocation.slot_offset(slot_value), tile)

    def view_at(self, space: MemorySpace, offset: int, tile: TileType) -> torch.Tensor:
        """``tile``'s elements on the bytes of ``space`` starting at ``offset`` (e.g. a pipe slot)."""
        key = (space, offset, tile.dtype, tuple(tile.shape))
        found = self._views.get(key)
        if found is None:  # views of the same bytes as the same elements are one: made once
            top = offset + tile.nbytes
            raw = self.buffers[space][..., offset:top]  # (of each block, in a batch's memory)
            view = raw.view(torch_dtype(tile.dtype)).view(*self.buffers.lanes, *tile.shape)
            found = self._views[key] = (view, top)
            self._regions[id(view)] = (view, Region(space, offset, top))
        view, top = found
        if top > self.high_water.get(space, 0):
            self.high_water[space] = top
        return view

    def reached(self, space: MemorySpace, top: int) -> None:
        """A view ending at byte ``top`` of ``space`` is handed out again (see :attr:`high_water`)."""
        if top > self.high_water.get(space, 0):
            self.high_water[space] = top

    def place(
        self,
        kernel: Function,
        var: Var,
        core: str,
        span: SourceSpan | None,
        env: Mapping[str, Any] | None = None,
    ) -> torch.Tensor:
        """The buffer view of tile ``var`` of ``kernel`` per its memory plan, after checking the plan
        (a slotted buffer's slot from its slot variable's value in ``env``)."""
        allocation = self.allocation(kernel, var, core, span)
        return self.view(allocation, var.type, slot_of(kernel, var, allocation, span, env))  # type: ignore[arg-type]

    def allocation(self, kernel: Function, var: Var, core: str, span: SourceSpan | None) -> Allocation:
        """Tile ``var``'s allocation in ``kernel``'s memory plan, checked against this core's spaces
        (once per program: see ``_CHECKED``); a VerificationError if the plan cannot hold it."""
        assert isinstance(var.type, TileType)
        checked = _CHECKED.setdefault(kernel, {})
        key = (var.name, id(self.target), self._spaces)
        found = checked.get(key)
        if found is not None and found[0] is self.target:
            return found[1]
        allocation = self._allocation(kernel, var, span)
        problem = self._problem(allocation, var.type, core)
        if problem is not None:
            raise VerificationError(
                f"in kernel {kernel.name}: tile {var.name} {problem}",
                span,
                "fix the kernel's memory plan (the AllocateMemory pass places every tile)",
            )
        checked[key] = (self.target, allocation)
        return allocation

    @staticmethod
    def _allocation(kernel: Function, var: Var, span: SourceSpan | None) -> Allocation:
        plan = kernel.attrs.get("memory_plan")
        allocation = plan.of(var.name) if isinstance(plan, MemoryPlan) else None
        if allocation is None:
            raise VerificationError(
                f"in kernel {kernel.name}: tile {var.name} has no allocation in the memory plan",
                span,
                "run the AllocateMemory pass, or give the tile an Allocation in fn.attrs['memory_plan']",
            )
        return allocation

    def _problem(self, allocation: Allocation, tile: TileType, core: str) -> str | None:
        a = allocation
        where = f"{a.space.name}[{a.offset}:{a.end}]"
        if tile.memory_space is not None and tile.memory_space is not a.space:
            return f"is a {tile.memory_space.name} tile but is allocated in {a.space.name}"
        if a.space not in self._spaces:
            return f"is allocated in {a.space.name}, which the {core} core does not have"
        spec = self.target.spec(a.space)
        if a.offset < 0 or a.end > spec.capacity:
            return f"at {where} lies outside the {spec.capacity}-byte {a.space.name}"
        if a.offset % spec.alignment:
            return f"at {where} is not aligned to {spec.alignment} bytes"
        if a.size < tile.nbytes:
            return f"at {where} has {a.size} bytes but needs {tile.nbytes}"
        return None


def slot_of(
    kernel: Function, var: Var, allocation: Allocation, span: SourceSpan | None, env: Mapping[str, Any] | None
) -> int:
    """The slot of a slotted buffer that tile ``var`` takes now: its slot variable's value in
    ``env`` (0 for a buffer of one slot)."""
    if allocation.slots <= 1:
        return 0
    slot_var = allocation.slot_var
    if env is None or slot_var is None or slot_var not in env:
        raise VerificationError(
            f"in kernel {kernel.name}: tile {var.name} takes a slot by {slot_var}, "
            "which the kernel has not defined",
            span,
            "fix the kernel's memory plan: a slotted tile's slot variable is a loop's",
        )
    return int(env[slot_var])
