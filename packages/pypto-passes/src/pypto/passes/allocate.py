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

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import ClassVar

from pypto.ir import (
    Allocation,
    Assign,
    Call,
    For,
    Function,
    FunctionKind,
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
from pypto.ir.memory import reserved_top
from pypto.ir.nodes import LOOP_STMTS, If, While, nested_bodies, stmt_exprs, used_vars, walk_stmts
from pypto.ir.types import describe
from pypto.passes.manager import PassContext

KERNEL_KINDS = (FunctionKind.AIC, FunctionKind.AIV)


@dataclass
class _Liveness:
    defs: dict[Var, int] = field(default_factory=dict)
    def_loops: dict[Var, tuple[int, ...]] = field(default_factory=dict)
    last_use: dict[Var, float] = field(default_factory=dict)  # a loop's end is half past its last op
    loop_end: dict[int, int] = field(default_factory=dict)
    aliases: dict[Var, Var] = field(default_factory=dict)  # a loop's result -> its iter_arg
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


def _in_ring(stmt: Assign) -> bool:
    """A popped tile lives in its pipe's ring slot, not in a buffer of its own."""
    return isinstance(stmt.value, Call) and get_op(stmt.value.op).in_pipe_slot


def _use(live: _Liveness, v: Var, pos: int, loops: tuple[int, ...]) -> None:
    v = live.aliases.get(v, v)
    if v in live.defs:
        live.last_use[v] = max(live.last_use[v], pos)


def tile_lifetimes(body: tuple[Stmt, ...]) -> tuple[dict[Var, tuple[int, float]], dict[Var, Var]]:
    """Each tile's live range as the allocator sees it, and each loop result's iter_arg.

    A range is ``(first, last)`` in statement positions: the statements of ``body`` numbered in
    program order, each loop, if or scope before the statements it holds (an if's then arm
    before its else arm). ``last`` is the position of the last use, or half past a loop's last
    statement for a tile live through the loop. A loop's result names its iter_arg's buffer.

    >>> ranges, aliases = tile_lifetimes(kernel.body)  # doctest: +SKIP
    """
    live = _Liveness()
    return _live_ranges(body, live), dict(live.aliases)


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
    """First-fit placement in one space, above ``base`` bytes of reservations."""

    def __init__(self, base: int, alignment: int) -> None:
        self.base = base
        self.alignment = alignment
        self.blocks: list[tuple[int, int]] = []  # (offset, end), sorted
        self.peak = base

    def alloc(self, size: int) -> int:
        size = _align(size, self.alignment)
        offset = self.base
        for start, end in self.blocks:
            if start - offset >= size:
                break
            offset = max(offset, _align(end, self.alignment))
        self.blocks.append((offset, offset + size))
        self.blocks.sort()
        self.peak = max(self.peak, offset + size)
        return offset

    def free(self, offset: int) -> None:
        self.blocks = [b for b in self.blocks if b[0] != offset]


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def plan_memory(
    body: tuple[Stmt, ...], target: Target, reservations: tuple[Reservation, ...] = ()
) -> MemoryPlan:
    """Place every tile assigned in ``body``; no budget check (see :func:`check_budget`)."""
    reserved: dict[MemorySpace, int] = defaultdict(int)
    for r in reservations:
        reserved[r.space] = reserved_top(reservations, r.space)
    allocators: dict[MemorySpace, _SpaceAllocator] = {}
    ranges, aliases = tile_lifetimes(body)
    events: dict[float, list[Var]] = defaultdict(list)
    for v, (start, _end) in ranges.items():
        events[start].append(v)
    dying: dict[float, list[Var]] = defaultdict(list)
    for v, (_start, end) in ranges.items():
        dying[end].append(v)

    allocations: dict[str, Allocation] = {}
    for pos in sorted(set(events) | set(dying)):
        for v in dying[pos]:  # operands whose last use is this op free first: the result may reuse them
            if ranges[v][0] < pos:
                _release(allocators, allocations[v.name])
        for v in events[pos]:
            t = v.type
            assert isinstance(t, TileType) and t.memory_space is not None
            space = t.memory_space
            if space not in allocators:
                allocators[space] = _SpaceAllocator(reserved[space], target.spec(space).alignment)
            offset = allocators[space].alloc(t.nbytes)
            allocations[v.name] = Allocation(
                v.name, space, offset, _align(t.nbytes, allocators[space].alignment)
            )
        for v in events[pos]:
            if ranges[v][1] == pos:
                _release(allocators, allocations[v.name])
    for result, iter_arg in aliases.items():
        allocations[result.name] = replace(allocations[iter_arg.name], name=result.name)
    peak = {space: a.peak for space, a in allocators.items()}
    for space, size in reserved.items():
        peak[space] = max(peak.get(space, 0), size)
    return MemoryPlan(allocations, peak, tuple(reservations))


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
                fn = self.allocate(fn, ctx.target)
            funcs.append(fn)
        return program.with_functions(tuple(funcs))

    def allocate(self, fn: Function, target: Target) -> Function:
        reservations = tuple(fn.attrs.get("reservations", ()))
        plan = plan_memory(fn.body, target, reservations)
        for space in over_budget(plan, target):
            raise budget_error(fn.name, plan, space, target, fn.span, _tiles_in(fn.body, space))
        return replace(fn, attrs={**fn.attrs, "memory_plan": plan})


def _tiles_in(body: tuple[Stmt, ...], space: MemorySpace) -> tuple[TileType, ...]:
    """The types of the tiles ``body`` assigns in ``space``."""
    return tuple(
        stmt.target.type
        for stmt in walk_stmts(body)
        if isinstance(stmt, Assign)
        and isinstance(stmt.target.type, TileType)
        and stmt.target.type.memory_space is space
    )
