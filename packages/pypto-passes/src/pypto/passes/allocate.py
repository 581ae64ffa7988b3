"""AllocateMemory: place every tile of every kernel at a byte offset of its memory space.

Liveness is computed over the kernel body in program order; a tile defined before a loop and
used inside it stays live to the loop's end. A loop-carried tile's iter_arg gets one buffer, live
from the loop's start to its end (and on, while the loop's result is used: the result names the
same buffer); the init value and each iteration's yield are copied into it (the copy is skipped
when the value already sits there). An op's result may take the buffer of an operand
whose last use is that op. Buffers are aligned to the space's alignment and placed first-fit
above any reservation (a pipe ring) at the bottom of the space; every space is then checked
against the target's usable size.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pypto.ir import (
    Allocation,
    Assign,
    Call,
    Const,
    For,
    Function,
    FunctionKind,
    LoopKind,
    MemoryBudgetError,
    MemoryPlan,
    MemorySpace,
    Program,
    Reservation,
    SourceSpan,
    Stmt,
    Target,
    TileType,
    Var,
    get_op,
)
from pypto.ir.compile_options import DiagnosticCheck
from pypto.ir.errors import at_line
from pypto.ir.memory import reserved_top
from pypto.ir.nodes import LOOP_STMTS, If, While, nested_bodies, stmt_exprs, used_vars, walk_stmts
from pypto.ir.types import describe
from pypto.passes.manager import PassContext
from pypto.passes.memref import MemRefs, memref_hint
from pypto.passes.prefetch import PREFETCHED, group_allocations, group_members, prefetched

KERNEL_KINDS = (FunctionKind.AIC, FunctionKind.AIV)
# The function attribute naming the loop variables of the pipelined loops the tiler made.
AUTO_PIPELINED = "auto_pipelined"


@dataclass(frozen=True)
class _Pipelined:
    """A ``pl.pipeline(start, stop, step, stage=k)`` loop whose body's buffers take ``stages`` slots."""

    var: str
    start: int
    step: int
    stages: int
    span: SourceSpan | None


@dataclass
class _Liveness:
    defs: dict[Var, int] = field(default_factory=dict)
    def_loops: dict[Var, tuple[int, ...]] = field(default_factory=dict)
    last_use: dict[Var, float] = field(default_factory=dict)  # a loop's end is half past its last op
    loop_end: dict[int, int] = field(default_factory=dict)
    aliases: dict[Var, Var] = field(default_factory=dict)  # a loop's result -> its iter_arg
    pipelined: dict[int, _Pipelined] = field(default_factory=dict)  # loop position -> its stages
    position: int = 0


def _scan(body: tuple[Stmt, ...], live: _Liveness, loops: tuple[int, ...]) -> None:
    for stmt in body:
        pos = live.position
        live.position += 1
        for expr in stmt_exprs(stmt):
            for v in used_vars(expr):
                _use(live, v, pos, loops)
        if isinstance(stmt, Assign) and isinstance(stmt.target.type, TileType) and not _in_ring(stmt):
            live.defs[stmt.target] = pos
            live.def_loops[stmt.target] = loops
            live.last_use.setdefault(stmt.target, pos)
        elif nested_bodies(stmt):
            inner = (*loops, pos) if isinstance(stmt, LOOP_STMTS) else loops
            if isinstance(stmt, LOOP_STMTS):
                _define_carried(live, stmt, pos, loops)
                pipelined = _pipelined(stmt)
                if pipelined is not None:
                    live.pipelined[pos] = pipelined
            for body_ in nested_bodies(stmt):  # an If's arms one after the other: only one runs
                _scan(body_, live, inner)
            live.loop_end[pos] = live.position - 1
            if isinstance(stmt, LOOP_STMTS):
                _end_carried(live, stmt)
            elif isinstance(stmt, If):
                _define_if_results(live, stmt, loops)


