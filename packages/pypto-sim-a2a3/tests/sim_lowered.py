"""Building lowered programs (contract 2 of docs/ir.md) by hand, for the simulator's tests.

``FunctionBuilder`` appends statements; every tile-typed assignment gets a bump allocation in its
memory space unless the test places it with ``build(at={"tile": offset})``. A popped tile lives in
its pipe slot and gets none; ``build(reserve={Mem.Vec: n})`` keeps the bottom ``n`` bytes for a ring.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from pypto.ir import (
    INDEX,
    UNIT,
    Allocation,
    Assign,
    Call,
    Const,
    DataType,
    Direction,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    LoopKind,
    MemoryPlan,
    MemorySpace,
    Param,
    Program,
    Reservation,
    Return,
    RunReport,
    ScalarType,
    SourceSpan,
    Stmt,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    Var,
    get_op,
    make_call,
)
from pypto.ir.nodes import walk_stmts
from pypto_sim_a2a3 import A2A3SimBackend

FP32 = DataType.FP32
FP16 = DataType.FP16
INT32 = DataType.INT32
Mem = MemorySpace
ALIGN = 32


def tensor_t(shape: Sequence[int], dtype: DataType = FP32) -> TensorType:
    return TensorType(tuple(shape), dtype)


def tile_t(shape: Sequence[int], dtype: DataType = FP32, space: MemorySpace = Mem.Vec) -> TileType:
    return TileType(tuple(shape), dtype, space)


def expr(value: Any) -> Expr:
    """Ints become INDEX constants, floats FP32 constants, lists offset tuples; Exprs stay."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Const(value, ScalarType(DataType.BOOL))
    if isinstance(value, int):
        return Const(value, INDEX)
    if isinstance(value, float):
        return Const(value, ScalarType(FP32))
    if isinstance(value, (list, tuple)):
        elements = tuple(expr(v) for v in value)
        return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))
    raise TypeError(f"cannot make an expression of {value!r}")


@dataclass
class CarriedLoop:
    """The loop variable, iter_args, yields and (after the loop) results of a carried loop."""

    var: Var
    iter_args: tuple[Var, ...]
    yields: list[Any] = field(default_factory=list)
    results: tuple[Var, ...] = ()


@dataclass
class FunctionBuilder:
    """Appends statements to one function; ``build()`` attaches a memory plan."""

    name: str
    kind: FunctionKind
    params: list[Param] = field(default_factory=list)
    _bodies: list[list[Stmt]] = field(default_factory=lambda: [[]])
    _line: int = 0

    def span(self) -> SourceSpan:
        self._line += 1
        return SourceSpan(f"{self.name}.py", self._line)

    def param(self, name: str, type: Type, direction: Direction = Direction.In) -> Var:
        var = Var(name, type, self.span())
        self.params.append(Param(var, direction))
        return var

    def op(self, name: str, op: str, *args: Any, **attrs: Any) -> Var:
        """``name = op(*args, **attrs)``."""
        span = self.span()
        call = make_call(op, [expr(a) for a in args], attrs, span)
        var = Var(name, call.type, span)
        self._emit(Assign(var, call, span))
        return var

    def do(self, op: str, *args: Any, **attrs: Any) -> Call:
        """``op(*args, **attrs)`` evaluated for its effect."""
        span = self.span()
        call = make_call(op, [expr(a) for a in args], attrs, span)
        self._emit(Eval(call, span))
        return call

    def call(
        self, callee: str, *args: Any, name: str | None = None, type: Type = UNIT, **attrs: Any
    ) -> Var | None:
        """A kernel launch from the orchestration (``attrs``: its task attrs, e.g. ``deps``);
        assigned to ``name`` if given."""
        span = self.span()
        call = make_call("call", [expr(a) for a in args], {"callee": callee, **attrs}, span, type=type)
        if name is None:
            self._emit(Eval(call, span))
            return None
        var = Var(name, type, span)
        self._emit(Assign(var, call, span))
        return var

    def scalar(self, op: str, lhs: Any, rhs: Any) -> Call:
        """A scalar expression such as ``i * 32`` to nest in offsets."""
        return make_call(op, [expr(lhs), expr(rhs)], {}, self.span())

    @contextmanager
    def loop(
        self, name: str, start: Any, stop: Any, step: Any = 1, kind: LoopKind = LoopKind.range
    ) -> Iterator[Var]:
        span = self.span()
        var = Var(name, INDEX, span)
        self._bodies.append([])
        yield var
        body = tuple(self._bodies.pop())
        self._emit(For(var, expr(start), expr(stop), expr(step), body, kind, span=span))

    @contextmanager
    def carried_loop(
        self, name: str, start: Any, stop: Any, inits: Mapping[str, Any]
    ) -> Iterator[CarriedLoop]:
        """A ``pl.range(start, stop)`` loop carrying one value per ``inits`` entry (name -> init);
        the body appends its yields to ``loop.yields``; ``loop.results`` are set after the block."""
        span = self.span()
        init_values = tuple(expr(v) for v in inits.values())
        iter_args = tuple(Var(n, v.type, span) for n, v in zip(inits, init_values, strict=True))
        loop = CarriedLoop(Var(name, INDEX, span), iter_args)
        self._bodies.append([])
        yield loop
        body = tuple(self._bodies.pop())
        loop.results = tuple(Var(f"{v.name}_out", v.type, span) for v in iter_args)
        stmt = For(loop.var, expr(start), expr(stop), expr(1), body, LoopKind.range, span)
        carried = {"iter_args": iter_args, "init_values": init_values, "results": loop.results}
        self._emit(replace(stmt, yields=tuple(expr(y) for y in loop.yields), **carried))

    def ret(self, *values: Any) -> None:
        self._emit(Return(tuple(expr(v) for v in values), self.span()))

    def build(
        self,
        at: dict[str, int] | None = None,
        plan: MemoryPlan | None = None,
        reserve: Mapping[MemorySpace, int] | None = None,
    ) -> Function:
        """The function, with ``plan`` or a bump-allocated plan (``at`` pins chosen tiles' offsets)."""
        body = tuple(self._bodies[0])
        attrs = {"memory_plan": plan or bump_plan(body, at or {}, reserve or {})}
        return Function(
            self.name, tuple(self.params), body, self.kind, SourceSpan(f"{self.name}.py", 0), attrs
        )

    def _emit(self, stmt: Stmt) -> None:
        self._bodies[-1].append(stmt)


