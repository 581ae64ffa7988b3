"""pl.read, scalar pl.cast, pl.gather_row (destination-passing) and run-time loop bounds."""

import textwrap

import pytest

import pypto.language as pl
from pypto.ir import INDEX, Eval, For, FunctionKind, ParseError, ScalarType, TypeCheckError, print_ir
from pypto.runtime import RunConfig

TABLE = pl.Tensor[[1024, 64], pl.FP32]
IDX = pl.Tensor[[16], pl.INT32]
ROWS = pl.Tensor[[16, 64], pl.FP32]


def scope_text(program) -> str:
    lines = print_ir(program.entry_function.body[0]).splitlines()[1:]
    return textwrap.dedent("\n".join(lines)) + "\n"


def test_each_lane_gathers_every_other_row_through_a_run_time_index():
    @pl.jit
    def embed(table: TABLE, idx: IDX, out: pl.Out[ROWS], n: pl.Scalar[pl.INDEX]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2):
                rows = pl.create_tile([1, 64], pl.FP32)
                for r in pl.range(aiv_id, n, 2):
                    src = pl.cast(pl.read(idx, [r]), pl.INDEX)
                    rows = pl.gather_row(rows, table, [0, 0], [src, 0], [1, 64])
                    pl.store(rows, [r, 0], out)
        return out

    assert scope_text(embed.parse()) == textwrap.dedent(
        """\
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            rows: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.create(shape=[1, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            for r in pl.range(aiv_id, n, 2):
                src: pl.Scalar[pl.INDEX] = pl.cast(pl.read(idx, [r]), dtype=pl.INDEX, mode='round')
                pl.tile.gather_row(rows, table, [0, 0], [src, 0], shape=[1, 64])
                pl.tile.store(rows, [r, 0], out)
        """
    )


def test_gather_row_as_a_statement_writes_the_destination_in_place():
    @pl.jit
    def one_row(table: TABLE, idx: IDX, out: pl.Out[ROWS]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.create_tile([16, 64], pl.FP32)
            for i in pl.range(16):
                pl.gather_row(rows, table, [i, 0], [pl.cast(pl.read(idx, [i]), pl.INDEX), 0], [1, 64])
            pl.store(rows, [0, 0], out)
        return out

    scope = one_row.parse().entry_function.body[0]
    gather = scope.body[1].body[0]
    assert isinstance(gather, Eval) and gather.value.op == "tile.gather_row"
    assert gather.value.args[0] is scope.body[0].target
    assert scope.body[2].value.args[0] is scope.body[0].target  # the store reads the same buffer


def test_a_gather_loop_from_the_block_index_lowers_to_one_vector_kernel(backend):
    @pl.jit
    def strided_rows(table: TABLE, idx: IDX, out: pl.Out[ROWS]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            rows = pl.create_tile([1, 64], pl.FP32)
            for i in pl.range(pl.get_block_idx(), 16, pl.get_block_num()):
                rows = pl.gather_row(rows, table, [0, 0], [pl.cast(pl.read(idx, [i]), pl.INDEX), 0], [1, 64])
                pl.store(rows, [i, 0], out)
        return out

    kernel = strided_rows.lower(config=RunConfig(platform="testsim")).function("rows")
    assert kernel.kind is FunctionKind.AIV
    assert [s.value.op for s in kernel.body[1:3]] == ["get_block_idx", "get_block_num"]


def test_read_is_a_scalar_of_the_tensor_dtype_and_cast_makes_it_an_index():
    @pl.jit
    def reads(idx: IDX, out: pl.Out[ROWS]):
        first = pl.read(idx, [0])
        for _i in pl.range(pl.cast(first, pl.INDEX)):
            pass
        return out

    first, loop = reads.parse().entry_function.body[:2]
    assert first.value.op == "scalar.read" and first.target.type == ScalarType(pl.INT32)
    assert loop.stop.op == "scalar.cast" and loop.stop.type == INDEX


def test_rebinding_another_buffer_in_a_loop_carries_it():
    @pl.jit
    def carried(table: TABLE, out: pl.Out[ROWS]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.create_tile([1, 64], pl.FP32)
            other = pl.create_tile([1, 64], pl.FP32)
            for i in pl.range(16):
                rows = pl.gather_row(other, table, [0, 0], [i, 0], [1, 64])
            pl.store(rows, [0, 0], out)
        return out

    loop = next(s for s in carried.parse().entry_function.body[0].body if isinstance(s, For))
    assert [v.name for v in loop.yields] == ["other"]
    assert [v.name for v in loop.init_values] == ["rows"]


def test_gather_row_operands_are_checked_by_the_op_table():
    @pl.jit
    def wide(table: TABLE, out: pl.Out[ROWS]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.create_tile([2, 64], pl.FP32)
            pl.gather_row(rows, table, [0, 0], [0, 0], [64])
        return out

    with pytest.raises(
        TypeCheckError,
        match=r"pl\.gather_row: copies a 2-D window of rows: shape must be \[R, C\], got \[64\]",
    ):
        wide.parse()


def test_read_offsets_must_be_integers():
    @pl.jit
    def float_index(idx: IDX, out: pl.Out[ROWS]):
        pl.read(idx, [0.5])
        return out

    with pytest.raises(ParseError, match=r"offsets must hold integers, got the float 0\.5"):
        float_index.parse()
