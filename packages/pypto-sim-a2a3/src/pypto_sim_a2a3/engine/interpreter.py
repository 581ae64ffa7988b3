"""A kernel on one core of a launch, as a coroutine for the scheduler.

:class:`KernelFrame` is the shared walker of lowered functions (:class:`pypto.ir.walker.KernelWalker`:
frames, loops, ifs) with the simulated core's meaning of each op, in two parts:

- numbers (:class:`CoreNumbers`): tile values live in the core's buffers (a popped tile in its
  pipe slot), each op runs its checked :data:`~pypto_sim_a2a3.engine.semantics.SEMANTICS`;
- timing (:class:`CoreTiming`): the core's clock is its scalar unit's, which issues the ops in
  program order. Scalar work takes that clock's cycles; every other op is handed to its pipe
  (:mod:`pypto_sim_a2a3.hw.corepipes`), which starts it once the pipe is free and its operands are
  ready, so the pipes of the core run at once. When the kernel returns, the core waits for its
  pipes to drain.

Pipe and system ops go to :data:`~pypto_sim_a2a3.engine.crosscore.LAUNCH_OPS`, which model both.
A walk for the numbers alone has no timing part (a replayed block's); a timing-only run's numbers
part computes only what steers the walk (:mod:`pypto_sim_a2a3.engine.steering`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any

import torch

from pypto.ir import (
    Allocation,
    Assign,
    Call,
    Eval,
    For,
    Function,
    MemoryPlan,
    MemorySpace,
    SourceSpan,
    Stmt,
    TileType,
    Var,
    VerificationError,
    While,
    get_op,
)
from pypto.ir.errors import at_line
from pypto.ir.launch import Seat
from pypto.ir.nodes import stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import OPS, GmAccess, Observes, user_name
from pypto.ir.ops import debug as debug_ops
from pypto.ir.semantics import OpImpl
from pypto.ir.walker import Jump, KernelWalker
from pypto_sim_a2a3.checks.coherence import GM_DATA_OPS
from pypto_sim_a2a3.engine.crosscore import Popped, scalar_step
from pypto_sim_a2a3.engine.decode import (
    CONSTANT,
    CORE_UNITS,
    FREE_OPS,
    SLOT,
    VARIABLE,
    Operand,
    Step,
    Steps,
    data_route,
)
from pypto_sim_a2a3.engine.launch import CoreRole
from pypto_sim_a2a3.engine.scheduler import Event
from pypto_sim_a2a3.engine.semantics import ADDRESS_CHECKS, SEMANTICS
from pypto_sim_a2a3.engine.steering import UNCOMPUTED, TimingOnly, written_text
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.hw.corepipes import GM_PIPES, Dependency, Region
from pypto_sim_a2a3.hw.cost import CostModel, OpCost
from pypto_sim_a2a3.hw.memory import CoreMemory, slot_of
from pypto_sim_a2a3.hw.ring import TOKEN, Token

Walk = Generator[Event, None, Any]
_UNBOUND = object()  # a name the frame has no value for
# The ops that only look (pl.debug.*): the kernel debugger's, never put on a pipe.
OBSERVING_OPS = frozenset(name for name, spec in OPS.items() if spec.has(Observes))
PLATFORM = "a2a3sim"


class KernelFrame(KernelWalker):
    """An AIC or AIV kernel running on one core of a launch: the walk of its statements, whose
    ops have two parts, :class:`CoreNumbers` (what each op computes, in the core's memory) and
    :class:`CoreTiming` (when: issue, pipes, waits, GM-access reports).

    ``timed=False`` walks the numbers alone (:class:`~pypto_sim_a2a3.fast.replay.NumbersFrame`: a
    replayed block takes its time from another block); the frame's maker then sets the role's
    pipes (the launch ops still ask them). In a timing-only run (the launch's
    ``site.timing_only``) the numbers part computes only the ops that steer the walk."""

    debug: Any = None  # the run's kernel debugger (a frame made without __init__ has none)

    def __init__(
        self,
        seat: Seat,
        args: Sequence[Any],
        role: CoreRole,
        cost: CostModel,
        steps: Steps,
        timed: bool = True,
    ):
        site = role.launch.site
        super().__init__(seat, args, site.block, site.block_num)
        self.role = role
        self.core = role.core
        self.cost = cost
        self.steps = steps  # the program's calls, decoded once
        self.on_op: Callable[[Call], None] | None = None  # told each op as it runs (a recording)
        self.numbers = CoreNumbers(self.fn, role, cost, site.timing_only)
        self.timing = CoreTiming(self.fn, role, cost) if timed else None
        self.debug = site.debugger  # the run's kernel debugger (None: the program does not debug)
        self.debug_hits: set[int] = set()  # the break_at lines it stopped at in this loop iteration
        self.bound_order: dict[str, int] = {}  # when debugging: the order each name was last bound
        self._binds = 0
        # Whether its ops' runs are this class's own (a subclass hooking run_step walks each op
        # through it): then a plain op runs without a frame of its own.
        self._plain = type(self).run_step is KernelFrame.run_step

    _plain = False  # (a frame made without __init__ walks every op through run_step)

    def run(self) -> Walk:
        """Run the kernel, then wait for its pipes to drain (see :meth:`CoreTiming.started`)."""
        if self.timing is not None:
            self.timing.started()
        returned = yield from super().run()
        if self.timing is not None:
            yield from self.timing.drain()
        return returned

    def iteration_begins(self, loop: For | While) -> None:
        if self.debug is not None:
            self.debug_hits.clear()  # each iteration stops at a break_at line again

    def top_level_done(self, index: int) -> Walk:
        if self.timing is not None:
            yield from self.timing.statement_done(index)

    def exec_stmt(self, stmt: Stmt) -> Walk:
        kind = type(stmt)
        call = stmt.value if kind is Assign or kind is Eval else None  # type: ignore[attr-defined]
        step = self.steps.step(call) if type(call) is Call else None
        if step is None or step.operands is None:
            left: tuple[Any, ...] | Jump | None
            if kind is For:  # (the walker's dispatch, without its frame)
                left = yield from self.exec_for(stmt)  # type: ignore[arg-type]
            else:
                left = yield from super().exec_stmt(stmt)
            if self.timing is not None:
                self.timing.statement_bound(stmt, self.env)
            return left
        # The common statement, an op on variables, constants and nested scalar ops, without the
        # walker's frames; an op without a launch part (a plain op) runs without a frame of its
        # own while nothing hooks the op's run (a debugger, a subclass's run_step).
        plain = self._plain and self.debug is None
        if step.checks_freed and self.role.freed:
            self.numbers.check_not_freed(step.call)
        if step.nested:
            slots: list[Any] = []
            for nested, operands in step.flat:
                if nested is None:  # a nested op's freed check, before its own operands run
                    if self.role.freed:
                        self.numbers.check_not_freed(operands)
                    continue
                args = self._operands(operands, slots)
                if plain and nested.launch is None:
                    value, event = self._plain_op(nested, args)
                    if event is not None:
                        yield event
                else:
                    value = yield from self.run_step(nested, args)
                slots.append(value)
            args = self._operands(step.flat_operands, slots)
        else:
            args = self._operands(step.operands)
        if plain and step.launch is None:
            value, event = self._plain_op(step, args)
            if event is not None:
                yield event
        else:
            value = yield from self.run_step(step, args)
        if kind is Assign:
            self.bind(stmt, value)  # type: ignore[arg-type]
        if self.timing is not None:
            self.timing.statement_bound(stmt, self.env)
        return None

    def _operands(self, operands: tuple[Operand, ...], slots: Sequence[Any] = ()) -> tuple[Any, ...]:
        """The values of a decoded step's operands (variables, constants, tuples of them, the
        values of nested ops in ``slots``)."""
        env = self.env
        values = []
        for kind, item in operands:
            if kind == VARIABLE:
                value = env.get(item.name, _UNBOUND)
                values.append(self._undefined(item) if value is _UNBOUND else value)
            elif kind == CONSTANT:
                values.append(item)
            elif kind == SLOT:
                values.append(slots[item])
            else:
                values.append(self._operands(item, slots))
        return tuple(values)

    def _plain_op(self, step: Step, args: tuple[Any, ...]) -> tuple[Any, Event | None]:
        """:meth:`run_step` of a plain op (no launch part, no debugger) as one call: its value and
        the event its core yields for it (None: it takes no time here)."""
        call = step.call
        if self.on_op is not None:
            self.on_op(call)
        if step.work and self.role.mirror:
            return (args[step.writes[0]] if step.writes else TOKEN), None  # (as skipped() finds)
        value = self.numbers.compute(step, args)
        timing = self.timing
        if timing is None:
            return value, None
        cost = step.cost
        if cost is None:
            cost = self.steps.cost(step, self.cost)
        return value, timing.issue_now(step, args, cost)

    def _undefined(self, var: Var) -> Any:
        raise self.error(f"{var.name} is used before it is defined", var)

    def eval_call(self, call: Call) -> Walk:
        if call.op not in FREE_OPS:
            self.numbers.check_not_freed(call)
        return (yield from super().eval_call(call))

    def apply(self, call: Call, args: tuple[Any, ...]) -> Walk:
        return (yield from self.run_step(self.steps.step(call), args))

    def run_step(self, step: Step, args: tuple[Any, ...]) -> Walk:
        """Run one decoded call on its evaluated operands: its numbers, then its time; the
        generator returns its value."""
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
            return args[step.writes[0]] if step.writes else TOKEN  # (skipped(), from the decoded writes)
        if step.launch is not None:  # pipe, index and system ops: the launch's (with its pipes)
            return (yield from step.launch(self.role, call, args, self.cost))
        # The op first, so that bad offsets or valid shapes are reported as such, not as a race
        # over the part of the region that lies inside the tensor.
        value = self.numbers.compute(step, args)
        if self.timing is not None:
            yield from self.timing.issue(step, args, self.steps.cost(step, self.cost))
        return value

    def iteration_done(self, done: int, count: int) -> None:
        on_step = self.role.launch.site.on_step
        if self.role.reports_progress and on_step is not None:
            on_step(done, count)

    def set_carried(self, var: Var, value: Any) -> None:
        """A carried tile lives in its iter_arg's buffer: the value is copied in unless it is there."""
        if self.debug is not None:
            self.bound_order[var.name] = self._binds = self._binds + 1
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super().set_carried(var, value)
            return
        copied = self.numbers.carry(var, value, self.env)
        if copied is not None and self.timing is not None:
            self.timing.pipes.copied(*copied)

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
        self.numbers.place(stmt, value, self.env)


