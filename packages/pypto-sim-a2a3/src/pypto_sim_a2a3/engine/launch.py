"""One task's launch on a core group: the cores its plan seats, and what they share.

Which kernel runs on which core is planned once per program (:mod:`pypto.ir.launch`: an AIC or AIV
kernel alone, a split AIV kernel on both lanes, a Group's AIC and AIV kernels at once, lane 1
mirroring lane 0 when it only follows the handshakes). A :class:`Launch` puts a plan on one core
group: a :class:`CoreRole` per seat, and what the cores share — the pipes (``<group>_c2v``,
``<group>_v2c``), the ``system.syncall`` barrier and the record of GM accesses.

A launch may have a :class:`LaunchObserver`: it is told what the launch's cores do as they run —
each op, GM access, settling, timeline slice, ring and transfer (the fast runner records a block
so; see :mod:`pypto_sim_a2a3.fast.replay`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from pypto.ir import Call, Function, FunctionKind, SourceSpan, Target, Var, VerificationError
from pypto.ir.errors import at_line
from pypto.ir.launch import LaunchPlan, Seat
from pypto.ir.memory import MemoryPlan, Reservation, layout, plain_ring_name
from pypto.ir.ops import short_name
from pypto.ir.ops import system as system_ops
from pypto.ir.ops import tile as tile_ops
from pypto_sim_a2a3.checks.coherence import GM_DATA_OPS, Access, GmOrder, KeyCache, gm_accesses, gm_tensor
from pypto_sim_a2a3.checks.timeorder import TimeOrder
from pypto_sim_a2a3.engine.arguments import argument_mismatch
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.hw.barrier import SyncAll
from pypto_sim_a2a3.hw.corepipes import CorePipes
from pypto_sim_a2a3.hw.cores import Core, CoreGroup
from pypto_sim_a2a3.hw.events import Events
from pypto_sim_a2a3.hw.pipe import Pipe, PipeDirection, PipeSetup
from pypto_sim_a2a3.hw.ring import RingSlot
from pypto_sim_a2a3.target import CoreKind

if TYPE_CHECKING:
    from pypto.ir.backend import Slice, Transfer
    from pypto_sim_a2a3.engine.scheduler import Event, Process

# Pipe op -> (its pipe's direction, the kind of core that runs it).
PIPE_OPS: dict[str, tuple[PipeDirection, CoreKind]] = {
    tile_ops.tpush_to_aiv: (PipeDirection.C2V, CoreKind.AIC),
    tile_ops.tpop_from_aic: (PipeDirection.C2V, CoreKind.AIV),
    system_ops.tfree_to_aic: (PipeDirection.C2V, CoreKind.AIV),
    tile_ops.tpush_to_aic: (PipeDirection.V2C, CoreKind.AIV),
    tile_ops.tpop_from_aiv: (PipeDirection.V2C, CoreKind.AIC),
    system_ops.tfree_to_aiv: (PipeDirection.V2C, CoreKind.AIC),
}
INIT_OPS = {system_ops.aic_initialize_pipe: CoreKind.AIC, system_ops.aiv_initialize_pipe: CoreKind.AIV}
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
    pipes: CorePipes | None = None  # the core's pipes while it runs its kernel (set by its frame)
    gm_name: str = ""  # its core in the GM access record (made at its first access)

    @property
    def core_pipes(self) -> CorePipes:
        assert self.pipes is not None, "the kernel frame sets the pipes before any op runs"
        return self.pipes

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
                f"{short_name(call.op)}"
                f"({name}) on {self.name}: {name} is not a popped tile that is still unfreed",
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
GmObserver = Callable[[Access, Any], None]  # a GM access (its box, start, ...) and its tensor
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
    # where GM accesses and ordering events wait to be checked in modeled order (None: at once)
    in_time: TimeOrder | None = None
    # the run's kernel debugger (pypto_sim_a2a3.engine.debugger.DebugSession), None when nothing debugs
    debugger: Any = None
    # the rank's endpoint in a world of chips (pypto_sim_a2a3.distributed.world.RankComm), None alone
    comm: Any = None
    core_pipes: type[CorePipes] = CorePipes  # the run's engine's pipes of a core (hw/engines.py)
    # a timing-only run's steering slices and GM without numbers (pypto_sim_a2a3.engine.steering.
    # TimingOnly), None when the run computes every number
    timing_only: Any = None


class LaunchObserver(Protocol):
    """What a launch tells an observer as its cores run, from their first step to their last.

    ``launch.observe(recording)``: the block runner hands each core's run through :meth:`stepped` and
    tells :meth:`spawned` its scheduler process; the launch tells the rest as it happens."""

    def stepped(self, index: int, run: Generator[Event, None, Any]) -> Generator[Event, None, Any]:
        """Core ``index``'s run as the scheduler steps it (the observer may see each step begin and end)."""
        ...

    def spawned(self, index: int, process: Process) -> None:
        """Core ``index`` runs as ``process`` (whose ``on_wake`` the observer may set)."""
        ...

    def op(self, call: Call) -> None:
        """A core runs ``call`` (told before its numbers)."""
        ...

    def gm_access(self, role: CoreRole, call: Call, args: Sequence[Any], at: int) -> None:
        """``role`` runs ``call`` from modeled cycle ``at`` (told before its GM traffic is checked)."""
        ...

    def settle(self, role: CoreRole) -> None:
        """``role`` is past its last GM access (told each time it says so, the first time or not)."""
        ...

    def slice(self, piece: Slice) -> None:
        """A core or pipe of the launch was busy or stalled over ``piece``."""
        ...

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int, int], None]:
        """A pipe opened a ring: what to tell of each change of its occupancy (``delta``, ``cycle``)."""
        ...

    def transfer(self, transfer: Transfer) -> None:
        """A tile crossed a pipe."""
        ...


