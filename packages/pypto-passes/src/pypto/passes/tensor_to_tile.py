"""ConvertTensorToTileOps: whole-tensor ops inside kernels become tile instructions.

Consecutive tensor-level statements of a kernel form a *region*. Tensor values computed in the
region become tiles; tensors from global memory are loaded where they are used (Vec for vector
operands; Mat, then Left/Right, for matmul operands); ``tensor.assemble`` becomes ``tile.store``.

A region's independent parts (sharing no computed value and no written tensor) are tiled apart,
each by rows: most ops are row-local (elementwise ops, row reductions and row broadcasts, a
matmul's left operand, accumulator and result, column concat), so a part runs as a loop over row
blocks of ``R`` rows: the largest divisor of the row count, at most ``max_block_rows``, for which
its tiles fit the target's on-chip budgets (checked with the allocator itself) or, when only a
small divisor fits (a prime row count), ``ceil(rows / n)`` rows with the rest as one smaller block
of static shape after the loop. A matmul's right operand and a broadcast column vector are loaded
whole, once, before the loop, and one-row values used only as broadcast column vectors
(``pl.col_expand_mul(x, gamma * s)``) are computed there too. A column reduction (``col_sum``,
``col_max``) whose result is only stored runs whole while that fits, else over the row blocks:
each block's partial result is joined into a running ``[1, C]`` tile the loop carries, stored
after the loop. A column reduction that other ops use (``x / col_max(x)``) runs whole while
that fits, else in phases: a loop that accumulates it over the row blocks, then a loop for the
rest reading the ``[1, C]`` result as a broadcast row (one more loop per reduction that needs an
earlier one, as a variance needs the mean). A 2-D reshape blocks by whole rows of both sides
(each value has a row scale: rows per row of the loop). A transpose, or a reshape no block of
whole rows fits, makes its region run whole; one that overruns then says so at that op. A slice
of a global tensor (``a[:, k0:k0 + 128]``) is a view: its uses load from the tensor at the
slice's offsets. An atomic ``assemble`` becomes ``tile.store_atomic``.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar

from pypto.ir import (
    INDEX,
    Assign,
    AtomicType,
    Call,
    CastMode,
    Const,
    DataType,
    DimExpr,
    DynDim,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    LoopKind,
    MemoryBudgetError,
    MemorySpace,
    ParseError,
    Program,
    ScalarType,
    SourceSpan,
    SplitAivRegion,
    Stmt,
    Target,
    TensorType,
    TileType,
    TupleExpr,
    Var,
    make_call,
)
from pypto.ir.extents import is_symbolic
from pypto.ir.nodes import (
    While,
    nested_bodies,
    stmt_end_exprs,
    stmt_exprs,
    used_vars,
    walk_expr,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import (
    Broadcast,
    Effect,
    GmAccess,
    Level,
    Lowers,
    OpSpec,
    PadValue,
    Positional,
    Reduction,
    RowShared,
    Unit,
    WholeRegion,
    get_op,
    tensor,
    trait_of,
)
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.rewrite import NameGen, index_add, index_tuple, map_functions, scalar_call
from pypto.ir.valid import result_valid
from pypto.passes.allocate import AUTO_PIPELINED
from pypto.passes.fit import double_buffered, fits_alone, overruns
from pypto.passes.manager import PassContext
from pypto.passes.observers import anchored, is_observer, observe_tiles, place_observers
from pypto.passes.options import option

# The kernel attribute naming the params that are homes the compiler made (pypto.passes.carried).
HOMES = "homes"

# The tensor ops that make a view: a window of a tensor, or the tensor with a valid shape.
VIEW_OPS = frozenset({tensor.slice, tensor.set_validshape})
# The tensor ops that write a tensor of global memory (their operand 0).
GM_WRITES = frozenset({tensor.assemble, tensor.scatter_update})


def is_tensor_stmt(stmt: Stmt) -> bool:
    """A statement the pass lowers: a tensor-level compute op or a write into a tensor."""
    if not isinstance(stmt, (Assign, Eval)) or not isinstance(stmt.value, Call):
        return False
    op = stmt.value.op
    return get_op(op).level is Level.TENSOR and op != tensor.create


def _region_views(region: list[Stmt], known: Mapping[Var, tuple[Stmt, ...]]) -> dict[Var, tuple[Stmt, ...]]:
    """The views of global memory ``region`` makes, each with the statements that make it (those
    of the view it is a window of first)."""
    made: dict[Var, tuple[Stmt, ...]] = {}
    defs = _region_defs(region)
    for stmt in region:
        if not isinstance(stmt, Assign) or stmt.value.op not in VIEW_OPS:  # type: ignore[attr-defined]
            continue
        source = stmt.value.args[0]  # type: ignore[attr-defined]
        if source in made or source in known:
            made[stmt.target] = (*(made.get(source) or known[source]), stmt)
        elif source not in defs:
            made[stmt.target] = (stmt,)
    return made


def _views_read(stmt: Stmt, known: Mapping[Var, tuple[Stmt, ...]], region: list[Stmt]) -> list[Stmt]:
    """The statements making the earlier views ``stmt`` reads that ``region`` does not make yet."""
    present = {id(s) for s in region}
    found: list[Stmt] = []
    for v in used_vars(_call_of(stmt)):
        for made in known.get(v, ()):
            if id(made) not in present:
                present.add(id(made))
                found.append(made)
    return found


def regions_of(body: tuple[Stmt, ...]) -> list[list[int]]:
    """The regions of one block of statements, as the pass groups them: the positions of each
    run of tensor statements, which index arithmetic and debug prints between them do not end."""
    regions: list[list[int]] = []
    current: list[int] = []
    for k, stmt in enumerate(body):
        if is_tensor_stmt(stmt):
            current.append(k)
        elif current and not is_observer(stmt) and not _index_arithmetic(stmt, [body[i] for i in current]):
            regions.append(current)
            current = []
    return [*regions, current] if current else regions


def _index_arithmetic(stmt: Stmt, region: list[Stmt]) -> bool:
    """A scalar computed from scalars alone (``k0 = kb * 128``), reading nothing the region
    computes and no memory: it may run before the region, which then continues past it."""
    if not (isinstance(stmt, Assign) and isinstance(stmt.target.type, ScalarType)):
        return False
    defined = set(_region_defs(region))
    for e in walk_expr(stmt.value):
        if isinstance(e, Var) and (e in defined or not isinstance(e.type, ScalarType)):
            return False
        if isinstance(e, Call) and (get_op(e.op).level is not Level.SCALAR or get_op(e.op).has(GmAccess)):
            return False
    return True


def _lowered(call: Call) -> str:
    """The tile op a tensor op becomes on each block (its ``Lowers`` trait)."""
    lowers = trait_of(call, Lowers)
    assert lowers is not None, call.op
    return lowers.to


def _runs_whole(call: Call) -> bool:
    """Ops that combine or move elements across rows: their region runs whole (a reinterpret
    whose shape moves bytes into other rows among them)."""
    if call.op == tensor.reinterpret_view:
        src, dst = call.args[0].type, call.type
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        return len(src.shape) != len(dst.shape) or src.shape[0] != dst.shape[0]
    return get_op(call.op).has(WholeRegion)


def _block_attrs(call: Call, args: tuple[Expr, ...]) -> Mapping[str, Any]:
    """The tile op's attrs on one block: a reinterpret's explicit shape takes the block's rows."""
    if call.op != tensor.reinterpret_view or "shape" not in call.attrs:
        return call.attrs
    rows = args[0].type.shape[0]  # type: ignore[attr-defined]
    return {**call.attrs, "shape": (rows, *call.attrs["shape"][1:])}


def _shared_operands(call: Call) -> tuple[int, ...]:
    """The operands loaded whole, once before the row loop: a matmul's right operand (and bias
    row), a row vector broadcast down the rows (``RowShared``)."""
    if call.op == tensor.batch_matmul:  # an operand with fewer dims is one matrix for every batch
        rank = len(call.type.shape)  # type: ignore[attr-defined]
        return tuple(i for i, a in enumerate(call.args) if len(a.type.shape) < rank)  # type: ignore[attr-defined]
    shared = trait_of(call, RowShared)
    return shared.operands if shared is not None else ()


def _column_reduction_of(call: Call) -> Reduction | None:
    """A column reduction whose blocks' results an elementwise op joins (an index of a column's
    extremum has no such join: its region runs whole)."""
    reduction = trait_of(call, Reduction)
    joins = reduction is not None and reduction.axis == 0 and reduction.join is not None
    return reduction if joins else None


def _needs_scratch(call: Call, lowered: OpSpec, given: int) -> bool:
    """Whether the tile op ``call`` becomes takes a scratch tile after its ``given`` operands: one
    it must have (a row reduction's), or the optional one of a precise path the tensor op asks for
    with ``high_precision=True`` (``pl.rsqrt``)."""
    if len(lowered.operands) <= given or lowered.operands[given].effect is not Effect.NONE:
        return False
    return not lowered.operands[given].optional or bool(call.attrs.get("high_precision"))


def _is_cube(call: Call) -> bool:
    return get_op(call.op).unit is Unit.CUBE


def _placements(call: Call) -> tuple[tuple[MemorySpace, bool], ...]:
    """(space, row-local) of each operand of the tile op ``call`` becomes: the one space the tile
    op accepts there (Vec otherwise), row-local unless the operand is shared by every row block."""
    shared = _shared_operands(call)
    placements = []
    for i, operand in enumerate(get_op(_lowered(call)).operands):
        spaces = operand.spaces or ()
        space = spaces[0] if len(spaces) == 1 else MemorySpace.Vec
        placements.append((space, i not in shared))
    return tuple(placements)


_VEC_ROWS = (MemorySpace.Vec, True)
ROW_LOOP_STAGES = 4  # the row loops the pass makes are double-buffered where memory allows