class CoreNumbers:
    """The numbers part of a kernel's walk on one core: each op's checked semantics, the tiles in
    the core's memory (a bound tile copied into its buffer, a carried one into its iter_arg's),
    and the checks on what an op may read (a tile its tfree gave back, a data-less token).

    In a timing-only run (``timing_only`` given) it computes the ops of the kernel's steering
    slice (:mod:`pypto_sim_a2a3.engine.steering`) alone; another op only has its address checks
    made, and its result is the buffer it would fill (or :data:`UNCOMPUTED`, a scalar)."""

    def __init__(self, fn: Function, role: CoreRole, cost: CostModel, timing_only: TimingOnly | None):
        self.fn = fn
        self.role = role
        assert role.core.memory is not None
        self.memory = role.core.memory
        self.target = cost.target
        steering = None if timing_only is None else timing_only.steering.get(fn.name)
        # The ops computed, by id, and the names whose tiles hold numbers (None: every one).
        self.computes = None if steering is None else steering.calls
        self.keeps = None if steering is None else steering.names
        self.unreal = None if timing_only is None else timing_only.unreal
        self._allocations: dict[str, Allocation] = {}  # each tile's allocation, checked once
        # (tile, byte offset) -> its buffer view, the view's space and end (one per slot it takes)
        self._views: dict[tuple[str, int], tuple[torch.Tensor, MemorySpace, int]] = {}

    def compute(self, step: Step, args: tuple[Any, ...]) -> Any:
        """The numbers of a call that is no launch op, by its checked semantics (or the error
        that it cannot run); in a timing-only run only those of a steering op."""
        call = step.call
        semantics = step.semantics
        if semantics is None:
            semantics = self._cannot_run(call, args)
        else:
            for value in args:  # (check_has_data's look, here: one call less per op)
                if isinstance(value, Token):
                    self.check_has_data(call, args)
        if self.computes is None:
            return semantics(call, args)
        if id(call) not in self.computes:
            return self._skip(step, args)
        assert self.unreal is not None
        if call.op in GM_READS:
            self.unreal.check_read(call, args, steered_value(call))
        return semantics(call, args)

    def _skip(self, step: Step, args: tuple[Any, ...]) -> Any:
        """A timing-only run's op that steers nothing: where it reads and writes is checked, and
        what it writes in GM is known to hold no numbers. Its value is the operand it writes (a
        tile's buffer, a GM tensor), else :data:`UNCOMPUTED`."""
        call = step.call
        check = ADDRESS_CHECKS.get(call.op)
        if check is not None:
            check(call, args)
        if call.op in GM_WRITES:
            assert self.unreal is not None
            self.unreal.written(call, args)
        return args[step.writes[0]] if step.writes else UNCOMPUTED

    def place(self, stmt: Assign, value: Any, env: dict[str, Any]) -> None:
        """Bind a tile: its buffer in the core's memory, holding ``value``."""
        var = stmt.target
        dest = self.buffer(var, stmt.span, env)
        if self.keeps is None or var.name in self.keeps:
            if isinstance(value, torch.Tensor) and self.memory.shares_storage(value):
                value = value.clone()  # a view of a buffer may overlap the destination
            dest.copy_(value)
        env[var.name] = dest

    def buffer(self, var: Var, span: SourceSpan | None, env: dict[str, Any]) -> torch.Tensor:
        """Tile ``var``'s buffer view now (:meth:`CoreMemory.place`, its allocation looked up and
        checked once per walk)."""
        allocation = self._allocations.get(var.name)
        if allocation is None:
            allocation = self.memory.allocation(self.fn, var, self.role.core.name, span)
            self._allocations[var.name] = allocation
        slot = 0 if allocation.slots <= 1 else slot_of(self.fn, var, allocation, span, env)
        offset = allocation.slot_offset(slot)
        found = self._views.get((var.name, offset))
        if found is None:
            assert isinstance(var.type, TileType)
            view = self.memory.view(allocation, var.type, slot)
            if type(self.memory) is CoreMemory:  # (a memory of its own kind may note each view)
                self._views[var.name, offset] = (view, allocation.space, offset + var.type.nbytes)
            return view
        view, space, top = found
        self.memory.reached(space, top)  # (what view_at notes of the bytes it hands out)
        return view

    def carry(self, var: Var, value: Any, env: dict[str, Any]) -> tuple[Region, Region] | None:
        """Carry tile ``value`` into iter_arg ``var``'s buffer; the (source, destination) regions
        if it was copied between two buffers of the core."""
        if self._in_own_slot(var, value):
            env[var.name] = value  # a slotted iter_arg: the next iteration's slot holds it already
            return None
        dest = env.get(var.name)
        if dest is None:
            dest = self.buffer(var, var.span, env)
        env[var.name] = dest
        if dest.data_ptr() == value.data_ptr() and dest.shape == value.shape:
            return None
        source = self.region(value)
        if self.keeps is None or var.name in self.keeps:
            dest.copy_(value.clone() if self.memory.shares_storage(value) else value)
        target = self.region(dest)
        return None if source is None or target is None else (source, target)

    def _in_own_slot(self, var: Var, value: torch.Tensor) -> bool:
        """Whether ``value`` is one slot of ``var``'s slotted buffer (a tile loaded ahead in a
        pipelined loop, see :mod:`pypto.passes.prefetch`): carried on, it stays where it is."""
        plan = self.fn.attrs.get("memory_plan")
        allocation = plan.of(var.name) if isinstance(plan, MemoryPlan) else None
        region = self.region(value)
        if allocation is None or allocation.slots < 2 or region is None:
            return False
        return (
            region.space is allocation.space
            and allocation.offset <= region.lo
            and region.hi <= allocation.end
            and (region.lo - allocation.offset) % allocation.size == 0
        )

    def region(self, value: torch.Tensor) -> Region | None:
        """Where ``value`` lies in the core's memory (None: in GM)."""
        return self.memory.region(value)  # type: ignore[return-value]  # (a Region)

    def check_not_freed(self, call: Call) -> None:
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

    def check_has_data(self, call: Call, args: tuple[Any, ...]) -> None:
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

    def _cannot_run(self, call: Call, args: tuple[Any, ...]) -> OpImpl:
        """Why a call that decoded without semantics cannot run, as the error it is."""
        unit = get_op(call.op).unit
        if unit not in CORE_UNITS or call.op.startswith("tensor."):
            raise self._error(
                f"{call.op} cannot run inside a kernel",
                call,
                "a lowered kernel holds tile.* ops, pipe and system ops, scalar math and loops",
            )
        self.check_has_data(call, args)
        self._check_route(call)
        if call.op not in SEMANTICS:
            raise self._error(f"{PLATFORM} has no semantics for op {call.op!r}", call)
        return SEMANTICS[call.op]

    def _check_route(self, call: Call) -> None:
        route = data_route(call)
        if route is None or self.target.is_legal_path(*route):
            return
        src, dst = route
        raise self._error(
            f"{call.op} moves data {src.name}->{dst.name}, which {self.target.name} has no path for",
            call,
            f"legal paths: {', '.join(self.target.routes())}",
        )

    def _error(self, message: str, call: Call, hint: str | None = None) -> VerificationError:
        return VerificationError(f"in {self.fn.name}: {message}", call.span, hint)