class ObservedRecorder:
    """The run's recorder as an observed launch's cores and pipes see it: each slice, ring and
    transfer goes to the recorder and to the observer."""

    def __init__(self, recorder: Recorder, observer: LaunchObserver) -> None:
        self.recorder = recorder
        self.observer = observer

    def record(self, piece: Slice) -> None:
        self.recorder.record(piece)
        self.observer.slice(piece)

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int, int], None]:
        observed = self.observer.ring(pipe, owner, slots)
        change = self.recorder.ring(pipe, owner, slots)

        def changed(delta: int, cycle: int) -> None:
            change(delta, cycle)
            observed(delta, cycle)

        return changed

    def transfer(self, transfer: Transfer) -> None:
        self.recorder.transfer(transfer)
        self.observer.transfer(transfer)


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
        lead: int = 0,
    ):
        self.name = name
        self.lead = lead  # leading dimensions of the tiles its pipes carry (a batch of blocks: 1)
        self.recorder = recorder
        self.observer: LaunchObserver | None = None  # told what its cores do (see observe)
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
        self._keys = KeyCache()  # the GM tensors its cores access, by id, with their keys
        self.barrier = site.barrier or SyncAll({role.name: role.kind for role in self.roles})
        self.barrier.seated.update(self.member(role) for role in self.roles)
        self.events = Events({role.name: role.kind for role in self.roles})
        self.piped = piped
        # One pipe per (direction, id): the rings of several hand-set-up pipes sit side by side.
        self.pipes: dict[tuple[PipeDirection, int], Pipe] = {}
        self._setup: dict[int, tuple[PipeSetup, str, SourceSpan | None]] = {}
        self.buffers: dict[tuple[PipeDirection, int], str] = {}  # the reserved buffer a pipe names
        self.reservations: dict[str, tuple[tuple[Reservation, int], ...]] = {}  # per core: placed rings
        if piped:
            for direction in PipeDirection:
                self._pipe(direction, 0)

    def release(self) -> None:
        """Once its task retired: drop the roles (each names its launch: a reference cycle, which
        would keep the launch's records alive until the cyclic collector's next full collection)."""
        self.roles = []

    def observe(self, observer: LaunchObserver | None) -> None:
        """Tell ``observer`` what the launch's cores do from now on (before any of them runs);
        None: stop telling (once the observer is done with the launch)."""
        if isinstance(self.recorder, ObservedRecorder):
            self.recorder = self.recorder.recorder
        if observer is not None:
            self.recorder = ObservedRecorder(self.recorder, observer)  # type: ignore[assignment]
        self.observer = observer
        for pipe in self.pipes.values():  # made with the launch: they tell its recorder too
            pipe.recorder = self.recorder

    def _pipe(self, direction: PipeDirection, pipe_id: int) -> Pipe:
        """The pipe ``pipe_id`` of ``direction`` (made on first use): ``mixed_c2v``, ``mixed_c2v#1``."""
        key = (direction, pipe_id)
        if key not in self.pipes:
            aic = tuple(r.name for r in self.roles if r.kind is CoreKind.AIC)
            aiv = tuple(r.name for r in self.roles if r.kind is CoreKind.AIV)
            producers, consumers = (aic, aiv) if direction is PipeDirection.C2V else (aiv, aic)
            suffix = f"#{pipe_id}" if pipe_id else ""
            self.pipes[key] = Pipe(
                f"{self.pipe_name}_{direction.value}{suffix}",
                direction,
                producers,
                consumers,
                self.finished,
                self.recorder,
                f"cg{self.group.index}",
                lead=self.lead,
                numbers=self._pipes_carry_numbers(),
            )
        return self.pipes[key]

    def _pipes_carry_numbers(self) -> bool:
        """Whether the tiles' values cross the pipes: unless a timing-only run's kernels here
        each find their steering values on their own side."""
        timing_only = self.site.timing_only
        return timing_only is None or None in timing_only.steering.values()

    def initialize_pipes(self, role: CoreRole, call: Call) -> None:
        """``role``'s ``*_initialize_pipe``: the first one of a pipe id opens its rings, later
        ones must agree."""
        self._check_side(role, call, INIT_OPS[call.op])
        setup = PipeSetup.of(call)
        pipe_id = call.attrs.get("id") or 0
        both = setup.dir_mask == PipeDirection.C2V.mask | PipeDirection.V2C.mask
        # The hardware's slots per direction halve when both directions are used.
        limit = self.target.max_pipe_slots // 2 if both else self.target.max_pipe_slots
        if setup.slot_num > limit:
            when = " when both directions are used" if both else ""
            raise PipeError(
                f"{short_name(call.op)}"
                f": slot_num={setup.slot_num} is more than the {limit} slots per direction of "
                f"{self.target.name}{when}",
                call.span,
                f"use slot_num <= {limit}",
            )
        for direction in PipeDirection:
            name = call.attrs.get(f"{direction.value}_consumer_buf")
            if name is not None and setup.enables(direction):
                self.buffers[(direction, pipe_id)] = name
        if pipe_id not in self._setup:
            self._open(role, setup, pipe_id, call.span)
        elif self._setup[pipe_id][0] != setup:
            first, core, span = self._setup[pipe_id]
            which = f" (pipe id {pipe_id})" if pipe_id else ""
            raise PipeError(
                f"pipe setup{which} of Group {self.name} differs between its sides: {core} at "
                f"{at_line(span)} sets {first}, {role.name} at {at_line(call.span)} sets {setup}",
                call.span,
                "initialize both sides with the same dir_mask, slot_size and slot_num",
            )
        for direction in PipeDirection:
            if setup.enables(direction):
                self._pipe(direction, pipe_id).initialize(role.name)

    def _open(self, role: CoreRole, setup: PipeSetup, pipe_id: int, span: SourceSpan | None) -> None:
        self._setup[pipe_id] = (setup, role.name, span)
        memories = {r.name: r.core.memory for r in self.roles if r.core.memory is not None}
        for direction in PipeDirection:
            if setup.enables(direction):
                pipe = self._pipe(direction, pipe_id)
                bases = {c: self._ring_base(c, direction, pipe_id) for c in pipe.consumers}
                pipe.open(setup, memories, self.target, span, bases)

    def _ring_base(self, consumer: str, direction: PipeDirection, pipe_id: int) -> int:
        """Where ``consumer``'s ring of the pipe starts: its reserved buffer's offset (the one the
        setup names, else the pipe's plain ring), as the compiler placed it."""
        wanted = self.buffers.get((direction, pipe_id)) or plain_ring_name(direction.value, pipe_id)
        space = direction.consumer_space
        for r, offset in self.reservations.get(consumer, ()):
            if r.space is space and r.name == wanted:
                return offset
        return 0

    def pipe(self, role: CoreRole, call: Call) -> Pipe:
        """The pipe a push, pop or free of ``role`` works on, after checking it may."""
        direction, kind = PIPE_OPS[call.op]
        self._check_side(role, call, kind)
        pipe_id = call.attrs.get("id") or 0
        pipe = self._pipe(direction, pipe_id)
        if role.name not in pipe.initialized:
            known = self._setup.get(pipe_id)
            setup = f" (the pipe was set up with {known[0]})" if known else ""
            which = f", id={pipe_id}" if pipe_id else ""
            raise PipeError(
                f"{short_name(call.op)}"
                f" on pipe {pipe.name} before {role.name} initialized that direction{setup}",
                call.span,
                f"call {'aic' if kind is CoreKind.AIC else 'aiv'}_initialize_pipe with a dir_mask that "
                f"includes {direction.mask}{which} first",
            )
        return pipe

    def _check_side(self, role: CoreRole, call: Call, kind: CoreKind) -> None:
        if not self.piped:
            raise PipeError(
                f"{short_name(call.op)} in kernel {self.name}, which runs alone on {role.name}",
                call.span,
                "pipes connect the cores of a Group launch: call the Group kernel that runs both sides",
            )
        if role.kind is not kind:
            raise PipeError(f"{short_name(call.op)} runs on the {kind.value}, not on {role.name}", call.span)

    def gm_access(self, role: CoreRole, call: Call, args: Sequence[Any], at: int = 0) -> None:
        """``role`` runs ``call`` from modeled cycle ``at``: order its GM traffic across tasks
        (first: a race between unsynchronised blocks reads best as such), then within the launch."""
        if self.observer is not None:
            self.observer.gm_access(role, call, args, at)
        site = self.site
        core = role.gm_name or self.gm_core(role)
        if call.op not in GM_DATA_OPS:  # no GM data: only the core's place in modeled order moves on
            if site.in_time is not None:
                site.in_time.note(at, core)
            return
        if site.comm is not None:
            site.comm.gm_access(call, args)  # window bytes: ordered across ranks at issue
        gm = self.gm
        gm.pending += 1
        # (a partial of a plain function: cheaper to make than a closure, and holds no launch)
        check = partial(_check_gm, gm, self._keys, site.on_gm, core, call, args, at)
        if site.in_time is None:
            check()
        else:
            site.in_time.at(at, core, check)

    def in_time(self, role: CoreRole, at: int, action: Callable[[], None]) -> None:
        """Run ``action`` (a GM access's check, or an ordering event's record) when the chip's
        clock passes ``at``, in modeled order with the other cores' (at once without a queue)."""
        if self.site.in_time is None:
            action()
        else:
            self.site.in_time.at(at, self.gm_core(role), action)

    def gm_core(self, role: CoreRole) -> str:
        """``role``'s core in the GM access record: ``cg0.AIV0``, or ``cg0.AIV0 of block 2`` when the
        task's blocks share the record (two blocks may run on one core group, one after the other)."""
        if not role.gm_name:
            role.gm_name = member_name(role.core.name, self.site.block, self.site.block_num)
        return role.gm_name

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
        if self.observer is not None:
            self.observer.settle(role)
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
        left = self.events.undrained(self.name)
        if left is not None:
            raise left