def bump_plan(
    body: tuple[Stmt, ...], at: dict[str, int], reserve: Mapping[MemorySpace, int] | None = None
) -> MemoryPlan:
    """Every tile assignment at the next free aligned offset of its space (or where ``at`` says),
    above the ``reserve``d bottom of each space; popped tiles live in their ring slot instead."""
    top: dict[MemorySpace, int] = dict(reserve or {})
    allocations = {}
    for var, aliases in _placed_tiles(body):
        tile = var.type
        assert isinstance(tile, TileType) and tile.memory_space is not None
        offset = at.get(var.name, top.get(tile.memory_space, 0))
        size = -(-tile.nbytes // ALIGN) * ALIGN
        top[tile.memory_space] = max(top.get(tile.memory_space, 0), offset + size)
        for v in (var, *aliases):
            allocations[v.name] = Allocation(v.name, tile.memory_space, offset, size)
    reservations = tuple(
        Reservation(space, size, "cross-core pipe ring") for space, size in (reserve or {}).items()
    )
    return MemoryPlan(allocations, dict(top), reservations)


def _placed_tiles(body: tuple[Stmt, ...]) -> Iterator[tuple[Var, tuple[Var, ...]]]:
    """Every tile that needs a buffer, with the names sharing it: assigned tiles (popped ones
    live in their ring slot) and loop-carried tiles (their loop's result names the same buffer)."""
    for stmt in walk_stmts(body):
        if isinstance(stmt, For):
            yield from (
                (a, (r,))
                for a, r in zip(stmt.iter_args, stmt.results, strict=True)
                if isinstance(a.type, TileType)
            )
        if not (isinstance(stmt, Assign) and isinstance(stmt.target.type, TileType)):
            continue
        if isinstance(stmt.value, Call) and get_op(stmt.value.op).in_pipe_slot:
            continue
        yield stmt.target, ()


def program(entry: Function, *kernels: Function) -> Program:
    return Program(entry.name, (entry, *kernels), entry.name)


def launcher(kernel: Function) -> Function:
    """An orchestration taking the kernel's parameters and calling it once."""
    b = FunctionBuilder(f"{kernel.name}_host", FunctionKind.Orchestration)
    args = [b.param(p.var.name, p.var.type, p.direction) for p in kernel.params]
    b.call(kernel.name, *args)
    return b.build()


def single(kernel: Function) -> Program:
    """A program whose entry calls ``kernel`` once with the entry's own arguments."""
    return program(launcher(kernel), kernel)


def run(prog: Program, *args: Any) -> RunReport:
    return A2A3SimBackend().run(prog, list(args), {})


# ---------------------------------------------------------------- kernels several tests use


def vector_binary_kernel(
    op: str, shape: Sequence[int] = (64, 128), dtype: DataType = FP32, name: str | None = None
) -> Function:
    """AIV kernel: ``out = op(a, b)`` over one tile."""
    b = FunctionBuilder(name or f"vec_{op.split('.')[1]}", FunctionKind.AIV)
    a_gm = b.param("a", tensor_t(shape, dtype))
    b_gm = b.param("b", tensor_t(shape, dtype))
    out = b.param("out", tensor_t(shape, dtype), Direction.Out)
    x = b.op("x", "tile.load", a_gm, [0, 0], shape=shape, target_memory=Mem.Vec)
    y = b.op("y", "tile.load", b_gm, [0, 0], shape=shape, target_memory=Mem.Vec)
    z = b.op("z", op, x, y)
    b.do("tile.store", z, [0, 0], out)
    return b.build()


def matmul_kernel(
    m: int, k: int, n: int, dtype: DataType = FP32, out_dtype: DataType = FP32, name: str = "mm"
) -> Function:
    """AIC kernel: load A and B to Mat, move to Left/Right, matmul into Acc, store to ``c``."""
    b = FunctionBuilder(name, FunctionKind.AIC)
    a_gm = b.param("a", tensor_t((m, k), dtype))
    b_gm = b.param("b", tensor_t((k, n), dtype))
    c_gm = b.param("c", tensor_t((m, n), out_dtype), Direction.Out)
    a_l1 = b.op("a_l1", "tile.load", a_gm, [0, 0], shape=(m, k), target_memory=Mem.Mat)
    b_l1 = b.op("b_l1", "tile.load", b_gm, [0, 0], shape=(k, n), target_memory=Mem.Mat)
    a_l0 = b.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
    b_l0 = b.op("b_l0", "tile.move", b_l1, target_memory=Mem.Right)
    acc = b.op("acc", "tile.matmul", a_l0, b_l0, out_dtype=out_dtype)
    b.do("tile.store", acc, [0, 0], c_gm)
    return b.build()


def rand(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(dtype)
