"""ConvertTensorToTileOps and the vector split on the tier-2 ops: row reductions and broadcasts tile
by rows, column reductions keep their region whole, broadcast vectors and matmul right operands
load once, slices of global memory are views, atomic writes accumulate, and an If keeps its
arms."""

import dataclasses

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    INDEX,
    AtomicType,
    Const,
    Direction,
    Eval,
    For,
    FunctionKind,
    If,
    MemorySpace,
    Param,
    ParseError,
    ScopeStmt,
    SourceSpan,
    SplitMode,
    TypeCheckError,
    Var,
    make_call,
)
from pypto.ir.nodes import Assign, walk_stmts
from pypto.passes import lower

FP16, FP32 = irbuild.FP16, irbuild.FP32


def lowered_kernel(body, params, name="k", split=None):
    scope = ScopeStmt(tuple(body), name_hint=name, split=split)
    return lower(irbuild.program("main", params, [scope]), irbuild.TARGET).function(name)


def ops(kernel):
    return [s.value.op for s in walk_stmts(kernel.body) if isinstance(s, (Assign, Eval))]


def loop_step(kernel):
    loops = [s for s in walk_stmts(kernel.body) if isinstance(s, For)]
    return loops[0].step.value if loops else None


def softmax_body(x, out):
    m = irbuild.assign("m", "tensor.row_max", x)
    shifted = irbuild.assign("s", "tensor.row_expand_sub", x, m.target)
    e = irbuild.assign("e", "tensor.exp", shifted.target)
    total = irbuild.assign("z", "tensor.row_sum", e.target)
    y = irbuild.assign("y", "tensor.row_expand_div", e.target, total.target)
    return [m, shifted, e, total, y, irbuild.write(out, y.target)]


def test_row_reductions_and_row_broadcasts_stream_by_rows_with_a_scratch_tile_per_reduction():
    x, out = irbuild.tensor("x", [512, 64]), irbuild.tensor("out", [512, 64])
    kernel = lowered_kernel(softmax_body(x, out), [Param(x), Param(out, Direction.Out)])
    assert loop_step(kernel) == 64  # 128 rows fit once, 64 twice
    reductions = [s for s in walk_stmts(kernel.body) if isinstance(s, Assign) and "row_" in s.value.op]
    row_max = next(s for s in reductions if s.value.op == "tile.row_max")
    assert row_max.target.type.shape == (64, 1)
    scratch = row_max.value.args[1]
    assert ops(kernel).count("tile.create") == 2 and scratch.type.shape == (64, 64)


def test_a_column_reduction_keeps_its_region_whole():
    x, out = irbuild.tensor("x", [256, 64]), irbuild.tensor("out", [1, 64])
    total = irbuild.assign("total", "tensor.col_sum", x)
    kernel = lowered_kernel([total, irbuild.write(out, total.target)], [Param(x), Param(out, Direction.Out)])
    assert loop_step(kernel) is None
    load = next(s for s in walk_stmts(kernel.body) if isinstance(s, Assign) and s.value.op == "tile.load")
    assert load.value.attrs["shape"] == (256, 64)


def test_a_reshape_of_whole_rows_streams_by_row_blocks():
    x, out = irbuild.tensor("x", [256, 64]), irbuild.tensor("out", [512, 32])
    flat = irbuild.assign("flat", "tensor.reshape", x, shape=(512, 32))
    kernel = lowered_kernel([flat, irbuild.write(out, flat.target)], [Param(x), Param(out, Direction.Out)])
    assert loop_step(kernel) == 128 and "tile.reshape" in ops(kernel)
    reshape = next(
        s for s in walk_stmts(kernel.body) if isinstance(s, Assign) and s.value.op == "tile.reshape"
    )
    assert reshape.target.type.shape == (256, 32)  # 128 rows of 64 are 256 rows of 32


def test_a_reshape_that_is_not_2d_keeps_its_region_whole():
    x, out = irbuild.tensor("x", [256, 64]), irbuild.tensor("out", [2, 128, 64])
    cube = irbuild.assign("cube", "tensor.reshape", x, shape=(2, 128, 64))
    kernel = lowered_kernel([cube, irbuild.write(out, cube.target)], [Param(x), Param(out, Direction.Out)])
    assert loop_step(kernel) is None and "tile.reshape" in ops(kernel)


