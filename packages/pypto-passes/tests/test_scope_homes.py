"""Tensor values inside a scope across what splits its tensor code (OutlineScopes' homes and
ConvertTensorToTileOps): ``tensor.full`` lowered by blocks, index arithmetic inside a region, a
value read after a loop, a tensor leaving an if, an accumulator read from global memory, homes
read and written on the vector lanes."""

import passes_irbuild as irbuild

from pypto.ir import (
    INDEX,
    Assign,
    Call,
    Const,
    DataType,
    Direction,
    Eval,
    For,
    If,
    MemorySpace,
    Param,
    ScalarType,
    ScopeStmt,
    Var,
    make_call,
)
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.passes import lower


def calls(fn) -> list[Call]:
    return [
        e for s in walk_stmts(fn.body) for x in stmt_exprs(s) for e in walk_expr(x) if isinstance(e, Call)
    ]


def ops(fn) -> list[str]:
    return [c.op for c in calls(fn)]


def fill(name: str, shape: list[int], value: float = 0.0) -> Assign:
    return irbuild.assign(
        name, "tensor.full", Const(value, ScalarType(DataType.FP32)), shape=tuple(shape), dtype=DataType.FP32
    )


def one_scope(body, *params: Param, name: str = "k"):
    return irbuild.program("main", list(params), [ScopeStmt(tuple(body), name_hint=name)])


def test_a_tensor_fill_becomes_a_tile_fill_per_row_block_made_before_the_loop():
    out = irbuild.tensor("out", [512, 128])
    filled = fill("z", [512, 128], 2.0)
    x = irbuild.tensor("x", [512, 128])
    total = irbuild.assign("t", "tensor.add", x, filled.target)
    program = one_scope(
        [filled, total, irbuild.write(out, total.target)], Param(x), Param(out, Direction.Out)
    )
    kernel = lower(program, irbuild.TARGET).function("k")
    assert "tensor.full" not in ops(kernel)
    (made,) = [c for c in calls(kernel) if c.op == "tile.full"]
    loop = next(s for s in walk_stmts(kernel.body) if isinstance(s, For))
    assert made.attrs["shape"] == (loop.step.value, 128)  # one block of rows
    assert not any(isinstance(s, Assign) and s.value is made for s in walk_stmts(loop.body))


def test_index_arithmetic_between_tensor_statements_stays_in_their_region():
    x, out = irbuild.tensor("x", [64, 32]), irbuild.tensor("out", [64, 32])
    n = Var("n", INDEX)
    e = irbuild.assign("e", "tensor.exp", x)
    row = Assign(Var("row", INDEX), make_call("scalar.mul", (n, Const(0, INDEX))))
    store = Eval(make_call("tensor.assemble", (out, e.target, irbuild.idx(row.target, 0))))
    program = one_scope([e, row, store], Param(x), Param(n), Param(out, Direction.Out))
    kernel = lower(program, irbuild.TARGET).function("k")
    assert {"tile.exp", "tile.store"} <= set(ops(kernel))  # e was not left behind by its region


def test_a_value_read_inside_a_later_loop_is_kept_in_a_home_the_lanes_read():
    x, out = irbuild.tensor("x", [16, 128]), irbuild.tensor("out", [16, 128])
    total = irbuild.assign("total", "tensor.row_sum", x)
    i = Var("i", INDEX)
    scaled = irbuild.assign("scaled", "tensor.row_expand_mul", x, total.target)
    loop = For(
        i, Const(0, INDEX), Const(2, INDEX), Const(1, INDEX), (scaled, irbuild.write(out, scaled.target))
    )
    program = one_scope([total, loop], Param(x), Param(out, Direction.Out))
    lowered = lower(program, irbuild.TARGET)
    kernel = lowered.function("k")
    (home,) = kernel.attrs["homes"]
    assert home.startswith("total")
    stores = [c for c in calls(kernel) if c.op == "tile.store" and c.args[2].name == home]
    loads = [c for c in calls(kernel) if c.op == "tile.load" and c.args[0].name == home]
    assert stores and loads and all(c.attrs["target_memory"] is MemorySpace.Vec for c in loads)
    assert "tensor.create" in ops(lowered.function("main"))  # the orchestration allocates it


def test_a_tensor_leaving_an_if_is_written_to_a_home_by_each_arm():
    x, out = irbuild.tensor("x", [16, 128]), irbuild.tensor("out", [16, 128])
    flag = Var("flag", ScalarType(DataType.INT32))
    then = irbuild.assign("r1", "tensor.exp", x)
    other = irbuild.assign("r2", "tensor.mul", x, x)
    r = Var("r", then.target.type)
    branch = If(flag, (then,), (other,), None, (then.target,), (other.target,), (r,))
    program = one_scope([branch, irbuild.write(out, r)], Param(x), Param(flag), Param(out, Direction.Out))
    kernel = lower(program, irbuild.TARGET).function("k")
    (lowered_if,) = [s for s in walk_stmts(kernel.body) if isinstance(s, If)]
    assert lowered_if.results == ()
    for arm in (lowered_if.then_body, lowered_if.else_body):
        assert any(isinstance(s, Eval) and s.value.op == "tile.store" for s in walk_stmts(arm))


def test_a_matmul_accumulated_into_global_memory_is_added_on_the_vector_lanes():
    a, b = irbuild.tensor("a", [16, 128], irbuild.FP16), irbuild.tensor("b", [128, 128], irbuild.FP16)
    acc, out = irbuild.tensor("acc", [16, 128]), irbuild.tensor("out", [16, 128])
    step = irbuild.assign("next", "tensor.matmul_acc", acc, a, b)
    program = one_scope(
        [step, irbuild.write(out, step.target)], Param(a), Param(b), Param(acc), Param(out, Direction.Out)
    )
    lowered = lower(program, irbuild.TARGET)
    cube, lanes = ops(lowered.function("k_aic")), ops(lowered.function("k_aiv"))
    assert "tile.matmul" in cube and "tile.matmul_acc" not in cube
    assert "tile.add" in lanes
