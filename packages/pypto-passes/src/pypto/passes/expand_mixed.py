"""ExpandMixedKernel: each InCore kernel becomes an AIC kernel, an AIV kernel, or both.

A pure cube kernel becomes ``AIC``, a pure vector kernel ``AIV`` (it keeps its ``split``: split
``UP_DOWN`` or ``LEFT_RIGHT``, both AIV lanes run it on their shares). A mixed kernel ``k`` becomes
``k_aic`` (cube ops + the shared control flow), ``k_aiv`` (vector ops + the same control
flow) and a ``Group`` kernel that launches both on one core group. Each ``aiv_shard`` becomes
``tpush_to_aiv`` on the AIC and ``tpop_from_aic`` on the AIV; each ``aic_gather`` becomes
``tpush_to_aic`` on the AIV and ``tpop_from_aiv`` on the AIC. Unless the author set the pipe
up by hand, both kernels start with the automatic pipe setup and the consumer reserves the
ring at the bottom of its memory space. Its ``slot_size`` is the largest tile that crosses,
rounded up to the target's alignment of the space each ring lives in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pypto.ir import (
    UNIT,
    Assign,
    Call,
    Eval,
    For,
    Function,
    FunctionKind,
    If,
    MemorySpace,
    ParseError,
    PipeSetupError,
    PlatformError,
    Program,
    Reservation,
    Return,
    SourceSpan,
    SplitAivRegion,
    SplitMode,
    Stmt,
    Target,
    TileType,
    Var,
    make_call,
)
from pypto.ir.nodes import (
    LOOP_STMTS,
    While,
    nested_bodies,
    pick_carried,
    stmt_bindings,
    stmt_exprs,
    used_vars,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import (
    GmAccess,
    Ordering,
    PipeAction,
    PipeDirection,
    PipeEnd,
    get_op,
    op,
    pipe_op,
    short_name,
    trait_of,
    user_name,
)
from pypto.ir.ops import system as system_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.rewrite import NameGen, at_function, map_effect_calls
from pypto.ir.sides import Side, call_side, first_ops_by_side, is_boundary, space_side
from pypto.ir.valid import build_as_parsed
from pypto.passes.gm_access import written_tensors
from pypto.passes.manager import PassContext
from pypto.passes.pipe_buffers import buffer_attr, kernel_rings, resolve_pipes
from pypto.passes.vector_split import has_split_regions

C2V, V2C = PipeDirection.C2V.mask_bit, PipeDirection.V2C.mask_bit
RING_REASON = "cross-core pipe ring"


def _init_op(side: Side) -> str:
    return pipe_op(PipeAction.INIT, side=side)


# The space each direction's ring lives in: the consumer's.
_CONSUMER_SPACE = {C2V: MemorySpace.Vec, V2C: MemorySpace.Mat}


@dataclass
class _Pipes:
    """What crosses, per direction: the largest full tile in bytes."""

    tile_bytes: dict[int, int] = field(default_factory=dict)

    def note(self, direction: int, t: object) -> None:
        if isinstance(t, TileType):
            self.tile_bytes[direction] = max(self.tile_bytes.get(direction, 0), t.nbytes)

    @property
    def dir_mask(self) -> int:
        return sum(self.tile_bytes)

    def slot_size(self, target: Target) -> int:
        """The largest crossing tile, rounded up to the alignment of every ring it sizes: slots
        sit at multiples of ``slot_size`` in the consumer's space, so each must start aligned."""
        alignment = math.lcm(*(target.spec(_CONSUMER_SPACE[d]).alignment for d in self.tile_bytes))
        return -(-max(self.tile_bytes.values()) // alignment) * alignment


# The functions that call kernels.
_CONTROL = (FunctionKind.Orchestration, FunctionKind.Opaque)


def _unit_calls(body: tuple[Stmt, ...], callees: set[str]) -> tuple[Stmt, ...]:
    """``body`` with its calls of ``callees`` typed as giving nothing (an InCore kernel that
    returned its output became a Group, whose halves return nothing)."""

    def unit(call: Call) -> Call:
        return replace(call, type=UNIT) if call.attrs.get("callee") in callees else call

    return map_effect_calls(body, unit)


def _regions_inlined(fn: Function) -> Function:
    """A hand-written AIV function's ``pl.split_aiv`` regions: the function already runs on both
    lanes, so a region is its body after ``lane = pl.get_subblock_idx()``. An AIC function runs on
    the cube and cannot hold one."""
    return replace(fn, body=_inline_regions(fn.body, fn))


def _inline_regions(body: tuple[Stmt, ...], fn: Function) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, SplitAivRegion):
            if fn.kind is not FunctionKind.AIV:
                raise ParseError(
                    f"a pl.split_aiv region in the AIC function '{fn.name}': its body would run on the "
                    "vector lanes, but an AIC function runs on the cube",
                    stmt.span or fn.span,
                    "move the region into the AIV function (or write the kernel as one "
                    "pl.FunctionType.InCore function / pl.at scope, which the compiler splits)",
                )
            out.append(Assign(stmt.lane, make_call(tile_ops.get_subblock_idx, ()), stmt.span))
            out.extend(_inline_regions(stmt.body, fn))
        elif isinstance(stmt, (For, While, If)):
            out.append(with_bodies(stmt, tuple(_inline_regions(b, fn) for b in nested_bodies(stmt))))
        else:
            out.append(stmt)
    return tuple(out)


