"""Blocks replayed: one block runs on the full engine, the blocks that do its steps follow it.

The blocks of a ``pl.spmd`` launch run one kernel on equal core groups; when the kernel's loops
and branches do not depend on the block (or on data) and its blocks share no barrier, every
block does the same steps at the same cycles after its own start (its cores' pipes connect only
its own cores). So block 0 runs on the reference runner
(:class:`~pypto_sim_a2a3.engine.interpreter.KernelFrame`: its pipes, costs, waits) while a
:class:`BlockRecording`, the :class:`~pypto_sim_a2a3.engine.launch.LaunchObserver` of its launch,
keeps, per core and per scheduler step, what the step yielded and what it did: the timeline
slices it recorded, the GM accesses it reported, the ops it ran, the rings it opened and their
changes, the tiles that crossed, the moment its last GM access settled, and for each wait the
step of the core that ended it. A later block is a :class:`GhostBlock`:

- its numbers come from a :class:`NumbersFrame` per core: the same walk of the kernel with the
  same checked semantics on the block's own core memory, its tiles crossing its own rings, without
  timing, run when the block starts;
- each of its cores is a scheduler process that replays block 0's steps, shifted by the
  difference of the two starts: the same events (so the scheduler interleaves every process as
  it would have; a wait ends after the same step of the same core), the same slices, rings and
  transfers on this block's cores, the GM accesses with this block's own regions (so coherence
  and race checks see them at their modeled cycles), the same settling. A block of one core
  whose numbers met no error goes on over block 0's finished steps without a scheduler step
  each, up to a step in which it settles or ends (those are seen when they happen).

An error the numbers walk meets (a region out of bounds in the last block, a division by zero)
is raised when the replay reaches that op: at the same point of the run as on the full engine.

The same holds between the tasks of a run that launch the same plan (the tasks of a
``pl.parallel`` grid of ``pl.at`` scopes): a block of a later task replays the recorded block of
an earlier one when both take the same steps. With loops and branches on nothing a task passes
(:func:`replayable`), that is when the two tasks have the same :func:`launch_key`: their block
count, the shapes of their tensors (the kernel's dynamic extents) and which of their tensors share
storage (a core orders its GM accesses by storage, so two tensors in one storage may make an op
wait where two apart do not). Their scalars (grid indices) and views move only GM regions.

When the loops and branches depend on data, on the block or on a task's scalars, a block's
control trace (:func:`~pypto_sim_a2a3.fast.control.control_key`: its trip counts, branch arms and
slots, found by a walk of the statements that decide them alone) with its :func:`launch_key` picks
the earlier block of the plan, of its task or another one, whose control took the same course:
that one's recording is replayed as block 0's is. Where the control cannot be traced, the block
walks for its numbers first and its :func:`walk_signature` (its ops with their on-chip byte ranges,
where it placed each tile, which of its GM tensors share storage) picks it. A block that matches
none runs on the full engine, recorded (a kernel that may run a block twice only,
:func:`replayable_by_walk`).
``SimOptions.replay`` off (``PYPTO_SIM_REPLAY=off``) runs every block on the full engine; the tests
compare the two.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import (
    Assign,
    Call,
    Const,
    DynDim,
    Expr,
    For,
    Function,
    If,
    MemorySpace,
    Stmt,
    Target,
    TileType,
    TupleExpr,
    Var,
    While,
)
from pypto.ir.backend import Slice, Transfer
from pypto.ir.launch import LaunchPlan
from pypto.ir.nodes import stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import op, system
from pypto.ir.ops import tile as tile_ops
from pypto_sim_a2a3.checks.coherence import GM_DATA_OPS
from pypto_sim_a2a3.engine.decode import Step, Steps
from pypto_sim_a2a3.engine.interpreter import KernelFrame
from pypto_sim_a2a3.engine.launch import CoreRole, Launch, Placement
from pypto_sim_a2a3.engine.scheduler import Event, Process, Signal, Wait
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.fast.batch import (
    BATCH_BLOCKS,
    NO_PIPES,
    BatchFrame,
    LanedArgs,
    Lanes,
    NoRecorder,
    batchable,
    disjoint_outputs,
    in_turn,
    rerunnable,
    walk_batch,
)

if TYPE_CHECKING:
    from pypto_sim_a2a3.hw.cost import CostModel


# The launch ops a replayed kernel may not hold: they order GM across the blocks of the task (an
# explicit event orders GM between the cores of a block, which a replayed block does not record).
_ACROSS_BLOCKS = {system.syncall, system.fence, system.cacheinvalid, system.sync_set, system.sync_wait}
# Scalar values that are the same in every block (get_block_idx is not).
_UNIFORM_INDEX_OPS = {tile_ops.get_subblock_idx, op.get_block_num}

# What a step did, replayed in order: (SLICE, the slice), (OP, the call), (GM, the call, cycle),
# (SETTLE, the core's index), (RING, its number, pipe, owner, slots), (RING_CHANGE, its number,
# the change, cycle), (TRANSFER, the transfer).
SLICE, OP, GM, SETTLE, RING, RING_CHANGE, TRANSFER = 0, 1, 2, 3, 4, 5, 6
_PENDING = object()  # a step still running (or never finished): its event is not known
_FINAL = object()  # the step in which the core's process returned


def replayable(plan: LaunchPlan) -> bool:
    """Whether every block of every launch of ``plan`` with one :func:`launch_key` does the same
    steps: no barrier, fence or cache invalidation (they order GM across blocks), and loops and
    branches that are the same in every block and task (:func:`uniform_control`). (A static fact
    of the plan, found once: each run of the program asks.)"""
    found = _REPLAYABLE.get(plan)
    if found is None:
        found = not _orders_blocks(plan) and all(uniform_control(seat.kernel) for seat in plan.seats)
        _REPLAYABLE[plan] = found
    return found


def replayable_by_walk(plan: LaunchPlan) -> bool:
    """Whether a block of an spmd launch of ``plan`` may replay an earlier block that walked the
    same way (:func:`walk_signature`), its loops and branches depending on data or on the block:
    no barrier, fence or cache invalidation, and a block may run twice (it walks for its
    signature first, and runs on the full engine if no earlier block matches). (Found once.)"""
    found = _BY_WALK.get(plan)
    if found is None:
        found = _BY_WALK[plan] = not _orders_blocks(plan) and rerunnable(plan)
    return found


def launch_key(plan: LaunchPlan, blocks: int, args: Sequence[Any]) -> tuple[Any, ...]:
    """What decides the steps of a block of a :func:`replayable` ``plan`` besides the plan: the
    task's block count (``get_block_num``), each tensor argument's shape (the dynamic extents) and
    which of them share storage. Blocks of tasks with equal keys, started on idle core groups, do
    the same steps; their scalars and the regions of their views move only GM regions."""
    storages: dict[int, int] = {}
    tensors = []
    for value in args:
        if isinstance(value, torch.Tensor):
            storage = storages.setdefault(value.untyped_storage().data_ptr(), len(storages))
            tensors.append((tuple(value.shape), storage))
    return (plan, blocks, tuple(tensors))


_REPLAYABLE: weakref.WeakKeyDictionary[LaunchPlan, bool] = weakref.WeakKeyDictionary()
_BY_WALK: weakref.WeakKeyDictionary[LaunchPlan, bool] = weakref.WeakKeyDictionary()


def _orders_blocks(plan: LaunchPlan) -> bool:
    """Whether a kernel of ``plan`` holds a barrier, fence or cache invalidation."""
    for seat in plan.seats:
        for stmt in walk_stmts(seat.kernel.body):
            for expr in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                for e in walk_expr(expr):
                    if isinstance(e, Call) and e.op in _ACROSS_BLOCKS:
                        return True
    return False


def uniform_control(fn: Function) -> bool:
    """Whether every loop bound and branch condition of ``fn`` is made of constants, dynamic
    extents, the lane, the block count, enclosing loops' variables and scalar math on them (no
    parameter): the same in every block of a launch, and in every launch of ``fn`` with the same
    extents and block count, whatever the data and the scalars passed."""
    return _uniform_body(fn.body, set())


def _uniform(expr: Expr, uniform: set[str]) -> bool:
    """Whether ``expr`` is the same in every block (``uniform``: the scalars known to be)."""
    if isinstance(expr, (Const, DynDim)):
        return True
    if isinstance(expr, Var):
        return expr.name in uniform
    if isinstance(expr, TupleExpr):
        return all(_uniform(e, uniform) for e in expr.elements)
    if isinstance(expr, Call):
        pure = expr.op.startswith("scalar.") or expr.op in _UNIFORM_INDEX_OPS
        return pure and all(_uniform(a, uniform) for a in expr.args)
    return False


def _uniform_body(body: Sequence[Stmt], uniform: set[str]) -> bool:
    """Whether the loops and branches of ``body`` are the same in every block (``uniform`` grows
    by the scalars it assigns that are)."""
    for stmt in body:
        if isinstance(stmt, Assign):
            if not isinstance(stmt.target.type, TileType) and _uniform(stmt.value, uniform):
                uniform.add(stmt.target.name)
        elif isinstance(stmt, For):
            if not all(_uniform(bound, uniform) for bound in (stmt.start, stmt.stop, stmt.step)):
                return False
            uniform.add(stmt.var.name)  # (the same in every block, as its bounds are)
            if not _uniform_body(stmt.body, uniform):
                return False
        elif isinstance(stmt, If):
            branches = (stmt.then_body, stmt.else_body)
            if not (_uniform(stmt.cond, uniform) and all(_uniform_body(b, uniform) for b in branches)):
                return False
        elif isinstance(stmt, While):
            return False  # its condition reads its carried values
    return True


# ---------------------------------------------------------------- recording a block


class _Step:
    """One scheduler step of a core: what it did (``effects``), then what it yielded (a plain
    class with slots: block 0 makes one per step)."""

    __slots__ = ("_split", "effects", "event", "settles", "wake")

    def __init__(self) -> None:
        self.effects: list[tuple[Any, ...]] = []
        self.event: Any = _PENDING
        self.wake: tuple[int, int] | None = None  # its wait ended after this step of that core: (core, step)
        self.settles = False  # one of its effects is its core's last GM access settling
        self._split: tuple[tuple[Slice, ...], tuple[tuple[Any, ...], ...]] | None = None

    def split(self) -> tuple[tuple[Slice, ...], tuple[tuple[Any, ...], ...]]:
        """Its slices and its other effects, each in order (of a step done: found once, for every
        block that replays it)."""
        if self._split is None:
            pieces = tuple(effect[1] for effect in self.effects if effect[0] == SLICE)
            others = tuple(effect for effect in self.effects if effect[0] != SLICE)
            self._split = (pieces, others)
        return self._split


class BlockRecording:
    """A block of a replayable task, recorded step by step while the reference runner runs it: the
    :class:`~pypto_sim_a2a3.engine.launch.LaunchObserver` of its launch (``launch.observe(recording)``).
    Later blocks of its task, or of other tasks of its plan, replay it (:class:`GhostBlock`)."""

    def __init__(self, launch: Launch, start: int) -> None:
        self.launch: Launch | None = launch  # (None once released)
        self.cores = [role.core.name for role in launch.roles]  # its cores, in the launch's order
        self.start = start
        self.steps: list[list[_Step]] = [[] for _ in launch.roles]
        self.counts = [0] * len(launch.roles)  # per core, the steps it has begun
        self.processes: dict[Process, int] = {}  # each core's scheduler process -> its core
        self.ghosts: list[GhostBlock] = []  # the blocks replaying this one, until they end
        self.rings = 0  # the rings its launch opened so far
        self._index = {id(role): i for i, role in enumerate(launch.roles)}  # each role's core
        self._current: list[tuple[Any, ...]] | None = None  # the effects of the step running now
        self._stepping: _Step | None = None  # the step running now

    def release(self) -> None:
        """Once no block may replay it any more: drop the blocks replaying it, the processes
        watched, its steps (their waits name the launch's pipes) and its place on the recorded
        block's launch (each names the recording back: reference cycles, which would keep the
        run's records alive until a full collection)."""
        self.ghosts.clear()
        self.processes.clear()
        self.steps.clear()
        if self.launch is not None and self.launch.observer is self:
            self.launch.observe(None)
        self.launch = None  # (its pipes' rings tell the recording: a cycle through the launch)

    def effect(self, effect: tuple[Any, ...]) -> None:
        assert self._current is not None, "block 0 did something outside its own steps"
        self._current.append(effect)

    # ------------------------------------------------ what the launch tells (LaunchObserver)

    # (The effects told most often are appended in place, not through effect(): one call less.)

    def op(self, call: Call) -> None:
        current = self._current
        assert current is not None, "block 0 did something outside its own steps"
        current.append((OP, call))

    def gm_access(self, role: CoreRole, call: Call, args: Sequence[Any], at: int) -> None:
        current = self._current
        assert current is not None, "block 0 did something outside its own steps"
        current.append((GM, call, at))

    def settle(self, role: CoreRole) -> None:
        if self._current is not None and self._stepping is not None:
            self._current.append((SETTLE, self._index[id(role)]))
            self._stepping.settles = True

    def slice(self, piece: Slice) -> None:
        current = self._current
        assert current is not None, "block 0 did something outside its own steps"
        current.append((SLICE, piece))

    def ring(self, pipe: str, owner: str, slots: int) -> Callable[[int, int], None]:
        number = self.rings
        self.rings += 1
        self.effect((RING, number, pipe, owner, slots))
        return lambda delta, cycle: self.effect((RING_CHANGE, number, delta, cycle))

    def transfer(self, transfer: Transfer) -> None:
        self.effect((TRANSFER, transfer))

    def spawned(self, index: int, process: Process) -> None:
        """Core ``index`` runs as ``process``: each of its waits records what ended it."""
        self.processes[process] = index
        process.on_wake = lambda stepper: self._woken(index, stepper)

    def stepped(self, index: int, run: Generator[Event, None, Any]) -> Generator[Event, None, Any]:
        """``run`` (core ``index``'s kernel run), each of its steps recorded."""
        steps = self.steps[index]
        counts = self.counts
        advance = run.__next__
        while True:
            step = _Step()
            steps.append(step)
            counts[index] += 1
            self._current, self._stepping = step.effects, step
            try:
                event = advance()
            except StopIteration as stop:
                self._current = self._stepping = None
                step.event = _FINAL
                return stop.value
            self._current = self._stepping = None
            step.event = event
            yield event

    def _woken(self, index: int, stepper: Process | None) -> None:
        core = self.processes.get(stepper) if stepper is not None else None
        assert core is not None, "a wait of a replayable block ended by a step outside the block"
        step = self.steps[index][-1]
        step.wake = (core, self.counts[core])
        for ghost in self.ghosts:
            # The ghost's same core must not be waiting there already with its wake due: block 0
            # runs ahead of every later block, so its wakes are known first.
            assert not (
                ghost.counts[index] == len(self.steps[index]) and ghost.counts[core] >= self.counts[core]
            ), "a replayed block waited past block 0"
            ghost.signal.changed()


# ---------------------------------------------------------------- a block that replays it


class NumbersFrame(KernelFrame):
    """A kernel's walk for its numbers only (a :class:`KernelFrame` without its timing part): the
    checked semantics on the core's memory, tiles crossing the launch's rings, no time. ``ops``
    are the ops it ran with their operands, in order. The walk yields only the waits of its pipe
    ops (a full or an empty ring)."""

    def __init__(self, seat: Any, args: Sequence[Any], role: CoreRole, cost: CostModel, steps: Steps):
        super().__init__(seat, args, role, cost, steps, timed=False)
        # The launch ops ask the core's pipes, which take no time here.
        role.pipes = NO_PIPES  # type: ignore[assignment]
        self.ops: list[tuple[Call, tuple[Any, ...]]] = []
        self.in_op = False  # inside an op's run (an error there belongs to that op)
        # What the walk placed, in order: the byte range of each tile it bound (None for other
        # values) and each carried tile copied between buffers (see walk_signature).
        self.placed: list[Any] = []

    def bind(self, stmt: Assign, value: Any) -> None:
        super().bind(stmt, value)
        bound = self.env.get(stmt.target.name)
        self.placed.append(self.numbers.region(bound) if isinstance(bound, torch.Tensor) else None)

    def set_carried(self, var: Var, value: Any) -> None:
        super().set_carried(var, value)
        carried = self.env.get(var.name)
        if isinstance(carried, torch.Tensor):  # (the bytes it was copied from, where it is)
            copied = isinstance(value, torch.Tensor) and carried is not value
            region = self.numbers.region
            self.placed.append((region(value) if copied else None, region(carried)))

    def run_step(self, step: Step, args: tuple[Any, ...]) -> Generator[Event, None, Any]:
        self.ops.append((step.call, args))
        self.in_op = True
        value = yield from super().run_step(step, args)
        self.in_op = False
        return value


def walk_signature(frames: Sequence[NumbersFrame], numbers: Sequence[BlockNumbers]) -> Any:
    """What decides a block's modeled time, from its cores' numbers walks: per core, each op it
    ran with the on-chip byte ranges of its operands and, for a GM operand, which of the block's
    storages it lies in (a core orders its GM accesses by storage), and where each tile it bound or
    carried was placed (an op's cost is its call's; GM regions do not change time). Two blocks
    with equal signatures, of one task or of two launching one plan, that start on idle core
    groups take the same steps, shifted. None if a walk stopped at an error or in a deadlock."""
    if any(n.error is not None or n.waits for n in numbers):
        return None
    signature = []
    storages: dict[int, int] = {}  # a GM tensor's storage -> its place among the block's storages

    def where(value: Any, memory: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return None
        found = memory.region(value)
        if found is not None:
            return found
        storage = value.untyped_storage().data_ptr()
        return storages.setdefault(storage, len(storages))

    for frame, walked in zip(frames, numbers, strict=True):
        memory = frame.core.memory
        assert memory is not None
        ops = tuple((id(call), tuple(where(a, memory) for a in args)) for call, args in walked.ops)
        signature.append((ops, tuple(frame.placed)))
    return tuple(signature)


@dataclass
class BlockNumbers:
    """One core's numbers walk: its ops with their operands, and the error it stopped at (in its
    last op if ``in_op``, else between ops, after the last). Walked in a batch (``lane`` is the
    block's place in it), a scalar operand may be every block's
    (:class:`~pypto_sim_a2a3.fast.batch.Lanes`)."""

    ops: Sequence[tuple[Call, tuple[Any, ...]]]
    error: Exception | None = None
    in_op: bool = False
    lane: int | None = None
    waits: bool = False  # the walks stopped waiting for each other (a deadlock the run will meet)

    def args(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """An op's operands in this block (its GM tensors, offsets and valid shapes)."""
        lane = self.lane
        if lane is None or type(args) is not LanedArgs:
            return args
        return args.lane(lane)


class BatchedNumbers:
    """The numbers of a replayed task's later blocks, walked in batches (see
    :mod:`pypto_sim_a2a3.fast.batch`) when the kernel allows it, per block otherwise."""

    def __init__(
        self, plan: LaunchPlan, blocks: int, target: Target, steps: Steps, cost: CostModel, batch: bool = True
    ) -> None:
        self.plan = plan
        self.blocks = blocks
        self.target = target
        self.steps = steps
        self.cost = cost
        self.batchable = batch and _batchable(plan)
        self._walked: dict[int, Walked] = {}  # block -> its cores' numbers and memories' high water

    def take(self, block: int, placements: Sequence[Placement]) -> list[BlockNumbers] | None:
        """Block ``block``'s numbers per core (its cores' memories told their high water), or None
        if the block walks alone."""
        if not self.batchable:
            return None
        if block not in self._walked and not self._walk(block, placements):
            self.batchable = False
            return None
        return told_high_water(self._walked.pop(block), placements)

    def take_traced(
        self, block: int, placements: Sequence[Placement], key: Any, later: Callable[[], dict[int, Any]]
    ) -> list[BlockNumbers] | None:
        """Block ``block``'s numbers per core, walked with the task's later blocks whose control
        traces are ``block``'s (``later()``: their keys, by block), or None if it walks alone."""
        if not self.batchable:
            return None
        if block not in self._walked:
            keys = later()  # (of the blocks not started yet)
            same = [other for other, k in keys.items() if k == key and other not in self._walked]
            if not same:
                return None
            if not self._walk([block, *same[: BATCH_BLOCKS - 1]], placements):
                self.batchable = False
                return None
        return told_high_water(self._walked.pop(block), placements)

    def _walk(self, blocks: Sequence[int] | int, placements: Sequence[Placement]) -> bool:
        """Walk ``blocks`` (an int: that block and the next ones, at most BATCH_BLOCKS in all)
        together: False if the batch cannot do it (what it stored is stored again, the same, by the
        blocks' own walks)."""
        if not disjoint_outputs(self.plan, placements):
            return False
        if isinstance(blocks, int):
            blocks = list(range(blocks, min(blocks + BATCH_BLOCKS, self.blocks)))
        try:
            frames = walk_batch(
                self.plan, placements, blocks, self.blocks, self.target, self.steps, self.cost
            )
        except Exception:  # whatever stops the batch, the blocks' own walks meet again
            return False
        for lane, block in enumerate(blocks):
            self._walked[block] = lane_numbers(frames, lane)
        frames[0].role.launch.release()  # the batch's own launch (a reference cycle with its roles)
        return True


# A block's numbers per core, and the high water of each core's memory (for its cores' memories).
Walked = tuple[list[BlockNumbers], list[dict[MemorySpace, int]]]


def lane_numbers(frames: Sequence[BatchFrame], lane: int) -> Walked:
    """Lane ``lane``'s numbers per core from a batch walk, with each core's high water."""
    numbers = []
    for frame in frames:
        end = frame.ends[lane]
        ops = frame.ops if end is None else frame.ops[:end]
        numbers.append(BlockNumbers(ops, frame.errors[lane], frame.errors[lane] is not None, lane))
    return numbers, [dict(frame.memory.high_water) for frame in frames]


def told_high_water(walked: Walked, placements: Sequence[Placement]) -> list[BlockNumbers]:
    """A block's numbers walked in a batch, its cores' memories told their high water."""
    numbers, tops = walked
    for placement, top in zip(placements, tops, strict=True):
        memory = placement.role.core.memory
        if memory is not None:
            memory.high_water.update(top)
    return numbers


def walk_tasks(
    plan: LaunchPlan,
    placements: Sequence[Placement],
    tasks_args: Sequence[tuple[Any, ...]],
    target: Target,
    steps: Steps,
    cost: CostModel,
) -> list[Walked] | None:
    """The numbers of one-block tasks of ``plan`` walked together (:func:`walk_batch`), one lane
    per task in the order of ``tasks_args`` (each task's arguments; ``placements`` are the first
    task's block's): when the tasks pass the same tensors and the kernel batches
    (:func:`batchable`, so a task may also run again, alone, to the same numbers); their scalars
    (grid indices) may differ. None if they cannot."""
    if not _batchable(plan) or not disjoint_outputs(plan, placements):
        return None
    laned = []
    for seat in plan.seats:
        per_task = [seat.args(args) for args in tasks_args]
        merged = _laned(per_task)
        if merged is None:
            return None
        laned.append(merged)
    blocks = [0] * len(tasks_args)
    try:
        frames = walk_batch(plan, placements, blocks, 1, target, steps, cost, laned)
    except Exception:  # whatever stops the batch, the tasks' own walks meet again
        return None
    walked = [lane_numbers(frames, lane) for lane in range(len(tasks_args))]
    frames[0].role.launch.release()  # the batch's own launch (a reference cycle with its roles)
    return walked


def _laned(per_task: Sequence[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """One core's arguments in a batch of tasks: each the same in every task, or a scalar that
    differs as :class:`~pypto_sim_a2a3.fast.batch.Lanes`; None if a tensor differs."""
    merged = []
    for values in zip(*per_task, strict=True):
        first = values[0]
        if all(v is first for v in values):
            merged.append(first)
        elif all(type(v) in (int, float, bool) for v in values):
            merged.append(Lanes(values))
        else:
            return None
    return tuple(merged)


_BATCHABLE: weakref.WeakKeyDictionary[LaunchPlan, bool] = weakref.WeakKeyDictionary()


def _batchable(plan: LaunchPlan) -> bool:
    found = _BATCHABLE.get(plan)
    if found is None:
        found = _BATCHABLE[plan] = batchable(plan)
    return found


def walk_numbers(launch: Launch, frames: Sequence[NumbersFrame]) -> list[BlockNumbers]:
    """Run the cores' numbers walks now, each until it waits for a ring another one fills or
    empties, in turn. An error stops that core's walk; its replay raises it at its op."""
    launch.recorder = NoRecorder()  # type: ignore[assignment]
    for pipe in launch.pipes.values():
        pipe.recorder = launch.recorder
    numbers = [BlockNumbers(frame.ops) for frame in frames]

    def stopped(index: int, error: Exception) -> None:  # raised when the replay gets there, as the
        numbers[index].error, numbers[index].in_op = error, frames[index].in_op  # full engine would

    # If the cores wait for each other, so does block 0, whose deadlock ends the run first.
    if not in_turn([frame.run() for frame in frames], stopped):
        for walked in numbers:
            walked.waits = True
    return numbers


def _may_run_ahead(steps: Sequence[_Step], k: int) -> bool:
    """Whether a block of one core may go on to block 0's step ``k`` without a scheduler step
    first: nothing it does there is seen before its modeled time. Its slices carry their cycles,
    and its GM accesses are checked in modeled order whenever they are queued (at one cycle core
    by core, :class:`~pypto_sim_a2a3.checks.timeorder.TimeOrder`); but its settling and its end are seen
    when they happen in the run (then tasks resolve, core groups free up), so a step with either
    waits for its turn, as does a step block 0 has not finished."""
    if k >= len(steps):
        return False
    step = steps[k]
    return step.event is not _PENDING and step.event is not _FINAL and not step.settles


class GhostBlock:
    """A block that replays a recorded one (a later block of its task, or a block of a later task
    of its plan): its numbers walked at its start, its steps replayed from the recorded block's,
    ``shift`` cycles later, on its own core group, with its own GM regions."""

    def __init__(
        self,
        recording: BlockRecording,
        launch: Launch,
        shift: int,
        numbers: Sequence[BlockNumbers],
        recorder: Recorder,
        done: Callable[[], None],
    ) -> None:
        self.recording = recording
        self.launch = launch
        self.shift = shift
        self.numbers = numbers
        self.recorder = recorder
        self.done = done  # the chip's end of a block, once every core has finished
        pairs = zip(recording.cores, launch.roles, strict=True)
        self.names = {old: new.core.name for old, new in pairs}
        self.counts = [0] * len(launch.roles)  # per core, the steps it has begun
        self.signal = Signal()  # changed at each step: what its cores' waits are on
        self.rings: dict[int, Callable[[int, int], None]] = {}
        recording.ghosts.append(self)

    def process(self, index: int) -> Generator[Event, None, None]:
        """Core ``index`` of the block, replaying block 0's core ``index``."""
        steps = self.recording.steps[index]
        role = self.launch.roles[index]
        numbers = self.numbers[index]
        shift, names, launch, record_shifted = (
            self.shift,
            self.names,
            self.launch,
            self.recorder.record_shifted,
        )
        ops, cursor, call, args = numbers.ops, 0, None, ()
        counts, signal = self.counts, self.signal
        # A block of one core whose numbers met no error runs ahead over the steps it may (see
        # _may_run_ahead) without a scheduler step each.
        solo, core = len(self.launch.roles) == 1 and numbers.error is None, role.core
        k = 0
        while True:
            assert k < len(steps) and steps[k].event is not _PENDING, "a replay ran ahead of block 0"
            step = steps[k]
            counts[index] = k + 1
            signal.changed()
            pieces, others = step.split()
            if pieces:
                record_shifted(pieces, names, shift)
            for effect in others:
                kind = effect[0]
                if kind == OP:
                    if cursor >= len(ops):
                        assert numbers.error is not None, "a replayed block ran fewer ops than block 0"
                        raise numbers.error  # it stopped between ops: block 0 would have too
                    call, args = ops[cursor]
                    assert call is effect[1], "a replayed block ran other ops than block 0"
                    cursor += 1
                    if cursor == len(ops) and numbers.in_op:
                        assert numbers.error is not None
                        raise numbers.error  # the op this block's numbers stopped at
                elif kind == GM:
                    assert call is effect[1], "a replayed block accessed GM in another op than block 0"
                    gm_args = numbers.args(args) if call.op in GM_DATA_OPS else args  # (else unread)
                    launch.gm_access(role, call, gm_args, effect[2] + shift)
                elif kind == SETTLE:
                    launch.settle(launch.roles[effect[1]])
                elif kind == RING_CHANGE:
                    self.rings[effect[1]](effect[2], effect[3] + shift)
                elif kind == RING:
                    _, number, pipe, owner, slots = effect
                    self.rings[number] = self.recorder.ring(pipe, names[owner], slots)
                else:
                    t = effect[1]
                    push, pop = (t.push[0] + shift, t.push[1] + shift), (t.pop[0] + shift, t.pop[1] + shift)
                    self.recorder.transfer(Transfer(t.pipe, names[t.producer], names[t.consumer], push, pop))
            event = step.event
            if event is _FINAL:
                if numbers.error is not None:
                    raise numbers.error
                break
            if isinstance(event, Wait):
                event = self._wait(step, event)
            elif solo and event.silent and _may_run_ahead(steps, k + 1):
                core.advance(event.unit, event.cycles)  # what the scheduler does with it
                k += 1
                continue
            yield event
            k += 1
        assert cursor == len(ops), "a replayed block ran more ops than block 0"
        launch.finish(role)
        if launch.done:
            self.recording.ghosts.remove(self)  # its cores wait for no step of the recorded block
            self.done()

    def _wait(self, step: _Step, wait: Wait) -> Wait:
        """Block 0's wait, ended here after the same step of the same core of this block."""
        counts = self.counts

        def ready() -> bool:
            wake = step.wake
            return wake is not None and counts[wake[0]] >= wake[1]

        return Wait(ready, wait.what, wait.span, None, wait.silent, wait.keeps_clock, on=(self.signal,))