def _define_carried(live: _Liveness, loop: For | While, pos: int, loops: tuple[int, ...]) -> None:
    """A carried tile's iter_arg is defined at the loop; its result is another name for it."""
    for iter_arg, result in zip(loop.iter_args, loop.results, strict=True):
        if isinstance(iter_arg.type, TileType):
            live.defs[iter_arg] = pos
            live.def_loops[iter_arg] = loops
            live.last_use[iter_arg] = pos
            live.aliases[result] = iter_arg


def _define_if_results(live: _Liveness, stmt: If, loops: tuple[int, ...]) -> None:
    """An if's tile result has a buffer of its own, written at the end of the arm that ran: it is
    defined at the if's last op, where the yields are last used."""
    end = live.position - 1
    for v in (u for y in (*stmt.then_yields, *stmt.else_yields) for u in used_vars(y)):
        _use(live, v, end, loops)
    for result in stmt.results:
        if isinstance(result.type, TileType):
            live.defs[result] = end
            live.def_loops[result] = loops
            live.last_use.setdefault(result, end)


def _end_carried(live: _Liveness, loop: For | While) -> None:
    """The iter_args and the yields stay live through the copy at the end of the last op."""
    end = live.position - 1 + 0.5
    for v in (*loop.iter_args, *(u for y in loop.yields for u in used_vars(y))):
        v = live.aliases.get(v, v)
        if v in live.defs:
            live.last_use[v] = max(live.last_use[v], end)


def _pipelined(loop: For | While) -> _Pipelined | None:
    """A pipelined loop of constant start and step, whose iteration picks a slot; else None. A
    loop of fewer iterations than stages takes a slot per iteration."""
    if not isinstance(loop, For) or loop.kind is not LoopKind.pipeline or (loop.stage or 1) < 2:
        return None
    if not (isinstance(loop.start, Const) and isinstance(loop.step, Const)):
        return None
    start, step, stages = int(loop.start.value), int(loop.step.value), int(loop.stage or 1)
    if isinstance(loop.stop, Const) and step > 0:
        stages = max(1, min(stages, len(range(start, int(loop.stop.value), step))))  # no idle slots
    return _Pipelined(loop.var.name, start, step, stages, loop.span)


def _in_ring(stmt: Assign) -> bool:
    """A popped tile lives in its pipe's ring slot, not in a buffer of its own."""
    return isinstance(stmt.value, Call) and get_op(stmt.value.op).in_pipe_slot


def _use(live: _Liveness, v: Var, pos: int, loops: tuple[int, ...]) -> None:
    v = live.aliases.get(v, v)
    if v in live.defs:
        live.last_use[v] = max(live.last_use[v], pos)


def tile_lifetimes(
    body: tuple[Stmt, ...], plan: MemoryPlan | None = None
) -> tuple[dict[Var, tuple[int, float]], dict[Var, Var]]:
    """Each tile's live range as the allocator sees it, and each loop result's iter_arg.

    A range is ``(first, last)`` in statement positions: the statements of ``body`` numbered in
    program order, each loop, if or scope before the statements it holds (an if's then arm
    before its else arm). ``last`` is the position of the last use, or half past a loop's last
    statement for a tile live through the loop. A loop's result names its iter_arg's buffer.
    With ``plan``, a tile it gives slots (a pipelined loop's) is live through its whole loop.

    >>> ranges, aliases = tile_lifetimes(kernel.body)  # doctest: +SKIP
    """
    live = _Liveness()
    ranges = _live_ranges(body, live)
    if plan is not None:
        for v, loops in live.def_loops.items():
            allocation = plan.of(v.name)
            if loops and v in ranges and allocation is not None and allocation.slots > 1:
                ranges[v] = _through_loop(live, ranges[v], loops[-1])
    return ranges, dict(live.aliases)


def _through_loop(live: _Liveness, span: tuple[int, float], loop: int) -> tuple[int, float]:
    """A slotted tile's range: every slot is in use at some iteration, so all of the loop."""
    return (loop, max(span[1], live.loop_end[loop] + 0.5))


