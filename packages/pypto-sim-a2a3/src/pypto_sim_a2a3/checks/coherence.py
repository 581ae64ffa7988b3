"""Ordering of cross-core global-memory traffic within one launch (mixed-kernels.md).

A pipe orders only the tile it carries. When one core reads GM bytes (``tile.load``,
``tile.load_partial``, ``tile.gather_row``, ``scalar.read``) that another core of the same launch
wrote (``tile.store``, ``tile.store_partial``, ``tile.store_atomic``), the program must order them
itself: the writer publishes its write (``system.cacheinvalid`` covering it), fences
(``system.fence``), arrives at a ``system.syncall``; the reader passes that same round and
invalidates (``system.cacheinvalid``, whole GM or a region covering the bytes) before it reads.
A write over bytes another core wrote earlier needs the first writer's half of that sequence:
publish, fence, a syncall round the second writer passes before its write (the second writer reads
nothing, so it needs no invalidate); otherwise which value GM ends up holding is whichever write
landed last. A write over bytes another core read earlier needs a syncall round the reader reached
after its read. Anything else is a ``RaceError`` naming both cores, the tensor and both lines. Two
atomic adds commute, so they need no order between themselves; an atomic add and a plain write of
the same bytes do. Each access covers exactly the bytes it touches: a partial op its run-time valid
region. Accesses are tracked per GM tensor as boxes of its index space; different launches are
ordered by the task boundary, so each launch keeps its own record. Views of one tensor (a
``pl.slice`` passed as an argument) are boxes of that tensor's index space (see
:mod:`pypto_sim_a2a3.checks.footprints`), so accesses through two views of it meet where they overlap.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add
from typing import Any, Generic, NamedTuple, TypeVar

import torch

from pypto.ir import Call, RaceError, SourceSpan, TileType, Var
from pypto.ir.errors import at_line
from pypto.ir.ops import OPS, GmAccess, Level, Ordering, PlacesTile, get_op
from pypto.ir.semantics import wrapped_positions
from pypto_sim_a2a3.checks.footprints import TensorKey, tensor_frame
from pypto_sim_a2a3.errors import OutOfBoundsError

T = TypeVar("T")

RACE_HINT = (
    "order cross-core GM traffic: the writer publishes its write (pl.system.cacheinvalid), fences "
    "(pl.system.fence), both cores pass one pl.system.syncall, then the reader invalidates "
    "(pl.system.cacheinvalid) before it reads; between the AIC and the AIV lanes of a core group, an "
    "event does it too: the writer pl.system.sync_set(e, pipe=pl.PipeType.ALL) after its write, the "
    "reader pl.system.sync_wait(e) before its read"
)
# A core read bytes that another then wrote; the run cannot tell which order the program meant.
OVERWRITE_HINT = (
    "if the read should see this write, order the write first: the writer publishes it "
    "(pl.system.cacheinvalid), fences (pl.system.fence), both cores pass one pl.system.syncall, then "
    "the reader invalidates (pl.system.cacheinvalid) before it reads (between a core group's AIC and "
    "AIV lanes, an event does it too: the writer pl.system.sync_set(e) after its write, the reader "
    "pl.system.sync_wait(e) before its read); if the read comes first, pass a pl.system.syncall that "
    "the reader reached after its read before overwriting"
)
WRITE_WRITE_HINT = (
    "give each core its own region of the tensor (e.g. offset by pl.get_subblock_idx()), add with "
    "atomic stores on both, or order the writes: the first writer publishes its write "
    "(pl.system.cacheinvalid), fences (pl.system.fence), and both cores pass one pl.system.syncall "
    "before the second writes"
)


class KeyCache:
    """What the GM accesses of a caller whose tensors and calls stay the same objects (a launch's
    arguments, its kernels' calls) find once and reuse: each tensor's frame and origin
    (:func:`~pypto_sim_a2a3.checks.footprints.tensor_frame`), and each call's fixed part of its
    access (the tensor's name, whether it writes, the box's extent when the types fix it)."""

    def __init__(self) -> None:
        # id(tensor) -> (the tensor, its frame, its origin there, the origin an Access names)
        self.frames: dict[int, tuple[torch.Tensor, TensorKey, tuple[int, ...], tuple[int, ...]]] = {}
        self.calls: dict[int, tuple[Call, _CallAccess | None]] = {}  # id(call) -> (the call, its access)

    def frame(self, tensor: torch.Tensor) -> tuple[torch.Tensor, TensorKey, tuple[int, ...], tuple[int, ...]]:
        known = self.frames.get(id(tensor))
        if known is None or known[0] is not tensor:
            key, origin = tensor_frame(tensor)
            known = self.frames[id(tensor)] = (tensor, key, origin, origin if any(origin) else ())
        return known

    def call(self, call: Call) -> _CallAccess | None:
        """``call``'s access, if it moves GM data (None otherwise)."""
        known = self.calls.get(id(call))
        if known is None or known[0] is not call:
            if call in _CALLS:  # (found by an earlier launch of the program)
                found = _CALLS[call]
            else:
                found = _CALLS[call] = _call_access(call)
            known = self.calls[id(call)] = (call, found)
        return known[1]


class Region(NamedTuple):
    """A box ``[lo, hi)`` per dim of a GM tensor's index space (a tuple: every GM access makes one)."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]

    @classmethod
    def box(cls, offsets: Sequence[int], extent: Sequence[int]) -> Region:
        """The box ``[offsets, offsets + extent)``."""
        if len(offsets) != len(extent):
            raise ValueError(f"offsets {list(offsets)} and extent {list(extent)} differ in rank")
        lo = tuple(offsets)
        return _NEW(cls, (lo, tuple(map(add, lo, extent))))

    def overlap(self, other: Region) -> Region | None:
        lo = tuple(map(max, self.lo, other.lo))
        hi = tuple(map(min, self.hi, other.hi))
        for a, b in zip(lo, hi, strict=True):
            if a >= b:
                return None
        return _NEW(Region, (lo, hi))

    def covers(self, other: Region) -> bool:
        return all(a <= c and d <= b for a, b, c, d in zip(self.lo, self.hi, other.lo, other.hi, strict=True))

    def shifted(self, by: Sequence[int]) -> Region:
        """The box moved by ``by`` (between a view's index space and its tensor's)."""
        return Region(tuple(map(add, self.lo, by)), tuple(map(add, self.hi, by)))

    def __str__(self) -> str:
        return "[" + ", ".join(f"{a}:{b}" for a, b in zip(self.lo, self.hi, strict=True)) + "]"


class Access(NamedTuple):
    """A read or write of a GM box by one core (a tuple: every GM access makes one)."""

    core: str
    tensor: str
    key: TensorKey  # the frame of the tensor (see pypto_sim_a2a3.checks.footprints)
    region: Region  # the box in the frame
    span: SourceSpan | None
    write: bool
    atomic: bool = False  # an atomic add: two of them commute
    at: int = 0  # the modeled cycle it starts: cores issue ahead, so records come out of this order
    origin: tuple[int, ...] = ()  # where the tensor it names starts in the frame (a view's offset)

    def local(self, region: Region) -> Region:
        """A box of the frame as the tensor this access names indexes it (for messages)."""
        return region.shifted(tuple(-o for o in self.origin)) if self.origin else region

    def conflicts(self, other: Access) -> Region | None:
        """The bytes both touch when their order matters (a write, and not two atomic adds)."""
        if not (self.write or other.write) or (self.atomic and other.atomic):
            return None
        return _shared(self, other)

    @property
    def verb(self) -> str:
        return "adds into" if self.atomic else "writes" if self.write else "reads"


# Makes a tuple record from its fields in order, without the keyword handling of its constructor.
_NEW = tuple.__new__


@dataclass(frozen=True)
class Invalidate:
    """A ``system.cacheinvalid``: all of GM (``key`` None) or one box of one tensor."""

    key: TensorKey | None
    region: Region | None

    def covers(self, key: TensorKey, region: Region) -> bool:
        if self.key is None:
            return True
        return self.key == key and self.region is not None and self.region.covers(region)


@dataclass(frozen=True)
class Fence:
    """A ``system.fence``."""


@dataclass(frozen=True)
class Arrive:
    """An arrival at a syncall round; ``counted`` if it came before the round released. An
    explicit event's set (``gives``) or wait (``takes``) is one too, one way: the setter's earlier
    accesses come before the waiter's later ones, with no publish, fence or invalidate needed (the
    set fired once its pipe drained). ``note`` says why a set orders nothing (its pipe had not
    finished the core's GM writes)."""

    round: tuple[str, int]
    counted: bool
    gives: bool = True
    takes: bool = True
    event: bool = False
    note: str | None = None


GmEvent = Access | Invalidate | Fence | Arrive


class BoxIndex(Generic[T]):
    """Items placed at boxes of one GM tensor (one core's reads, say), for overlap queries in
    logarithmic time: ordered by where their boxes start in the first dimension, with the
    furthest end of that dimension among each prefix. Each item has a sequence number (its place
    in the order the caller keeps, e.g. a core's log), by which the caller sorts what it finds.

    An item added waits in a list until the next query files it, so that what is never queried
    (the reads of a tensor no one writes) costs an append. Many waiting items are filed by one
    stable sort, a few one by one; either way in the order they came, after the items already
    there that start where they start."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._reach: list[int] = []  # the largest end among the first i + 1 entries
        self._items: list[tuple[int, T]] = []  # (sequence number, item)
        self._waiting: list[tuple[int, int, tuple[int, T]]] = []  # (start, end, entry), not yet filed

    def add(self, seq: int, region: Region, item: T) -> None:
        lo = region.lo
        if lo:
            self._waiting.append((lo[0], region.hi[0], (seq, item)))
        else:  # (a scalar's region is one point)
            self._waiting.append((0, 1, (seq, item)))

    def __len__(self) -> int:
        return len(self._items) + len(self._waiting)

    def discard(self, drop: Callable[[T], bool]) -> bool:
        """Remove the items ``drop`` picks; whether none is left."""
        if self._waiting:
            self._file()
        kept = [i for i, (_, item) in enumerate(self._items) if not drop(item)]
        if len(kept) < len(self._items):
            self._starts = [self._starts[i] for i in kept]
            self._ends = [self._ends[i] for i in kept]
            self._items = [self._items[i] for i in kept]
            self._reach = list(accumulate(self._ends, max))
        return not self._items

    def overlapping(self, region: Region) -> list[tuple[int, T]]:
        """The items whose boxes meet ``region`` in the first dimension (the caller checks the
        others), as (sequence number, item) in no particular order."""
        if self._waiting:
            self._file()
        start, end = _first_dim(region)
        stop = bisect_left(self._starts, end)  # the entries that start before the region ends
        first = bisect_right(self._reach, start, 0, stop)  # ... and reach past its start
        return [self._items[i] for i in range(first, stop) if self._ends[i] > start]

    def _file(self) -> None:
        waiting, self._waiting = self._waiting, []
        if len(waiting) * 8 < len(self._starts):
            for start, end, entry in waiting:
                self._insert(start, end, entry)
            return
        filed = [*zip(self._starts, self._ends, self._items, strict=True), *waiting]
        filed.sort(key=lambda e: e[0])  # stable: the waiting ones after those there, in order
        self._starts = [e[0] for e in filed]
        self._ends = [e[1] for e in filed]
        self._items = [e[2] for e in filed]
        self._reach = list(accumulate(self._ends, max))

    def _insert(self, start: int, end: int, entry: tuple[int, T]) -> None:
        at = bisect_right(self._starts, start)
        self._starts.insert(at, start)
        self._ends.insert(at, end)
        self._items.insert(at, entry)
        reach = max(self._reach[at - 1], end) if at else end
        self._reach.insert(at, reach)
        ends, reaches = self._ends, self._reach
        for i in range(at + 1, len(reaches)):  # the later entries' reach grows to the new end ...
            if reaches[i] >= reach:
                break  # ... until one reaches as far already: from there on nothing changes
            reaches[i] = reach = max(reach, ends[i])


def _first_dim(region: Region) -> tuple[int, int]:
    """``[lo, hi)`` of a region's first dimension (a scalar's region is one point)."""
    return (region.lo[0], region.hi[0]) if region.lo else (0, 1)


class GmOrder:
    """Per core of one launch, the GM accesses and ordering events in program order.

    ``order.access("cg0.AIV0", load_call, args)`` records a read and raises ``RaceError`` if an
    earlier write of the same bytes by another core is not ordered before it.
    """

    def __init__(self) -> None:
        self._logs: dict[str, list[GmEvent]] = defaultdict(list)
        self.pending = 0  # accesses its launches queued for a check in modeled order, not checked yet
        # Per GM tensor, the writes and the reads of every core, indexed for overlap queries (each
        # with its position in its core's log).
        self._writes: dict[TensorKey, BoxIndex[Access]] = {}
        self._reads: dict[TensorKey, BoxIndex[Access]] = {}

    def access(self, core: str, call: Call, args: Sequence[Any], at: int = 0) -> None:
        """Record ``call``'s GM read or write by ``core``, starting at modeled cycle ``at`` (other
        ops are ignored); a RaceError if it reads another core's unordered write, or writes over
        another core's unordered read or write (unless both writes are atomic adds). A race is told
        in the order the two accesses happen in modeled time."""
        for access in gm_accesses(core, call, args, at):
            self.record(access)

    def record(self, access: Access) -> None:
        """Record a GM access :func:`gm_access` described (see :meth:`access`)."""
        core = access.core
        for other, position, event in self._conflicting(core, access):
            first, after, second = event, self._logs[other][position + 1 :], access
            if event.at > access.at:
                # Recorded first but later in modeled time: nothing can order them (a syncall
                # between would have held this access back), so it is a race told this way.
                first, after, second = access, [], event
            if first.write and second.write:
                self._check_write_after_write(first, after, second)
            elif second.write:
                self._check_write_after_read(first, after, second)
            else:
                self._check_read_after_write(first, after, second)
        log = self._logs[core]
        kind = self._writes if access.write else self._reads
        boxes = kind.get(access.key)
        if boxes is None:
            boxes = kind[access.key] = BoxIndex()
        boxes.add(len(log), access.region, access)
        log.append(access)

    def _conflicting(self, core: str, access: Access) -> list[tuple[str, int, Access]]:
        """Other cores' accesses whose order with ``access`` matters (it or they write, and not
        two atomic adds) and that share bytes with it, as (core, position in its log, access):
        core by core in the order the record first met them, each in program order."""
        found: list[tuple[str, int, Access]] = []
        kinds = (self._writes, self._reads) if access.write else (self._writes,)
        for kind in kinds:
            boxes = kind.get(access.key)
            if boxes is None:
                continue
            for position, event in boxes.overlapping(access.region):
                if event.core != core and event.conflicts(access) is not None:
                    found.append((event.core, position, event))
        if len(found) > 1:
            rank = {name: i for i, name in enumerate(self._logs)}
            found.sort(key=lambda hit: (rank[hit[0]], hit[1]))
        return found

    def invalidate(self, core: str, call: Call, args: Sequence[Any]) -> None:
        """Record ``system.cacheinvalid``: no args = all of GM; a tensor = all of it; or a box."""
        if not args:
            self._logs[core].append(Invalidate(None, None))
            return
        tensor = args[0]
        offsets = tuple(int(o) for o in args[1]) if len(args) > 1 else (0,) * tensor.dim()
        rest = [n - o for n, o in zip(tensor.shape, offsets, strict=True)]
        extent = call.attrs.get("shape") or rest
        region = Region.box(offsets, extent)
        _check_inside(call, tensor, region)
        key, origin = tensor_frame(tensor)
        self._logs[core].append(Invalidate(key, region.shifted(origin)))

    def fence(self, core: str) -> None:
        """Record ``system.fence``."""
        self._logs[core].append(Fence())

    def arrive(self, core: str, round_: tuple[str, int], counted: bool) -> None:
        """Record an arrival at syncall round ``round_``."""
        self._logs[core].append(Arrive(round_, counted))

    def event(
        self, core: str, points: Sequence[tuple[str, int]], sets: bool, note: str | None = None
    ) -> None:
        """Record an explicit event's set (``sets``) or wait at its ordering ``points``; a set
        with a ``note`` orders none of the core's GM writes (the note says why)."""
        log = self._logs[core]
        for point in points:
            log.append(
                Arrive(point, True, gives=sets and note is None, takes=not sets, event=True, note=note)
            )

    def position(self, core: str) -> int:
        """How many events ``core`` has logged: the index its next access gets."""
        return len(self._logs[core])

    def separated(self, first: str, position: int, second: str) -> bool:
        """Whether a syncall round lies between ``first``'s event at ``position`` and ``second``'s
        next event: ``first`` arrived at it (counted) afterwards, and ``second`` has passed it."""
        later = {
            e.round for e in self._logs[first][position:] if isinstance(e, Arrive) and e.counted and e.gives
        }
        return any(isinstance(e, Arrive) and e.takes and e.round in later for e in self._logs[second])

    def _check_read_after_write(self, write: Access, after_write: list[GmEvent], read: Access) -> None:
        shared = _shared(write, read)
        if shared is None:
            return
        rounds, gap = _published_rounds(write, after_write, shared)
        gap = gap or self._invalidate_gap(write, rounds, read, shared)
        if gap is not None:
            raise RaceError(
                f"{read.core} reads {_named(read, write)}{read.local(shared)} at {at_line(read.span)} "
                f"after {write.core} wrote it at {at_line(write.span)}, but nothing orders the two: {gap}",
                read.span,
                RACE_HINT,
            )

    def _invalidate_gap(
        self, write: Access, rounds: set[tuple[str, int]], read: Access, shared: Region
    ) -> str | None:
        """What the reader misses: passing a round the writer reached after its fence, then invalidating."""
        reader_log = self._logs[read.core]
        passes = [
            i for i, e in enumerate(reader_log) if isinstance(e, Arrive) and e.takes and e.round in rounds
        ]
        if not passes:
            return f"{read.core} passed no pl.system.syncall that {write.core} reached after its fence"
        if any(isinstance(reader_log[i], Arrive) and reader_log[i].event for i in passes):  # type: ignore[union-attr]
            return None  # an event's wait: the set fired once the write had landed
        for event in reader_log[passes[0] + 1 :]:
            if isinstance(event, Invalidate) and event.covers(read.key, shared):
                return None
        return f"{read.core} did not pl.system.cacheinvalid the data after the syncall, before its read"

    def _check_write_after_write(self, first: Access, after_first: list[GmEvent], second: Access) -> None:
        shared = _shared(first, second)
        if shared is None:
            return
        rounds, gap = _published_rounds(first, after_first, shared)
        if gap is None and not any(
            isinstance(e, Arrive) and e.takes and e.round in rounds for e in self._logs[second.core]
        ):
            gap = f"{second.core} passed no pl.system.syncall that {first.core} reached after its fence"
        if gap is not None:
            wrote = "added into" if first.atomic else "wrote"
            raise RaceError(
                f"{second.core} {second.verb} {_named(second, first)}{second.local(shared)} at "
                f"{at_line(second.span)} after {first.core} {wrote} it at {at_line(first.span)}, but "
                f"nothing orders the two: {gap}",
                second.span,
                WRITE_WRITE_HINT,
            )

    def _check_write_after_read(self, read: Access, after_read: list[GmEvent], write: Access) -> None:
        shared = _shared(read, write)
        if shared is None:
            return
        rounds = {e.round for e in after_read if isinstance(e, Arrive) and e.counted and e.gives}
        if any(isinstance(e, Arrive) and e.takes and e.round in rounds for e in self._logs[write.core]):
            return
        raise RaceError(
            f"{write.core} writes {_named(write, read)}{write.local(shared)} at {at_line(write.span)} "
            f"after {read.core} read it at {at_line(read.span)}, but nothing orders the two: no "
            "pl.system.syncall that both cores passed lies between the read and the write",
            write.span,
            OVERWRITE_HINT,
        )


