"""Interpreters of lowered functions, written as coroutines for the scheduler.

A :class:`Frame` walks one function body (``Assign``, ``Eval``, ``For``, ``If``, ``Return``) and evaluates
expressions; its ``run()`` is a generator that yields scheduler events and returns the values of
the function's ``Return``. :class:`KernelFrame` runs an AIC/AIV kernel on one core of a launch:
tile values live in the core's buffers (a popped tile in its pipe slot), every op yields its
modeled cycles, pipe and system ops go to :data:`~pypto_sim_a2a3.crosscore.LAUNCH_OPS`.
:class:`HostFrame` runs the Orchestration function: ``call`` launches a kernel as a task.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from pypto.ir import (
    Assign,
    Call,
    Const,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    LoopKind,
    MemorySpace,
    Program,
    Return,
    Stmt,
    TileType,
    TupleExpr,
    Unit,
    Var,
    VerificationError,
    get_op,
)
from pypto.ir.ops import user_name
from pypto.ir.printer import format_expr
from pypto_sim_a2a3.cost import CostModel
from pypto_sim_a2a3.crosscore import LAUNCH_OPS, Popped
from pypto_sim_a2a3.errors import LoopStepError, PipeError
from pypto_sim_a2a3.launch import CoreRole, group_members
from pypto_sim_a2a3.ring import TOKEN, Token, at_line
from pypto_sim_a2a3.scheduler import Event
from pypto_sim_a2a3.semantics import SEMANTICS, OpImpl
from pypto_sim_a2a3.taskgraph import Task

if TYPE_CHECKING:
    from pypto_sim_a2a3.chip import Chip

Steps = Generator[Event, None, Any]


class Frame(ABC):
    """The variables of one running function and the walk over its body."""

    def __init__(self, fn: Function, args: Sequence[Any]):
        self.fn = fn
        self.env: dict[str, Any] = {p.var.name: value for p, value in zip(fn.params, args, strict=True)}
        self.loop_depth = 0  # how many loops of this function are running now

    def run(self) -> Generator[Event, None, tuple[Any, ...]]:
        """Execute the body; the generator's return value is what ``Return`` gave (``()`` if none)."""
        returned = yield from self._exec_body(self.fn.body)
        return returned or ()

    # ------------------------------------------------------------ statements

    def _exec_body(self, body: Sequence[Stmt]) -> Generator[Event, None, tuple[Any, ...] | None]:
        for stmt in body:
            returned = yield from self._exec(stmt)
            if returned is not None:
                return returned
        return None

    def _exec(self, stmt: Stmt) -> Generator[Event, None, tuple[Any, ...] | None]:
        if isinstance(stmt, Assign):
            value = yield from self._eval_statement_call(stmt.value)
            self._bind(stmt, value)
        elif isinstance(stmt, Eval):
            yield from self._eval_statement_call(stmt.value)
        elif isinstance(stmt, For):
            return (yield from self._exec_for(stmt))
        elif isinstance(stmt, If):
            taken = yield from self._eval(stmt.cond)
            return (yield from self._exec_body(stmt.then_body if taken else stmt.else_body))
        elif isinstance(stmt, Return):
            return (yield from self._eval_all(stmt.values))
        else:
            kind = self.fn.kind.value
            raise self._error(f"{type(stmt).__name__} is not allowed in a lowered {kind} function", stmt)
        return None

    def _exec_for(self, loop: For) -> Generator[Event, None, tuple[Any, ...] | None]:
        iterations = yield from self._loop_range(loop)
        yield from self._enter_loop(loop)
        self.loop_depth += 1
        try:
            for done, i in enumerate(iterations, 1):
                self.env[loop.var.name] = i
                returned = yield from self._exec_body(loop.body)
                if returned is not None:
                    return returned
                yield from self._carry(loop, loop.yields)
                if self.loop_depth == 1:
                    self._outer_iteration_done(done, len(iterations))
        finally:
            self.loop_depth -= 1
        self._leave_loop(loop)
        return None

    def _outer_iteration_done(self, done: int, count: int) -> None:
        """Iteration ``done`` of ``count`` of an outermost loop has finished (progress reporting);
        only kernels report it."""
        return None

    def _enter_loop(self, loop: For) -> Generator[Event, None, None]:
        """Bind the loop's iter_args to its init values."""
        yield from self._carry(loop, loop.init_values)

    def _carry(self, loop: For, exprs: Sequence[Expr]) -> Generator[Event, None, None]:
        """Move ``exprs`` (init values or yields, all evaluated first) into the iter_args."""
        values = yield from self._eval_all(exprs)
        for var, value in zip(loop.iter_args, values, strict=True):
            self._set_carried(var, value)

    def _set_carried(self, var: Var, value: Any) -> None:
        self.env[var.name] = value

    def _leave_loop(self, loop: For) -> None:
        """Bind the results to the iter_args' last values (the init values after no iteration)."""
        for iter_arg, result in zip(loop.iter_args, loop.results, strict=True):
            self.env[result.name] = self.env[iter_arg.name]

    def _loop_range(self, loop: For) -> Generator[Event, None, range]:
        start = yield from self._eval(loop.start)
        stop = yield from self._eval(loop.stop)
        step = yield from self._eval(loop.step)
        if step == 0:
            raise self._zero_step(loop)
        return range(int(start), int(stop), int(step))

    def _zero_step(self, loop: For) -> LoopStepError:
        """A run-time step of 0 (a constant 0 is a compile error): the user's value, not a compiler bug."""
        step = format_expr(loop.step)
        where = f" from {at_line(loop.step.span)}" if loop.step.span is not None else ""
        return LoopStepError(
            f"in {self.fn.name}: pl.{loop.kind.value} over {loop.var.name} would never end: its step, the "
            f"value of {step}{where}, is 0 at run time",
            loop.span,
            f"make the step non-zero: check where {step} comes from, or guard the loop with if {step} != 0:",
        )

    def _bind(self, stmt: Assign, value: Any) -> None:
        self.env[stmt.target.name] = value

    # ------------------------------------------------------------ expressions

    def _eval_statement_call(self, expr: Expr) -> Steps:
        """The value of a statement's expression; only here may an op produce a tile."""
        if isinstance(expr, Call):
            return (yield from self._eval_call(expr))
        return (yield from self._eval(expr))

    def _eval(self, expr: Expr) -> Steps:
        if isinstance(expr, Var):
            if expr.name not in self.env:
                raise self._error(f"{expr.name} is used before it is defined", expr)
            return self.env[expr.name]
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, TupleExpr):
            return (yield from self._eval_all(expr.elements))
        if isinstance(expr, Call):
            if isinstance(expr.type, TileType):
                raise self._error(
                    f"{expr.op} is nested inside another expression, so its tile has no buffer", expr
                )
            return (yield from self._eval_call(expr))
        raise self._error(f"cannot evaluate {type(expr).__name__}", expr)

    def _eval_all(self, exprs: Sequence[Expr]) -> Generator[Event, None, tuple[Any, ...]]:
        values = []
        for e in exprs:
            values.append((yield from self._eval(e)))
        return tuple(values)

    def _eval_call(self, call: Call) -> Steps:
        args = yield from self._eval_all(call.args)
        return (yield from self._apply(call, args))

    @abstractmethod
    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        """Execute one op on this frame's side (a core or the host)."""

    def _semantics(self, call: Call) -> OpImpl:
        if call.op not in SEMANTICS:
            raise self._error(f"a2a3sim has no semantics for op {call.op!r}", call)
        return SEMANTICS[call.op]

    def _error(self, message: str, node: Expr | Stmt, hint: str | None = None) -> VerificationError:
        return VerificationError(f"in {self.fn.name}: {message}", node.span, hint)


