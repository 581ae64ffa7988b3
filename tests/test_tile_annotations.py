"""A tile annotation without a memory space, as PyPTO code writes it, on a matmul's Acc result:
the kernel runs on a2a3sim with torch's numbers."""

import torch

import pypto.language as pl

M, K = 64, 64


@pl.jit
def product(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, M], pl.FP16], out: pl.Out[pl.Tensor[[M, M], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_l = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [K, M], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        c: pl.Tile[[M, M], pl.FP32] = pl.matmul(a_l, b_r)
        pl.store(c, [0, 0], out)
    return out


def test_an_acc_result_annotated_without_a_space_runs_with_torchs_numbers():
    x, y = torch.randn(M, K).half(), torch.randn(K, M).half()
    out = product(x, y, torch.empty(M, M))
    torch.testing.assert_close(out, x.float() @ y.float(), rtol=1e-3, atol=1e-2)
