"""Interpreters of lowered functions, written as coroutines for the scheduler.

A :class:`Frame` walks one function body (``Assign``, ``Eval``, ``For``, ``Return``) and evaluates
expressions; its ``run()`` is a generator that yields scheduler events and returns the values of
the function's ``Return``. :class:`KernelFrame` runs an AIC/AIV kernel on one core: tile values
live in the core's buffers and every op yields its modeled cycles. :class:`HostFrame` runs the
Orchestration function: ``call`` launches a kernel as a task on the chip.
"""

from __future__ import annotations

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
    MemorySpace,
    Return,
    Stmt,
    TileType,
    TupleExpr,
    Unit,
    Var,
    VerificationError,
    get_op,
)
from pypto_sim_a2a3.cost import CostModel
from pypto_sim_a2a3.scheduler import Advance, Event
from pypto_sim_a2a3.semantics import SEMANTICS, OpImpl

if TYPE_CHECKING:
    from pypto_sim_a2a3.chip import Chip, Core

Steps = Generator[Event, None, Any]


class Frame:
    """The variables of one running function and the walk over its body."""

    def __init__(self, fn: Function, args: Sequence[Any]):
        self.fn = fn
        self.env: dict[str, Any] = {p.var.name: value for p, value in zip(fn.params, args, strict=True)}

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
        elif isinstance(stmt, Return):
            return (yield from self._eval_all(stmt.values))
        else:
            kind = self.fn.kind.value
            raise self._error(f"{type(stmt).__name__} is not allowed in a lowered {kind} function", stmt)
        return None

    def _exec_for(self, loop: For) -> Generator[Event, None, tuple[Any, ...] | None]:
        start = yield from self._eval(loop.start)
        stop = yield from self._eval(loop.stop)
        step = yield from self._eval(loop.step)
        if step == 0:
            raise self._error(f"loop over {loop.var.name} has step 0", loop)
        for i in range(int(start), int(stop), int(step)):
            self.env[loop.var.name] = i
            returned = yield from self._exec_body(loop.body)
            if returned is not None:
                return returned
        return None

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

    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        """Execute one op on this frame's side (a core or the host)."""
        raise NotImplementedError

    def _semantics(self, call: Call) -> OpImpl:
        if call.op not in SEMANTICS:
            raise self._error(f"a2a3sim has no semantics for op {call.op!r}", call)
        return SEMANTICS[call.op]

    def _error(self, message: str, node: Expr | Stmt, hint: str | None = None) -> VerificationError:
        return VerificationError(f"in {self.fn.name}: {message}", node.span, hint)


class KernelFrame(Frame):
    """An AIC or AIV kernel running on one core; tiles live in ``core.memory``."""

    def __init__(self, fn: Function, args: Sequence[Any], core: Core, cost: CostModel):
        super().__init__(fn, args)
        self.core = core
        self.cost = cost

    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        unit = get_op(call.op).unit
        if unit not in (Unit.VECTOR, Unit.CUBE, Unit.MTE, Unit.SCALAR) or call.op.startswith("tensor."):
            raise self._error(
                f"{call.op} cannot run inside a kernel",
                call,
                "a lowered kernel holds only tile.* ops, scalar math and loops",
            )
        self._check_route(call)
        value = self._semantics(call)(call, args)
        cost = self.cost.op_cost(call)
        yield Advance(cost.unit, cost.cycles)
        return value

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

    def _bind(self, stmt: Assign, value: Any) -> None:
        var = stmt.target
        if not isinstance(var.type, TileType):
            super()._bind(stmt, value)
            return
        assert self.core.memory is not None
        dest = self.core.memory.place(self.fn, var, self.core.name, stmt.span)
        if isinstance(value, torch.Tensor) and self.core.memory.shares_storage(value):
            value = value.clone()  # a view of a buffer may overlap the destination
        dest.copy_(value)
        self.env[var.name] = dest


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
    """The Orchestration function on the host: creates GM tensors and launches kernels."""

    def __init__(self, fn: Function, args: Sequence[Any], chip: Chip):
        super().__init__(fn, args)
        self.chip = chip

    def _apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if call.op == "call":
            returned = yield from self.chip.launch(call, args)
            return _call_result(returned)
        if call.op == "tensor.create" or call.op.startswith("scalar."):
            return self._semantics(call)(call, args)
        raise self._error(
            f"{call.op} runs on a core but sits in the orchestration function",
            call,
            "run the pass pipeline: it outlines every scope into a kernel",
        )


def _call_result(returned: tuple[Any, ...]) -> Any:
    """What a ``call`` evaluates to: the kernel's single returned value, a tuple, or None."""
    if not returned:
        return None
    return returned[0] if len(returned) == 1 else returned
