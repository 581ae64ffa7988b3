"""Races between tasks: global-memory accesses of two tasks that no dependency edge orders.

Every GM read and write of every task (each block of an ``pl.spmd`` task on its own) is recorded
as a box of the tensor's index space, i.e. the byte range of its elements. When a task touches
bytes another task touched, and at least one of them writes (two atomic adds commute), an edge
path must run between the two tasks; otherwise the result would be whichever the schedule gave,
and the run stops with a ``RaceError`` naming both tasks, the tensor and both source lines. The
check follows the edges, not the modeled times, so it fires whatever order the tasks ran in.
Accesses within one task's launch are ordered by :mod:`pypto_sim_a2a3.checks.coherence` instead; so are
the blocks of one ``pl.spmd`` task once a ``pl.system.syncall`` round lies between two of their
accesses (the record then checks that the writer published and fenced and the reader invalidated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

import torch

from pypto.ir import Call, Direction, Function, FunctionKind, LoopKind, Predicate, Program, RaceError, Var
from pypto.ir.errors import at_line
from pypto.ir.nodes import For, stmt_exprs, walk_expr, walk_stmts
from pypto_sim_a2a3.checks.coherence import (
    Access,
    BoxIndex,
    GmOrder,
    Region,
    gm_accesses,
    gm_data_access,
    gm_tensor,
)
from pypto_sim_a2a3.checks.footprints import TensorKey, tensor_frame
from pypto_sim_a2a3.engine.taskgraph import Task, TaskGraph
from pypto_sim_a2a3.errors import OutOfBoundsError

RACE_HINT = (
    "keep the edge the data needs: drop the no_dep_args= / manual_dep=True / pl.manual_scope() that "
    "removed it (or the pl.parallel that asserted independence), or add deps=[tid] of the other task"
)
# Iterations of one pl.parallel loop cannot name each other's task ids, so deps= is no fix there.
PARALLEL_HINT = (
    "give each iteration its own region of the tensor (offset by the loop index), add into it "
    "atomically (pl.assemble(..., atomic=pl.AtomicType.Add)), or loop with pl.range, whose iterations "
    "the tensor orders"
)
# Nor can the blocks of one pl.spmd launch, which are one task.
SPMD_HINT = (
    "give each block its own region of the tensor (offset by the block index of pl.spmd, or "
    "pl.get_block_idx()), add into it atomically (pl.assemble(..., atomic=pl.AtomicType.Add)), or order "
    "the blocks: the writer publishes (pl.system.cacheinvalid) and fences (pl.system.fence), every block "
    "passes one pl.system.syncall, then the reader invalidates (pl.system.cacheinvalid) before it reads"
)

Unit = tuple[int, int]  # (task id, block)
PREDICATE_READER = "scheduler"  # who reads a predicate= element: the scheduler, at dispatch
_NEW = tuple.__new__  # a tuple record from its fields in order


class TaskAccess(NamedTuple):
    """One GM access by one block of one task, with the tensor it touched (a tuple: every GM
    access makes one)."""

    task: Task
    block: int
    access: Access
    tensor: torch.Tensor
    position: int  # its index in its core's log of the task's GM record

    @property
    def label(self) -> str:
        """The task, and the block of it for a ``pl.spmd`` launch: ``block 1 of task 1 (kernel ...)``."""
        return f"block {self.block} of {self.task.label}" if self.task.blocks > 1 else self.task.label


class _Log:
    """The reads (or the writes) of every (task, block), per tensor: indexed by the boxes they
    touch, and each (task, block) ranked by when it first touched the tensor."""

    def __init__(self) -> None:
        self.boxes: dict[TensorKey, BoxIndex[TaskAccess]] = {}
        self.units: dict[TensorKey, dict[Unit, int]] = {}
        self.by_task: dict[int, set[TensorKey]] = {}  # the tensors each task's accesses here touch

    def add(self, seq: int, access: TaskAccess, unit: Unit) -> None:
        key = access.access.key
        boxes = self.boxes.get(key)
        if boxes is None:
            boxes = self.boxes[key] = BoxIndex()
            self.units[key] = {}
        boxes.add(seq, access.access.region, access)
        units = self.units[key]
        if unit not in units:
            units[unit] = len(units)  # ranks only grow: a forgotten unit keeps its rank
        touched = self.by_task.get(unit[0])
        if touched is None:
            touched = self.by_task[unit[0]] = set()
        touched.add(key)

    def forget(self, task_id: int) -> None:
        """Drop the accesses of task ``task_id`` (a tensor none touches any more goes whole)."""
        for key in self.by_task.pop(task_id, ()):
            boxes = self.boxes[key]
            if boxes.discard(lambda access: access.task.id == task_id):
                del self.boxes[key], self.units[key]


class TaskRaces:
    """``races.access(task, block, core, call, args, order)`` before each op that touches GM;
    ``order`` is the GM access record the task's blocks share."""

    def __init__(self, graph: TaskGraph):
        self.graph = graph
        # The reads and the writes of every (task, block) (a read only meets writes).
        self._reads = _Log()
        self._writes = _Log()
        self._count = 0  # accesses recorded: each one's sequence number

    def __len__(self) -> int:
        """The accesses it holds."""
        return sum(len(boxes) for log in (self._reads, self._writes) for boxes in log.boxes.values())

    def forget(self, task: Task) -> None:
        """Drop ``task``'s accesses: only once no access recorded later can race with them, i.e.
        every access of ``task`` itself is recorded (its blocks may race with one another) and the
        program is one whose edges order every two tasks that share bytes (see
        :func:`edges_order_every_conflict`), so that :meth:`_clash` would pass over each of them."""
        self._reads.forget(task.id)
        self._writes.forget(task.id)

    def access(
        self, task: Task, block: int, core: str, call: Call, args: Sequence[Any], order: GmOrder, at: int = 0
    ) -> None:
        """Record ``call``'s GM access (starting at modeled cycle ``at``); a ``RaceError`` if it
        conflicts with an unordered task's, or an unsynchronised block's of its own task."""
        for access in gm_accesses(core, call, args, at):
            self.record(task, block, access, gm_tensor(call, args), order)

    def record(self, task: Task, block: int, access: Access, tensor: torch.Tensor, order: GmOrder) -> None:
        """Record a GM access :func:`gm_access` described, of ``tensor`` (see :meth:`access`)."""
        mine = _NEW(TaskAccess, (task, block, access, tensor, order.position(access.core)))
        unit = (task.id, block)
        key = access.key
        writes = self._writes
        if key in writes.boxes:  # (else no access of the tensor to race with)
            self._check(writes, mine, unit, order)
        if access.write:
            if key in self._reads.boxes:
                self._check(self._reads, mine, unit, order)
            writes.add(self._count, mine, unit)
        else:
            self._reads.add(self._count, mine, unit)
        self._count += 1

    def _check(self, log: _Log, mine: TaskAccess, unit: Unit, order: GmOrder) -> None:
        """A ``RaceError`` if ``mine`` races with an access of ``log``."""
        clash = self._clash(log, mine, unit, order)
        if clash is not None:
            # Told in modeled time: cores issue ahead, so records come out of that order.
            raise self._race(*sorted((clash, mine), key=lambda a: a.access.at))

    def predicate_read(
        self, task: Task, predicate: Predicate, tensor: torch.Tensor, indices: tuple[int, ...], at: int
    ) -> None:
        """The scheduler reads ``task``'s ``predicate=`` element at dispatch: a read by the task,
        so a write of that element no edge orders with the task is a ``RaceError``."""
        inside = all(0 <= i < n for i, n in zip(indices, tensor.shape, strict=False))
        if len(indices) != tensor.dim() or not inside:
            raise OutOfBoundsError(
                f"predicate= reads {predicate.tensor}{list(indices)}, outside its shape {list(tensor.shape)}",
                task.call.span,
                "index the predicate's tensor inside its shape, one index per dimension",
            )
        key, origin = tensor_frame(tensor)
        access = Access(
            PREDICATE_READER,
            predicate.tensor,
            key,
            Region.box(indices, (1,) * len(indices)).shifted(origin),
            task.call.span,
            write=False,
            at=at,
            origin=origin if any(origin) else (),
        )
        self.record(task, 0, access, tensor, GmOrder())

    def _clash(self, log: _Log, mine: TaskAccess, unit: Unit, order: GmOrder) -> TaskAccess | None:
        """The access of ``log`` that ``mine`` races with, if any: of the (task, block) that first
        touched the tensor, its earliest."""
        access, task = mine.access, mine.task
        boxes = log.boxes.get(access.key)
        if boxes is None:
            return None
        ranks = log.units[access.key]
        ordered: dict[Unit, bool] = {}
        best: tuple[int, int, TaskAccess] | None = None
        for seq, e in boxes.overlapping(access.region):
            other = (e.task.id, e.block)
            if other == unit:
                continue
            known = ordered.get(other)
            if known or access.conflicts(e.access) is None:
                continue
            if known is None:
                known = ordered[other] = self.graph.ordered(other[0], task)
                if known:
                    continue
            if e.task is task and order.separated(e.access.core, e.position, access.core):
                continue
            if best is None or (ranks[other], seq) < best[:2]:
                best = (ranks[other], seq, e)
        return None if best is None else best[2]

    def _race(self, first: TaskAccess, second: TaskAccess) -> RaceError:
        a, b = first.access, second.access
        shared = a.conflicts(b)
        earlier, later = sorted((first.task, second.task), key=lambda t: t.id)
        reader = next((x for x in (first, second) if x.access.core == PREDICATE_READER), None)
        if reader is not None:
            why = f"task {reader.task.id}'s predicate= reads it when the task is dispatched"
            hint = (
                "give the predicated task the writer's task id in deps=[...]: the scheduler reads the "
                "predicate after the task's deps are done, and nothing else orders that read"
            )
        else:
            why, hint = self.graph.why_unordered(earlier, later, second.tensor), _hint(earlier, later)
        where = b.local(shared) if shared is not None else ""
        return RaceError(
            f"{_label(second)} {b.verb} {b.tensor}{where} at {at_line(b.span)} and {_label(first)} "
            f"{a.verb} {_named(a, b)} at {at_line(a.span)}, but no dependency orders the two tasks: {why}",
            b.span,
            hint,
        )


