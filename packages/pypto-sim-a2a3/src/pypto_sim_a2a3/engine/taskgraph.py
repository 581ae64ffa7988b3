"""The task graph of one run: each kernel call the orchestration submits, and the edges between them.

Edges are derived at submission, per task instance, from the actual tensors it is passed and the
access mode of each (``call.attrs["access"]``, or the callee's parameter directions): a task waits
for every earlier task whose access to one of its tensors conflicts with its own (a reader for the
writers, a writer for the readers and writers; two readers, or two atomic accumulators, do not
conflict). A tensor is the region of its storage it covers (its :class:`Footprint`): views of one
tensor (``pl.slice`` in the orchestration) conflict where they overlap, and not where they are
disjoint. That holds except

- through the arguments listed in ``call.attrs["no_dep"]`` (``no_dep_args=``, ``pl.no_dep(t)``,
  ``manual_dep=True`` tensors, ``pl.manual_scope()``): tracking is off for them, both ways: the
  task takes no edge through them, and later tasks take none from its access;
- from a task of another iteration of a ``pl.parallel`` loop they both sit in.

Explicit ``deps=`` add edges (a ``pl.TASK_ID`` array names every task it holds). Edges implied by
others (``a -> b -> c`` makes ``a -> c``) are dropped, so each task keeps only its nearest
predecessors. A *join* (``pl.system.task_dummy(deps=[...])``) is a task with no work and no
blocks: it completes once its ``deps`` have, and tasks that name it wait for all of them.

A task's dependents may start once it is *resolved*: when it retires, or, for a task of a
``pl.at(..., allow_early_resolve=True)`` scope (``call.attrs["allow_early_resolve"]``), as soon
as every core of every block is past its last GM access (its outputs final, its inputs read). A
task whose ``predicate=`` is false at dispatch is *skipped*: retired without running.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import AccessMode, Call, Function, Predicate, ScalarType, TaskEdge, Var
from pypto.ir.errors import at_line
from pypto_sim_a2a3.checks.footprints import Footprint, footprint

# (pl.parallel loop instance, iteration) of each enclosing pl.parallel loop, outermost first.
ParallelContext = tuple[tuple[int, int], ...]
# A task's predicate=, with the tensor it reads and the element's indices (fixed at submission).
PredicateSite = tuple[Predicate, torch.Tensor, tuple[int, ...]]
JOIN = "pl.system.task_dummy"  # what a join is called in messages and the report
_FOOTPRINTS = 4096  # footprints of tensors kept at most (then forgotten, and found again)


@dataclass(eq=False)
class Task:
    """One submitted kernel call: what it waits for and how far it has got.

    ``blocks`` core groups run it (``pl.spmd``), all started at once if ``sync_start``; it is
    *retired* once every block has finished and the scheduler has completed it. The tasks waiting
    for it may start once it is *resolved*: when it retires, or earlier if ``early_resolve``.
    """

    id: int
    kernel: Function | None  # None for a join (pl.system.task_dummy): no work, no blocks
    call: Call
    args: tuple[Any, ...]
    parallel: ParallelContext
    blocks: int = 1
    sync_start: bool = False
    deps: dict[int, str | None] = field(default_factory=dict)  # task id -> tensor name, None if declared
    ancestors: set[int] = field(default_factory=set)
    waiting: set[int] = field(default_factory=set)
    finished_blocks: int = 0
    settled_blocks: int = 0  # blocks whose every core is past its last GM access
    resolved: bool = False
    retired: bool = False
    predicate: PredicateSite | None = None  # read by the scheduler at dispatch
    skipped: bool = False  # its predicate was false: retired without running

    @property
    def early_resolve(self) -> bool:
        """Whether its dependents may start before it retires (``allow_early_resolve=True``)."""
        return bool(self.call.attrs.get("allow_early_resolve", False))

    @property
    def name(self) -> str:
        return JOIN if self.kernel is None else self.kernel.name

    @property
    def ran(self) -> bool:
        """Whether it runs on core groups: not a join, and not skipped by its predicate."""
        return self.kernel is not None and not self.skipped

    @property
    def source(self) -> str | None:
        return at_line(self.call.span) if self.call.span else None

    @property
    def label(self) -> str:
        """``task 2 (kernel two at k.py:14)``."""
        where = f" at {self.source}" if self.source else ""
        return f"task {self.id} (kernel {self.name}{where})"

    def parallel_sibling(self, other: Task) -> bool:
        """Whether the two sit in different iterations of one ``pl.parallel`` loop."""
        mine = dict(self.parallel)
        return any(loop in mine and mine[loop] != iteration for loop, iteration in other.parallel)


@dataclass(frozen=True)
class Use:
    """One task's access to one tensor, as the graph remembers it (``order``: when, among the
    graph's uses)."""

    task: Task
    mode: AccessMode
    tensor: torch.Tensor  # kept alive so that its storage is never reused for another tensor
    where: Footprint
    order: int = 0


