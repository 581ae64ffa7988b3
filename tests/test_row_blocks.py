"""Large tensors through ops that combine rows, tiled in row blocks instead of running whole:
column reductions that feed other ops (a first loop accumulates them, a second uses the [1, C]
result as a broadcast row) and reshapes (a block of whole rows is whole rows of the result).
Sizes far above the Vec budget; numbers against torch on a2a3sim."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
M = pl.dynamic("M")

DTYPES = {pl.FP32: torch.float32, pl.FP16: torch.float16, pl.INT32: torch.int32, pl.BF16: torch.bfloat16}


def loops(kernel) -> int:
    return print_ir(kernel.lower()).count("pl.pipeline(")


def scaled_by_column_peak(dtype, rows):
    @pl.jit
    def kernel(x: pl.Tensor[[rows, 128], dtype], out: pl.Out[pl.Tensor[[rows, 128], dtype]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = x / pl.col_max(x)
        return out

    return kernel


@pytest.mark.parametrize(("dtype", "rows"), [(pl.FP32, 512), (pl.FP16, 1024)])
def test_a_used_column_max_is_accumulated_by_a_first_loop_then_broadcast(dtype, rows):
    kernel = scaled_by_column_peak(dtype, rows)
    x = (torch.rand(rows, 128) + 0.5).to(DTYPES[dtype])
    out = torch.zeros(rows, 128, dtype=DTYPES[dtype])
    kernel(x, out, config=SIM)
    torch.testing.assert_close(out, x / x.amax(dim=0, keepdim=True))
    assert loops(kernel) == 2


def shifted_by_column_total(dtype):
    @pl.jit
    def kernel(x: pl.Tensor[[512, 128], dtype], out: pl.Out[pl.Tensor[[512, 128], dtype]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = x - pl.col_sum(x)
        return out

    return kernel


@pytest.mark.parametrize("dtype", [pl.FP32, pl.INT32])
def test_a_used_column_sum_over_four_times_the_budget(dtype):
    kernel = shifted_by_column_total(dtype)
    x = torch.randint(-50, 50, (512, 128)).to(DTYPES[dtype])
    out = torch.zeros(512, 128, dtype=DTYPES[dtype])
    kernel(x, out, config=SIM)
    torch.testing.assert_close(out, x - x.sum(dim=0, keepdim=True, dtype=x.dtype))
    assert loops(kernel) == 2


@pl.jit
def centred(
    x: pl.Tensor[[384, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[384, 128], pl.FP32]],
    mean: pl.Out[pl.Tensor[[1, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.col_sum(x) / 384
        mean[:] = m
        out[:] = x - m
    return out


def test_a_column_mean_chain_is_subtracted_and_stored():
    x = torch.randn(384, 128)
    out, mean = torch.zeros(384, 128), torch.zeros(1, 128)
    centred(x, out, mean, config=SIM)
    torch.testing.assert_close(mean, x.mean(dim=0, keepdim=True))
    torch.testing.assert_close(out, x - x.mean(dim=0, keepdim=True))
    assert loops(centred) == 2


@pl.jit
def batch_norm(x: pl.Tensor[[512, 64], pl.FP32], out: pl.Out[pl.Tensor[[512, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        d = x - pl.col_sum(x) / 512
        var = pl.col_sum(d * d) / 512
        out[:] = d / pl.sqrt(var + 1e-5)
    return out


def test_batch_norm_over_rows_runs_as_three_loops():
    x = torch.randn(512, 64) * 3 + 1
    out = torch.zeros(512, 64)
    batch_norm(x, out, config=SIM)
    expected = torch.nn.functional.batch_norm(x, None, None, training=True, eps=1e-5)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert loops(batch_norm) == 3  # the mean, then the variance, then the normalised rows


@pl.jit
def dynamic_peak(x: pl.Tensor[[M, 128], pl.FP32], out: pl.Out[pl.Tensor[[M, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = x - pl.col_max(x)
    return out


@pytest.mark.parametrize("rows", [300, 1000, 7])
def test_a_used_column_reduction_over_a_dynamic_row_count_pads_the_last_block(rows):
    x = torch.randn(rows, 128) - 10  # all negative: a zero in a padded row would be a wrong max
    out = torch.zeros(rows, 128)
    dynamic_peak(x, out, config=SIM)
    torch.testing.assert_close(out, x - x.amax(dim=0, keepdim=True))


def test_a_small_used_column_reduction_still_runs_whole():
    @pl.jit
    def small(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = x / pl.col_sum(x)
        return out

    x = torch.rand(16, 128) + 0.5
    out = torch.zeros(16, 128)
    small(x, out, config=SIM)
    torch.testing.assert_close(out, x / x.sum(dim=0, keepdim=True))
    assert loops(small) == 0


def test_a_prime_row_count_carries_the_column_reduction_into_the_smaller_last_block():
    kernel = scaled_by_column_peak(pl.FP32, 389)
    x = torch.rand(389, 128) + 0.5
    out = torch.zeros(389, 128)
    kernel(x, out, config=SIM)
    torch.testing.assert_close(out, x / x.amax(dim=0, keepdim=True))
    printed = print_ir(kernel.lower())
    assert printed.count("pl.pipeline(") == 2 and printed.count("pl.tile.col_max(") == 2  # loop + last block


def reshaped(dtype, rows, cols, shape):
    @pl.jit
    def kernel(
        x: pl.Tensor[[rows, cols], dtype],
        y: pl.Tensor[shape, dtype],
        out: pl.Out[pl.Tensor[shape, dtype]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(pl.reshape(pl.mul(x, 2), shape), y)
        return out

    return kernel


@pytest.mark.parametrize("shape", [[2048, 256], [8192, 64], [512, 1024]])
@pytest.mark.parametrize("dtype", [pl.FP32, pl.FP16, pl.BF16, pl.INT32])
def test_a_large_reshape_runs_over_blocks_of_whole_rows(dtype, shape):
    kernel = reshaped(dtype, 4096, 128, shape)
    x = torch.randint(-100, 100, (4096, 128)).to(DTYPES[dtype])
    y = torch.randint(-100, 100, shape).to(DTYPES[dtype])
    out = torch.zeros(*shape, dtype=DTYPES[dtype])
    kernel(x, y, out, config=SIM)
    torch.testing.assert_close(out, (x * 2).reshape(shape) + y)
    assert loops(kernel) == 1


def test_a_reshape_whose_blocks_are_not_whole_rows_of_the_source_moves_the_row_offset():
    kernel = reshaped(pl.FP32, 4096, 96, [3072, 128])  # 4 rows of 96 are 3 rows of 128
    x, y = torch.randn(4096, 96), torch.randn(3072, 128)
    out = torch.zeros(3072, 128)
    kernel(x, y, out, config=SIM)
    torch.testing.assert_close(out, (x * 2).reshape(3072, 128) + y)
    printed = print_ir(kernel.lower())
    assert "pl.pipeline(0, 4096, 64, stage=4" in printed and "(r * 3) // 4" in printed


def test_a_reshape_without_a_block_of_whole_rows_says_why_it_runs_whole():
    kernel = reshaped(pl.FP32, 4096, 128, [1, 524288])  # one row of the result is 4096 rows of x
    with pytest.raises(MemoryBudgetError, match="no block of at most 128 whole rows") as err:
        kernel.lower()
    assert err.value.hint and err.value.span is not None


@pl.jit
def transposed(x: pl.Tensor[[1024, 128], pl.FP32], out: pl.Out[pl.Tensor[[128, 1024], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.transpose(x, 0, 1)
    return out


def test_a_large_transpose_says_why_it_is_not_row_blocked():
    with pytest.raises(MemoryBudgetError, match="block of columns of the result") as err:
        transposed.lower()
    assert "pl.transpose(pl.load(" in err.value.hint


@pl.jit
def dynamic_batch_norm(
    x: pl.Tensor[[M, 64], pl.FP32], n: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        d = x - pl.col_sum(x) / n
        var = pl.col_sum(d * d) / n
        out[:] = d / pl.sqrt(var + 1e-5)
    return out


@pytest.mark.parametrize("rows", [700, 5])
def test_batch_norm_over_a_dynamic_row_count_pads_each_accumulating_loop(rows):
    x = torch.randn(rows, 64) * 3 + 1
    out = torch.zeros(rows, 64)
    dynamic_batch_norm(x, torch.full((1, 64), float(rows)), out, config=SIM)
    expected = torch.nn.functional.batch_norm(x, None, None, training=True, eps=1e-5)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert loops(dynamic_batch_norm) == 3
