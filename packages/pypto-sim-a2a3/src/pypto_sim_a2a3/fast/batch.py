"""The numbers of the later blocks of a replayed spmd task, computed for all of them at once.

A replayed block (:mod:`pypto_sim_a2a3.fast.replay`) needs its numbers and the operands of its ops:
the timing it takes from block 0. Its kernel's loops and branches take the same course in every
block (``uniform_control``, or blocks of one control trace, :mod:`pypto_sim_a2a3.fast.control`), so
the later blocks can walk the kernel together (:func:`walk_batch`): one walk per core, on a
launch of their own, in which

- a tile holds every block's elements, the blocks a leading dimension, in a memory that holds
  every block's bytes (:class:`BatchMemory`: each tile at its planned offset, as on one core);
  the tiles that cross a pipe cross it for every block at once (its rings sit in those memories);
- a scalar that differs between the blocks (``pl.get_block_idx()`` and what is computed from it,
  a scalar each reads from GM) is :class:`Lanes`, one value per block; a branch every block takes
  alike and a loop every block runs as many times (from bounds that may differ) are walked once;
- each op runs its checks per block (an error stops that block alone: its replay raises it at
  that op, as its own walk would have; a check of shapes and scalars the blocks share is made
  once) and its numbers as :data:`~pypto_sim_a2a3.engine.semantics.BATCHING` says: elementwise
  math and casts by the op's own numbers (:data:`~pypto_sim_a2a3.engine.semantics.NUMBERS`) in
  one torch call for all the blocks, ops that index a tile's own dimensions (reductions,
  reshapes, slices, broadcasts) by them block by block, and loads and stores per block's region
  (a load's regions gathered in one call, a store's in runs of blocks), moves and the matmul family
  in the batch's own way (the functions registered with ``_own``).

What the batch cannot do (another op, a tile op on a data-less token, a branch or a trip count that
differs, a block that stops while its other cores would wait for it) ends it, and the blocks walk
one by one (:class:`~pypto_sim_a2a3.fast.replay.NumbersFrame`). So that a block may walk again, or
run on the full engine, after the batch stored its results, a kernel is batched only when running a
block twice leaves the same numbers: it adds nothing into GM (no atomic store) and reads no tensor
it writes. The numbers are bit for bit the ones a block's own walk computes: an elementwise op
whose per-block tile is not a whole number of vector widths (where torch's vectorised loops round a
transcendental function differently at a tile's tail) runs per block.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import (
    Allocation,
    Call,
    For,
    Function,
    MemoryPlan,
    MemorySpace,
    PyptoError,
    Stmt,
    Target,
    TileType,
    Var,
)
from pypto.ir.launch import LaunchPlan
from pypto.ir.nodes import Assign, stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import tile
from pypto.ir.semantics import leading, load_padding, region, torch_dtype, typed, valid_of
from pypto.ir.semantics import product as block_product
from pypto.ir.walker import INDEX_OPS, KernelWalker
from pypto_sim_a2a3.checks.coherence import gm_data_access
from pypto_sim_a2a3.engine.crosscore import Popped
from pypto_sim_a2a3.engine.decode import FREE_OPS, Step, Steps
from pypto_sim_a2a3.engine.interpreter import GM_READS, GM_WRITES, skipped, steered_value
from pypto_sim_a2a3.engine.launch import INIT_OPS, PIPE_OPS, CoreRole, Launch, Placement, Site, placed_rings
from pypto_sim_a2a3.engine.scheduler import Wait
from pypto_sim_a2a3.engine.semantics import (
    ADDRESS_CHECKS,
    BATCHING,
    CHECKS,
    ELEMENT_CHECKS,
    NUMBERS,
    Batching,
)
from pypto_sim_a2a3.engine.steering import UNCOMPUTED
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.hw.memory import CoreMemory, Region, SpaceBuffers, slot_of
from pypto_sim_a2a3.hw.ring import Token

if TYPE_CHECKING:
    from pypto.ir.backend import Slice, Transfer
    from pypto_sim_a2a3.hw.cost import CostModel

BATCH_BLOCKS = 32  # blocks walked together at most (their memories are [blocks, capacity] bytes)
# A tile of a multiple of this many elements is whole vector widths for every dtype torch has.
_VECTOR_ELEMENTS = 256


class Lanes(tuple[Any, ...]):
    """A scalar that differs between the blocks of a batch: its value in each, in order. Its truth
    value is the one every block has (a branch all the blocks take alike); where they differ, the
    branch cannot be batched."""

    __slots__ = ()

    def __bool__(self) -> bool:
        truth = {bool(value) for value in self}
        if len(truth) != 1:
            raise Unbatchable("a condition differs between the blocks")
        return truth.pop()


class LanedArgs(tuple[Any, ...]):
    """The operands of an op in a batch's record when some of them differ between its blocks (a
    :class:`Lanes` among them, or in an offset tuple); the operands of the other ops are plain
    tuples, the same in every block. ``args.lane(i)`` is block ``i``'s operands."""

    def lane(self, lane: int) -> tuple[Any, ...]:
        """Block ``lane``'s operands (every block's split at once, when the first is asked: each
        block's replay asks for its own)."""
        split: list[tuple[Any, ...]] | None = self.__dict__.get("split")
        if split is None:
            lanes = len(_lanes_in(self)[0])
            split = self.__dict__["split"] = list(
                zip(*[_per_lane(value, lanes) for value in self], strict=True)
            )
        return split[lane]


def _per_lane(value: Any, lanes: int) -> Iterable[Any]:
    """``value`` in each of ``lanes`` blocks, in order (see :func:`lane_value`)."""
    kind = type(value)
    if kind is Lanes:
        return value
    if kind is tuple and _has_lanes(value):
        return list(zip(*[_per_lane(v, lanes) for v in value], strict=True))
    return itertools.repeat(value, lanes)


class Unbatchable(Exception):
    """The batch met what it cannot do for every block at once (the blocks then walk one by one)."""


def lane_value(value: Any, lane: int) -> Any:
    """Block ``lane``'s value of a scalar, an offset tuple or a value the blocks share."""
    kind = type(value)
    if kind is Lanes:
        return value[lane]
    if kind is tuple:
        return tuple(
            [v[lane] if type(v) is Lanes else lane_value(v, lane) if type(v) is tuple else v for v in value]
        )
    return value


def _lanes_in(value: Any) -> list[Lanes]:
    """The :class:`Lanes` in an op's operands (offset tuples looked into): what differs between
    the blocks."""
    kind = type(value)
    if kind is Lanes:
        return [value]
    if kind is tuple or kind is LanedArgs:
        return [lanes for v in value for lanes in _lanes_in(v)]
    return []


