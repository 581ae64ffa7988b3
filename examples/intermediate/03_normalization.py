"""RMSNorm and LayerNorm of x [32, 64] with per-column gamma / beta [1, 64].

Statistics are row reductions (``pl.row_sum``) applied back with row broadcasts
(``pl.row_expand_mul`` / ``pl.row_expand_sub``); gamma and beta are column vectors broadcast
down the rows (``pl.col_expand_mul``, ``pl.col_expand``). RMSNorm is written on tiles,
LayerNorm on tensors (the compiler tiles it and loads gamma and beta once).

    python examples/intermediate/03_normalization.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, N = 32, 64
EPS = 1e-5
X = pl.Tensor[[M, N], pl.FP32]
VEC = pl.Tensor[[1, N], pl.FP32]


@pl.jit
def rms_norm(x: X, gamma: VEC, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rms_norm"):
        t = pl.load(x, [0, 0], [M, N])
        tmp = pl.create_tile([M, N], pl.FP32)
        mean_sq = pl.mul(pl.row_sum(pl.mul(t, t), tmp), 1.0 / N)
        scale = pl.rsqrt(pl.add(mean_sq, EPS))
        g = pl.load(gamma, [0, 0], [1, N])
        pl.store(pl.col_expand_mul(pl.row_expand_mul(t, scale), g), [0, 0], out)
    return out


@pl.jit
def layer_norm(x: X, gamma: VEC, beta: VEC, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="layer_norm"):
        centered = pl.row_expand_sub(x, pl.mul(pl.row_sum(x), 1.0 / N))
        var = pl.mul(pl.row_sum(pl.mul(centered, centered)), 1.0 / N)
        normed = pl.row_expand_mul(centered, pl.rsqrt(pl.add(var, EPS)))
        scaled = pl.col_expand_mul(normed, gamma)
        out[:] = pl.add(scaled, pl.col_expand(scaled, beta))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x, gamma, beta = torch.randn(M, N) * 2 + 1, torch.randn(1, N), torch.randn(1, N)

    out = torch.zeros(M, N)
    rms_norm(x, gamma, out, config=config)
    want = x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + EPS) * gamma
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)

    out = torch.zeros(M, N)
    layer_norm(x, gamma, beta, out, config=config)
    want = torch.nn.functional.layer_norm(x, (N,), gamma[0], beta[0], eps=EPS)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    print("OK")


if __name__ == "__main__":
    main()
