"""The tier-2 `pl` surface as parsed IR: reductions and broadcasts, views, fills, tile assembly,
atomic writes, run-time valid shapes, tensor subscripts and run-time `if`."""

import math
import textwrap

import pytest

import pypto.language as pl
from pypto.ir import (
    AtomicType,
    DataType,
    Eval,
    If,
    PadValue,
    ParseError,
    TensorType,
    TileType,
    TypeCheckError,
    print_ir,
)
from pypto.ir.nodes import Assign, walk_stmts

X = pl.Tensor[[64, 64], pl.FP32]
ROW = pl.Tensor[[1, 64], pl.FP32]


def scope_text(program) -> str:
    lines = print_ir(program.entry_function.body[0]).splitlines()[1:]
    return textwrap.dedent("\n".join(lines)) + "\n"


def calls(program):
    """(op, call) of every statement of the entry function, loops, scopes and arms included."""
    out = []
    for s in walk_stmts(program.entry_function.body):
        if isinstance(s, (Assign, Eval)):
            out.append((s.value.op, s.value))
    return out


def ops(program):
    return [op for op, _ in calls(program)]


# ---------------------------------------------------------------- reductions and broadcasts


def test_softmax_on_tiles_reads_as_reductions_with_a_scratch_tile_and_row_broadcasts():
    @pl.jit
    def softmax(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [64, 64])
            tmp = pl.create_tile([64, 64], pl.FP32)
            e = pl.exp(pl.row_expand_sub(t, pl.row_max(t, tmp)))
            pl.store(pl.row_expand_div(e, pl.row_sum(e, tmp)), [0, 0], out)
        return out

    assert scope_text(softmax.parse()) == textwrap.dedent(
        """\
        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)
        tmp: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.create(shape=[64, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        row_max: pl.Tile[[64, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_max(t, tmp)
        row_expand_sub: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.row_expand_sub(t, row_max)
        e: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(row_expand_sub)
        row_sum: pl.Tile[[64, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_sum(e, tmp)
        row_expand_div: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.row_expand_div(e, row_sum)
        pl.tile.store(row_expand_div, [0, 0], out)
        """
    )


