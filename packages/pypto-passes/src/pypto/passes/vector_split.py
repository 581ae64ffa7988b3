"""LowerAutoVectorSplit: halve the vector side of a mixed kernel across the two AIV lanes.

In a mixed kernel marked ``pl.split(mode)`` (no mark means ``NONE``), every cube->vector
crossing becomes ``aiv_shard`` (each lane receives its share of the cube's tile) and every
vector->cube crossing ``aic_gather``. Vector-side tiles shrink to one lane's share: loads and
stores of global memory shift by ``lane * share`` along the split axis, where ``lane`` is
``pl.get_subblock_idx()``. With ``NONE`` nothing is halved: lane 0 does the vector work.

An odd extent ``L`` along the split axis gives lane 0 ``ceil(L/2)`` and lane 1 the rest: lane
tiles take the ceiling shape, and a load or store of an odd-extent tile becomes its partial form
with the run-time valid extent ``ceil(L/2) - lane``, so lane 1 touches only its own rows or
columns. Gathered back to the cube, the two ``ceil(L/2)`` shares make ``L + 1``, and the cube keeps
the leading ``L`` (a slice of its Mat tile). A cube tile of extent 1 sent to the lanes cannot be
split.

A vector tile of extent 1 along the split axis (a ``[1, C]`` gamma or bias row under
``UP_DOWN``, an ``[R, 1]`` per-row scale under ``LEFT_RIGHT``) is *replicated*: every lane holds
it whole (loaded whole, not offset by lane), the broadcast that uses it works on each lane's share
of the other operand, and a store of it is made by lane 0 alone. Ops that need the whole extent
of the halved axis (column reductions under ``UP_DOWN``, row reductions under ``LEFT_RIGHT``,
views) are rejected unless every lane holds their operands whole; the error's hint names only
options that work for the scope (the other mode only when that mode accepts it).

A pure vector kernel marked ``pl.split(UP_DOWN)`` or ``pl.split(LEFT_RIGHT)`` is split the same
way and becomes data-parallel: both lanes run it, each on its share (unmarked or ``NONE``, it
runs on lane 0 alone).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto.ir import (
    INDEX,
    Assign,
    Call,
    Const,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    MemorySpace,
    ParseError,
    Program,
    PyptoError,
    SourceSpan,
    SplitAivRegion,
    SplitMode,
    Stmt,
    TileType,
    TupleExpr,
    Var,
    make_call,
)
from pypto.ir.nodes import (
    JUMP_STMTS,
    LOOP_STMTS,
    While,
    nested_bodies,
    stmt_bindings,
    stmt_exprs,
    used_vars,
    walk_expr,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import (
    ALL,
    SPLIT_FREELY,
    SplitPolicy,
    scalar,
    split_axis,
    split_shape,
    trait_of,
)
from pypto.ir.ops import tile as tile_ops
from pypto.ir.rewrite import NameGen, index_add, index_tuple, map_functions, substitute_expr
from pypto.ir.sides import Side, call_side, first_ops_by_side, is_crossing, is_mixed, written_per_lane
from pypto.ir.valid import build_as_parsed
from pypto.passes.manager import PassContext

# Ops that make a Vec tile from a shape attr, and stores that write a Vec tile at offsets.
_SHAPED_MAKERS = frozenset({tile_ops.create, tile_ops.full})
_STORES = frozenset({tile_ops.store, tile_ops.store_atomic})
_PARTIAL_STORES = frozenset({tile_ops.store_partial})
# Ops whose valid-shape operand (by position) names a region of a split tile: halved per lane.
_VALID_OPERANDS = {tile_ops.set_validshape: 1, tile_ops.fillpad: 1}
_OTHER_MODE = {SplitMode.UP_DOWN: SplitMode.LEFT_RIGHT, SplitMode.LEFT_RIGHT: SplitMode.UP_DOWN}


class _Rejected(Exception):
    """A split the scope cannot take. ``fix`` is a change to the program that would help, if any;
    :class:`LowerAutoVectorSplit` adds the options that work for the scope to the hint."""

    def __init__(self, message: str, span: SourceSpan | None, fix: str | None = None) -> None:
        super().__init__(message)
        self.message, self.span, self.fix = message, span, fix


def _lowered(fn: Function) -> bool:
    """Whether this pass already split ``fn`` (a printed dump read back and compiled again): its
    lanes read their index, and the cube's tiles reach them through shards and gathers."""
    marks = (tile_ops.get_subblock_idx, tile_ops.aiv_shard, tile_ops.aic_gather)
    return any(
        isinstance(e, Call) and e.op in marks
        for s in walk_stmts(fn.body)
        for x in stmt_exprs(s)
        for e in walk_expr(x)
    )


