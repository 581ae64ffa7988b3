"""What a timing-only run still computes: the values that steer a kernel's walk.

A run with ``RunConfig(timing_only=True)`` models every cycle of a full run without the tile
values. What the walk needs of the numbers is what decides *where it goes* and *what it touches*:
loop bounds and branch conditions, the offsets and valid shapes of every access (GM regions,
their bounds checks, the race and coherence records), an indexed access's index tile, the
operands of pipe, sync and prefetch ops. :func:`steering_of` finds, once per kernel, the static
backward slice of those values: every op whose result (or a tile it writes in place) feeds one,
through loops' carried values, ``if`` results, in-place writes and the GM tensors it reads. Those
ops are computed in a timing-only run; every other op only takes its time and its address checks.

A steering value read from GM needs GM that holds numbers: the host's own tensors do, what a
task wrote in a timing-only run does not (:class:`UnrealGm` keeps those regions), and reading
one for a steering value is a :class:`~pypto.ir.errors.TimingOnlyError` naming the value and the
tensor. A steering value that crosses a pipe from the other side of a core group makes the whole
launch compute its numbers (:func:`launch_steering`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from pypto.ir import (
    Allocation,
    Assign,
    Break,
    Call,
    Const,
    Continue,
    DynDim,
    Expr,
    For,
    Function,
    If,
    MemoryPlan,
    PyptoError,
    Stmt,
    TupleExpr,
    Var,
    While,
    get_op,
)
from pypto.ir.errors import SourceSpan, TimingOnlyError, at_line
from pypto.ir.launch import LaunchPlan
from pypto.ir.nodes import nested_bodies, stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import GmAccess, InPipeSlot, Role
from pypto.ir.ops.spec import STORAGE, OpSpec
from pypto.ir.walker import INDEX_OPS
from pypto_sim_a2a3.checks.coherence import Access, gm_accesses
from pypto_sim_a2a3.checks.footprints import tensor_frame
from pypto_sim_a2a3.engine.crosscore import LAUNCH_OPS

# The operand roles that say where an op goes, not what it computes.
_ADDRESS_ROLES = frozenset({Role.OFFSETS, Role.VALID_SHAPE, Role.HANDLE})


@dataclass(frozen=True)
class Steering:
    """The steering slice of one kernel: ``calls`` (by ``id``) to compute, ``names`` of the
    variables that hold numbers (a tile bound or carried to one of them is copied into its
    buffer), ``crosses_pipe`` whether a steering value comes from a pipe (then every kernel of the
    launch computes everything)."""

    calls: frozenset[int]
    names: frozenset[str]
    crosses_pipe: bool


_STEERING: weakref.WeakKeyDictionary[Function, Steering] = weakref.WeakKeyDictionary()


def steering_of(fn: Function) -> Steering:
    """The steering slice of kernel ``fn`` (a static fact of the function, found once)."""
    found = _STEERING.get(fn)
    if found is None:
        found = _STEERING[fn] = _Slicer(fn).slice()
    return found


_LAUNCHES: weakref.WeakKeyDictionary[LaunchPlan, dict[str, Steering | None]] = weakref.WeakKeyDictionary()


def launch_steering(plan: LaunchPlan) -> dict[str, Steering | None]:
    """Per kernel of ``plan``, its steering slice, or None where it must compute everything: a
    steering value of one of the launch's kernels crosses a pipe. (Found once per plan.)"""
    found = _LAUNCHES.get(plan)
    if found is None:
        slices = {seat.kernel.name: steering_of(seat.kernel) for seat in plan.seats}
        crosses = any(s.crosses_pipe for s in slices.values())
        found = dict.fromkeys(slices) if crosses else dict(slices)
        _LAUNCHES[plan] = found
    return found


