"""Cross-core pipes of a Group launch: ``<group>_c2v`` (AIC -> both AIV lanes) and ``<group>_v2c``.

A :class:`Pipe` has one :class:`~pypto_sim_a2a3.hw.ring.Ring` per consumer, in the consumer's memory:
C->V gives each AIV lane its own ring in its Vec, and the AIC pushes each lane its share of the
tile (``split_shape``); V->C has one ring in the AIC's Mat, and each lane writes its share into
the slot at its position. ``split=NONE`` gives lane 0 the whole tile and lane 1 a data-less token.

``push``, ``pop`` and ``free`` are coroutines: they yield a scheduler ``Wait`` (never a busy loop)
until the ring allows them, then the handshake's modeled cycles. When the run deadlocks, each wait
explains itself from the ring's slot states.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import torch

from pypto.ir import Call, DeadlockError, SourceSpan, SplitMode, Target, TileType
from pypto.ir.backend import Transfer
from pypto.ir.errors import at_line
from pypto.ir.ops import short_name, split_axis, split_shape
from pypto.ir.ops import system as system_ops
from pypto.ir.semantics import lane_share
from pypto.ir.types import MemorySpace, describe
from pypto_sim_a2a3.engine.scheduler import Blocked, Event, Signal, Wait
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.hw.corepipes import CorePipes, Dependency, Region
from pypto_sim_a2a3.hw.cost import OpCost
from pypto_sim_a2a3.hw.memory import CoreMemory, torch_dtype
from pypto_sim_a2a3.hw.ring import TOKEN, Ring, RingSlot, SlotContent, SlotState, Token

FREE_HINT = "match every tpop with a tfree"
PUSH_HINT = "every tpush needs a matching tpop"
POP_HINT = "every tpop needs a matching tpush"
SHARE_HINT = "both AIV lanes push their share of every tile"
INIT_HINT = "initialize the pipe on both sides (aic_initialize_pipe and aiv_initialize_pipe)"


class PipeDirection(Enum):
    """The two directions of a core group's pipe, with their ``dir_mask`` bits."""

    C2V = "c2v"
    V2C = "v2c"

    @property
    def mask(self) -> int:
        return 1 if self is PipeDirection.C2V else 2

    @property
    def consumer_space(self) -> MemorySpace:
        """Where the ring lives: the consumer's Vec (C->V) or Mat (V->C)."""
        return MemorySpace.Vec if self is PipeDirection.C2V else MemorySpace.Mat

    @property
    def free_op(self) -> str:
        return system_ops.tfree_to_aic if self is PipeDirection.C2V else system_ops.tfree_to_aiv


@dataclass(frozen=True)
class PipeSetup:
    """What ``aic_initialize_pipe`` / ``aiv_initialize_pipe`` say; both sides must agree."""

    dir_mask: int
    slot_size: int
    slot_num: int

    @classmethod
    def of(cls, call: Call) -> PipeSetup:
        return cls(call.attrs["dir_mask"], call.attrs["slot_size"], call.attrs["slot_num"])

    def enables(self, direction: PipeDirection) -> bool:
        return bool(self.dir_mask & direction.mask)

    def __str__(self) -> str:
        return f"dir_mask={self.dir_mask}, slot_size={self.slot_size}, slot_num={self.slot_num}"


def split_of(call: Call) -> SplitMode:
    """The call's ``split`` attr (absent means NONE)."""
    return call.attrs.get("split") or SplitMode.NONE


@dataclass(frozen=True)
class _Share:
    """One ring's part of a push: the slot content, and the bytes to write where in the slot tile."""

    ring: Ring
    content: SlotContent
    data: torch.Tensor | None  # None: a token, nothing to write
    where: tuple[slice, ...] = ()
    valid: tuple[int, ...] | None = None  # the real part of the share (None: all of it)


Steps = Generator[Event, None, Any]


