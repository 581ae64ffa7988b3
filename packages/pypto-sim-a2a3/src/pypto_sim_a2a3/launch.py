"""One task's launch on a core group: which kernel runs on which core, and what the cores share.

A plain AIC or AIV kernel runs alone, on the AIC or on AIV lane 0; an AIV kernel split ``UP_DOWN``
or ``LEFT_RIGHT`` (``attrs["split"]``) is data-parallel and runs on both AIV lanes, each on its
share (its lane from ``get_subblock_idx``). A ``Group`` kernel's body calls
its AIC kernel, then its AIV kernel: the first runs on the AIC and the second on both AIV lanes,
all three concurrently, sharing the launch's pipes (``<group>_c2v``, ``<group>_v2c``), its
``system.syncall`` barrier and its record of GM accesses.

Mirror lane: when every pipe push and pop of a Group's AIV kernel has ``split=NONE`` and the kernel
never asks for its lane (``get_subblock_idx``), lane 1 *mirrors* lane 0 — it follows the control
flow and does every pipe handshake (with data-less tokens) and barrier, but no loads, stores or
compute, so lane 0 alone does the work. The same holds for a Group that ``pl.split(NONE)`` made
(``attrs["split"]`` is ``NONE``) whose vector side uses no pipe at all: "lane 0 does the vector
work" whatever crosses. A kernel that asks for its lane divides the work by lane itself, so both
its lanes compute; so do the lanes of an explicit ``pl.split_aiv`` region that uses no pipe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pypto.ir import (
    Call,
    Const,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    Program,
    SourceSpan,
    SplitMode,
    Target,
    Var,
    VerificationError,
)
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import split_axis
from pypto_sim_a2a3.arguments import argument_mismatch
from pypto_sim_a2a3.barrier import SyncAll
from pypto_sim_a2a3.coherence import GmOrder
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.pipe import Pipe, PipeDirection, PipeSetup, split_of
from pypto_sim_a2a3.ring import RingSlot, at_line
from pypto_sim_a2a3.target import CoreKind
from pypto_sim_a2a3.timeline import Recorder

if TYPE_CHECKING:
    from pypto_sim_a2a3.chip import Core, CoreGroup

# Pipe op -> (its pipe's direction, the kind of core that runs it).
PIPE_OPS: dict[str, tuple[PipeDirection, CoreKind]] = {
    "tpush_to_aiv": (PipeDirection.C2V, CoreKind.AIC),
    "tpop_from_aic": (PipeDirection.C2V, CoreKind.AIV),
    "tfree_to_aic": (PipeDirection.C2V, CoreKind.AIV),
    "tpush_to_aic": (PipeDirection.V2C, CoreKind.AIV),
    "tpop_from_aiv": (PipeDirection.V2C, CoreKind.AIC),
    "tfree_to_aiv": (PipeDirection.V2C, CoreKind.AIC),
}
_INIT_OPS = {"aic_initialize_pipe": CoreKind.AIC, "aiv_initialize_pipe": CoreKind.AIV}


@dataclass(eq=False)
class CoreRole:
    """One core's part in a launch: its kind, its AIV lane (0 on the AIC), whether it mirrors."""

    launch: Launch
    core: Core
    kind: CoreKind
    lane: int = 0
    mirror: bool = False
    popped: dict[str, RingSlot] = field(default_factory=dict)  # popped tile variable -> its slot
    # freed tile variable -> the tfree that gave its slot back (until the name is bound again)
    freed: dict[str, Call] = field(default_factory=dict)
    reports_progress: bool = False  # its outermost loop's iterations are the launch's progress

    @property
    def name(self) -> str:
        """The core's name within its group, e.g. ``AIV1``."""
        return self.core.name.rsplit(".", 1)[-1]

    def take_popped(self, call: Call) -> RingSlot:
        """The slot of the tile ``call`` frees; it is no longer popped by this core."""
        arg = call.args[0]
        name = arg.name if isinstance(arg, Var) else "its operand"
        if name not in self.popped:
            raise PipeError(
                f"{call.op}({name}) on {self.name}: {name} is not a popped tile that is still unfreed",
                call.span,
                "free the variable a tpop assigned, exactly once, after its last use",
            )
        self.freed[name] = call
        return self.popped.pop(name)


