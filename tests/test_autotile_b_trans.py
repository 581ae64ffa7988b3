"""AutoTileMatmul blocks a matmul whose right operand is transposed (``b_trans=True``, the
``[N, K]`` layout of a Linear weight) as it blocks a plain one: K slices of both operands, N
slices of the weight's rows."""

import torch

import pypto.language as pl


@pl.jit
def projected(
    x: pl.Tensor[[16, 512], pl.FP32],
    w: pl.Tensor[[384, 512], pl.FP32],
    out: pl.Out[pl.Tensor[[16, 384], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(x, w, b_trans=True)
    return out


def test_a_transposed_weight_too_big_for_l0b_is_k_and_n_blocked():
    torch.manual_seed(0)
    x, w, out = torch.randn(16, 512), torch.randn(384, 512), torch.zeros(16, 384)
    projected(x, w, out)
    torch.testing.assert_close(out, x @ w.T, rtol=1e-4, atol=1e-4)
    text = projected.lower(x, w, out).as_python()
    assert "pl.tile.matmul_acc(" in text and "b_trans=True" in text  # K-blocked, still transposed