def _check_gm(
    gm: GmOrder,
    keys: KeyCache,
    on_gm: GmObserver | None,
    core: str,
    call: Call,
    args: Sequence[Any],
    at: int,
) -> None:
    """A GM access of a launch's core, checked in modeled order: told to the chip's race check
    across tasks (``on_gm``), then ordered within the launch (``gm``)."""
    gm.pending -= 1
    accesses = gm_accesses(core, call, args, at, keys)
    if on_gm is not None and accesses:
        tensor = gm_tensor(call, args)
        for access in accesses:
            on_gm(access, tensor)
            gm.record(access)
    else:
        for access in accesses:
            gm.record(access)


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
        launch.reservations[role.name] = placed_rings(seat.kernel)
        kernel_args = seat.args(args)
        if seat.kernel is not plan.kernel:
            check_arguments(seat.kernel, kernel_args, seat.span)
        placements.append(Placement(role, seat, kernel_args))
    return launch, placements


def placed_rings(kernel: Function) -> tuple[tuple[Reservation, int], ...]:
    """The kernel's reserved windows with their offsets, as the allocator laid them out."""
    plan = kernel.attrs.get("memory_plan")
    rings = tuple(plan.reservations if isinstance(plan, MemoryPlan) else kernel.attrs.get("reservations", ()))
    return tuple(zip(rings, layout(rings), strict=True))


def check_arguments(kernel: Function, args: Sequence[Any], span: SourceSpan | None) -> None:
    """The values a kernel is called with fit its parameters (the call at ``span`` passes them)."""
    for param, value in zip(kernel.params, args, strict=True):
        problem = argument_mismatch(param, value)
        if problem is not None:
            raise VerificationError(f"kernel {kernel.name}: parameter {param.var.name} {problem}", span)
