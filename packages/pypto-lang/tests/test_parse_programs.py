"""Small kernels parse to the expected IR (printed with pypto.ir.print_ir)."""

import textwrap
from pathlib import Path

import torch

import pypto.language as pl
from pypto.ir import Const, DataType, For, LoopKind, ScalarType, ScopeStmt, print_ir, verify_program

ROWS = 128
T64 = pl.Tensor[[64, 64], pl.FP32]


def body_text(program) -> str:
    """The entry function's printed body, without its decorator and def line."""
    lines = print_ir(program.entry_function).splitlines()[2:]
    return textwrap.dedent("\n".join(lines)) + "\n"


def test_loop_offsets_become_scalar_ops_and_shapes_fold():
    @pl.jit
    def row_blocks(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        M, N = a.shape
        blocks = M // ROWS
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            for i in pl.range(blocks):
                t = pl.load(a, [i * ROWS, 0], [ROWS, N])
                pl.store(pl.exp(t), [i * ROWS, 0], out)
        return out

    program = row_blocks.parse(torch.zeros(512, 64), torch.zeros(512, 64))
    verify_program(program)
    assert body_text(program) == textwrap.dedent(
        """\
        with pl.at(level=pl.Level.CORE_GROUP, name_hint='rows'):
            for i in pl.range(0, 4, 1):
                t: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [i * 128, 0], shape=[128, 64], target_memory=pl.Mem.Vec)
                exp: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(t)
                pl.tile.store(exp, [i * 128, 0], out)
        return out
        """
    )


def test_rebinding_a_name_gets_a_fresh_ssa_name_and_python_numbers_select_scalar_forms():
    @pl.jit
    def affine(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 64])
            t = t * 2.0 + 1
            t = 3.0 * t
            pl.store(t, [0, 0], out)
        return out

    assert body_text(affine.parse()) == textwrap.dedent(
        """\
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)
            muls: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(t, 2.0)
            t_1: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(muls, 1.0)
            t_2: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(t_1, 3.0)
            pl.tile.store(t_2, [0, 0], out)
        return out
        """
    )


def test_python_operators_on_tensors_map_to_tensor_ops():
    @pl.jit
    def ops(a: T64, b: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = (a + b) * (a - b) / b
        return out

    assert [s.value.op for s in ops.parse().entry_function.body[0].body] == [
        "tensor.add",
        "tensor.sub",
        "tensor.mul",
        "tensor.div",
        "tensor.assemble",
    ]


def test_cube_path_uses_tile_matmul_on_left_and_right_tiles_and_region_writes_store_tiles():
    @pl.jit
    def cube(
        a: pl.Tensor[[64, 128], pl.FP16],
        b: pl.Tensor[[128, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            am = pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat)
            bm = pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat)
            c = pl.matmul(pl.move(am, target_memory=pl.Mem.Left), pl.move(bm, target_memory=pl.Mem.Right))
            out[0:64, 0:64] = c
        return out

    assert body_text(cube.parse()) == textwrap.dedent(
        """\
        with pl.at(level=pl.Level.CORE_GROUP):
            am: pl.Tile[[64, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0], shape=[64, 128], target_memory=pl.Mem.Mat)
            bm: pl.Tile[[128, 64], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0], shape=[128, 64], target_memory=pl.Mem.Mat)
            move: pl.Tile[[64, 128], pl.FP16, pl.Mem.Left] = pl.tile.move(am, target_memory=pl.Mem.Left)
            move_1: pl.Tile[[128, 64], pl.FP16, pl.Mem.Right] = pl.tile.move(bm, target_memory=pl.Mem.Right)
            c: pl.Tile[[64, 64], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(move, move_1)
            pl.tile.store(c, [0, 0], out)
        return out
        """
    )


def test_create_tensor_casts_parallel_loops_and_the_tensor_spelling():
    @pl.jit
    def staged_cast(a: T64, out: pl.Out[T64]):
        tmp = pl.create_tensor([64, 64], pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            tmp[:] = pl.tensor.maximum(a, a)
        with pl.at(level=pl.Level.CORE_GROUP):
            for _j in pl.parallel(0, 8, 2):
                tmp[:] = pl.relu(tmp)
            out[:] = pl.cast(pl.cast(tmp, pl.FP16), pl.FP32, mode="rint")
        return out

    assert body_text(staged_cast.parse()) == textwrap.dedent(
        """\
        tmp: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.create(shape=[64, 64], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            maximum: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.maximum(a, a)
            pl.tensor.assemble(tmp, maximum, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP):
            for _j in pl.parallel(0, 8, 2):
                relu: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.relu(tmp)
                pl.tensor.assemble(tmp, relu, [0, 0])
            cast: pl.Tensor[[64, 64], pl.FP16] = pl.tensor.cast(tmp, dtype=pl.FP16, mode='round')
            cast_1: pl.Tensor[[64, 64], pl.FP32] = pl.tensor.cast(cast, dtype=pl.FP32, mode='rint')
            pl.tensor.assemble(out, cast_1, [0, 0])
        return out
        """
    )


def test_region_writes_take_offsets_from_slice_starts():
    @pl.jit
    def halves(a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[0:32, :] = a
            out[32:64] = pl.neg(a)
        return out

    scope = halves.parse().entry_function.body[0]
    writes = [s.value for s in scope.body if s.value.op == "tensor.assemble"]
    assert [print_ir(w.args[2]) for w in writes] == ["[0, 0]", "[32, 0]"]


def test_closure_constants_and_compile_time_if_fold_away():
    double = True
    scale = 0.5

    @pl.jit
    def folded(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if double and a.dtype == pl.FP32:
                out[:] = pl.mul(a, scale * 4)
            else:
                out[:] = a
        return out

    muls = folded.parse().entry_function.body[0].body[0].value
    assert muls.op == "tensor.muls"
    assert isinstance(muls.args[1], Const) and muls.args[1].value == 2.0


def test_dsl_names_imported_directly_resolve_like_pl_attributes():
    from pypto.language import Level, Out, Tensor, add, at

    @pl.jit
    def direct(a: Tensor[[64, 64], pl.FP32], out: Out[Tensor[[64, 64], pl.FP32]]):
        with at(level=Level.CORE_GROUP):
            out[:] = add(a, a)
        return out

    assert direct.parse().entry_function.body[0].body[0].value.op == "tensor.add"


def test_unroll_and_run_time_bounds_make_for_loops_over_index_vars():
    @pl.jit
    def loops(a: T64, n: pl.Scalar[pl.INDEX], out: pl.Out[T64]):
        for _i in pl.unroll(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                for _k in pl.range(1, n):
                    out[:] = a
        return out

    program = loops.parse()
    outer = program.entry_function.body[0]
    inner = outer.body[0].body[0]
    assert isinstance(outer, For) and outer.kind is LoopKind.unroll
    assert isinstance(inner, For) and inner.stop is program.entry_function.params[1].var
    assert outer.var.type == ScalarType(DataType.INDEX)
    assert isinstance(outer.body[0], ScopeStmt)


def test_spans_point_at_the_users_file_line_and_column():
    @pl.jit
    def spanned(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)  # the span under test
        return out

    exp = spanned.parse().entry_function.body[0].body[0]
    span = exp.span
    line = Path(__file__).read_text().splitlines()[span.line - 1]
    assert span.file == __file__
    assert line[span.col : span.end_col] == "pl.exp(a)"