def _check_inside(call: Call, tensor: torch.Tensor, region: Region) -> None:
    """An OutOfBoundsError if a ``system.cacheinvalid`` region (its offsets known only at run time)
    leaves its tensor."""
    for dim, (lo, hi, size) in enumerate(zip(region.lo, region.hi, tensor.shape, strict=True)):
        if lo < 0 or hi > size or lo > hi:
            raise OutOfBoundsError(
                f"pl.system.cacheinvalid: region [{lo}:{hi}] is outside dim {dim} of size {size} "
                f"(offsets {list(region.lo)})",
                call.span,
                "keep the invalidated region inside the tensor; pl.system.cacheinvalid() with no "
                "arguments invalidates all of global memory",
            )


def gm_access(
    core: str, call: Call, args: Sequence[Any], at: int = 0, keys: KeyCache | None = None
) -> Access | None:
    """The GM box ``call`` reads or writes (starting at modeled cycle ``at``), or None for an op
    that does not touch GM. ``keys`` keeps the tensors' keys and the calls' fixed parts for a
    caller whose tensors and calls stay the same objects (a launch's arguments and kernels)."""
    fixed = _call_access(call) if keys is None else keys.call(call)
    return None if fixed is None else _box_access(core, call, args, at, keys, fixed)


def gm_accesses(
    core: str, call: Call, args: Sequence[Any], at: int = 0, keys: KeyCache | None = None
) -> tuple[Access, ...]:
    """The GM boxes ``call`` reads or writes: the one of :func:`gm_access`, or, for an indexed
    access (a gather or scatter by an index tile), one box per run of neighbouring places the
    index names (whole rows, or elements with ``coalesce="elem"``)."""
    if keys is None:
        fixed = _call_access(call)
    else:
        known = keys.calls.get(id(call))  # (keys.call, without its call: every GM access asks)
        fixed = known[1] if known is not None and known[0] is call else keys.call(call)
    if fixed is None:
        return ()
    access = fixed.access
    if access.indexed is None:
        return (_box_access(core, call, args, at, keys, fixed),)
    tensor = args[access.tensor]
    key, origin, named = _frame(tensor, keys)
    regions = _indexed_regions(call, tensor, args[access.indexed])
    if named:  # a view's places, in the frame of the tensor it views
        regions = [Region(tuple(map(add, r.lo, origin)), tuple(map(add, r.hi, origin))) for r in regions]
    label, span, write, atomic = fixed.label, call.span, access.write, access.atomic
    return tuple(Access(core, label, key, region, span, write, atomic, at, named) for region in regions)


