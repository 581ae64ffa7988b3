"""One task's launch on a core group: the cores its plan seats, and what they share.

Which kernel runs on which core is planned once per program (:mod:`pypto.ir.launch`: an AIC or AIV
kernel alone, a split AIV kernel on both lanes, a Group's AIC and AIV kernels at once, lane 1
mirroring lane 0 when it only follows the handshakes). A :class:`Launch` puts a plan on one core
group: a :class:`CoreRole` per seat, and what the cores share — the pipes (``<group>_c2v``,
``<group>_v2c``), the ``system.syncall`` barrier and the record of GM accesses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import Call, Function, FunctionKind, SourceSpan, Target, Var, VerificationError
from pypto.ir.errors import at_line
from pypto.ir.launch import LaunchPlan, Seat
from pypto.ir.ops import op
from pypto_sim_a2a3.arguments import argument_mismatch
from pypto_sim_a2a3.barrier import SyncAll
from pypto_sim_a2a3.coherence import GmOrder
from pypto_sim_a2a3.cores import Core, CoreGroup
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.pipe import Pipe, PipeDirection, PipeSetup
from pypto_sim_a2a3.ring import RingSlot
from pypto_sim_a2a3.target import CoreKind
from pypto_sim_a2a3.timeline import Recorder

# Pipe op -> (its pipe's direction, the kind of core that runs it).
PIPE_OPS: dict[str, tuple[PipeDirection, CoreKind]] = {
    op.tpush_to_aiv: (PipeDirection.C2V, CoreKind.AIC),
    op.tpop_from_aic: (PipeDirection.C2V, CoreKind.AIV),
    op.tfree_to_aic: (PipeDirection.C2V, CoreKind.AIV),
    op.tpush_to_aic: (PipeDirection.V2C, CoreKind.AIV),
    op.tpop_from_aiv: (PipeDirection.V2C, CoreKind.AIC),
    op.tfree_to_aiv: (PipeDirection.V2C, CoreKind.AIC),
}
_INIT_OPS = {op.aic_initialize_pipe: CoreKind.AIC, op.aiv_initialize_pipe: CoreKind.AIV}
_CORE_KINDS = {FunctionKind.AIC: CoreKind.AIC, FunctionKind.AIV: CoreKind.AIV}


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
    """One kernel body to run on one core of a launch: the plan's seat, on ``role``'s core."""

    role: CoreRole
    seat: Seat
    args: tuple[Any, ...]

    @property
    def kernel(self) -> Function:
        return self.seat.kernel


Seating = tuple[Core, CoreKind, int, bool, bool]  # core, kind, lane, mirror, reports progress
GmObserver = Callable[[str, Call, Sequence[Any]], None]  # (core, op, its values) before a GM access
StepObserver = Callable[[int, int], None]  # (iterations done, iterations) of the outermost loop


@dataclass(frozen=True)
class Site:
    """Where one block of a task runs: its core group, ``pl.get_block_idx()`` and ``get_block_num()``,
    who sees its GM traffic (the chip's race check across tasks), who is told its progress, and
    the barrier its task's blocks share (made by :func:`task_barrier`; a launch of its own if None)."""

    group: CoreGroup
    block: int = 0
    block_num: int = 1
    on_gm: GmObserver | None = None
    on_step: StepObserver | None = None
    barrier: SyncAll | None = None
    # the GM access record its task's blocks share (a syncall orders traffic across blocks too)
    gm: GmOrder | None = None
    # told once every core of the block is past its last GM access (allow_early_resolve tasks)
    on_settled: Callable[[], None] | None = None


def member_name(core: str, block: int, block_num: int) -> str:
    """A core's name in its task's barrier: ``AIV0``, or ``AIV0 of block 2`` among several blocks."""
    return core if block_num == 1 else f"{core} of block {block}"


def task_barrier(plan: LaunchPlan, block_num: int) -> SyncAll:
    """The ``system.syncall`` barrier of a task of ``block_num`` blocks: every core each block seats."""
    kinds = [(_seat_core(seat), _CORE_KINDS[seat.kind]) for seat in plan.seats]
    return SyncAll(
        {member_name(core, block, block_num): kind for block in range(block_num) for core, kind in kinds}
    )


def _seat_core(seat: Seat) -> str:
    """The name of the core a seat takes in its group (``AIC``, ``AIV1``), as :class:`CoreGroup` names it."""
    return "AIC" if seat.kind is FunctionKind.AIC else f"AIV{seat.lane}"


class Launch:
    """What the cores of one task share: pipes, the syncall barrier, the GM access record."""

    def __init__(
        self,
        name: str,
        site: Site,
        target: Target,
        seats: Sequence[Seating],
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
        self.roles = [
            CoreRole(self, core, kind, lane, mirror, reports_progress=reports)
            for core, kind, lane, mirror, reports in seats
        ]
        self.finished: set[str] = set()
        self.settled: set[str] = set()  # cores past their last GM access
        self.gm = site.gm or GmOrder()
        self.barrier = site.barrier or SyncAll({role.name: role.kind for role in self.roles})
        self.barrier.seated.update(self.member(role) for role in self.roles)
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
        """``role`` is about to run ``call``: order its GM traffic across tasks (first: a race
        between unsynchronised blocks reads best as such), then within the launch."""
        core = self.gm_core(role)
        if self.site.on_gm is not None:
            self.site.on_gm(core, call, args)
        self.gm.access(core, call, args)

    def gm_core(self, role: CoreRole) -> str:
        """``role``'s core in the GM access record: ``cg0.AIV0``, or ``cg0.AIV0 of block 2`` when the
        task's blocks share the record (two blocks may run on one core group, one after the other)."""
        return member_name(role.core.name, self.site.block, self.site.block_num)

    def member(self, role: CoreRole) -> str:
        """``role``'s core in the barrier its task's blocks share."""
        return member_name(role.name, self.site.block, self.site.block_num)

    def finish(self, role: CoreRole) -> None:
        """``role``'s kernel has returned."""
        self.settle(role)
        self.finished.add(role.name)
        self.barrier.finished.add(self.member(role))

    def settle(self, role: CoreRole) -> None:
        """``role`` is past its last GM access: its writes are final, its reads done. Once every
        core is, the site is told (at most once)."""
        if role.name in self.settled:
            return
        self.settled.add(role.name)
        if len(self.settled) == len(self.roles) and self.site.on_settled is not None:
            self.site.on_settled()

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
    plan: LaunchPlan, args: tuple[Any, ...], site: Site, target: Target, recorder: Recorder
) -> tuple[Launch, list[Placement]]:
    """The launch of ``plan`` on ``site``'s core group and the kernel body each of its cores runs."""
    group = site.group
    seats: list[Seating] = []
    for seat in plan.seats:
        core = group.aic if seat.kind is FunctionKind.AIC else group.aiv[seat.lane]
        seats.append((core, _CORE_KINDS[seat.kind], seat.lane, seat.mirror, seat.reports_progress))
    name = plan.kernel.name
    launch = Launch(name, site, target, seats, recorder, plan.piped, plan.pipe_name)
    placements = []
    for role, seat in zip(launch.roles, plan.seats, strict=True):
        kernel_args = seat.args(args)
        if seat.kernel is not plan.kernel:
            check_arguments(seat.kernel, kernel_args, seat.span)
        placements.append(Placement(role, seat, kernel_args))
    return launch, placements


def check_arguments(kernel: Function, args: Sequence[Any], span: SourceSpan | None) -> None:
    """The values a kernel is called with fit its parameters (the call at ``span`` passes them)."""
    for param, value in zip(kernel.params, args, strict=True):
        problem = argument_mismatch(param, value)
        if problem is not None:
            raise VerificationError(f"kernel {kernel.name}: parameter {param.var.name} {problem}", span)