def _has_lanes(value: Any) -> bool:
    kind = type(value)
    if kind is Lanes:
        return True
    if kind is not tuple:
        return False
    kinds = list(map(type, value))  # (no generator for each op's operands: every op of a batch asks)
    if Lanes in kinds:
        return True
    return tuple in kinds and any(_has_lanes(v) for v in value if type(v) is tuple)


# ---------------------------------------------------------------- which kernels


_PIPE_OPS = frozenset(PIPE_OPS) | frozenset(INIT_OPS)  # pushes, pops, frees, initializations


def batchable(plan: LaunchPlan) -> bool:
    """Whether the blocks of ``plan``'s launch may walk together: every op of every core is one
    the batch runs, and a block may run twice (:func:`rerunnable`)."""
    if not rerunnable(plan):
        return False
    for seat in plan.seats:
        for stmt in walk_stmts(seat.kernel.body):
            for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                for e in walk_expr(expr):
                    if isinstance(e, Call) and not (
                        e.op in _BATCHED or e.op in INDEX_OPS or e.op in _PIPE_OPS
                    ):
                        return False
    return True


def rerunnable(plan: LaunchPlan) -> bool:
    """Whether running a block of ``plan``'s launch twice leaves the numbers once running it does:
    no kernel adds into GM, and none writes a tensor it reads (by parameter; the arguments'
    storage is compared at run time, :func:`disjoint_outputs`)."""
    for seat in plan.seats:
        stored, loaded = _gm_params(seat.kernel)
        if stored is None or loaded is None or stored & loaded:
            return False
    return True


def _gm_params(kernel: Function) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """The parameters ``kernel`` writes and reads in GM (None: an atomic add, or a GM operand that
    is no parameter): a static fact of the kernel, found once (every batch and block asks)."""
    found = _GM_PARAMS.get(kernel)
    if found is None:
        found = _GM_PARAMS[kernel] = _find_gm_params(kernel)
    return found


_GM_PARAMS: weakref.WeakKeyDictionary[Function, tuple[frozenset[str] | None, frozenset[str] | None]] = (
    weakref.WeakKeyDictionary()
)


def _find_gm_params(kernel: Function) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    params = {p.var.name for p in kernel.params}
    stored: set[str] = set()
    loaded: set[str] = set()
    for stmt in walk_stmts(kernel.body):
        for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
            for e in walk_expr(expr):
                access = gm_data_access(e.op) if isinstance(e, Call) else None
                if access is None:
                    continue
                assert isinstance(e, Call)
                tensor = e.args[access.tensor]
                if access.atomic or not isinstance(tensor, Var) or tensor.name not in params:
                    return None, None
                (stored if access.write else loaded).add(tensor.name)
    return frozenset(stored), frozenset(loaded)


def disjoint_outputs(plan: LaunchPlan, placements: Sequence[Placement]) -> bool:
    """No tensor argument a kernel stores into shares storage with one it loads from."""
    for placement in placements:
        stored, loaded = _gm_params(placement.kernel)
        assert stored is not None and loaded is not None
        names = [p.var.name for p in placement.kernel.params]
        values = dict(zip(names, placement.args, strict=True))
        outputs = {values[n].untyped_storage().data_ptr() for n in stored}
        if any(values[n].untyped_storage().data_ptr() in outputs for n in loaded):
            return False
    return True


# ---------------------------------------------------------------- no time


class NoPipes:
    """What a walk for numbers alone has for the pipes of its cores: no time, nothing to wait for."""

    def run(self, cost: Any, call: Any, issue: int, *args: Any, **kwargs: Any) -> tuple[int, int]:
        return issue, issue

    def last_read(self, regions: Any) -> tuple[int, str]:
        return 0, ""

    def drained(self, pipes: Any = None) -> int:
        return 0

    def gm_written(self, tensor: Any) -> int:
        return 0

    def copied(self, source: Any, dest: Any) -> None:
        return None


class NoRecorder:
    """What a walk for numbers alone tells of its rings and transfers: nothing (the replay does)."""

    def record(self, piece: Slice) -> None:
        return None

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int, int], None]:
        return lambda delta, cycle: None

    def transfer(self, transfer: Transfer) -> None:
        return None


NO_PIPES = NoPipes()


# ---------------------------------------------------------------- memory


# The bytes of the batch memories, kept for the next batch (zeroed once, when first made), per
# core of the launch and space, as large as the largest batch so far needed (a batch takes its
# leading rows and columns): a batch's walk ends before the next one begins, and the walk writes
# each tile before it reads it, so what an earlier batch left is never read. Per thread: two
# simulations in two threads of a process never share them.
_KEPT = threading.local()


def _spare() -> dict[tuple[int, MemorySpace], torch.Tensor]:
    kept: dict[tuple[int, MemorySpace], torch.Tensor] | None = getattr(_KEPT, "memories", None)
    if kept is None:
        kept = _KEPT.memories = {}
    return kept


# The tiles' views of those bytes, kept with them (per core and space, by offset, dtype, shape,
# blocks and bytes per block): a later batch on the same bytes takes the same views.
_Views = dict[tuple[Any, ...], torch.Tensor]
_KEPT_VIEWS = 4096  # views kept per core and space at most


def _spare_views() -> dict[tuple[int, MemorySpace], _Views]:
    kept: dict[tuple[int, MemorySpace], _Views] | None = getattr(_KEPT, "views", None)
    if kept is None:
        kept = _KEPT.views = {}
    return kept


class _SpareBuffers(SpaceBuffers):
    def __init__(
        self,
        capacities: Mapping[MemorySpace, int],
        storages: dict[int, tuple[MemorySpace, int]],
        lanes: tuple[int, ...],
        core: int,
    ):
        super().__init__(capacities, storages, lanes)
        self.core = core

    def make(self, space: MemorySpace) -> torch.Tensor:
        (blocks,), size = self.lanes, self.capacities[space]
        spare = _spare()
        found = spare.get((self.core, space))
        if found is None or found.shape[0] < blocks or found.shape[1] < size:
            rows = max(blocks, found.shape[0] if found is not None else 0)
            columns = max(size, found.shape[1] if found is not None else 0)
            found = spare[(self.core, space)] = torch.zeros((rows, columns), dtype=torch.uint8)
            _spare_views()[(self.core, space)] = {}  # (the views of the bytes let go)
        return found[:blocks, :size]

    def views(self, space: MemorySpace) -> _Views:
        """The views kept of ``space``'s bytes (made first, if not yet)."""
        self[space]  # (its bytes, made now if not yet)
        views = _spare_views().setdefault((self.core, space), {})
        if len(views) > _KEPT_VIEWS:  # (a run of many kernels and batch sizes)
            views.clear()
        return views