@dataclass(eq=False)
class _Uses:
    """The uses of one storage by tasks of one parallel context (the path to this node), with the
    nodes of the contexts one loop deeper: per loop instance, per iteration."""

    readers: list[Use] = field(default_factory=list)
    writers: list[Use] = field(default_factory=list)
    deeper: dict[int, dict[int, _Uses]] = field(default_factory=dict)

    def gather(self, writes: bool, into: list[Use]) -> None:
        """Every use of this context and the deeper ones a reader (a writer: ``writes``) meets."""
        into += self.writers
        if writes:
            into += self.readers
        for iterations in self.deeper.values():
            for node in iterations.values():
                node.gather(writes, into)

    def drop_covered(self, where: Footprint) -> bool:
        """Forget the uses ``where`` covers, here and deeper; whether nothing is left."""
        self.readers = [u for u in self.readers if not where.covers(u.where)]
        self.writers = [u for u in self.writers if not where.covers(u.where)]
        for loop, iterations in list(self.deeper.items()):
            for iteration, node in list(iterations.items()):
                if node.drop_covered(where):
                    del iterations[iteration]
            if not iterations:
                del self.deeper[loop]
        return not (self.readers or self.writers or self.deeper)


class StorageUses:
    """The tracked accesses of one storage since their last covering writer, as a tree of the
    ``pl.parallel`` contexts of their tasks: a task looks only at the uses it may conflict with,
    never at those of the other iterations of a ``pl.parallel`` loop it sits in (a grid of tasks
    finds its conflicts without scanning its siblings)."""

    def __init__(self) -> None:
        self.root = _Uses()

    def met_by(self, mode: AccessMode, parallel: ParallelContext) -> list[Use]:
        """The uses a task of context ``parallel`` accessing in ``mode`` meets, in the order the
        graph took them: the writers, then (a writing ``mode``) the readers. A use of another
        iteration of a loop the task sits in is left out (a ``pl.parallel`` sibling: no conflict,
        see :meth:`Task.parallel_sibling`); the others are every use a plain scan would meet."""
        writes = mode.writes
        found: list[Use] = []
        node: _Uses | None = self.root
        for loop, iteration in parallel:
            assert node is not None
            found += node.writers
            if writes:
                found += node.readers
            for other, iterations in node.deeper.items():
                if other != loop:  # another loop: none of its iterations is a sibling
                    for deeper in iterations.values():
                        deeper.gather(writes, found)
            node = node.deeper.get(loop, {}).get(iteration)
            if node is None:
                break
        else:
            assert node is not None
            node.gather(writes, found)
        found.sort(key=_by_order)
        if writes:  # (the writers first, as a scan of the writers then the readers meets them)
            found.sort(key=_writers_first)
        return found

    def add(self, use: Use) -> None:
        node = self.root
        for loop, iteration in use.task.parallel:
            node = node.deeper.setdefault(loop, {}).setdefault(iteration, _Uses())
        (node.writers if use.mode.writes else node.readers).append(use)

    def drop_covered(self, where: Footprint) -> None:
        """Forget the uses a writer of ``where`` orders before every later access of their elements
        (a later one meeting them meets the writer, which comes after them)."""
        self.root.drop_covered(where)


def _by_order(use: Use) -> int:
    return use.order


def _writers_first(use: Use) -> bool:
    return not use.mode.writes