@dataclass(frozen=True)
class RowPlan:
    """What a region computes besides its row blocks: ``once``, one-row values made before the
    loop; ``summed``, column reductions accumulated over the blocks and stored after the loop."""

    once: frozenset[Var] = frozenset()
    summed: frozenset[Var] = frozenset()
    # Rows of each value per row of the loop, where a reshape changes them (1 elsewhere).
    scales: Mapping[Var, Fraction] = field(default_factory=dict)

    @classmethod
    def of(cls, region: list[Stmt]) -> RowPlan:
        return cls(
            frozenset(broadcast_rows(region)), frozenset(column_reductions(region)), row_scales(region)
        )

    def unit(self) -> int:
        """The loop's row blocks are multiples of this: every value's block is whole rows."""
        return math.lcm(1, *(scale.denominator for scale in self.scales.values()))


# Tile row reductions take a scratch tile shaped like their operand.


@dataclass(frozen=True)
class ConvertTensorToTileOps:
    name: ClassVar[str] = "ConvertTensorToTileOps"
    pipeline_name: ClassVar[str] = "tensor-to-tile"
    max_block_rows: int = option(128, help="the most rows a block of a tiled region takes", minimum=1)

    def run(self, program: Program, ctx: PassContext) -> Program:
        return map_functions(program, (FunctionKind.InCore,), lambda fn: self.convert(fn, ctx.target))

    def convert(self, fn: Function, target: Target) -> Function:
        _reject_carried_tensors(fn)
        names = NameGen.for_function(fn)
        users = {s.var.name for s in walk_stmts(fn.body) if isinstance(s, For)}
        body = self._block(fn.body, fn, names, target)
        made = sorted(
            s.var.name
            for s in walk_stmts(body)
            if isinstance(s, For) and s.kind is LoopKind.pipeline and s.var.name not in users
        )
        attrs = {**fn.attrs, AUTO_PIPELINED: [*fn.attrs.get(AUTO_PIPELINED, ()), *made]} if made else fn.attrs
        return replace(fn, body=body, attrs=attrs)

    def _block(
        self,
        body: tuple[Stmt, ...],
        fn: Function,
        names: NameGen,
        target: Target,
        views: Mapping[Var, tuple[Stmt, ...]] | None = None,
    ) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        region: list[Stmt] = []
        lowered_values: dict[Var, Call] = {}  # tensor values that became tiles of an earlier region
        # Views of global memory made by earlier regions (or around this block), with the statements
        # that make them: a later region that reads one makes it again (a view emits no op).
        known_views: dict[Var, tuple[Stmt, ...]] = dict(views or {})

        observers: list[
            tuple[Stmt, str | None]
        ] = []  # debug prints of the open region, placed once it is lowered

        def flush() -> None:
            for stmt in region:
                _reject_uses(stmt, lowered_values)
            lowered = self._parts(independent_parts(region), fn, names, target)
            out.extend(place_observers(lowered, observers, frozenset(_region_defs(region))))
            observers.clear()
            made = _region_views(region, known_views)
            known_views.update(made)
            lowered_values.update({v: c for v, c in _region_defs(region).items() if v not in made})
            region.clear()

        for stmt in body:
            if is_observer(stmt):
                if region:  # it must not cut the region in two: it shows the region's tiles
                    observers.append(anchored(stmt, region[-1]))
                else:
                    out.append(observe_tiles(stmt, out))
                continue
            if is_tensor_stmt(stmt):
                region.extend(_views_read(stmt, known_views, region))
                region.append(stmt)
                continue
            if region and _index_arithmetic(stmt, region):
                out.append(stmt)  # runs before the region, which it does not need: the region goes on
                continue
            if region:
                flush()
            _reject_uses(stmt, lowered_values)
            if isinstance(stmt, (For, While, SplitAivRegion, If)):
                bodies = tuple(self._block(b, fn, names, target, known_views) for b in nested_bodies(stmt))
                stmt = with_bodies(stmt, bodies)
            else:  # only tensor-level ops read a view
                _reject_uses(stmt, {v: _call_of(made[-1]) for v, made in known_views.items()})
            out.append(stmt)
        if region:
            flush()
        return tuple(out)

    def _parts(self, parts: list[list[Stmt]], fn: Function, names: NameGen, target: Target) -> list[Stmt]:
        """Each part tiled on its own, in program order. The parts run one after the other, but a
        ring one of them reserves stays reserved for all: so each part is first sized alone, then
        again beside the others as sized so far (parts with cube work, which set the rings, first)."""
        lowered = {i: self._region(part, fn, names, target, []) for i, part in enumerate(parts)}
        if len(parts) > 1:
            for i in sorted(range(len(parts)), key=lambda k: not _has_cube_work(parts[k])):
                beside = [stmt for k in sorted(lowered) if k != i for stmt in lowered[k]]
                lowered[i] = self._region(parts[i], fn, names, target, beside)
        return [stmt for i in sorted(lowered) for stmt in lowered[i]]

    def _region(
        self,
        region: list[Stmt],
        fn: Function,
        names: NameGen,
        target: Target,
        beside: list[Stmt],
        seeds: dict[Var, Var] | None = None,
    ) -> list[Stmt]:
        """The region tiled. One whose column reductions feed its other ops runs whole while that
        fits; else (or over a run-time row count) in phases, each a loop over the row blocks."""
        seeds = seeds or {}
        if used_column_reductions(region):
            if not _has_dynamic_extent(region):
                trial_names = copy.deepcopy(names)
                whole = _RegionLowering(
                    region, None, None, trial_names, target, seeds=seeds, homes=_homes_of(fn)
                ).lower()
                if fits_alone([*beside, *whole], fn, target):
                    names.taken = trial_names.taken
                    return whole
            return self._phased(region, fn, names, target, beside, seeds)
        return self._sized(region, fn, names, target, beside, seeds).lowered

    def _phased(
        self,
        region: list[Stmt],
        fn: Function,
        names: NameGen,
        target: Target,
        beside: list[Stmt],
        seeds: dict[Var, Var],
    ) -> list[Stmt]:
        """A region whose column reductions feed its other ops, as loops over the row blocks one
        after the other: each accumulates the column reductions that need no other one still to
        come (``x - col_sum(x) / n`` first sums ``x``; a variance then sums the squared
        deviations), and the last computes the rest with the ``[1, C]`` results as broadcast rows
        loaded once. A value both phases read (``x``) is loaded again by the second: a row block
        is not kept on chip across loops (that is what overran the budget)."""
        seeds = dict(seeds)
        done: list[Stmt] = []
        remaining = list(region)
        while level := _next_level(remaining):
            phase = _phase_of(remaining, level)
            # A phase streams its rows even where it would fit whole: the next one loads them again.
            # Values a later phase computes again are new tiles there, with names of their own.
            attempt = self._sized(
                phase, fn, names, target, [*beside, *done], seeds, whole_if_fits=False, fresh=bool(done)
            )
            done.extend(attempt.lowered)
            seeds.update({v: attempt.sums[v] for v in level})
            remaining = _live([s for s in remaining if not _computes_or_stores(s, level)])
        for part in independent_parts(remaining):
            done.extend(self._sized(part, fn, names, target, [*beside, *done], seeds, fresh=True).lowered)
        return done

    def _sized(
        self,
        region: list[Stmt],
        fn: Function,
        names: NameGen,
        target: Target,
        beside: list[Stmt],
        seeds: dict[Var, Var],
        whole_if_fits: bool = True,
        fresh: bool = False,
    ) -> Attempt:
        """The region lowered in the largest row blocks that fit beside ``beside``; ``seeds`` are
        ``[1, C]`` values earlier loops computed (as tiles), read here as broadcast rows. Column
        reductions only stored run whole while that fits (``whole_if_fits``)."""
        plan = RowPlan.of(region)
        rows = _block_rows(region, plan)
        _check_dynamic(region, rows)
        if is_symbolic(rows):
            return self._dynamic_rows(region, rows, fn, names, target, beside, plan, seeds, fresh)

        def whole() -> Attempt:
            trial_names = copy.deepcopy(names)
            # Its column reductions keep their tiles by name (``sums``) for a later phase.
            only_sums = RowPlan(summed=plan.summed)
            lowering = _RegionLowering(
                region,
                None,
                None,
                trial_names,
                target,
                only_sums,
                fresh_names=fresh,
                seeds=seeds,
                homes=_homes_of(fn),
            )
            lowered = lowering.lower()
            fits = fits_alone([*beside, *lowered], fn, target)
            return Attempt(rows or 0, lowered, trial_names, fits, lowering.sums)

        if plan.summed and rows is not None and whole_if_fits:
            # A column reduction runs whole while that fits; else over the row blocks.
            trial = whole()
            if trial.fits:
                names.taken = trial.names.taken
                return trial
        unit = plan.unit()
        if rows is None or unit > min(rows, self.max_block_rows):
            trial = whole()
            if not trial.fits:
                _explain_whole(region, plan, rows, fn, target, trial.lowered, self.max_block_rows)
            names.taken = trial.names.taken
            return trial

        def attempt(block: int) -> Attempt:
            trial_names = copy.deepcopy(names)
            lowered, sums = _blocked(
                region, block, rows, trial_names, target, plan, seeds, fresh, _homes_of(fn)
            )
            return Attempt(block, lowered, trial_names, fits_alone([*beside, *lowered], fn, target), sums)

        divisors = [
            d for d in range(min(rows, self.max_block_rows), 0, -1) if rows % d == 0 and d % unit == 0
        ]
        largest = attempt(divisors[0])
        chosen = largest if largest.fits else _largest_fitting(divisors[1:], attempt)
        if chosen is None or chosen.count(rows) > UNEVEN_WORTH:
            # No divisor fits, or only a small one (a prime row count): blocks of ceil(rows / n)
            # rows, the last one smaller, may need far fewer iterations.
            blocks = [
                b for b in row_blocks(rows, self.max_block_rows) if b % unit == 0 and rows % b % unit == 0
            ]
            uneven = _largest_fitting(blocks, attempt)
            if uneven is not None and (chosen is None or 2 * uneven.count(rows) <= chosen.count(rows)):
                chosen = uneven
        chosen = chosen or largest  # nothing fits: the largest blocks name the overrun
        chosen = _double_buffered_or(rows, chosen, divisors, attempt, fn, target, beside)
        names.taken = chosen.names.taken
        return chosen

    def _dynamic_rows(
        self,
        region: list[Stmt],
        rows: DynDim | DimExpr,
        fn: Function,
        names: NameGen,
        target: Target,
        beside: list[Stmt],
        plan: RowPlan,
        seeds: dict[Var, Var],
        fresh: bool,
    ) -> Attempt:
        """A region over a run-time row count: a loop over blocks of the largest row count that
        fits the budgets (a static bound: the tile shape), whose last block may be partial and runs
        with a run-time valid shape."""

        def attempt(block: int) -> Attempt:
            trial_names = copy.deepcopy(names)
            lowering = _RegionLowering(
                region,
                block,
                rows,
                trial_names,
                target,
                plan,
                fresh_names=fresh,
                seeds=seeds,
                homes=_homes_of(fn),
            )
            lowered = lowering.lower()
            fits = fits_alone([*beside, *lowered], fn, target)
            return Attempt(block, lowered, trial_names, fits, lowering.sums)

        candidates = list(range(self.max_block_rows, 0, -1))
        chosen = _largest_fitting(candidates, attempt) or attempt(candidates[0])
        names.taken = chosen.names.taken
        return chosen