def has_split_regions(fn: Function) -> bool:
    return any(isinstance(s, SplitAivRegion) for s in walk_stmts(fn.body))


@dataclass(frozen=True)
class LowerAutoVectorSplit:
    name: ClassVar[str] = "LowerAutoVectorSplit"
    pipeline_name: ClassVar[str] = "vector-split"

    def run(self, program: Program, ctx: PassContext) -> Program:
        program = map_functions(program, (FunctionKind.AIV,), self.lower_vector_half)
        return map_functions(program, (FunctionKind.InCore,), self.lower)

    def lower_vector_half(self, fn: Function) -> Function:
        """A hand-written AIV function with ``split`` in its attributes (and not ``split_aiv``,
        which says it is written per lane) is written at full size, like the vector side of a
        ``pl.split`` scope: its pops, loads, tiles and stores are halved across the two lanes,
        each lane's valid extent is its part of the full one and its offsets shift by
        ``lane * share`` along the split axis."""
        mode = fn.attrs.get("split")
        if split_axis(mode) is None or fn.attrs.get("split_aiv"):
            return fn
        assert mode is not None
        names = NameGen.for_function(fn)
        lane = Var(names.fresh("lane"), INDEX, fn.span)
        try:
            body = _Splitter(fn, mode, lane).block(fn.body)
        except _Rejected as rejected:
            raise ParseError(
                rejected.message.replace("pl.split(", f"the AIV function {fn.name} split ("),
                rejected.span or fn.span,
                (f"{rejected.fix}; or " if rejected.fix else "")
                + "write the function per lane: pl.func_attr({'split': ..., 'split_aiv': True}) with the "
                "lanes' shapes and offsets by pl.get_subblock_idx()",
            ) from None
        body = (Assign(lane, make_call(tile_ops.get_subblock_idx, ()), fn.span), *body)
        return replace(fn, body=build_as_parsed(body, names.fresh), attrs={**fn.attrs, "split_aiv": True})

    def lower(self, fn: Function) -> Function:
        if has_split_regions(fn):
            return replace(fn, body=_halved_regions(fn, fn.body, NameGen.for_function(fn)))
        mode = fn.attrs.get("split") or SplitMode.NONE
        if not _splits(fn, mode) or _lowered(fn):
            return fn
        names = NameGen.for_function(fn)
        lane = Var(names.fresh("lane"), INDEX, fn.span)
        try:
            body = _Splitter(fn, mode, lane).block(fn.body)
        except _Rejected as rejected:
            hint = _hint(fn, mode, lane, rejected.fix)
            raise ParseError(rejected.message, rejected.span or fn.span, hint) from None
        if split_axis(mode) is not None:
            body = (Assign(lane, make_call(tile_ops.get_subblock_idx, ()), fn.span), *body)
            # A lane's share of an odd extent (or of a partial tile) is partial: its reductions
            # see only the real region, built as the parser builds them.
            body = build_as_parsed(body, names.fresh)
        # Written per lane now (split_aiv): printed, it reads back with its shards and gathers.
        return replace(fn, body=body, attrs={**fn.attrs, "split": mode, "split_aiv": True})


def _halved_regions(fn: Function, body: tuple[Stmt, ...], names: NameGen) -> tuple[Stmt, ...]:
    """``body`` with each data-parallel ``pl.split_aiv`` region written at full width (one that
    names no crossing) halved across the lanes, as a ``pl.split`` scope's vector side is: loads
    and stores of the lane's share at ``lane * share``, tiles of its shape. A region that names a
    crossing is written per lane already, and a ``NONE`` region runs whole on both lanes."""
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, SplitAivRegion):
            if split_axis(stmt.mode) is not None and not written_per_lane(stmt):
                stmt = replace(stmt, body=_halved_region(fn, stmt, names))
        elif nested_bodies(stmt):
            stmt = with_bodies(stmt, tuple(_halved_regions(fn, b, names) for b in nested_bodies(stmt)))
        out.append(stmt)
    return tuple(out)