def edges_order_every_conflict(program: Program) -> bool:
    """Whether the task graph of every run of ``program`` orders any two tasks whose GM accesses
    conflict, so that a race between tasks cannot happen (only between the blocks of one task).

    The graph orders two tasks through every tensor they both pass whose access modes conflict
    (:mod:`pypto_sim_a2a3.engine.taskgraph`): directly, or through a later writer covering the
    first one's elements, which is ordered after it and before every later task meeting those
    elements. A kernel touches only the elements of the tensors it is passed (bounds are checked),
    so a race between tasks needs an access the graph does not see, and a program has none when:

    - no task call turns tracking off (``no_dep``: ``no_dep_args=``, ``pl.no_dep``,
      ``manual_dep=True`` tensors, ``pl.manual_scope()``);
    - no ``pl.parallel`` loop runs in the control code (its iterations take no edges between them);
    - no task call has a ``predicate=`` (the scheduler reads its element, no edge orders the read);
    - every kernel writes GM only through parameters it declares ``pl.Out`` or ``pl.InOut``, and
      every task call's access modes let those write (the modes the edges follow are honest).
    """
    known = _ORDERED.get(program)
    if known is None:
        known = _ORDERED[program] = _edges_order_every_conflict(program)
    return known


# Per program (a run's Chip asks each time; a program runs many times).
_ORDERED: WeakKeyDictionary[Program, bool] = WeakKeyDictionary()


