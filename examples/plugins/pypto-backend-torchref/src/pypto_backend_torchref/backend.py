"""The ``torchref`` backend: a lowered program run op by op with plain torch, no timing.

Kernel cores are coroutines (generators) that yield while a ``tpop`` finds its pipe empty; a
launch steps them in turn until all return. Pipes are unbounded queues, so pushes never wait.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    MemorySpace,
    MemorySpec,
    Program,
    Return,
    RunReport,
    SplitMode,
    Stmt,
    Target,
    TaskRecord,
    TupleExpr,
    Var,
    VerificationError,
)
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import split_axis, split_shape
from pypto_backend_torchref.ops import OPS, torch_dtype

Mem = MemorySpace
# The a2a3 chip's sizes, so that a program lowers for torchref exactly as for a2a3sim.
TORCHREF_TARGET = Target(
    name="a2a3",
    core_groups=24,
    aic_per_group=1,
    aiv_per_group=2,
    clock_mhz=1850,
    memory={
        Mem.Vec: MemorySpec(196608, 188416),
        Mem.Mat: MemorySpec(524288, 524288),
        Mem.Left: MemorySpec(65536, 65536),
        Mem.Right: MemorySpec(65536, 65536),
        Mem.Acc: MemorySpec(131072, 131072),
        Mem.Bias: MemorySpec(1024, 1024),
    },
    data_paths=frozenset(
        {
            (Mem.DDR, Mem.Vec),
            (Mem.DDR, Mem.Mat),
            (Mem.Vec, Mem.DDR),
            (Mem.Mat, Mem.Left),
            (Mem.Mat, Mem.Right),
            (Mem.Mat, Mem.Bias),
            (Mem.Acc, Mem.Mat),
            (Mem.Acc, Mem.DDR),
        }
    ),
)

Steps = Generator[None, None, Any]  # a core's body: yields while it waits for a pipe


class _Returned(Exception):
    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values


@dataclass
class _Pipes:
    """One launch's queues: cube -> each lane, and lane shares -> cube, one dict per push.

    ``lanes`` are the AIV lanes that run; ``moves`` counts pushes and pops, so a round of the
    cores that moved nothing and finished nothing is a deadlock.
    """

    lanes: tuple[int, ...] = (0,)
    to_lane: dict[int, deque[torch.Tensor | None]] = field(default_factory=lambda: {0: deque(), 1: deque()})
    to_cube: deque[dict[int, torch.Tensor]] = field(default_factory=deque)
    pushed: dict[int, int] = field(default_factory=lambda: {0: 0, 1: 0})
    popped: int = 0
    moves: int = 0


@dataclass
class _Core:
    """One core's part in a launch: its lane (0 on the cube) and the launch's pipes."""

    lane: int
    pipes: _Pipes


def _share(value: torch.Tensor, mode: SplitMode, lane: int) -> torch.Tensor | None:
    """Lane ``lane``'s half along the split axis (lane 0 takes the ceiling half), zero-padded."""
    axis = split_axis(mode)
    if axis is None:
        return value if lane == 0 else None
    extent = value.shape[axis]
    half = -(-extent // 2)
    start = min(lane * half, extent)
    part = value.narrow(axis, start, min(half, extent - start))
    padded = torch.zeros(split_shape(tuple(value.shape), mode), dtype=value.dtype)
    padded[tuple(slice(0, n) for n in part.shape)] = part
    return padded


class Executor:
    """Runs one program's orchestration; each ``call`` is a task, run to completion."""

    def __init__(self, program: Program, on_task: Callable[[str], None] | None) -> None:
        self.program = program
        self.on_task = on_task
        self.tasks: list[TaskRecord] = []

    def run(self, entry: Function, args: Sequence[Any]) -> tuple[Any, ...]:
        env = {p.var: value for p, value in zip(entry.params, args, strict=True)}
        return _without_waiting(self._body(entry.body, env, None))

    def _launch(self, kernel: Function, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Run ``kernel`` as one task: a Group on the cube and its lanes, an AIV kernel split
        UP_DOWN / LEFT_RIGHT on both lanes, any other on one core."""
        if kernel.kind is FunctionKind.Group:
            (aic, aic_args), (aiv, aiv_args) = (self._member(stmt, kernel, args) for stmt in kernel.body)
            pipes = _Pipes(lanes=(0,) if _mirrors(aiv) else (0, 1))
            cores = [self._kernel(aic, aic_args, _Core(0, pipes))]
            cores += [self._kernel(aiv, aiv_args, _Core(lane, pipes)) for lane in pipes.lanes]
        elif kernel.kind is FunctionKind.AIV and split_axis(kernel.attrs.get("split")) is not None:
            pipes = _Pipes(lanes=(0, 1))
            cores = [self._kernel(kernel, args, _Core(lane, pipes)) for lane in pipes.lanes]
        elif kernel.kind in (FunctionKind.AIC, FunctionKind.AIV):
            pipes = _Pipes()
            cores = [self._kernel(kernel, args, _Core(0, pipes))]
        else:
            raise VerificationError(f"torchref cannot launch {kernel.name}, a {kernel.kind.value} function")
        results = _interleave(kernel.name, cores, pipes)
        self.tasks.append(TaskRecord(kernel.name, 0, 0, 0))
        if self.on_task is not None:
            self.on_task(kernel.name)
        return results

    def _member(self, stmt: Stmt, group: Function, args: tuple[Any, ...]) -> tuple[Function, tuple[Any, ...]]:
        """The kernel a Group's statement calls, and its arguments."""
        if not (isinstance(stmt, Eval) and isinstance(stmt.value, Call) and stmt.value.op == "call"):
            raise VerificationError(f"Group kernel {group.name} may only call its kernels", stmt.span)
        env = {p.var: value for p, value in zip(group.params, args, strict=True)}
        values = tuple(_without_waiting(self._eval(arg, env, None)) for arg in stmt.value.args)
        return self.program.function(stmt.value.attrs["callee"]), values

    def _kernel(self, kernel: Function, args: tuple[Any, ...], core: _Core) -> Steps:
        env = {p.var: value for p, value in zip(kernel.params, args, strict=True)}
        return self._body(kernel.body, env, core)

    def _body(self, body: tuple[Stmt, ...], env: dict[Var, Any], core: _Core | None) -> Steps:
        try:
            for stmt in body:
                yield from self._stmt(stmt, env, core)
        except _Returned as returned:
            return returned.values
        return ()

    def _stmt(self, stmt: Stmt, env: dict[Var, Any], core: _Core | None) -> Steps:
        if isinstance(stmt, Assign):
            env[stmt.target] = yield from self._eval(stmt.value, env, core)
        elif isinstance(stmt, Eval):
            yield from self._eval(stmt.value, env, core)
        elif isinstance(stmt, For):
            bounds = yield from self._all((stmt.start, stmt.stop, stmt.step), env, core)
            for i in range(*bounds):
                env[stmt.var] = i
                for inner in stmt.body:
                    yield from self._stmt(inner, env, core)
        elif isinstance(stmt, If):
            taken = stmt.then_body if (yield from self._eval(stmt.cond, env, core)) else stmt.else_body
            for inner in taken:
                yield from self._stmt(inner, env, core)
        elif isinstance(stmt, Return):
            raise _Returned((yield from self._all(stmt.values, env, core)))
        else:
            raise VerificationError(f"torchref cannot run a {type(stmt).__name__} statement", stmt.span)

    def _all(self, exprs: Sequence[Expr], env: dict[Var, Any], core: _Core | None) -> Steps:
        values = []
        for expr in exprs:
            values.append((yield from self._eval(expr, env, core)))
        return tuple(values)

    def _eval(self, expr: Expr, env: dict[Var, Any], core: _Core | None) -> Steps:
        if isinstance(expr, Var):
            return env[expr]
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, TupleExpr):
            return (yield from self._all(expr.elements, env, core))
        if not isinstance(expr, Call):
            raise VerificationError(f"torchref cannot evaluate a {type(expr).__name__}", expr.span)
        args = yield from self._all(expr.args, env, core)
        if expr.op == "call":
            return self._launch(self.program.function(expr.attrs["callee"]), args)
        if core is not None and expr.op in _CORE_OPS:
            return (yield from _CORE_OPS[expr.op](expr, args, core))
        if expr.op not in OPS:
            raise VerificationError(f"torchref does not implement {expr.op}", expr.span)
        return OPS[expr.op](expr, args)


def _without_waiting(steps: Steps) -> Any:
    """Run a coroutine that has no pipe to wait on (the orchestration, a Group's arguments)."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    raise VerificationError("torchref: a pipe op ran outside a kernel")


def _interleave(name: str, cores: list[Steps], pipes: _Pipes) -> Any:
    """Step every core until all return; the first core's result is the launch's."""
    results: dict[int, Any] = {}
    while len(results) < len(cores):
        before = (len(results), pipes.moves)
        for index, core in enumerate(cores):
            if index not in results:
                try:
                    next(core)
                except StopIteration as done:
                    results[index] = done.value
        if (len(results), pipes.moves) == before and len(results) < len(cores):
            raise VerificationError(f"torchref: every running core of {name} waits on an empty pipe")
    return results[0]


def _mirrors(aiv: Function) -> bool:
    """Lane 1 only mirrors lane 0 (so it need not run) when every pipe op of the AIV kernel is
    split NONE and no op asks for the lane."""
    calls = [
        e for s in walk_stmts(aiv.body) for r in stmt_exprs(s) for e in walk_expr(r) if isinstance(e, Call)
    ]
    modes = [
        c.attrs.get("split") or SplitMode.NONE for c in calls if c.op in ("tpush_to_aic", "tpop_from_aic")
    ]
    asks = any(c.op == "get_subblock_idx" for c in calls)
    return bool(modes) and all(m is SplitMode.NONE for m in modes) and not asks


# ---------------------------------------------------------------- ops that need the core


def _push_to_aiv(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
    mode = call.attrs.get("split") or SplitMode.NONE
    for lane in core.pipes.lanes:
        core.pipes.to_lane[lane].append(_share(args[0], mode, lane))
    core.pipes.moves += 1
    return None
    yield  # a generator that never waits


def _pop_from_aic(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
    queue = core.pipes.to_lane[core.lane]
    while not queue:
        yield
    core.pipes.moves += 1
    return queue.popleft()


def _push_to_aic(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
    pipes = core.pipes
    index = pipes.pushed[core.lane] - pipes.popped
    pipes.pushed[core.lane] += 1
    while len(pipes.to_cube) <= index:
        pipes.to_cube.append({})
    pipes.to_cube[index][core.lane] = args[0]
    pipes.moves += 1
    return None
    yield  # a generator that never waits


def _pop_from_aiv(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
    pipes = core.pipes
    while not pipes.to_cube or len(pipes.to_cube[0]) < len(pipes.lanes):
        yield
    shares = pipes.to_cube.popleft()
    pipes.popped += 1
    pipes.moves += 1
    axis = split_axis(call.attrs.get("split") or SplitMode.NONE)
    whole = shares[0] if axis is None else torch.cat([shares[lane] for lane in sorted(shares)], dim=axis)
    return whole.to(torch_dtype(call.type.dtype))


def _constant(value: int | None) -> Callable[[Call, tuple[Any, ...], _Core], Steps]:
    def op(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
        return value
        yield  # a generator that never waits

    return op


def _lane(call: Call, args: tuple[Any, ...], core: _Core) -> Steps:
    return core.lane
    yield  # a generator that never waits


_CORE_OPS: dict[str, Callable[[Call, tuple[Any, ...], _Core], Steps]] = {
    "tpush_to_aiv": _push_to_aiv,
    "tpop_from_aic": _pop_from_aic,
    "tpush_to_aic": _push_to_aic,
    "tpop_from_aiv": _pop_from_aiv,
    "tfree_to_aic": _constant(None),
    "tfree_to_aiv": _constant(None),
    "get_subblock_idx": _lane,
    "get_block_idx": _constant(0),
    "get_block_num": _constant(1),
}


class TorchRefBackend:
    """Runs lowered programs with plain torch: the numbers only, no modeled time.

    ``TorchRefBackend().run(program, [a, b, out], {})`` writes ``out`` in place.
    """

    name = "torchref"
    target = TORCHREF_TARGET

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry on ``args``; ``options["on_task"]`` hears of each finished task."""
        executor = Executor(program, options.get("on_task"))
        outputs = executor.run(program.entry_function, args)
        return RunReport(
            self.name, self.target.clock_mhz, total_cycles=0, tasks=executor.tasks, outputs=outputs
        )