def _halved_region(fn: Function, region: SplitAivRegion, names: NameGen) -> tuple[Stmt, ...]:
    """A full-width data-parallel region's body on the lane's share."""
    bound = {v for s in walk_stmts(region.body) for v in stmt_bindings(s)}
    for s in walk_stmts(region.body):
        for x in stmt_exprs(s):
            outside = next(
                (
                    v
                    for v in used_vars(x)
                    if v not in bound
                    and isinstance(v.type, TileType)
                    and v.type.memory_space is MemorySpace.Vec
                ),
                None,
            )
            if outside is not None:
                raise ParseError(
                    f"the pl.split_aiv region ({region.mode!r}) is halved across the lanes, but it reads "
                    f"'{outside.name}', a full-width tile made outside it",
                    s.span or region.span,
                    "load (or make) the tile inside the region, which then halves it too; or write the "
                    "region per lane with pl.aiv_shard / an offset by the region's lane",
                )
    try:
        body = _Splitter(fn, region.mode, region.lane).block(region.body)
    except _Rejected as rejected:
        raise ParseError(
            rejected.message.replace("pl.split(", "pl.split_aiv(2, mode="),
            rejected.span or region.span,
            (f"{rejected.fix}; or " if rejected.fix else "")
            + "use a region of mode=pl.SplitMode.NONE for this phase, or write the region per lane",
        ) from None
    return build_as_parsed(body, names.fresh)


def _accepts(fn: Function, mode: SplitMode, lane: Var) -> bool:
    """Would ``pl.split(mode)`` split ``fn``?"""
    try:
        _Splitter(fn, mode, lane).block(fn.body)
    except (_Rejected, PyptoError):
        return False
    return True


def _hint(fn: Function, mode: SplitMode, lane: Var, fix: str | None) -> str:
    """How to get past a rejected split, naming only options that work: the other mode when it
    splits this scope, the explicit region form, and otherwise no halving at all."""
    other = _OTHER_MODE[mode]
    if _accepts(fn, other, lane):
        options = (
            f"pl.split(pl.SplitMode.{other.name}), which splits this scope, "
            "or the explicit pl.split_aiv region form"
        )
    else:
        options = (
            "the explicit pl.split_aiv region form, or pl.split(pl.SplitMode.NONE) "
            "(no halving: AIV lane 0 does the vector work)"
        )
    return f"{fix}; or use {options}" if fix else f"use {options}"


def _splits(fn: Function, mode: SplitMode) -> bool:
    """A mixed kernel always goes through the split (NONE too); a pure vector one when it halves."""
    if is_mixed(fn):
        return True
    return split_axis(mode) is not None and set(first_ops_by_side(fn)) == {Side.VECTOR}