def test_a_broadcast_column_vector_is_loaded_once_before_the_row_loop():
    x, g, out = irbuild.tensor("x", [512, 64]), irbuild.tensor("g", [1, 64]), irbuild.tensor("out", [512, 64])
    y = irbuild.assign("y", "tensor.col_expand_mul", x, g)
    params = [Param(x), Param(g), Param(out, Direction.Out)]
    kernel = lowered_kernel([y, irbuild.write(out, y.target)], params)
    first = kernel.body[0]
    assert isinstance(first, Assign) and first.value.op == "tile.load" and first.value.args[0] is g
    loop = next(s for s in kernel.body if isinstance(s, For))
    inside = [s.value.args[0].name for s in loop.body if isinstance(s, Assign) and s.value.op == "tile.load"]
    assert inside == ["x"]


def test_a_slice_of_global_memory_is_loaded_from_the_tensor_at_its_offsets():
    a, out = irbuild.tensor("a", [512, 256]), irbuild.tensor("out", [512, 128])
    k = Var("k", INDEX)
    view = irbuild.assign("view", "tensor.slice", a, irbuild.idx(0, k), shape=(512, 128))
    y = irbuild.assign("y", "tensor.exp", view.target)
    body = [view, y, irbuild.write(out, y.target)]
    loop = For(k, Const(0, INDEX), Const(256, INDEX), Const(128, INDEX), tuple(body))
    kernel = lowered_kernel([loop], [Param(a), Param(out, Direction.Out)])
    load = next(
        s.value for s in walk_stmts(kernel.body) if isinstance(s, Assign) and s.value.op == "tile.load"
    )
    assert load.args[0] is a and load.attrs["shape"] == (128, 128)
    row, col = load.args[1].elements
    assert isinstance(row, Var) and col.name == "k"


def test_a_slice_handed_to_a_tile_op_asks_for_the_tensor_and_offsets():
    a, out = irbuild.tensor("a", [64, 64]), irbuild.tensor("out", [64, 32])
    view = irbuild.assign("view", "tensor.slice", a, irbuild.idx(0, 32), shape=(64, 32))
    load = irbuild.assign(
        "t", "tile.load", view.target, irbuild.idx(0, 0), shape=(64, 32), target_memory=None
    )
    store = Eval(make_call("tile.store", (load.target, irbuild.idx(0, 0), out)))
    with pytest.raises(ParseError) as info:
        lowered_kernel([view, load, store], [Param(a), Param(out, Direction.Out)])
    assert info.value.message.startswith("a tensor slice (view) is a view that only tensor-level ops read")
    assert "pl.load(a, [0, k0], [rows, cols])" in info.value.hint


def test_matmul_acc_on_tensors_adds_into_the_matmuls_accumulator_tile():
    a, b = irbuild.tensor("a", [64, 64], FP16), irbuild.tensor("b", [64, 64], FP16)
    out = irbuild.tensor("out", [64, 64])
    views = [
        irbuild.assign("a0", "tensor.slice", a, irbuild.idx(0, 0), shape=(64, 32)),
        irbuild.assign("b0", "tensor.slice", b, irbuild.idx(0, 0), shape=(32, 64)),
        irbuild.assign("a1", "tensor.slice", a, irbuild.idx(0, 32), shape=(64, 32)),
        irbuild.assign("b1", "tensor.slice", b, irbuild.idx(32, 0), shape=(32, 64)),
    ]
    a0, b0, a1, b1 = (v.target for v in views)
    acc = irbuild.assign("acc", "tensor.matmul", a0, b0)
    acc2 = irbuild.assign("acc2", "tensor.matmul_acc", acc.target, a1, b1)
    body = [*views, acc, acc2, irbuild.write(out, acc2.target)]
    kernel = lowered_kernel(body, [Param(a), Param(b), Param(out, Direction.Out)])
    assert kernel.kind is FunctionKind.AIC
    mac = next(
        s for s in walk_stmts(kernel.body) if isinstance(s, Assign) and s.value.op == "tile.matmul_acc"
    )
    assert mac.value.args[0].name == "acc"
    offsets = [
        [e.value for e in s.value.args[1].elements]
        for s in walk_stmts(kernel.body)
        if isinstance(s, Assign) and s.value.op == "tile.load"
    ]
    assert offsets == [[0, 0], [0, 0], [0, 32], [32, 0]]


