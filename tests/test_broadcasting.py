"""Broadcasting (issue #12, item 8): an elementwise op on a [M, N] operand and a [M, 1] column
or a [1, N] row repeats the vector, as torch does, at tensor and tile level and in both operand
orders; it lowers to the registry's row/column expand ops."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import PyptoError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
M, N = 256, 64
MAT = pl.Tensor[[M, N], pl.FP32]
COL = pl.Tensor[[M, 1], pl.FP32]
ROW = pl.Tensor[[1, N], pl.FP32]


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def stable_shift(x: MAT, out: pl.Out[MAT]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift"):
        out[:] = pl.exp(x - pl.row_max(x))
    return out


def test_x_minus_its_row_max_broadcasts_the_column_and_lowers_to_row_expand_sub():
    x = rand(M, N, seed=1)
    out = torch.zeros(M, N)
    stable_shift(x, out, config=SIM)
    torch.testing.assert_close(out, (x - x.amax(1, keepdim=True)).exp())
    assert "pl.tile.row_expand_sub(" in stable_shift.lower(x, out).as_python()


@pl.jit
def with_bias(acc: MAT, bias_row: ROW, scale_col: COL, add: pl.Out[MAT], mul: pl.Out[MAT], div: pl.Out[MAT]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="bias"):
        add[:] = acc + bias_row
        mul[:] = bias_row * acc
        div[:] = acc / scale_col
    return add, mul, div


def test_a_row_and_a_column_vector_broadcast_at_tensor_level():
    acc, bias, scale = rand(M, N, seed=2), rand(1, N, seed=3), rand(M, 1, seed=4).abs() + 0.5
    add, mul, div = torch.zeros(M, N), torch.zeros(M, N), torch.zeros(M, N)
    with_bias(acc, bias, scale, add, mul, div, config=SIM)
    torch.testing.assert_close(add, acc + bias, rtol=0, atol=0)
    torch.testing.assert_close(mul, bias * acc, rtol=0, atol=0)
    torch.testing.assert_close(div, acc / scale, rtol=0, atol=0)
    text = with_bias.lower(acc, bias, scale, add, mul, div).as_python()
    assert "pl.tile.col_expand_add(" in text and "pl.tile.col_expand_mul(" in text
    assert "pl.tile.row_expand_div(" in text


@pl.jit
def vector_on_the_left(
    x: MAT, col: COL, row: ROW, csub: pl.Out[MAT], rdiv: pl.Out[MAT], cmax: pl.Out[MAT], rmin: pl.Out[MAT]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="left"):
        csub[:] = col - x
        rdiv[:] = row / x
        cmax[:] = pl.maximum(col, x)
        rmin[:] = pl.minimum(x, row)
    return csub, rdiv, cmax, rmin


def test_the_vector_may_be_the_left_operand_and_maximum_minimum_broadcast_too():
    x, col, row = rand(M, N, seed=5).abs() + 0.5, rand(M, 1, seed=6), rand(1, N, seed=7)
    outs = [torch.zeros(M, N) for _ in range(4)]
    vector_on_the_left(x, col, row, *outs, config=SIM)
    for got, want in zip(outs, [col - x, row / x, torch.maximum(col, x), torch.minimum(x, row)], strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pl.jit
def tile_softmax(
    x: pl.Tensor[[32, 64], pl.FP32],
    bias: pl.Tensor[[1, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="tile_softmax"):
        t = pl.load(x, [0, 0], [32, 64])
        b = pl.load(bias, [0, 0], [1, 64])
        tmp = pl.create_tile([32, 64], pl.FP32)
        t = t + b
        e = pl.exp(t - pl.row_max(t, tmp))
        s = pl.row_sum(e, tmp)
        p = e / s
        r = s - p  # a [32, 1] column on the left of a tile
        pl.store(r, [0, 0], out)
    return out


def test_tiles_broadcast_in_both_orders():
    x, bias = rand(32, 64, seed=8), rand(1, 64, seed=9)
    out = torch.zeros(32, 64)
    tile_softmax(x, bias, out, config=SIM)
    t = x + bias
    e = (t - t.amax(1, keepdim=True)).exp()
    s = e.sum(1, keepdim=True)
    torch.testing.assert_close(out, s - e / s)


@pl.jit
def not_a_vector(x: MAT, y: pl.Tensor[[M, 2], pl.FP32], out: pl.Out[MAT]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = x + y
    return out


def test_shapes_that_do_not_broadcast_are_still_a_shape_mismatch_at_the_line():
    with pytest.raises(PyptoError) as info:
        not_a_vector.lower(rand(M, N), rand(M, 2), torch.zeros(M, N))
    text = str(info.value)
    assert "operand shape mismatch" in text and "out[:] = x + y" in text