@dataclass(eq=False)
class Pipe:
    """One direction of a launch's pipe, e.g. ``mixed_c2v`` from ``AIC`` to ``AIV0`` and ``AIV1``.

    ``group`` (e.g. ``cg0``) prefixes the core names in what the pipe tells ``recorder``.
    """

    name: str
    direction: PipeDirection
    producers: tuple[str, ...]
    consumers: tuple[str, ...]
    finished: set[str]  # the launch's finished cores, shared: diagnostics name who stopped early
    recorder: Recorder
    group: str
    rings: dict[str, Ring] = field(default_factory=dict)
    initialized: set[str] = field(default_factory=set)
    # changed at every push, pop, free and initialization: what a blocked push or pop waits on
    changed: Signal = field(default_factory=Signal)
    # leading dimensions of the tiles that cross (1: the tiles of a batch of blocks, see batch.py)
    lead: int = 0
    # the tiles' values cross too (off in a timing-only run whose steering values stay on one side)
    numbers: bool = True
    # id of a pushed tile type -> (it, its split, the ring's space, a lane's slot content, its dtype)
    _contents: dict[int, tuple[Any, ...]] = field(default_factory=dict, repr=False)

    def initialize(self, core: str) -> None:
        """``core`` has initialized its side of the pipe."""
        self.initialized.add(core)
        self.changed.changed()

    def open(
        self,
        setup: PipeSetup,
        memories: dict[str, CoreMemory],
        target: Target,
        span: SourceSpan | None,
        bases: dict[str, int] | None = None,
    ) -> None:
        """Build each consumer's ring of free slots at its ``bases`` offset (default: the bottom
        of its space)."""
        bases = bases or {}
        space = self.direction.consumer_space
        spec = target.spec(space)
        if setup.slot_size % spec.alignment:
            raise PipeError(
                f"pipe {self.name}: slot_size={setup.slot_size} is not a multiple of {spec.alignment} bytes",
                span,
                f"round slot_size up to a multiple of {spec.alignment}",
            )
        total = setup.slot_num * setup.slot_size
        if max(bases.values(), default=0) + total > spec.capacity:
            cores = " and ".join(self.consumers)
            raise PipeError(
                f"pipe {self.name} needs {setup.slot_num} x {setup.slot_size} = {total} bytes "
                f"of {space.name} on {cores}, which holds {spec.capacity}",
                span,
                "lower slot_num, or shrink the tile that crosses",
            )
        for consumer in self.consumers:
            track = self.recorder.ring(self.name, self._core(consumer), setup.slot_num)
            self.rings[consumer] = Ring.build(
                consumer,
                memories[consumer],
                space,
                setup.slot_size,
                setup.slot_num,
                self.producers,
                track,
                bases.get(consumer, 0),
            )

    def _core(self, role: str) -> str:
        return f"{self.group}.{role}"

    # ------------------------------------------------------------ the three handshakes

    def wait_writable(self, producer: str, call: Call) -> Steps:
        """Block (in the scheduler: a wait, never a busy loop) until ``producer``'s tail slot of
        every ring may take its share."""
        yield self.writable_wait(producer, call)

    def writable_wait(self, producer: str, call: Call) -> Wait:
        """The wait of :meth:`wait_writable`, for a caller that yields it itself."""
        return Wait(
            lambda: self._writable(producer),
            f"a free slot of pipe {self.name}",
            call.span,
            lambda: self._push_blocked(producer, call),
            silent=True,
            keeps_clock=True,  # the slot's free flag holds the sending pipe, not the scalar unit
            on=(self.changed,),
        )

    def wait_readable(self, consumer: str, call: Call) -> Steps:
        """Block until ``consumer``'s head slot is ready to pop."""
        yield self.readable_wait(consumer, call)

    def readable_wait(self, consumer: str, call: Call) -> Wait:
        """The wait of :meth:`wait_readable`, for a caller that yields it itself."""
        return Wait(
            self.rings[consumer].readable,
            f"a ready slot of pipe {self.name}",
            call.span,
            lambda: self._pop_blocked(consumer, call),
            silent=True,
            on=(self.changed,),
        )

    def push(
        self,
        producer: str,
        lane: int,
        call: Call,
        value: Any,
        valid: tuple[int, ...] | None,
        pipes: CorePipes,
        cost: OpCost,
        issued: int,
        source: tuple[MemorySpace, int, int] | None,
    ) -> int:
        """Claim the tail slots (call after :meth:`wait_writable`), write the shares on the
        producer's pipe once the slots are free and the tile is ready (``valid``: the pushed tile's
        valid shape, None when all of it is real); returns when the slots were free."""
        shares = self._shares(lane, call, value, valid)
        claimed = [(share, *share.ring.claim(producer, call.span)) for share in shares]
        free_at = max(slot.freed_at for _, slot, _ in claimed)
        reads = [Region(*source)] if source is not None else []
        after = [Dependency(free_at, None, f"a free slot of pipe {self.name}")] if free_at else []
        start, ready = pipes.run(cost, call, issued, reads=reads, after=after)
        for share, slot, newly_used in claimed:
            if newly_used:
                share.ring.on_change(1, start)
            self._deliver(producer, share, slot, call)
            slot.pushed[producer] = (start, ready)
        self.changed.changed()
        return free_at

    def pop(
        self,
        consumer: str,
        call: Call,
        cost_of: Callable[[int], OpCost],
        declared: tuple[int, ...] | None,
        pipes: CorePipes,
        issued: int,
    ) -> tuple[RingSlot, Any, int]:
        """Take the head slot (call after :meth:`wait_readable`) and read the share in (``cost_of``
        its bytes) on the consumer's pipe once every push into it is done; return the slot, a view
        of its tile (or a token) and when its data was ready. A pop that declares a valid shape
        (its run-time ``declared`` one, or its type's) must get the valid shape that was pushed."""
        ring = self.rings[consumer]
        slot = ring.take(consumer, call.span)
        self.changed.changed()
        self._check_pop(call, slot)
        self._check_valid(call, slot, declared)
        assert slot.content is not None and isinstance(call.type, TileType)
        tile = slot.content.tile
        pushed_at = max(end for _, end in slot.pushed.values())
        writes = [Region(ring.space, slot.offset, slot.offset + call.type.nbytes)] if tile is not None else []
        after = [Dependency(pushed_at, None, f"a ready slot of pipe {self.name}")]
        cost = cost_of(0 if tile is None else tile.nbytes)
        start, ready = pipes.run(cost, call, issued, writes=writes, after=after)
        for producer, pushed in slot.pushed.items():
            self.recorder.transfer(
                Transfer(self.name, self._core(producer), self._core(consumer), pushed, (start, ready))
            )
        return slot, TOKEN if tile is None else ring.view(slot, call.type), pushed_at

    def free(
        self, consumer: str, slot: RingSlot, call: Call, cost: OpCost, pipes: CorePipes, issued: int
    ) -> None:
        """Give ``slot`` back to the producers once its tile's last reader is done: the free flag is
        set on that reader's pipe.

        Several pops may be outstanding (pop a, pop b, ..., free a, free b); the hardware counts
        frees and hands back the oldest popped slot, so a free out of pop order would give the
        producer a slot still being read: it is a :class:`PipeError` naming both tiles."""
        ring = self.rings[consumer]
        if not any(s is slot for s in ring.slots):
            pipe_id = call.attrs.get("id") or 0
            raise PipeError(
                f"{short_name(call.op)}(id={pipe_id}) frees a tile popped at {at_line(slot.popped_at)} from "
                f"another pipe: pipe {self.name} (id {pipe_id}) holds no slot of it",
                call.span,
                "free a tile through the pipe it was popped from: give tfree the pop's id=",
            )
        oldest = ring.oldest_popped()
        if oldest is not None and oldest is not slot:
            raise PipeError(
                f"{short_name(call.op)} frees slot {slot.index} of pipe {self.name} (popped at "
                f"{at_line(slot.popped_at)}), but slot {oldest.index} popped at {at_line(oldest.popped_at)} "
                "is still unfreed: the hardware gives slots back in pop order, so this free would release "
                "the older tile while it is in use",
                call.span,
                "free the popped tiles in the order they were popped (pop a, pop b, ..., free a, free b)",
            )
        region = Region(ring.space, slot.offset, slot.offset + ring.slot_size)
        _, reader = pipes.last_read([region])
        _, freed = pipes.run(_on_unit(cost, reader or "MTE2"), call, issued, reads=[region])
        ring.release(slot, freed)
        self.changed.changed()

    # ------------------------------------------------------------ moving the data

    def _writable(self, producer: str) -> bool:
        if not self.initialized.issuperset(self.consumers):
            return False
        for ring in self.rings.values():  # noqa: SIM110  (a loop, not all(): the scheduler asks often)
            if not ring.writable(producer):
                return False
        return True

    def _shares(self, lane: int, call: Call, value: Any, valid: tuple[int, ...] | None) -> list[_Share]:
        tile = call.args[0].type
        assert isinstance(tile, TileType)
        mode = split_of(call)
        if self.direction is PipeDirection.C2V:
            stride = call.attrs.get("lane_stride")
            shares = [
                self._lane_slot(
                    tile, mode, i, value, c, stride, _lane_valid(tile.shape, valid, mode, i, stride)
                )
                for i, c in enumerate(self.consumers)
            ]
        else:
            shares = [replace(self._gathered_slot(tile, mode, lane, value), valid=valid)]
        for share in shares:
            self._check_fits(share, call)
        return shares

    def _lane_slot(
        self,
        tile: TileType,
        mode: SplitMode,
        lane: int,
        value: Any,
        consumer: str,
        stride: int | None,
        valid: tuple[int, ...] | None,
    ) -> _Share:
        """C->V: the share of AIV lane ``lane``'s (``stride`` rows or columns of a balanced split),
        zero-padded to ``split_shape`` (a short odd half); ``valid``, its real part."""
        ring = self.rings[consumer]
        data = lane_share(value, mode, lane, self.lead, stride)
        if data is None:
            return _Share(ring, SlotContent(mode, None), None, (), valid)
        content, dtype = self._lane_content(tile, mode, ring.space)
        if not self.numbers:
            return _Share(ring, content, None, (), valid)
        assert content.tile is not None
        shape = (*data.shape[: self.lead], *content.tile.shape)
        if tuple(data.shape) == shape and data.dtype == dtype:
            # A whole share: written into the slot as it is (the push copies it there at once).
            return _Share(ring, content, data, (), valid)
        padded = torch.zeros(shape, dtype=dtype)
        padded[tuple(slice(0, n) for n in data.shape)] = data
        return _Share(ring, content, padded, (), valid)

    def _lane_content(
        self, tile: TileType, mode: SplitMode, space: MemorySpace
    ) -> tuple[SlotContent, torch.dtype]:
        """What a lane's share of a pushed ``tile`` puts in its slot, and its elements' torch dtype
        (made once per pushed tile type: a kernel pushes the same tile in every iteration)."""
        found = self._contents.get(id(tile))
        if found is None or found[0] is not tile or found[1] is not mode or found[2] is not space:
            content = SlotContent(mode, TileType(split_shape(tile.shape, mode), tile.dtype, space))
            found = self._contents[id(tile)] = (tile, mode, space, content, torch_dtype(tile.dtype))
        return found[3], found[4]

    def _gathered_slot(self, tile: TileType, mode: SplitMode, lane: int, value: Any) -> _Share:
        """V->C: lane ``lane``'s share at its position in the AIC's whole tile."""
        ring = self.rings[self.consumers[0]]
        axis = split_axis(mode)
        shape = list(tile.shape)
        where = [slice(None)] * len(shape)
        if axis is not None:
            where[axis] = slice(lane * shape[axis], (lane + 1) * shape[axis])
            shape[axis] *= 2
        content = SlotContent(mode, TileType(tuple(shape), tile.dtype, ring.space))
        carries_data = self.numbers and not isinstance(value, Token) and (axis is not None or lane == 0)
        return _Share(ring, content, value if carries_data else None, (*[slice(None)] * self.lead, *where))

    def _check_fits(self, share: _Share, call: Call) -> None:
        tile = share.content.tile
        if tile is not None and _nbytes(tile) > share.ring.slot_size:
            raise PipeError(
                f"{short_name(call.op)} puts a {describe(tile)} ({tile.nbytes} bytes) into pipe {self.name}, "
                f"whose slots hold {share.ring.slot_size} bytes",
                call.span,
                "initialize the pipe with slot_size >= the bytes of the largest tile that crosses",
            )

    def _deliver(self, producer: str, share: _Share, slot: RingSlot, call: Call) -> None:
        if slot.content is not None and slot.content != share.content:
            raise PipeError(
                f"{short_name(call.op)}"
                f" from {producer} puts {_content(share.content)} into slot {slot.index} of pipe "
                f"{self.name}, but {' and '.join(slot.arrived)} put {_content(slot.content)} there",
                call.span,
                SHARE_HINT + ", with the same shape, dtype and split",
            )
        if share.data is not None and share.content.tile is not None:
            share.ring.view(slot, share.content.tile)[share.where].copy_(share.data)
        slot.valid[producer] = share.valid
        share.ring.arrive(slot, producer, share.content)

    def _check_pop(self, call: Call, slot: RingSlot) -> None:
        assert slot.content is not None and isinstance(call.type, TileType)
        want, got = call.type, slot.content
        same_tile = got.tile is None or (got.tile.shape, got.tile.dtype) == (want.shape, want.dtype)
        if split_of(call) is got.split and same_tile:
            return
        raise PipeError(
            f"{short_name(call.op)}"
            f" pops {describe(want)} with split={split_of(call).name} from pipe {self.name}, but "
            f"slot {slot.index} holds {_content(got)} pushed at {at_line(slot.pushed_at)}",
            call.span,
            "pop the split and the lane's share shape (split_shape) of the tile the producer pushed",
        )

    def _check_valid(self, call: Call, slot: RingSlot, declared: tuple[int, ...] | None) -> None:
        """A pop's ``valid_shape=`` states what the producer pushed: a mismatch is an error
        naming both lines (a pop without one takes the slot's whole tile)."""
        assert isinstance(call.type, TileType)
        if declared is None and not call.args:
            return
        content = slot.content
        if content is None or content.tile is None:
            return  # lane 1's token under split=NONE: no data, no valid shape
        want = declared if declared is not None else (call.type.valid_shape or call.type.shape)
        got = self._arrived_valid(slot, content)
        if tuple(want) == got:
            return
        raise PipeError(
            f"{short_name(call.op)} declares valid_shape={list(want)}, but the tile pushed at "
            f"{at_line(slot.pushed_at)} has valid shape {list(got)} (the popped part of it)",
            call.span,
            "give the pop the valid shape of the tile that was pushed (pl.set_validshape on the "
            "producer, or the pop's valid_shape=), lane by lane under a split",
        )

    def _arrived_valid(self, slot: RingSlot, content: SlotContent) -> tuple[int, ...]:
        """The valid shape of the slot's tile, from each producer's share."""
        assert content.tile is not None
        full = content.tile.shape
        if self.direction is PipeDirection.C2V or len(self.producers) == 1:
            (valid,) = slot.valid.values()
            return tuple(valid or full)
        axis = split_axis(content.split)
        lanes = [slot.valid.get(p) for p in self.producers]
        if axis is None:  # split=NONE: lane 0 carries the data
            return tuple(lanes[0] or full)
        half = full[axis] // 2
        shares = [list(v) if v is not None else [*full[:axis], half, *full[axis + 1 :]] for v in lanes]
        merged = list(shares[0])
        merged[axis] = shares[0][axis] + (shares[1][axis] if shares[0][axis] == half else 0)
        return tuple(merged)

    # ------------------------------------------------------------ diagnostics

    def _push_blocked(self, producer: str, call: Call) -> Blocked:
        where = f"{short_name(call.op)} on pipe {self.name} blocks at {at_line(call.span)}"
        waiting = [c for c in self.consumers if c not in self.initialized]
        if waiting:
            return self._uninitialized(where, waiting[0], call)
        ring = next(r for r in self.rings.values() if not r.writable(producer))
        text = f"{where}: {ring.owner}'s ring is full — {ring.describe()}"
        popped = [s for s in ring.slots if s.state is SlotState.POPPED]
        if popped:
            return Blocked(
                f"{text} (missing {short_name(self.direction.free_op)})", popped[0].popped_at, FREE_HINT
            )
        if ring.owner in self.finished:
            pushes = ring.pushes[producer]
            note = (
                f"{ring.owner} finished after {ring.pops} pop(s) of {pushes} push(es): more pushes than pops"
            )
            return Blocked(f"{text} ({note})", call.span, PUSH_HINT)
        return self._with_stopped_producers(text, ring, call)

    def _pop_blocked(self, consumer: str, call: Call) -> Blocked:
        where = f"{short_name(call.op)} on pipe {self.name} blocks at {at_line(call.span)}"
        waiting = [p for p in self.producers if p not in self.initialized]
        if waiting:
            return self._uninitialized(where, waiting[0], call)
        ring = self.rings[consumer]
        text = f"{where}: the next slot is not ready — {ring.describe()}"
        if ring.head().state is SlotState.POPPED:
            return Blocked(
                f"{text} (missing {short_name(self.direction.free_op)})", ring.head().popped_at, FREE_HINT
            )
        return self._with_stopped_producers(text, ring, call)

    def _with_stopped_producers(self, text: str, ring: Ring, call: Call) -> Blocked:
        """Name the producers that finished with fewer pushes than the consumer needs."""
        stopped = [p for p in self.producers if p in self.finished]
        if not stopped:
            return Blocked(text)
        counts = ", ".join(f"{p} finished after {ring.pushes[p]} push(es)" for p in stopped)
        if len(self.producers) > 1 and len(stopped) < len(self.producers):
            return Blocked(f"{text} ({counts})", call.span, SHARE_HINT)
        if len({ring.pushes[p] for p in self.producers}) > 1:
            # The lanes pushed different numbers of shares: blame the push only some lanes made.
            filling = next((s for s in ring.slots if s.state is SlotState.FILLING), None)
            where = filling.pushed_at if filling is not None else call.span
            return Blocked(f"{text} ({counts}: one lane's share of a tile is missing)", where, SHARE_HINT)
        note = f"{counts} and {ring.owner} popped {ring.pops}: more pops than pushes"
        return Blocked(f"{text} ({note})", call.span, POP_HINT)

    def _uninitialized(self, where: str, core: str, call: Call) -> Blocked:
        if core in self.finished:
            return Blocked(f"{where}: {core} finished without initializing the pipe", call.span, INIT_HINT)
        return Blocked(f"{where}: {core} has not initialized the pipe")

    def undrained(self, launch: str) -> DeadlockError | None:
        """The error for a launch that ends with tiles left in a ring or popped slots never freed."""
        rings = list(self.rings.values())
        if all(ring.drained for ring in rings):
            return None
        parts = []
        for ring in rings:
            pushes = ", ".join(f"{p} pushed {n}" for p, n in ring.pushes.items())
            counts = f"{pushes}, {ring.pops} popped, {ring.frees} freed"
            parts.append(f"{ring.owner}'s ring ({counts}): {ring.describe()}")
        cause, hint = _undrained_cause(rings)
        message = f"pipe {self.name} is not drained when the launch of {launch} ends — " + "; ".join(parts)
        return DeadlockError(message, cause, hint)


