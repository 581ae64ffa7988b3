"""Hand-built IR for pass tests (this package is tested without the pl front end)."""

from __future__ import annotations

from dataclasses import replace

from pypto.ir import (
    INDEX,
    Assign,
    Const,
    DataType,
    Direction,
    Eval,
    Expr,
    Function,
    FunctionKind,
    MemorySpace,
    Param,
    Program,
    Return,
    ScopeStmt,
    SplitMode,
    Stmt,
    TensorType,
    TupleExpr,
    TupleType,
    Var,
    make_call,
)
from pypto.ir.targets import get_target

FP16, FP32 = DataType.FP16, DataType.FP32
M = MemorySpace

# The a2a3 chip's data under a test name (messages that name the target say test-a2a3).
TARGET = replace(get_target("a2a3"), name="test-a2a3")


def tensor(name: str, shape: list[int], dtype: DataType = FP32) -> Var:
    return Var(name, TensorType(tuple(shape), dtype))


def idx(*values: int | Expr) -> TupleExpr:
    elements = tuple(v if isinstance(v, Expr) else Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))


def assign(name: str, op: str, *args: Expr, **attrs: object) -> Assign:
    value = make_call(op, args, attrs)
    return Assign(Var(name, value.type), value)


def write(dst: Var, value: Var) -> Eval:
    return Eval(make_call("tensor.assemble", (dst, value, idx(*([0] * len(dst.type.shape))))))


def program(name: str, params: list[Param], body: list[Stmt], *kernels: Function) -> Program:
    entry = Function(name, tuple(params), tuple(body), FunctionKind.Orchestration)
    return Program(name, (entry, *kernels), name)


def staged_program(m: int = 128) -> Program:
    """The seed's two-scope form: acc = a @ b in one scope, out = acc + bias in the next."""
    a, b = tensor("a", [m, 256], FP16), tensor("b", [256, 128], FP16)
    bias, out = tensor("bias", [m, 128]), tensor("out", [m, 128])
    mm = assign("acc", "tensor.matmul", a, b, out_dtype=FP32)
    add = assign("t", "tensor.add", mm.target, bias)
    scopes = [
        ScopeStmt((mm,), name_hint="cube_only"),
        ScopeStmt((add, write(out, add.target)), name_hint="vector_only"),
        Return((out,)),
    ]
    params = [Param(a), Param(b), Param(bias), Param(out, Direction.Out)]
    return program("staged", params, scopes)


def mixed_program(
    split: SplitMode | None = SplitMode.UP_DOWN, slot_num: int | None = None, m: int = 128
) -> Program:
    """The seed's Step 1 kernel: matmul and add in one scope."""
    a, b = tensor("a", [m, 256], FP16), tensor("b", [256, 128], FP16)
    bias, out = tensor("bias", [m, 128]), tensor("out", [m, 128])
    mm = assign("acc", "tensor.matmul", a, b, out_dtype=FP32)
    add = assign("t", "tensor.add", mm.target, bias)
    scope = ScopeStmt((mm, add, write(out, add.target)), name_hint="mixed", split=split, slot_num=slot_num)
    params = [Param(a), Param(b), Param(bias), Param(out, Direction.Out)]
    return program("mixed", params, [scope, Return((out,))])