def test_an_atomic_assemble_becomes_an_atomic_store_and_the_output_is_read_too():
    x, out = irbuild.tensor("x", [64, 64]), irbuild.tensor("out", [64, 64])
    y = irbuild.assign("y", "tensor.exp", x)
    add = Eval(make_call("tensor.assemble", (out, y.target, irbuild.idx(0, 0)), {"atomic": AtomicType.Add}))
    scope = ScopeStmt((y, add), name_hint="k")
    program = lower(irbuild.program("main", [Param(x), Param(out, Direction.Out)], [scope]), irbuild.TARGET)
    kernel = program.function("k")
    store = next(s.value for s in walk_stmts(kernel.body) if isinstance(s, Eval))
    assert store.op == "tile.store_atomic" and store.attrs == {"atomic": AtomicType.Add}
    assert kernel.param("out").direction is Direction.InOut


def test_tensor_ops_in_an_if_arm_are_tiled_inside_the_arm():
    x, out = irbuild.tensor("x", [64, 64]), irbuild.tensor("out", [64, 64])
    flags = irbuild.tensor("flags", [4], irbuild.DataType.INT32)
    flag = make_call("scalar.read", (flags, irbuild.idx(0)))
    y = irbuild.assign("y", "tensor.exp", x)
    z = irbuild.assign("z", "tensor.neg", x)
    branch = If(
        make_call("scalar.gt", (flag, Const(0, flag.type))),
        (y, irbuild.write(out, y.target)),
        (z, irbuild.write(out, z.target)),
    )
    kernel = lowered_kernel([branch], [Param(x), Param(flags), Param(out, Direction.Out)])
    (lowered,) = kernel.body
    assert isinstance(lowered, If)
    assert [s.value.op for s in lowered.then_body] == ["tile.load", "tile.exp", "tile.store"]
    assert [s.value.op for s in lowered.else_body] == ["tile.load", "tile.neg", "tile.store"]


def test_a_scope_in_an_orchestration_if_is_outlined_and_called_in_the_arm():
    x, n, out = irbuild.tensor("x", [64, 64]), Var("n", INDEX), irbuild.tensor("out", [64, 64])
    y = irbuild.assign("y", "tensor.exp", x)
    scope = ScopeStmt((y, irbuild.write(out, y.target)), name_hint="k")
    branch = If(make_call("scalar.gt", (n, Const(0, INDEX))), (scope,))
    params = [Param(x), Param(n), Param(out, Direction.Out)]
    program = lower(irbuild.program("main", params, [branch]), irbuild.TARGET)
    (lowered,) = program.entry_function.body
    assert isinstance(lowered, If) and lowered.then_body[0].value.attrs["callee"] == "k"
    assert program.function("k").kind is FunctionKind.AIV


def mixed_with(op, split, shape=(64, 64)):
    """acc = a @ b on the cube, then ``op`` on the vector side, in one split scope."""
    a, b = irbuild.tensor("a", [shape[0], 64], FP16), irbuild.tensor("b", [64, shape[1]], FP16)
    mm = irbuild.assign("acc", "tensor.matmul", a, b, out_dtype=FP32)
    red = irbuild.assign("red", op, mm.target)
    out = irbuild.tensor("out", list(red.target.type.shape))
    scope = ScopeStmt((mm, red, irbuild.write(out, red.target)), name_hint="k", split=split)
    params = [Param(a), Param(b), Param(out, Direction.Out)]
    return irbuild.program("main", params, [scope])


@pytest.mark.parametrize(
    ("op", "split", "needs"),
    [
        ("tensor.row_sum", SplitMode.LEFT_RIGHT, "whole rows"),
        ("tensor.col_sum", SplitMode.UP_DOWN, "every row"),
    ],
)
def test_a_split_across_the_reduced_axis_is_rejected(op, split, needs):
    with pytest.raises(ParseError) as info:
        lower(mixed_with(op, split), irbuild.TARGET)
    assert info.value.message.startswith(
        "split rejected: the body mixes split and plain full-width vector ops"
    )
    assert f"needs {needs}, which pl.split(pl.SplitMode.{split.name}) halves" in info.value.message


def test_a_row_reduction_splits_up_down_across_the_lanes():
    program = lower(mixed_with("tensor.row_sum", SplitMode.UP_DOWN), irbuild.TARGET)
    aiv = program.function("k_aiv")
    reduction = next(
        s for s in walk_stmts(aiv.body) if isinstance(s, Assign) and s.value.op == "tile.row_sum"
    )
    assert reduction.target.type.shape == (32, 1)