def _box_access(
    core: str, call: Call, args: Sequence[Any], at: int, keys: KeyCache | None, fixed: _CallAccess
) -> Access:
    """The one GM box of ``call`` (an access that is not indexed)."""
    access = fixed.access
    tensor = args[access.tensor]
    key, origin, named = _frame(tensor, keys)
    assert access.offsets is not None
    offsets = args[access.offsets]
    lo = tuple(map(add, offsets, origin)) if named else tuple(offsets)
    extent = fixed.extent if fixed.extent is not None else _extent(call, args, tensor, access)
    if len(lo) != len(extent):
        raise ValueError(f"offsets {list(lo)} and extent {list(extent)} differ in rank")
    region = _NEW(Region, (lo, tuple(map(add, lo, extent))))
    return _NEW(Access, (core, fixed.label, key, region, call.span, access.write, access.atomic, at, named))


def _frame(tensor: torch.Tensor, keys: KeyCache | None) -> tuple[TensorKey, tuple[int, ...], tuple[int, ...]]:
    """``tensor``'s frame, its origin there, and the origin an Access names (``()`` at zero)."""
    if keys is None:
        key, origin = tensor_frame(tensor)
        return key, origin, origin if any(origin) else ()
    known = keys.frames.get(id(tensor))
    if known is None or known[0] is not tensor:
        known = keys.frame(tensor)
    return known[1], known[2], known[3]