# The halves of a mixed kernel, and the side each runs on.
_HALVES = {FunctionKind.AIC: Side.CUBE, FunctionKind.AIV: Side.VECTOR}


@dataclass(frozen=True)
class ExpandMixedKernel:
    name: ClassVar[str] = "ExpandMixedKernel"
    pipeline_name: ClassVar[str] = "expand-mixed"

    def run(self, program: Program, ctx: PassContext) -> Program:
        program = resolve_pipes(program, ctx.target)
        funcs: list[Function] = []
        names = NameGen(fn.name for fn in program.functions.values())
        for fn in program.functions.values():
            if fn.kind is FunctionKind.InCore:
                _check_scope_buffers(fn)
                expanded = at_function(lambda f: self.expand(f, ctx.target, names), fn)
                funcs.extend(_with_buffers(program, expanded, ctx.target) if _buffers_of(fn) else expanded)
            elif fn.kind in _HALVES and "reservations" not in fn.attrs:
                funcs.append(self.reserve(_regions_inlined(fn)))
            else:
                funcs.append(fn)
        groups = {f.name for f in funcs if f.kind is FunctionKind.Group}
        made = groups - {f.name for f in program.functions.values() if f.kind is FunctionKind.Group}
        if made:  # a Group's call gives what its AIC half returns: nothing
            funcs = [replace(f, body=_unit_calls(f.body, made)) if f.kind in _CONTROL else f for f in funcs]
        return program.with_functions(tuple(funcs))

    def reserve(self, fn: Function) -> Function:
        """A hand-written AIC or AIV function: the pipe rings its own ``*_initialize_pipe`` sets up
        are reserved in its space, as for the halves this pass makes."""
        rings = kernel_rings(fn)
        return replace(fn, attrs={**fn.attrs, "reservations": rings}) if rings else fn

    def expand(self, fn: Function, target: Target, names: NameGen | None = None) -> list[Function]:
        """``fn`` as a Group, AIC and AIV kernel (or one AIC / AIV kernel); ``names`` are those
        the program has taken, so that the new kernels' names are unique in it."""
        names = names if names is not None else NameGen([fn.name])
        fn = _with_default_depths(fn, target)
        sides = first_ops_by_side(fn)
        hint = fn.attrs.get("name_hint", fn.name)
        attrs = {k: v for k, v in fn.attrs.items() if k != "name_hint"}
        if not (Side.CUBE in sides and Side.VECTOR in sides) and not has_split_regions(fn):
            kind = FunctionKind.AIC if Side.CUBE in sides else FunctionKind.AIV
            return [replace(fn, kind=kind, attrs=attrs)]
        mode = fn.attrs.get("split") or SplitMode.NONE
        pipes = _Pipes()
        splitter = _SideSplitter(mode, pipes, explicit=has_split_regions(fn), buffer_sides=_buffers_of(fn))
        cube, vector = splitter.block(fn.body, in_region=False)
        aic_attrs, aiv_attrs = dict(attrs), dict(attrs)
        user_inits = _user_pipe_inits(fn)
        if pipes.dir_mask and not user_inits:
            slot_num = _slot_num(fn, target, pipes.dir_mask)
            setup = {
                "dir_mask": pipes.dir_mask,
                "slot_size": pipes.slot_size(target),
                "slot_num": slot_num,
            }
            cube = (Eval(make_call(_init_op(Side.CUBE), (), setup, fn.span), fn.span), *cube)
            vector = (Eval(make_call(_init_op(Side.VECTOR), (), setup, fn.span), fn.span), *vector)
            aic_attrs["pipe_setup"] = aiv_attrs["pipe_setup"] = "automatic"
            rings = _rings(setup, None)
        else:
            _check_pipes_set_up(fn, user_inits)
            rings = [
                r
                for call in user_inits
                if not any(call.attrs.get(buffer_attr(d)) for d in PipeDirection)  # placed by _with_buffers
                for r in _rings(call.attrs, call.span, side=call_side(call))
            ]
        for kernel_attrs, side in ((aic_attrs, Side.CUBE), (aiv_attrs, Side.VECTOR)):
            mine = tuple(r for r in rings if (r.space is MemorySpace.Vec) == (side is Side.VECTOR))
            if mine:
                kernel_attrs["reservations"] = mine
        # Two kernels outlined from one name_hint (two specializations of the function holding the
        # scope) are told apart by their own names: mm_1 splits into mm_1_aic and mm_1_aiv.
        base = hint if not {f"{hint}_aic", f"{hint}_aiv"} & names.taken else fn.name
        # Pushes of partial tiles carry their run-time valid shape, as the parser builds them.
        local = NameGen.for_function(fn)
        if not splitter.explicit:
            written = written_tensors(fn.body)
            cube, vector = (_loads_before_pops(body, written) for body in (cube, vector))
        cube, vector = (build_as_parsed(body, local.fresh) for body in (cube, vector))
        aic = Function(names.fresh(f"{base}_aic"), fn.params, cube, FunctionKind.AIC, fn.span, aic_attrs)
        aiv = Function(names.fresh(f"{base}_aiv"), fn.params, vector, FunctionKind.AIV, fn.span, aiv_attrs)
        args = tuple(p.var for p in fn.params)
        launch = tuple(
            Eval(make_call(op.call, args, {"callee": k.name}, fn.span, type=UNIT), fn.span)
            for k in (aic, aiv)
        )
        group_attrs = {"split": mode, "pipe_name": hint} if not splitter.explicit else {"pipe_name": hint}
        group = Function(fn.name, fn.params, launch, FunctionKind.Group, fn.span, group_attrs)
        return [group, aic, aiv]


