"""Loop-carried values parse to a ``For`` with iter_args, init values, yields and results."""

import textwrap

import pytest

import pypto.language as pl
from pypto.ir import For, ParseError, print_ir, verify_program
from pypto.ir.nodes import walk_stmts

T = pl.Tensor[[128, 64], pl.FP32]
OUT = pl.Tensor[[32, 64], pl.FP32]


def body_text(program) -> str:
    """The entry function's printed body, without its decorator and def line."""
    lines = print_ir(program.entry_function).splitlines()[2:]
    return textwrap.dedent("\n".join(lines)) + "\n"


def test_a_name_rebound_in_a_loop_is_carried_and_means_the_result_after_it():
    @pl.jit
    def running_sum(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.full([32, 64], pl.FP32, 0.0)
            for i in pl.range(4):
                acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
            pl.store(acc, [0, 0], out)
        return out

    program = running_sum.parse()
    verify_program(program)
    assert body_text(program) == textwrap.dedent(
        """\
        with pl.at(level=pl.Level.CORE_GROUP):
            acc: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.full(value=0.0, shape=[32, 64], dtype=pl.FP32)
            for i, (acc_1,) in pl.range(0, 4, 1, init_values=(acc,)):
                load: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i * 32, 0], shape=[32, 64], target_memory=pl.Mem.Vec)
                acc_2: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_1, load)
                acc_3 = pl.yield_(acc_2)
            pl.tile.store(acc_3, [0, 0], out)
        return out
"""
    )


def test_the_explicit_form_carries_the_named_values_and_a_scalar_counter():
    @pl.jit
    def running_max(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            first = pl.load(x, [0, 0], [32, 64])
            n = 0
            for i, (mx,) in pl.range(1, 4, init_values=(first,)):
                n = n + 1
                mx = pl.yield_(pl.maximum(mx, pl.load(x, [i * 32, 0], [32, 64])))
            pl.store(pl.mul(mx, pl.cast(n, pl.FP32)), [0, 0], out)
        return out

    program = running_max.parse()
    verify_program(program)
    assert body_text(program) == textwrap.dedent(
        """\
        with pl.at(level=pl.Level.CORE_GROUP):
            first: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], shape=[32, 64], target_memory=pl.Mem.Vec)
            for i, (mx, n) in pl.range(1, 4, 1, init_values=(first, 0)):
                n_1: pl.Scalar[pl.INDEX] = n + 1
                load: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [i * 32, 0], shape=[32, 64], target_memory=pl.Mem.Vec)
                mx_1: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.maximum(mx, load)
                mx_2, n_2 = pl.yield_(mx_1, n_1)
            muls: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.muls(mx_2, pl.cast(n_2, dtype=pl.FP32, mode='round'))
            pl.tile.store(muls, [0, 0], out)
        return out
"""
    )


def test_a_name_the_body_binds_to_its_own_value_is_not_carried():
    @pl.jit
    def rows(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [32, 64])
            for _i in pl.range(4):
                t = t
                pl.store(t, [0, 0], out)
        return out

    loop = next(s for s in rows.parse().entry_function.body[0].body if isinstance(s, For))
    assert loop.iter_args == ()


def test_a_carried_value_that_changes_type_is_an_error():
    @pl.jit
    def bad(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.full([32, 64], pl.FP32, 0.0)
            for i in pl.range(4):
                acc = pl.load(x, [i * 32, 0], [16, 64])
            pl.store(acc, [0, 0], out)
        return out

    with pytest.raises(ParseError, match="enters the loop as"):
        bad.parse()


def test_init_values_need_as_many_names():
    @pl.jit
    def bad(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            a = pl.load(x, [0, 0], [32, 64])
            for _i, (b, c) in pl.range(4, init_values=(a,)):
                b, c = pl.yield_(b, c)
            pl.store(a, [0, 0], out)
        return out

    with pytest.raises(ParseError, match="2 carried names but 1 init_values"):
        bad.parse()


def test_a_parallel_loop_carries_a_name_rebound_in_it_as_pl_range_does():
    # PyPTO's loop table: pl.parallel carries values (its iterations asserted independent)
    @pl.jit
    def summed(x: T, out: pl.Out[OUT]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.full([32, 64], pl.FP32, 0.0)
            for i in pl.parallel(4):
                acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
            pl.store(acc, [0, 0], out)
        return out

    fn = summed.parse().entry_function
    scope = next(s for s in walk_stmts(fn.body) if isinstance(s, For))
    assert len(scope.iter_args) == 1 and scope.iter_args[0].name.startswith("acc")
