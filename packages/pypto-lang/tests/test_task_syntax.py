"""The task-graph surface: `as tid`, deps=, no_dep_args=, pl.manual_scope(), manual_dep=True and
pl.spmd, parsed (and lowered against a test target) without any backend."""

import pytest
from lang_platforms import A2A3_LIKE

import pypto.language as pl
from pypto.ir import TASK_ID, ParseError, ScopeStmt, print_ir
from pypto.ir.nodes import walk_stmts
from pypto.passes import lower

T = pl.Tensor[[64, 64], pl.FP32]
ROWS = pl.Tensor[[256, 64], pl.FP32]


def scopes(program):
    return [s for s in walk_stmts(program.entry_function.body) if isinstance(s, ScopeStmt)]


def calls(program):
    body = lower(program, A2A3_LIKE).entry_function.body
    return [
        s.value for s in walk_stmts(body) if getattr(s, "value", None) is not None and s.value.op == "call"
    ]


@pl.jit
def chained(a: T, out: pl.Out[T]):
    scratch = pl.create_tensor([64, 64], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill") as filled:
        scratch[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="drain", deps=[filled], no_dep_args=[scratch]):
        out[:] = pl.add(scratch, a)
    return out


def test_as_binds_a_task_id_that_deps_name():
    fill, drain = scopes(chained.parse())
    assert fill.task is not None and fill.task.type == TASK_ID
    assert drain.deps == (fill.task,)
    assert [v.name for v in drain.no_dep_args] == ["scratch"]
    assert "with pl.at(level=pl.Level.CORE_GROUP, name_hint='fill') as filled:" in print_ir(chained.parse())


def test_the_lowered_calls_carry_the_task_the_deps_and_the_untracked_arguments():
    fill, drain = calls(chained.parse())
    assert fill.attrs["task"] == "filled"
    assert drain.attrs["deps"] == ("filled",)
    assert [drain.args[i].name for i in drain.attrs["no_dep"]] == ["scratch"]


@pl.jit
def manual(a: T, out: pl.Out[T]):
    scratch = pl.create_tensor([64, 64], pl.FP32, manual_dep=True)
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill") as filled:
            scratch[:] = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="drain", deps=[filled]):
            out[:] = pl.add(scratch, a)
    return out


def test_scopes_inside_manual_scope_are_manual_and_a_manual_dep_tensor_is_marked():
    program = manual.parse()
    assert [s.manual for s in scopes(program)] == [True, True]
    assert "manual_dep=True" in print_ir(program)
    fill, drain = calls(program)
    assert fill.attrs["no_dep"] == (0, 1) and drain.attrs["no_dep"] == (0, 1, 2)


@pl.jit
def spmd_exp(a: ROWS, out: pl.Out[ROWS]):
    for i in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * 64 : i * 64 + 64, :] = pl.exp(a[i * 64 : i * 64 + 64, :])
    return out


def test_spmd_launches_each_scope_on_n_blocks_and_its_variable_is_the_block_index():
    (scope,) = scopes(spmd_exp.parse())
    assert scope.block_num == 4
    first = scope.body[0]
    assert first.value.op == "get_block_idx"
    (call,) = calls(spmd_exp.parse())
    assert call.attrs["block_num"] == 4


def test_with_spmd_launches_its_scopes_on_n_blocks_that_read_get_block_idx():
    @pl.jit
    def spmd_with(a: ROWS, out: pl.Out[ROWS]):
        with pl.spmd(4):  # noqa: SIM117 - a kernel takes one context per with
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                row = pl.get_block_idx() * 64
                out[row : row + 64, :] = pl.exp(a[row : row + 64, :])
        return out

    (scope,) = scopes(spmd_with.parse())
    assert scope.block_num == 4


def test_parallel_loops_around_scopes_stay_parallel_loops():
    @pl.jit
    def blocks(a: ROWS, out: pl.Out[ROWS]):
        for i in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
                out[i * 64 : i * 64 + 64, :] = pl.exp(a[i * 64 : i * 64 + 64, :])
        return out

    assert "for i in pl.parallel(0, 4, 1):" in print_ir(blocks.parse())


def _parse_error(fn):
    with pytest.raises(ParseError) as info:
        pl.jit(fn).parse()
    return str(info.value)


def test_deps_must_name_task_ids():
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP, deps=[a]):
            out[:] = pl.exp(a)
        return out

    assert "deps= entries must be a TaskId variable" in _parse_error(bad)


def test_deps_must_be_a_literal_list():
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP) as t:
            out[:] = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP, deps=t):
            out[:] = pl.exp(a)
        return out

    assert "deps= must be a literal list" in _parse_error(bad)


def test_no_dep_args_must_name_tensors():
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[1]):
            out[:] = pl.exp(a)
        return out

    assert "no_dep_args= takes tensors the task uses" in _parse_error(bad)


def test_the_spmd_index_exists_only_inside_scopes():
    def bad(a: ROWS, out: pl.Out[ROWS]):
        for i in pl.spmd(4):
            for _ in pl.range(i):
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = pl.exp(a)
        return out

    assert "'i' is the block index of pl.spmd" in _parse_error(bad)


def test_spmd_takes_a_positive_core_count_and_does_not_nest_in_a_scope():
    def zero(a: ROWS, out: pl.Out[ROWS]):
        for _i in pl.spmd(0):
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
        return out

    def inside(a: ROWS, out: pl.Out[ROWS]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _i in pl.spmd(2):
                out[:] = pl.exp(a)
        return out

    assert "pl.spmd() takes a positive int core count, got 0" in _parse_error(zero)
    assert "write it in the @pl.jit body, around pl.at scopes" in _parse_error(inside)


def test_manual_scope_belongs_in_the_orchestration_body():
    def bad(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):  # noqa: SIM117 - a kernel takes one context per with
            with pl.manual_scope():
                out[:] = pl.exp(a)
        return out

    assert "pl.manual_scope() is a runtime scope of the orchestration" in _parse_error(bad)


def test_incore_calls_inside_manual_scope_and_spmd_carry_the_flags():
    @pl.jit.incore
    def exp_rows(x: pl.Tensor[[256, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]):
        row = pl.get_block_idx() * 64
        pl.store(pl.exp(pl.load(x, [row, 0], [64, 64])), [row, 0], y)
        return y

    @pl.jit
    def entry(a: ROWS, out: pl.Out[ROWS]):
        with pl.manual_scope():
            for _i in pl.spmd(4):
                out = exp_rows(a, out)
        return out

    call = next(s.value for s in entry.parse().entry_function.body if hasattr(s, "value"))
    assert call.attrs["manual"] is True and call.attrs["block_num"] == 4
