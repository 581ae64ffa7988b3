"""Pipe rings: ``slot_num`` slots of ``slot_size`` bytes at the bottom of a consumer core's memory.

A :class:`RingSlot` cycles free -> filling -> ready -> popped -> free. Producers fill the slot at
their own tail (FIFO), each with its share of the tile; the slot is ready when every producer's
share has arrived. The consumer pops the head slot and gets a tile *view onto the slot's bytes*, so
the data really lives in the ring, and a tile allocated over the ring corrupts it as on chip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import torch

from pypto.ir import MemorySpace, SourceSpan, SplitMode, TileType
from pypto.ir.errors import at_line
from pypto_sim_a2a3.hw.memory import CoreMemory


class Token:
    """What a core holds where it has no data: lane 1's share of a ``split=NONE`` push, or any
    value a mirroring lane skipped computing."""

    def __repr__(self) -> str:
        return "<no data: split NONE token>"


TOKEN = Token()


class SlotState(Enum):
    """Where a slot is in its cycle."""

    FREE = "free"
    FILLING = "filling"  # claimed by a producer; not every share has arrived
    READY = "ready"
    POPPED = "popped"


@dataclass(frozen=True)
class SlotContent:
    """What a push put in a slot: its split mode and the tile the consumer pops (None: a token)."""

    split: SplitMode
    tile: TileType | None


@dataclass(eq=False)
class RingSlot:
    """One slot of a ring, at byte ``offset`` of the consumer's space."""

    index: int
    offset: int
    state: SlotState = SlotState.FREE
    writers: dict[str, SourceSpan | None] = field(default_factory=dict)  # producer -> its push line
    arrived: set[str] = field(default_factory=set)
    content: SlotContent | None = None
    popped_by: str | None = None
    popped_at: SourceSpan | None = None
    pushed: dict[str, tuple[int, int]] = field(default_factory=dict)  # producer -> its push's cycles
    freed_at: int = 0  # the modeled cycle its last free was done: a push into it waits for it
    # producer -> the valid shape of its share in the slot's tile (None: all of it is real)
    valid: dict[str, tuple[int, ...] | None] = field(default_factory=dict)

    @property
    def pushed_at(self) -> SourceSpan | None:
        """The push line of the first producer that claimed the slot."""
        return next(iter(self.writers.values()), None)

    def describe(self, producers: tuple[str, ...]) -> str:
        """``slot 0 popped by AIV0 at kernel.py:40 and never freed``, and the like per state."""
        head = f"slot {self.index}"
        if self.state is SlotState.FREE:
            return f"{head} free"
        if self.state is SlotState.POPPED:
            return f"{head} popped by {self.popped_by} at {at_line(self.popped_at)} and never freed"
        by = " and ".join(self.writers)
        if self.state is SlotState.READY:
            return f"{head} ready (pushed by {by} at {at_line(self.pushed_at)}) and never popped"
        missing = " and ".join(p for p in producers if p not in self.arrived)
        return f"{head} has {by}'s share (pushed at {at_line(self.pushed_at)}) but not {missing}'s"


@dataclass(eq=False)
class Ring:
    """One consumer's ring of a pipe, e.g. AIV0's ring of ``mixed_c2v`` at ``Vec[0:131072]``.

    ``producers`` fill every slot together (the AIC alone, or both AIV lanes with their shares).
    """

    owner: str  # the consumer, e.g. "AIV0"
    memory: CoreMemory
    space: MemorySpace
    slot_size: int
    slots: tuple[RingSlot, ...]
    producers: tuple[str, ...]
    pushes: dict[str, int]
    on_change: Callable[[int, int], None]  # told each change of the slots in use (+1 / -1) and its cycle
    pops: int = 0
    frees: int = 0

    @classmethod
    def build(
        cls,
        owner: str,
        memory: CoreMemory,
        space: MemorySpace,
        slot_size: int,
        slot_num: int,
        producers: tuple[str, ...],
        on_change: Callable[[int, int], None],
        base: int = 0,
    ) -> Ring:
        """A ring of free slots at offsets ``base + k * slot_size`` of ``space``."""
        slots = tuple(RingSlot(k, base + k * slot_size) for k in range(slot_num))
        pushes = dict.fromkeys(producers, 0)
        return cls(owner, memory, space, slot_size, slots, producers, pushes, on_change)

    def tail(self, producer: str) -> RingSlot:
        """The slot ``producer`` pushes into next."""
        return self.slots[self.pushes[producer] % len(self.slots)]

    def head(self) -> RingSlot:
        """The slot the consumer pops next."""
        return self.slots[self.pops % len(self.slots)]

    def writable(self, producer: str) -> bool:
        """True if ``producer``'s tail slot is free, or filling with other producers' shares only."""
        slot = self.tail(producer)
        if slot.state is SlotState.FREE:
            return True
        return slot.state is SlotState.FILLING and producer not in slot.writers

    def claim(self, producer: str, span: SourceSpan | None) -> tuple[RingSlot, bool]:
        """Take ``producer``'s tail slot for its share (call only when :meth:`writable`); returns
        it and whether it was free (the caller tells :attr:`on_change` when the filling starts)."""
        slot = self.tail(producer)
        newly_used = slot.state is SlotState.FREE
        slot.state = SlotState.FILLING
        slot.writers[producer] = span
        self.pushes[producer] += 1
        return slot, newly_used

    def arrive(self, slot: RingSlot, producer: str, content: SlotContent) -> None:
        """``producer``'s share is in ``slot``; the slot is ready once every share is."""
        slot.content = content
        slot.arrived.add(producer)
        if slot.arrived == set(self.producers):
            slot.state = SlotState.READY

    def readable(self) -> bool:
        """True if the head slot is ready to pop."""
        return self.head().state is SlotState.READY

    def take(self, consumer: str, span: SourceSpan | None) -> RingSlot:
        """Pop the head slot (call only when :meth:`readable`)."""
        slot = self.head()
        slot.state = SlotState.POPPED
        slot.popped_by, slot.popped_at = consumer, span
        self.pops += 1
        return slot

    def oldest_popped(self) -> RingSlot | None:
        """The popped slot the next free gives back (the hardware frees in pop order), if any."""
        slot = self.slots[self.frees % len(self.slots)]
        return slot if slot.state is SlotState.POPPED else None

    def release(self, slot: RingSlot, at: int) -> None:
        """Give a popped slot back to the producers at cycle ``at``."""
        slot.state = SlotState.FREE
        slot.writers.clear()
        slot.arrived.clear()
        slot.content = None
        slot.popped_by = slot.popped_at = None
        slot.pushed.clear()
        slot.valid.clear()
        slot.freed_at = at
        self.frees += 1
        self.on_change(-1, at)

    def view(self, slot: RingSlot, tile: TileType) -> torch.Tensor:
        """``tile``'s elements on the slot's bytes."""
        return self.memory.view_at(self.space, slot.offset, tile)

    def describe(self) -> str:
        """Every slot's state, e.g. ``slot 0 free, slot 1 ready (pushed by AIC at k.py:9) ...``."""
        return ", ".join(slot.describe(self.producers) for slot in self.slots)

    @property
    def in_use(self) -> int:
        """Slots that are not free: being filled, ready, or popped and not yet freed."""
        return sum(slot.state is not SlotState.FREE for slot in self.slots)

    @property
    def drained(self) -> bool:
        """True if every slot is free: all pushes popped and all pops freed."""
        return all(slot.state is SlotState.FREE for slot in self.slots)