class KernelFrame(Frame):
    """An AIC or AIV kernel running on one core of a launch; tiles live in the core's memory."""

    def __init__(self, fn: Function, args: Sequence[Any], role: CoreRole, cost: CostModel):
        super().__init__(fn, args)
        self.role = role
        self.core = role.core
        self.cost = cost

    def _eval_call(self, call: Call) -> Steps:
        if call.op not in _FREE_OPS:
            self._check_not_freed(call)
        return (yield from super()._eval_call(call))

    def _check_not_freed(self, call: Call) -> None:
        """A tile read after its tfree: its slot is the producer's again and may hold the next push."""
        for arg in call.args:
            if not isinstance(arg, Var):
                continue
            freed = self.role.freed.get(arg.name)
            if freed is None:
                continue
            free = f"pl.{freed.op}({arg.name})"
            raise PipeError(
                f"in {self.fn.name}: {user_name(call.op)} on {self.role.name} reads {arg.name} after "
                f"{free} at {at_line(freed.span)} gave its ring slot back to the producer, which may "
                "have overwritten it",
                call.span,
                f"free a popped tile after its last use: move {free} below this line",
            )

    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if self.role.mirror and _is_work(call):
            return _skipped(call, args)
        if call.op in LAUNCH_OPS:
            return (yield from LAUNCH_OPS[call.op](self.role, call, args, self.cost))
        unit = get_op(call.op).unit
        if unit not in _CORE_UNITS or call.op.startswith("tensor."):
            raise self._error(
                f"{call.op} cannot run inside a kernel",
                call,
                "a lowered kernel holds tile.* ops, pipe and system ops, scalar math and loops",
            )
        self._check_has_data(call, args)
        self._check_route(call)
        # The op first, so that bad offsets or valid shapes are reported as such, not as a race
        # over the part of the region that lies inside the tensor.
        value = self._semantics(call)(call, args)
        self.role.launch.gm_access(self.role, call, args)
        yield self.cost.op_cost(call).on(call)
        return value

    def _outer_iteration_done(self, done: int, count: int) -> None:
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
        route = _data_route(call)
        if route is None or self.cost.target.is_legal_path(*route):
            return
        src, dst = route
        raise self._error(
            f"{call.op} moves data {src.name}->{dst.name}, which {self.cost.target.name} has no path for",
            call,
            f"legal paths: {', '.join(self.cost.target.routes())}",
        )

    def _set_carried(self, var: Var, value: Any) -> None:
        """A carried tile lives in its iter_arg's buffer: the value is copied in unless it is there."""
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super()._set_carried(var, value)
            return
        assert self.core.memory is not None
        dest = self.env.get(var.name)
        if dest is None:
            dest = self.core.memory.place(self.fn, var, self.core.name, var.span)
        if dest.data_ptr() != value.data_ptr() or dest.shape != value.shape:
            dest.copy_(value.clone() if self.core.memory.shares_storage(value) else value)
        self.env[var.name] = dest

    def _bind(self, stmt: Assign, value: Any) -> None:
        var = stmt.target
        self.role.freed.pop(var.name, None)
        if isinstance(value, Popped):
            # A popped tile is a view onto its ring slot: it has no allocation of its own.
            self.role.popped[var.name] = value.slot
            self.env[var.name] = value.value
            return
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super()._bind(stmt, value)
            return
        assert self.core.memory is not None
        dest = self.core.memory.place(self.fn, var, self.core.name, stmt.span)
        if isinstance(value, torch.Tensor) and self.core.memory.shares_storage(value):
            value = value.clone()  # a view of a buffer may overlap the destination
        dest.copy_(value)
        self.env[var.name] = dest