class TaskGraph:
    """``graph.submit(kernel, call, args, parallel, declared)`` adds a task and returns it; the
    scheduler starts a task once ``graph.ready(task)`` and calls ``graph.retire(task)`` after it."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.edges: list[TaskEdge] = []
        self._uses: dict[int, StorageUses] = {}  # by storage
        self._used = 0  # uses recorded so far (each use's order)
        # The footprints of the tensors passed lately, by id (the tensor not kept alive by it).
        self._footprints: dict[int, tuple[weakref.ref[torch.Tensor], Footprint]] = {}
        # Every writer of each storage, tracked or not, with what it writes: what a host read waits for.
        self._writers: dict[int, list[tuple[Task, Footprint]]] = {}
        self._dependents: dict[int, list[Task]] = {}
        self._unretired = 0  # tasks submitted and not yet retired (the host polls this)

    def submit(
        self,
        kernel: Function,
        call: Call,
        args: Sequence[Any],
        parallel: ParallelContext,
        declared: Sequence[Task],
    ) -> Task:
        """Add the task a ``call`` of ``kernel`` makes, with its edges."""
        blocks = int(call.attrs.get("block_num", 1))
        sync_start = bool(call.attrs.get("sync_start", False))
        task = Task(len(self.tasks) + 1, kernel, call, tuple(args), parallel, blocks, sync_start)
        inferred = self._record_uses(task)
        return self._add(task, declared, inferred)

    def join(self, call: Call, declared: Sequence[Task]) -> Task:
        """Add a join (``pl.system.task_dummy(deps=declared)``): a task with no work that is
        resolved once every task in ``declared`` is."""
        task = Task(len(self.tasks) + 1, None, call, (), (), blocks=0)
        return self._add(task, declared, {})

    def _add(self, task: Task, declared: Sequence[Task], inferred: dict[Task, str]) -> Task:
        """Give ``task`` its edges (``declared`` ones, then the ``inferred`` others) and add it."""
        edges = {t: None for t in declared} | {t: name for t, name in inferred.items() if t not in declared}
        for dep, tensor in _nearest(edges).items():
            task.deps[dep.id] = tensor
            self.edges.append(TaskEdge(dep.id, task.id, tensor))
        for dep in edges:
            task.ancestors |= dep.ancestors | {dep.id}
        task.waiting = {dep.id for dep in edges if not dep.resolved}
        for dep_id in task.waiting:
            self._dependents.setdefault(dep_id, []).append(task)
        self.tasks.append(task)
        self._unretired += 1
        return task

    def _record_uses(self, task: Task) -> dict[Task, str]:
        """Record each tensor argument's use; return the earlier tasks it conflicts with."""
        assert task.kernel is not None
        untracked = set(task.call.attrs.get("no_dep", ()))
        modes = access_modes(task.kernel, task.call)
        conflicts: dict[Task, str] = {}
        for index, (value, mode) in enumerate(zip(task.args, modes, strict=True)):
            if mode is None:
                continue
            where = self._footprint(value)
            if mode.writes:
                self._note_writer(task, where)
            if index in untracked:
                continue  # tracking is off for this argument: no lookup, and no use recorded
            name = _arg_name(task.call, task.kernel, index)
            uses = self._uses.get(where.storage)
            if uses is None:
                uses = self._uses[where.storage] = StorageUses()
            for use in uses.met_by(mode, task.parallel):
                if use.where.overlaps(where) and self._conflict(task, mode, use):
                    conflicts.setdefault(use.task, name)
            if mode in (AccessMode.Out, AccessMode.InOut) and not task.parallel:
                uses.drop_covered(where)  # each is ordered before this task, so before later ones
            self._used += 1
            uses.add(Use(task, mode, value, where, self._used))
        return conflicts

    def _footprint(self, tensor: torch.Tensor) -> Footprint:
        """``footprint(tensor)``, found once per tensor the orchestration passes (the tasks of a
        grid pass the same ones): a tensor's place in its storage does not change during a run."""
        known = self._footprints.get(id(tensor))
        if known is not None and known[0]() is tensor:
            return known[1]
        where = footprint(tensor)
        if len(self._footprints) >= _FOOTPRINTS:
            self._footprints.clear()
        self._footprints[id(tensor)] = (weakref.ref(tensor), where)
        return where

    def _note_writer(self, task: Task, where: Footprint) -> None:
        writers = self._writers.setdefault(where.storage, [])
        if len(writers) >= 64 and writers[0][0].retired:  # forget the retired ones now and then
            writers[:] = [w for w in writers if not w[0].retired]
        writers.append((task, where))

    @staticmethod
    def _conflict(task: Task, mode: AccessMode, use: Use) -> bool:
        return use.task is not task and use.mode.conflicts(mode) and not task.parallel_sibling(use.task)

    def ready(self, task: Task) -> bool:
        return not task.waiting

    def retire(self, task: Task) -> list[Task]:
        """Mark ``task`` complete (and resolved, if it was not yet); return the tasks that became ready."""
        if not task.retired:
            self._unretired -= 1
        task.retired = True
        return self.resolve(task)

    def resolve(self, task: Task) -> list[Task]:
        """Release the tasks waiting for ``task``; return those that became ready."""
        task.resolved = True
        woken = []
        for other in self._dependents.pop(task.id, []):
            other.waiting.discard(task.id)
            if not other.waiting:
                woken.append(other)
        return woken

    def ordered(self, earlier: int, later: Task) -> bool:
        """Whether an edge path runs from task ``earlier`` to ``later``."""
        return earlier in later.ancestors

    def pending_writers(self, tensor: torch.Tensor) -> list[Task]:
        """Tasks that write elements of ``tensor`` (through it or another view of its storage) and
        have not retired (the host waits for them before reading)."""
        where = footprint(tensor)
        return [
            task
            for task, written in self._writers.get(where.storage, [])
            if not task.retired and written.overlaps(where)
        ]

    def all_retired(self) -> bool:
        return self._unretired == 0

    def why_unordered(self, first: Task, second: Task, tensor: torch.Tensor) -> str:
        """Why no edge orders two tasks that touch ``tensor`` (``second`` submitted later, or the same)."""
        if first is second:
            return f"the {first.blocks} blocks of one pl.spmd launch run unordered"
        if second.parallel_sibling(first):
            return "they are iterations of one pl.parallel loop, which asserts they are independent"
        where = footprint(tensor)
        for task in (second, first):
            untracked = set(task.call.attrs.get("no_dep", ()))
            for index, value in enumerate(task.args):
                if (
                    isinstance(value, torch.Tensor)
                    and index in untracked
                    and footprint(value).overlaps(where)
                ):
                    assert task.kernel is not None
                    name = _arg_name(task.call, task.kernel, index)
                    return (
                        f"tracking of {name} is off for task {task.id} (no_dep_args=, pl.no_dep, a "
                        "manual_dep=True tensor or pl.manual_scope())"
                    )
        return f"the access modes of task {second.id}'s call (attrs['access']) say it does not conflict"

    def reported_edges(self) -> list[TaskEdge]:
        """The edges between tasks that ran: an edge into or out of a join or a skipped task is
        routed through it (its dependents waited, through it, for what it waited for)."""
        stands_for: dict[int, list[int]] = {}  # a task that did not run -> the ran tasks behind it
        for edge in self.edges:  # in submission order of their ends: a source is settled first
            if not self.tasks[edge.dst - 1].ran:
                stands_for.setdefault(edge.dst, []).extend(stands_for.get(edge.src, [edge.src]))
        edges: dict[tuple[int, int], str | None] = {}
        for edge in self.edges:
            if not self.tasks[edge.dst - 1].ran:
                continue
            through = edge.src in stands_for or not self.tasks[edge.src - 1].ran
            for src in stands_for.get(edge.src, [] if through else [edge.src]):
                edges.setdefault((src, edge.dst), None if through else edge.tensor)
        return [TaskEdge(src, dst, tensor) for (src, dst), tensor in edges.items()]


def access_modes(kernel: Function, call: Call) -> tuple[AccessMode | None, ...]:
    """The call's ``access`` annotation, or the modes ``kernel``'s parameter directions imply."""
    annotated = call.attrs.get("access")
    if annotated is not None:
        return tuple(annotated)
    return tuple(
        None if isinstance(p.var.type, ScalarType) else AccessMode.of(p.direction) for p in kernel.params
    )


def _arg_name(call: Call, kernel: Function, index: int) -> str:
    """The argument as the orchestration names it, else as the kernel does."""
    arg = call.args[index]
    return arg.name if isinstance(arg, Var) else kernel.params[index].var.name


def _nearest(edges: dict[Task, str | None]) -> dict[Task, str | None]:
    """The edges not implied by the others: drop ``a`` when another predecessor descends from it.
    Declared edges (``None``) are kept as the user wrote them."""
    return {
        task: tensor
        for task, tensor in edges.items()
        if tensor is None or not any(task.id in other.ancestors for other in edges if other is not task)
    }