def _undrained_cause(rings: list[Ring]) -> tuple[SourceSpan | None, str]:
    """The line to blame for a ring left non-empty: an unpopped push first, then an unfreed pop."""
    slots = [slot for ring in rings for slot in ring.slots]
    for state, hint in (
        (SlotState.READY, PUSH_HINT + ": more pushes than pops"),
        (SlotState.FILLING, SHARE_HINT),
    ):
        for slot in slots:
            if slot.state is state:
                return slot.pushed_at, hint
    popped = next(slot for slot in slots if slot.state is SlotState.POPPED)
    return popped.popped_at, FREE_HINT


# id of a slot's tile type -> (it, its bytes): a push checks that its shares fit their slots.
_NBYTES: dict[int, tuple[TileType, int]] = {}


def _nbytes(tile: TileType) -> int:
    found = _NBYTES.get(id(tile))
    if found is None or found[0] is not tile:
        if len(_NBYTES) > 4096:
            _NBYTES.clear()
        found = _NBYTES[id(tile)] = (tile, tile.nbytes)
    return found[1]


# (cost, unit) -> that cost on that unit: a free's flag is set on its tile's last reader's pipe.
_ON_UNIT: dict[tuple[int, str], tuple[OpCost, OpCost]] = {}


def _on_unit(cost: OpCost, unit: str) -> OpCost:
    """``cost`` on ``unit`` (made once per cost and unit: a cost model keeps each op's cost)."""
    found = _ON_UNIT.get((id(cost), unit))
    if found is None or found[0] is not cost:
        if len(_ON_UNIT) > 4096:
            _ON_UNIT.clear()
        found = _ON_UNIT[id(cost), unit] = (cost, replace(cost, unit=unit))
    return found[1]


def _content(content: SlotContent) -> str:
    tile = "a data-less token" if content.tile is None else describe(content.tile)
    return f"{tile} (split={content.split.name})"


def _lane_valid(
    shape: tuple[int, ...],
    valid: tuple[int, ...] | None,
    mode: SplitMode,
    lane: int,
    stride: int | None = None,
) -> tuple[int, ...] | None:
    """The valid shape of lane ``lane``'s share of a pushed tile (None: all of it is real):
    along the split axis lane 0 holds the first ``ceil(L/2)`` (or ``stride``), lane 1 the rest."""
    axis = split_axis(mode)
    if axis is None:
        return valid
    share = list(split_shape(shape, mode))
    if stride is not None:
        share[axis] = stride
    whole = valid[axis] if valid is not None else shape[axis]
    share_valid = list(valid) if valid is not None else list(shape)
    share_valid[axis] = max(0, min(share[axis], whole - lane * share[axis]))
    share_valid[axis] = min(share_valid[axis], shape[axis] - lane * share[axis])
    return tuple(share_valid)