_CORE_UNITS = (Unit.VECTOR, Unit.CUBE, Unit.MTE, Unit.SCALAR)
_FREE_OPS = ("tfree_to_aic", "tfree_to_aiv")


def _is_work(call: Call) -> bool:
    """Ops a mirroring lane skips: loads, stores, compute, and anything else that makes a tile."""
    op = get_op(call.op)
    makes_tile = isinstance(call.type, TileType) and not op.in_pipe_slot
    return op.unit in (Unit.VECTOR, Unit.CUBE, Unit.MTE) or makes_tile


def _skipped(call: Call, args: tuple[Any, ...]) -> Any:
    """What a skipped op evaluates to on a mirroring lane: the tensor it writes, or a token."""
    writes = get_op(call.op).writes
    return args[writes[0]] if writes else TOKEN


def _data_route(call: Call) -> tuple[MemorySpace, MemorySpace] | None:
    """The (source, destination) spaces of a data-movement op, or None for other ops."""
    if call.op == "tile.load" and isinstance(call.type, TileType) and call.type.memory_space:
        return MemorySpace.DDR, call.type.memory_space
    tile = call.args[0].type if call.args else None
    if not isinstance(tile, TileType) or tile.memory_space is None:
        return None
    if call.op == "tile.store":
        return tile.memory_space, MemorySpace.DDR
    if call.op == "tile.move":
        return tile.memory_space, call.attrs["target_memory"]
    return None