@dataclass(frozen=True)
class Placement:
    """One kernel body to run on one core of a launch."""

    role: CoreRole
    kernel: Function
    args: tuple[Any, ...]


Seat = tuple["Core", CoreKind, int, bool]  # core, kind, lane, mirror
GmObserver = Callable[[str, Call, Sequence[Any]], None]  # (core, op, its values) before a GM access
StepObserver = Callable[[int, int], None]  # (iterations done, iterations) of the outermost loop


@dataclass(frozen=True)
class Site:
    """Where one block of a task runs: its core group, ``pl.get_block_idx()`` and ``get_block_num()``,
    who sees its GM traffic (the chip's race check across tasks) and who is told its progress."""

    group: CoreGroup
    block: int = 0
    block_num: int = 1
    on_gm: GmObserver | None = None
    on_step: StepObserver | None = None


class Launch:
    """What the cores of one task share: pipes, the syncall barrier, the GM access record."""

    def __init__(
        self,
        name: str,
        site: Site,
        target: Target,
        seats: Sequence[Seat],
        recorder: Recorder,
        piped: bool,
        pipe_name: str | None = None,
    ):
        self.name = name
        self.recorder = recorder
        self.pipe_name = pipe_name or name  # the scope's name_hint: pipes read "<scope>_c2v"
        self.site = site
        self.group = site.group
        self.target = target
        self.roles = [CoreRole(self, core, kind, lane, mirror) for core, kind, lane, mirror in seats]
        self.finished: set[str] = set()
        self.gm = GmOrder()
        self.barrier = SyncAll({role.name: role.kind for role in self.roles}, self.finished)
        self.pipes = self._pipes() if piped else {}
        self._setup: tuple[PipeSetup, str, SourceSpan | None] | None = None

    def _pipes(self) -> dict[PipeDirection, Pipe]:
        aic = tuple(r.name for r in self.roles if r.kind is CoreKind.AIC)
        aiv = tuple(r.name for r in self.roles if r.kind is CoreKind.AIV)
        ends = {PipeDirection.C2V: (aic, aiv), PipeDirection.V2C: (aiv, aic)}
        return {
            d: Pipe(
                f"{self.pipe_name}_{d.value}",
                d,
                producers,
                consumers,
                self.finished,
                self.recorder,
                f"cg{self.group.index}",
            )
            for d, (producers, consumers) in ends.items()
        }

    def initialize_pipes(self, role: CoreRole, call: Call) -> None:
        """``role``'s ``*_initialize_pipe``: the first one opens the rings, later ones must agree."""
        self._check_side(role, call, _INIT_OPS[call.op])
        setup = PipeSetup.of(call)
        both = setup.dir_mask == PipeDirection.C2V.mask | PipeDirection.V2C.mask
        # The hardware's slots per direction halve when both directions are used.
        limit = self.target.max_pipe_slots // 2 if both else self.target.max_pipe_slots
        if setup.slot_num > limit:
            when = " when both directions are used" if both else ""
            raise PipeError(
                f"{call.op}: slot_num={setup.slot_num} is more than the {limit} slots per direction of "
                f"{self.target.name}{when}",
                call.span,
                f"use slot_num <= {limit}",
            )
        if self._setup is None:
            self._open(role, setup, call.span)
        elif self._setup[0] != setup:
            first, core, span = self._setup
            raise PipeError(
                f"pipe setup of Group {self.name} differs between its sides: {core} at {at_line(span)} "
                f"sets {first}, {role.name} at {at_line(call.span)} sets {setup}",
                call.span,
                "initialize both sides with the same dir_mask, slot_size and slot_num",
            )
        for direction, pipe in self.pipes.items():
            if setup.enables(direction):
                pipe.initialized.add(role.name)

    def _open(self, role: CoreRole, setup: PipeSetup, span: SourceSpan | None) -> None:
        self._setup = (setup, role.name, span)
        memories = {r.name: r.core.memory for r in self.roles if r.core.memory is not None}
        for direction, pipe in self.pipes.items():
            if setup.enables(direction):
                pipe.open(setup, memories, self.target, span)

    def pipe(self, role: CoreRole, call: Call) -> Pipe:
        """The pipe a push, pop or free of ``role`` works on, after checking it may."""
        direction, kind = PIPE_OPS[call.op]
        self._check_side(role, call, kind)
        pipe = self.pipes[direction]
        if role.name not in pipe.initialized:
            setup = f" (the pipe was set up with {self._setup[0]})" if self._setup else ""
            raise PipeError(
                f"{call.op} on pipe {pipe.name} before {role.name} initialized that direction{setup}",
                call.span,
                f"call {'aic' if kind is CoreKind.AIC else 'aiv'}_initialize_pipe with a dir_mask that "
                f"includes {direction.mask} first",
            )
        return pipe

    def _check_side(self, role: CoreRole, call: Call, kind: CoreKind) -> None:
        if not self.pipes:
            raise PipeError(
                f"{call.op} in kernel {self.name}, which runs alone on {role.name}",
                call.span,
                "pipes connect the cores of a Group launch: call the Group kernel that runs both sides",
            )
        if role.kind is not kind:
            raise PipeError(f"{call.op} runs on the {kind.value}, not on {role.name}", call.span)

    def gm_access(self, role: CoreRole, call: Call, args: Sequence[Any]) -> None:
        """``role`` is about to run ``call``: order its GM traffic within the launch and across tasks."""
        self.gm.access(role.core.name, call, args)
        if self.site.on_gm is not None:
            self.site.on_gm(role.core.name, call, args)

    def finish(self, role: CoreRole) -> None:
        """``role``'s kernel has returned."""
        self.finished.add(role.name)

    @property
    def done(self) -> bool:
        """Every core of the launch has returned."""
        return len(self.finished) == len(self.roles)

    def check_drained(self) -> None:
        """After every core finished: a DeadlockError if a ring still holds tiles or popped slots."""
        for pipe in self.pipes.values():
            error = pipe.undrained(self.name)
            if error is not None:
                raise error


