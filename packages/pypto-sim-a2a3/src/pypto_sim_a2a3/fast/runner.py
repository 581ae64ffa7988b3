"""The fast block runner: later blocks of an spmd task replay an earlier block's recording.

:class:`FastRunner` is a :class:`~pypto_sim_a2a3.engine.runner.BlockRunner` that picks, per started
block, how it runs (see :mod:`pypto_sim_a2a3.fast.replay` for why each way models the same cycles):

- block 0 of a task whose kernel's loops and branches are the same in every block
  (:func:`~pypto_sim_a2a3.fast.replay.replayable`): on the reference runner, recorded (a
  :class:`~pypto_sim_a2a3.fast.replay.BlockRecording` observes its launch); a later block of it
  replays the recording (a :class:`~pypto_sim_a2a3.fast.replay.GhostBlock`), its numbers walked
  with the other later blocks' (:class:`~pypto_sim_a2a3.fast.replay.BatchedNumbers`);
- a block of a task whose blocks walk differently (:func:`~pypto_sim_a2a3.fast.replay.replayable_by_walk`):
  walked for its numbers and its signature first; it replays the earlier block that walked the
  same way, or runs on the reference runner, recorded for the blocks after it — until
  ``_WALK_TRIES`` walks matched nothing (and fewer matched), after which the task's blocks run
  on the reference runner;
- any other block: on the reference runner.

A block replays only if every core of its group was idle by its start (``StartedBlock.idle``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pypto.ir import Target
from pypto_sim_a2a3.engine.launch import Placement
from pypto_sim_a2a3.engine.runner import ReferenceRunner, StartedBlock, released
from pypto_sim_a2a3.engine.taskgraph import Task
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.fast.batch import disjoint_outputs
from pypto_sim_a2a3.fast.replay import (
    BatchedNumbers,
    BlockNumbers,
    BlockRecording,
    GhostBlock,
    NumbersFrame,
    replayable,
    replayable_by_walk,
    walk_numbers,
    walk_signature,
)

# Blocks of a task walked for a signature that matched no earlier one, after which the task's
# blocks stop walking first unless as many did match.
_WALK_TRIES = 16

# A fresh launch of a started block on its own site (the chip's: it keeps every launch it made).
Relaunch = Callable[[StartedBlock], StartedBlock]


class FastRunner:
    """Runs started blocks by replay where it may, else on ``reference`` (see the module's docstring).

    ``FastRunner(reference, relaunch, target, recorder, batch=True)``"""

    def __init__(
        self, reference: ReferenceRunner, relaunch: Relaunch, target: Target, recorder: Recorder, batch: bool
    ) -> None:
        self.reference = reference
        self.relaunch = relaunch
        self.target = target
        self.recorder = recorder
        self.batch = batch  # the later blocks' numbers walked together (SimOptions.batch)
        self._recordings: dict[int, BlockRecording] = {}  # task id -> the recording of its block 0
        self._replayable: dict[str, bool] = {}  # per kernel
        # Tasks whose blocks walk differently: task id -> signature -> the recording of the first
        # block that walked so, and per kernel whether its blocks may replay one another so.
        self._templates: dict[int, dict[Any, BlockRecording]] = {}
        self._by_walk_kernels: dict[str, bool] = {}
        self._walk_tally: dict[int, tuple[int, int]] = {}  # per task: blocks replayed, blocks not

    def start(self, block: StartedBlock) -> None:
        """Replay ``block`` from an earlier block's recording, or run it on the reference runner
        (recorded, if later blocks of its task may replay it)."""
        recording = self._recording(block)
        if block.block > 0 and recording is not None:
            self._replay(recording, block)
            return
        if recording is None and self._by_walk(block):
            walked = self._replay_by_walk(block)
            if walked is None:
                return
            block, recording = walked
        if recording is not None:
            block.launch.observe(recording)
        self.reference.start(block)

    def _may_replay(self, block: StartedBlock) -> bool:
        """A block of an spmd task on a core group idle by its start: its steps are another's, shifted."""
        return block.task.blocks > 1 and block.idle

    def _recording(self, block: StartedBlock) -> BlockRecording | None:
        """Block 0 of a replayable spmd task: a new recording; a later block: block 0's, if it
        may follow it (None: the block runs on the reference runner)."""
        if not self._may_replay(block):
            return None
        task, plan = block.task, block.plan
        if block.block == 0:
            name = plan.kernel.name
            if name not in self._replayable:
                self._replayable[name] = replayable(plan)
            if not self._replayable[name]:
                return None
            recording = self._recordings[task.id] = BlockRecording(block.launch, block.start)
            reference = self.reference
            recording.numbers = BatchedNumbers(
                plan, task.blocks, self.target, reference.steps, reference.cost, batch=self.batch
            )
            return recording
        found = self._recordings.get(task.id)
        return found if found is not None and block.start > found.start else None

    def _by_walk(self, block: StartedBlock) -> bool:
        """Whether a block of a task whose blocks walk differently (loops and branches on data or
        on the block) may replay an earlier block that walked the same way."""
        if not self._may_replay(block):
            return False
        hits, misses = self._walk_tally.get(block.task.id, (0, 0))
        if misses >= _WALK_TRIES and hits < misses:
            return False  # its blocks rarely walk alike: the walks cost more than they save
        plan = block.plan
        name = plan.kernel.name
        if name not in self._by_walk_kernels:
            self._by_walk_kernels[name] = replayable_by_walk(plan)
        return self._by_walk_kernels[name] and disjoint_outputs(plan, block.placements)

    def _replay_by_walk(self, block: StartedBlock) -> tuple[StartedBlock, BlockRecording | None] | None:
        """Walk the block for its numbers and its signature (:func:`walk_signature`): replay the
        earlier block of the task that walked the same way (None), or run this one on the reference
        runner, on a launch of its own (the walk used this one), recorded for the blocks after it."""
        frames = self._numbers_frames(block.placements)
        numbers = walk_numbers(block.launch, frames)
        signature = walk_signature(frames, numbers)
        task = block.task
        templates = self._templates.setdefault(task.id, {})
        template = templates.get(signature) if signature is not None else None
        hits, misses = self._walk_tally.get(task.id, (0, 0))
        if template is not None and block.start > template.start:
            self._walk_tally[task.id] = (hits + 1, misses)
            self._replay(template, block, numbers)
            return None
        self._walk_tally[task.id] = (hits, misses + 1)
        fresh = self.relaunch(block)
        recording = None
        if signature is not None and template is None:
            recording = templates[signature] = BlockRecording(fresh.launch, fresh.start)
        return fresh, recording

    def _replay(
        self, recording: BlockRecording, block: StartedBlock, numbers: Sequence[BlockNumbers] | None = None
    ) -> None:
        """A later block of a replayable task: its numbers now (or ``numbers``, walked already),
        its steps replayed from the recorded block's."""
        if numbers is None and recording.numbers is not None:
            numbers = recording.numbers.take(block.block, block.placements)
        if numbers is None:
            numbers = walk_numbers(block.launch, self._numbers_frames(block.placements))
        done, shift = self.reference.done, block.start - recording.start
        ghost = GhostBlock(recording, block.launch, shift, numbers, self.recorder, lambda: done(block))
        spawn = self.reference.scheduler.spawn
        for index, placement in enumerate(block.placements):
            spawn(placement.role.core, ghost.process(index))

    def _numbers_frames(self, placements: Sequence[Placement]) -> list[NumbersFrame]:
        cost, steps = self.reference.cost, self.reference.steps
        return [NumbersFrame(p.seat, p.args, p.role, cost, steps) for p in placements]

    def retire(self, task: Task) -> None:
        recordings = [self._recordings.pop(task.id, None), *self._templates.pop(task.id, {}).values()]
        for recording in recordings:
            if recording is not None:
                recording.release()  # its blocks have all ended
        self._walk_tally.pop(task.id, None)

    def release(self) -> None:
        for recording in [
            *self._recordings.values(),
            *(r for t in self._templates.values() for r in t.values()),
        ]:
            recording.release()
        self._recordings.clear()
        self._templates.clear()
        self.relaunch = released  # (the chip's method: a reference cycle with the chip)
        self.reference.release()