@dataclass(frozen=True)
class Control:
    """The control slice of one kernel: what decides which steps a block takes, not where in GM
    they go. Its roots are the loop bounds, the branch and while conditions, the slot variables of
    slotted buffers (which bytes a tile takes) and the operands of launch ops that are no storage
    (an event id): never a GM offset or an indexed access's index, and never an on-chip
    offset or valid shape (a tile op's result is bound in its own buffer and its cost is its call's;
    a pipe checks the valid shape pushed against the one popped, an error the numbers walk meets,
    and times the whole tile). ``calls`` (by ``id``) and ``names`` are the slice; ``slotted`` maps
    each slotted tile to its allocation; ``traceable`` whether every call of the slice can run outside the
    core (scalar math, index ops, GM reads, tile math), no pipe pop or GM write among them;
    ``recorded`` maps a launch op (by ``id``) to its operands that are roots and no constants."""

    calls: frozenset[int]
    names: frozenset[str]
    slotted: dict[str, Allocation]
    traceable: bool
    recorded: dict[int, tuple[int, ...]]


_CONTROL: weakref.WeakKeyDictionary[Function, dict[bool, Control]] = weakref.WeakKeyDictionary()


def control_of(fn: Function, valid_shapes: bool = False) -> Control:
    """The control slice of kernel ``fn`` (a static fact of the function, found once);
    ``valid_shapes``: with the valid shapes of its pipe ops as roots too (what the blocks whose
    numbers walk together must share: a batch pushes one valid shape for all its blocks)."""
    found = _CONTROL.setdefault(fn, {})
    control = found.get(valid_shapes)
    if control is None:
        control = found[valid_shapes] = _ControlSlicer(fn, valid_shapes).control()
    return control


class _Slicer:
    """The backward walk from a kernel's steering roots over what defines each value."""

    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.names: set[str] = set()
        self.calls: set[int] = set()
        self.crosses_pipe = False
        self._work: list[str] = []  # names needed whose definitions are not walked yet
        self.defs: dict[str, list[Call]] = {}  # name -> the call assigned to it
        self.writers: dict[
            str, list[Call]
        ] = {}  # name -> the calls writing it in place (a tile, a GM tensor)
        self.carried: dict[str, list[Expr]] = {}  # iter_arg, result, alias -> what flows into it
        self._index()

    def slice(self) -> Steering:
        for root in self._roots():
            self._need_expr(root)
        while self._work:
            self._need_name(self._work.pop())
        return Steering(frozenset(self.calls), frozenset(self.names), self.crosses_pipe)

    # ------------------------------------------------------------ what defines what

    def _index(self) -> None:
        for stmt in walk_stmts(self.fn.body):
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                self.defs.setdefault(stmt.target.name, []).append(stmt.value)
            elif isinstance(stmt, Assign):
                self.carried.setdefault(stmt.target.name, []).append(stmt.value)
            if isinstance(stmt, (For, While)):
                jumps = list(_jumps(stmt.body))
                for i, var in enumerate(stmt.iter_args):
                    flows = [stmt.init_values[i], stmt.yields[i]] if i < len(stmt.yields) else []
                    flows += [j.values[i] for j in jumps if i < len(j.values)]
                    self.carried.setdefault(var.name, []).extend(flows)
                for var, iter_arg in zip(stmt.results, stmt.iter_args, strict=False):
                    self.carried.setdefault(var.name, []).append(iter_arg)
            elif isinstance(stmt, If):
                for i, var in enumerate(stmt.results):
                    arms = [y[i] for y in (stmt.then_yields, stmt.else_yields) if i < len(y)]
                    self.carried.setdefault(var.name, []).extend(arms)
            for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                for e in walk_expr(expr):
                    if isinstance(e, Call):
                        for name in _written_names(e):
                            self.writers.setdefault(name, []).append(e)

    def _roots(self) -> Iterator[Expr]:
        """The expressions the walk's course and the ops' places depend on."""
        for stmt in walk_stmts(self.fn.body):
            if isinstance(stmt, For):
                yield from (stmt.start, stmt.stop, stmt.step)
            elif isinstance(stmt, (While, If)):
                yield stmt.cond
            for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                for e in walk_expr(expr):
                    if isinstance(e, Call):
                        yield from self._call_roots(e)

    def _call_roots(self, call: Call) -> Iterator[Expr]:
        """The operands of ``call`` that are roots of the slice."""
        return _steering_operands(call)

    # ------------------------------------------------------------ the backward walk

    def _need_expr(self, expr: Expr) -> None:
        for e in walk_expr(expr):
            if isinstance(e, Var):
                self._need(e.name)
            elif isinstance(e, Call):
                self._need_call(e)

    def _need(self, name: str) -> None:
        if name not in self.names:
            self.names.add(name)
            self._work.append(name)

    def _need_call(self, call: Call) -> None:
        if id(call) in self.calls:
            return
        self.calls.add(id(call))
        spec = _spec(call)
        if spec is not None and spec.has(InPipeSlot):
            self.crosses_pipe = True  # the value was computed on the other side of the pipe
        for arg in call.args:
            self._need_expr(arg)

    def _need_name(self, name: str) -> None:
        """``name`` holds numbers: what assigns it, flows into it or writes it in place (a GM
        tensor a steering value is read from: this kernel's stores into it) computes too."""
        for call in self.defs.get(name, ()):
            self._need_call(call)
        for flow in self.carried.get(name, ()):
            self._need_expr(flow)
        for call in self.writers.get(name, ()):
            self._need_call(call)


