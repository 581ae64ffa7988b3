"""Kernel launches of a lowered program, planned once when the program is loaded.

A ``call`` in the Orchestration function launches a kernel on one core group (contract 2 of
docs/ir.md). Which kernel runs on which core is a static fact of the program, so
:class:`LoadedProgram` computes it once per kernel, as a :class:`LaunchPlan` of :class:`Seat`\\ s:

- an ``AIC`` kernel runs alone on the AIC, an ``AIV`` kernel alone on AIV lane 0, unless it is
  split ``UP_DOWN`` or ``LEFT_RIGHT`` (``attrs["split"]``): then every lane runs it, data-parallel,
  each on its share (its lane from ``get_subblock_idx``);
- a ``Group`` kernel's body calls its AIC kernel, then its AIV kernel: the first runs on the AIC
  and the second on every lane, all at once, sharing the launch's pipes (``<pipe_name>_c2v``,
  ``<pipe_name>_v2c``).

Mirror lane: when every pipe push and pop of a Group's AIV kernel has ``split=NONE`` and the kernel
never asks for its lane (``get_subblock_idx``), lane 1 *mirrors* lane 0 — it follows the control
flow and does every pipe handshake (with data-less tokens) and barrier, but no loads, stores or
compute, so lane 0 alone does the work. The same holds for a Group that ``pl.split(NONE)`` made
(``attrs["split"]`` is ``NONE``) whose vector side uses no pipe at all. A kernel that asks for its
lane divides the work by lane itself, so both its lanes compute.

The first seat (the AIC, then the lanes in order) whose kernel has a loop reports the launch's
progress: the iterations of its outermost loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir.errors import SourceSpan, VerificationError
from pypto.ir.nodes import (
    LOOP_STMTS,
    Call,
    Const,
    Eval,
    Expr,
    Function,
    FunctionKind,
    Program,
    Return,
    SplitMode,
    Var,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)
from pypto.ir.ops import op, split_axis
from pypto.ir.ops import tile as tile_ops

Source = (
    int | Const
)  # where a kernel argument comes from: a position in the launch's arguments, or a constant
_KERNELS = (FunctionKind.AIC, FunctionKind.AIV, FunctionKind.Group)


def _pick(sources: Sequence[Source], args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(args[s] if isinstance(s, int) else s.value for s in sources)


@dataclass(frozen=True, eq=False)
class Seat:
    """One core's part of a launch: ``kind`` is the core (``FunctionKind.AIC`` or ``.AIV``),
    ``lane`` its AIV lane (0 on the AIC), ``kernel`` what it runs on which of the launch's arguments."""

    kind: FunctionKind
    lane: int
    kernel: Function
    sources: tuple[Source, ...]
    mirror: bool = False  # an AIV lane that only mirrors lane 0 (see the module doc)
    reports_progress: bool = False
    span: SourceSpan | None = None  # a Group member's: the call of it in the Group's body

    def args(self, launch_args: Sequence[Any]) -> tuple[Any, ...]:
        """The kernel's arguments, from the launch's."""
        return _pick(self.sources, launch_args)


@dataclass(frozen=True, eq=False)
class LaunchPlan:
    """How one kernel launches: its seats, whether they share pipes (a Group) and their name, and
    which of the launch's arguments a ``call`` of it evaluates to (those its ``Return`` names; for
    a Group, its AIC kernel's)."""

    kernel: Function
    seats: tuple[Seat, ...]
    piped: bool
    pipe_name: str
    returned: tuple[Source, ...]

    def result(self, args: Sequence[Any]) -> Any:
        """What the ``call`` evaluates to: the single returned argument, a tuple, or None."""
        returned = _pick(self.returned, args)
        if not returned:
            return None
        return returned[0] if len(returned) == 1 else returned


class LoadedProgram:
    """A lowered program ready to run: the launch plan of each of its kernels, computed once.

    ``loaded = LoadedProgram(program, aiv_lanes=target.aiv_per_group)``; ``loaded.plan(call)``.
    A backend keeps one per program (the runtime calls ``run`` with the same program each time).
    """

    def __init__(self, program: Program, aiv_lanes: int = 2):
        self.program = program
        self.aiv_lanes = aiv_lanes
        self.plans = {fn.name: self._plan(fn) for fn in program.functions.values() if fn.kind in _KERNELS}
        self.controls = {
            fn.name: fn for fn in program.functions.values() if fn.kind is FunctionKind.Orchestration
        }

    def control_function(self, call: Call) -> Function | None:
        """The Orchestration function a ``call`` names (run on the host, no task), or None."""
        fn = self.controls.get(str(call.attrs.get("callee")))
        if fn is not None and len(call.args) != len(fn.params):
            raise VerificationError(
                f"{fn.name} takes {len(fn.params)} argument(s) but is called with {len(call.args)}",
                call.span,
            )
        return fn

    def plan(self, call: Call) -> LaunchPlan:
        """The plan of the kernel a ``call`` names, after checking that it is one and takes as
        many arguments as the call passes."""
        name = str(call.attrs.get("callee"))
        plan = self.plans.get(name)
        if plan is None:
            try:
                fn = self.program.function(name)
            except KeyError:
                raise VerificationError(f"call to unknown kernel {name!r}", call.span) from None
            raise VerificationError(
                f"{fn.name} is a {fn.kind.value} function, not a kernel a core can run",
                call.span,
                "run the pass pipeline: it splits InCore functions into AIC and AIV kernels",
            )
        params = plan.kernel.params
        if len(call.args) != len(params):
            raise VerificationError(
                f"kernel {name} takes {len(params)} argument(s) but is called with {len(call.args)}",
                call.span,
            )
        return plan

    def _plan(self, kernel: Function) -> LaunchPlan:
        seats = self._seats(kernel)
        reporter = next((i for i, seat in enumerate(seats) if has_loop(seat.kernel)), None)
        if reporter is not None:
            seat = seats[reporter]
            seats[reporter] = replace(seat, reports_progress=True)
        piped = kernel.kind is FunctionKind.Group
        first = seats[0]  # a Group's call evaluates to what its AIC kernel returns
        returned = tuple(first.sources[i] for i in returned_params(first.kernel))
        pipe_name = (kernel.attrs.get("pipe_name") if piped else None) or kernel.name
        return LaunchPlan(kernel, tuple(seats), piped, pipe_name, returned)

    def _seats(self, kernel: Function) -> list[Seat]:
        every = tuple(range(len(kernel.params)))
        lanes = range(self.aiv_lanes)
        if kernel.kind is FunctionKind.AIV and data_parallel(kernel):
            return [Seat(FunctionKind.AIV, lane, kernel, every) for lane in lanes]
        if kernel.kind in (FunctionKind.AIC, FunctionKind.AIV):
            return [Seat(kernel.kind, 0, kernel, every)]
        (aic, aic_sources, aic_span), (aiv, aiv_sources, aiv_span) = group_members(self.program, kernel)
        mirror = mirrors_lane_1(aiv, unsplit=kernel.attrs.get("split") is SplitMode.NONE)
        seats = [Seat(FunctionKind.AIC, 0, aic, aic_sources, span=aic_span)]
        return seats + [
            Seat(FunctionKind.AIV, lane, aiv, aiv_sources, mirror and lane > 0, span=aiv_span)
            for lane in lanes
        ]