class _CallAccess(NamedTuple):
    """What a call's GM accesses share: its op's GmAccess trait, the name of the tensor it names,
    and its box's extent when the call's types fix it (None: found per access)."""

    access: GmAccess
    label: str
    extent: tuple[int, ...] | None


# Each call's access, kept while its program is alive (a launch finds those of its kernels' calls
# here: a grid of tasks launches one plan many times, its loops often unrolled).
_CALLS: weakref.WeakKeyDictionary[Call, _CallAccess | None] = weakref.WeakKeyDictionary()


def _call_access(call: Call) -> _CallAccess | None:
    access = _GM_ACCESS.get(call.op)
    if access is None:
        return None
    name = call.args[access.tensor]
    label = name.name if isinstance(name, Var) else "a GM tensor"
    # (a call that may pass its valid shape at run time finds its extent per access)
    extent = _fixed_extent(call, access) if access.valid is None else None
    return _CallAccess(access, label, extent)


def _indexed_regions(call: Call, tensor: torch.Tensor, index: torch.Tensor) -> list[Region]:
    """The boxes of the places an index names in ``tensor``: runs of neighbouring rows (whole
    rows), or with ``coalesce="elem"`` runs of neighbouring elements within a row."""
    rows = call.attrs.get("coalesce", "row") == "row"
    count = tensor.shape[0] if rows else tensor.numel()
    places, inside = wrapped_positions(
        index.reshape(-1).to(torch.int64), count, call.attrs.get("gather_oob", "undefined")
    )
    unique = sorted({int(p) for p in places[inside].tolist()})
    row_length = int(tensor.shape[-1]) if tensor.dim() else 1  # an element run stays in its row
    regions: list[Region] = []
    start = previous = None
    for place in [*unique, None]:
        joins = previous is not None and place == previous + 1 and (rows or place % row_length != 0)
        if joins:
            previous = place
            continue
        if start is not None and previous is not None:
            regions.append(_run(tensor, start, previous - start + 1, rows))
        start = previous = place
    return regions


