"""Calling @pl.jit.incore helpers (and splicing @pl.jit.inline ones) from a @pl.jit body."""

import re
import textwrap
import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import Call, Eval, FunctionKind, ParseError, TypeCheckError, print_ir, verify_program
from pypto.runtime import RunConfig

T64 = pl.Tensor[[64, 64], pl.FP32]
T32 = pl.Tensor[[32, 64], pl.FP32]


@pl.jit.incore
def add_tiles(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = x.shape
    tx = pl.load(x, [0, 0], [rows, cols])
    ty = pl.load(y, [0, 0], [rows, cols])
    pl.store(tx + ty, [0, 0], out)
    return out


@pl.jit.inline
def doubled(t):
    return t + t


def test_a_helper_becomes_an_incore_function_called_with_eval():
    @pl.jit
    def entry(a: T64, b: T64, out: pl.Out[T64]):
        out = add_tiles(a, b, out)
        return out

    program = entry.parse()
    verify_program(program)
    assert textwrap.dedent("\n".join(print_ir(program).splitlines()[3:])) + "\n" == textwrap.dedent(
        """\
        @pl.function(type=pl.FunctionType.Orchestration)
        def entry(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            self.add_tiles(a, b, out)
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def add_tiles(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            tx: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)
            ty: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(y, [0, 0], shape=[64, 64], target_memory=pl.Mem.Vec)
            add: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(tx, ty)
            pl.tile.store(add, [0, 0], out)
            return out
        """
    )
    call = program.entry_function.body[0]
    assert isinstance(call, Eval) and call.value.attrs == {"callee": "add_tiles"}
    assert program.function("add_tiles").kind is FunctionKind.InCore


def test_the_name_bound_to_the_result_aliases_the_tensor_passed_for_the_out_param():
    @pl.jit
    def aliasing(a: T64, out: pl.Out[T64]):
        result = add_tiles(a, a, out)
        return result

    program = aliasing.parse()
    ret = program.entry_function.body[-1]
    assert ret.values[0] is program.entry_function.params[1].var


def test_rebinding_out_to_the_helper_result_warns_nothing():
    @pl.jit
    def rebinds(a: T64, out: pl.Out[T64]):
        out = add_tiles(a, a, out)
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rebinds.parse()


def test_same_argument_types_share_one_function_and_new_ones_get_a_suffix():
    @pl.jit
    def two_sizes(a: T64, b: T32, out: pl.Out[T64], small: pl.Out[T32]):
        add_tiles(a, a, out)
        add_tiles(b, b, small)
        add_tiles(a, a, out)
        return out, small

    program = two_sizes.parse()
    callees = [s.value.attrs["callee"] for s in program.entry_function.body if isinstance(s, Eval)]
    assert callees == ["add_tiles", "add_tiles_1", "add_tiles"]
    assert [f.name for f in program.functions.values()] == ["two_sizes", "add_tiles", "add_tiles_1"]
    assert program.function("add_tiles_1").params[0].var.type.shape == (32, 64)


def test_a_helper_called_directly_runs_through_a_generated_entry(backend, config):
    a, out = torch.ones(8, 8), torch.zeros(8, 8)
    program = add_tiles.parse(a, a, out)
    assert [(f.name, f.kind) for f in program.functions.values()] == [
        ("add_tiles", FunctionKind.Orchestration),
        ("add_tiles_kernel", FunctionKind.InCore),
    ]
    assert add_tiles(a, a, out, config=config) is out


def test_a_helper_must_return_its_out_params():
    @pl.jit.incore
    def returns_input(x: T64, out: pl.Out[T64]):
        return x

    @pl.jit
    def caller(a: T64, out: pl.Out[T64]):
        returns_input(a, out)
        return out

    with pytest.raises(
        ParseError, match=re.escape("returns the pl.Out / pl.InOut tensors it writes; 'x' is not one")
    ):
        caller.parse()


def test_a_helper_call_inside_a_scope_is_rejected():
    @pl.jit
    def scoped_call(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            add_tiles(a, a, out)
        return out

    with pytest.raises(ParseError, match=re.escape("call it from the @pl.jit body, outside pl.at scopes")):
        scoped_call.parse()


def test_call_site_types_are_checked_against_the_helper_annotations():
    @pl.jit.incore
    def fixed_helper(x: T64, out: pl.Out[T64]):
        return out

    @pl.jit
    def caller(a: T32, out: pl.Out[T64]):
        fixed_helper(a, out)
        return out

    with pytest.raises(TypeCheckError) as info:
        caller.parse()
    assert info.value.message == (
        "argument 'x' of fixed_helper() is Tensor[[32, 64], FP32] but the parameter is annotated "
        "pl.Tensor[[64, 64], pl.FP32] (dim 0 is 32, not 64)"
    )


def test_a_helper_with_a_missing_argument_names_it():
    @pl.jit
    def caller(a: T64, out: pl.Out[T64]):
        add_tiles(a, out)
        return out

    with pytest.raises(ParseError, match=re.escape("add_tiles(): missing a required argument: 'out'")):
        caller.parse()


def test_an_inline_function_is_spliced_and_its_arguments_are_computed_once():
    @pl.jit
    def splice(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = doubled(pl.exp(a))
        return out

    ops = [s.value.op for s in splice.parse().entry_function.body[0].body]
    assert ops == ["tensor.exp", "tensor.add", "tensor.assemble"]
    add = splice.parse().entry_function.body[0].body[1].value
    assert isinstance(add, Call) and add.args[0] is add.args[1]


def test_scalar_arguments_specialize_the_helper():
    @pl.jit.incore
    def scale_tile(x: T64, k: pl.FP32, out: pl.Out[T64]):
        pl.store(pl.load(x, [0, 0], [64, 64]) * k, [0, 0], out)
        return out

    @pl.jit
    def caller(a: T64, out: pl.Out[T64]):
        scale_tile(a, 2, out)
        scale_tile(a, 3, out)
        return out

    program = caller.parse()
    calls = [s.value for s in program.entry_function.body if isinstance(s, Eval)]
    assert [(c.attrs["callee"], c.args[1].value) for c in calls] == [
        ("scale_tile", 2.0),
        ("scale_tile_1", 3.0),
    ]
    muls = program.function("scale_tile_1").body[1].value
    assert muls.op == "tile.muls" and muls.args[1].value == 3.0


A16 = pl.Tensor[[64, 128], pl.FP16]
B16 = pl.Tensor[[128, 64], pl.FP16]


@pl.jit.incore
def split_matmul_bias(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    """A docstring may precede the attributes."""
    pl.func_attr({"split": pl.SplitMode.UP_DOWN})
    out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


@pl.jit
def calls_split_helper(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    out = split_matmul_bias(a, b, bias, out)
    return out


@pl.jit
def split_scope(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def test_func_attr_opening_an_incore_helper_splits_it_like_a_split_scope():
    assert calls_split_helper.parse().function("split_matmul_bias").attrs == {"split": pl.SplitMode.UP_DOWN}
    lowered = calls_split_helper.lower(config=RunConfig(platform="a2a3"))  # the chip's target, no backend
    kinds = {fn.name: fn.func_type for fn in lowered.functions.values()}
    assert {name: kind for name, kind in kinds.items() if name.startswith("split_matmul_bias")} == {
        "split_matmul_bias": pl.FunctionType.Group,
        "split_matmul_bias_aic": pl.FunctionType.AIC,
        "split_matmul_bias_aiv": pl.FunctionType.AIV,
    }
    assert lowered.function("split_matmul_bias_aiv").attrs["split"] is pl.SplitMode.UP_DOWN  # halved by rows
    # tests/test_model_constructs.py runs it against the same split scope on a2a3sim


def test_func_attr_later_in_an_incore_helper_is_an_error_at_it():
    @pl.jit.incore
    def late(x: T64, out: pl.Out[T64]):
        out[:] = pl.exp(x)
        pl.func_attr({"split": pl.SplitMode.UP_DOWN})
        return out

    @pl.jit
    def entry(x: T64, out: pl.Out[T64]):
        out = late(x, out)
        return out

    with pytest.raises(ParseError) as info:
        entry.parse()
    assert "must be the first statement" in info.value.message
    assert "pl.func_attr" in str(info.value) and "^" in str(info.value)