class HostFrame(Frame):
    """The Orchestration function on the host: creates GM tensors and submits kernel calls as tasks.

    A ``call`` does not wait for its task: the host goes on, and the chip's scheduler starts the task
    when its dependencies are done. ``call.attrs["task"]`` binds the task to a name that later
    ``deps`` name; the iterations of a ``pl.parallel`` loop are recorded so that their tasks take no
    edges from each other. Reading a tensor (``pl.read``) waits for the tasks that write it.
    """

    def __init__(self, fn: Function, args: Sequence[Any], chip: Chip):
        super().__init__(fn, args)
        self.chip = chip
        self.parallel: tuple[tuple[int, int], ...] = ()  # (loop instance, iteration), outermost first
        self._loops = itertools.count()

    def _exec_for(self, loop: For) -> Generator[Event, None, tuple[Any, ...] | None]:
        if loop.kind is not LoopKind.parallel:
            return (yield from super()._exec_for(loop))
        instance, outer = next(self._loops), self.parallel
        try:
            for i in (yield from self._loop_range(loop)):
                self.env[loop.var.name] = i
                self.parallel = (*outer, (instance, i))
                returned = yield from self._exec_body(loop.body)
                if returned is not None:
                    return returned
        finally:
            self.parallel = outer
        return None

    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == "call":
            return (yield from self._submit(call, args))
        if call.op == "scalar.read":
            yield from self.chip.wait_for_writers(args[0], f"the tasks writing {_name(call.args[0])}", call)
        if call.op == "tensor.create" or call.op.startswith("scalar."):
            return self._semantics(call)(call, args)
        raise self._error(
            f"{call.op} runs on a core but sits in the orchestration function",
            call,
            "run the pass pipeline: it outlines every scope into a kernel",
        )

    def _submit(self, call: Call, args: tuple[Any, ...]) -> Steps:
        declared = [self._task(name, call) for name in call.attrs.get("deps", ())]
        task = yield from self.chip.submit(call, args, self.parallel, declared)
        if "task" in call.attrs:
            self.env[call.attrs["task"]] = task
        return _call_result(returned_args(self.chip.program, task.kernel, args))

    def _task(self, name: str, call: Call) -> Task:
        value = self.env.get(name)
        if not isinstance(value, Task):
            raise self._error(f"deps= names {name}, which is not a task submitted earlier", call)
        return value


def returned_args(program: Program, kernel: Function, args: Sequence[Any]) -> tuple[Any, ...]:
    """The arguments a kernel call evaluates to: those passed for the parameters its ``Return``
    names (for a Group kernel, its AIC kernel's)."""
    if kernel.kind is FunctionKind.Group:
        (aic, aic_args), _ = group_members(program, kernel, args)
        return returned_args(program, aic, aic_args)
    ret = next((s for s in kernel.body if isinstance(s, Return)), None)
    if ret is None:
        return ()
    by_name = {p.var.name: value for p, value in zip(kernel.params, args, strict=True)}
    return tuple(by_name[v.name] for v in ret.values if isinstance(v, Var) and v.name in by_name)


def _name(expr: Expr) -> str:
    return expr.name if isinstance(expr, Var) else "the tensor"


def _call_result(returned: tuple[Any, ...]) -> Any:
    """What a ``call`` evaluates to: the kernel's single returned value, a tuple, or None."""
    if not returned:
        return None
    return returned[0] if len(returned) == 1 else returned