def _spec(call: Call) -> OpSpec | None:
    try:
        return get_op(call.op)
    except PyptoError:  # an op the table does not know: the walk reports it where it runs
        return None


def _steering_operands(call: Call) -> Iterator[Expr]:
    """The operands of ``call`` that say where it goes: offsets, valid shapes and handles, an
    indexed access's index, and every non-storage operand of a launch op (a pipe's valid shape,
    an event id); unknown operands, to be safe."""
    spec = _spec(call)
    if spec is None or spec.open:
        yield from call.args
        return
    launch = call.op in LAUNCH_OPS
    gm = spec.trait(GmAccess)
    for index, arg in enumerate(call.args):
        role = spec.operands[index].role if index < len(spec.operands) else None
        if (
            role is None
            or role in _ADDRESS_ROLES
            or (launch and role not in STORAGE)
            or (gm is not None and gm.indexed == index)
        ):
            yield arg


def _written_names(call: Call) -> Iterator[str]:
    """The variables ``call`` writes in place (a tile it updates, a GM tensor it stores into)."""
    spec = _spec(call)
    if spec is None:
        return
    for index in spec.writes:
        if index < len(call.args) and isinstance(call.args[index], Var):
            yield call.args[index].name  # type: ignore[attr-defined]


def _jumps(body: Iterable[Stmt]) -> Iterator[Break | Continue]:
    """The ``break`` / ``continue`` statements of a loop body (not of loops nested in it)."""
    for stmt in body:
        if isinstance(stmt, (Break, Continue)):
            yield stmt
        elif not isinstance(stmt, (For, While)):
            for inner in nested_bodies(stmt):
                yield from _jumps(inner)


# ---------------------------------------------------------------- GM without numbers


class Uncomputed:
    """The value of an op a timing-only run skipped (:data:`UNCOMPUTED`). Nothing that steers may
    read it: the steering slice computes every op such a value comes from, so reaching one is a
    bug of the slice."""

    def __repr__(self) -> str:
        return "<not computed: timing-only run>"

    def _steered(self, *_: Any) -> Any:
        raise AssertionError("a timing-only run steered by a value it did not compute")

    __bool__ = __index__ = __int__ = __float__ = _steered


UNCOMPUTED = Uncomputed()


@dataclass(frozen=True)
class _Unreal:
    """A GM region a task wrote without its numbers: its record, and the line that wrote it."""

    access: Access
    span: SourceSpan | None


class UnrealGm:
    """The GM regions the tasks of a timing-only run wrote without numbers (what the host
    passed in holds its own numbers until a task writes it). Reading one for a value that steers
    the run is a :class:`TimingOnlyError`."""

    def __init__(self) -> None:
        self._by_storage: dict[int, list[_Unreal]] = {}

    def written(self, call: Call, args: tuple[Any, ...]) -> None:
        """A task's ``call`` wrote GM without computing what it wrote."""
        for access in gm_accesses("", call, args):
            self._by_storage.setdefault(access.key[0], []).append(_Unreal(access, call.span))

    def check_read(self, call: Call, args: tuple[Any, ...], value: str) -> None:
        """``call`` (written ``value``) reads GM for a value that steers the run: an error if a
        task wrote it without numbers."""
        if not self._by_storage:
            return
        for access in gm_accesses("", call, args):
            writer = self._writer(access)
            if writer is not None:
                raise _unreal_read(call, access.tensor, value, writer)

    def check_element(self, tensor: torch.Tensor, call: Call, name: str, value: str) -> None:
        """The host reads an element (``tensor``, a one-element view of ``name``) with ``value``
        (``pl.read(...)``, ``predicate=``) to steer the run."""
        if not self._by_storage:
            return
        key, origin = tensor_frame(tensor)
        for unreal in self._by_storage.get(key[0], ()):
            if unreal.access.key != key or _meets(unreal.access, origin):
                raise _unreal_read(call, name, value, unreal)

    def _writer(self, access: Access) -> _Unreal | None:
        for unreal in self._by_storage.get(access.key[0], ()):
            if unreal.access.key != access.key or unreal.access.region.overlap(access.region):
                return unreal
        return None