def plan_launch(
    program: Program,
    kernel: Function,
    args: tuple[Any, ...],
    call: Call,
    site: Site,
    target: Target,
    recorder: Recorder,
) -> tuple[Launch, list[Placement]]:
    """The launch of ``kernel`` on ``site``'s core group and the kernel body each of its cores runs.

    The first core (the AIC, then the lanes in order) whose kernel has a loop reports the
    launch's progress: the iterations of its outermost loop."""
    launch, placements = _plan(program, kernel, args, call, site, target, recorder)
    reporter = next((p for p in placements if _has_loop(p.kernel)), None)
    if reporter is not None:
        reporter.role.reports_progress = True
    return launch, placements


def _has_loop(kernel: Function) -> bool:
    return any(isinstance(stmt, For) for stmt in walk_stmts(kernel.body))


def _plan(
    program: Program,
    kernel: Function,
    args: tuple[Any, ...],
    call: Call,
    site: Site,
    target: Target,
    recorder: Recorder,
) -> tuple[Launch, list[Placement]]:
    group = site.group
    if kernel.kind is FunctionKind.AIV and data_parallel(kernel):
        lanes = [(core, CoreKind.AIV, lane, False) for lane, core in enumerate(group.aiv)]
        launch = Launch(kernel.name, site, target, lanes, recorder, piped=False)
        return launch, [Placement(role, kernel, args) for role in launch.roles]
    if kernel.kind in (FunctionKind.AIC, FunctionKind.AIV):
        aic = kernel.kind is FunctionKind.AIC
        seat = (group.aic, CoreKind.AIC, 0, False) if aic else (group.aiv[0], CoreKind.AIV, 0, False)
        launch = Launch(kernel.name, site, target, [seat], recorder, piped=False)
        return launch, [Placement(launch.roles[0], kernel, args)]
    if kernel.kind is FunctionKind.Group:
        (aic_fn, aic_args), (aiv_fn, aiv_args) = group_members(program, kernel, args)
        seats: list[Seat] = [(group.aic, CoreKind.AIC, 0, False)]
        mirror = mirrors_lane_1(aiv_fn, unsplit=kernel.attrs.get("split") is SplitMode.NONE)
        seats += [(core, CoreKind.AIV, lane, mirror and lane > 0) for lane, core in enumerate(group.aiv)]
        pipe_name = kernel.attrs.get("pipe_name")
        launch = Launch(kernel.name, site, target, seats, recorder, piped=True, pipe_name=pipe_name)
        aic_role, *aiv_roles = launch.roles
        aiv = [Placement(role, aiv_fn, aiv_args) for role in aiv_roles]
        return launch, [Placement(aic_role, aic_fn, aic_args), *aiv]
    raise VerificationError(
        f"{kernel.name} is a {kernel.kind.value} function, not a kernel a core can run",
        call.span,
        "run the pass pipeline: it splits InCore functions into AIC and AIV kernels",
    )