def _explain_whole(
    region: list[Stmt],
    plan: RowPlan,
    rows: int | None,
    fn: Function,
    target: Target,
    whole: list[Stmt],
    limit: int,
) -> None:
    """A region that must run whole and does not fit: say which op makes it run whole, and why it
    cannot be cut into row blocks, rather than only that the scope is over budget."""
    if not overruns(whole, fn, target):
        return  # it fits alone: the parts beside it are what is too big, the allocator says so
    for stmt in region:
        call = _call_of(stmt)
        scaled = isinstance(stmt, Assign) and stmt.target in plan.scales
        if not _runs_whole(call) or (scaled and rows is None):
            continue  # a reshape of whole rows blocks: another op made the region run whole
        src = call.args[0].type
        assert isinstance(src, TensorType)
        why, hint = _why_whole(call, scaled, limit)
        raise MemoryBudgetError(
            f"{call.op} of a [{', '.join(str(d) for d in src.shape)}] tensor makes its scope run "
            f"whole, which needs more on-chip memory than {target.name} has: {why}",
            stmt.span,
            hint,
        )


def _why_whole(call: Call, scaled: bool, limit: int) -> tuple[str, str]:
    """Why ``call`` cannot run over row blocks, and what to write instead."""
    if call.op == tensor.transpose:
        return (
            "a block of its rows is a block of columns of the result, and the scope does not tile by columns",
            "transpose in blocks yourself: store pl.transpose(pl.load(x, [r, c], [R, C])) at [c, r]",
        )
    if call.op == tensor.reshape and scaled:
        return (
            f"no block of at most {limit} whole rows of the source is whole rows of the result",
            "reshape to a shape whose rows hold whole rows of the source (or few enough source rows "
            "make one row of the result), or reshape blocks yourself",
        )
    if call.op == tensor.reshape:
        return (
            "only a reshape of a 2-D tensor of static extents into one is cut into blocks of whole rows",
            "reshape between 2-D shapes, or reshape blocks yourself with pl.load / pl.reshape / pl.store",
        )
    return (
        "it combines the rows of its operand",
        "write the loop over row blocks yourself with pl.load / pl.store",
    )


def _has_dynamic_extent(region: list[Stmt]) -> bool:
    return any(
        is_symbolic(dim)
        for stmt in region
        for x in _call_of(stmt).args
        if isinstance(x.type, TensorType)
        for dim in x.type.shape
    )


def used_column_reductions(region: list[Stmt]) -> set[Var]:
    """Column reductions whose results other ops of the region read (not only stores)."""
    defs = _region_defs(region)
    reduced = {var for var, call in defs.items() if _column_reduction_of(call) is not None}
    return reduced - column_reductions(region)


def _ancestors(region: list[Stmt], of: set[Var]) -> set[Var]:
    """``of`` and every value of the region they are computed from."""
    defs = _region_defs(region)
    found: set[Var] = set()
    pending = [v for v in of if v in defs]
    while pending:
        v = pending.pop()
        if v in found:
            continue
        found.add(v)
        pending.extend(a for a in used_vars(defs[v]) if a in defs)
    return found


def _next_level(region: list[Stmt]) -> set[Var]:
    """The used column reductions computed from no other one of the region: the next phase's."""
    used = used_column_reductions(region)
    return {v for v in used if not (_ancestors(region, {v}) - {v}) & used}


def _computes_or_stores(stmt: Stmt, values: set[Var]) -> bool:
    if isinstance(stmt, Assign):
        return stmt.target in values
    call = _call_of(stmt)
    return call.op == tensor.assemble and call.args[1] in values


def _phase_of(region: list[Stmt], level: set[Var]) -> list[Stmt]:
    """The statements that compute (and store) ``level``'s column reductions, in program order."""
    needed = _ancestors(region, level)
    return [
        s for s in region if (isinstance(s, Assign) and s.target in needed) or _computes_or_stores(s, level)
    ]


def _live(region: list[Stmt]) -> list[Stmt]:
    """The region without the values nothing left reads (what only an earlier phase needed)."""
    writes = [s for s in region if not isinstance(s, Assign)]
    needed = _ancestors(region, {v for s in writes for v in used_vars(_call_of(s))})
    return [s for s in region if not isinstance(s, Assign) or s.target in needed]


def _check_dynamic(region: list[Stmt], rows: int | DynDim | DimExpr | None) -> None:
    """Tensor ops are tiled over a dynamic extent only along rows: a region whose tensors have a
    dynamic extent elsewhere, or that must run whole, cannot give its tiles a static shape."""
    for stmt in region:
        if _call_of(stmt).op in VIEW_OPS:
            continue  # a view's rows count where it is used
        for x in (*_tiled_operands(_call_of(stmt)), *([stmt.target] if isinstance(stmt, Assign) else [])):
            t = x.type
            if not isinstance(t, TensorType):
                continue
            for axis, dim in enumerate(t.shape):
                if not is_symbolic(dim) or (axis == 0 and rows == dim):
                    continue
                where = "its rows are combined (it runs whole)" if rows is None else f"dim {axis}"
                raise ParseError(
                    f"{_call_of(stmt).op} on a tensor with the dynamic extent {dim!r} in dim {axis} "
                    f"cannot be tiled: tiles have static shapes, and only the rows of a region are "
                    f"blocked at run time ({where})",
                    stmt.span,
                    "make the dynamic extent the rows (dim 0) of the tensors of the scope, or write "
                    "the loop yourself: pl.range(0, M, 64) with pl.load(..., valid_shape=[...])",
                )


def _tiled_operands(call: Call) -> tuple[Expr, ...]:
    """The operands of ``call`` that become tiles of their own shape: not the tensor a slice reads
    a region of, nor the one an assemble writes a region into (a region of static extents at
    run-time offsets of a dynamic tensor is a tile like any other)."""
    if call.op in (tensor.slice, tensor.assemble, tensor.scatter_update):
        return call.args[1:]
    if call.op == tensor.paged_gather:
        return ()  # read element by element and row by row, never as tiles of their own
    return call.args


def _reject_carried_tensors(fn: Function) -> None:
    """A loop inside a kernel carries tiles and scalars. A tensor a loop inside a ``pl.at`` scope
    carries already lives in memory (pypto.passes.carried); one left here (a loop with a break or
    continue, or a hand-written InCore function) is not tiled."""
    for stmt in walk_stmts(fn.body):
        if isinstance(stmt, If):
            _reject_tensor_results(stmt)
        if not isinstance(stmt, (For, While)):
            continue
        for var in stmt.iter_args:
            if isinstance(var.type, TensorType):
                raise ParseError(
                    f"'{var.name}' is a loop-carried tensor inside a scope, which the compiler does not tile",
                    stmt.span,
                    "carry a tile instead: load the block with pl.load(...) and update it with tile ops",
                )


def _reject_tensor_results(stmt: If) -> None:
    """A value leaving an if inside a scope is a tile or a scalar; a tensor is not tiled."""
    for var in stmt.results:
        if isinstance(var.type, TensorType):
            raise ParseError(
                f"'{var.name}' is a tensor leaving an if inside a scope, which the compiler does not tile",
                stmt.span,
                "let a tile leave the if instead: load the block with pl.load(...) before the if and "
                "compute on tiles in its arms, or store into the output inside each arm",
            )


