"""``pl.matmul_bias`` (a bias row from the cube's bias table added to every row of the product)
and ``pl.gemv`` (one row times a matrix), at tensor level inside a scope and at tile level,
against torch; their operand errors."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, TypeCheckError

F16, F32 = pl.FP16, pl.FP32


def close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-3)


@pl.jit
def biased(
    a: pl.Tensor[[256, 128], F16],
    b: pl.Tensor[[128, 64], F16],
    bias: pl.Tensor[[1, 64], F32],
    out: pl.Out[pl.Tensor[[256, 64], F32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul_bias(a, b, bias)
    return out


def test_a_tensor_matmul_bias_is_tiled_by_rows_with_weight_and_bias_loaded_once():
    a, b, bias = torch.randn(256, 128).half(), torch.randn(128, 64).half(), torch.randn(1, 64)
    out = torch.zeros(256, 64)
    biased(a, b, bias, out)
    close(out, a.float() @ b.float() + bias)
    text = biased.lower(a, b, bias, out).as_python()
    loop = text.index("in pl.pipeline(")
    assert text.index("pl.tile.move(bias_mat, target_memory=pl.Mem.Bias)") < loop
    assert "pl.tile.matmul_bias(" in text[loop:]


@pl.jit.incore
def tile_biased(
    a: pl.Tensor[[64, 128], F16],
    b: pl.Tensor[[128, 64], F16],
    bias: pl.Tensor[[1, 64], F32],
    out: pl.Out[pl.Tensor[[64, 64], F32]],
):
    left = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
    right = pl.move(pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
    row = pl.move(pl.load(bias, [0, 0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Bias)
    pl.store(pl.matmul_bias(left, right, row), [0, 0], out)
    return out


@pl.jit
def tile_biased_entry(
    a: pl.Tensor[[64, 128], F16],
    b: pl.Tensor[[128, 64], F16],
    bias: pl.Tensor[[1, 64], F32],
    out: pl.Out[pl.Tensor[[64, 64], F32]],
):
    out = tile_biased(a, b, bias, out)
    return out


def test_a_tile_matmul_bias_reads_its_bias_from_the_bias_table():
    a, b, bias = torch.randn(64, 128).half(), torch.randn(128, 64).half(), torch.randn(1, 64)
    out = torch.zeros(64, 64)
    tile_biased_entry(a, b, bias, out)
    close(out, a.float() @ b.float() + bias)


@pl.jit
def row_times_matrix(
    x: pl.Tensor[[1, 128], F16], w: pl.Tensor[[128, 64], F16], out: pl.Out[pl.Tensor[[1, 64], F32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.gemv(x, w)
    return out


def test_gemv_multiplies_one_row_by_a_matrix():
    x, w, out = torch.randn(1, 128).half(), torch.randn(128, 64).half(), torch.zeros(1, 64)
    row_times_matrix(x, w, out)
    close(out, x.float() @ w.float())


def test_gemv_of_several_rows_is_a_type_error_that_points_to_matmul():
    @pl.jit
    def many_rows(
        x: pl.Tensor[[4, 128], F16], w: pl.Tensor[[128, 64], F16], out: pl.Out[pl.Tensor[[4, 64], F32]]
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.gemv(x, w)
        return out

    with pytest.raises(TypeCheckError) as info:
        many_rows.lower()
    assert "multiplies one row by a matrix, got a left operand" in info.value.message
    assert "pl.matmul" in info.value.hint
    assert "out[:] = pl.gemv(x, w)" in str(info.value)


def test_a_bias_that_is_not_one_row_of_the_product_is_a_type_error():
    @pl.jit
    def bad_bias(
        a: pl.Tensor[[64, 128], F16],
        b: pl.Tensor[[128, 64], F16],
        bias: pl.Tensor[[64, 64], F32],
        out: pl.Out[pl.Tensor[[64, 64], F32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.matmul_bias(a, b, bias)
        return out

    with pytest.raises(TypeCheckError) as info:
        bad_bias.lower()
    assert "bias must be a [1, 64] FP32 tensor" in info.value.message
    assert "one row added to every row" in info.value.hint


def test_a_bias_row_wider_than_the_bias_table_is_over_budget():
    @pl.jit
    def wide(
        a: pl.Tensor[[32, 64], F16],
        b: pl.Tensor[[64, 512], F16],
        bias: pl.Tensor[[1, 512], F32],
        out: pl.Out[pl.Tensor[[32, 512], F32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.matmul_bias(a, b, bias)
        return out

    with pytest.raises(MemoryBudgetError) as info:
        wide.lower()
    assert info.value.message.startswith("Function 'wide_incore_0': Bias buffer usage (2048 bytes) exceeds")