def _run(tensor: torch.Tensor, first: int, length: int, rows: bool) -> Region:
    """The box of ``length`` rows from row ``first`` (whole rows), or of ``length`` elements of
    one row from flat position ``first``."""
    shape = tuple(int(n) for n in tensor.shape)
    if rows:
        return Region.box((first, *(0 for _ in shape[1:])), (length, *shape[1:]))
    lo: list[int] = []
    rest = first
    for n in reversed(shape):
        lo.insert(0, rest % n)
        rest //= n
    return Region.box(tuple(lo), (*(1 for _ in shape[:-1]), length))


def gm_data_access(op: str) -> GmAccess | None:
    """How ``op`` reads or writes GM data (its GmAccess trait), or None if it moves none."""
    return _GM_ACCESS.get(op)


def gm_tensor(call: Call, args: Sequence[Any]) -> torch.Tensor:
    """The GM tensor of an op :func:`gm_access` records."""
    return args[_GM_ACCESS[call.op].tensor]


# The ops that read or write GM data, by their GmAccess trait (the ordering ops, which name a
# region but move no data, are recorded by the model itself). Built once: every op of every core
# asks.
_GM_ACCESS: dict[str, GmAccess] = {
    spec.name: access
    for spec in OPS.values()
    if (access := spec.trait(GmAccess)) is not None
    and not spec.has(Ordering)
    and spec.level is not Level.TENSOR
}
GM_DATA_OPS = frozenset(_GM_ACCESS)  # the ops that read or write GM data
_PLACING = frozenset(name for name in _GM_ACCESS if get_op(name).has(PlacesTile))  # the loads


