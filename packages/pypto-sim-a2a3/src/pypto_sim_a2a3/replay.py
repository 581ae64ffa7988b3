"""The blocks of an spmd task, replayed: one block runs on the full engine, the others follow it.

The blocks of a ``pl.spmd`` launch run one kernel on equal core groups; when the kernel's loops
and branches do not depend on the block (or on data) and its cores share no pipe and no barrier,
every block does the same steps at the same cycles after its own start. So block 0 runs on the
full engine (:class:`~pypto_sim_a2a3.interpreter.KernelFrame`: its pipes, costs, waits) while a
:class:`BlockRecording` keeps, per core and per scheduler step, what the step yielded and what it
did: the timeline slices it recorded, the GM accesses it reported, the ops it ran, the moment its
last GM access settled. A later block is a :class:`GhostBlock`:

- its numbers come from a :class:`NumbersFrame`: the same walk of the kernel with the same
  checked semantics on the block's own core memory, without pipes or timing, run when the block
  starts;
- each of its cores is a scheduler process that replays block 0's steps, shifted by the
  difference of the two starts: the same events (so the scheduler interleaves every process as
  it would have), the same slices on this block's cores, the GM accesses with this block's own
  regions (so coherence and race checks see them at their modeled cycles), the same settling.

An error the numbers walk meets (a region out of bounds in the last block, a division by zero)
is raised when the replay reaches that op: at the same point of the run as on the full engine.
``PYPTO_SIM_REPLAY=off`` runs every block on the full engine; the tests compare the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pypto.ir import (
    Assign,
    Call,
    Const,
    DynDim,
    Expr,
    For,
    Function,
    If,
    Stmt,
    TileType,
    TupleExpr,
    Var,
    While,
)
from pypto.ir.backend import Slice
from pypto.ir.launch import LaunchPlan
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import op
from pypto.ir.walker import KernelWalker, drive
from pypto_sim_a2a3.crosscore import LAUNCH_OPS
from pypto_sim_a2a3.decode import Step, Steps
from pypto_sim_a2a3.interpreter import KernelFrame, skipped
from pypto_sim_a2a3.launch import CoreRole, Launch
from pypto_sim_a2a3.scheduler import Advance, Event
from pypto_sim_a2a3.timeline import Recorder

if TYPE_CHECKING:
    from pypto_sim_a2a3.cost import CostModel

REPLAY_ENV = "PYPTO_SIM_REPLAY"  # 0, off, false or no: every block on the full engine

# The launch ops a replayed kernel may hold: they take the core's time and touch nothing shared.
_INDEX_OPS = {op.get_subblock_idx, op.get_block_idx, op.get_block_num}
_QUIET_LAUNCH_OPS = _INDEX_OPS | {op.reserve_buffer, op.import_peer_buffer}
# Scalar values that are the same in every block (get_block_idx is not).
_UNIFORM_INDEX_OPS = {op.get_subblock_idx, op.get_block_num}

# What a step did, replayed in order: (SLICE, the slice), (OP, the call), (GM, the call, cycle),
# (SETTLE, the core's index).
SLICE, OP, GM, SETTLE = 0, 1, 2, 3
_PENDING = object()  # a step still running (or never finished): its event is not known
_FINAL = object()  # the step in which the core's process returned


def replay_enabled() -> bool:
    return os.environ.get(REPLAY_ENV, "").strip().lower() not in ("0", "off", "false", "no")


def replayable(plan: LaunchPlan) -> bool:
    """Whether every block of an spmd launch of ``plan`` does block 0's steps: no pipe between
    its cores, no barrier, fence or cache invalidation, and loops and branches that are the
    same in every block."""
    if plan.piped:
        return False
    for seat in plan.seats:
        kernel = seat.kernel
        for stmt in walk_stmts(kernel.body):
            for expr in stmt_exprs(stmt):
                for e in walk_expr(expr):
                    if isinstance(e, Call) and e.op in LAUNCH_OPS and e.op not in _QUIET_LAUNCH_OPS:
                        return False
        if not uniform_control(kernel):
            return False
    return True


def uniform_control(fn: Function) -> bool:
    """Whether every loop bound and branch condition of ``fn`` is made of constants, dynamic
    extents, the lane, the block count, enclosing loops' variables and scalar math on them: the
    same in every block of a launch, whatever the data."""
    uniform: set[str] = set()

    def same(expr: Expr) -> bool:
        if isinstance(expr, (Const, DynDim)):
            return True
        if isinstance(expr, Var):
            return expr.name in uniform
        if isinstance(expr, TupleExpr):
            return all(same(e) for e in expr.elements)
        if isinstance(expr, Call):
            pure = expr.op.startswith("scalar.") or expr.op in _UNIFORM_INDEX_OPS
            return pure and all(same(a) for a in expr.args)
        return False

    def body_ok(body: Sequence[Stmt]) -> bool:
        for stmt in body:
            if isinstance(stmt, Assign):
                if not isinstance(stmt.target.type, TileType) and same(stmt.value):
                    uniform.add(stmt.target.name)
            elif isinstance(stmt, For):
                if not (same(stmt.start) and same(stmt.stop) and same(stmt.step)):
                    return False
                uniform.add(stmt.var.name)
                if not body_ok(stmt.body):
                    return False
            elif isinstance(stmt, If):
                if not (same(stmt.cond) and body_ok(stmt.then_body) and body_ok(stmt.else_body)):
                    return False
            elif isinstance(stmt, While):
                return False  # its condition reads its carried values
        return True

    return body_ok(fn.body)


# ---------------------------------------------------------------- recording block 0


@dataclass(eq=False)
class _Step:
    """One scheduler step of a core: what it did (``effects``), then what it yielded."""

    effects: list[tuple[Any, ...]] = field(default_factory=list)
    event: Any = _PENDING


class BlockRecording:
    """Block 0 of a replayable task, recorded step by step while the full engine runs it."""

    def __init__(self, launch: Launch, start: int) -> None:
        self.launch = launch
        self.start = start
        self.steps: list[list[_Step]] = [[] for _ in launch.roles]
        self._current: list[tuple[Any, ...]] | None = None  # the effects of the step running now
        launch.recorder = _RecordingRecorder(launch.recorder, self)  # type: ignore[assignment]
        self._watch(launch)

    def effect(self, effect: tuple[Any, ...]) -> None:
        assert self._current is not None, "block 0 did something outside its own steps"
        self._current.append(effect)

    def on_op(self, call: Call) -> None:
        self.effect((OP, call))

    def _watch(self, launch: Launch) -> None:
        gm_access, settle = launch.gm_access, launch.settle
        index = {id(role): i for i, role in enumerate(launch.roles)}

        def recorded_gm_access(role: CoreRole, call: Call, args: Sequence[Any], at: int = 0) -> None:
            self.effect((GM, call, at))
            gm_access(role, call, args, at)

        def recorded_settle(role: CoreRole) -> None:
            if self._current is not None:
                self._current.append((SETTLE, index[id(role)]))
            settle(role)

        launch.gm_access = recorded_gm_access  # type: ignore[method-assign]
        launch.settle = recorded_settle  # type: ignore[method-assign]

    def recorded(self, index: int, process: Generator[Event, None, Any]) -> Generator[Event, None, Any]:
        """``process`` (core ``index``'s kernel run), each of its steps recorded."""
        steps = self.steps[index]
        while True:
            step = _Step()
            steps.append(step)
            self._current = step.effects
            try:
                event = next(process)
            except StopIteration as stop:
                self._current = None
                step.event = _FINAL
                return stop.value
            self._current = None
            assert isinstance(event, Advance), "a replayable kernel's core never waits"
            step.event = event
            yield event


class _RecordingRecorder:
    """The run's recorder as block 0's launch sees it: every slice is also kept in the step."""

    def __init__(self, recorder: Recorder, recording: BlockRecording) -> None:
        self._recorder = recorder
        self._recording = recording

    def record(self, piece: Slice) -> None:
        self._recorder.record(piece)
        self._recording.effect((SLICE, piece))

    def __getattr__(self, name: str) -> Any:  # rings and transfers: a replayable launch has none
        raise AssertionError(f"a replayable launch used the recorder's {name}")


# ---------------------------------------------------------------- a later block


class NumbersFrame(KernelFrame):
    """A kernel's walk for its numbers only: the checked semantics on the core's memory, no pipes,
    no time. ``ops`` are the ops it ran with their operands, in order; the walk never waits."""

    def __init__(self, seat: Any, args: Sequence[Any], role: CoreRole, cost: CostModel, steps: Steps):
        site = role.launch.site
        KernelWalker.__init__(self, seat, args, site.block, site.block_num)
        self.role = role
        self.core = role.core
        self.cost = cost
        self.steps = steps
        self.on_op = None
        self.pipes = _NoPipes()  # type: ignore[assignment]
        self._pending = None
        self.ops: list[tuple[Call, tuple[Any, ...]]] = []
        self.in_op = False  # inside an op's run (an error there belongs to that op)

    def run(self) -> Generator[Event, None, Any]:
        return (yield from KernelWalker.run(self))

    def top_level_done(self, index: int) -> Generator[Event, None, None]:
        yield from ()

    def run_step(self, step: Step, args: tuple[Any, ...]) -> Generator[Event, None, Any]:
        call = step.call
        self.ops.append((call, args))
        if step.work and self.role.mirror:
            return skipped(call, args)
        if step.launch is not None:
            if call.op in _INDEX_OPS:
                return self.index_value(call)
            return None  # a reserved or imported buffer: placed by the compiler
        self.in_op = True
        semantics = step.semantics
        if semantics is None:
            semantics = self._cannot_run(call, args)
        else:
            self._check_has_data(call, args)
        value = semantics(call, args)
        self.in_op = False
        return value
        yield  # a generator, like the full engine's step, that never waits

    def index_value(self, call: Call) -> int:
        if call.op == op.get_subblock_idx:
            return self.role.lane
        site = self.role.launch.site
        return site.block if call.op == op.get_block_idx else site.block_num


class _NoPipes:
    """What a numbers walk has for the pipes of its core: nothing to wait for, nothing to record."""

    def copied(self, source: Any, dest: Any) -> None:
        return None


@dataclass
class _Numbers:
    """One core's numbers walk: its ops with their operands, and the error it stopped at (in its
    last op if ``in_op``, else between ops, after the last)."""

    ops: list[tuple[Call, tuple[Any, ...]]]
    error: Exception | None = None
    in_op: bool = False


class GhostBlock:
    """A later block of a replayable task: its numbers walked at its start, its steps replayed
    from block 0's, ``shift`` cycles later, on its own core group."""

    def __init__(
        self,
        recording: BlockRecording,
        launch: Launch,
        shift: int,
        numbers: Sequence[_Numbers],
        recorder: Recorder,
        done: Callable[[], None],
    ) -> None:
        self.recording = recording
        self.launch = launch
        self.shift = shift
        self.numbers = numbers
        self.recorder = recorder
        self.done = done  # the chip's end of a block, once every core has finished
        pairs = zip(recording.launch.roles, launch.roles, strict=True)
        self.names = {old.core.name: new.core.name for old, new in pairs}

    @classmethod
    def walk_numbers(cls, frames: Sequence[NumbersFrame]) -> list[_Numbers]:
        """Run each core's numbers walk now; an error stops that core's walk and waits for its op."""
        walked = []
        for frame in frames:
            numbers = _Numbers(frame.ops)
            try:
                drive(frame.run())
            except Exception as error:  # raised when the replay gets there, as the full engine would
                numbers.error, numbers.in_op = error, frame.in_op
            walked.append(numbers)
        return walked

    def process(self, index: int) -> Generator[Event, None, None]:
        """Core ``index`` of the block, replaying block 0's core ``index``."""
        steps = self.recording.steps[index]
        role = self.launch.roles[index]
        numbers = self.numbers[index]
        shift, names, launch, record = self.shift, self.names, self.launch, self.recorder.record
        ops, cursor, call, args = numbers.ops, 0, None, ()
        k = 0
        while True:
            assert k < len(steps) and steps[k].event is not _PENDING, "a replay ran ahead of block 0"
            step = steps[k]
            for effect in step.effects:
                kind = effect[0]
                if kind == SLICE:
                    s = effect[1]
                    flag_at = None if s.flag_at is None else s.flag_at + shift
                    record(
                        Slice(
                            names[s.core],
                            s.start + shift,
                            s.cycles,
                            s.name,
                            s.unit,
                            s.task,
                            s.source,
                            s.peak_cycles,
                            s.roof,
                            s.pipe,
                            s.flag_from,
                            flag_at,
                        )
                    )
                elif kind == OP:
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
                    launch.gm_access(role, call, args, effect[2] + shift)
                else:
                    launch.settle(launch.roles[effect[1]])
            if step.event is _FINAL:
                if numbers.error is not None:
                    raise numbers.error
                break
            yield step.event
            k += 1
        assert cursor == len(ops), "a replayed block ran more ops than block 0"
        launch.finish(role)
        if launch.done:
            self.done()