_POPS = frozenset({tile_ops.tpop_from_aic, tile_ops.tpop_from_aiv})


def _loads_before_pops(body: tuple[Stmt, ...], written: set[Var]) -> tuple[Stmt, ...]:
    """Each load of a tensor nobody writes in the scope moves before the pops just ahead of it
    that it does not read: its transfer then runs while the pop waits for the other core,
    instead of after the pop (a compiler-made pipe carries tiles only, never a tensor's
    readiness, so the order of a load of a read-only tensor and a pop is free)."""
    out: list[Stmt] = []
    for stmt in body:
        inner = nested_bodies(stmt)
        if inner:
            stmt = with_bodies(stmt, tuple(_loads_before_pops(b, written) for b in inner))
        if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
            access = trait_of(stmt.value, GmAccess)
            if access is not None and not access.write and stmt.value.args[access.tensor] not in written:
                reads = set(used_vars(stmt.value))
                at = len(out)
                while at > 0:
                    prev = out[at - 1]
                    if not (
                        isinstance(prev, Assign)
                        and isinstance(prev.value, Call)
                        and prev.value.op in _POPS
                        and prev.target not in reads
                    ):
                        break
                    at -= 1
                out.insert(at, stmt)
                continue
        out.append(stmt)
    return tuple(out)


def _slot_num(fn: Function, target: Target, dir_mask: int) -> int:
    slot_num = fn.attrs.get("slot_num") or target.default_slot_num
    limit = target.max_pipe_slots if dir_mask != 3 else target.max_pipe_slots // 2
    if slot_num > limit:
        per = "per direction" if dir_mask != 3 else "per direction when both directions are used"
        raise PlatformError(
            f"pl.cross_core_slot(slot_num={slot_num}) asks for more ring slots than {target.name} "
            f"pipes have ({limit} {per})",
            fn.span,
            f"use slot_num between 1 and {limit}",
        )
    return slot_num