class CoreTiming:
    """The timing part of a kernel's walk on one core. The core's clock is its scalar unit's,
    which issues the ops in program order: scalar work takes that clock's cycles; every other op
    is handed to its pipe (:class:`~pypto_sim_a2a3.hw.corepipes.CorePipes`) once its statement
    has bound its result, and starts once the pipe is free and its operands are ready. Each op's
    GM access is reported to the launch (the race and coherence checks) at the cycle it starts."""

    def __init__(self, fn: Function, role: CoreRole, cost: CostModel):
        self.fn = fn
        self.role = role
        self.core = role.core
        self.last_gm_statement = _last_gm_statement_of(fn)
        self.pipes = role.launch.site.core_pipes(self.core, role.launch.recorder, cost.sync_cycles())
        role.pipes = self.pipes
        self.issue_step = cost.issue_step()
        assert self.core.memory is not None
        # Where a tile lies in the core's memory (a Region; None: in GM).
        self.region: Callable[[torch.Tensor], Region | None] = self.core.memory.region  # type: ignore[assignment]
        # The statement's op, put on its pipe once bound: (call, args, cost, issued at, the operands
        # it writes in place); a plain tuple, made once per op.
        self._pending: tuple[Call, tuple[Any, ...], OpCost, int, tuple[int, ...]] | None = None

    def started(self) -> None:
        """The core is *settled* (see :meth:`Launch.settle`) once the work of the top-level
        statement holding its last GM access is done, or at once if it touches no GM."""
        if self.last_gm_statement < 0:
            self.role.launch.settle(self.role)

    def statement_done(self, index: int) -> Walk:
        if index == self.last_gm_statement:
            yield from self.wait_until(self.pipes.drained(GM_PIPES))
            self.role.launch.settle(self.role)

    def drain(self) -> Walk:
        """The kernel returned: the core waits for its pipes to drain."""
        yield from self.wait_until(self.pipes.drained())

    def wait_until(self, cycle: int) -> Walk:
        """Hold the scalar unit (the core's clock) until ``cycle``."""
        if cycle > self.core.clock:
            yield scalar_step(cycle - self.core.clock)

    def issue(self, step: Step, args: tuple[Any, ...], cost: OpCost) -> Walk:
        """The scalar unit runs a scalar op now, or hands any other op to its pipe."""
        yield self.issue_now(step, args, cost)

    def issue_now(self, step: Step, args: tuple[Any, ...], cost: OpCost) -> Event:
        """:meth:`issue` as one call: the event the core yields for the op."""
        call = step.call
        if cost.unit == "SCALAR":
            memory = self.core.memory
            assert memory is not None
            gm = [a for a in args if isinstance(a, torch.Tensor) and memory.region(a) is None]
            self.role.launch.gm_access(self.role, call, args, self.core.clock)
            after = max([self.pipes.gm_written(t) for t in gm]) if gm else 0
            issue = self.core.clock
            _, ready = self.pipes.run(cost, call, issue, after=_after(after, "GM written by this core"))
            return scalar_step(ready - issue)
        if self._pending is not None:
            raise VerificationError(
                f"in {self.fn.name}: {call.op} is nested inside {self._pending[0].op}: each op needs a "
                "statement",
                call.span,
            )
        self._pending = (call, args, cost, self.core.clock, step.writes)
        return self.issue_step  # the scalar unit hands it to its pipe

    def statement_bound(self, stmt: Stmt, env: dict[str, Any]) -> None:
        """Put the statement's op on its pipe, now that its result has its buffer: it reads its
        operands' regions and writes its result's (and those of the operands it writes)."""
        issued = self._pending
        if issued is None:
            return
        self._pending = None
        region = self.region
        call, args, cost, at, writes_args = issued
        reads: list[Region] = []
        writes: list[Region] = []
        gm_reads: list[torch.Tensor] = []
        gm_writes: list[torch.Tensor] = []
        for index, value in enumerate(args):
            if not isinstance(value, torch.Tensor):
                continue
            found = region(value)
            if found is None:
                (gm_writes if index in writes_args else gm_reads).append(value)
            else:
                reads.append(found)  # an op writing a tile in place reads it too
                if index in writes_args:
                    writes.append(found)
        if type(stmt) is Assign and isinstance(stmt.target.type, TileType):
            result = env.get(stmt.target.name)
            found = region(result) if isinstance(result, torch.Tensor) else None
            if found is not None:
                writes.append(found)
        start, _ = self.pipes.run(cost, call, at, reads, writes, gm_reads, gm_writes)
        self.role.launch.gm_access(self.role, call, args, start)


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


def steered_value(call: Call) -> str:
    """How an error names a kernel's GM read for a steering value: as written (``pl.read(t, [i])``)."""
    return written_text(call.span, user_name(call.op))


# The ops that read, and that write, GM data.
GM_READS = frozenset(n for n, spec in OPS.items() if (a := spec.trait(GmAccess)) is not None and not a.write)
GM_WRITES = frozenset(n for n, spec in OPS.items() if (a := spec.trait(GmAccess)) is not None and a.write)
