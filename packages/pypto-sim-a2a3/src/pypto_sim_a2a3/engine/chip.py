"""The simulated chip: cores with clocks and memory, core groups, and the task scheduler.

The orchestration runs as a coroutine on the ``host`` clock and *submits* each ``call`` as a task
(:mod:`pypto_sim_a2a3.engine.taskgraph` derives its edges); it does not wait for it. A second AICPU
coroutine, the ``scheduler``, starts each ready task on the lowest-numbered free core group (one
group per block of an ``pl.spmd`` task; the blocks of a ``sync_start`` task all at once, when as many
groups are free) and retires it when its cores are done, which readies the
tasks waiting for it; a task of an ``allow_early_resolve=True`` scope readies them earlier, in a
*resolve* step once every core of it is past its last GM access. Each of these steps costs the
Target's dispatch cycles. A block's launch
(see :mod:`pypto_sim_a2a3.engine.launch`) seats the cores the kernel needs — one for an AIC or AIV
kernel, the AIC and both AIV lanes for a Group kernel — and the chip's block runner
(:mod:`pypto_sim_a2a3.engine.runner`: the reference runner, or the fast runner of
:mod:`pypto_sim_a2a3.fast.runner` when ``SimOptions.replay`` allows it) runs them as coroutines under
the same :class:`Scheduler`, so independent tasks on different core groups interleave, each group
with its own cores, clocks and memory. GM accesses of tasks no edge orders are a ``RaceError``
(:mod:`pypto_sim_a2a3.checks.races`). A :class:`~pypto_sim_a2a3.engine.timeline.Recorder` keeps every core's
busy and stalled slices, ring occupancy and pipe transfers for the report; the chip itself keeps
each task's submission and retirement (the task window) and each core's heap per kernel it ran.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import replace
from typing import Any

import torch

from pypto.ir import Call, Function, MemoryPlan, Program, RunReport, SourceSpan, Target, TaskRecord
from pypto.ir.argdump import AFTER, BEFORE, ArgDumpSink, DumpedArg, DumpSlot, dump_slots
from pypto.ir.backend import HeapUse, SubmittedTask
from pypto.ir.launch import LaunchPlan, LoadedProgram
from pypto_sim_a2a3.checks.coherence import Access, GmOrder
from pypto_sim_a2a3.checks.races import TaskRaces, edges_order_every_conflict
from pypto_sim_a2a3.checks.timeorder import TimeOrder
from pypto_sim_a2a3.engine.debugger import DebugSession
from pypto_sim_a2a3.engine.decode import steps_of
from pypto_sim_a2a3.engine.host import HostFrame
from pypto_sim_a2a3.engine.launch import Launch, Placement, Site, check_arguments, plan_launch, task_barrier
from pypto_sim_a2a3.engine.runner import BlockRunner, ReferenceRunner, StartedBlock
from pypto_sim_a2a3.engine.runtime_rings import RuntimeRings, Scope
from pypto_sim_a2a3.engine.scheduler import Advance, Event, Scheduler, Signal, Wait
from pypto_sim_a2a3.engine.steering import TimingOnly, UnrealGm, launch_steering
from pypto_sim_a2a3.engine.taskgraph import (
    JOIN,
    ParallelContext,
    PredicateSite,
    Task,
    TaskGraph,
    access_modes,
)
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.errors import LaunchError
from pypto_sim_a2a3.fast.runner import FastRunner
from pypto_sim_a2a3.hw.barrier import SyncAll
from pypto_sim_a2a3.hw.cores import Core, CoreGroup
from pypto_sim_a2a3.hw.cost import CostModel
from pypto_sim_a2a3.hw.engines import core_pipes_class, scheduler_class
from pypto_sim_a2a3.options import SimOptions

# (kernel, done, total, unit): the blocks of an spmd task, or its outermost loop's iterations.
ProgressObserver = Callable[[str, int, int, str], None]
HOST = "host"  # the AICPU thread running the orchestration: it submits tasks
SCHEDULER = "scheduler"  # the AICPU thread that resolves, dispatches and retires tasks


class Chip:
    """One simulated chip running one program (``loaded``: the program's launch plans, made once
    per program by the backend; made here if not given)."""

    def __init__(
        self,
        program: Program,
        target: Target,
        platform: str,
        on_task: Callable[[str], None] | None = None,
        on_progress: ProgressObserver | None = None,
        loaded: LoadedProgram | None = None,
        rings: RuntimeRings | None = None,
        debugger: DebugSession | None = None,
        dump: ArgDumpSink | None = None,
        scheduler: Scheduler | None = None,
        comm: Any = None,
        sim: SimOptions | None = None,
    ):
        self.program = program
        self.loaded = loaded or LoadedProgram(program, target.aiv_per_group)
        self.on_task = on_task  # told each retired task's kernel name (the runtime's progress bar)
        self.on_progress = on_progress  # told how far each running task has got (the same bar)
        self.target = target
        self.platform = platform
        self.sim = sim if sim is not None else SimOptions.from_env()  # every switch of the run
        self.cost = CostModel(target)
        self.core_pipes = core_pipes_class(self.sim.engine)  # compiled or Python (hw/engines.py)
        self.steps = steps_of(self.loaded, target)  # the program's calls, decoded once
        self.in_time = TimeOrder()  # GM accesses and ordering events, checked in modeled order
        # A chip of a world shares the world's scheduler (one modeled clock for every rank).
        self.scheduler = (
            scheduler
            if scheduler is not None
            else scheduler_class(self.sim.engine)(
                on_time=self.in_time.until, check_wakeups=self.sim.check_wakeups
            )
        )
        self.comm = comm  # its rank's endpoint in a world of chips (None: a chip alone)
        self.recorder = Recorder(self.scheduler)
        self.host = Core(HOST)
        self.dispatcher = Core(SCHEDULER)
        self.graph = TaskGraph()
        self.rings = rings or RuntimeRings.from_options({})  # the runtime's rings and scopes
        self._created: dict[int, int] = {}  # storage of a tensor the orchestration made -> its bytes
        self._held: set[int] = set()  # tasks submitted, waiting for room in their ring
        self.races = TaskRaces(self.graph)
        # Whether a retired task's GM accesses may leave the race record (see _forget_accesses).
        self._forgets = comm is None and edges_order_every_conflict(program)
        self._forgetting: list[tuple[Task, GmOrder]] = []  # retired, some access not checked yet
        self.groups: dict[int, CoreGroup] = {}
        self.tasks: list[TaskRecord] = []
        self.submitted: list[SubmittedTask] = []  # by task id - 1
        self.heaps: list[HeapUse] = []
        self._free = list(range(target.core_groups))  # a heap: the lowest free group goes first
        self._ready: deque[tuple[Task, int]] = deque()  # (task, block) ready to start, in submission order
        self._finished: deque[Task] = deque()  # tasks whose every block is done, to retire
        self._settled: deque[Task] = deque()  # early-resolve tasks past their last GM access, to resolve
        self._barriers: dict[int, SyncAll] = {}  # task id -> the syncall barrier its blocks share
        self._orders: dict[int, GmOrder] = {}  # task id -> the GM access record its blocks share
        self._orchestrated = False
        # changed with any of the above or the task graph: what the host and the dispatcher wait on
        self.changed = Signal()
        self.debugger = debugger
        self._launches: dict[int, list[Launch]] = {}  # per unretired task, its launches (see _retire)
        # RunConfig(enable_dump_args=...): where dumped values go, and per started task the
        # arguments still to dump once it has written them
        self.dump = dump
        self._to_dump: dict[int, tuple[DumpSlot, ...]] = {}
        self.runner = self._runner()  # what runs each started block's cores
        # A timing-only run (SimOptions.timing_only): the GM its tasks wrote without numbers.
        self.unreal = UnrealGm() if self.sim.timing_only else None

    def run(self, entry: Function, args: Sequence[Any]) -> tuple[Any, ...]:
        """Run the orchestration ``entry`` and every task it submits; return what its ``Return`` gave."""
        host = self.scheduler.spawn(self.host, self._orchestrate(entry, args))
        self.scheduler.spawn(self.dispatcher, self._dispatch())
        self.scheduler.run()
        self.in_time.drain()
        return host.result

    def core_group(self, index: int) -> CoreGroup:
        """Core group ``index``, built on first use."""
        if index not in self.groups:
            self.groups[index] = CoreGroup.build(index, self.target)
        return self.groups[index]

    # ------------------------------------------------------------ the host

    def _orchestrate(self, entry: Function, args: Sequence[Any]) -> Generator[Event, None, tuple[Any, ...]]:
        result = yield from self._submit_all(entry, args)
        self.close()
        yield Wait(self.graph.all_retired, "every task to finish", entry.span, on=(self.changed,))
        return result

    def _submit_all(self, entry: Function, args: Sequence[Any]) -> Generator[Event, None, tuple[Any, ...]]:
        body = self.open_scope(entry.span, f"the body of {entry.name}")
        result = yield from HostFrame(entry, args, self.loaded, self).run()
        self.close_scope(body)
        return result

    # ------------------------------------------------------------ a rank of a world

    def start(self) -> None:
        """A rank of a world: start the task dispatcher, which serves orchestrations until :meth:`close`."""
        self.scheduler.spawn(self.dispatcher, self._dispatch())

    def orchestrate(self, entry: Function, args: Sequence[Any]) -> Generator[Event, None, tuple[Any, ...]]:
        """A rank of a world runs one dispatched orchestration: submit its tasks, wait for them all."""
        result = yield from self._submit_all(entry, args)
        yield Wait(self.graph.all_retired, "every task to finish", entry.span, on=(self.changed,))
        return result

    def close(self) -> None:
        """No orchestration submits any more tasks: the dispatcher ends once every task retired."""
        self._orchestrated = True
        self.changed.changed()

    def complete(self, task: Task) -> None:
        """A task whose blocks are done and whose deferred waits hold: retire it."""
        self._finished.append(task)
        self.changed.changed()

    def submit(
        self,
        plan: LaunchPlan,
        call: Call,
        args: Sequence[Any],
        parallel: ParallelContext,
        declared: Sequence[Task],
        predicate: PredicateSite | None = None,
    ) -> Generator[Event, None, Task]:
        """Host side of a ``call``: hand its task to the scheduler; the host goes on at once."""
        kernel = plan.kernel
        check_arguments(kernel, args, call.span)
        self._check_sync_start(call)
        yield Advance("AICPU", self.cost.submit_cycles(), f"submit {kernel.name}", call.span)
        task = self.graph.submit(kernel, call, args, parallel, declared)
        task.predicate = predicate
        ring, hold = self.rings.hold(task, self._output_bytes(task))
        if not ring.fits(hold):  # the host waits for the ring's head to move on
            ring.check_reachable(hold)
            self._held.add(task.id)
            yield Wait(
                lambda: ring.fits(hold), f"room in runtime ring {ring.index}", call.span, on=(self.changed,)
            )
            self._held.discard(task.id)
        ring.take(hold)
        self.submitted.append(
            SubmittedTask(task.id, kernel.name, self.host.clock, blocks=task.blocks, ring=ring.index)
        )
        if self.graph.ready(task):
            self._enqueue(task)
        return task

    def open_scope(self, span: SourceSpan | None, what: str) -> Scope:
        """The orchestration enters a scope (a loop's iteration, an arm, a function's body)."""
        return self.rings.open_scope(span, what)

    def close_scope(self, scope: Scope) -> None:
        """The orchestration leaves ``scope``: its tasks' holds may be reclaimed once they retire."""
        self.rings.close_scope(scope)
        self.changed.changed()

    def created(self, tensor: Any) -> None:
        """The orchestration created ``tensor``: the first task to write it holds its bytes."""
        if isinstance(tensor, torch.Tensor):
            storage = tensor.untyped_storage()
            self._created[storage.data_ptr()] = storage.nbytes()

    def _output_bytes(self, task: Task) -> int:
        """The bytes of the tensors the orchestration created that ``task`` is the first to write."""
        total = 0
        if task.kernel is None:  # a join: it writes nothing
            return total
        for value, mode in zip(task.args, access_modes(task.kernel, task.call), strict=True):
            if mode is not None and mode.writes and isinstance(value, torch.Tensor):
                total += self._created.pop(value.untyped_storage().data_ptr(), 0)
        return total

    def join(self, call: Call, declared: Sequence[Task]) -> Generator[Event, None, Task]:
        """Host side of ``pl.system.task_dummy(deps=declared)``: submit a task with no work; the
        scheduler completes it once its deps are (one retire step)."""
        yield Advance("AICPU", self.cost.submit_cycles(), f"submit {JOIN}", call.span)
        task = self.graph.join(call, declared)
        self.submitted.append(SubmittedTask(task.id, JOIN, self.host.clock, blocks=0))
        if self.graph.ready(task):
            self._enqueue(task)
        return task

    def _check_sync_start(self, call: Call) -> None:
        """A launch whose blocks start together must fit the chip's core groups."""
        blocks = int(call.attrs.get("block_num", 1))
        if call.attrs.get("sync_start") and blocks > self.target.core_groups:
            raise LaunchError(
                f"pl.spmd({blocks}, sync_start=True) asks {blocks} blocks to start together, but "
                f"{self.target.name} has {self.target.core_groups} core groups",
                call.span,
                f"launch at most pl.system.available_cluster_count() = {self.target.core_groups} blocks, "
                "or drop sync_start=True to run the blocks as core groups free up",
            )

    def wait_for_writers(self, tensor: Any, what: str, call: Call) -> Generator[Event, None, None]:
        """The host reads ``tensor`` (an element of a tensor, as a view): first wait for the tasks
        that write it."""
        writers = self.graph.pending_writers(tensor)
        if writers:
            yield Wait(lambda: all(t.retired for t in writers), what, call.span, on=(self.changed,))

    # ------------------------------------------------------------ the scheduler

    def _dispatch(self) -> Generator[Event, None, None]:
        """Retire finished tasks and start ready blocks on free core groups, one step at a time."""
        while True:
            yield Wait(self._has_work, "a task to start or to retire", on=(self.changed,))
            if self._settled:
                yield from self._resolve(self._settled.popleft())
            elif self._finished:
                yield from self._retire(self._finished.popleft())
            elif self._predicate_due():
                yield from self._evaluate(self._ready[0][0])
            elif self._can_start():
                yield from self._start(*self._ready.popleft())
            else:
                return

    def _has_work(self) -> bool:
        done = self._orchestrated and self.graph.all_retired()
        return bool(self._settled or self._finished) or self._predicate_due() or self._can_start() or done

    def _can_start(self) -> bool:
        """The next ready block has a core group; the first block of a ``sync_start`` task waits
        until every block of it has one (the rest follow at once, on the groups kept for them)."""
        if not (self._ready and self._free):
            return False
        task, block = self._ready[0]
        return not task.sync_start or block > 0 or len(self._free) >= task.blocks

    def _enqueue(self, task: Task) -> None:
        if task.id in self._held:
            return  # its host has not finished submitting it: it is enqueued then
        if task.kernel is None:  # a join: nothing to start, only to complete
            self._finished.append(task)
        self._ready.extend((task, block) for block in range(task.blocks))
        self.changed.changed()

    def _predicate_due(self) -> bool:
        """The next ready task has a ``predicate=`` the scheduler has not read yet."""
        if not self._ready:
            return False
        task, block = self._ready[0]
        return block == 0 and task.predicate is not None

    def _evaluate(self, task: Task) -> Generator[Event, None, None]:
        """Read a ready task's predicate (its deps are done, so the value is current): true, it
        starts as any task; false, it is retired without reaching a core, and its dependents go on."""
        assert task.predicate is not None
        predicate, tensor, indices = task.predicate
        self.races.predicate_read(task, predicate, tensor, indices, self.dispatcher.clock)
        if self.unreal is not None:
            element = tensor[tuple(slice(i, i + 1) for i in indices)]
            self.unreal.check_element(element, task.call, predicate.tensor, f"predicate=({predicate})")
        holds = predicate.holds(tensor[indices].item())
        task.predicate = None  # read once
        if holds:
            return
        for _ in range(task.blocks):
            self._ready.popleft()
        task.skipped = True
        cycles = self.cost.dispatch_cycles(resolves=bool(task.deps))
        yield Advance("AICPU", cycles, f"skip {task.name} ({predicate} is false)", task.call.span)
        self.submitted[task.id - 1].skipped = True
        self._finished.append(task)
        self.changed.changed()

    def _retire(self, task: Task) -> Generator[Event, None, None]:
        yield Advance("AICPU", self.cost.retire_cycles(), f"retire {task.name}", task.call.span)
        self.submitted[task.id - 1].retire_cycle = self.dispatcher.clock
        if self.on_task is not None and task.kernel is not None:
            self.on_task(task.name)
        self._barriers.pop(task.id, None)
        order = self._orders.pop(task.id, None)
        self.runner.retire(task)
        self._release_launches(task)
        if order is not None:
            self._forget_accesses(task, order)
        self._dump_after(task)
        for ready in self.graph.retire(task):
            self._enqueue(ready)
        self.changed.changed()

    def _resolve(self, task: Task) -> Generator[Event, None, None]:
        """Ready the tasks waiting for an early-resolve task, ahead of its retiring (which does
        it if every block is done by now anyway)."""
        if task.finished_blocks == task.blocks:
            return
        yield Advance("AICPU", self.cost.retire_cycles(), f"resolve {task.name}", task.call.span)
        self._dump_after(task)  # its writes are final; the tasks it readies may overwrite them
        for ready in self.graph.resolve(task):
            self._enqueue(ready)
        self.changed.changed()

    def _settled_observer(self, task: Task) -> Callable[[], None] | None:
        """What an early-resolve task's block tells once every core of it is past its last GM access."""
        if not task.early_resolve:
            return None

        def on_settled() -> None:
            task.settled_blocks += 1
            if task.settled_blocks == task.blocks:
                self._settled.append(task)
                self.changed.changed()

        return on_settled

    def _runner(self) -> BlockRunner:
        """The fast runner (:mod:`pypto_sim_a2a3.fast.runner`) if the options allow it, else the
        reference runner. A debugged run walks every block: each prints and may stop (a replay
        models the same cycles, so the figures do not change); so does a rank of a world (its comm
        ops and window accesses go to its endpoint)."""
        reference = ReferenceRunner(self.scheduler, self.cost, self.steps, self._block_done)
        if not self.sim.replay or self.debugger is not None or self.comm is not None:
            return reference
        # (A run that dumps arguments dumps what a task reads at its start: nothing walked ahead.)
        waiting = self._waiting if self.dump is None else None
        batch, check = self.sim.batch, self.sim.check_replay
        return FastRunner(reference, self._relaunch, self.target, self.recorder, batch, waiting, check)

    def _waiting(self) -> Iterator[Task]:
        """The tasks whose blocks are ready and not started yet, in the order they start."""
        return (task for task, block in self._ready if block == 0)

    def _start(self, task: Task, block: int) -> Generator[Event, None, None]:
        """Start block ``block`` of ``task`` on the lowest free core group."""
        group = self.core_group(heapq.heappop(self._free))
        cycles = self.cost.dispatch_cycles(resolves=block == 0 and bool(task.deps))
        yield Advance("AICPU", cycles, f"dispatch {task.name}", task.call.span)

        assert task.kernel is not None  # a join has no blocks to start
        plan = self.loaded.plans[task.kernel.name]
        if block == 0:
            self._dump_before(task)
        if task.id not in self._barriers:
            self._barriers[task.id] = task_barrier(plan, task.blocks)
            self._orders[task.id] = GmOrder()
        site = self._site(task, block, group, plan)
        launch, placements = self._launch(task, plan, task.args, site)
        start = self.dispatcher.clock
        idle = all(p.role.core.clock <= start for p in placements)  # every core starts with it
        for placement in placements:
            core = placement.role.core
            if core.memory is not None:
                core.memory.high_water.clear()  # the heap of this kernel, not of the last one
            core.clock = max(core.clock, start)
            core.task = task.name
        self.runner.start(StartedBlock(task, block, plan, site, launch, tuple(placements), start, idle))

    def _site(self, task: Task, block: int, group: CoreGroup, plan: LaunchPlan) -> Site:
        """Where block ``block`` of ``task`` runs, and who sees what it does."""
        order = self._orders[task.id]

        def on_gm(access: Access, tensor: torch.Tensor) -> None:
            self.races.record(task, block, access, tensor, order)

        return Site(
            group,
            block,
            task.blocks,
            on_gm,
            self._step_observer(task),
            self._barriers[task.id],
            order,
            self._settled_observer(task),
            self.in_time,
            self.debugger,
            self.comm,
            self.core_pipes,
            None if self.unreal is None else TimingOnly(launch_steering(plan), self.unreal),
        )

    def _launch(
        self, task: Task, plan: LaunchPlan, args: tuple[Any, ...], site: Site
    ) -> tuple[Launch, list[Placement]]:
        launch, placements = plan_launch(plan, args, site, self.target, self.recorder)
        self._launches.setdefault(task.id, []).append(launch)
        return launch, placements

    def _relaunch(self, block: StartedBlock) -> StartedBlock:
        """``block`` on a fresh launch on its site (a walk for its numbers used the first)."""
        launch, placements = self._launch(block.task, block.plan, block.task.args, block.site)
        return replace(block, launch=launch, placements=tuple(placements))

    # ------------------------------------------------------------ the argument dump

    def _dump_before(self, task: Task) -> None:
        """A task about to start its first block: dump what it reads (its producers are done, no
        writer of them may start before it resolves), and keep what it writes for :meth:`_dump_after`.
        Costs no modeled time: the AICPU clock does not move."""
        if self.dump is None:
            return
        assert task.kernel is not None
        slots = dump_slots(task.call, task.kernel, access_modes(task.kernel, task.call), self.dump.level)
        for slot in slots:
            if slot.role.reads:
                self._dump(task, slot, BEFORE)
        written = tuple(slot for slot in slots if slot.role.writes)
        if written:
            self._to_dump[task.id] = written

    def _dump_after(self, task: Task) -> None:
        """A task whose every block has written what it writes, before any task waiting for it
        is readied (at its early resolve, else at its retirement): dump what it wrote."""
        for slot in self._to_dump.pop(task.id, ()):
            self._dump(task, slot, AFTER)

    def _dump(self, task: Task, slot: DumpSlot, when: str) -> None:
        assert self.dump is not None and task.kernel is not None
        arg = DumpedArg(task.id, task.kernel.name, task.blocks, slot, when, self.dispatcher.clock)
        self.dump.dump(arg, task.args[slot.index])

    def _step_observer(self, task: Task) -> Callable[[int, int], None] | None:
        """What a one-block task's outermost loop tells of its iterations (an spmd task's progress
        is its blocks instead)."""
        on_progress = self.on_progress
        if on_progress is None or task.blocks > 1:
            return None
        return lambda done, total: on_progress(task.name, done, total, "iterations")

    def _block_done(self, run: StartedBlock) -> None:
        """The last core of a block returned: record it, free its group, maybe finish its task."""
        launch, task = run.launch, run.task
        launch.check_drained()
        end = max(role.core.clock for role in launch.roles)
        group = launch.group.index
        self.tasks.append(TaskRecord(task.name, group, run.start, end, task.id, run.block, task.source))
        self.heaps += [_heap_use(placement, run) for placement in run.placements]
        heapq.heappush(self._free, group)
        self.changed.changed()
        task.finished_blocks += 1
        if self.on_progress is not None and task.blocks > 1:
            self.on_progress(task.name, task.finished_blocks, task.blocks, "blocks")
        if task.finished_blocks == task.blocks:
            if self.comm is not None and self.comm.defers(task, launch):
                return  # a defer_wait: it completes once its signal conditions hold
            self._finished.append(task)
            self.changed.changed()

    def release(self) -> None:
        """After the run (its report made, or its error raised): break the reference cycles among
        its objects (a launch and its roles, a recording and the blocks replaying it, the
        scheduler and its recorder), so that they are freed at once rather than by the cyclic
        collector's next full collection (a 2304x2048x2048 matmul leaves ~120,000 objects a run;
        a full collection every few runs took ~300 ms)."""
        self.scheduler.release()
        for task_id in list(self._launches):  # the tasks a failed run left unretired
            self._release_launches_of(task_id)
        self.runner.release()

    def _release_launches(self, task: Task) -> None:
        """A retired task's launches are done: no core of them runs again, their runner let go of
        them (``runner.retire``) and their GM access record is no longer the task's (``_orders``).
        What they hold — each launch's record of its cores' GM accesses, pipes, roles — is freed now
        rather than at the run's end (a Qwen3-32B layer holds ~80,000 GM accesses): a check still
        queued in modeled order (:class:`~pypto_sim_a2a3.checks.timeorder.TimeOrder`) keeps what it
        needs of its launch alive on its own."""
        self._release_launches_of(task.id)

    def _forget_accesses(self, task: Task, order: GmOrder) -> None:
        """Drop the GM accesses of ``task`` (retired) from the race record once all of them are
        checked, and those of earlier retired tasks now checked. In a program whose edges order
        every two tasks that share bytes (:func:`~pypto_sim_a2a3.checks.races.edges_order_every_conflict`:
        no untracked argument, ``pl.parallel`` loop or predicate; every write declared) an access
        races only with one of another block of its own task, so once a task's accesses are all
        checked, none of them can be part of a race again; a ``RaceError`` names what it named. A
        run of any other program keeps them all (a later task may race with a retired one, whatever
        their order in modeled time)."""
        if not self._forgets:
            return
        self._forgetting.append((task, order))
        waiting = []
        for retired, its_order in self._forgetting:
            if its_order.pending:  # a check still queued in modeled order (checks.timeorder)
                waiting.append((retired, its_order))
            else:
                self.races.forget(retired)
        self._forgetting = waiting

    def _release_launches_of(self, task_id: int) -> None:
        for launch in self._launches.pop(task_id, ()):
            launch.release()

    # ------------------------------------------------------------ the report

    def report(self, outputs: tuple[Any, ...]) -> RunReport:
        """The run's modeled timing (busy and stall cycles per core, tasks and their edges, the
        timeline, made when first read) and the entry's returned values."""
        cores = [core for index in sorted(self.groups) for core in self.groups[index].cores]
        self.recorder.finish()
        busy, stalled = self.recorder.busy_and_stalled()
        report = RunReport(
            platform=self.platform,
            clock_mhz=self.target.clock_mhz,
            total_cycles=self.host.clock,
            tasks=sorted(self.tasks, key=lambda t: (t.start_cycle, t.task_id, t.block)),
            edges=self.graph.reported_edges(),
            busy_cycles={core.name: busy.get(core.name, 0) for core in cores},
            outputs=outputs,
            stall_cycles={core.name: stalled.get(core.name, 0) for core in cores},
            rings=self.recorder.rings,
            transfers=self.recorder.transfers,
            aiv_per_group=self.target.aiv_per_group,
            submitted=self.submitted,
            runtime_rings=self.rings.report(),
            heaps=self.heaps,
            usable_bytes={space.name: self.target.usable(space) for space in self.target.memory},
        )
        report.make_timeline_when_read(self.recorder.timeline())
        return report


def _heap_use(placement: Placement, run: StartedBlock) -> HeapUse:
    """What ``placement``'s core held of its memory while it ran its kernel of the block: the top
    of each space its memory plan lays out, and the top it touched."""
    core = placement.role.core
    plan = placement.kernel.attrs.get("memory_plan")
    planned = {space.name: top for space, top in plan.peak.items()} if isinstance(plan, MemoryPlan) else {}
    tops = core.memory.high_water if core.memory is not None else {}
    touched = {space.name: top for space, top in tops.items()}
    kernel = placement.kernel.name
    return HeapUse(core.name, kernel, run.task.id, run.block, run.start, core.clock, planned, touched)
