"""The fast block runner: blocks replay the recording of an earlier block that does the same steps.

:class:`FastRunner` is a :class:`~pypto_sim_a2a3.engine.runner.BlockRunner` that picks, per started
block, how it runs (see :mod:`pypto_sim_a2a3.fast.replay` for why each way models the same cycles).
The block it replays may be of its own task (the blocks of a ``pl.spmd`` launch) or of an earlier
task launching the same plan (the tasks of a ``pl.parallel`` grid of ``pl.at`` scopes):

- a block of a plan whose loops and branches are the same in every block and task
  (:func:`~pypto_sim_a2a3.fast.replay.replayable`): the first one of each
  :func:`~pypto_sim_a2a3.fast.replay.launch_key` runs on the reference runner, recorded (a
  :class:`~pypto_sim_a2a3.fast.replay.BlockRecording` observes its launch); a later block with that
  key replays the recording (a :class:`~pypto_sim_a2a3.fast.replay.GhostBlock`), its numbers walked
  with its task's other blocks' (:class:`~pypto_sim_a2a3.fast.replay.BatchedNumbers`), with the
  ready one-block tasks that will replay the same recording (:meth:`FastRunner._walk_ahead`), or
  alone;
- a block of a plan whose blocks walk differently (:func:`~pypto_sim_a2a3.fast.replay.replayable_by_walk`):
  its control trace (:func:`~pypto_sim_a2a3.fast.control.control_key`, a walk of the statements
  that decide its steps alone) keys the recordings: it replays the earlier block of the plan whose
  control took the same course, its numbers walked with its task's later blocks of that trace, or
  runs on the reference runner, recorded for the blocks after it. A block whose control cannot be
  traced walks for its numbers and its signature first (:func:`~pypto_sim_a2a3.fast.replay.walk_signature`)
  and replays the earlier block that walked the same way. After ``_WALK_TRIES`` blocks of the
  plan matched nothing (and fewer matched), its blocks run on the reference runner. (The first
  task of such a plan, if of one block, runs on the reference runner at once: most kernels launch
  once);
- any other block: on the reference runner.

A block replays only if every core of its group was idle by its start (``StartedBlock.idle``).
The recordings are kept for the whole run (at most ``_RECORDINGS`` per plan), the numbers walked
ahead for a task's blocks until the task retires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from pypto.ir import Target
from pypto.ir.launch import LaunchPlan
from pypto_sim_a2a3.engine.launch import Placement, Site
from pypto_sim_a2a3.engine.runner import ReferenceRunner, StartedBlock, released
from pypto_sim_a2a3.engine.steering import control_of
from pypto_sim_a2a3.engine.taskgraph import Task
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.fast.batch import BATCH_BLOCKS, disjoint_outputs
from pypto_sim_a2a3.fast.control import control_key
from pypto_sim_a2a3.fast.replay import (
    BatchedNumbers,
    BlockNumbers,
    BlockRecording,
    GhostBlock,
    NumbersFrame,
    Walked,
    launch_key,
    replayable,
    replayable_by_walk,
    told_high_water,
    walk_numbers,
    walk_signature,
    walk_tasks,
)

# Blocks of a plan walked for a signature that matched no earlier one, after which the plan's
# blocks stop walking first unless as many did match.
_WALK_TRIES = 16
# Recordings kept per plan (one per launch key or walk signature): a plan whose blocks walk in
# more ways replays the first ways it met and runs its other blocks on the reference runner.
_RECORDINGS = 32

_UNTRACED = object()  # a block whose batch key was not traced ahead

# A fresh launch of a started block on its own site (the chip's: it keeps every launch it made).
Relaunch = Callable[[StartedBlock], StartedBlock]
# The tasks whose blocks are ready and not started yet, in the order they start (the chip's).
Waiting = Callable[[], Iterable[Task]]


class FastRunner:
    """Runs started blocks by replay where it may, else on ``reference`` (see the module's docstring).

    ``FastRunner(reference, relaunch, target, recorder, batch=True, waiting=chip_ready_tasks)``;
    ``runner.replayed`` counts the blocks it replayed."""

    def __init__(
        self,
        reference: ReferenceRunner,
        relaunch: Relaunch,
        target: Target,
        recorder: Recorder,
        batch: bool,
        waiting: Waiting | None = None,
        check: bool = False,
    ) -> None:
        self.reference = reference
        self.relaunch = relaunch
        self.target = target
        self.recorder = recorder
        self.batch = batch  # a task's later blocks' numbers walked together (SimOptions.batch)
        # The chip's ready tasks not started yet, in the order they start: the one-block tasks among
        # them whose blocks will replay one recording are walked together (None: each alone).
        self.waiting = waiting
        self._ahead: dict[int, Walked] = {}  # per one-block task: its numbers, walked with an earlier one's
        self._unbatched: set[LaunchPlan] = set()  # plans whose tasks' numbers did not walk together
        self.replayed = 0  # blocks replayed so far
        # Per plan, what its blocks replay: the recording of the first block of each launch key
        # (a replayable plan) or of each walk signature (a plan whose blocks walk differently).
        self._recordings: dict[LaunchPlan, dict[Any, BlockRecording]] = {}
        self._walk_tally: dict[LaunchPlan, tuple[int, int]] = {}  # per plan: blocks replayed, blocks not
        self._launched: set[LaunchPlan] = set()  # plans whose blocks walk differently, launched once
        self._numbers: dict[int, BatchedNumbers] = {}  # per task of several blocks: their numbers
        self._traces: dict[int, dict[int, Any]] = {}  # per task: its later blocks' keys, traced ahead
        self._batch_keys: dict[int, dict[int, Any]] = {}  # ... and what they share to walk together
        self.check = check  # each traced block also walks for its signature (SimOptions.check_replay)
        self._signatures: dict[Any, Any] = {}  # (check mode) per control key, the first signature

    def start(self, block: StartedBlock) -> None:
        """Replay ``block`` from an earlier block's recording, or run it on the reference runner
        (recorded, if later blocks may replay it)."""
        if block.idle and replayable(block.plan):
            self._start_by_key(block)
        elif self._by_walk(block):
            self._replay_by_walk(block)
        else:
            self.reference.start(block)

    def _start_by_key(self, block: StartedBlock) -> None:
        """A block of a replayable plan: replay the first block of its launch key, or be that block."""
        task, plan = block.task, block.plan
        key = launch_key(plan, task.blocks, task.args)
        recordings = self._recordings.setdefault(plan, {})
        recording = recordings.get(key)
        if recording is None:
            if len(recordings) < _RECORDINGS:
                recordings[key] = self._recorded(block)
            self.reference.start(block)
        elif block.start > recording.start:
            self._replay(recording, block, self._batched(block))
        else:
            self.reference.start(block)

    def _batched(self, block: StartedBlock) -> Sequence[BlockNumbers] | None:
        """The numbers of a replayed block walked with others: a block of an spmd task with its
        task's next blocks, a one-block task with the ready tasks of its launch key (None: the
        block walks alone)."""
        task = block.task
        if not self.batch:
            return None
        if task.blocks == 1:
            walked = self._ahead.pop(task.id, None)
            if walked is None:
                walked = self._walk_ahead(block)
            return None if walked is None else told_high_water(walked, block.placements)
        numbers = self._numbers.get(task.id)
        if numbers is None:
            reference = self.reference
            numbers = self._numbers[task.id] = BatchedNumbers(
                block.plan, task.blocks, self.target, reference.steps, reference.cost, batch=self.batch
            )
        return numbers.take(block.block, block.placements)

    def _walk_ahead(self, block: StartedBlock) -> Walked | None:
        """Walk the numbers of ``block``'s one-block task with those of the ready tasks that will
        replay the same recording (at most ``BATCH_BLOCKS`` in all); keep theirs for their start.

        Safe from the task graph: a ready task's dependencies are resolved (every task whose
        writes it reads, or whose reads its writes would clobber, is past its last GM access), and
        any task that touches its tensors later depends on it; a task unordered with it on the same
        bytes is a race, reported at its modeled cycle whatever the numbers. A task that then runs
        on the reference runner after all (its core group busy) computes the same numbers again
        (the kernel may run twice, :func:`~pypto_sim_a2a3.fast.batch.batchable`), and one with a
        ``predicate=`` the scheduler has not read yet may be skipped: it is not walked ahead."""
        if self.waiting is None or block.plan in self._unbatched:
            return None
        task, plan = block.task, block.plan
        key = launch_key(plan, 1, task.args)
        kernel = plan.kernel
        later = [
            other
            for other in self.waiting()
            if other.kernel is kernel
            and other.blocks == 1
            and other.predicate is None
            and other.id not in self._ahead
            and launch_key(plan, 1, other.args) == key
        ][: BATCH_BLOCKS - 1]
        if not later:
            return None
        reference = self.reference
        args = [task.args, *(other.args for other in later)]
        walked = walk_tasks(plan, block.placements, args, self.target, reference.steps, reference.cost)
        if walked is None:
            self._unbatched.add(plan)  # (its tasks pass other tensors, or its ops do not batch)
            return None
        for other, numbers in zip(later, walked[1:], strict=True):
            self._ahead[other.id] = numbers
        return walked[0]

    def _by_walk(self, block: StartedBlock) -> bool:
        """Whether a block of a plan whose blocks walk differently (loops and branches on data, on
        the block or on the task's scalars) may replay an earlier block that walked the same way."""
        plan = block.plan
        if not block.idle or not replayable_by_walk(plan):
            return False
        if block.task.blocks == 1 and plan not in self._launched:
            self._launched.add(plan)  # most plans launch once: a walk first would be a second walk
            return False
        hits, misses = self._walk_tally.get(plan, (0, 0))
        if misses >= _WALK_TRIES and hits < misses:
            return False  # its blocks rarely walk alike: the walks cost more than they save
        return disjoint_outputs(plan, block.placements)

    def _replay_by_walk(self, block: StartedBlock) -> None:
        """A block of a plan whose blocks walk differently: replay the earlier block of the plan
        whose control took the same course (:func:`~pypto_sim_a2a3.fast.control.control_key`), or
        run this one on the reference runner, recorded for the blocks after it. Where its control
        cannot be traced, its numbers walk first for its signature (:meth:`_replay_by_signature`)."""
        # (Started: its numbers walk with no later block's; what they would share, if traced ahead.)
        shared = self._batch_keys.get(block.task.id, {}).pop(block.block, _UNTRACED)
        key = self._control_key(block)
        if key is None:
            self._replay_by_signature(block)
            return
        plan = block.plan
        if self.check:
            self._check_signature(block, key)
        recordings = self._recordings.setdefault(plan, {})
        template = recordings.get(key)
        hits, misses = self._walk_tally.get(plan, (0, 0))
        if template is not None and block.start > template.start:
            numbers = self._traced_numbers(block, key, shared)
            walked_here = numbers is None  # (walked alone, on the block's own launch)
            if numbers is None:
                numbers = walk_numbers(block.launch, self._numbers_frames(block.placements))
            if not any(n.error is not None or n.waits for n in numbers):
                self._walk_tally[plan] = (hits + 1, misses)
                self._replay(template, block, numbers)
                return
            # An error or a deadlock: the reference runner meets it where the full engine does.
            self._walk_tally[plan] = (hits, misses + 1)
            self.reference.start(self.relaunch(block) if walked_here else block)
            return
        self._walk_tally[plan] = (hits, misses + 1)
        if template is None and len(recordings) < _RECORDINGS:
            recordings[key] = self._recorded(block)
        self.reference.start(block)

    def _control_key(self, block: StartedBlock) -> Any:
        """The key of ``block``'s recording: its launch key and its control trace (None: untraced)."""
        task = block.task
        keys = self._traces.get(task.id)
        if keys is not None and block.block in keys:
            return keys.pop(block.block)
        reference = self.reference
        trace = control_key(block.placements, block.site, reference.steps)
        return None if trace is None else (launch_key(block.plan, task.blocks, task.args), trace)

    def _traced_numbers(self, block: StartedBlock, key: Any, shared: Any) -> list[BlockNumbers] | None:
        """``block``'s numbers walked with those of its task's later blocks whose numbers may walk
        with them (:meth:`_batch_key`; ``shared``: the block's, if traced ahead), or None if it
        walks alone."""
        task = block.task
        if not self.batch or task.blocks == 1:
            return None
        numbers = self._numbers.get(task.id)
        if numbers is None:
            reference = self.reference
            numbers = self._numbers[task.id] = BatchedNumbers(
                block.plan, task.blocks, self.target, reference.steps, reference.cost, batch=self.batch
            )
        if not numbers.batchable:
            return None
        batch_key = self._batch_key(block.placements, block.site, key) if shared is _UNTRACED else shared
        if batch_key is None:
            return None
        return numbers.take_traced(block.block, block.placements, batch_key, self._later_keys(block))

    def _batch_key(self, placements: Sequence[Placement], site: Site, key: Any) -> Any:
        """What the blocks whose numbers walk together share: their key and the valid shapes their
        pipe ops push and pop (a batch pushes one for all its blocks); None: untraced."""
        if all(control_of(p.kernel, True).recorded == control_of(p.kernel).recorded for p in placements):
            return key
        trace = control_key(placements, site, self.reference.steps, valid_shapes=True)
        return None if trace is None else (key, trace)

    def _later_keys(self, block: StartedBlock) -> Callable[[], dict[int, Any]]:
        """The batch keys of ``block``'s task's blocks after it, traced once (on its placements;
        their keys are kept for their start)."""
        task = block.task

        def later() -> dict[int, Any]:
            found = self._batch_keys.get(task.id)
            if found is None:
                found = self._batch_keys[task.id] = {}
                keys = self._traces.setdefault(task.id, {})
                launch = launch_key(block.plan, task.blocks, task.args)
                steps = self.reference.steps
                for other in range(block.block + 1, task.blocks):
                    site = replace(block.site, block=other)
                    trace = control_key(block.placements, site, steps)
                    key = keys[other] = None if trace is None else (launch, trace)
                    found[other] = None if key is None else self._batch_key(block.placements, site, key)
            return found

        return later

    def _check_signature(self, block: StartedBlock, key: Any) -> None:
        """The check mode (``SimOptions.check_replay``): the block's numbers walked alone on a
        launch of its own for its full :func:`walk_signature`, which must be that of every other
        block of its key."""
        fresh = self.relaunch(block)
        frames = self._numbers_frames(fresh.placements)
        signature = walk_signature(frames, walk_numbers(fresh.launch, frames))
        if signature is None:
            return
        first = self._signatures.setdefault(key, signature)
        if first != signature:
            raise AssertionError(
                f"block {block.block} of {block.plan.kernel.name} has the control trace of an earlier "
                "block but walks differently: the control slice misses what decides its steps"
            )

    def _replay_by_signature(self, block: StartedBlock) -> None:
        """Walk the block for its numbers and its signature (:func:`walk_signature`): replay the
        earlier block of the plan that walked the same way, or run this one on the reference
        runner, on a launch of its own (the walk used this one), recorded for the blocks after it."""
        frames = self._numbers_frames(block.placements)
        numbers = walk_numbers(block.launch, frames)
        signature = walk_signature(frames, numbers)
        plan = block.plan
        recordings = self._recordings.setdefault(plan, {})
        template = recordings.get(signature) if signature is not None else None
        hits, misses = self._walk_tally.get(plan, (0, 0))
        if template is not None and block.start > template.start:
            self._walk_tally[plan] = (hits + 1, misses)
            self._replay(template, block, numbers)
            return
        self._walk_tally[plan] = (hits, misses + 1)
        fresh = self.relaunch(block)
        if signature is not None and template is None and len(recordings) < _RECORDINGS:
            recordings[signature] = self._recorded(fresh)
        self.reference.start(fresh)

    def _recorded(self, block: StartedBlock) -> BlockRecording:
        """A recording of ``block``, which the reference runner is about to run."""
        recording = BlockRecording(block.launch, block.start)
        block.launch.observe(recording)
        return recording

    def _replay(
        self, recording: BlockRecording, block: StartedBlock, numbers: Sequence[BlockNumbers] | None
    ) -> None:
        """A block that does ``recording``'s steps: its numbers now (or ``numbers``, walked already),
        its steps replayed from the recorded block's."""
        if numbers is None:
            numbers = walk_numbers(block.launch, self._numbers_frames(block.placements))
        done, shift = self.reference.done, block.start - recording.start
        ghost = GhostBlock(recording, block.launch, shift, numbers, self.recorder, lambda: done(block))
        spawn = self.reference.scheduler.spawn
        for index, placement in enumerate(block.placements):
            spawn(placement.role.core, ghost.process(index))
        self.replayed += 1

    def _numbers_frames(self, placements: Sequence[Placement]) -> list[NumbersFrame]:
        cost, steps = self.reference.cost, self.reference.steps
        return [NumbersFrame(p.seat, p.args, p.role, cost, steps) for p in placements]

    def retire(self, task: Task) -> None:
        self._numbers.pop(task.id, None)  # (the recordings stay: later tasks may replay them)
        self._traces.pop(task.id, None)
        self._batch_keys.pop(task.id, None)
        self._ahead.pop(task.id, None)  # walked ahead, but it ran on the reference runner

    def release(self) -> None:
        for recordings in self._recordings.values():
            for recording in recordings.values():
                recording.release()
        self._recordings.clear()
        self._numbers.clear()
        self._traces.clear()
        self._batch_keys.clear()
        self._signatures.clear()
        self._ahead.clear()
        self.waiting = None  # (the chip's: a reference cycle with the chip)
        self.relaunch = released  # (the chip's method: a reference cycle with the chip)
        self.reference.release()