def independent_parts(region: list[Stmt]) -> list[list[Stmt]]:
    """The region split into parts that share nothing: no value one computes is used by another,
    and no tensor one writes is touched by another. Each part keeps its statements' order and is
    tiled on its own, so a ``[1, C]`` computation beside a ``[200, C]`` one does not make the
    whole region run unblocked. Parts come in the order of their first statements."""
    parent = list(range(len(region)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(i: int, j: int) -> None:
        parent[root(i)] = root(j)

    defined = {s.target: i for i, s in enumerate(region) if isinstance(s, Assign)}
    written = {s.value.args[0] for s in region if s.value.op in GM_WRITES}  # type: ignore[attr-defined]
    touching: dict[Var, int] = {}
    for i, stmt in enumerate(region):
        for v in used_vars(stmt.value):  # type: ignore[attr-defined]
            if v in defined:
                join(i, defined[v])
            elif v in written:
                join(i, touching.setdefault(v, i))
    parts: dict[int, list[Stmt]] = {}
    for i, stmt in enumerate(region):
        parts.setdefault(root(i), []).append(stmt)
    return list(parts.values())


def _has_cube_work(part: list[Stmt]) -> bool:
    return any(_is_cube(s.value) for s in part)  # type: ignore[attr-defined]


def row_blocks(rows: int, limit: int) -> list[int]:
    """Block sizes to try, largest first: for n blocks, ``ceil(rows / n)`` rows each, at most
    ``limit`` (the last block takes what is left, so a prime row count still streams evenly)."""
    blocks: list[int] = []
    for n in range(1, rows + 1):
        block = -(-rows // n)
        if block <= limit and (not blocks or block < blocks[-1]):
            blocks.append(block)
    return blocks


UNEVEN_WORTH = 4  # blocks of the largest fitting divisor beyond which uneven blocks are tried


@dataclass(frozen=True)
class Attempt:
    """A region lowered in blocks of ``block`` rows, and whether that fits the kernel's budget."""

    block: int
    lowered: list[Stmt]
    names: NameGen
    fits: bool
    sums: dict[Var, Var] = field(default_factory=dict)  # each column reduction's tile after the loop

    def count(self, rows: int) -> int:
        return -(-rows // self.block)


def _double_buffered_or(
    rows: int,
    chosen: Attempt,
    divisors: list[int],
    attempt: Callable[[int], Attempt],
    fn: Function,
    target: Target,
    beside: list[Stmt],
) -> Attempt:
    """``chosen``, or blocks of at least half its rows when only those leave room for the row
    loop's second stage: a transfer that overlaps the compute before it is worth more than
    blocks twice as large that wait for each other (the loop runs twice as many iterations,
    each half as long)."""
    if not chosen.fits or chosen.block >= rows or double_buffered([*beside, *chosen.lowered], fn, target):
        return chosen  # (one block: no loop to overlap)
    for block in (d for d in divisors if chosen.block // 2 <= d < chosen.block):
        trial = attempt(block)
        if trial.fits and double_buffered([*beside, *trial.lowered], fn, target):
            return trial
    return chosen


def _largest_fitting(candidates: list[int], attempt: Callable[[int], Attempt]) -> Attempt | None:
    """The attempt of the largest block in ``candidates`` (descending) that fits: a binary search,
    since a smaller block never needs more memory than a larger one."""
    found: Attempt | None = None
    lo, hi = 0, len(candidates) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = attempt(candidates[mid])
        if trial.fits:
            found, hi = trial, mid - 1
        else:
            lo = mid + 1
    return found


def _blocked(
    region: list[Stmt],
    block: int,
    rows: int,
    names: NameGen,
    target: Target,
    plan: RowPlan,
    seeds: dict[Var, Var],
    fresh: bool,
    homes: frozenset[Var],
) -> tuple[list[Stmt], dict[Var, Var]]:
    """The region lowered in blocks of ``block`` rows: a loop over the whole blocks, then the rest
    of the rows as one smaller block (static shapes, no run-time valid shape), which continues the
    loop's column reductions."""
    rest = rows % block
    head = _RegionLowering(
        region,
        block,
        rows - rest,
        names,
        target,
        plan,
        last=not rest,
        fresh_names=fresh,
        seeds=seeds,
        homes=homes,
    )
    lowered = head.lower()
    if not rest:
        return lowered, head.sums
    start = Const(rows - rest, INDEX)
    tail = _RegionLowering(
        region,
        rest,
        rest,
        names,
        target,
        plan,
        fresh_names=True,
        row=start,
        summed_so_far=head.sums,
        seeds=seeds,
        homes=homes,
    )
    return lowered + tail.lower(), tail.sums


def _homes_of(fn: Function) -> frozenset[Var]:
    """The kernel's homes (pypto.passes.carried): tensors it reads and writes on the vector lanes
    only, so that no write of the cube races a read of a lane."""
    named = set(fn.attrs.get(HOMES, ()))
    return frozenset(p.var for p in fn.params if p.var.name in named)


def _region_defs(region: list[Stmt]) -> dict[Var, Call]:
    return {s.target: s.value for s in region if isinstance(s, Assign) and isinstance(s.value, Call)}


def broadcast_rows(region: list[Stmt]) -> set[Var]:
    """Values the region computes once, whole, before its row loop: one-row values (a ``[1, C]``
    gamma scaled, negated, ...) made only from one-row tensors and each other, and read only as
    the column vector of ``col_expand`` / ``col_expand_mul`` or by other such values."""
    defs = _region_defs(region)
    found: set[Var] = set()
    changed = True
    while changed:
        changed = False
        for var, call in defs.items():
            if var in found or not _one_row(var) or _runs_whole(call) or _shared_operands(call):
                continue
            sources = [a for a in call.args if isinstance(a.type, TensorType)]
            if call.op in VIEW_OPS or not all(_one_row(a) and (a in found or a not in defs) for a in sources):
                continue
            if all(_reads_as_broadcast(_call_of(stmt), var, found) for stmt in region if _reads(stmt, var)):
                found.add(var)
                changed = True
    return found


def column_reductions(region: list[Stmt]) -> set[Var]:
    """Column reductions (``col_sum``, ``col_max``) whose results the region only stores: they can
    run over the row blocks, each block's partial result joined into a running one."""
    defs = _region_defs(region)
    reduced = {var for var, call in defs.items() if _column_reduction_of(call) is not None}
    for stmt in region:
        call = _call_of(stmt)
        for i, a in enumerate(call.args):
            if a in reduced and not (call.op == tensor.assemble and i == 1):
                reduced.discard(a)
    return reduced


def row_scales(region: list[Stmt]) -> dict[Var, Fraction]:
    """Rows of each value per row of the region's loop, where reshapes of whole rows change them:
    ``[4096, 128] -> [2048, 256]`` gives its result half as many rows per block. Empty (every
    value 1) when the region has no such reshape; values of another scale stay out (a reshape
    that is not of 2-D static tensors makes the region run whole)."""
    scales: dict[Var, Fraction] = {}
    for stmt in region:
        call = _call_of(stmt)
        if call.op != tensor.reshape or not isinstance(stmt, Assign):
            continue
        src, dst = call.args[0].type, stmt.target.type
        if not (_static_2d(src) and _static_2d(dst)):
            continue
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        source_scale = scales.get(call.args[0], Fraction(1)) if isinstance(call.args[0], Var) else Fraction(1)
        scales[stmt.target] = source_scale * Fraction(dst.shape[0], src.shape[0])
        _follow_scale(region, stmt.target, scales)
    return scales if any(s != 1 for s in scales.values()) else {}


def _follow_scale(region: list[Stmt], start: Var, scales: dict[Var, Fraction]) -> None:
    """Values computed row by row from ``start`` (and the tensors they read) take its scale."""
    for stmt in region:
        call = _call_of(stmt)
        if call.op == tensor.reshape or not any(a is start or a in scales for a in call.args):
            continue
        scale = next(scales[a] for a in call.args if isinstance(a, Var) and a in scales)
        for a in (*call.args, *([stmt.target] if isinstance(stmt, Assign) else [])):
            if isinstance(a, Var) and isinstance(a.type, TensorType) and a not in scales and _is_2d(a):
                scales[a] = scale


def _static_2d(t: object) -> bool:
    return isinstance(t, TensorType) and len(t.shape) == 2 and all(isinstance(d, int) for d in t.shape)


def _is_2d(x: Var) -> bool:
    return isinstance(x.type, TensorType) and len(x.type.shape) == 2


def _call_of(stmt: Stmt) -> Call:
    """The op call a region statement makes (``is_tensor_stmt`` admits no other statement)."""
    assert isinstance(stmt, (Assign, Eval)) and isinstance(stmt.value, Call)
    return stmt.value


def _one_row(x: Expr) -> bool:
    return isinstance(x.type, TensorType) and len(x.type.shape) == 2 and x.type.shape[0] == 1


def _reads(stmt: Stmt, var: Var) -> bool:
    return any(a is var for a in _call_of(stmt).args)


def _reads_as_broadcast(call: Call, var: Var, found: set[Var]) -> bool:
    """``call`` reads ``var`` only as its broadcast column vector, stores it (once, before the
    loop), or is one-row work itself (then it must end up in ``found`` too for ``var`` to count:
    checked as the fixpoint grows)."""
    if call.op == tensor.assemble:
        return True
    whole = _shared_operands(call)
    broadcast = trait_of(call, Broadcast)
    if broadcast is not None and broadcast.axis == 0:
        return all(a is not var or i in whole for i, a in enumerate(call.args))
    return call.op != tensor.assemble and all(
        _one_row(a) for a in call.args if isinstance(a.type, TensorType)
    )


def _block_rows(region: list[Stmt], plan: RowPlan) -> int | DynDim | DimExpr | None:
    """The common row count of the region's row-local values, or None if it cannot be tiled.
    The plan's one-row values are computed before the row loop and do not count; nor do the
    column reductions it accumulates (their operands do)."""
    defs = _region_defs(region)
    row_counts: set[int | DynDim | DimExpr] = set()
    for stmt in region:
        call = _call_of(stmt)
        if isinstance(stmt, Assign) and stmt.target in plan.once:
            continue
        blocked_reshape = (
            call.op == tensor.reshape and isinstance(stmt, Assign) and stmt.target in plan.scales
        )
        operands = (call.args[0],) if blocked_reshape else _row_operands(call, defs, plan)
        if operands is None:
            return None
        if isinstance(stmt, Assign) and call.op not in VIEW_OPS and stmt.target not in plan.summed:
            operands = (*operands, stmt.target)  # a view's rows count where it is used, not here
        for x in operands:
            if isinstance(x.type, TileType):
                return None
            if isinstance(x.type, TensorType):
                rows = _loop_rows(x, x.type, plan)
                if rows is None:
                    return None
                row_counts.add(rows)
    return row_counts.pop() if len(row_counts) == 1 else None


def _loop_rows(x: Expr, t: TensorType, plan: RowPlan) -> int | DynDim | DimExpr | None:
    """The rows of the loop over ``x``'s row blocks (a reshaped value's rows over its scale)."""
    rows = t.shape[0]
    scale = plan.scales.get(x, Fraction(1)) if isinstance(x, Var) else Fraction(1)
    if scale == 1 or is_symbolic(rows):
        return rows
    loop_rows = rows / scale
    return int(loop_rows) if loop_rows.denominator == 1 else None


def _row_operands(call: Call, defs: dict[Var, Call], plan: RowPlan) -> tuple[Expr, ...] | None:
    """The operands of ``call`` blocked by rows with its result; None if the region must run whole."""
    if _column_reduction_of(call) and any(v in plan.summed and d is call for v, d in defs.items()):
        return (call.args[0],)
    if _runs_whole(call):
        return None
    if call.op == tensor.assemble:
        return () if call.args[1] in plan.summed | plan.once else (call.args[1],)
    if call.op == tensor.scatter_update:
        return call.args[1:]  # the index and the rows; the tensor written is not tiled
    if call.op in VIEW_OPS and _is_view(call.args[0], defs):
        return ()
    if call.op == tensor.set_validshape:
        return (call.args[0],)
    if call.op == tensor.slice:
        return (call.args[0],) if _whole_rows(call) else None
    whole = _shared_operands(call)
    if not whole:
        return call.args
    if call.attrs.get("a_trans") or not all(
        _is_view(call.args[w], defs) or call.args[w] in plan.once for w in whole
    ):
        return None
    return tuple(a for i, a in enumerate(call.args) if i not in whole)


def _whole_rows(call: Call) -> bool:
    """A slice that keeps every row (``x[:, k0:k0 + kb]``): it blocks by rows with its source."""
    offsets = call.args[1]
    assert isinstance(offsets, TupleExpr)
    first = offsets.elements[0]
    source = call.args[0].type
    assert isinstance(source, TensorType)
    return isinstance(first, Const) and first.value == 0 and call.attrs["shape"][0] == source.shape[0]


def _is_view(x: Expr, defs: dict[Var, Call]) -> bool:
    """A tensor read from global memory: a tensor the region does not compute, or a view of one
    (a slice, or one with a valid shape set)."""
    if not isinstance(x, Var) or x not in defs:
        return True
    return defs[x].op in VIEW_OPS and _is_view(defs[x].args[0], defs)


def _reject_uses(stmt: Stmt, lowered_values: dict[Var, Call]) -> None:
    for inner in walk_stmts((stmt,)):
        for expr in (*stmt_exprs(inner), *stmt_end_exprs(inner)):
            for v in used_vars(expr):
                if v in lowered_values:
                    raise _used_after_lowering(v, lowered_values[v], inner.span)


def _used_after_lowering(v: Var, call: Call, span: SourceSpan | None) -> ParseError:
    if call.op == tensor.slice:
        return ParseError(
            f"a tensor slice ({v.name}) is a view that only tensor-level ops read; this tile op "
            "takes the tensor itself",
            span,
            "give the op the tensor and the slice's offsets, e.g. pl.load(a, [0, k0], [rows, cols])",
        )
    return ParseError(
        f"{v.name} is the result of a tensor-level op and is used after tile "
        "ops that come between; the compiler cannot keep it on chip",
        span,
        "write it into a tensor first (out[:] = ...) and pl.load it, or keep the tensor-level ops together",
    )


@dataclass
class _RegionLowering:
    region: list[Stmt]
    block: int | None  # rows per block; None: the region runs whole
    rows: int | DynDim | DimExpr | None  # a DynDim: blocks over a run-time row count, the last one partial
    names: NameGen
    target: Target
    plan: RowPlan = field(default_factory=RowPlan)
    last: bool = True  # the last copy of the region: it stores the column reductions
    fresh_names: bool = False  # this is a second copy of the region: its tiles need names of their own
    summed_so_far: dict[Var, Var] = field(default_factory=dict)  # column reductions of earlier rows
    seeds: dict[Var, Var] = field(default_factory=dict)  # [1, C] tiles an earlier loop computed
    homes: frozenset[Var] = frozenset()  # tensors the compiler keeps values in: read and written on Vec
    sums: dict[Var, Var] = field(default_factory=dict)  # each column reduction's value after this copy
    carried: list[tuple[Var, Expr, Expr, Var]] = field(default_factory=list)  # iter_arg, init, yield, result
    after: list[Stmt] = field(default_factory=list)  # after the row loop: stores of column reductions
    tiles: dict[tuple[Var, MemorySpace, bool], Var] = field(default_factory=dict)
    views: dict[Var, tuple[Var, list[Expr]]] = field(default_factory=dict)  # slice -> (tensor, offsets)
    # A view's valid shape (extents from its origin) and pad value, when it has them.
    view_valid: dict[Var, tuple[TupleExpr | None, PadValue | None]] = field(default_factory=dict)
    sum_valid: dict[Var, TupleExpr] = field(default_factory=dict)  # a column reduction's valid columns
    hoisted: list[Stmt] = field(default_factory=list)
    body: list[Stmt] = field(default_factory=list)
    row: Expr = field(default_factory=lambda: Const(0, INDEX))
    valid_rows: Var | None = None  # the rows of this block that are real, for a run-time row count
    # Tiles with a run-time valid shape, followed as the parser follows them (pypto.language's
    # pypto.ir.valid): loads of a partial block make one, ops that keep it pass it on.
    run_time_valid: dict[Expr, TupleExpr] = field(default_factory=dict)

    @property
    def streams_weights(self) -> bool:
        """Several matmuls (a K-blocked chain): load each right operand where it is used rather
        than all of them before the row loop, where they would all be live at once."""
        matmuls = [s for s in self.region if _is_cube(s.value)]  # type: ignore[attr-defined]
        return len(matmuls) > 1

    def lower(self) -> list[Stmt]:
        dynamic = is_symbolic(self.rows)
        looped = (
            self.block is not None
            and self.rows is not None
            and (is_symbolic(self.rows) or self.block < self.rows)
        )
        if looped:
            self.row = Var(self.names.fresh("r"), INDEX)
        if dynamic:
            assert self.block is not None and is_symbolic(self.rows)
            left = make_call(scalar_ops.sub, (self.rows, self.row))
            size = make_call(scalar_ops.min, (Const(self.block, INDEX), left))
            self.valid_rows = self._emit("rows", size, self.body)
        self.defs = _region_defs(self.region)
        for value, tile in self.seeds.items():  # read whole by every block
            self.tiles[(value, MemorySpace.Vec, True)] = tile
            self.tiles[(value, MemorySpace.Vec, False)] = tile
        for stmt in self.region:
            self._stmt(stmt)
        if not looped:
            return self.hoisted + self.body + self.after
        assert isinstance(self.row, Var) and self.rows is not None and self.block is not None
        span = self.region[0].span
        iter_args, inits, yields, results = (tuple(c[k] for c in self.carried) for k in range(4))
        # Double-buffered: each block's buffers take one of two slots where their space has room
        # (AllocateMemory), so the next block's loads overlap this block's compute.
        loop = For(
            self.row,
            Const(0, INDEX),
            self.rows if is_symbolic(self.rows) else Const(self.rows, INDEX),
            Const(self.block, INDEX),
            tuple(self.body),
            kind=LoopKind.pipeline,
            span=span,
            iter_args=iter_args,  # type: ignore[arg-type]
            init_values=inits,
            yields=yields,
            results=results,  # type: ignore[arg-type]
            stage=ROW_LOOP_STAGES,
        )
        return [*self.hoisted, loop, *self.after]

    def _column_reduction(self, target: Var, call: Call) -> None:
        """``target = col_sum(x)`` over the row blocks: this block's partial result joined into the
        running one, carried by the row loop (and on into the last, smaller block, if any)."""
        x = self._operand(call.args[0], _VEC_ROWS, call.span)
        reduction = _column_reduction_of(call)
        assert reduction is not None
        valid = self.run_time_valid.get(x)
        if valid is None and self.valid_rows is not None:
            valid = self._valid_of(x)
        if valid is not None:  # the rows past the end (or the view's) count as the reduction's identity
            padded = make_call(tile_ops.fillpad, (x, valid), {"pad_value": reduction.identity}, call.span)
            x = self._emit(f"{target.name}_padded", padded, self.body)
            self.sum_valid[target] = index_tuple([Const(1, INDEX), *valid.elements[1:]])  # its valid columns
        part = self._emit(f"{target.name}_part", make_call(_lowered(call), (x,), {}, call.span), self.body)
        assert reduction.join is not None  # _column_reduction_of admits joined reductions only
        join = getattr(tile_ops, reduction.join)
        looped = isinstance(self.row, Var)
        before = self.summed_so_far.get(target)
        if before is None and not looped:
            self.sums[target] = part  # the whole column in one block
            self.tiles[(target, MemorySpace.Vec, True)] = part
            return
        if before is None:
            assert isinstance(part.type, TileType)
            before = self._emit(
                f"{target.name}_init", _column_start(part.type, reduction.identity, call.span), self.hoisted
            )
        running = Var(self.names.fresh(f"{target.name}_acc"), before.type, call.span) if looped else before
        joined = self._emit(f"{target.name}_sum", make_call(join, (running, part), {}, call.span), self.body)
        value = joined
        if looped:
            value = Var(self.names.fresh(target.name), before.type, call.span)
            self.carried.append((running, before, joined, value))
        self.sums[target] = value
        self.tiles[(target, MemorySpace.Vec, True)] = value

    # -- statements

    def _stmt(self, stmt: Stmt) -> None:
        call = stmt.value  # type: ignore[attr-defined]
        if call.op == tensor.assemble:
            self._assemble(call, stmt.span)
            return
        if call.op == tensor.scatter_update:
            self._scatter_rows(call, stmt.span)
            return
        assert isinstance(stmt, Assign)
        if call.op == tensor.scatter:
            self._scatter(stmt.target, call)
            return
        if call.op == tensor.paged_gather:
            self._paged_gather(stmt.target, call)
            return
        if call.op in VIEW_OPS and _is_view(stmt.target, self.defs):
            self._view(stmt.target, call)
            return
        if call.op == tensor.slice:
            self._computed_slice(stmt.target, call)
            return
        if call.op == tensor.set_validshape:
            self._computed_valid(stmt.target, call)
            return
        if call.op == tensor.fillpad:
            self._fillpad(stmt.target, call)
            return
        if call.op == tensor.full:
            self._full(stmt.target, call)
            return
        if call.op == tensor.reshape and self.block is not None:
            self._reshaped_block(stmt.target, call)
            return
        if stmt.target in self.plan.summed:
            self._column_reduction(stmt.target, call)
            return
        if call.op == tensor.matmul_acc and _is_view(call.args[0], self.defs):
            self._accumulated_from_memory(stmt.target, call)
            return
        if get_op(call.op).has(Positional):
            self._generated(stmt.target, call)
            return
        once = stmt.target in self.plan.once
        spaces = _placements(call)
        args = tuple(
            self._operand(
                a,
                (MemorySpace.Vec, False) if once else spaces[i] if i < len(spaces) else _VEC_ROWS,
                call.span,
            )
            for i, a in enumerate(call.args)
        )
        # Before the row loop, if there is one (its whole loads are hoisted there too); else in order.
        sink = self.hoisted if once and isinstance(self.row, Var) else self.body
        lowered = get_op(_lowered(call))
        if _needs_scratch(call, lowered, len(args)):
            args = (*args, self._scratch(args[0], sink))  # a row reduction's scratch tile
        unpadded = args
        args = self._padded_for_reduction(lowered.name, args, sink, call.span)
        # The tile op takes the tensor op's attributes it declares (high_precision= becomes the scratch);
        # on a block, a reinterpret's explicit shape takes the block's rows.
        given = _block_attrs(call, args) if self.block is not None else call.attrs
        attrs = {k: v for k, v in given.items() if lowered.attr(k) is not None}
        value = make_call(lowered.name, args, attrs, call.span)
        # A later copy of the region (the last, smaller block) names its tiles afresh.
        name = self.names.fresh(stmt.target.name) if self.fresh_names else stmt.target.name
        tile = Var(name, value.type, stmt.target.span)
        sink.append(Assign(tile, value, stmt.span))
        self._follow_valid(tile, replace(value, args=unpadded))  # a reduction keeps the valid rows
        assert isinstance(value.type, TileType) and value.type.memory_space is not None
        self.tiles[(stmt.target, value.type.memory_space, True)] = tile

    def _generated(self, target: Var, call: Call) -> None:
        """A generator (``pl.arange``, ``pl.random``) on this block: its rows, made from the
        position of the block's first element (the whole result before a row loop when it is
        computed once there)."""
        positional = trait_of(call, Positional)
        assert positional is not None and isinstance(call.type, TensorType)
        shape = tuple(call.type.shape)
        once = target in self.plan.once
        args = list(call.args)
        if positional.operand >= len(args):
            args.append(Const(0, INDEX))
        if self.block is not None and not once:
            shape = (self._block_of(target), *shape[1:])
            shift = self._row_of(target)
            per_row = math.prod(shape[1:])
            if per_row != 1:
                shift = scalar_call(scalar_ops.mul, shift, Const(per_row, INDEX))
            backward = positional.backward is not None and call.attrs.get(positional.backward)
            step = scalar_ops.sub if backward else scalar_ops.add
            args[positional.operand] = scalar_call(step, args[positional.operand], shift)
        made = make_call(_lowered(call), tuple(args), {**call.attrs, "shape": shape}, call.span)
        sink = self.hoisted if once and isinstance(self.row, Var) else self.body
        self.tiles[(target, MemorySpace.Vec, True)] = self._emit(target.name, made, sink)

    def _scatter_rows(self, call: Call, span: SourceSpan | None) -> None:
        """``pl.scatter_update(t, index, rows)`` of a tensor in global memory: this block's rows
        written into ``t`` at this block's indices (``tile.mscatter``)."""
        dst, index, src = call.args
        assert isinstance(dst, Var)
        base, starts = self.views.get(dst, (dst, []))
        if not _is_view(dst, self.defs) or any(not (isinstance(e, Const) and e.value == 0) for e in starts):
            raise ParseError(
                "pl.scatter_update writes rows of a tensor in global memory: its input must be a "
                "kernel parameter (or a tensor made with pl.create_tensor), not a computed value or a window",
                call.span,
                "scatter into the tensor itself; on a computed tile use pl.tile.scatter_update",
            )
        if self.valid_rows is not None:
            raise ParseError(
                "pl.scatter_update over a dynamic number of rows: a partial block would write its "
                "padding rows too",
                call.span,
                "give the rows and the index static extents, or write the loop yourself with pl.mscatter",
            )
        rows = self._operand(src, _VEC_ROWS, call.span)
        places = self._operand(index, _VEC_ROWS, call.span)
        written = make_call(tile_ops.mscatter, (rows, places, base), {}, call.span)
        self.body.append(Eval(written, span))

    def _scatter(self, target: Var, call: Call) -> None:
        """``pl.scatter(x, index, src)`` on tensors: this block of ``x`` copied, then each row's
        source elements written into the copy (``tile.scatter`` writes its input in place)."""
        x, index, src = call.args
        if x in self.defs and x not in self.views:
            tile = self._tile(x, MemorySpace.Vec, True, call.span)
            assert isinstance(tile.type, TileType)
            origin = index_tuple([Const(0, INDEX) for _ in tile.type.shape])
            made = make_call(tile_ops.slice, (tile, origin), {"shape": tile.type.shape}, call.span)
            copy = self._emit(f"{target.name}_input", made, self.body)
        else:
            assert isinstance(x, Var)
            copy = self._load(
                x, MemorySpace.Vec, True, call.span
            )  # a load of its own: no other use shares it
        places = self._operand(index, _VEC_ROWS, call.span)
        values = self._operand(src, _VEC_ROWS, call.span)
        scattered = make_call(tile_ops.scatter, (copy, places, values), call.attrs, call.span)
        self.body.append(Eval(scattered, call.span))
        self.tiles[(target, MemorySpace.Vec, True)] = copy

    def _paged_gather(self, target: Var, call: Call) -> None:
        """``pl.paged_gather(pool, indices, block_table, ...)``: an on-chip buffer of
        ``max_indices`` rows, filled by a loop over the indices, one pool row each (the page of
        entry ``i``: ``block_table[idx // block_size] * block_size + idx % block_size``)."""
        pool, indices, table = call.args
        assert isinstance(pool.type, TensorType) and isinstance(indices.type, TensorType)
        attrs = call.attrs
        size = attrs.get("size") or pool.type.shape[1]
        space = attrs.get("target_memory", MemorySpace.Mat)
        created = make_call(
            tile_ops.create,
            (),
            {"shape": (attrs["max_indices"], size), "dtype": pool.type.dtype, "target_memory": space},
            call.span,
        )
        buffer = self._emit(target.name, created, self.body)
        i = Var(self.names.fresh("i"), INDEX, call.span)
        block = Const(attrs["block_size"], INDEX)
        entry: list[Expr] = [i] if len(indices.type.shape) == 1 else [Const(0, INDEX), i]
        idx = _read_index(indices, entry, call.span)
        page_at = make_call(scalar_ops.floordiv, (idx, block))
        page_entry: list[Expr] = [page_at] if len(table.type.shape) == 1 else [Const(0, INDEX), page_at]  # type: ignore[attr-defined]
        page = _read_index(table, page_entry, call.span)
        row = make_call(
            scalar_ops.add,
            (make_call(scalar_ops.mul, (page, block)), make_call(scalar_ops.mod, (idx, block))),
        )
        row_var = Var(self.names.fresh("row"), INDEX, call.span)
        gathered = make_call(
            tile_ops.gather_row,
            (
                buffer,
                pool,
                index_tuple([i, Const(0, INDEX)]),
                index_tuple([row_var, Const(attrs.get("col_offset", 0), INDEX)]),
            ),
            {"shape": (1, size), **({"transpose": True} if attrs.get("is_trans") else {})},
            call.span,
        )
        body = (Assign(row_var, row, call.span), Eval(gathered, call.span))
        count = indices.type.shape[-1]
        stop = count if isinstance(count, Expr) else Const(count, INDEX)
        self.body.append(For(i, Const(0, INDEX), stop, Const(1, INDEX), body, span=call.span))
        self.tiles[(target, space, True)] = buffer

    def _padded_for_reduction(
        self, op: str, args: tuple[Expr, ...], sink: list[Stmt], span: SourceSpan | None
    ) -> tuple[Expr, ...]:
        """A reduction of a partial block sees only its real rows: its operand filled with the
        reduction's identity past them (as the parser builds a reduction of a partial tile)."""
        reduction = get_op(op).trait(Reduction)
        source = _first_tile(args)
        if reduction is None or source is None or source not in self.run_time_valid:
            return args
        attrs = {"pad_value": reduction.identity}
        fill = make_call(tile_ops.fillpad, (source, self.run_time_valid[source]), attrs, span)
        padded = self._emit(f"{getattr(source, 'name', 'x')}_padded", fill, sink)
        return tuple(padded if a is source else a for a in args)

    def _follow_valid(self, tile: Var, value: Call) -> None:
        """``tile``'s run-time valid shape, as the parser follows it (pypto.ir.valid): a partial
        load's, its first tile operand's through an op that keeps it, a reduction's valid rows or
        columns, a product's valid rows by columns, a ``tile.set_validshape``'s."""
        valid = result_valid(value, self.run_time_valid)
        if valid is not None:
            self.run_time_valid[tile] = valid

    def _used_by_the_cube_only(self, x: Var) -> bool:
        """Is every use of ``x`` in the region a matmul operand (the K-blocks AutoTileMatmul cut)?"""
        uses = [
            (i, s.value.op)  # type: ignore[attr-defined]
            for s in self.region
            for i, a in enumerate(s.value.args)  # type: ignore[attr-defined]
            if a is x
        ]
        return bool(uses) and all(get_op(op).unit is Unit.CUBE for _, op in uses)

    def _scale(self, x: Expr) -> Fraction:
        return self.plan.scales.get(x, Fraction(1)) if isinstance(x, Var) else Fraction(1)

    def _block_of(self, x: Expr) -> int:
        """The rows of ``x`` in one block: a reshape's result has more or fewer than its source."""
        assert self.block is not None
        rows = self.block * self._scale(x)
        assert rows.denominator == 1, (x, self.block)
        return int(rows)

    def _row_of(self, x: Expr) -> Expr:
        """The first row of ``x`` this block covers."""
        scale = self._scale(x)
        if scale == 1:
            return self.row
        if isinstance(self.row, Const):
            return Const(int(self.row.value * scale), INDEX)
        row: Expr = self.row
        if scale.numerator != 1:
            row = make_call(scalar_ops.mul, (row, Const(scale.numerator, INDEX)))
        if scale.denominator != 1:
            row = make_call(scalar_ops.floordiv, (row, Const(scale.denominator, INDEX)))
        return row

    def _reshaped_block(self, target: Var, call: Call) -> None:
        """A reshape of a block of whole rows: the same elements as whole rows of the result."""
        x = self._tile(call.args[0], MemorySpace.Vec, True, call.span)
        shape = (self._block_of(target), *call.attrs["shape"][1:])
        value = make_call(_lowered(call), (x,), {**call.attrs, "shape": shape}, call.span)
        name = self.names.fresh(target.name) if self.fresh_names else target.name
        tile = Var(name, value.type, target.span)
        self.body.append(Assign(tile, value, call.span))
        self.tiles[(target, MemorySpace.Vec, True)] = tile

    def _computed_slice(self, target: Var, call: Call) -> None:
        """A slice of a value the region computes: of this block's rows when it keeps every row.
        One that only the cube reads (AutoTileMatmul's K-blocks of a vector prologue) is cut on the
        cube side, from the value moved to Mat once, rather than halved on the vector lanes."""
        src, offsets = call.args
        space = MemorySpace.Mat if self._used_by_the_cube_only(target) else MemorySpace.Vec
        whole = self._tile(src, space, True, call.span)
        shape = list(call.attrs["shape"])
        if self.block is not None and _whole_rows(call):
            shape[0] = self._block_of(src)
        value = make_call(tile_ops.slice, (whole, offsets), {**call.attrs, "shape": tuple(shape)}, call.span)
        self.tiles[(target, space, True)] = self._emit(target.name, value, self.body)

    def _operand(self, x: Expr, placement: tuple[MemorySpace, bool], span: SourceSpan | None) -> Expr:
        """A tensor operand as a tile in ``placement``'s space; scalars and offset lists stay."""
        if not isinstance(x.type, (TensorType, TileType)):
            return x
        space, row_local = placement
        return self._tile(x, space, row_local, span)

    def _scratch(self, like: Expr, sink: list[Stmt]) -> Var:
        assert isinstance(like.type, TileType)
        attrs = {"shape": like.type.shape, "dtype": like.type.dtype, "target_memory": MemorySpace.Vec}
        return self._emit("tmp", make_call(tile_ops.create, (), attrs), sink)

    def _view(self, target: Var, call: Call) -> None:
        """``target = tensor.slice(src, offsets[, valid])`` of global memory (or
        ``tensor.set_validshape(src, valid)``): remember where it starts, its valid shape and pad."""
        src = call.args[0]
        assert isinstance(src, Var) and isinstance(src.type, TensorType)
        base, starts = self.views.get(src, (src, [Const(0, INDEX) for _ in src.type.shape]))
        pad = self.view_valid.get(src, (None, None))[1]
        offsets: list[Expr] = [Const(0, INDEX) for _ in starts]
        valid: Expr | None = call.args[1]
        if call.op == tensor.slice:
            assert isinstance(call.args[1], TupleExpr)
            valid = call.args[2] if len(call.args) > 2 else None
            offsets, pad = list(call.args[1].elements), call.attrs.get("pad_value") or pad
        self.views[target] = (base, [index_add(a, b) for a, b in zip(starts, offsets, strict=True)])
        assert valid is None or isinstance(valid, TupleExpr)
        if valid is not None or pad is not None:
            self.view_valid[target] = (valid, pad)

    def _computed_valid(self, target: Var, call: Call) -> None:
        """``tensor.set_validshape`` of a value the region computes: its tile, with the part of the
        valid shape this block covers."""
        x = self._tile(call.args[0], MemorySpace.Vec, True, call.span)
        assert isinstance(call.args[1], TupleExpr)
        valid = self._covered(call.args[1], x, call.args[0])
        made = make_call(tile_ops.set_validshape, (x, valid), {}, call.span)
        self.tiles[(target, MemorySpace.Vec, True)] = self._emit(target.name, made, self.body)

    def _fillpad(self, target: Var, call: Call) -> None:
        """``tensor.fillpad``: each block's tile filled outside its valid shape."""
        x = self._tile(call.args[0], MemorySpace.Vec, True, call.span)
        args: tuple[Expr, ...] = (x,) if x not in self.run_time_valid else (x, self.run_time_valid[x])
        made = make_call(tile_ops.fillpad, args, {"pad_value": call.attrs["pad_value"]}, call.span)
        self.tiles[(target, MemorySpace.Vec, True)] = self._emit(target.name, made, self.body)

    def _accumulated_from_memory(self, target: Var, call: Call) -> None:
        """``acc + a @ b`` with ``acc`` in global memory (a home a loop carries it in): nothing
        loads into Acc, so the cube computes ``a @ b`` and the vector lanes add it to ``acc``."""
        acc, a, b = call.args
        assert isinstance(acc.type, TensorType)
        attrs = {**call.attrs, "out_dtype": acc.type.dtype}
        left = self._operand(a, (MemorySpace.Left, True), call.span)
        right = self._operand(b, (MemorySpace.Right, False), call.span)
        product = self._emit(
            f"{target.name}_product", make_call(tile_ops.matmul, (left, right), attrs), self.body
        )
        for hop in _route(self.target, MemorySpace.Acc, MemorySpace.Vec):
            move = make_call(tile_ops.move, (product,), {"target_memory": hop}, call.span)
            product = self._emit(f"{target.name}_{hop.name.lower()}", move, self.body)
        summed = make_call(tile_ops.add, (self._operand(acc, _VEC_ROWS, call.span), product), {}, call.span)
        name = self.names.fresh(target.name) if self.fresh_names else target.name
        tile = Var(name, summed.type, target.span)
        self.body.append(Assign(tile, summed, call.span))
        self.tiles[(target, MemorySpace.Vec, True)] = tile

    def _full(self, target: Var, call: Call) -> None:
        """``tensor.full``: a tile of the block's rows (the whole value, if it is made once before
        the loop) filled with the value. Every block reads the same one, made before the loop."""
        once = target in self.plan.once
        shape = list(call.attrs["shape"])
        if self.block is not None and not once:
            shape[0] = self._block_of(target)
        made = make_call(_lowered(call), call.args, {**call.attrs, "shape": tuple(shape)}, call.span)
        sink = self.hoisted if isinstance(self.row, Var) else self.body
        name = self.names.fresh(target.name) if self.fresh_names else target.name
        tile = Var(name, made.type, target.span)
        sink.append(Assign(tile, made, call.span))
        self.tiles[(target, MemorySpace.Vec, True)] = tile

    def _covered(self, valid: TupleExpr, tile: Expr, value: Expr) -> TupleExpr:
        """The part of ``value``'s valid shape (extents from its first element) the block's
        ``tile`` covers: from the block's first row, cut to the tile."""
        assert isinstance(tile.type, TileType)
        first = [self._row_of(value) if self.block is not None else Const(0, INDEX)]
        starts = first + [Const(0, INDEX)] * (len(valid.elements) - 1)
        covered = [
            _clamped(v, off, n) for v, off, n in zip(valid.elements, starts, tile.type.shape, strict=True)
        ]
        if self.valid_rows is not None and self._row_blocked(tile):
            covered[0] = _least(covered[0], self.valid_rows)
        return index_tuple(covered)

    def _assemble(self, call: Call, span: SourceSpan | None) -> None:
        dst, value, offsets = call.args
        assert isinstance(offsets, TupleExpr)
        if value in self.plan.summed:
            self._store_column_reduction(call, span)
            return
        if value in self.plan.once:
            self._store_once(call, span)
            return
        if isinstance(value.type, TileType):
            tile = value
        else:
            # A home is written from the vector lanes (a cube result crosses to them first).
            space = MemorySpace.Vec if dst in self.homes else self._natural_space(value)
            tile = self._tile(value, space, True, call.span)
        elements = list(offsets.elements)
        elements[0] = index_add(elements[0], self._row_of(value))
        atomic = call.attrs.get("atomic", AtomicType.NONE)
        op, attrs = (
            (tile_ops.store, {}) if atomic is AtomicType.NONE else (tile_ops.store_atomic, {"atomic": atomic})
        )
        args: tuple[Expr, ...] = (tile, index_tuple(elements), dst)
        if tile in self.run_time_valid or self._row_blocked(tile):  # only the real part is written
            op = tile_ops.store_partial if atomic is AtomicType.NONE else op
            valid = self.run_time_valid.get(tile)
            args = (*args, valid if isinstance(valid, TupleExpr) else self._valid_of(tile))
        store = make_call(op, args, attrs, call.span)
        self.body.append(Eval(store, span))

    def _row_blocked(self, tile: Expr) -> bool:
        """Whether ``tile`` holds a block of a run-time row count (its last rows may be past the end)."""
        t = tile.type
        return self.valid_rows is not None and isinstance(t, TileType) and t.shape[0] == self.block

    def _valid_of(self, tile: Expr) -> TupleExpr:
        """The run-time valid shape of a block's tile: the block's real rows, every column."""
        assert self.valid_rows is not None and isinstance(tile.type, TileType)
        return index_tuple([self.valid_rows, *(Const(d, INDEX) for d in tile.type.shape[1:])])

    def _store_column_reduction(self, call: Call, span: SourceSpan | None) -> None:
        """A column reduction is stored once, after its last block, at the offsets written."""
        if not self.last:
            return
        dst, value, offsets = call.args
        atomic = call.attrs.get("atomic", AtomicType.NONE)
        op, attrs = (
            (tile_ops.store, {}) if atomic is AtomicType.NONE else (tile_ops.store_atomic, {"atomic": atomic})
        )
        assert isinstance(value, Var)
        total = self.sums[value]
        args: tuple[Expr, ...] = (total, offsets, dst)
        valid = self.sum_valid.get(value)
        shape = total.type.shape  # type: ignore[attr-defined]
        if valid is not None and not all(
            isinstance(e, Const) and e.value == n for e, n in zip(valid.elements, shape, strict=True)
        ):
            op = tile_ops.store_partial if atomic is AtomicType.NONE else op
            args = (*args, valid)
        store = make_call(op, args, attrs, call.span)
        self.after.append(Eval(store, span))

    def _store_once(self, call: Call, span: SourceSpan | None) -> None:
        """A one-row value computed before the row loop is stored there too, by the last copy of
        the region (the smaller block after the loop, if any, makes it again)."""
        if not self.last:
            return
        dst, value, offsets = call.args
        tile = self._tile(value, MemorySpace.Vec, False, call.span)
        atomic = call.attrs.get("atomic", AtomicType.NONE)
        op, attrs = (
            (tile_ops.store, {}) if atomic is AtomicType.NONE else (tile_ops.store_atomic, {"atomic": atomic})
        )
        sink = self.hoisted if isinstance(self.row, Var) else self.body
        sink.append(Eval(make_call(op, (tile, offsets, dst), attrs, call.span), span))

    def _natural_space(self, value: Expr) -> MemorySpace:
        for (var, space, _), _tile in self.tiles.items():
            if var is value:
                return space
        return MemorySpace.Vec

    # -- operands

    def _tile(self, x: Expr, space: MemorySpace, row_local: bool, span: SourceSpan | None) -> Expr:
        if isinstance(x.type, TileType):
            return x
        assert isinstance(x, Var)
        key = (x, space, row_local)
        if key in self.tiles:
            return self.tiles[key]
        computed = x in self.defs and x not in self.views
        tile = self._convert(x, space, span) if computed else self._load(x, space, row_local, span)
        self.tiles[key] = tile
        return tile

    def _convert(self, x: Var, space: MemorySpace, span: SourceSpan | None) -> Var:
        """A computed value needed in another space: move it along the target's legal paths. The
        moves carry the span of the op that computed the value: a move that cannot be made (a
        crossing the split cannot halve) is reported at the user's line that made the tile."""
        src_key = next(k for k in self.tiles if k[0] is x and k[2])
        tile = self.tiles[src_key]
        made_at = self.defs[x].span or span
        for hop in _route(self.target, src_key[1], space):
            tile = self._emit(
                f"{x.name}_{hop.name.lower()}",
                make_call(tile_ops.move, (tile,), {"target_memory": hop}, made_at),
                self.body,
            )
        return tile

    def _load(self, x: Var, space: MemorySpace, row_local: bool, span: SourceSpan | None) -> Var:
        """Load ``x`` (a tensor, or a view of one) whole or, row-local, as this block's rows. A
        view's load carries the span of the subscript that made it: a region outside the tensor
        is reported there, not at the op that used it."""
        assert isinstance(x.type, TensorType)
        if x in self.views and x in self.defs:
            span = self.defs[x].span or span
        shape = list(x.type.shape)
        base, starts = self.views.get(x, (x, [Const(0, INDEX) for _ in shape]))
        offsets = list(starts)
        blocked = row_local and self.block is not None
        if blocked:
            shape[0] = self._block_of(x)
            offsets[0] = index_add(offsets[0], self._row_of(x))
        staging = (
            MemorySpace.Mat if space in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias) else space
        )
        if base in self.homes:  # read on the vector lanes; the cube gets it from them
            staging = MemorySpace.Vec
        # A whole load goes before the row loop; a K-blocked chain's cube operands stream (each
        # loaded where it is used), but a vector operand stays hoisted: the one-row values made
        # before the loop may read it.
        streamed = self.streams_weights and staging is MemorySpace.Mat
        hoist = isinstance(self.row, Var) and not blocked and not streamed
        sink = self.hoisted if hoist else self.body
        attrs: dict[str, Any] = {"shape": tuple(shape), "target_memory": staging}
        if any(is_symbolic(d) for d in shape):
            raise ParseError(
                f"{x.name} has a dynamic extent but is needed whole (a matmul's right operand or a "
                "broadcast vector): a tile's shape is static",
                span,
                "give that operand static extents; only the rows of the scope's tensors may be dynamic",
            )
        view_valid, pad = self.view_valid.get(x, (None, None))
        if view_valid is not None:  # only the view's valid region is read, the rest is its pad
            local = self._row_of(x) if blocked else Const(0, INDEX)
            starts = [local] + [Const(0, INDEX)] * (len(shape) - 1)
            covered = [_clamped(v, o, n) for v, o, n in zip(view_valid.elements, starts, shape, strict=True)]
            if blocked and self.valid_rows is not None:
                covered[0] = _least(covered[0], self.valid_rows)
            if staging is MemorySpace.Mat and pad is None:
                pad = PadValue.zero  # a matmul operand's padding must add nothing to the products
            attrs = {**attrs, "pad_value": pad} if pad is not None else attrs
            load = make_call(
                tile_ops.load_partial, (base, index_tuple(offsets), index_tuple(covered)), attrs, span
            )
        elif blocked and self.valid_rows is not None:  # the last block may hang over the end
            valid = index_tuple([self.valid_rows, *(Const(d, INDEX) for d in shape[1:])])
            load = make_call(tile_ops.load_partial, (base, index_tuple(offsets), valid), attrs, span)
        else:
            load = make_call(tile_ops.load, (base, index_tuple(offsets)), attrs, span)
        tile = self._emit(f"{x.name}_{staging.name.lower()}", load, sink)
        hops = (
            [space]
            if staging is not MemorySpace.Vec or space is MemorySpace.Vec
            else [MemorySpace.Mat, space]
        )
        for hop in dict.fromkeys(h for h in hops if h is not staging):
            tile = self._emit(
                f"{x.name}_{hop.name.lower()}",
                make_call(tile_ops.move, (tile,), {"target_memory": hop}, span),
                sink,
            )
        return tile

    def _emit(self, base: str, value: Call, sink: list[Stmt]) -> Var:
        tile = Var(self.names.fresh(base), value.type, value.span)
        sink.append(Assign(tile, value, value.span))
        self._follow_valid(tile, value)
        return tile


_VIA_MAT = (MemorySpace.Left, MemorySpace.Right, MemorySpace.Bias)


def _read_index(tensor: Expr, at: list[Expr], span: SourceSpan | None) -> Call:
    """One element of an integer tensor, read from global memory as an INDEX scalar (as the parser
    builds ``pl.cast(pl.read(t, at), pl.INDEX)``); a read outside it is an error at ``span``."""
    read = make_call(scalar_ops.read, (tensor, index_tuple(at)), {}, span)
    return make_call(scalar_ops.cast, (read,), {"dtype": DataType.INDEX, "mode": CastMode.round}, span)


def _clamped(valid: Expr, start: Expr, extent: int) -> Expr:
    """The part of a valid extent a block of ``extent`` starting at ``start`` covers:
    ``min(extent, max(valid - start, 0))``, folded where it is constant."""
    at_origin = isinstance(start, Const) and start.value == 0
    rest = valid if at_origin else scalar_call(scalar_ops.sub, valid, start)
    if isinstance(rest, Const):
        return Const(min(extent, max(rest.value, 0)), INDEX)
    if not at_origin:
        rest = scalar_call(scalar_ops.max, rest, Const(0, INDEX))
    return scalar_call(scalar_ops.min, Const(extent, INDEX), rest)


def _least(a: Expr, b: Expr) -> Expr:
    return scalar_call(scalar_ops.min, a, b)


def _first_tile(args: tuple[Expr, ...]) -> Expr | None:
    return next((a for a in args if isinstance(a.type, TileType)), None)


def _column_start(t: TileType, identity: PadValue, span: SourceSpan | None) -> Call:
    """A ``[1, C]`` tile to start a column reduction from: 0 for a sum, 1 for a product, the
    lowest value for a max, the highest for a min (the reduction's identity)."""
    if identity is PadValue.zero:
        start: float = 0.0 if t.dtype.is_float else 0
    elif identity is PadValue.one:
        start = 1.0 if t.dtype.is_float else 1
    elif identity is PadValue.min:
        start = -math.inf if t.dtype.is_float else t.dtype.int_range[0]
    else:
        start = math.inf if t.dtype.is_float else t.dtype.int_range[1]
    value = Const(start, ScalarType(t.dtype), span)
    return make_call(tile_ops.full, (value,), {"shape": t.shape, "dtype": t.dtype}, span)


def _move(tile: Expr, space: MemorySpace, span: SourceSpan | None) -> Call:
    return make_call(tile_ops.move, (tile,), {"target_memory": space}, span)


def _route(target: Target, src: MemorySpace, dst: MemorySpace) -> list[MemorySpace]:
    """Spaces to move through from ``src`` to ``dst`` along legal paths; a direct (illegal)
    hop when none exists — a cube/vector crossing that later passes turn into a pipe or reject."""
    frontier: deque[tuple[MemorySpace, list[MemorySpace]]] = deque([(src, [])])
    seen = {src}
    while frontier:
        space, path = frontier.popleft()
        if space is dst:
            return path
        for a, b in target.data_paths:
            if a is space and b not in seen and b is not MemorySpace.DDR:
                seen.add(b)
                frontier.append((b, [*path, b]))
    return [dst]