def _extent(call: Call, args: Sequence[Any], tensor: torch.Tensor, access: GmAccess) -> tuple[int, ...]:
    """The extent of the GM box: the (run-time) valid shape, the (valid) shape of the tile stored
    or loaded, the ``shape`` attr (a gathered row), or one element (a scalar read)."""
    if access.valid is not None and access.valid < len(args):
        return tuple(int(n) for n in args[access.valid])
    fixed = _fixed_extent(call, access)
    return fixed if fixed is not None else (1,) * tensor.dim()


def _fixed_extent(call: Call, access: GmAccess) -> tuple[int, ...] | None:
    """The extent of the GM box as the call's types give it (see :func:`_extent`), else None (a
    scalar read: one element per dim of its tensor)."""
    tile_type = call.args[access.tile].type if access.tile is not None else None
    if tile_type is None and call.op in _PLACING:
        tile_type = call.type  # a load: the tile it fills
    if isinstance(tile_type, TileType):
        return tile_type.valid_shape or tile_type.shape
    if "shape" in call.attrs:
        return tuple(call.attrs["shape"])
    return None


def _shared(a: Access, b: Access) -> Region | None:
    return a.region.overlap(b.region) if a.key == b.key else None


def _named(access: Access, other: Access) -> str:
    """The tensor as ``access``'s kernel calls it, with the other kernel's name if it differs."""
    if access.tensor == other.tensor:
        return access.tensor
    return f"{access.tensor} ({other.tensor} on {other.core})"