def _live_ranges(body: tuple[Stmt, ...], live: _Liveness) -> dict[Var, tuple[int, float]]:
    _scan(body, live, ())
    ranges: dict[Var, tuple[int, float]] = {}
    for v, start in live.defs.items():
        ranges[v] = (start, live.last_use[v])
    extended = _extend_for_loops(body, live)
    for v, end in extended.items():
        start, old_end = ranges[v]
        ranges[v] = (start, max(old_end, end))
    return ranges


def _extend_for_loops(body: tuple[Stmt, ...], live: _Liveness) -> dict[Var, float]:
    """A tile used inside a loop it was defined outside of stays live to that loop's end."""
    ends: dict[Var, float] = {}
    counter = [0]

    def visit(stmts: tuple[Stmt, ...], loops: tuple[int, ...]) -> None:
        for stmt in stmts:
            pos = counter[0]
            counter[0] += 1
            for expr in stmt_exprs(stmt):
                for used in used_vars(expr):
                    v = live.aliases.get(used, used)
                    if v in live.defs:
                        outer = [lp for lp in loops if lp not in live.def_loops[v]]
                        if outer:
                            # Live through the loop's last op too: the next iteration reads it.
                            ends[v] = max(ends.get(v, 0), live.loop_end[outer[0]] + 0.5)
            for inner in nested_bodies(stmt):
                visit(inner, (*loops, pos) if isinstance(stmt, LOOP_STMTS) else loops)

    visit(body, ())
    return ends


