"""How tensor-level regions are tiled, on programs the fuzzer found rejected although valid: a
region's independent parts are tiled apart, and a slice that only the cube reads is cut on the
cube side. Numbers against torch on a2a3sim."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


@pl.jit
def wide_and_thin(
    x: pl.Tensor[[200, 128], pl.FP32],
    row: pl.Tensor[[1, 128], pl.FP32],
    y: pl.Out[pl.Tensor[[200, 128], pl.FP32]],
    r: pl.Out[pl.Tensor[[1, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="parts"):
        a = pl.exp(x)
        b = pl.neg(row)  # shares nothing with the [200, 128] chain
        c = pl.add(a, x)
        y[:] = pl.mul(c, 2.0)
        r[:] = b
    return y


def test_independent_parts_of_a_region_are_row_blocked_on_their_own():
    x, row = torch.randn(200, 128), torch.randn(1, 128)
    y, r = torch.zeros(200, 128), torch.zeros(1, 128)
    wide_and_thin(x, row, y, r, config=SIM)
    torch.testing.assert_close(y, (torch.exp(x) + x) * 2.0)
    torch.testing.assert_close(r, -row)
    assert "pl.pipeline(0, 200, 50, stage=4" in print_ir(wide_and_thin.lower())  # rows stream in blocks


def mixed_with_a_side_row(mode):
    @pl.jit
    def kernel(
        a: pl.Tensor[[200, 16], pl.FP16],
        b: pl.Tensor[[16, 256], pl.FP16],
        gamma: pl.Tensor[[1, 256], pl.FP32],
        out: pl.Out[pl.Tensor[[200, 256], pl.FP32]],
        side: pl.Out[pl.Tensor[[1, 256], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="mixed"):
            acc = pl.matmul(a, b)
            g = pl.neg(gamma)
            out[:] = pl.relu(acc)
            side[:] = g
        return out

    return kernel


@pytest.mark.parametrize("mode", [pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_a_mixed_scope_with_an_independent_row_vector_streams_its_rows(mode):
    a, b = torch.randn(200, 16, dtype=torch.float16), torch.randn(16, 256, dtype=torch.float16)
    gamma = torch.randn(1, 256)
    out, side = torch.zeros(200, 256), torch.zeros(1, 256)
    mixed_with_a_side_row(mode)(a, b, gamma, out, side, config=SIM)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(side, -gamma)


def prologue_into_a_k_blocked_matmul(mode):
    @pl.jit
    def kernel(
        a: pl.Tensor[[1, 512], pl.FP16],
        b: pl.Tensor[[512, 100], pl.FP16],
        out: pl.Out[pl.Tensor[[1, 100], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="mixed"):
            scaled = pl.mul(a, 0.5)
            acc = pl.matmul(scaled, b)  # K = 512 is blocked to fit L0B: slices of `scaled`
            out[:] = pl.neg(acc)
        return out

    return kernel


@pytest.mark.parametrize("mode", [pl.SplitMode.NONE, pl.SplitMode.LEFT_RIGHT])
def test_k_blocks_of_a_vector_prologue_are_cut_on_the_cube_side(mode):
    a, b = torch.randn(1, 512, dtype=torch.float16), torch.randn(512, 100, dtype=torch.float16)
    out = torch.zeros(1, 100)
    prologue_into_a_k_blocked_matmul(mode)(a, b, out, config=SIM)
    torch.testing.assert_close(out, -((a * 0.5).float() @ b.float()), rtol=1e-2, atol=1e-2)


@pl.jit
def scaled_gamma(
    x: pl.Tensor[[256, 1024], pl.FP32],
    gamma: pl.Tensor[[1, 1024], pl.FP32],
    out: pl.Out[pl.Tensor[[256, 1024], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale_cols"):
        g = pl.add(pl.mul(gamma, 0.5), 1.0)  # one row, computed once
        out[:] = pl.col_expand_mul(pl.exp(x), g)
    return out


def test_a_computed_column_vector_is_made_once_before_the_row_loop():
    x, gamma = torch.randn(256, 1024), torch.randn(1, 1024)
    out = torch.zeros(256, 1024)
    scaled_gamma(x, gamma, out, config=SIM)
    torch.testing.assert_close(out, torch.exp(x) * (gamma * 0.5 + 1.0))
    text = print_ir(scaled_gamma.lower())
    loop = text.index("pl.pipeline(0, 256")
    assert text.index("pl.tile.muls(") < loop < text.index("pl.tile.col_expand_mul(")


@pytest.mark.parametrize("mode", [pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_k_blocks_of_a_large_prologue_stream_by_rows(mode):
    @pl.jit
    def kernel(
        a: pl.Tensor[[64, 512], pl.FP32],
        b: pl.Tensor[[512, 16], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 16], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="mixed"):
            scaled = pl.mul(a, 0.5)  # 128 KB whole: its K-blocks cross to the cube a row block at a time
            out[:] = pl.neg(pl.matmul(scaled, b))
        return out

    a, b = torch.randn(64, 512), torch.randn(512, 16)
    out = torch.zeros(64, 16)
    kernel(a, b, out, config=SIM)
    torch.testing.assert_close(out, -((a * 0.5) @ b), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    ("mode", "blocks"),
    [
        (pl.SplitMode.NONE, "pl.pipeline(0, 86, 43, stage=4"),  # two blocks of 43 rows, then the last 41
        (pl.SplitMode.UP_DOWN, "[64 + (lane * 32), 0]"),  # 64 rows (32 a lane), then the last 63
    ],
)
def test_a_prime_row_count_streams_in_even_blocks_and_a_smaller_last_one(mode, blocks):
    @pl.jit
    def kernel(
        a: pl.Tensor[[127, 256], pl.FP16],
        b: pl.Tensor[[256, 256], pl.FP16],
        out: pl.Out[pl.Tensor[[127, 256], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="mixed"):
            out[:] = pl.relu(pl.matmul(a, b))
        return out

    a, b = torch.randn(127, 256, dtype=torch.float16), torch.randn(256, 256, dtype=torch.float16)
    out = torch.zeros(127, 256)
    kernel(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-2)
    assert blocks in print_ir(kernel.lower())


def test_a_vector_part_beside_a_mixed_part_is_sized_with_its_ring():
    @pl.jit
    def kernel(
        a: pl.Tensor[[127, 256], pl.INT8],
        b: pl.Tensor[[256, 256], pl.INT8],
        bias: pl.Tensor[[127, 256], pl.INT32],
        out: pl.Out[pl.Tensor[[127, 256], pl.INT32]],
        peak: pl.Out[pl.Tensor[[127, 1], pl.INT32]],
    ):
        with pl.at(
            level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"
        ):
            out[:] = pl.relu(pl.matmul(a, b))
            peak[:] = pl.row_max(bias)  # shares nothing with the matmul, but the ring's Vec is taken
        return out

    a = torch.randint(-4, 5, (127, 256), dtype=torch.int8)
    b = torch.randint(-4, 5, (256, 256), dtype=torch.int8)
    bias = torch.randint(-100, 100, (127, 256), dtype=torch.int32)
    out, peak = torch.zeros(127, 256, dtype=torch.int32), torch.zeros(127, 1, dtype=torch.int32)
    kernel(a, b, bias, out, peak, config=SIM)
    assert torch.equal(out, torch.relu(a.int() @ b.int()))
    assert torch.equal(peak, bias.amax(dim=1, keepdim=True))


@pl.jit
def column_stats(x: pl.Tensor, total: pl.Out[pl.Tensor], peak: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cols"):
        total[:] = pl.col_sum(pl.exp(x))
        peak[:] = pl.col_max(x)
    return total


@pytest.mark.parametrize("rows", [4096, 200, 127])
def test_a_column_reduction_too_big_to_run_whole_accumulates_over_row_blocks(rows):
    x = torch.randn(rows, 512)  # 200 KB or more: it does not fit Vec whole
    total, peak = torch.zeros(1, 512), torch.zeros(1, 512)
    column_stats(x, total, peak, config=SIM)
    torch.testing.assert_close(total, torch.exp(x).sum(0, keepdim=True), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(peak, x.amax(0, keepdim=True))
    text = print_ir(column_stats.lower(x, total, peak))
    assert f"shape=[{rows}, 512]" not in text  # never loaded whole: the sums run over row blocks
    assert "pl.tile.add(" in text and "pl.tile.maximum(" in text


def test_an_integer_column_max_starts_from_the_lowest_integer():
    x = torch.randint(-1000, -10, (300, 64), dtype=torch.int32)  # every value negative
    peak = torch.zeros(1, 64, dtype=torch.int32)

    @pl.jit
    def int_peak(x: pl.Tensor, peak: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="cols"):
            peak[:] = pl.col_max(pl.mul(x, 3))
        return peak

    int_peak(x, peak, config=SIM)
    assert torch.equal(peak, (x * 3).amax(0, keepdim=True))


def test_a_mixed_scope_with_a_column_sum_of_the_product_streams_its_rows():
    @pl.jit
    def kernel(
        a: pl.Tensor[[128, 512], pl.INT8],
        b: pl.Tensor[[512, 256], pl.INT8],
        out: pl.Out[pl.Tensor[[128, 256], pl.INT32]],
        sums: pl.Out[pl.Tensor[[1, 256], pl.INT32]],
    ):
        with pl.at(
            level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)], name_hint="mixed"
        ):
            acc = pl.matmul(a, b, out_dtype=pl.INT32)
            sums[:] = pl.col_sum(acc)
            out[:] = pl.relu(acc)
        return out

    a = torch.randint(-3, 4, (128, 512), dtype=torch.int8)
    b = torch.randint(-3, 4, (512, 256), dtype=torch.int8)
    out, sums = torch.zeros(128, 256, dtype=torch.int32), torch.zeros(1, 256, dtype=torch.int32)
    kernel(a, b, out, sums, config=SIM)
    product = a.int() @ b.int()
    assert torch.equal(out, torch.relu(product))
    assert torch.equal(sums, product.sum(0, keepdim=True, dtype=torch.int32))


def test_a_one_row_value_made_before_the_loop_reads_its_hoisted_load_in_a_k_blocked_chain():
    """A K-blocked matmul streams its right operands (each loaded where it is used), but the
    [1, C] row a one-row value is computed from before the row loop is loaded before it too."""

    @pl.jit
    def scaled(
        a: pl.Tensor[[256, 256], pl.FP32],
        b: pl.Tensor[[256, 100], pl.FP32],
        gamma: pl.Tensor[[1, 100], pl.FP32],
        out: pl.Out[pl.Tensor[[256, 100], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE)]):
            acc = pl.matmul(a, b)
            scale = pl.recip(pl.add(pl.abs(gamma), 1.0))
            out[:] = pl.col_expand_mul(acc, scale)
        return out

    a, b, gamma = torch.randn(256, 256) / 16, torch.randn(256, 100), torch.randn(1, 100)
    out = scaled(a, b, gamma, torch.empty(256, 100))
    torch.testing.assert_close(out, (a @ b) * torch.reciprocal(gamma.abs() + 1.0), rtol=1e-4, atol=1e-4)