@dataclass
class _Splitter:
    fn: Function
    mode: SplitMode
    lane: Var

    def __post_init__(self) -> None:
        self.axis = split_axis(self.mode)
        self.mapping: dict[Var, Expr] = {}
        self.replicated: set[Var] = set()  # lowered tiles every lane holds whole
        # Lowered tiles split along the other axis: a lane's [s, 1] share reshaped to [1, s]
        # (under UP_DOWN; [1, s] to [s, 1] under LEFT_RIGHT), until reshaped back.
        self.crosswise: set[Var] = set()
        self.made_crosswise = False  # the last call() made a crosswise tile

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            stmt = self.header(stmt)
            if isinstance(stmt, LOOP_STMTS) and stmt.iter_args:
                out.append(self.carried_loop(stmt))
            elif isinstance(stmt, If) and stmt.results:
                out.append(self.carried_if(stmt))
            elif isinstance(stmt, (For, While, If)):
                out.append(with_bodies(stmt, tuple(self.block(b) for b in nested_bodies(stmt))))
            elif isinstance(stmt, JUMP_STMTS):
                out.append(replace(stmt, values=tuple(substitute_expr(v, self.mapping) for v in stmt.values)))
            elif isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                out.extend(self.assign(stmt))
            elif isinstance(stmt, Eval) and isinstance(stmt.value, Call):
                out.append(replace(stmt, value=self.call(stmt.value, None)))
            else:
                out.append(stmt)
        return tuple(out)

    def header(self, stmt: Stmt) -> Stmt:
        """``stmt`` with its loop bounds or if condition reading the rebound scalars (a bound
        ``n = pl.cast(pl.read(...))`` is rebound like every assignment)."""
        if isinstance(stmt, For):
            start, stop, step = (substitute_expr(e, self.mapping) for e in (stmt.start, stmt.stop, stmt.step))
            return replace(stmt, start=start, stop=stop, step=step)
        if isinstance(stmt, If):
            return replace(stmt, cond=substitute_expr(stmt.cond, self.mapping))
        return stmt

    def carried_loop(self, loop: For | While) -> For | While:
        """A loop whose carried tiles shrink to a lane's share like every other vector tile."""
        inits = tuple(substitute_expr(v, self.mapping) for v in loop.init_values)
        iter_args = tuple(self.rebind(old, new) for old, new in zip(loop.iter_args, inits, strict=True))
        if isinstance(loop, While):
            loop = replace(loop, cond=substitute_expr(loop.cond, self.mapping))
        body = self.block(loop.body)
        yields = tuple(substitute_expr(v, self.mapping) for v in loop.yields)
        results = tuple(self.rebind(old, new) for old, new in zip(loop.results, yields, strict=True))
        return replace(
            loop, iter_args=iter_args, init_values=inits, body=body, yields=yields, results=results
        )

    def carried_if(self, stmt: If) -> If:
        """An if whose result tiles shrink to a lane's share like the yields they take."""
        then_body, else_body = (self.block(b) for b in nested_bodies(stmt))
        then_yields, else_yields = (
            tuple(substitute_expr(v, self.mapping) for v in ys) for ys in (stmt.then_yields, stmt.else_yields)
        )
        typed = then_yields or else_yields
        results = tuple(self.rebind(old, new) for old, new in zip(stmt.results, typed, strict=True))
        return replace(
            stmt,
            then_body=then_body,
            else_body=else_body,
            then_yields=then_yields,
            else_yields=else_yields,
            results=results,
        )

    def rebind(self, old: Var, value: Expr) -> Var:
        """``old`` renamed to a var typed like ``value``, which it carries (replicated if it is)."""
        new = Var(old.name, value.type, old.span)
        self.mapping[old] = new
        if value in self.replicated:
            self.replicated.add(new)
        if value in self.crosswise:
            self.crosswise.add(new)
        return new

    def assign(self, stmt: Assign) -> list[Stmt]:
        call = stmt.value
        assert isinstance(call, Call)
        if not is_crossing(call):
            self.made_crosswise = False
            value = self.call(call, stmt.target.name)
            target = self.bind(stmt.target, value, stmt)
            if self.made_crosswise:
                self.crosswise.add(target.target)
            elif self.held_whole(call, value.args):
                self.replicated.add(target.target)
            return [target]
        src = substitute_expr(call.args[0], self.mapping)
        dst = call.attrs["target_memory"]
        attrs = {"split": self.mode}
        span = call.span or stmt.span or self.fn.span
        original = call.args[0].type
        assert isinstance(original, TileType)
        stmts: list[Stmt] = []
        if dst is MemorySpace.Vec:
            self.check_extent(src.type.shape, _name(src, stmt.target.name), span)  # type: ignore[attr-defined]
            shard = make_call(tile_ops.aiv_shard, (src,), attrs, call.span)
            if original.valid_shape is not None:
                lane = self.valid(original.valid_shape, original.shape, shard.type.shape)  # type: ignore[attr-defined]
                shard = self.revalidated(shard, lane, stmt, stmts)
            return [*stmts, self.bind(stmt.target, shard, stmt)]
        gathered = make_call(tile_ops.aic_gather, (src,), attrs, call.span)
        full = original.shape
        if gathered.type.shape != full:  # type: ignore[attr-defined]
            gathered = self.trimmed(gathered, full, stmt, stmts)
        if original.valid_shape is not None:
            whole = index_tuple([Const(n, INDEX) for n in original.valid_shape])
            gathered = self.revalidated(gathered, whole, stmt, stmts)
        if dst is MemorySpace.Mat:
            return [*stmts, self.bind(stmt.target, gathered, stmt)]
        # aic_gather lands in Mat; the original move went on to Left/Right.
        staged = Var(f"{stmt.target.name}_mat", gathered.type, stmt.target.span)
        moved = make_call(tile_ops.move, (staged,), {"target_memory": dst}, call.span)
        return [*stmts, Assign(staged, gathered, stmt.span), self.bind(stmt.target, moved, stmt)]

    def revalidated(self, crossed: Call, valid: TupleExpr, stmt: Assign, out: list[Stmt]) -> Call:
        """A partial tile that crossed the pipe: the slot holds the whole tile, so the receiving
        side gives it back its valid shape (the lane's part of it on a shard)."""
        staged = Var(f"{stmt.target.name}_crossed", crossed.type, stmt.target.span)
        out.append(Assign(staged, crossed, stmt.span))
        return make_call(tile_ops.set_validshape, (staged, valid), {}, crossed.span)

    def trimmed(self, gathered: Call, full: tuple[int, ...], stmt: Assign, out: list[Stmt]) -> Call:
        """An odd extent ``L`` gathered back to the cube: both lanes push a ``ceil(L/2)`` share,
        so the cube receives ``L + 1`` along the axis (lane 1's share ends in a row or column
        past its valid part) and keeps the leading ``L`` with a slice of its Mat tile."""
        whole = Var(f"{stmt.target.name}_gathered", gathered.type, stmt.target.span)
        out.append(Assign(whole, gathered, stmt.span))
        origin = index_tuple([Const(0, INDEX) for _ in full])
        return make_call(tile_ops.slice, (whole, origin), {"shape": tuple(full)}, gathered.span)

    def bind(self, old: Var, value: Call, stmt: Assign) -> Assign:
        target = Var(old.name, value.type, old.span)
        self.mapping[old] = target
        return replace(stmt, target=target, value=value)  # a pl.MemRef placement stays

    def call(self, call: Call, name: str | None) -> Call:
        """``call`` on one lane's share; ``name`` is the variable it assigns (None for an Eval)."""
        args = tuple(substitute_expr(a, self.mapping) for a in call.args)
        if self.axis is None:
            return call if args == call.args else make_call(call.op, args, call.attrs, call.span)
        if any(a in self.crosswise for a in args):
            return self.crosswise_call(call, args)
        if call.op in _STORES | _PARTIAL_STORES and args[0] in self.replicated:
            return self.store_from_lane_0(call, args)
        if call.op == tile_ops.tpop_from_aic:
            return self.popped_share(call, args, name)
        whole = self.held_whole(call, args)
        if not whole:
            halved = self.halved_region(call, args, name)
            if halved is not None:
                return halved
        if self.needs_whole(call, args, whole):
            raise self.rejected(call)
        if whole:
            return make_call(call.op, args, call.attrs, call.span)  # every lane computes it whole
        if call.op in _SHAPED_MAKERS and call.type.memory_space is MemorySpace.Vec:  # type: ignore[attr-defined]
            shape = self.share(tuple(call.attrs["shape"]), name or call.op, call)
            return make_call(call.op, args, {**call.attrs, "shape": shape}, call.span)
        if call.op in _STORES and _space(args[0]) is MemorySpace.Vec:
            return self.store(call, args)
        return make_call(call.op, args, call.attrs, call.span)

    def popped_share(self, call: Call, args: tuple[Expr, ...], name: str | None) -> Call:
        """A pop written at full size in a split AIV function: each lane pops its share (its
        part of a declared valid shape)."""
        shape = self.share(tuple(call.attrs["shape"]), name or "the popped tile", call)
        valid = (self.lane_valid(args[0], shape),) if args else ()
        return make_call(call.op, valid, {**call.attrs, "shape": shape}, call.span)

    def halved_region(self, call: Call, args: tuple[Expr, ...], name: str | None) -> Call | None:
        """``call`` on the lane's share when it names a region of a split tile — a Vec load or a
        partial store (offsets shifted, valid shape halved), a view, a valid shape — else None."""
        if (
            call.op in (tile_ops.load, tile_ops.load_partial)
            and call.attrs.get("target_memory") is MemorySpace.Vec
        ):
            return self.load(call, args, name)
        if call.op in _PARTIAL_STORES and _space(args[0]) is MemorySpace.Vec:
            return self.store(call, args)
        if not args or not self.is_split(args[0]):
            return None
        if call.op == tile_ops.reshape:
            return self.reshape(call, args)
        if call.op == tile_ops.slice:
            return self.slice(call, args)
        if call.op in _VALID_OPERANDS:
            return self.with_lane_valid(call, args)
        return None

    def held_whole(self, call: Call, args: tuple[Expr, ...]) -> bool:
        """Does every lane hold ``call``'s result whole? A Vec tile of extent 1 along the split
        axis that only reads tiles every lane holds whole (a loaded gamma row, a scale of it)."""
        t = call.type
        if self.axis is None or not isinstance(t, TileType) or t.memory_space is not MemorySpace.Vec:
            return False
        return self.extent(t.shape) == 1 and all(
            a in self.replicated for a in args if _space(a) is MemorySpace.Vec
        )

    def needs_whole(self, call: Call, args: tuple[Expr, ...], whole: bool) -> bool:
        """Does ``call`` need the whole extent of the halved axis of an operand that is split? An
        atomic store of a run-time valid shape (its 4th operand) always does."""
        assert self.axis is not None
        if call.op == tile_ops.store_atomic and len(call.args) == 4:
            return True
        policy = trait_of(call, SplitPolicy) or SPLIT_FREELY
        operands = policy.needs_whole(self.axis)
        if call_side(call) is not Side.VECTOR or operands == ():
            return False
        if operands is ALL:
            produces_tile = isinstance(call.type, TileType)
            split_args = any(_space(a) is MemorySpace.Vec and a not in self.replicated for a in args)
            return split_args or (produces_tile and not whole)
        return any(args[k] not in self.replicated for k in operands)

    def store_from_lane_0(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """A store of a tile every lane holds whole: lane 0 writes it, lane 1 writes nothing (its
        valid extent along the split axis is 0), so an atomic add is not made twice."""
        assert self.axis is not None
        if len(args) == 4:
            valid = args[3]
            if not isinstance(valid, TupleExpr):
                raise self.rejected(call)
            elements = list(valid.elements)
        else:
            tile = call.args[0].type
            assert isinstance(tile, TileType)
            elements = [Const(n, INDEX) for n in (tile.valid_shape or tile.shape)]
        elements[self.axis] = self.on_lane_0(elements[self.axis])
        op = tile_ops.store_atomic if call.op == tile_ops.store_atomic else tile_ops.store_partial
        return make_call(op, (*args[:3], index_tuple(elements)), call.attrs, call.span)

    def on_lane_0(self, extent: Expr) -> Expr:
        """``extent`` on lane 0 and 0 on lane 1: ``extent * (1 - lane)``."""
        lane_0 = make_call(scalar.sub, (Const(1, INDEX), self.lane))
        if isinstance(extent, Const) and extent.value == 1:
            return lane_0
        return make_call(scalar.mul, (extent, lane_0))

    def rejected(self, call: Call) -> _Rejected:
        where = f" at line {call.span.line}" if call.span else ""
        needs = "every row" if self.axis == 0 else "whole rows"
        return _Rejected(
            f"split rejected: the body mixes split and plain full-width vector ops "
            f"(pl.{call.op.split('.', 1)[-1]}{where} needs {needs}, which pl.split({self.mode!r}) halves)",
            call.span or self.fn.span,
        )

    def extent(self, shape: tuple[int, ...]) -> int:
        assert self.axis is not None
        return shape[self.axis] if self.axis < len(shape) else 1

    def load(self, call: Call, args: tuple[Expr, ...], name: str | None) -> Call:
        """A Vec load of the lane's share; of an odd extent or a partial valid shape, a
        ``tile.load_partial`` of the lane's valid part of it."""
        full = tuple(call.attrs["shape"])
        shape = self.share(full, name or call.op, call)
        offsets = self.shifted(args[1], shape)
        attrs = {"shape": shape, "target_memory": call.attrs["target_memory"]}
        if call.op == tile_ops.load_partial:
            return make_call(call.op, (args[0], offsets, self.lane_valid(args[2], shape)), attrs, call.span)
        given = tuple(call.attrs.get("valid_shape") or full)
        if full[self.axis] % 2 == 0 and given[self.axis] == full[self.axis]:  # type: ignore[index]
            if "valid_shape" in call.attrs:  # valid whole along the axis: the lane's whole share
                attrs["valid_shape"] = tuple(
                    shape[self.axis] if d == self.axis else n for d, n in enumerate(given)
                )
            return make_call(tile_ops.load, (args[0], offsets), {**call.attrs, **attrs}, call.span)
        valid = self.valid(given, full, shape)
        return make_call(tile_ops.load_partial, (args[0], offsets, valid), attrs, call.span)

    def store(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """A store of the lane's share; of an odd extent or a partial valid shape, the partial (or
        atomic) form with the lane's valid part."""
        tile = call.args[0].type
        assert isinstance(tile, TileType) and self.axis is not None
        shape = args[0].type.shape  # type: ignore[attr-defined]
        operands = (args[0], self.shifted(args[1], shape), args[2])
        if call.op in _PARTIAL_STORES:
            return make_call(call.op, (*operands, self.lane_valid(args[3], shape)), call.attrs, call.span)
        given = tile.valid_shape or tile.shape
        if tile.shape[self.axis] % 2 == 0 and given[self.axis] == tile.shape[self.axis]:
            return make_call(call.op, operands, call.attrs, call.span)
        op = tile_ops.store_partial if call.op == tile_ops.store else call.op
        return make_call(op, (*operands, self.valid(given, tile.shape, shape)), call.attrs, call.span)

    def is_split(self, value: Expr) -> bool:
        """Is ``value`` a Vec tile the lanes hold in shares (not whole)?"""
        return _space(value) is MemorySpace.Vec and value not in self.replicated

    def crosswise_call(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """``call`` on a crosswise tile (a lane's ``[s, 1]`` share reshaped to ``[1, s]``): a
        reshape back gives the lane's share again, an element-wise op of crosswise tiles (and
        scalars) is one too, and a store writes the lane's part of the row (its offset shifted
        along the other axis); anything else would need the other lane's elements."""
        assert self.axis is not None
        other = 1 - self.axis
        tiles = [a for a in args if isinstance(a.type, TileType)]
        if call.op == tile_ops.reshape and args[0] in self.crosswise:
            share = args[0].type.shape  # type: ignore[attr-defined]
            after = tuple(call.attrs["shape"])
            back = [1, 1]
            back[self.axis] = share[other]
            if len(after) == 2 and after[other] == 1:
                return make_call(call.op, args, {**call.attrs, "shape": tuple(back)}, call.span)
        elif call.op in _STORES and args[0] in self.crosswise and len(args) == 3:
            share = args[0].type.shape  # type: ignore[attr-defined]
            offsets = args[1]
            assert isinstance(offsets, TupleExpr)
            elements = list(offsets.elements)
            step = make_call(scalar.mul, (self.lane, Const(share[other], INDEX)))
            elements[other] = index_add(elements[other], step)
            return make_call(call.op, (args[0], index_tuple(elements), args[2]), call.attrs, call.span)
        else:
            policy = trait_of(call, SplitPolicy) or SPLIT_FREELY
            elementwise = (
                call_side(call) is Side.VECTOR
                and policy.needs_whole(0) == ()
                and policy.needs_whole(1) == ()
                and isinstance(call.type, TileType)
                and all(a in self.crosswise for a in tiles)
            )
            if elementwise:
                self.made_crosswise = True
                return make_call(call.op, args, call.attrs, call.span)
        row = "[1, R]" if self.axis == 0 else "[C, 1]"
        raise _Rejected(
            f"pl.split({self.mode!r}) holds the reshaped {row} tile as each lane's part of it: "
            f"pl.{call.op.split('.', 1)[-1]}{self.at_line(call)} would need the other lane's part "
            "(only element-wise ops of such tiles, their stores and a reshape back are split)",
            call.span or self.fn.span,
            "reshape the tile back before this op",
        )

    def reshape(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """A reshape of a lane's rows: under ``UP_DOWN`` a 2-D reshape whose row extents are both
        even keeps each lane's half of the elements (row-major, the first half of the rows before
        is the first half after), so it halves the rows of its result; anything else is an error
        naming the reshape."""
        before = call.args[0].type.shape  # type: ignore[attr-defined]
        after = tuple(call.attrs["shape"])
        valid = call.args[0].type.valid_shape  # type: ignore[attr-defined]
        assert self.axis is not None
        other = 1 - self.axis
        turned = (
            len(before) == len(after) == 2
            and before[other] == 1
            and after[self.axis] == 1
            and after[other] == before[self.axis]
            and before[self.axis] % 2 == 0
            and (valid is None or tuple(valid) == tuple(before))
        )
        if turned:  # [R, 1] -> [1, R] (rows): each lane's [R/2, 1] becomes its [1, R/2]
            share = args[0].type.shape  # type: ignore[attr-defined]
            shape = [1, 1]
            shape[other] = share[self.axis]
            self.made_crosswise = True
            return make_call(call.op, args, {**call.attrs, "shape": tuple(shape)}, call.span)
        keeps_rows = (
            self.axis == 0
            and len(before) == len(after) == 2
            and before[0] % 2 == 0
            and after[0] % 2 == 0
            and (valid is None or tuple(valid) == tuple(before))
        )
        if not keeps_rows:
            why = (
                "a reshape moves elements between rows, so lanes holding column halves cannot do it"
                if self.axis == 1
                else f"it halves rows only for a 2-D reshape of a whole tile whose row extents are both "
                f"even, and this one reshapes {list(before)} to {list(after)}"
            )
            raise _Rejected(
                f"pl.split({self.mode!r}) cannot halve the view (pl.reshape{self.at_line(call)}: {why})",
                call.span or self.fn.span,
                "reshape to (and from) an even number of rows" if self.axis == 0 else None,
            )
        return make_call(call.op, args, {**call.attrs, "shape": (after[0] // 2, after[1])}, call.span)

    def slice(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """A slice that keeps the split axis whole (offset 0, the operand's whole extent) is a
        slice of each lane's share; one that cuts the split axis would need the other lane's part."""
        assert self.axis is not None
        full = call.args[0].type.shape  # type: ignore[attr-defined]
        shape = tuple(call.attrs["shape"])
        start = args[1].elements[self.axis]  # type: ignore[attr-defined]
        if not (isinstance(start, Const) and start.value == 0 and shape[self.axis] == full[self.axis]):
            raise _Rejected(
                f"pl.split({self.mode!r}) cannot halve the view (pl.slice{self.at_line(call)} cuts "
                f"{self.axis_name()}: extent {shape[self.axis]} of {full[self.axis]}, which the lanes "
                "hold in halves)",
                call.span or self.fn.span,
                f"slice the whole {self.axis_name()} (offset 0, extent {full[self.axis]}) in the split "
                "scope, and cut it after the vector work",
            )
        lane_shape = list(shape)
        lane_shape[self.axis] = args[0].type.shape[self.axis]  # type: ignore[attr-defined]
        return make_call(call.op, args, {**call.attrs, "shape": tuple(lane_shape)}, call.span)

    def with_lane_valid(self, call: Call, args: tuple[Expr, ...]) -> Call:
        """``pl.set_validshape`` / ``pl.fillpad`` of a lane's share: their valid shape (given, or
        the operand's constant one) becomes the lane's part of it."""
        k = _VALID_OPERANDS[call.op]
        share = args[0].type.shape  # type: ignore[attr-defined]
        if len(args) > k:
            valid = self.lane_valid(args[k], share)
        else:  # fillpad of a tile with a constant valid shape (or none)
            tile = call.args[0].type
            assert isinstance(tile, TileType)
            valid = self.valid(tile.valid_shape or tile.shape, tile.shape, share)
        return make_call(call.op, (*args[:k], valid, *args[k + 1 :]), call.attrs, call.span)

    def at_line(self, call: Call) -> str:
        return f" at line {call.span.line}" if call.span else ""

    def valid(self, given: tuple[int, ...], full: tuple[int, ...], share: tuple[int, ...]) -> TupleExpr:
        """The lane's valid shape of a tile of extent ``full`` whose (constant) valid shape is
        ``given``: the unsplit valid extent off the axis, the lane's part of it along the axis."""
        if self.axis is None or (given[self.axis] == full[self.axis] and full[self.axis] % 2 == 0):
            return index_tuple([Const(share[d] if d == self.axis else n, INDEX) for d, n in enumerate(given)])
        return self.lane_valid(index_tuple([Const(n, INDEX) for n in given]), share, full)

    def lane_valid(
        self, valid: Expr, share: tuple[int, ...], full: tuple[int, ...] | None = None
    ) -> TupleExpr:
        """The lane's part of the valid shape ``valid`` (a tuple of index exprs) of a split tile
        whose lanes hold ``share``: along the axis lane 0 gets ``min(v, s)`` and lane 1 the rest,
        ``min(s, max(v - lane * s, 0))``; a whole odd extent ``2s - 1`` is just ``s - lane``."""
        assert isinstance(valid, TupleExpr) and self.axis is not None
        elements = list(valid.elements)
        v, s = elements[self.axis], share[self.axis]
        if full is not None and isinstance(v, Const) and v.value == full[self.axis] == 2 * s - 1:
            elements[self.axis] = make_call(scalar.sub, (Const(s, INDEX), self.lane))
        else:
            rest = make_call(scalar.sub, (v, make_call(scalar.mul, (self.lane, Const(s, INDEX)))))
            elements[self.axis] = make_call(
                scalar.min, (Const(s, INDEX), make_call(scalar.max, (rest, Const(0, INDEX))))
            )
        return index_tuple(elements)

    def share(self, shape: tuple[int, ...], tile: str, call: Call) -> tuple[int, ...]:
        """Lane 0's (the ceiling) share of ``shape``, checked to be splittable."""
        self.check_extent(shape, tile, call.span or self.fn.span)
        return split_shape(shape, self.mode)

    def check_extent(self, shape: tuple[int, ...], tile: str, span: SourceSpan | None) -> None:
        """An extent of 1 along the split axis leaves lane 1 nothing: a compile error naming the
        tile and the axis, at ``span`` (the line that made the tile)."""
        if self.axis is None:
            return
        extent = self.extent(shape)
        if extent < 2:
            raise _Rejected(
                f"pl.split({self.mode!r}) cannot split tile '{tile}' along {self.axis_name()}: "
                f"its extent {extent} leaves nothing for AIV lane 1",
                span,
            )

    def axis_name(self) -> str:
        return f"dim {self.axis} ({'rows' if self.axis == 0 else 'columns'})"

    def shifted(self, offsets: Expr, share: tuple[int, ...]) -> TupleExpr:
        assert isinstance(offsets, TupleExpr) and self.axis is not None
        elements = list(offsets.elements)
        step = make_call(scalar.mul, (self.lane, Const(share[self.axis], INDEX)))
        elements[self.axis] = index_add(elements[self.axis], step)
        return index_tuple(elements)


def _name(e: Expr, default: str) -> str:
    """The variable ``e`` names, or ``default``."""
    return e.name if isinstance(e, Var) else default


def _space(e: Expr) -> MemorySpace | None:
    return e.type.memory_space if isinstance(e.type, TileType) else None