def test_reductions_and_broadcasts_on_tensors_are_tensor_ops_without_scratch():
    @pl.jit
    def norm(x: X, gamma: ROW, beta: ROW, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            centered = pl.row_expand_sub(x, pl.row_min(x))
            scaled = pl.col_expand_mul(centered, gamma)
            out[:] = pl.add(scaled, pl.col_expand(scaled, beta))
        return out

    assert ops(norm.parse()) == [
        "tensor.row_min",
        "tensor.row_expand_sub",
        "tensor.col_expand_mul",
        "tensor.col_expand",
        "tensor.add",
        "tensor.assemble",
    ]


def test_column_reductions_are_one_row():
    @pl.jit
    def col_stats(x: X, out: pl.Out[ROW]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [64, 64])
            pl.store(pl.add(pl.col_sum(t), pl.col_max(t)), [0, 0], out)
        return out

    found = dict(calls(col_stats.parse()))
    assert found["tile.col_sum"].type == TileType((1, 64), DataType.FP32)
    assert "tile.col_max" in found


def test_a_tile_row_reduction_without_scratch_is_a_type_error_that_says_how_to_make_one():
    @pl.jit
    def no_tmp(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [64, 64])
            pl.store(pl.row_expand_sub(t, pl.row_max(t)), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        no_tmp.parse()
    assert info.value.message == (
        "pl.row_max: needs a scratch tile shaped like Tile[[64, 64], FP32, Vec], got no scratch tile"
    )
    assert "pl.create_tile" in info.value.hint


def test_a_scratch_on_a_tensor_reduction_is_refused():
    @pl.jit
    def with_tmp(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.row_expand_sub(x, pl.row_max(x, x))
        return out

    with pytest.raises(
        TypeCheckError, match=r"pl\.row_max: on Tensor\[\[64, 64\], FP32\] takes no scratch operand"
    ):
        with_tmp.parse()


def test_a_broadcast_of_the_wrong_shape_names_both_types_at_the_line():
    @pl.jit
    def wrong(x: X, gamma: ROW, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.row_expand_mul(x, gamma)
        return out

    with pytest.raises(TypeCheckError) as info:
        wrong.parse()
    assert info.value.message == (
        "pl.row_expand_mul: the broadcast operand must be [64, 1] for Tensor[[64, 64], FP32], "
        "got Tensor[[1, 64], FP32]"
    )
    assert info.value.span is not None and info.value.span.line > 0


# ---------------------------------------------------------------- views, fills, matmul_acc


def test_tensor_subscripts_read_views_at_run_time_offsets_with_constant_extents():
    @pl.jit
    def chunks(a: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for k in pl.range(2):
                k0 = k * 128
                out[:] = pl.exp(a[:, k0 : k0 + 128])
        return out

    (view,) = [call for op, call in calls(chunks.parse()) if op == "tensor.slice"]
    assert view.type == TensorType((64, 128), DataType.FP32)
    assert view.attrs == {"shape": (64, 128)}
    assert [e.value if hasattr(e, "value") else e.name for e in view.args[1].elements] == [0, "k0"]


def test_constant_subscripts_and_pl_slice_are_the_same_op():
    @pl.jit
    def both(a: X, out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 64])
            pl.store(pl.slice(t, [16, 32], [8, 16]), [0, 0], out)
            out[:] = a[8:24, 16:48]
        return out

    found = ops(both.parse())
    assert "tile.slice" in found and "tensor.slice" in found


@pl.jit
def run_time_end(a: X, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for k in pl.range(2):
            k0 = k * 8
            out[0:8, :] = a[k0 : k0 * 2]
    return out


@pl.jit
def an_index(a: X, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:1, :] = a[3]
    return out


@pl.jit
def empty(a: X, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:8, :] = a[8:8]
    return out


@pytest.mark.parametrize(
    ("kernel", "message"),
    [
        (run_time_end, "a slice with a run-time start needs a constant extent, got k0:k0 * 2"),
        (an_index, "read a region with slices: a[r0:r1, c0:c1] (no indices, no steps)"),
        (empty, "a slice must hold at least one element, got 8:8"),
    ],
)
def test_subscripts_that_are_not_constant_extent_regions_are_parse_errors(kernel, message):
    with pytest.raises(ParseError) as info:
        kernel.parse()
    assert info.value.message == message


def test_reshape_fillpad_and_full():
    @pl.jit
    def shapes(x: X, out: pl.Out[pl.Tensor[[32, 128], pl.FP32]], fill: pl.FP32):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[40, 64])
            padded = pl.fillpad(t, pad_value=pl.PadValue.max)
            pl.store(pl.add(pl.reshape(padded, [32, 128]), pl.full([32, 128], pl.FP32, fill)), [0, 0], out)
        return out

    found = dict(calls(shapes.parse()))
    assert found["tile.fillpad"].attrs == {"pad_value": PadValue.max}
    assert found["tile.fillpad"].type.valid_shape is None
    assert found["tile.reshape"].type.shape == (32, 128)
    assert found["tile.full"].args[0].type.dtype is DataType.FP32


def test_fillpad_with_a_value_that_is_not_a_pad_value_is_a_parse_error():
    @pl.jit
    def bad(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.fillpad(pl.load(x, [0, 0], [64, 64]), pad_value=1.5), [0, 0], out)
        return out

    with pytest.raises(
        ParseError, match=r"pad_value must be a pl.PadValue \(or 0, math.inf, -math.inf\), got the float 1.5"
    ):
        bad.parse()


def test_fillpad_takes_the_numbers_a_pad_value_stands_for():
    @pl.jit
    def numbers(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [64, 64], valid_shape=[8, 64])
            pl.store(pl.fillpad(t, pad_value=-math.inf), [0, 0], out)
        return out

    text = numbers.parse().as_python()
    assert "pad_value=pl.PadValue.min" in text


def test_matmul_acc_dispatches_on_the_accumulator_kind():
    @pl.jit
    def k_chunks(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.matmul(a[:, 0:32], b[0:32, :])
            acc = pl.matmul_acc(acc, a[:, 32:64], b[32:64, :])
            c[:] = acc
        return c

    found = dict(calls(k_chunks.parse()))
    assert found["tensor.matmul_acc"].type == TensorType((64, 64), DataType.FP32)


def test_cast_with_rint_keeps_the_mode():
    @pl.jit
    def to_bf16(x: X, out: pl.Out[pl.Tensor[[64, 64], pl.BF16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.cast(x, pl.BF16, mode="rint")
        return out

    found = dict(calls(to_bf16.parse()))
    assert found["tensor.cast"].attrs == {"dtype": DataType.BF16, "mode": "rint"}


# ---------------------------------------------------------------- assembly and atomic writes


def test_tile_assemble_is_destination_passing_in_a_loop():
    @pl.jit
    def rows(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            dst = pl.create_tile([64, 64], pl.FP32)
            for i in pl.range(64):
                dst = pl.tile.assemble(dst, pl.load(x, [i, 0], [1, 64]), [63 - i, 0])
            pl.assemble(dst, pl.load(x, [0, 0], [1, 64]), [0, 0])
            pl.store(dst, [0, 0], out)
        return out

    scope = rows.parse().entry_function.body[0]
    dst = scope.body[0].target
    loop_assemble = scope.body[1].body[1]
    assert isinstance(loop_assemble, Eval) and loop_assemble.value.op == "tile.assemble"
    assert loop_assemble.value.args[0] is dst
    assert scope.body[3].value.op == "tile.assemble" and scope.body[3].value.args[0] is dst


def test_atomic_is_for_global_memory_not_for_tiles():
    @pl.jit
    def bad(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            dst = pl.create_tile([64, 64], pl.FP32)
            pl.assemble(dst, pl.load(x, [0, 0], [64, 64]), [0, 0], atomic=pl.AtomicType.Add)
            pl.store(dst, [0, 0], out)
        return out

    with pytest.raises(ParseError, match="atomic= applies to writes into global memory"):
        bad.parse()


def test_atomic_assemble_of_a_tensor_and_of_a_tile():
    @pl.jit
    def accumulate(x: X, out: pl.InOut[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.assemble(out, pl.exp(x), [0, 0], atomic=pl.AtomicType.Add)
            pl.assemble(out, pl.load(x, [0, 0], [64, 64]), [0, 0], atomic=pl.AtomicType.Add)
        return out

    found = calls(accumulate.parse())
    writes = [(op, call.attrs) for op, call in found if op in ("tensor.assemble", "tile.store_atomic")]
    assert writes == [
        ("tensor.assemble", {"atomic": AtomicType.Add}),
        ("tile.store_atomic", {"atomic": AtomicType.Add}),
    ]


# ---------------------------------------------------------------- run-time valid shapes


def test_a_run_time_valid_shape_travels_from_the_load_to_fillpad_and_the_store():
    @pl.jit
    def partial(x: pl.Tensor[[100, 64], pl.FP32], out: pl.Out[pl.Tensor[[100, 64], pl.FP32]], n: pl.INDEX):
        with pl.at(level=pl.Level.CORE_GROUP):
            for r0 in pl.range(0, n, 32):
                rows = pl.minimum(32, n - r0)
                t = pl.load(x, [r0, 0], [32, 64], valid_shape=[rows, 64])
                m = pl.row_max(pl.fillpad(t, pad_value=pl.PadValue.min), pl.create_tile([32, 64], pl.FP32))
                pl.store(pl.row_expand_sub(t, m), [r0, 0], out)
        return out

    assert scope_text(partial.parse()).splitlines()[2:] == [
        "    t: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load_partial(x, [r0, 0], [rows, 64], "
        "shape=[32, 64], target_memory=pl.Mem.Vec)",
        "    fillpad: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.fillpad(t, valid_shape=[rows, 64], "
        "pad_value=pl.PadValue.min)",
        "    create: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.create(shape=[32, 64], "
        "dtype=pl.FP32, target_memory=pl.Mem.Vec)",
        "    m: pl.Tile[[32, 1], pl.FP32, pl.Mem.Vec] = pl.tile.row_max(fillpad, create)",
        "    row_expand_sub: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.row_expand_sub(t, m)",
        "    pl.tile.store_partial(row_expand_sub, [r0, 0], out, [rows, 64])",
    ]


def test_a_constant_valid_shape_stays_in_the_tile_type():
    @pl.jit
    def edge(x: pl.Tensor[[100, 64], pl.FP32], out: pl.Out[pl.Tensor[[100, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [96, 0], [32, 64], valid_shape=[4, 64]), [96, 0], out)
        return out

    found = dict(calls(edge.parse()))
    assert found["tile.load"].type.valid_shape == (4, 64) and "tile.store" in found


# ---------------------------------------------------------------- run-time if


def test_a_run_time_if_keeps_both_arms():
    @pl.jit
    def pick(a: X, b: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                if i < 2:
                    out[i * 16 : i * 16 + 16, :] = pl.load(a, [i * 16, 0], [16, 64])
                else:
                    out[i * 16 : i * 16 + 16, :] = pl.load(b, [i * 16, 0], [16, 64])
        return out

    text = scope_text(pick.parse())
    assert "    if i < 2:\n        load: " in text and "    else:\n        load_1: " in text
    branch = next(s for s in walk_stmts(pick.parse().entry_function.body) if isinstance(s, If))
    assert branch.cond.type.dtype is DataType.BOOL


def test_a_name_bound_in_an_arm_does_not_exist_after_the_if():
    @pl.jit
    def leak(a: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                if i < 2:
                    t = pl.load(a, [0, 0], [64, 64])
                pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError, match=r"'t' is defined inside an if arm .* and does not exist after it"):
        leak.parse()


def test_an_if_on_a_float_scalar_asks_for_a_comparison():
    @pl.jit
    def on_float(a: X, flags: pl.Tensor[[4], pl.FP32], out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if pl.read(flags, [0]):
                out[:] = pl.exp(a)
        return out

    with pytest.raises(ParseError, match="an if condition must be a boolean or integer scalar") as info:
        on_float.parse()
    assert info.value.hint == "compare the value: `if x > 0:`"


def test_a_run_time_if_may_choose_between_scopes_in_the_entry():
    @pl.jit
    def choose(a: X, flags: pl.Tensor[[4], pl.INT32], out: pl.Out[X]):
        if pl.read(flags, [0]) > 0:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="pos"):
                out[:] = pl.exp(a)
        else:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="neg"):
                out[:] = pl.neg(a)
        return out

    (branch, _ret) = choose.parse().entry_function.body
    assert isinstance(branch, If)
    assert [s.name_hint for s in branch.then_body + branch.else_body] == ["pos", "neg"]