def _rings(attrs: Mapping[str, Any], setup: SourceSpan | None, side: Side | None = None) -> list[Reservation]:
    """Rings the consumers reserve: Vec for cube->vector, Mat for vector->cube. ``setup`` is the
    span of the user's pipe setup call; None for the automatic pipe."""
    slot_size = attrs["slot_size"]
    size = attrs["slot_num"] * slot_size
    automatic = setup is None
    rings = []
    if attrs["dir_mask"] & C2V and side in (None, Side.VECTOR):
        rings.append(Reservation(MemorySpace.Vec, size, RING_REASON, automatic, slot_size, setup))
    if attrs["dir_mask"] & V2C and side in (None, Side.CUBE):
        rings.append(Reservation(MemorySpace.Mat, size, RING_REASON, automatic, slot_size, setup))
    return rings


def _carried_on(stmt: Stmt, side: Side) -> Stmt:
    """A loop (or an if) as one side runs it: it carries its scalars and the tiles of that side
    only."""
    carried = stmt.results if isinstance(stmt, (*LOOP_STMTS, If)) else ()
    if not carried:
        return stmt
    keep = [
        k
        for k, var in enumerate(carried)
        if not isinstance(var.type, TileType) or space_side(var.type.memory_space) in (None, side)
    ]
    return pick_carried(stmt, keep)


def _direction_of(call: Call) -> PipeDirection | None:
    """The pipe direction a hand-written push, pop or free uses (None for other ops and inits)."""
    end = trait_of(call, PipeEnd)
    return end.direction if end is not None else None


def _check_pipes_set_up(fn: Function, inits: list[Call]) -> None:
    """Every hand-written push/pop/free needs both sides to set up its direction; the depth is
    the setup's, so a ``pl.cross_core_slot`` on the scope would be silently ignored."""
    slot_num = fn.attrs.get("slot_num")
    if slot_num is not None and inits:
        first = inits[0]
        raise ParseError(
            f"pl.cross_core_slot(slot_num={slot_num}) sets the depth of the automatic pipe, but this scope "
            f"sets up its pipe by hand ({user_name(first.op)} at line "
            f"{first.span.line if first.span else '?'}, "
            f"slot_num={first.attrs.get('slot_num')})",
            fn.span,
            f"drop pl.cross_core_slot(...) and write slot_num={slot_num} in both initialize_pipe calls",
        )
    masks = {call_side(c): c.attrs.get("dir_mask", 0) for c in inits}
    for stmt in walk_stmts(fn.body):
        call = stmt.value if isinstance(stmt, (Assign, Eval)) else None
        if not isinstance(call, Call):
            continue
        direction = _direction_of(call)
        if direction is None:
            continue
        bit = direction.mask_bit
        missing = [_init_op(side) for side in (Side.CUBE, Side.VECTOR) if not masks.get(side, 0) & bit]
        if missing:
            calls = [
                f"pl.{short_name(name)}(dir_mask={bit}, slot_size=..., slot_num=...)" for name in missing
            ]
            setup = " and ".join(calls)
            raise ParseError(
                f"pl.{short_name(call.op)} uses the {direction.arrow} pipe, which this kernel never sets up",
                call.span,
                f"start the kernel with {setup}",
            )


_BUFFER_SIDE = (system_ops.reserve_buffer, system_ops.import_peer_buffer)


def _buffers_of(fn: Function) -> dict[str, Side]:
    """The ring buffers a scope's pipe setups name, each with the side that consumes it: the
    vector lanes for a cube->vector ring, the cube for a vector->cube one."""
    sides: dict[str, Side] = {}
    for call in _user_pipe_inits(fn):
        for direction in PipeDirection:
            name = call.attrs.get(buffer_attr(direction))
            if name is not None:
                sides[name] = Side.VECTOR if direction is PipeDirection.C2V else Side.CUBE
    return sides