class BatchMemory(CoreMemory):
    """The on-chip memory of one core in each block of a batch: per space ``[blocks, capacity]``
    bytes; a tile is the same bytes of every block's row, ``[blocks, *shape]``."""

    def __init__(
        self, target: Target, spaces: Sequence[MemorySpace], blocks: int, kernel: Function, core: int
    ):
        super().__init__(target, spaces, (blocks,))
        self.blocks = blocks
        # Each block's bytes up to the kernel's planned peak, not the whole capacity: a view past
        # it cannot be made (the batch then ends), so no bytes are left out.
        capacities = self.buffers.capacities
        plan = kernel.attrs.get("memory_plan")
        if isinstance(plan, MemoryPlan):
            capacities = {s: min(n, plan.peak.get(s, n)) for s, n in capacities.items()}
        self.buffers: _SpareBuffers = _SpareBuffers(capacities, self._storages, (blocks,), core)
        # The regions whose bytes are the same in every block (a tile loaded from where no block's
        # offsets differ, or moved from such a tile): a matmul may multiply by one block's. Of those,
        # the ones written in block 0's row alone (the other rows are filled when an op reads them:
        # :meth:`whole`): a weight loaded and moved on for a matmul is copied once, not per block.
        self.alike: set[tuple[MemorySpace, int, int]] = set()
        self.in_first: set[tuple[MemorySpace, int, int]] = set()
        # Tiles converted to another dtype (a matmul's operands to fp32), by region, dtype and shape:
        # a left operand shared by the matmuls of several columns is converted once.
        self.converted: dict[tuple[Any, ...], torch.Tensor] = {}
        self._sizes: dict[int, int] = {}  # each tile type's bytes, by id

    def region(self, tensor: torch.Tensor) -> tuple[MemorySpace, int, int] | None:
        known = self._regions.get(id(tensor))
        return known[1] if known is not None and known[0] is tensor else None

    def view(self, allocation: Allocation, tile: TileType, slot_value: int = 0) -> torch.Tensor:
        # A tile's place, to be written whole in every block's row (a binding, an op's result
        # written in place): what the blocks shared there they may no longer.
        offset = allocation.slot_offset(slot_value)
        if self.alike or self.converted:
            self.written((allocation.space, offset, offset + self._nbytes(tile)), whole=True)
        return self._kept_view(allocation.space, offset, tile)  # (not view_at: done here)

    def view_at(self, space: MemorySpace, offset: int, tile: TileType) -> torch.Tensor:
        # Any other view (a ring slot's, which a push writes in part and a pop reads) as well.
        if self.alike or self.converted:
            self.written((space, offset, offset + self._nbytes(tile)))
        return self._kept_view(space, offset, tile)

    def _kept_view(self, space: MemorySpace, offset: int, tile: TileType) -> torch.Tensor:
        """:meth:`CoreMemory.view_at`, the view made by an earlier batch on the same bytes if any."""
        top = offset + self._nbytes(tile)
        if top > self.high_water.get(space, 0):
            self.high_water[space] = top
        views = self.buffers.views(space)
        key = (offset, tile.dtype, tile.shape, self.blocks, self.buffers.capacities[space])
        view = views.get(key)
        if view is None:
            raw = self.buffers[space][..., offset:top]
            view = views[key] = raw.view(torch_dtype(tile.dtype)).view(self.blocks, *tile.shape)
        if id(view) not in self._regions:
            self._regions[id(view)] = (view, Region(space, offset, top))
        return view

    def _nbytes(self, tile: TileType) -> int:
        found = self._sizes.get(id(tile))  # (the kernel's tile types live as long as the batch)
        if found is None:
            found = self._sizes[id(tile)] = tile.nbytes
        return found

    def written(self, where: tuple[MemorySpace, int, int] | None, whole: bool = False) -> None:
        """The bytes ``where`` (None: unknown ones) are about to be written (``whole``: all of them,
        in every block's row): what :attr:`alike` and :attr:`converted` knew of the bytes they
        overlap is forgotten, and a region only block 0's row holds is first filled in every row
        (``whole``: where it outlives the write)."""
        if where is None:
            for region in self.in_first:
                self._fill(region)
            self.in_first.clear()
            self.alike.clear()
            self.converted.clear()
            return
        space, lo, hi = where
        if self.alike:
            for region in [r for r in self.alike if r[1] < hi and lo < r[2] and r[0] is space]:
                self.alike.discard(region)
                if region in self.in_first:
                    self.in_first.discard(region)
                    if not whole:
                        self._fill(region)
                        continue
                    if region[1] < lo:
                        self._fill((space, region[1], lo))
                    if hi < region[2]:
                        self._fill((space, hi, region[2]))
        if self.converted:
            for key in [k for k in self.converted if k[1] < hi and lo < k[2] and k[0] is space]:
                del self.converted[key]

    def as_dtype(self, tile: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """``tile.to(dtype)``, made once while the tile's bytes stay as they are (see :meth:`written`)."""
        if tile.dtype == dtype:
            return tile
        region = self.region(tile)
        if region is None:
            return tile.to(dtype)
        key = (*region, tile.dtype, dtype, tile.shape)
        found = self.converted.get(key)
        if found is None:
            found = self.converted[key] = tile.to(dtype)
        return found

    def whole(self, tile: torch.Tensor) -> torch.Tensor:
        """``tile`` with every block's row filled (see :attr:`in_first`), before an op reads it."""
        if self.in_first:
            region = self.region(tile)
            if region in self.in_first:
                self.in_first.discard(region)  # (it stays alike)
                self._fill(region)
        return tile

    def _fill(self, region: tuple[MemorySpace, int, int]) -> None:
        space, lo, hi = region
        rows = self.buffers[space]
        rows[1:, lo:hi] = rows[:1, lo:hi]

    def same_in_every_block(self, tile: torch.Tensor) -> bool:
        """Whether ``tile`` (``[blocks, ...]``) holds the same elements in every block: a view of
        what every block reads alike (stride 0 across them), or a tile on a region of :attr:`alike`."""
        if tile.dim() == 0 or tile.shape[0] != self.blocks:
            return False
        return tile.stride(0) == 0 or self.region(tile) in self.alike


# ---------------------------------------------------------------- the walk


class BatchFrame(KernelWalker):
    """One core's kernel walked for the blocks ``blocks`` at once (see the module's docstring), as
    ``role`` of a launch whose cores hold the blocks' memories (:func:`walk_batch` makes it), on
    ``args`` (default: the placement's).

    ``ops`` are the ops it ran with their operands (tiles ``[blocks, ...]``, scalars maybe
    :class:`Lanes`); ``errors[i]`` is what stopped block ``i`` (in op ``ends[i] - 1``), if any."""

    def __init__(
        self,
        placement: Placement,
        role: CoreRole,
        blocks: Sequence[int],
        block_num: int,
        steps: Steps,
        cost: CostModel,
        args: Sequence[Any] | None = None,
    ):
        walked = placement.args if args is None else args  # (the blocks' arguments, maybe Lanes)
        super().__init__(placement.seat, walked, Lanes(blocks), block_num)  # type: ignore[arg-type]
        assert isinstance(role.core.memory, BatchMemory)
        self.role = role
        self.mirror = role.mirror
        self.core = placement.role.core.name
        self.memory = role.core.memory
        self.steps = steps
        self.cost = cost
        self.lanes = len(blocks)
        self.ops: list[tuple[Call, tuple[Any, ...]]] = []
        self.errors: list[Exception | None] = [None] * self.lanes
        self.ends: list[int | None] = [None] * self.lanes
        self.alive = list(range(self.lanes))
        self._assigning: Assign | None = None  # the statement running now, if an assignment
        self._into: torch.Tensor | None = None  # its target's tile, placed by the op that wrote it
        self._tiles: dict[int, tuple[bool, ...]] = {}  # per call met (by id), which operands are tiles
        # Per tile variable of one slot placed so far (by id), its view and region.
        self._placed: dict[int, tuple[torch.Tensor, tuple[MemorySpace, int, int]]] = {}
        # A timing-only run: the ops computed (its steering slice, by id), the names whose tiles
        # hold numbers, its GM without numbers (None: every op computes).
        self.timing_only = role.launch.site.timing_only
        steering = None if self.timing_only is None else self.timing_only.steering.get(self.fn.name)
        self.computes = None if steering is None else steering.calls
        self.keeps = None if steering is None else steering.names

    def exec_stmt(self, stmt: Stmt) -> Generator[Any, None, Any]:
        self._assigning = stmt if type(stmt) is Assign else None
        return (yield from super().exec_stmt(stmt))

    def loop_range(self, loop: For) -> Generator[Any, None, Any]:
        """The loop's iterations; with bounds that differ between the blocks (a loop starting at
        the block index), each iteration's variable as :class:`Lanes`, when every block runs the
        loop as many times (else :class:`Unbatchable`)."""
        bounds = yield from self.eval_all((loop.start, loop.stop, loop.step))
        if not any(type(b) is Lanes for b in bounds):
            start, stop, step = bounds
            if step == 0:
                raise self._zero_step(loop)
            return range(int(start), int(stop), int(step))
        alive, ranges = self.alive, {}
        for lane in alive:
            start, stop, step = (int(lane_value(b, lane)) for b in bounds)
            if step == 0:
                raise Unbatchable("a loop's step is 0 in a block")  # (its own walk reports it)
            ranges[lane] = range(start, stop, step)
        if len({len(r) for r in ranges.values()}) != 1:
            raise Unbatchable("a loop runs a different number of times in the blocks")
        first = ranges[alive[0]]
        lanes = [ranges.get(lane, first) for lane in range(self.lanes)]
        return [Lanes(r[i] for r in lanes) for i in range(len(first))]

    def into(self, call: Call, *operands: torch.Tensor, over: bool = True) -> torch.Tensor | None:
        """The tile the statement running ``call`` binds its value to, placed now so that the op
        may write its result there itself, if it shares no byte with ``operands`` or (``over``: an
        elementwise op may write over its operand) is exactly one of them; else None."""
        stmt = self._assigning
        if stmt is None or stmt.value is not call or not isinstance(stmt.target.type, TileType):
            return None
        try:
            dest = self._place(stmt.target, stmt)
        except (PyptoError, Unbatchable):
            return None  # the binding meets it again, in its place
        mine = self.memory.region(dest)
        for operand in operands:
            theirs = self.memory.region(operand)
            if theirs is None or mine is None:
                return None
            if over and theirs == mine and operand.shape == dest.shape and operand.stride() == dest.stride():
                continue
            if theirs[0] is mine[0] and theirs[1] < mine[2] and mine[1] < theirs[2]:
                return None
        self._into = dest
        return dest

    def eval_call(self, call: Call) -> Any:
        freed = self.role.freed
        if (
            freed
            and call.op not in FREE_OPS
            and any(isinstance(a, Var) and a.name in freed for a in call.args)
        ):
            raise Unbatchable("a tile read after its tfree")  # the blocks' own walks tell it
        return (yield from super().eval_call(call))

    def apply(self, call: Call, args: tuple[Any, ...]) -> Any:
        step = self.steps.step(call)
        laned = _has_lanes(args)
        self.ops.append((call, LanedArgs(args) if laned else args))
        if step.work and self.mirror:
            return skipped(call, args)
        if call.op in INDEX_OPS:
            return self.index(call)
        if step.launch is None and any(isinstance(a, Token) for a in args):
            raise Unbatchable("a data-less token")  # (a pipe op passes one on, as on one core)
        skip = self.computes is not None and step.launch is None and id(call) not in self.computes
        if self.memory.in_first and not skip:
            self._whole(call, args, laned)
        if step.launch is not None:
            if call.op not in _PIPE_OPS or laned:
                raise Unbatchable(call.op)
            return (yield from step.launch(self.role, call, args, self.cost))
        if skip:
            return self._skip(step, args, laned)
        batched = _BATCHED.get(call.op)
        if batched is None or step.semantics is None:
            raise Unbatchable(call.op)
        check = CHECKS.get(call.op)
        if check is not None:
            self._check(check, call, args, laned)
        if self.timing_only is not None and call.op in GM_READS:  # a steering value's GM
            unreal, value = self.timing_only.unreal, steered_value(call)
            self._check(lambda c, a: unreal.check_read(c, a, value), call, args, laned)
        return batched(self, call, args)
        yield  # a generator that never waits

    def _skip(self, step: Step, args: tuple[Any, ...], laned: bool) -> Any:
        """A timing-only run's op that steers nothing: each block's address checks, and what it
        writes in GM known to hold no numbers (see CoreNumbers._skip)."""
        call = step.call
        check = ADDRESS_CHECKS.get(call.op)
        if check is not None:
            self._check(check, call, args, laned)
        if call.op in GM_WRITES:
            for lane in self.alive:
                self.timing_only.unreal.written(call, self.lane_args(call, args, lane))
        return args[step.writes[0]] if step.writes else UNCOMPUTED

    def _whole(self, call: Call, args: tuple[Any, ...], laned: bool) -> None:
        """Fill every block's row of the tiles ``call`` reads, but for the ones it reads in block
        0's row alone: a move's source (what it moves stays in block 0's row) and the right operand
        every block shares of a matmul (:func:`_one_right`; its checks read block 0's alone)."""
        first = None if laned else _IN_FIRST.get(call.op)
        for index, arg in enumerate(args):
            if index != first and isinstance(arg, torch.Tensor):
                self.memory.whole(arg)

    def _check(
        self, check: Callable[[Call, Sequence[Any]], None], call: Call, args: tuple[Any, ...], laned: bool
    ) -> None:
        """The op's checks for each block still running (``laned``: its operands differ between
        them); a block whose check fails stops here."""
        uniform = not laned and call.op not in ELEMENT_CHECKS  # checked once, for all
        # A check of shapes and scalars alone passes in every block whose scalars are those of a
        # block it passed in (the blocks share their tensors): made once per set of scalars.
        scalars = _lanes_in(args) if laned and call.op not in ELEMENT_CHECKS else None
        passed: set[tuple[Any, ...]] = set()
        for lane in self.alive[:1] if uniform else list(self.alive):
            key = None if scalars is None else tuple([values[lane] for values in scalars])
            if key in passed:
                continue
            try:
                check(call, self.lane_args(call, args, lane))
            except PyptoError as error:
                for stopped in list(self.alive) if uniform else [lane]:
                    self._stop(stopped, error)
            else:
                if key is not None:
                    passed.add(key)
        if not self.alive:
            raise _AllStopped

    def _stop(self, lane: int, error: Exception) -> None:
        if self.role.launch.piped:
            raise Unbatchable("a block stopped: its other cores would wait for it")
        if self.errors[lane] is None:
            self.errors[lane], self.ends[lane] = error, len(self.ops)
        self.alive = [i for i in self.alive if i != lane]

    def lane_args(self, call: Call, args: tuple[Any, ...], lane: int) -> tuple[Any, ...]:
        """The operands of ``call`` in block ``lane``: its tiles and scalars."""
        tiles = self._tiles.get(id(call))
        if tiles is None:
            tiles = self._tiles[id(call)] = tuple(isinstance(expr.type, TileType) for expr in call.args)
        return tuple(
            [
                value[lane] if tile else lane_value(value, lane)
                for tile, value in zip(tiles, args, strict=True)
            ]
        )

    def scalars(self, call: Call, args: tuple[Any, ...]) -> Any:
        """A scalar op's value in each block (0 in a block stopped before it); one int if every
        block has the same (a row index every block of a batch reads alike)."""
        semantics = NUMBERS[call.op]
        alive = set(self.alive)
        values = Lanes(
            semantics(call, [lane_value(a, lane) for a in args]) if lane in alive else 0
            for lane in range(self.lanes)
        )
        first = values[0]
        if (
            len(alive) == self.lanes
            and type(first) is int
            and all(type(v) is int and v == first for v in values)
        ):
            return first
        return values

    def bind(self, stmt: Assign, value: Any) -> None:
        var = stmt.target
        self.role.freed.pop(var.name, None)
        into, self._into = self._into, None
        if into is not None and value is into:  # the op wrote its result in the tile's bytes
            self.env[var.name] = value
            return
        if isinstance(value, Popped):  # a view of its ring slot: it has no allocation of its own
            self.role.popped[var.name] = value.slot
            self.env[var.name] = value.value
            return
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            self.env[var.name] = value
            return
        if value is UNCOMPUTED:  # a timing-only run's tile that steers nothing: its place alone
            self.env[var.name] = self._place(var, stmt)
            return
        alike = isinstance(value, torch.Tensor) and self.memory.same_in_every_block(value)
        dest = self._place(var, stmt)
        if alike and dest.dim() and value is not dest:
            # The same elements in every block: copied into block 0's row alone, the other rows
            # filled if an op reads them (BatchMemory.whole).
            first = value[0].clone() if self._may_overlap(value, dest) else value[0]
            dest[0].copy_(first)
            region = self.memory.region(dest)
            assert region is not None  # (a view the memory made)
            self.memory.alike.add(region)
            self.memory.in_first.add(region)
        elif value is not dest:
            if isinstance(value, torch.Tensor) and self._may_overlap(value, dest):
                value = value.clone()
            dest.copy_(value)
        self.env[var.name] = dest

    def _may_overlap(self, value: torch.Tensor, dest: torch.Tensor) -> bool:
        """Whether ``value`` may share bytes with the tile ``dest`` (then it is copied first). An op's
        value is a fresh tensor, a view of GM, or an operand it passes on (a move's source tile)."""
        if not self.memory.shares_storage(value):
            return False
        mine, theirs = self.memory.region(value), self.memory.region(dest)
        if mine is None or theirs is None:
            return True
        return mine[0] is theirs[0] and mine[1] < theirs[2] and theirs[1] < mine[2]

    def set_carried(self, var: Var, value: Any) -> None:
        if not isinstance(var.type, TileType) or isinstance(value, Token):  # (a lane's data-less token)
            self.env[var.name] = value
            return
        if self._in_own_slot(var, value):
            self.env[var.name] = value
            return
        dest = self.env.get(var.name)
        if dest is None:
            dest = self._place(var, var)
        if dest.data_ptr() != value.data_ptr() or dest.shape != value.shape:
            value = self.memory.whole(value)
            self.memory.written(self.memory.region(dest))
            if self.keeps is None or var.name in self.keeps:
                dest.copy_(value.clone() if self.memory.shares_storage(value) else value)
        self.env[var.name] = dest

    def _place(self, var: Var, node: Stmt | Var) -> torch.Tensor:
        placed = self._placed.get(id(var))
        if placed is not None:  # a tile of one slot: the same place each time
            view, where = placed
            if self.memory.alike or self.memory.converted:
                self.memory.written(where, whole=True)  # (as BatchMemory.view does)
            return view
        allocation = self.memory.allocation(self.fn, var, self.core, node.span)
        assert isinstance(var.type, TileType)
        view = self.memory.view(allocation, var.type, slot_of(self.fn, var, allocation, node.span, self.env))
        region = self.memory.region(view)
        if allocation.slots <= 1 and region is not None:
            self._placed[id(var)] = (view, region)
        return view

    def _in_own_slot(self, var: Var, value: torch.Tensor) -> bool:
        allocation = self.memory.allocation(self.fn, var, self.core, var.span)
        found = self.memory.region(value)
        if allocation.slots < 2 or found is None:
            return False
        space, lo, hi = found
        return (
            space is allocation.space
            and allocation.offset <= lo
            and hi <= allocation.end
            and (lo - allocation.offset) % allocation.size == 0
        )


class _AllStopped(Exception):
    """Every block of the batch stopped at an error: the walk ends."""


def in_turn(walks: Sequence[Generator[Any, None, Any]], stopped: Callable[[int, Exception], None]) -> bool:
    """Step ``walks`` (the cores of a launch walked for their numbers) in turn, each until it waits
    for a ring another one fills or empties, until every one has returned or stopped: an exception
    of walk ``i`` goes to ``stopped(i, error)``, which ends that walk (or raises). False if the
    walks left wait for each other."""
    waiting: list[Wait | None] = [None] * len(walks)
    running = set(range(len(walks)))
    while running:
        moved = False
        for index in sorted(running):
            wait = waiting[index]
            if wait is not None and not wait.ready():
                continue
            moved, waiting[index] = True, None
            try:
                while True:
                    event = next(walks[index])
                    if isinstance(event, Wait) and not event.ready():
                        waiting[index] = event
                        break
            except StopIteration:
                running.discard(index)
            except Exception as error:
                stopped(index, error)
                running.discard(index)
        if not moved:
            return False
    return True


def walk_batch(
    plan: LaunchPlan,
    placements: Sequence[Placement],
    blocks: Sequence[int],
    block_num: int,
    target: Target,
    steps: Steps,
    cost: CostModel,
    args: Sequence[Sequence[Any]] | None = None,
) -> list[BatchFrame]:
    """Walk ``blocks`` of ``plan``'s launch together, its cores in turn (each until it waits for a
    ring another one fills or empties), on a launch of its own whose cores hold the blocks'
    memories and whose pipes carry their tiles; ``placements`` are the first block's. The blocks
    may be of several tasks: ``args`` are then each core's arguments, a scalar that differs
    between the tasks as :class:`Lanes` (default: each placement's, the same in every block).
    Raises :class:`Unbatchable` (or what the walk met) if the batch cannot do it."""
    first = placements[0].role.launch
    seats = []
    for index, placement in enumerate(placements):
        role = placement.role
        spaces = role.core.memory.spaces if role.core.memory is not None else ()
        memory = BatchMemory(target, spaces, len(blocks), placement.kernel, index)
        seats.append((Core(role.core.name, memory), role.kind, role.lane, role.mirror, False))
    site = Site(first.group, blocks[0], block_num, timing_only=first.site.timing_only)
    launch = Launch(first.name, site, target, seats, NoRecorder(), plan.piped, first.pipe_name, lead=1)  # type: ignore[arg-type]
    frames = []
    for index, (role, placement) in enumerate(zip(launch.roles, placements, strict=True)):
        launch.reservations[role.name] = placed_rings(placement.kernel)
        role.pipes = NO_PIPES  # type: ignore[assignment]
        core_args = placement.args if args is None else args[index]
        frames.append(BatchFrame(placement, role, blocks, block_num, steps, cost, core_args))

    def stopped(index: int, error: Exception) -> None:
        if not isinstance(error, _AllStopped):
            raise error

    if not in_turn([frame.run() for frame in frames], stopped):
        raise Unbatchable("the cores wait for each other")
    if any(pipe.undrained(launch.name) is not None for pipe in launch.pipes.values()):
        raise Unbatchable("a ring is not drained")
    return frames


# ---------------------------------------------------------------- the ops, batched

# How the batch computes an op (see engine.semantics.BATCHING): by the op's own numbers, or (the
# ops whose batching is the batch's own, Batching.OWN) by a function registered with @_own.
Batched = Callable[[BatchFrame, Call, tuple[Any, ...]], Any]
_OWN: dict[str, Batched] = {}


def _own(*names: str) -> Callable[[Batched], Batched]:
    def register(fn: Batched) -> Batched:
        for name in names:
            _OWN[name] = fn
        return fn

    return register


def _empty(frame: BatchFrame, call: Call, fill: bool) -> torch.Tensor:
    """The blocks' results of ``call``: filled (with a load's padding, else zeros) or not."""
    assert isinstance(call.type, TileType)
    shape = (frame.lanes, *call.type.shape)
    dtype = torch_dtype(call.type.dtype)
    return (
        torch.full(shape, load_padding(call, dtype), dtype=dtype) if fill else torch.empty(shape, dtype=dtype)
    )


def _lane_regions(
    frame: BatchFrame, tensor: torch.Tensor, offsets: tuple[Any, ...], extent: tuple[int, ...], disjoint: bool
) -> torch.Tensor | None:
    """Every block's ``region(tensor, its offsets, extent)`` as one ``[blocks, *extent]`` view, when
    the offsets step by the same amount from block to block (``disjoint``: along one dimension, by at
    least the extent, so that no two blocks' regions share an element); else None."""
    lanes = frame.lanes
    if len(frame.alive) != lanes or lanes < 2 or 0 in extent:
        return None
    step = []
    for offset in offsets:
        if type(offset) is int:
            step.append(0)
            continue
        if type(offset) is not Lanes or not _progression(offset):
            return None
        step.append(offset[1] - offset[0])
    first = lane_value(offsets, 0)
    if disjoint:
        moving = [dim for dim, size in enumerate(step) if size]
        if len(moving) != 1 or step[moving[0]] < extent[moving[0]]:
            return None
    lane_stride = sum(size * stride for size, stride in zip(step, tensor.stride(), strict=True))
    if lane_stride < 0:
        return None
    base = region(tensor, first, extent)
    return base.as_strided((lanes, *base.shape), (lane_stride, *base.stride()), base.storage_offset())


def _progression(values: Lanes) -> bool:
    """Whether the blocks' values step by one amount from block to block."""
    start, step = values[0], values[1] - values[0]
    try:
        if step == 0:
            return values.count(start) == len(values)
        return tuple(range(start, start + step * len(values), step)) == values
    except TypeError:  # not integers
        return False


def _gather(
    frame: BatchFrame,
    tensor: torch.Tensor,
    offsets: tuple[Any, ...],
    extent: tuple[int, ...],
    out: torch.Tensor,
) -> bool:
    """Copy every running block's ``region(tensor, its offsets, extent)`` into its row of ``out``
    (``[blocks, *extent]``) in one torch call, whatever the offsets (each block's region checked
    in bounds already); False (nothing copied) where it cannot."""
    if 0 in extent or out.dtype != tensor.dtype or tuple(out.shape) != (frame.lanes, *extent):
        return False
    strides = tensor.stride()
    if len(offsets) != len(strides):
        return False
    fixed, moving = 0, []
    for offset, stride in zip(offsets, strides, strict=True):
        if type(offset) is Lanes:
            moving.append((offset, stride))
        elif type(offset) is int:
            fixed += offset * stride
        else:
            return False
    alive = frame.alive
    starts = [fixed + sum(offset[lane] * stride for offset, stride in moving) for lane in range(frame.lanes)]
    if len(alive) != frame.lanes:  # a stopped block's region may lie outside: it reads a running one's
        for lane in set(range(frame.lanes)).difference(alive):
            starts[lane] = starts[alive[0]]
    index = torch.tensor(starts)
    if index.dtype != torch.int64 or min(starts) < 0:
        return False  # (offsets that are no integers: the blocks' own walks tell)
    # Every region of the tensor as one view, one per element it may start at: the blocks' picked.
    windows = tensor.as_strided((max(starts) + 1, *extent), (1, *strides), tensor.storage_offset())
    torch.index_select(windows, 0, index, out=out)
    return True


@_own(tile.load, tile.load_partial)
def _load(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    tensor, offsets = args[0], args[1]
    assert isinstance(call.type, TileType)
    shape = tuple(call.type.shape)
    valid = args[2] if call.op == tile.load_partial else valid_of(call.type)
    if _has_lanes(valid):
        out = _empty(frame, call, True)
        for lane in frame.alive:
            extent = lane_value(valid, lane)
            out[lane][leading(extent)] = region(tensor, lane_value(offsets, lane), extent)
        return out
    valid = tuple(valid)
    whole = valid == shape
    if not _has_lanes(offsets):
        regions: torch.Tensor | None = region(tensor, offsets, valid).unsqueeze(0).expand(frame.lanes, *valid)
    else:
        regions = _lane_regions(frame, tensor, offsets, valid, disjoint=False)
    if whole and regions is not None:
        return regions  # a view of GM: the tile's binding copies it into the tile's bytes
    if whole and regions is None:
        dest = frame.into(call)  # gathered straight into the tile's bytes
        if dest is not None and _gather(frame, tensor, offsets, valid, dest):
            return dest
    out = _empty(frame, call, not whole)
    target = out if whole else out[(slice(None), *leading(valid))]
    if regions is not None:
        target.copy_(regions)
        return out
    if _gather(frame, tensor, offsets, valid, target):
        return out
    for lane in frame.alive:
        target[lane].copy_(region(tensor, lane_value(offsets, lane), valid))
    return out


@_own(tile.store, tile.store_partial)
def _store(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    value, offsets, tensor = args[0], args[1], args[2]
    valid = args[3] if call.op == tile.store_partial else valid_of(call.args[0].type)
    regions = (
        None if _has_lanes(valid) else _lane_regions(frame, tensor, offsets, tuple(valid), disjoint=True)
    )
    if regions is not None:
        regions.copy_(value[(slice(None), *leading(valid))])
    elif not _has_lanes(valid) and 0 not in valid:
        _store_runs(frame, value, offsets, tensor, tuple(valid))
    else:
        for lane in frame.alive:
            extent = lane_value(valid, lane)
            region(tensor, lane_value(offsets, lane), extent).copy_(value[lane][leading(extent)])
    result: torch.Tensor = tensor
    return result


def _store_runs(
    frame: BatchFrame,
    value: torch.Tensor,
    offsets: tuple[Any, ...],
    tensor: torch.Tensor,
    extent: tuple[int, ...],
) -> None:
    """Store each running block's ``value`` rows at its offsets, the blocks in order, a run of
    consecutive blocks whose regions step along one dimension by at least the extent (no two
    sharing an element) in one copy: a grid's row of tiles at once."""
    alive = frame.alive
    starts = [lane_value(offsets, lane) for lane in alive]
    rows = value[(slice(None), *leading(extent))]
    first = 0
    while first < len(alive):
        last = first  # the run: alive[first..last]
        step = (
            [b - a for a, b in zip(starts[first], starts[last + 1], strict=True)]
            if last + 1 < len(alive)
            else []
        )
        moving = [dim for dim, size in enumerate(step) if size]
        if len(moving) == 1 and step[moving[0]] >= extent[moving[0]]:
            while (
                last + 1 < len(alive)
                and alive[last + 1] == alive[last] + 1
                and all(b - a == d for a, b, d in zip(starts[last], starts[last + 1], step, strict=True))
            ):
                last += 1
        base = region(tensor, starts[first], extent)
        lane_stride = sum(size * stride for size, stride in zip(step, tensor.stride(), strict=False))
        if last == first or lane_stride <= 0:
            for lane in range(first, last + 1):
                region(tensor, starts[lane], extent).copy_(rows[alive[lane]])
        else:
            shape, strides = (last - first + 1, *base.shape), (lane_stride, *base.stride())
            base.as_strided(shape, strides, base.storage_offset()).copy_(rows[alive[first] : alive[last] + 1])
        first = last + 1


@_own(tile.move)
def _move(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    result: torch.Tensor = args[0]  # the source tile: its binding copies it (first aside if they overlap)
    return result


def _accumulation(a: torch.Tensor) -> torch.dtype:
    """The cube's accumulation dtype for operands like ``a``."""
    return torch.float32 if a.is_floating_point() else torch.int32


def _product(frame: BatchFrame, call: Call, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if frame.lanes > 1 and a.dim() == b.dim() == 3 and frame.memory.same_in_every_block(b):
        product = _one_right(frame, call, a, b)
        if product is not None:
            return product
    left, right = _converted(frame, call, a, frame.memory.whole(b))
    return left @ right


# The operand an op may read in block 0's row alone (BatchFrame._whole): a move's source, a
# matmul's right operand (one product, _one_right, when every block shares it).
_IN_FIRST = {tile.move: 0, tile.matmul: 1, tile.matmul_acc: 2, tile.matmul_bias: 1}

# Per layout of a matmul's operands, whether one product of every block's rows with the right
# operand they share equals each block's own product bit for bit (see _one_right).
_ONE_RIGHT: dict[tuple[Any, ...], bool] = {}


def _converted(
    frame: BatchFrame, call: Call, a: torch.Tensor, b: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A matmul's operands as multiplied, in the accumulation dtype (an untransposed tile's
    conversion kept while its bytes stay: :meth:`BatchMemory.as_dtype`)."""
    acc = _accumulation(a)
    a = a.transpose(-1, -2).to(acc) if call.attrs.get("a_trans") else frame.memory.as_dtype(a, acc)
    b = b.transpose(-1, -2).to(acc) if call.attrs.get("b_trans") else frame.memory.as_dtype(b, acc)
    return a, b


def _one_right(frame: BatchFrame, call: Call, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor | None:
    """``a @ b`` of every block as one product of all the blocks' rows of ``a`` with block 0's
    ``b``, when ``b`` is the same in every block (a weight that no block's offsets move): one matmul
    instead of a batch of them, and ``b`` converted once. A matmul's rounding depends on the shapes
    and layouts the library is handed (and its threads), so the first product of each layout is
    compared with each block's own (the shared semantics); where they differ, None (the batched
    product is used)."""
    left, right = _converted(frame, call, a, b[0])
    blocks, rows, depth = left.shape
    product = (left.reshape(blocks * rows, depth) @ right).view(blocks, rows, -1)
    key: tuple[Any, ...] = (call.attrs.get("a_trans"), call.attrs.get("b_trans"), a.dtype, b.dtype)
    key += (a.shape, b.shape, a.stride(), b.stride()[1:])  # (b's stride across the blocks: any)
    key += (torch.get_num_threads(),)  # (the library may split a product otherwise)
    same = _ONE_RIGHT.get(key)
    if same is None:
        b = frame.memory.whole(b)
        own = torch.stack([block_product(call, a[i], b[i]) for i in range(blocks)])
        same = _ONE_RIGHT[key] = _same_bits(product, own)
    return product if same else None


def _same_bits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether two fp32 or int32 tensors hold the same bits (NaNs and signed zeros included)."""
    return torch.equal(x.contiguous().view(torch.int32), y.contiguous().view(torch.int32))


@_own(tile.matmul)
def _matmul(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    if frame.lanes > 1 and args[0].dim() == args[1].dim() == 3 and frame.memory.same_in_every_block(args[1]):
        product = _one_right(frame, call, args[0], args[1])
        if product is not None:
            return typed(call, product)  # (its binding copies it into the tile's bytes)
    a, b = _converted(frame, call, args[0], frame.memory.whole(args[1]))
    dest = frame.into(call, args[0], args[1], over=False) if a.dim() == b.dim() == 3 else None
    if dest is not None and dest.dtype == a.dtype and dest.shape == (a.shape[0], a.shape[1], b.shape[2]):
        torch.bmm(a, b, out=dest)  # a @ b, in the tile's bytes
        return dest
    return typed(call, a @ b)


# Per layout of an accumulating matmul's operands, whether ``acc + a @ b`` in one fused call
# (torch.baddbmm) rounds as the product and then the sum do, bit for bit (see _fused_acc).
_FUSED: dict[tuple[Any, ...], bool] = {}


def _fused_acc(
    frame: BatchFrame, call: Call, acc: torch.Tensor, a: torch.Tensor, b: torch.Tensor
) -> torch.Tensor | None:
    """``acc + a @ b`` of every block in one fused call, in the tile's bytes: the product is not
    made apart and added (one pass over the blocks' tiles fewer). The library may round a fused
    product otherwise (by layout, shapes, threads), so the first of each layout is compared with
    the two steps; where they differ, None (the two steps are used). None too where the blocks share
    ``b`` (one product, :func:`_one_right`) or the result's tile cannot take it."""
    if a.dim() != 3 or b.dim() != 3 or (frame.lanes > 1 and frame.memory.same_in_every_block(b)):
        return None
    left, right = _converted(frame, call, a, frame.memory.whole(b))
    if not (left.dtype == right.dtype == acc.dtype and left.is_floating_point()):
        return None
    dest = frame.into(call, acc)
    shape = (left.shape[0], left.shape[1], right.shape[2])
    if dest is None or dest.dtype != acc.dtype or dest.shape != shape or acc.shape != shape:
        return None
    if frame._may_overlap(left, dest) or frame._may_overlap(right, dest):
        return None
    in_place = dest.data_ptr() == acc.data_ptr() and dest.stride() == acc.stride()
    key: tuple[Any, ...] = (call.attrs.get("a_trans"), call.attrs.get("b_trans"), acc.dtype, shape, in_place)
    key += (left.shape[2], left.stride(), right.stride(), acc.stride(), dest.stride())
    key += (torch.get_num_threads(),)
    same = _FUSED.get(key)
    if same is False:
        return None
    if same is None and not bool(acc.ne(0).all()):
        # A zero in the accumulator cannot tell a library that adds it inside the product (and
        # rounds once) from the two steps: the layout is decided on a call whose sum is a real one.
        return None
    expected = acc + left @ right if same is None else None
    if in_place:
        dest.baddbmm_(left, right)
    else:
        torch.baddbmm(acc, left, right, out=dest)
    if expected is not None:
        same = _FUSED[key] = _same_bits(dest, expected)
        if not same:
            dest.copy_(expected)
    return dest


@_own(tile.matmul_acc)
def _matmul_acc(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    acc, a, b = args
    fused = _fused_acc(frame, call, acc, a, b)
    if fused is not None:
        return fused
    product = _product(frame, call, a, b)
    dest = frame.into(call, acc) if acc.dtype == product.dtype else None
    if dest is not None and dest.dtype == product.dtype and dest.shape == product.shape:
        torch.add(acc, product, out=dest)  # acc + product, in the tile's bytes
        return dest
    return typed(call, acc.to(product.dtype) + product)


@_own(tile.matmul_bias)
def _matmul_bias(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    a, b, bias = args
    product = _product(frame, call, a, b)
    dest = frame.into(call, bias, over=False)
    if dest is not None and dest.dtype == product.dtype and dest.shape == product.shape:
        torch.add(product, bias.to(product.dtype), out=dest)  # product + bias, in the tile's bytes
        return dest
    return typed(call, product + bias.to(product.dtype))


def _per_block(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    """The op's shared semantics block by block (a block stopped before it keeps zeros)."""
    out = _empty(frame, call, True)
    semantics = NUMBERS[call.op]
    for lane in frame.alive:
        out[lane].copy_(semantics(call, frame.lane_args(call, args, lane)))
    return out


def _elementwise(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    first = args[0]
    if first[0].numel() % _VECTOR_ELEMENTS or _has_lanes(args[1:]):
        return _per_block(frame, call, args)
    value: torch.Tensor = NUMBERS[call.op](call, args)  # each element on its own
    return value


@_own(tile.full)
def _full(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    if _has_lanes(args):
        return _per_block(frame, call, args)
    value: torch.Tensor = NUMBERS[call.op](call, args)
    return value.unsqueeze(0).expand(frame.lanes, *value.shape).clone()


@_own(tile.create)
def _create(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> torch.Tensor:
    return _empty(frame, call, True)


def _scalar(frame: BatchFrame, call: Call, args: tuple[Any, ...]) -> Any:
    if _has_lanes(args):
        return frame.scalars(call, args)
    return NUMBERS[call.op](call, args)  # (its checks made already, for every block)


_BY_KIND: dict[Batching, Batched] = {
    Batching.WHOLE: _elementwise,
    Batching.PER_BLOCK: _per_block,
    Batching.SCALAR: _scalar,
}
_BATCHED: dict[str, Batched] = {
    name: _OWN[name] if kind is Batching.OWN else _BY_KIND[kind] for name, kind in BATCHING.items()
}
