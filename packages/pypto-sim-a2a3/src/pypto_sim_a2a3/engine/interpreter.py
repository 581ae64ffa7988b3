"""A kernel on one core of a launch, as a coroutine for the scheduler.

:class:`KernelFrame` is the shared walker of lowered functions (:class:`pypto.ir.walker.KernelWalker`:
frames, loops, ifs) with the simulated core's meaning of each op: tile values live in the core's
buffers (a popped tile in its pipe slot), pipe and system ops go to
:data:`~pypto_sim_a2a3.engine.crosscore.LAUNCH_OPS`, the rest to the checked
:data:`~pypto_sim_a2a3.engine.semantics.SEMANTICS`.

Time: the core's clock is its scalar unit's, which issues the ops in program order. Scalar work
takes that clock's cycles; every other op is handed to its pipe (:mod:`pypto_sim_a2a3.hw.corepipes`),
which starts it once the pipe is free and its operands are ready, so the pipes of the core run at
once. When the kernel returns, the core waits for its pipes to drain.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any, NamedTuple

import torch

from pypto.ir import Assign, Call, Eval, For, Function, MemoryPlan, Stmt, TileType, Var, While, get_op
from pypto.ir.errors import at_line
from pypto.ir.launch import Seat
from pypto.ir.nodes import stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import OPS, Observes, user_name
from pypto.ir.ops import debug as debug_ops
from pypto.ir.semantics import OpImpl
from pypto.ir.walker import KernelWalker
from pypto_sim_a2a3.checks.coherence import GM_DATA_OPS
from pypto_sim_a2a3.engine.crosscore import Popped
from pypto_sim_a2a3.engine.decode import (
    CONSTANT,
    CORE_UNITS,
    FREE_OPS,
    TUPLE,
    VARIABLE,
    Operand,
    Step,
    Steps,
    data_route,
)
from pypto_sim_a2a3.engine.launch import CoreRole
from pypto_sim_a2a3.engine.scheduler import Advance, Event
from pypto_sim_a2a3.engine.semantics import SEMANTICS
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.hw.corepipes import GM_PIPES, Dependency, Region
from pypto_sim_a2a3.hw.cost import CostModel, OpCost
from pypto_sim_a2a3.hw.ring import TOKEN, Token

Walk = Generator[Event, None, Any]
# The ops that only look (pl.debug.*): the kernel debugger's, never put on a pipe.
OBSERVING_OPS = frozenset(name for name, spec in OPS.items() if spec.has(Observes))
PLATFORM = "a2a3sim"


class KernelFrame(KernelWalker):
    """An AIC or AIV kernel running on one core of a launch; tiles live in the core's memory."""

    debug: Any = None  # the run's kernel debugger (a frame made without __init__ has none)

    def __init__(self, seat: Seat, args: Sequence[Any], role: CoreRole, cost: CostModel, steps: Steps):
        site = role.launch.site
        super().__init__(seat, args, site.block, site.block_num)
        self.role = role
        self.core = role.core
        self.cost = cost
        self.steps = steps  # the program's calls, decoded once
        self.on_op: Callable[[Call], None] | None = None  # told each op as it runs (a recording)
        self.last_gm_statement = _last_gm_statement_of(self.fn)
        self.pipes = site.core_pipes(self.core, role.launch.recorder, cost.sync_cycles())
        role.pipes = self.pipes
        self.issue_step = cost.issue_step()
        self._pending: _Issued | None = (
            None  # the statement's op, put on its pipe once its result has a buffer
        )
        self.debug = site.debugger  # the run's kernel debugger (None: the program does not debug)
        self.debug_hits: set[int] = set()  # the break_at lines it stopped at in this loop iteration
        self.bound_order: dict[str, int] = {}  # when debugging: the order each name was last bound
        self._binds = 0

    def run(self) -> Walk:
        """Run the kernel, then wait for its pipes to drain; the core is *settled* (see
        :meth:`Launch.settle`) once the work of the top-level statement holding its last GM access
        is done, or at once if it touches no GM."""
        if self.last_gm_statement < 0:
            self.role.launch.settle(self.role)
        returned = yield from super().run()
        yield from self.wait_until(self.pipes.drained())
        return returned

    def iteration(self, loop: For | While) -> Walk:
        if self.debug is not None:
            self.debug_hits.clear()  # each iteration stops at a break_at line again
        return (yield from super().iteration(loop))

    def top_level_done(self, index: int) -> Walk:
        if index == self.last_gm_statement:
            yield from self.wait_until(self.pipes.drained(GM_PIPES))
            self.role.launch.settle(self.role)

    def wait_until(self, cycle: int) -> Walk:
        """Hold the scalar unit (the core's clock) until ``cycle``."""
        if cycle > self.core.clock:
            yield Advance.scalar(cycle - self.core.clock)

    def scalar(self, cost: OpCost, call: Call, after: int = 0) -> Walk:
        """Scalar work (or a wait only the scalar unit can do) at the core's clock, not before ``after``."""
        issue = self.core.clock
        _, ready = self.pipes.run(cost, call, issue, after=_after(after, "GM written by this core"))
        yield Advance.scalar(ready - issue)

    def exec_stmt(self, stmt: Stmt) -> Walk:
        kind = type(stmt)
        call = stmt.value if kind is Assign or kind is Eval else None  # type: ignore[attr-defined]
        step = self.steps.step(call) if type(call) is Call else None
        if step is not None and step.operands is not None:
            # The common statement, an op on variables and constants, without the walker's frames.
            if step.checks_freed and self.role.freed:
                self._check_not_freed(step.call)
            if step.nested:
                args = yield from self._operand_walk(step.operands)
            else:
                args = self._operands(step.operands)
            value = yield from self.run_step(step, args)
            if kind is Assign:
                self.bind(stmt, value)  # type: ignore[arg-type]
            left = None
        else:
            left = yield from super().exec_stmt(stmt)
        issued, self._pending = self._pending, None
        if issued is not None:
            self._to_pipe(issued, stmt)
        return left

    def _operands(self, operands: tuple[Operand, ...]) -> tuple[Any, ...]:
        """The values of a decoded step's operands (variables, constants, tuples of them)."""
        env = self.env
        values = []
        for kind, item in operands:
            if kind == VARIABLE:
                values.append(env[item.name] if item.name in env else self._undefined(item))
            elif kind == CONSTANT:
                values.append(item)
            else:
                values.append(self._operands(item))
        return tuple(values)

    def _operand_walk(self, operands: tuple[Operand, ...]) -> Walk:
        """:meth:`_operands` where some operand is a nested op: it runs in its place, in order."""
        values = []
        for operand in operands:
            kind, item = operand
            if kind in (VARIABLE, CONSTANT):
                values.append(self._operands((operand,))[0])
            elif kind == TUPLE:
                values.append((yield from self._operand_walk(item)))
            else:
                if item.checks_freed and self.role.freed:
                    self._check_not_freed(item.call)
                args = yield from self._operand_walk(item.operands)
                values.append((yield from self.run_step(item, args)))
        return tuple(values)

    def _undefined(self, var: Var) -> Any:
        raise self.error(f"{var.name} is used before it is defined", var)

    def _to_pipe(self, issued: _Issued, stmt: Stmt) -> None:
        """Put a statement's op on its pipe, now that its result has its buffer."""
        call, args = issued.call, issued.args
        writes_args = issued.writes
        reads: list[Region] = []
        writes: list[Region] = []
        gm_reads: list[torch.Tensor] = []
        gm_writes: list[torch.Tensor] = []
        for index, value in enumerate(args):
            if not isinstance(value, torch.Tensor):
                continue
            region = self._region(value)
            written = index in writes_args
            if region is None:
                (gm_writes if written else gm_reads).append(value)
            else:
                reads.append(region)  # an op writing a tile in place reads it too
                if written:
                    writes.append(region)
        if isinstance(stmt, Assign) and isinstance(stmt.target.type, TileType):
            result = self._region_of_var(stmt.target.name)
            if result is not None:
                writes.append(result)
        start, _ = self.pipes.run(issued.cost, call, issued.at, reads, writes, gm_reads, gm_writes)
        self.role.launch.gm_access(self.role, call, args, start)

    def _region(self, value: torch.Tensor) -> Region | None:
        assert self.core.memory is not None
        found = self.core.memory.region(value)
        return None if found is None else Region(*found)

    def _region_of_var(self, name: str) -> Region | None:
        value = self.env.get(name)
        return self._region(value) if isinstance(value, torch.Tensor) else None

    def eval_call(self, call: Call) -> Walk:
        if call.op not in FREE_OPS:
            self._check_not_freed(call)
        return (yield from super().eval_call(call))

    def _check_not_freed(self, call: Call) -> None:
        """A tile read after its tfree: its slot is the producer's again and may hold the next push."""
        for arg in call.args:
            if not isinstance(arg, Var):
                continue
            freed = self.role.freed.get(arg.name)
            if freed is None:
                continue
            free = f"{user_name(freed.op)}({arg.name})"
            raise PipeError(
                f"in {self.fn.name}: {user_name(call.op)} on {self.role.name} reads {arg.name} after "
                f"{free} at {at_line(freed.span)} gave its ring slot back to the producer, which may "
                "have overwritten it",
                call.span,
                f"free a popped tile after its last use: move {free} below this line",
            )

    def apply(self, call: Call, args: tuple[Any, ...]) -> Walk:
        return (yield from self.run_step(self.steps.step(call), args))

    def run_step(self, step: Step, args: tuple[Any, ...]) -> Walk:
        """Run one decoded call on its evaluated operands; the generator returns its value."""
        call = step.call
        if self.on_op is not None:
            self.on_op(call)
        if self.debug is not None:
            self.debug.before_op(self, call)
            if call.op in OBSERVING_OPS:  # looks only: no pipe, no modeled time
                if call.op == debug_ops.print and not self.role.mirror:
                    self.debug.show(self, call, args)
                return TOKEN
        if step.work and self.role.mirror:
            return skipped(call, args)
        if step.launch is not None:
            return (yield from step.launch(self.role, call, args, self.cost))
        # The op first, so that bad offsets or valid shapes are reported as such, not as a race
        # over the part of the region that lies inside the tensor.
        value = self.compute(step, args)
        cost = self.steps.cost(step, self.cost)
        if cost.unit == "SCALAR":
            gm = [a for a in args if isinstance(a, torch.Tensor) and self._region(a) is None]
            self.role.launch.gm_access(self.role, call, args, self.core.clock)
            yield from self.scalar(cost, call, max((self.pipes.gm_written(t) for t in gm), default=0))
            return value
        if self._pending is not None:
            raise self.error(
                f"{call.op} is nested inside {self._pending.call.op}: each op needs a statement", call
            )
        self._pending = _Issued(call, args, cost, self.core.clock, step.writes)
        yield self.issue_step  # the scalar unit hands it to its pipe
        return value

    def compute(self, step: Step, args: tuple[Any, ...]) -> Any:
        """The numbers of a call that is no launch op, by its checked semantics (or the error
        that it cannot run)."""
        call = step.call
        semantics = step.semantics
        if semantics is None:
            semantics = self._cannot_run(call, args)
        else:
            self._check_has_data(call, args)
        return semantics(call, args)

    def _cannot_run(self, call: Call, args: tuple[Any, ...]) -> OpImpl:
        """Why a call that decoded without semantics cannot run, as the error it is."""
        unit = get_op(call.op).unit
        if unit not in CORE_UNITS or call.op.startswith("tensor."):
            raise self.error(
                f"{call.op} cannot run inside a kernel",
                call,
                "a lowered kernel holds tile.* ops, pipe and system ops, scalar math and loops",
            )
        self._check_has_data(call, args)
        self._check_route(call)
        if call.op not in SEMANTICS:
            raise self.error(f"{PLATFORM} has no semantics for op {call.op!r}", call)
        return SEMANTICS[call.op]

    def iteration_done(self, done: int, count: int) -> None:
        on_step = self.role.launch.site.on_step
        if self.role.reports_progress and on_step is not None:
            on_step(done, count)

    def _check_has_data(self, call: Call, args: tuple[Any, ...]) -> None:
        for expr, value in zip(call.args, args, strict=True):
            if isinstance(value, Token):
                name = expr.name if isinstance(expr, Var) else "an operand"
                raise PipeError(
                    f"in {self.fn.name}: {call.op} on {self.role.name} uses {name}, which holds no data: "
                    "with split=NONE lane 1 pops a data-less token",
                    call.span,
                    "only lane 0 computes on a split=NONE tile: guard lane 1's work with "
                    "get_subblock_idx(), or split UP_DOWN / LEFT_RIGHT",
                )

    def _check_route(self, call: Call) -> None:
        route = data_route(call)
        if route is None or self.cost.target.is_legal_path(*route):
            return
        src, dst = route
        raise self.error(
            f"{call.op} moves data {src.name}->{dst.name}, which {self.cost.target.name} has no path for",
            call,
            f"legal paths: {', '.join(self.cost.target.routes())}",
        )

    def set_carried(self, var: Var, value: Any) -> None:
        """A carried tile lives in its iter_arg's buffer: the value is copied in unless it is there."""
        if self.debug is not None:
            self.bound_order[var.name] = self._binds = self._binds + 1
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super().set_carried(var, value)
            return
        assert self.core.memory is not None
        if self._in_own_slot(var, value):
            self.env[var.name] = value  # a slotted iter_arg: the next iteration's slot holds it already
            return
        dest = self.env.get(var.name)
        if dest is None:
            dest = self.core.memory.place(self.fn, var, self.core.name, var.span, self.env)
        if dest.data_ptr() != value.data_ptr() or dest.shape != value.shape:
            source = self._region(value)
            dest.copy_(value.clone() if self.core.memory.shares_storage(value) else value)
            target = self._region(dest)
            if source is not None and target is not None:
                self.pipes.copied(source, target)
        self.env[var.name] = dest

    def _in_own_slot(self, var: Var, value: torch.Tensor) -> bool:
        """Whether ``value`` is one slot of ``var``'s slotted buffer (a tile loaded ahead in a
        pipelined loop, see :mod:`pypto.passes.prefetch`): carried on, it stays where it is."""
        plan = self.fn.attrs.get("memory_plan")
        allocation = plan.of(var.name) if isinstance(plan, MemoryPlan) else None
        region = self._region(value)
        if allocation is None or allocation.slots < 2 or region is None:
            return False
        return (
            region.space is allocation.space
            and allocation.offset <= region.lo
            and region.hi <= allocation.end
            and (region.lo - allocation.offset) % allocation.size == 0
        )

    def bind(self, stmt: Assign, value: Any) -> None:
        var = stmt.target
        if self.debug is not None:
            self.bound_order[var.name] = self._binds = self._binds + 1
        self.role.freed.pop(var.name, None)
        if isinstance(value, Popped):
            # A popped tile is a view onto its ring slot: it has no allocation of its own.
            self.role.popped[var.name] = value.slot
            self.env[var.name] = value.value
            return
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super().bind(stmt, value)
            return
        assert self.core.memory is not None
        dest = self.core.memory.place(self.fn, var, self.core.name, stmt.span, self.env)
        if isinstance(value, torch.Tensor) and self.core.memory.shares_storage(value):
            value = value.clone()  # a view of a buffer may overlap the destination
        dest.copy_(value)
        self.env[var.name] = dest


