"""Valid shapes as values (#12): pl.set_validshape, pl.slice(valid_shape=), through pl.move, and
reductions that see only a partial tile's valid region. Numbers against torch."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def tail_row_sums(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 1], pl.FP32]], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="tail_row_sums"):
        for r0 in pl.range(0, n, 32):
            rows = pl.minimum(32, n - r0)
            t = pl.set_validshape(pl.load(x, [r0, 0], [32, 64]), rows, 48)
            s = pl.row_sum(t, pl.create_tile([32, 64], pl.FP32))
            pl.store(s, [r0, 0], out)
    return out


@pytest.mark.parametrize("n", [100, 64, 7])
def test_a_row_sum_of_a_partial_last_tile_sees_and_stores_only_its_valid_region(n):
    x = rand(128, 64, seed=1)
    out = torch.full((128, 1), -1.0)
    tail_row_sums(x, out, n, config=SIM)
    torch.testing.assert_close(out[:n], x[:n, :48].sum(1, keepdim=True))
    assert bool((out[n:] == -1).all())


@pl.jit
def col_extremes(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[2, 16], pl.FP32]], rows: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="col_extremes"):
        t = pl.tile.set_validshape(pl.load(x, [0, 0], [16, 16]), rows, 16)
        pl.store(pl.col_max(t), [0, 0], out)
        pl.store(pl.col_sum(pl.set_validshape(t, 5, 16)), [1, 0], out)
    return out


def test_column_reductions_see_only_the_valid_rows_run_time_or_constant():
    x = rand(16, 16, seed=2) - 3.0  # all negative-ish, so padding with zero would show in the max
    out = torch.zeros(2, 16)
    col_extremes(x, out, 3, config=SIM)
    torch.testing.assert_close(out[0], x[:3].amax(0))
    torch.testing.assert_close(out[1], x[:5].sum(0))


@pl.jit
def moved_slices(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="moved_slices"):
        t = pl.load(x, [0, 0], [32, 64])
        top = pl.slice(t, [16, 32], [0, 0], valid_shape=[n, 32])
        pl.store(pl.exp(top), [0, 0], out)
        bottom = pl.slice(t, [16, 64], [16, 0], valid_shape=[4, 8])
        pl.store(bottom, [16, 0], out)
        pl.store(pl.row_max(bottom, pl.create_tile([16, 64], pl.FP32)), [16, 63], out)
    return out


def test_a_slice_valid_shape_follows_the_tile_to_stores_and_reductions():
    x = rand(32, 64, seed=3)
    out = torch.full((32, 64), -1.0)
    moved_slices(x, out, 6, config=SIM)
    want = torch.full((32, 64), -1.0)
    want[:6, :32] = x[:6, :32].exp()
    want[16:20, :8] = x[16:20, :8]
    want[16:20, 63:] = x[16:20, :8].amax(1, keepdim=True)
    torch.testing.assert_close(out, want)


def test_the_printed_program_keeps_set_validshape_and_the_reduction_padding():
    text = tail_row_sums.lower(torch.zeros(128, 64), torch.zeros(128, 1), 100).as_python()
    assert "set_validshape" in text
    assert "fillpad" in text


def test_a_run_time_valid_extent_outside_the_tile_is_an_error_at_the_call():
    with pytest.raises(Exception) as info:
        tail_row_sums_wide(rand(8, 16), torch.zeros(8, 16), 40, config=SIM)
    assert "valid_shape" in str(info.value) and "set_validshape" in str(info.value)


@pl.jit
def tail_row_sums_wide(x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="wide"):
        pl.store(pl.set_validshape(pl.load(x, [0, 0], [8, 16]), 8, n), [0, 0], out)
    return out


def test_a_constant_valid_extent_larger_than_the_tile_is_a_type_error_with_a_hint():
    @pl.jit
    def too_big(x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="too_big"):
            pl.store(pl.set_validshape(pl.load(x, [0, 0], [8, 16]), 9, 16), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        too_big(rand(8, 16), torch.zeros(8, 16), config=SIM)
    assert info.value.hint and info.value.span is not None


def test_a_valid_shape_on_a_tensor_slice_makes_a_view_whose_writes_cover_only_it():
    @pl.jit
    def on_tensor(x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="on_tensor"):
            out[0:4, :] = pl.neg(pl.slice(x, [4, 16], [0, 0], valid_shape=[2, 16]))
        return out

    x, out = rand(8, 16), torch.full((8, 16), 7.0)
    on_tensor(x, out, config=SIM)
    want = torch.full((8, 16), 7.0)
    want[:2] = -x[:2]
    torch.testing.assert_close(out, want)