SCOPE_LINE = SourceSpan("user.py", 12, 4, 80)


def _at_scope_line(program):
    """``program`` with its scope at SCOPE_LINE and every op it holds without a span, as ops the
    compiler makes are."""
    (scope,) = program.entry_function.body
    entry = dataclasses.replace(program.entry_function, body=(dataclasses.replace(scope, span=SCOPE_LINE),))
    return dataclasses.replace(program, functions=(entry,))


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (lambda: mixed_with("tensor.col_sum", SplitMode.UP_DOWN), "split rejected"),
        (lambda: mixed_with("tensor.relu", SplitMode.UP_DOWN, shape=(1, 64)), "cannot split tile 'acc'"),
    ],
)
def test_a_rejected_split_without_an_op_span_is_reported_at_the_scope_with_a_hint(program, message):
    with pytest.raises(ParseError) as info:
        lower(_at_scope_line(program()), irbuild.TARGET)
    assert message in info.value.message
    assert info.value.span == SCOPE_LINE
    assert info.value.hint


def test_a_column_reduction_of_a_row_every_lane_holds_whole_splits_up_down():
    """col_sum needs every row; a [1, C] row is every row, and each lane holds it whole."""
    x, g = irbuild.tensor("x", [64, 64]), irbuild.tensor("g", [1, 64])
    total = irbuild.assign("total", "tensor.col_sum", g)
    scaled = irbuild.assign("scaled", "tensor.col_expand_mul", x, total.target)
    out = irbuild.tensor("out", [64, 64])
    body = [total, scaled, irbuild.write(out, scaled.target)]
    kernel = lowered_kernel(body, [Param(x), Param(g), Param(out, Direction.Out)], split=SplitMode.UP_DOWN)
    types = {
        s.target.name: getattr(s.target.type, "shape", None)
        for s in walk_stmts(kernel.body)
        if isinstance(s, Assign)
    }
    assert types["total"] == (1, 64) and types["scaled"] == (32, 64)


def test_an_illegal_transfer_without_an_op_span_is_reported_at_the_scope_with_a_hint():
    a, out = irbuild.tensor("a", [64, 64], FP16), irbuild.tensor("out", [64, 64], FP16)
    load = irbuild.assign(
        "t", "tile.load", a, irbuild.idx(0, 0), shape=(64, 64), target_memory=MemorySpace.Left
    )
    store = Eval(make_call("tile.store", (load.target, irbuild.idx(0, 0), out)))
    scope = ScopeStmt((load, store), name_hint="k", span=SCOPE_LINE)
    program = irbuild.program("main", [Param(a), Param(out, Direction.Out)], [scope])
    with pytest.raises(TypeCheckError) as info:
        lower(program, irbuild.TARGET)
    assert info.value.message == "pl.load: there is no DDR->Left data path on test-a2a3"
    assert info.value.span == SCOPE_LINE
    assert info.value.hint.startswith("legal paths: DDR->Vec")


def test_a_hand_written_push_without_pipe_setup_and_without_a_span_is_reported_at_the_scope():
    a, out = irbuild.tensor("a", [64, 64], FP16), irbuild.tensor("out", [64, 64], FP16)
    cube = irbuild.assign(
        "m", "tile.load", a, irbuild.idx(0, 0), shape=(64, 64), target_memory=MemorySpace.Mat
    )
    push = Eval(make_call("tile.tpush_to_aiv", (cube.target,), {"split": SplitMode.NONE}))
    vec = irbuild.assign(
        "t", "tile.load", a, irbuild.idx(0, 0), shape=(64, 64), target_memory=MemorySpace.Vec
    )
    act = irbuild.assign("act", "tile.relu", vec.target)
    store = Eval(make_call("tile.store", (act.target, irbuild.idx(0, 0), out)))
    scope = ScopeStmt((cube, push, vec, act, store), name_hint="k", span=SCOPE_LINE)
    program = irbuild.program("main", [Param(a), Param(out, Direction.Out)], [scope])
    with pytest.raises(ParseError) as info:
        lower(program, irbuild.TARGET)
    assert info.value.message == "pl.tpush_to_aiv uses the cube->vector pipe, which this kernel never sets up"
    assert info.value.span == SCOPE_LINE
    assert info.value.hint.startswith("start the kernel with pl.aic_initialize_pipe(dir_mask=1")
