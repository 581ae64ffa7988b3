"""Loads of a pipelined loop issued ahead: ``for r in pl.pipeline(..., stage=k)`` loads, in
iteration ``r``, the tile iteration ``r + (k - 1) * step`` will use.

A ``tile.load`` at the top level of a pipelined loop's body, reading a tensor the kernel never
writes at offsets that depend only on the loop variable and on values from before the loop, is
*prefetched*: the first ``d`` tiles are loaded before the loop, and the loop carries ``d`` tiles
(``iter_args``), loading the one ``d`` iterations ahead at the top of its body (the last ``d``
iterations load the last tile again). A core's transfer pipe then runs ``d`` loads ahead of the
ops that use them, which hides a GM load's fixed latency behind ``d`` iterations of compute,
and ahead of a pop that waits for the other core. ``d`` is ``k - 1``, fewer when the loop has
fewer than ``2 d`` iterations (each tile loaded ahead costs one load again at the end) or when
``d`` more buffers of the tile would not fit beside the rest (then the loop keeps its plain
loads). The ``d + 1`` tiles of one load share one buffer of ``d + 1`` slots, each taking the
slot of the iteration it is for (:func:`group_allocations`): carrying a tile to the next
iteration moves no data. A loop with a ``break`` or ``continue`` keeps its plain loads.

>>> kernel = prefetched(kernel, fits)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir import (
    INDEX,
    Allocation,
    Assign,
    Call,
    Const,
    DistributedTensorType,
    For,
    Function,
    LoopKind,
    MemorySpace,
    Stmt,
    TileType,
    Var,
    make_call,
)
from pypto.ir.nodes import (
    Break,
    Continue,
    nested_bodies,
    stmt_exprs,
    used_vars,
    walk_expr,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import Communicates, GmAccess, scalar, tile, trait_of
from pypto.ir.rewrite import NameGen, defined_vars, folded, substitute_body, substitute_expr
from pypto.passes.gm_access import written_tensors

# The function attribute listing the groups of tiles a prefetch made, one per load: the tile
# loaded ahead in the body ("next"), the tiles the loop carries ("ahead"), the ones loaded before
# it ("first") and its results ("last"), the loop's variable, start, step and trip count. The
# allocator gives a group one buffer of depth + 1 slots (see :func:`group_allocations`).
PREFETCHED = "prefetched"
# Iterations per tile loaded ahead: the last ``d`` iterations load a tile again (the last one),
# so a short loop loads fewer ahead, and one of fewer than this many iterations none.
TRIPS_PER_DEPTH = 2


@dataclass(frozen=True)
class _Loop:
    """A pipelined loop with a static trip count."""

    stmt: For
    start: int
    step: int
    trips: int

    @classmethod
    def of(cls, stmt: Stmt) -> _Loop | None:
        if not isinstance(stmt, For) or stmt.kind is not LoopKind.pipeline or (stmt.stage or 1) < 2:
            return None
        if any(isinstance(s, (Break, Continue)) for s in walk_stmts(stmt.body)):
            return None  # a jump carries the iter_args it knows, not the tiles loaded ahead
        bounds = [b.value for b in (stmt.start, stmt.stop, stmt.step) if isinstance(b, Const)]
        if len(bounds) != 3 or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
            return None
        start, stop, step = (int(b) for b in bounds)
        trips = len(range(start, stop, step)) if step > 0 else 0
        return cls(stmt, start, step, trips) if trips >= 2 else None

    def at(self, j: int) -> Const:
        return Const(self.start + j * self.step, INDEX)

    @property
    def last(self) -> int:
        return self.start + (self.trips - 1) * self.step


def prefetched(
    fn: Function,
    fits: Callable[[tuple[Stmt, ...], tuple[dict[str, Any], ...]], bool],
) -> Function:
    """``fn`` with its pipelined loops' loads issued ahead, each as deep as ``fits`` allows
    (whether a body, with these groups of tiles loaded ahead, fits the target's memory)."""
    written = written_tensors(fn.body)
    names = NameGen.for_function(fn)
    body = fn.body
    done: list[dict[str, Any]] = list(fn.attrs.get(PREFETCHED, ()))
    for loop in [found for found in _loops(fn.body) if found is not None]:
        for depth in range(min((loop.stmt.stage or 1) - 1, loop.trips // TRIPS_PER_DEPTH), 0, -1):
            trial_names = NameGen(set(names.taken))
            rewritten = _rewrite(loop, depth, written, trial_names)
            if rewritten is None:
                break
            stmts, loaded = rewritten
            trial = _replaced(body, loop.stmt, stmts)
            if fits(trial, (*done, *loaded)):
                body, names = trial, trial_names
                done += loaded
                break
    if body is fn.body:
        return fn
    return replace(fn, body=body, attrs={**fn.attrs, PREFETCHED: done})


def _loops(body: tuple[Stmt, ...]) -> list[_Loop | None]:
    """The pipelined loops of ``body``, inner ones first."""
    found: list[_Loop | None] = []
    for stmt in body:
        for inner in nested_bodies(stmt):
            found += _loops(inner)
        found.append(_Loop.of(stmt))
    return found


def _replaced(body: tuple[Stmt, ...], old: Stmt, new: list[Stmt]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        if stmt is old:
            out += new
            continue
        inner = nested_bodies(stmt)
        if inner:
            bodies = tuple(_replaced(b, old, new) for b in inner)
            if any(a is not b for a, b in zip(bodies, inner, strict=True)):
                stmt = with_bodies(stmt, bodies)
        out.append(stmt)
    return tuple(out)


def _prefetchable(stmt: Stmt, loop: For, inside: set[Var], written: set[Var]) -> bool:
    """A plain load of a tensor nobody writes, at offsets of the loop variable and outer values."""
    if not (isinstance(stmt, Assign) and isinstance(stmt.value, Call) and stmt.value.op == tile.load):
        return False
    if stmt.memref is not None:
        return False  # placed by hand in a pl.MemRef slot
    if not isinstance(stmt.target.type, TileType) or stmt.target in loop.yields:
        return False
    access = trait_of(stmt.value, GmAccess)
    tensor = stmt.value.args[access.tensor] if access is not None else None
    if not isinstance(tensor, Var) or tensor in written:
        return False
    if isinstance(tensor.type, DistributedTensorType):
        return False  # a window: the other ranks write it, ordered by signals no load may pass
    return all(v is loop.var or v not in inside for v in used_vars(stmt.value))


def _communicates(body: tuple[Stmt, ...]) -> bool:
    """Whether ``body`` holds an op that talks to other ranks (an ordering point)."""
    return any(
        isinstance(e, Call) and trait_of(e, Communicates) is not None
        for stmt in walk_stmts(body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
    )


def _rewrite(
    loop: _Loop, depth: int, written: set[Var], names: NameGen
) -> tuple[list[Stmt], list[dict[str, Any]]] | None:
    """The loop (and the loads before it) with its prefetchable loads ``depth`` iterations ahead;
    None when it has none."""
    stmt = loop.stmt
    if _communicates(stmt.body):
        return None  # a notify, wait or remote access orders the loads around it: none moves ahead
    inside = set(defined_vars(stmt.body))
    loads = [s for s in stmt.body if _prefetchable(s, stmt, inside, written)]
    if not loads:
        return None
    prologue: list[Stmt] = []
    iter_args, init_values, yields, results = list(stmt.iter_args), list(stmt.init_values), [], []
    ahead: list[Stmt] = []
    renamed: dict[Var, Var] = {}
    loaded: list[dict[str, Any]] = []
    later = Const(loop.last, INDEX)
    next_index = make_call(scalar.min, (_plus(stmt.var, depth * loop.step), later))
    for load in loads:
        assert isinstance(load, Assign)
        x, call = load.target, load.value
        carried = [Var(names.fresh(f"{x.name}_ahead{j}"), x.type, x.span) for j in range(depth)]
        firsts = [Var(names.fresh(f"{x.name}_first{j}"), x.type, x.span) for j in range(depth)]
        for j, first in enumerate(firsts):
            prologue.append(Assign(first, folded(substitute_expr(call, {stmt.var: loop.at(j)})), load.span))
        init_values += firsts
        fetched = Var(names.fresh(f"{x.name}_next"), x.type, x.span)
        ahead.append(Assign(fetched, substitute_expr(call, {stmt.var: next_index}), load.span))
        last = [Var(names.fresh(f"{x.name}_last{j}"), x.type, x.span) for j in range(depth)]
        iter_args += carried
        yields += [*carried[1:], fetched]
        results += last
        renamed[x] = carried[0]
        loaded.append(
            {
                "next": fetched.name,
                "ahead": [v.name for v in carried],
                "first": [v.name for v in firsts],
                "last": [v.name for v in last],
                "loop": stmt.var.name,
                "start": loop.start,
                "step": loop.step,
                "trips": loop.trips,
            }
        )
    rest = tuple(s for s in stmt.body if s not in loads)
    body = (*ahead, *substitute_body(rest, dict(renamed)))
    new_yields = tuple(substitute_expr(y, dict(renamed)) for y in stmt.yields) + tuple(yields)
    new_loop = replace(
        stmt,
        body=body,
        iter_args=tuple(iter_args),
        init_values=tuple(init_values),
        yields=new_yields,
        results=(*stmt.results, *results),
    )
    return [*prologue, new_loop], loaded


def _plus(var: Var, n: int) -> Call:
    return make_call(scalar.add, (var, Const(n, INDEX)))


def group_members(group: dict[str, Any]) -> list[str]:
    """The tiles of one prefetched load: before, in and after its loop."""
    return [*group["first"], *group["ahead"], group["next"], *group["last"]]


def group_allocations(
    group: dict[str, Any], space: MemorySpace, offset: int, size: int
) -> dict[str, Allocation]:
    """Where each tile of a prefetched load lives, in one buffer of ``depth + 1`` slots of
    ``size`` bytes at ``offset``: iteration ``n`` (counted from 0) reads slot ``n % (depth + 1)``,
    and the tile it loads ahead for iteration ``n + depth`` takes slot ``(n + depth) % (depth +
    1)``; the loads before the loop fill the slots of iterations 0 .. depth - 1."""
    depth, var, start, step = len(group["ahead"]), group["loop"], group["start"], group["step"]
    slots = depth + 1

    def fixed(name: str, n: int) -> Allocation:
        return Allocation(name, space, offset + n % slots * size, size)

    def rotating(name: str, ahead: int) -> Allocation:
        return Allocation(name, space, offset, size, slots, var, start - ahead * step, step)

    placed = [fixed(name, j) for j, name in enumerate(group["first"])]
    placed += [rotating(name, j) for j, name in enumerate(group["ahead"])]
    placed.append(rotating(group["next"], depth))
    placed += [fixed(name, group["trips"] + j) for j, name in enumerate(group["last"])]
    return {a.name: a for a in placed}