def _edges_order_every_conflict(program: Program) -> bool:
    for function in program.functions.values():
        if function.kind in _KERNEL_KINDS:
            if not _writes_declared(function):
                return False
            continue
        for stmt in walk_stmts(function.body):
            if isinstance(stmt, For) and stmt.kind is LoopKind.parallel:
                return False
            for call in _calls(stmt):
                if call.attrs.get("no_dep") or call.attrs.get("predicate") is not None:
                    return False
                if not _modes_declared(program, call):
                    return False
    return True


_KERNEL_KINDS = (FunctionKind.InCore, FunctionKind.AIC, FunctionKind.AIV)
_WRITING = (Direction.Out, Direction.InOut)


def _calls(stmt: Any) -> list[Call]:
    return [e for root in stmt_exprs(stmt) for e in walk_expr(root) if isinstance(e, Call)]


def _writes_declared(kernel: Function) -> bool:
    """Whether every GM write of ``kernel`` goes to a parameter it declares written."""
    written = {p.var.name for p in kernel.params if p.direction in _WRITING}
    for stmt in walk_stmts(kernel.body):
        for call in _calls(stmt):
            access = gm_data_access(call.op)
            if access is None or not access.write:
                continue
            target = call.args[access.tensor]
            if not (isinstance(target, Var) and target.name in written):
                return False
    return True


def _modes_declared(program: Program, call: Call) -> bool:
    """Whether a task call's access modes (``attrs["access"]``) let it write every parameter its
    kernel declares written (a call of control code, which has no modes, passes)."""
    modes = call.attrs.get("access")
    callee = call.attrs.get("callee")
    if modes is None or callee is None:
        return True
    kernel = program.function(callee)
    return all(
        mode is not None and mode.writes
        for param, mode in zip(kernel.params, modes, strict=False)
        if param.direction in _WRITING
    )


def _label(access: TaskAccess) -> str:
    """The task (or its block) that made ``access``: its predicate's read is the scheduler's."""
    if access.access.core == PREDICATE_READER:
        return f"the predicate= of {access.task.label}"
    return access.label


def _hint(earlier: Task, later: Task) -> str:
    """How to order two racing tasks: deps= and the removed edges do not reach within a loop's
    iterations or a launch's blocks."""
    if earlier is later:
        return SPMD_HINT
    if later.parallel_sibling(earlier):
        return PARALLEL_HINT
    return RACE_HINT


def _named(access: Access, other: Access) -> str:
    return access.tensor if access.tensor == other.tensor else f"it (its {access.tensor})"