def _published_rounds(
    write: Access, after_write: list[GmEvent], shared: Region
) -> tuple[set[tuple[str, int]], str | None]:
    """The syncall rounds the writer reached after publishing and fencing its write (or the events
    it set after the write), or what it missed."""
    events = [e for e in after_write if isinstance(e, Arrive) and e.event and not e.takes]
    given = {e.round for e in events if e.gives}
    rounds, gap = _synced_rounds(write, after_write, shared)
    if given:
        return given | rounds, None
    if gap is not None and events and events[0].note:
        return set(), events[0].note
    return rounds, gap


def _synced_rounds(
    write: Access, after_write: list[GmEvent], shared: Region
) -> tuple[set[tuple[str, int]], str | None]:
    """The syncall rounds the writer reached after publishing and fencing its write, or what it missed."""
    published = next(
        (i for i, e in enumerate(after_write) if isinstance(e, Invalidate) and e.covers(write.key, shared)),
        None,
    )
    if published is None:
        return set(), f"{write.core} never published its write (pl.system.cacheinvalid after it)"
    fence = next((i for i, e in enumerate(after_write) if isinstance(e, Fence) and i > published), None)
    if fence is None:
        return set(), f"{write.core} did not pl.system.fence after publishing its write"
    arrivals = [e for e in after_write[fence:] if isinstance(e, Arrive) and not e.event]
    rounds = {e.round for e in arrivals if e.counted and e.gives}
    if arrivals and not rounds:
        return set(), f"{write.core} reached pl.system.syncall only after the round had released without it"
    if not rounds:
        return set(), f"{write.core} reached no pl.system.syncall after its fence"
    return rounds, None