def data_parallel(kernel: Function) -> bool:
    """True for an AIV kernel split UP_DOWN or LEFT_RIGHT: both lanes run it, each on its share."""
    return split_axis(kernel.attrs.get("split") or SplitMode.NONE) is not None


def resolve_callee(program: Program, call: Call, args: Sequence[Any]) -> Function:
    """The kernel a ``call`` names, after checking ``args`` against its parameters."""
    name = call.attrs.get("callee", "")
    try:
        kernel = program.function(name)
    except KeyError:
        raise VerificationError(f"call to unknown kernel {name!r}", call.span) from None
    if len(args) != len(kernel.params):
        raise VerificationError(
            f"kernel {kernel.name} takes {len(kernel.params)} argument(s) but is called with {len(args)}",
            call.span,
        )
    for param, value in zip(kernel.params, args, strict=True):
        problem = argument_mismatch(param, value)
        if problem is not None:
            raise VerificationError(f"kernel {kernel.name}: parameter {param.var.name} {problem}", call.span)
    return kernel


Member = tuple[Function, tuple[Any, ...]]


def group_members(program: Program, group: Function, args: Sequence[Any]) -> tuple[Member, Member]:
    """The (AIC kernel, its args) and (AIV kernel, its args) a Group kernel's body calls, in that order."""
    env = {p.var.name: value for p, value in zip(group.params, args, strict=True)}
    members = []
    for stmt in group.body:
        if not (isinstance(stmt, Eval) and isinstance(stmt.value, Call) and stmt.value.op == "call"):
            raise VerificationError(
                f"Group kernel {group.name} may only call its AIC and AIV kernels, got {type(stmt).__name__}",
                stmt.span,
            )
        values = tuple(_group_arg(group, env, e) for e in stmt.value.args)
        members.append((resolve_callee(program, stmt.value, values), values))
    kinds = [kernel.kind for kernel, _ in members]
    if kinds != [FunctionKind.AIC, FunctionKind.AIV]:
        called = ", ".join(f"{kernel.name} ({kernel.kind.value})" for kernel, _ in members) or "nothing"
        raise VerificationError(
            f"Group kernel {group.name} must call one AIC kernel, then one AIV kernel; it calls {called}",
            group.span,
            "ExpandMixedKernel emits self.<name>_aic(...) then self.<name>_aiv(...)",
        )
    return members[0], members[1]


def _group_arg(group: Function, env: dict[str, Any], e: Expr) -> Any:
    if isinstance(e, Var) and e.name in env:
        return env[e.name]
    if isinstance(e, Const):
        return e.value
    raise VerificationError(
        f"Group kernel {group.name} passes its kernels an argument that is not one of its parameters",
        e.span,
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
    modes = [split_of(c) for c in calls if c.op in ("tpush_to_aic", "tpop_from_aic")]
    asks_lane = any(c.op == "get_subblock_idx" for c in calls)
    return (bool(modes) or unsplit) and all(m is SplitMode.NONE for m in modes) and not asks_lane