def _check_scope_buffers(fn: Function) -> None:
    """Each buffer a scope reserves or imports is named by one of its pipe setups: that is what
    gives the buffer its side."""
    named = _buffers_of(fn)
    for stmt in walk_stmts(fn.body):
        call = stmt.value if isinstance(stmt, Eval) else None
        if not (isinstance(call, Call) and call.op in _BUFFER_SIDE) or call.attrs["name"] in named:
            continue
        name = call.attrs["name"]
        raise PipeSetupError(
            f"{short_name(call.op)}"
            f"(name={name!r}) in the pl.at scope {fn.attrs.get('name_hint', fn.name)}: no pipe "
            "setup of the scope names the buffer, so it has no side",
            call.span,
            "pass the buffer to both setups, e.g. pl.aic_initialize_pipe(dir_mask=1, slot_size=..., "
            "c2v_consumer_buf=buf) and pl.aiv_initialize_pipe(...) (v2c_consumer_buf= for vector->cube), "
            "or drop it and give the setups slot_num=",
        )


def _with_buffers(program: Program, expanded: list[Function], target: Target) -> list[Function]:
    """The kernels of a scope that reserves its own rings, settled like hand-written ones: each
    buffer placed and each setup given its depth (:func:`resolve_pipes`), and each half reserving
    its buffers (:func:`kernel_rings`)."""
    resolved = resolve_pipes(program.with_functions(expanded), target).functions.values()
    out = []
    for fn in resolved:
        if fn.kind in _HALVES:
            rings = kernel_rings(fn)
            attrs = {k: v for k, v in fn.attrs.items() if k != "reservations"}
            fn = replace(fn, attrs={**attrs, "reservations": rings} if rings else attrs)
        out.append(fn)
    return out


def _with_default_depths(fn: Function, target: Target) -> Function:
    """The scope's pipe setups that name neither a depth nor a ring buffer, given the depth the
    consumer holds: ``local_slot_num``, else the target's default (see :func:`resolve_pipes`)."""

    def settled(call: Call) -> Call:
        if not _is_init(call) or call.attrs.get("slot_num") is not None:
            return call
        if any(call.attrs.get(buffer_attr(d)) for d in PipeDirection):
            return call  # its buffer gives the depth (_with_buffers)
        depth = call.attrs.get("local_slot_num") or target.default_slot_num
        return replace(call, attrs={**call.attrs, "slot_num": depth})

    return replace(fn, body=map_effect_calls(fn.body, settled))


def _user_pipe_inits(fn: Function) -> list[Call]:
    return [
        s.value
        for s in walk_stmts(fn.body)
        if isinstance(s, Eval) and isinstance(s.value, Call) and _is_init(s.value)
    ]


def _is_init(call: Call) -> bool:
    end = trait_of(call, PipeEnd)
    return end is not None and end.action is PipeAction.INIT


def _check_cube_follows(stmt: Stmt, lane_values: set[Var]) -> None:
    """A region's loop or if that holds a crossing runs on the cube too (its push or pop), so its
    condition or bounds may not read the lane, or values only the lanes compute."""
    header = list(stmt_exprs(stmt) if not isinstance(stmt, While) else (stmt.cond,))
    read = next((v for e in header for v in used_vars(e) if v in lane_values), None)
    if read is None:
        return
    construct = "branch" if isinstance(stmt, If) else "loop"
    raise ParseError(
        f"a crossing (pl.aiv_shard / pl.aic_gather) sits under a {construct} "
        f"that reads '{read.name}', a value of the lanes: the cube, which pushes or pops the tile, "
        "cannot follow it",
        stmt.span,
        "shard at the top of the region and gather at its end, outside lane-dependent control flow; "
        "guard only the lane's own work",
    )