class _SpaceAllocator:
    """Placement in one space, above ``base`` bytes of reservations: first fit among the bytes
    free now, or (``limit`` given) next fit: the first free bytes after the last buffer placed,
    wrapping around below ``limit``, so that a buffer takes the bytes freed longest ago."""

    def __init__(self, base: int, alignment: int, limit: int | None = None) -> None:
        self.base = base
        self.alignment = alignment
        self.limit = limit
        self.cursor = base
        self.blocks: list[tuple[int, int]] = []  # (offset, end), sorted
        self.peak = base

    def alloc(self, size: int) -> int:
        size = _align(size, self.alignment)
        offset = self._next_fit(size) if self.limit is not None else None
        if offset is None:
            offset = self._first_fit(size, self.base)
        bisect.insort(self.blocks, (offset, offset + size))
        self.peak = max(self.peak, offset + size)
        self.cursor = offset + size
        return offset

    def claim(self, offset: int, size: int) -> bool:
        """Take ``size`` bytes at ``offset`` if they are free."""
        size = _align(size, self.alignment)
        if any(lo < offset + size and offset < hi for lo, hi in self.blocks):
            return False
        bisect.insort(self.blocks, (offset, offset + size))
        self.peak = max(self.peak, offset + size)
        self.cursor = offset + size
        return True

    def _first_fit(self, size: int, start: int) -> int:
        offset, alignment = start, self.alignment
        # The blocks do not overlap, so they are sorted by their ends too: skip those below start.
        for lo, hi in itertools.islice(self.blocks, bisect.bisect_right(self.blocks, start, key=_end), None):
            if lo - offset >= size:
                break
            hi = -(-hi // alignment) * alignment
            if hi > offset:
                offset = hi
        return offset

    def _next_fit(self, size: int) -> int | None:
        assert self.limit is not None
        for start in (self.cursor, self.base):
            offset = self._first_fit(size, start)
            if offset + size <= self.limit:
                return offset
        return None

    def free(self, offset: int) -> None:
        self.blocks = [b for b in self.blocks if b[0] != offset]


def _end(block: tuple[int, int]) -> int:
    return block[1]


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def plan_memory(
    body: tuple[Stmt, ...], target: Target, reservations: tuple[Reservation, ...] = ()
) -> MemoryPlan:
    """Place every tile assigned in ``body``; no budget check (see :func:`over_budget`). The
    buffers a pipelined loop's body defines take one slot per stage, each live through the whole
    loop, as many stages as their space has room for (see :func:`fitting_stages`)."""
    plan, _ = fitting_stages(body, target, reservations)
    return plan


def _plan(
    body: tuple[Stmt, ...],
    target: Target,
    reservations: tuple[Reservation, ...],
    stage_cap: dict[MemorySpace, int],
    prefetches: tuple[dict[str, Any], ...] = (),
    reuse: frozenset[MemorySpace] = frozenset(),
) -> tuple[MemoryPlan, dict[tuple[int, MemorySpace], tuple[_Pipelined, int, int]]]:
    """The plan, and per (pipelined loop, space) its loop, the stages it got and the bytes of one.
    The spaces in ``reuse`` place a buffer on the first bytes free at its definition; the others
    on the next free bytes after the buffer placed last (see :class:`_SpaceAllocator`).
    The tiles of a load issued ahead (a group of ``prefetches``, see :mod:`pypto.passes.prefetch`)
    share one buffer with a slot per iteration in flight, live from the first load before the
    loop to the last use after it; the loop's stages do not replicate it again."""
    reserved: dict[MemorySpace, int] = defaultdict(int)
    for r in reservations:
        reserved[r.space] = reserved_top(reservations, r.space)
    allocators: dict[MemorySpace, _SpaceAllocator] = {}
    live = _Liveness()
    ranges = _live_ranges(body, live)
    refs = MemRefs(body, live, ranges)  # the pl.MemRef tiles leave `ranges`: placed by their names
    grouped = _group_ranges(prefetches, ranges)
    slotted: dict[Var, tuple[int, int]] = {}  # tile -> (its pipelined loop, its slots)
    staged: dict[tuple[int, MemorySpace], tuple[_Pipelined, int, int]] = {}
    in_loop = {
        v: loops[-1]
        for v, loops in live.def_loops.items()
        if loops
        and loops[-1] in live.pipelined
        and v in ranges
        and v not in live.aliases.values()
        and v.name not in grouped
    }
    shares = _in_place(in_loop, ranges)
    for v, loop in in_loop.items():
        t = v.type
        assert isinstance(t, TileType) and t.memory_space is not None
        pipelined = live.pipelined[loop]
        stages = min(pipelined.stages, stage_cap.get(t.memory_space, pipelined.stages))
        before = staged.get((loop, t.memory_space), (pipelined, stages, 0))
        added = 0 if v in shares else t.nbytes
        staged[(loop, t.memory_space)] = (pipelined, stages, before[2] + added)
        if stages > 1:
            slotted[v] = (loop, stages)
            ranges[v] = _through_loop(live, ranges[v], loop)
    shares = {v: root for v, root in shares.items() if v in slotted and root in slotted}
    events: dict[float, list[Var]] = defaultdict(list)
    for v, (start, _end) in ranges.items():
        events[start].append(v)
    dying: dict[float, list[Var]] = defaultdict(list)
    for v, (_start, end) in ranges.items():
        dying[end].append(v)

    allocations: dict[str, Allocation] = {}

    def allocator_of(space: MemorySpace) -> _SpaceAllocator:
        if space not in allocators:
            limit = None if space in reuse or space not in target.memory else target.usable(space)
            allocators[space] = _SpaceAllocator(reserved[space], target.spec(space).alignment, limit)
        return allocators[space]

    for pos in sorted(set(events) | set(dying) | refs.positions):
        freed: list[Allocation] = []
        for v in dying[pos]:  # operands whose last use is this op free first: the result may reuse them
            if ranges[v][0] < pos and v not in shares:  # a tile in place: its chain's first frees
                _release(allocators, allocations[v.name])
                freed.append(allocations[v.name])
        refs.release(pos, allocators)
        refs.place(pos, allocations, allocator_of)
        for v in events[pos]:
            t = v.type
            assert isinstance(t, TileType) and t.memory_space is not None
            space = t.memory_space
            allocator_of(space)
            size = _align(t.nbytes, allocators[space].alignment)
            group = grouped.get(v.name)
            if group is not None:
                offset = allocators[space].alloc(size * (len(group["ahead"]) + 1))
                allocations.update(group_allocations(group, space, offset, size))
            elif v in shares:  # in place: the slots of the tile it overwrites
                allocations[v.name] = replace(allocations[shares[v].name], name=v.name)
            elif v in slotted:
                loop, slots = slotted[v]
                p = live.pipelined[loop]
                offset = allocators[space].alloc(size * slots)
                allocations[v.name] = Allocation(v.name, space, offset, size, slots, p.var, p.start, p.step)
            else:
                allocator = allocators[space]
                # In place: a result takes the buffer of an operand this op reads last (a
                # matmul_acc accumulates where it is), unless the space packs buffers first fit.
                same = [a for a in freed if a.space is space and a.size == size and a.slots == 1]
                if allocator.limit is not None and same and allocator.claim(same[0].offset, size):
                    freed.remove(same[0])
                    offset = same[0].offset
                else:
                    offset = allocator.alloc(t.nbytes)
                allocations[v.name] = Allocation(v.name, space, offset, size)
        for v in events[pos]:
            if ranges[v][1] == pos and v not in shares:
                _release(allocators, allocations[v.name])
    for result, iter_arg in live.aliases.items():
        if result.name not in grouped:
            allocations[result.name] = replace(allocations[iter_arg.name], name=result.name)
    peak = {space: a.peak for space, a in allocators.items()}
    for space, size in reserved.items():
        peak[space] = max(peak.get(space, 0), size)
    return MemoryPlan(allocations, peak, tuple(reservations)), staged


def _in_place(in_loop: dict[Var, int], ranges: dict[Var, tuple[int, float]]) -> dict[Var, Var]:
    """The tiles of a pipelined loop that take the slots of an operand their op reads last (of
    the same loop, space and size): per such tile, the first tile of its chain. An elementwise
    chain ``t = exp(x); u = t * 2`` then costs one slotted buffer per stage, not three."""
    ending: dict[float, list[Var]] = defaultdict(list)
    for v in in_loop:
        ending[ranges[v][1]].append(v)
    shares: dict[Var, Var] = {}
    taken: set[Var] = set()
    for v in in_loop:
        t = v.type
        assert isinstance(t, TileType)
        for u in ending.get(ranges[v][0], ()):
            o = u.type
            assert isinstance(o, TileType)
            same = in_loop[u] == in_loop[v] and o.memory_space is t.memory_space and o.nbytes == t.nbytes
            if same and u not in taken and ranges[u][0] < ranges[v][0]:
                shares[v] = shares.get(u, u)
                taken.add(u)
                break
    return shares


def _group_ranges(
    prefetches: tuple[dict[str, Any], ...], ranges: dict[Var, tuple[int, float]]
) -> dict[str, dict[str, Any]]:
    """Each prefetched load's group by the names of its tiles. Its first tile stands for the
    group's buffer: its range becomes the union of the group's ranges, the others' are dropped
    (they are placed with it)."""
    by_name = {v.name: v for v in ranges}
    grouped: dict[str, dict[str, Any]] = {}
    for group in prefetches:
        members = [by_name[name] for name in group_members(group) if name in by_name]
        if not members:
            continue
        spans = [ranges.pop(v) for v in members]
        ranges[members[0]] = (min(a for a, _ in spans), max(b for _, b in spans))
        grouped.update({name: group for name in group_members(group)})
    return grouped


def _release(allocators: dict[MemorySpace, _SpaceAllocator], alloc: Allocation) -> None:
    allocators[alloc.space].free(alloc.offset)


def over_budget(plan: MemoryPlan, target: Target) -> list[MemorySpace]:
    return [s for s, used in plan.peak.items() if s in target.memory and used > target.usable(s)]


def budget_error(
    fn_name: str,
    plan: MemoryPlan,
    space: MemorySpace,
    target: Target,
    span: SourceSpan | None,
    tiles: tuple[TileType, ...] = (),
) -> MemoryBudgetError:
    """The over-budget error, worded as mixed-kernels.md specifies; ``tiles`` are the kernel's
    tiles in ``space``, for the hint."""
    usage, limit = plan.peak[space], target.usable(space)
    message = (
        f"Function '{fn_name}': {space.name} buffer usage ({usage} bytes) "
        f"exceeds platform limit ({limit} bytes)"
    )
    rings = [r for r in plan.reservations if r.space is space]
    hint = "use smaller tiles (fewer rows per pl.load) or keep fewer tiles live at once"
    if tiles and all(len(t.shape) < 2 or t.shape[0] == 1 for t in tiles):
        widest = max(tiles, key=lambda t: t.nbytes)
        hint = (
            f"the tiles are single rows already, and one row ({describe(widest)}, {widest.nbytes} bytes) is "
            "too wide: work on blocks of columns, e.g. x[:, c : c + 1024] for c in a pl.range loop"
        )
    if rings:
        size = reserved_top(plan.reservations, space)
        message += (
            f". The first {size} bytes of that space are reserved by system.reserve_buffer, so tiles"
            " are allocated above them — this is the cross-core pipe ring."
        )
        if any(r.automatic for r in rings):
            message += (
                " Lower its depth with optimizations=[pl.cross_core_slot(slot_num=N)] on the"
                " enclosing pl.at(...), or shrink the tile that crosses the cube/vector boundary"
            )
        hint = _ring_hint(rings, limit - (usage - size))
        # An explicit pipe setup chose the depth: point at it rather than at the scope.
        span = next((r.span for r in rings if r.span is not None), span)
    return MemoryBudgetError(message, span, hint)


def _ring_hint(rings: list[Reservation], room: int) -> str:
    """How deep the ring may be: ``room`` bytes of the space are left for it beside the tiles."""
    hint = "the ring holds slot_num whole crossing tiles"
    slot_size = rings[0].slot_size if len(rings) == 1 else None
    if not slot_size:
        return f"{hint}; pick the largest depth that fits"
    depth = max(room, 0) // slot_size
    if depth < 1:
        return f"{hint} of {slot_size} bytes, and not one fits beside the tiles: shrink the tile that crosses"
    left = f"{room} bytes are left for it beside the tiles"
    fits = f"{hint} of {slot_size} bytes, and {left}: slot_num={depth} fits"
    buffer = rings[0]
    if buffer.base is not None and buffer.name is not None:  # the user's pl.reserve_buffer sizes it
        return f"{fits} (pl.reserve_buffer(name={buffer.name!r}, size={depth * slot_size}))"
    return fits


@dataclass(frozen=True)
class AllocateMemory:
    """Attach a ``MemoryPlan`` to every kernel and check each space against the target."""

    name: ClassVar[str] = "AllocateMemory"
    pipeline_name: ClassVar[str] = "allocate"

    def run(self, program: Program, ctx: PassContext) -> Program:
        funcs = []
        for fn in program.functions.values():
            if fn.kind in KERNEL_KINDS:
                fn = self.allocate(fn, ctx.target, ctx.reports(DiagnosticCheck.PipelineStagesCut))
            funcs.append(fn)
        return program.with_functions(tuple(funcs))

    def allocate(self, fn: Function, target: Target, hints: bool = True) -> Function:
        reservations = tuple(fn.attrs.get("reservations", ()))
        fn = self.load_ahead(fn, target, reservations)
        plan, staged = fitting_stages(fn.body, target, reservations, tuple(fn.attrs.get(PREFETCHED, ())))
        for space in over_budget(plan, target):
            error = budget_error(fn.name, plan, space, target, fn.span, _tiles_in(fn.body, space))
            error.hint = memref_hint(fn.body, space) or error.hint
            raise error
        attrs = {**fn.attrs, "memory_plan": plan}
        # The tiler's own pipelined loops take what fits; only a loop the user pipelined is told.
        compilers = set(fn.attrs.get(AUTO_PIPELINED, ()))
        cut = [
            _stage_hint(*entry, plan, space, target)
            for (_, space), entry in staged.items()
            if hints and entry[1] < entry[0].stages and entry[0].var not in compilers
        ]
        if cut:
            attrs["hints"] = [*fn.attrs.get("hints", ()), *cut]
        return replace(fn, attrs=attrs)

    @staticmethod
    def load_ahead(fn: Function, target: Target, reservations: tuple[Reservation, ...]) -> Function:
        """The pipelined loops' loads issued ahead (:func:`pypto.passes.prefetch.prefetched`), as
        far as memory allows without taking a stage from any loop."""
        plan, staged = fitting_stages(fn.body, target, reservations)
        if over_budget(plan, target) or not staged:
            return fn
        before = _stages_by_loop(staged)

        def fits(body: tuple[Stmt, ...], prefetches: tuple[dict[str, Any], ...]) -> bool:
            trial, trial_staged = fitting_stages(body, target, reservations, prefetches)
            after = _stages_by_loop(trial_staged)
            return not over_budget(trial, target) and all(after.get(k, n) >= n for k, n in before.items())

        return prefetched(fn, fits)


def _stages_by_loop(
    staged: dict[tuple[int, MemorySpace], tuple[_Pipelined, int, int]],
) -> dict[tuple[str, MemorySpace], int]:
    """Per (pipelined loop's variable, space), the stages it got."""
    return {(loop.var, space): stages for (_, space), (loop, stages, _) in staged.items()}


def fitting_stages(
    body: tuple[Stmt, ...],
    target: Target,
    reservations: tuple[Reservation, ...],
    prefetches: tuple[dict[str, Any], ...] = (),
) -> tuple[MemoryPlan, dict[tuple[int, MemorySpace], tuple[_Pipelined, int, int]]]:
    """The plan with as many pipeline stages as fit. A space first places each buffer on the
    free bytes after the buffer placed before it (wrapping around), so that it reuses the bytes
    freed longest ago and waits for no op that has just touched them; over budget, on the first
    free bytes; still over, it takes one stage fewer per try (placed next fit again first), down
    to one (its buffers then shared by every iteration, as without pipelining)."""
    cap: dict[MemorySpace, int] = {}
    reuse: set[MemorySpace] = set()
    while True:
        plan, staged = _plan(body, target, reservations, cap, prefetches, frozenset(reuse))
        fresh = [space for space in over_budget(plan, target) if space not in reuse]
        if fresh:
            reuse.update(fresh)
            continue
        over = [
            space
            for space in over_budget(plan, target)
            if any(stages > 1 and s is space for (_, s), (_, stages, _) in staged.items())
        ]
        if not over:
            return plan, staged
        for space in over:
            most = max(stages for (_, s), (_, stages, _) in staged.items() if s is space)
            cap[space] = most - 1
            reuse.discard(space)  # one stage fewer may fit placed next fit again


def _stage_hint(
    loop: _Pipelined, stages: int, per_stage: int, plan: MemoryPlan, space: MemorySpace, target: Target
) -> str:
    """A performance hint: a pipelined loop got fewer stages in ``space`` than it asked for."""
    free = target.usable(space) - plan.peak.get(space, 0) + per_stage * (stages - 1)
    where = f" (the loop at {at_line(loop.span)})" if loop.span is not None else ""
    return (
        f"pipelining asked for {loop.stages} stages, {stages} fit in {space.name}{where}: "
        f"{per_stage} bytes per stage, {max(free, 0)} free — stages {stages} apart share storage "
        "and serialize"
    )


def _tiles_in(body: tuple[Stmt, ...], space: MemorySpace) -> tuple[TileType, ...]:
    """The types of the tiles ``body`` assigns in ``space``."""
    return tuple(
        stmt.target.type
        for stmt in walk_stmts(body)
        if isinstance(stmt, Assign)
        and isinstance(stmt.target.type, TileType)
        and stmt.target.type.memory_space is space
    )
