"""A kernel on one core of a launch, as a coroutine for the scheduler.

:class:`KernelFrame` is the shared walker of lowered functions (:class:`pypto.ir.walker.KernelWalker`:
frames, loops, ifs) with the simulated core's meaning of each op: tile values live in the core's
buffers (a popped tile in its pipe slot), every op yields its modeled cycles, pipe and system ops
go to :data:`~pypto_sim_a2a3.crosscore.LAUNCH_OPS`, the rest to the checked
:data:`~pypto_sim_a2a3.semantics.SEMANTICS`.
"""

from __future__ import annotations

import weakref
from collections.abc import Generator, Sequence
from typing import Any

import torch

from pypto.ir import Assign, Call, Function, MemorySpace, Stmt, TileType, Unit, Var, get_op
from pypto.ir.errors import at_line
from pypto.ir.launch import Seat
from pypto.ir.nodes import stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import op, tile, user_name
from pypto.ir.semantics import OpImpl
from pypto.ir.walker import KernelWalker
from pypto_sim_a2a3.coherence import GM_DATA_OPS
from pypto_sim_a2a3.cost import CostModel
from pypto_sim_a2a3.crosscore import LAUNCH_OPS, Popped
from pypto_sim_a2a3.errors import PipeError
from pypto_sim_a2a3.launch import CoreRole
from pypto_sim_a2a3.ring import TOKEN, Token
from pypto_sim_a2a3.scheduler import Event
from pypto_sim_a2a3.semantics import SEMANTICS

Steps = Generator[Event, None, Any]
PLATFORM = "a2a3sim"


class KernelFrame(KernelWalker):
    """An AIC or AIV kernel running on one core of a launch; tiles live in the core's memory."""

    def __init__(self, seat: Seat, args: Sequence[Any], role: CoreRole, cost: CostModel):
        site = role.launch.site
        super().__init__(seat, args, site.block, site.block_num)
        self.role = role
        self.core = role.core
        self.cost = cost
        self.last_gm_statement = _last_gm_statement_of(self.fn)

    def run(self) -> Steps:
        """Run the kernel; the core is *settled* (see :meth:`Launch.settle`) once the top-level
        statement holding its last GM access has finished, or at once if it touches no GM."""
        if self.last_gm_statement < 0:
            self.role.launch.settle(self.role)
        return (yield from super().run())

    def top_level_done(self, index: int) -> None:
        if index == self.last_gm_statement:
            self.role.launch.settle(self.role)

    def eval_call(self, call: Call) -> Steps:
        if call.op not in _FREE_OPS:
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
            free = f"pl.{freed.op}({arg.name})"
            raise PipeError(
                f"in {self.fn.name}: {user_name(call.op)} on {self.role.name} reads {arg.name} after "
                f"{free} at {at_line(freed.span)} gave its ring slot back to the producer, which may "
                "have overwritten it",
                call.span,
                f"free a popped tile after its last use: move {free} below this line",
            )

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        if self.role.mirror and _is_work(call):
            return _skipped(call, args)
        if call.op in LAUNCH_OPS:
            return (yield from LAUNCH_OPS[call.op](self.role, call, args, self.cost))
        unit = get_op(call.op).unit
        if unit not in _CORE_UNITS or call.op.startswith("tensor."):
            raise self.error(
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

    def _semantics(self, call: Call) -> OpImpl:
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
        route = _data_route(call)
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
        if not isinstance(var.type, TileType) or isinstance(value, Token):
            super().set_carried(var, value)
            return
        assert self.core.memory is not None
        dest = self.env.get(var.name)
        if dest is None:
            dest = self.core.memory.place(self.fn, var, self.core.name, var.span)
        if dest.data_ptr() != value.data_ptr() or dest.shape != value.shape:
            dest.copy_(value.clone() if self.core.memory.shares_storage(value) else value)
        self.env[var.name] = dest

    def bind(self, stmt: Assign, value: Any) -> None:
        var = stmt.target
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
        dest = self.core.memory.place(self.fn, var, self.core.name, stmt.span)
        if isinstance(value, torch.Tensor) and self.core.memory.shares_storage(value):
            value = value.clone()  # a view of a buffer may overlap the destination
        dest.copy_(value)
        self.env[var.name] = dest


_CORE_UNITS = (Unit.VECTOR, Unit.CUBE, Unit.MTE, Unit.SCALAR)
_FREE_OPS = (op.tfree_to_aic, op.tfree_to_aiv)
# The data-movement ops whose path the target must have (names resolved once: a hot path).
_LOAD, _STORE, _MOVE = tile.load, tile.store, tile.move


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


def _is_work(call: Call) -> bool:
    """Ops a mirroring lane skips: loads, stores, compute, and anything else that makes a tile."""
    spec = get_op(call.op)
    makes_tile = isinstance(call.type, TileType) and not spec.in_pipe_slot
    return spec.unit in (Unit.VECTOR, Unit.CUBE, Unit.MTE) or makes_tile


def _skipped(call: Call, args: tuple[Any, ...]) -> Any:
    """What a skipped op evaluates to on a mirroring lane: the tensor it writes, or a token."""
    writes = get_op(call.op).writes
    return args[writes[0]] if writes else TOKEN


def _data_route(call: Call) -> tuple[MemorySpace, MemorySpace] | None:
    """The (source, destination) spaces of a data-movement op, or None for other ops."""
    if call.op == _LOAD and isinstance(call.type, TileType) and call.type.memory_space:
        return MemorySpace.DDR, call.type.memory_space
    source = call.args[0].type if call.args else None
    if not isinstance(source, TileType) or source.memory_space is None:
        return None
    if call.op == _STORE:
        return source.memory_space, MemorySpace.DDR
    if call.op == _MOVE:
        return source.memory_space, call.attrs["target_memory"]
    return None