@dataclass
class _SideSplitter:
    mode: SplitMode
    pipes: _Pipes
    explicit: bool
    buffer_sides: dict[str, Side] = field(default_factory=dict)  # reserved buffer name -> its side
    lane_values: set[Var] = field(default_factory=set)  # what the lanes of the region being split bind

    def block(self, body: tuple[Stmt, ...], in_region: bool) -> tuple[tuple[Stmt, ...], tuple[Stmt, ...]]:
        cube: list[Stmt] = []
        vector: list[Stmt] = []
        for stmt in body:
            if isinstance(stmt, SplitAivRegion):
                self.check_region(stmt)
                self.lane_values = {stmt.lane} | {v for s in walk_stmts(stmt.body) for v in stmt_bindings(s)}
                lane = Assign(stmt.lane, make_call(tile_ops.get_subblock_idx, ()), stmt.span)
                # The cube takes part only in the region's crossings: it pushes what the lanes
                # shard and pops what they gather.
                crossings, inner = self.block(stmt.body, in_region=True)
                cube.extend(crossings)
                vector.extend((lane, *inner))
            elif isinstance(stmt, (For, While, If)):
                sides = [self.block(b, in_region) for b in nested_bodies(stmt)]
                if in_region and any(c for c, _ in sides):
                    _check_cube_follows(stmt, self.lane_values)
                for side, out, side_bodies in (
                    (Side.CUBE, cube, [c for c, _ in sides]),
                    (Side.VECTOR, vector, [v for _, v in sides]),
                ):
                    on_side = _carried_on(with_bodies(stmt, tuple(side_bodies)), side)
                    carries = bool(getattr(on_side, "results", None)) and not (
                        in_region and side is Side.CUBE
                    )
                    if any(side_bodies) or carries:
                        out.append(on_side)
            elif isinstance(stmt, (Assign, Eval)) and isinstance(stmt.value, Call):
                c, v = self.statement(stmt, in_region)
                cube.extend(c)
                vector.extend(v)
            elif isinstance(stmt, Return):
                continue
            else:
                cube.append(stmt)
                vector.append(stmt)
        return tuple(cube), tuple(vector)

    def statement(self, stmt: Assign | Eval, in_region: bool) -> tuple[list[Stmt], list[Stmt]]:
        call = stmt.value
        assert isinstance(call, Call)
        if is_boundary(call):
            return self.boundary(stmt, call)
        side = call_side(call)
        if call.op in _BUFFER_SIDE:
            side = self.buffer_side(call)
        if side is None and self.explicit and get_op(call.op).has(Ordering):
            side = Side.VECTOR if in_region else Side.CUBE
        if side is None and in_region:
            side = Side.VECTOR  # a region's control state is the lanes' own
        if side is None:
            return [stmt], [stmt]
        return ([stmt], []) if side is Side.CUBE else ([], [stmt])

    def buffer_side(self, call: Call) -> Side:
        """A ``reserve_buffer`` runs on the side that consumes its ring, an ``import_peer_buffer``
        on the side that produces into it (by the direction the scope's setup uses it for)."""
        consumer = self.buffer_sides[call.attrs["name"]]  # _check_scope_buffers: every one is named
        producer = Side.CUBE if consumer is Side.VECTOR else Side.VECTOR
        return consumer if call.op == system_ops.reserve_buffer else producer

    def boundary(self, stmt: Assign | Eval, call: Call) -> tuple[list[Stmt], list[Stmt]]:
        assert isinstance(stmt, Assign)
        value, target = call.args[0], stmt.target
        t = target.type
        assert isinstance(t, TileType)
        split = call.attrs.get("split", self.mode)
        pop_attrs = {"shape": t.shape, "dtype": t.dtype, "split": split}
        if call.op == tile_ops.aiv_shard:
            self.pipes.note(C2V, value.type)
            push = Eval(make_call(tile_ops.tpush_to_aiv, (value,), {"split": split}, call.span), stmt.span)
            pop = Assign(target, make_call(tile_ops.tpop_from_aic, (), pop_attrs, call.span), stmt.span)
            return [push], [pop]
        self.pipes.note(V2C, t)
        push = Eval(make_call(tile_ops.tpush_to_aic, (value,), {"split": split}, call.span), stmt.span)
        pop = Assign(target, make_call(tile_ops.tpop_from_aiv, (), pop_attrs, call.span), stmt.span)
        return [pop], [push]

    def check_region(self, region: SplitAivRegion) -> None:
        for stmt in walk_stmts(region.body):
            if not isinstance(stmt, (Assign, Eval)) or not isinstance(stmt.value, Call):
                continue
            call = stmt.value
            if call_side(call) is Side.CUBE and not is_boundary(call):
                raise ParseError(
                    f"cube op pl.{call.op.split('.', 1)[-1]} inside a pl.split_aiv region, whose body "
                    "runs on the AIV lanes",
                    call.span,
                    "move it before or after the region; hand tiles across with pl.aiv_shard / "
                    "pl.aic_gather inside the region",
                )