def has_loop(kernel: Function) -> bool:
    """True if the kernel's body holds a loop."""
    return any(isinstance(stmt, LOOP_STMTS) for stmt in walk_stmts(kernel.body))


def data_parallel(kernel: Function) -> bool:
    """True for an AIV kernel split UP_DOWN or LEFT_RIGHT: every lane runs it, each on its share."""
    return split_axis(kernel.attrs.get("split") or SplitMode.NONE) is not None


def returned_params(kernel: Function) -> tuple[int, ...]:
    """The positions of the parameters the kernel's ``Return`` names, in order."""
    ret = next((s for s in kernel.body if isinstance(s, Return)), None)
    if ret is None:
        return ()
    position = {p.var.name: i for i, p in enumerate(kernel.params)}
    return tuple(position[v.name] for v in ret.values if isinstance(v, Var) and v.name in position)


Member = tuple[Function, tuple[Source, ...], SourceSpan | None]  # kernel, its arguments, the call


def group_members(program: Program, group: Function) -> tuple[Member, Member]:
    """The AIC kernel and the AIV kernel a Group kernel's body calls, in that order, each with
    where its arguments come from among the Group's, and the call."""
    position = {p.var.name: i for i, p in enumerate(group.params)}
    members = []
    for stmt in group.body:
        if isinstance(stmt, Return):
            continue  # the tensors its kernels return (see returned_params)
        if not (isinstance(stmt, Eval) and isinstance(stmt.value, Call) and stmt.value.op == op.call):
            raise VerificationError(
                f"Group kernel {group.name} may only call its AIC and AIV kernels, got {type(stmt).__name__}",
                stmt.span,
            )
        sources = tuple(_group_arg(group, position, e) for e in stmt.value.args)
        members.append((_member(program, stmt.value, len(sources)), sources, stmt.value.span))
    kinds = sorted(kernel.kind.value for kernel, _, _ in members)
    if kinds != sorted([FunctionKind.AIC.value, FunctionKind.AIV.value]):
        called = ", ".join(f"{kernel.name} ({kernel.kind.value})" for kernel, _, _ in members) or "nothing"
        raise VerificationError(
            f"Group kernel {group.name} must call one AIC kernel and one AIV kernel; it calls {called}",
            group.span,
            "call the AIC kernel and the AIV kernel once each (they start together, in either order)",
        )
    aic = next(m for m in members if m[0].kind is FunctionKind.AIC)
    aiv = next(m for m in members if m[0].kind is FunctionKind.AIV)
    return aic, aiv


def _member(program: Program, call: Call, nargs: int) -> Function:
    name = str(call.attrs.get("callee"))
    try:
        kernel = program.function(name)
    except KeyError:
        raise VerificationError(f"call to unknown kernel {name!r}", call.span) from None
    if nargs != len(kernel.params):
        raise VerificationError(
            f"kernel {kernel.name} takes {len(kernel.params)} argument(s) but is called with {nargs}",
            call.span,
        )
    return kernel


def _group_arg(group: Function, position: dict[str, int], e: Expr) -> Source:
    if isinstance(e, Var) and e.name in position:
        return position[e.name]
    if isinstance(e, Const):
        return e
    raise VerificationError(
        f"Group kernel {group.name} passes its kernels an argument that is not one of its parameters", e.span
    )


def mirrors_lane_1(aiv_kernel: Function, unsplit: bool = False) -> bool:
    """True if lane 1 only mirrors: no op asks for the lane, every pipe push/pop is split NONE, and
    there is one, or the Group is ``unsplit`` (``pl.split(NONE)``: lane 0 does the vector work)."""
    calls = [
        e
        for stmt in walk_stmts(aiv_kernel.body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call)
    ]
    modes = [
        c.attrs.get("split") or SplitMode.NONE
        for c in calls
        if c.op in (tile_ops.tpush_to_aic, tile_ops.tpop_from_aic)
    ]
    asks_lane = any(c.op == tile_ops.get_subblock_idx for c in calls)
    return (bool(modes) or unsplit) and all(m is SplitMode.NONE for m in modes) and not asks_lane
