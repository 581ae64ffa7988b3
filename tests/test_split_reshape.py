"""A ``pl.split`` scope through a ``[T, 1] -> [1, T] -> [T, 1]`` reshape (issue #35 item 6): under
UP_DOWN each lane holds its rows of the ``[T, 1]`` column, reshaped to its part of the ``[1, T]``
row; element-wise ops and stores of that row work on the lane's part, and the reshape back gives
the lane's rows again (LEFT_RIGHT alike, with the roles of rows and columns swapped). Any other op
of such a row would need the other lane's part: a compile error at its line."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError

T = 64


@pl.jit.inline
def matmul_tile(a: pl.Tensor, b: pl.Tensor):
    return pl.matmul(
        pl.move(pl.load(a, [0, 0], [T, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
        pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right),
    )


@pl.jit.inline
def rescale(a: pl.Tensor, b: pl.Tensor, m: pl.Tensor, out: pl.Out[pl.Tensor], row: pl.Out[pl.Tensor]):
    acc = pl.move(matmul_tile(a, b), target_memory=pl.Mem.Vec)
    tmp = pl.create_tile([T, 64], pl.FP32, target_memory=pl.Mem.Vec)
    s_t = pl.reshape(pl.row_max(acc, tmp), [1, T])  # [T, 1] -> [1, T]
    m_t = pl.reshape(pl.load(m, [0, 0], [T, 1]), [1, T])
    hi = pl.maximum(s_t, m_t)
    pl.store(hi, [0, 0], row)  # each lane writes its part of the row
    scale = pl.reshape(pl.exp(pl.sub(m_t, hi)), [T, 1])  # and back
    pl.store(pl.row_expand_mul(acc, scale), [0, 0], out)
    return out, row


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(T, 64, generator=g).half(), torch.randn(64, 64, generator=g).half()
    return a, b, torch.randn(T, 1, generator=g) * 5, torch.zeros(T, 64), torch.zeros(1, T)


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.NONE])
def test_a_column_reshaped_to_a_row_and_back_gives_torchs_numbers(mode):
    @pl.jit
    def kernel(a: pl.Tensor, b: pl.Tensor, m: pl.Tensor, out: pl.Out[pl.Tensor], row: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)]):
            out, row = rescale(a, b, m, out, row)
        return out, row

    a, b, m, out, row = inputs()
    kernel(a, b, m, out, row)
    ref = a.float() @ b.float()
    hi = torch.maximum(ref.max(1, keepdim=True).values, m)
    torch.testing.assert_close(row, hi.T)
    torch.testing.assert_close(out, ref * torch.exp(m - hi))


def test_left_right_turns_a_row_into_a_column_and_back():
    @pl.jit
    def kernel(
        a: pl.Tensor[[T, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[T, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)]):
            acc = pl.move(matmul_tile(a, b), target_memory=pl.Mem.Vec)
            col = pl.reshape(pl.col_max(acc), [64, 1])  # [1, C] -> [C, 1]
            col = pl.mul(pl.exp(col), 0.5)
            pl.store(pl.col_expand_mul(acc, pl.reshape(col, [1, 64])), [0, 0], out)
        return out

    a, b, _, out, _ = inputs(1)
    kernel(a, b, out)
    ref = a.float() @ b.float()
    torch.testing.assert_close(out, ref * torch.exp(ref.max(0, keepdim=True).values) * 0.5)


def test_a_reduction_of_the_reshaped_row_is_an_error_at_its_line():
    @pl.jit
    def kernel(
        a: pl.Tensor[[T, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[T, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.move(matmul_tile(a, b), target_memory=pl.Mem.Vec)
            tmp = pl.create_tile([T, 64], pl.FP32, target_memory=pl.Mem.Vec)
            s_t = pl.reshape(pl.row_max(acc, tmp), [1, T])
            total = pl.row_sum(s_t, pl.create_tile([1, T], pl.FP32, target_memory=pl.Mem.Vec))
            scaled = pl.row_expand_mul(s_t, total)
            pl.store(pl.row_expand_mul(acc, pl.reshape(scaled, [T, 1])), [0, 0], out)
        return out

    a, b, _, out, _ = inputs()
    with pytest.raises(ParseError) as info:
        kernel(a, b, out)
    assert "holds the reshaped [1, R] tile as each lane's part of it: pl.row_sum" in info.value.message
    assert info.value.hint.startswith("reshape the tile back before this op")