class _Issued(NamedTuple):
    """An op the scalar unit issued at cycle ``at``, waiting for its statement to bind its result."""

    call: Call
    args: tuple[Any, ...]
    cost: OpCost
    at: int
    writes: tuple[int, ...]  # the operands the op writes in place


def _after(cycle: int, what: str) -> tuple[Dependency, ...]:
    return (Dependency(cycle, None, what),) if cycle else ()


# Per kernel, its last GM statement: a static fact of the function, found once, not per launch.
_LAST_GM: weakref.WeakKeyDictionary[Function, int] = weakref.WeakKeyDictionary()


def _last_gm_statement_of(fn: Function) -> int:
    found = _LAST_GM.get(fn)
    if found is None:
        found = _LAST_GM[fn] = last_gm_statement(fn.body)
    return found


def last_gm_statement(body: tuple[Stmt, ...]) -> int:
    """The index of the last statement of ``body`` that reads or writes GM (in any body it
    holds), -1 if none does: after it the kernel's outputs are final and its inputs read."""
    touching = [index for index, stmt in enumerate(body) if _touches_gm(stmt)]
    return touching[-1] if touching else -1


def _touches_gm(stmt: Stmt) -> bool:
    for inner in walk_stmts((stmt,)):
        for expr in (*stmt_exprs(inner), *stmt_end_exprs(inner)):
            if any(isinstance(e, Call) and e.op in GM_DATA_OPS for e in walk_expr(expr)):
                return True
    return False


def skipped(call: Call, args: tuple[Any, ...]) -> Any:
    """What a skipped op evaluates to on a mirroring lane: the tensor it writes, or a token."""
    writes = get_op(call.op).writes
    return args[writes[0]] if writes else TOKEN