def _meets(access: Access, element: tuple[int, ...]) -> bool:
    region = access.region
    return all(lo <= e < hi for lo, hi, e in zip(region.lo, region.hi, element, strict=True))


def _unreal_read(call: Call, tensor: str, value: str, writer: _Unreal) -> TimingOnlyError:
    return TimingOnlyError(
        f"{value} reads {tensor} for a value that steers a timing-only run (a loop bound, a branch, an "
        f"address or a predicate), but a task of this run wrote that part of {tensor} at "
        f"{at_line(writer.span)} without computing it: a timing-only run computes no values tasks write",
        call.span,
        "run with numbers (drop timing_only / --timing-only), or compute that tensor from the host's "
        "inputs before the timing-only run",
    )


def written_text(span: SourceSpan | None, fallback: str) -> str:
    """The expression at ``span`` as the user wrote it (``pl.read(counts, [0])``), else ``fallback``."""
    if span is None or span.end_col is None:
        return fallback
    text = span.source_line()[span.col : span.end_col].strip()
    return text if text.startswith(fallback) else fallback


@dataclass(frozen=True)
class TimingOnly:
    """What a launch of a timing-only run knows: per kernel its steering slice (None: it
    computes everything), and the run's GM regions without numbers."""

    steering: dict[str, Steering | None]
    unreal: UnrealGm


class _ControlSlicer(_Slicer):
    """The backward walk from what decides a kernel's steps (see :class:`Control`)."""

    def __init__(self, fn: Function, valid_shapes: bool) -> None:
        self.valid_shapes = valid_shapes
        plan = fn.attrs.get("memory_plan")
        allocations = plan.allocations if isinstance(plan, MemoryPlan) else {}
        self.slotted = {name: a for name, a in allocations.items() if a.slots > 1 and a.slot_var}
        self.recorded: dict[int, tuple[int, ...]] = {}
        super().__init__(fn)

    def control(self) -> Control:
        for name in {a.slot_var for a in self.slotted.values()}:
            assert name is not None
            self._need(name)
        steering = self.slice()
        traceable = not steering.crosses_pipe and all(self._traceable(c) for c in self._sliced_calls())
        return Control(steering.calls, steering.names, self.slotted, traceable, self.recorded)

    def _call_roots(self, call: Call) -> Iterator[Expr]:
        return self._launch_operands(call) if call.op in LAUNCH_OPS else iter(())

    def _launch_operands(self, call: Call) -> Iterator[Expr]:
        spec = _spec(call)
        kept = []
        for index, arg in enumerate(call.args):
            role = spec.operands[index].role if spec is not None and index < len(spec.operands) else None
            timed = role is not Role.VALID_SHAPE or self.valid_shapes
            if role not in STORAGE and timed and not _constant(arg):
                kept.append(index)
                yield arg
        if kept:
            self.recorded[id(call)] = tuple(kept)

    def _sliced_calls(self) -> Iterator[Call]:
        for stmt in walk_stmts(self.fn.body):
            for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                for e in walk_expr(expr):
                    if isinstance(e, Call) and id(e) in self.calls:
                        yield e

    @staticmethod
    def _traceable(call: Call) -> bool:
        spec = _spec(call)
        if spec is None or call.op in INDEX_OPS:
            return spec is not None
        access = spec.trait(GmAccess)
        return call.op not in LAUNCH_OPS and not (access is not None and access.write)


def _constant(expr: Expr) -> bool:
    if isinstance(expr, (Const, DynDim)):
        return True
    return isinstance(expr, TupleExpr) and all(_constant(e) for e in expr.elements)
