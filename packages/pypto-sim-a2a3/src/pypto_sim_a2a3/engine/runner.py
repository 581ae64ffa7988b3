"""Running a started block: the interface between the chip and the engine that runs its cores.

The chip's dispatcher picks a free core group for a ready block, pays the dispatch, makes the
block's :class:`~pypto_sim_a2a3.engine.launch.Launch` and hands a :class:`StartedBlock` to its
:class:`BlockRunner`, which spawns the block's core processes under the scheduler and calls the
chip back once the block's last core has finished. Two runners implement it:

- :class:`ReferenceRunner` (here): each core walks its kernel, a
  :class:`~pypto_sim_a2a3.engine.interpreter.KernelFrame` (numbers by the op's semantics, then the
  op on its pipe, :mod:`pypto_sim_a2a3.hw.corepipes`, which decides its modeled cycles);
- :class:`~pypto_sim_a2a3.fast.runner.FastRunner`: records a block on the reference runner (as a
  :class:`~pypto_sim_a2a3.engine.launch.LaunchObserver` of its launch) and replays later blocks
  of the task from the recording; the same cycles, slices, diagnostics and numbers.

``runner.start(block)``; ``runner.retire(task)`` once every block of the task has ended;
``runner.release()`` after the run.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir.launch import LaunchPlan
from pypto_sim_a2a3.engine.decode import Steps
from pypto_sim_a2a3.engine.interpreter import KernelFrame
from pypto_sim_a2a3.engine.launch import Launch, Placement, Site
from pypto_sim_a2a3.engine.scheduler import Event, Scheduler
from pypto_sim_a2a3.engine.taskgraph import Task
from pypto_sim_a2a3.hw.cost import CostModel


@dataclass(frozen=True)
class StartedBlock:
    """Block ``block`` of ``task``, started at cycle ``start`` on ``site``'s core group: its launch
    of ``plan`` and the kernel body each of its cores runs. ``idle``: every core of the group was
    idle by ``start`` (so the block's steps are any other such block's of the task, shifted)."""

    task: Task
    block: int
    plan: LaunchPlan
    site: Site
    launch: Launch
    placements: tuple[Placement, ...]
    start: int
    idle: bool = True


BlockDone = Callable[[StartedBlock], None]  # the chip's end of a block: record it, free its group


class BlockRunner(Protocol):
    """What runs the started blocks of a chip (see the module's docstring)."""

    def start(self, block: StartedBlock) -> None:
        """Spawn ``block``'s core processes; the chip's ``done`` is called once its last core has finished."""
        ...

    def retire(self, task: Task) -> None:
        """Every block of ``task`` has ended: drop what was kept for it."""
        ...

    def release(self) -> None:
        """After the run: break the reference cycles among what the runner made."""
        ...


class ReferenceRunner:
    """Each core of a block walks its kernel under the scheduler, on the full engine.

    ``ReferenceRunner(scheduler, cost, steps, done).start(block)``"""

    def __init__(self, scheduler: Scheduler, cost: CostModel, steps: Steps, done: BlockDone) -> None:
        self.scheduler = scheduler
        self.cost = cost
        self.steps = steps  # the program's calls, decoded once
        self.done = done

    def start(self, block: StartedBlock) -> None:
        observer = block.launch.observer
        for index, placement in enumerate(block.placements):
            run = self._run_kernel(placement, block)
            core = placement.role.core
            if observer is None:
                self.scheduler.spawn(core, run)
            else:
                observer.spawned(index, self.scheduler.spawn(core, observer.stepped(index, run)))

    def _run_kernel(self, placement: Placement, block: StartedBlock) -> Generator[Event, None, Any]:
        role = placement.role
        frame = KernelFrame(placement.seat, placement.args, role, self.cost, self.steps)
        observer = role.launch.observer
        if observer is not None:
            frame.on_op = observer.op
        result = yield from frame.run()
        role.launch.finish(role)
        if role.launch.done:
            self.done(block)
        return result

    def retire(self, task: Task) -> None:
        return None  # nothing is kept per task

    def release(self) -> None:
        self.done = released  # (the chip's method: a reference cycle with the chip)


def released(*args: Any) -> Any:
    """A callback of a runner after its run (which calls none)."""
    raise AssertionError("a block runner was used after its run was released")
