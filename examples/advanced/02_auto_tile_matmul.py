"""Matmuls larger than the cube's L0 buffers, tiled by the compiler.

``pl.matmul`` on whole tensors inside a scope works at any size: AutoTileMatmul splits the
inner dimension (K) into blocks whose slices fit L0A/L0B and accumulates them with
``matmul_acc``; when the result is too wide for L0C it also splits the columns (N); and
ConvertTensorToTileOps streams the rows (M) through in blocks. Two chains run here:

- fp32: ``y = (x @ w1) @ w2`` with K = 512 and 1024,
- bf16: ``y = bf16(x @ w1) @ w2``, casting the fp32 product back to bf16 between the matmuls.

    python examples/advanced/02_auto_tile_matmul.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def fp32_chain(x: pl.Tensor, w1: pl.Tensor, w2: pl.Tensor, y: pl.Out[pl.Tensor]):
    m, _ = x.shape
    _, hidden = w1.shape
    h = pl.create_tensor([m, hidden], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="up"):
        h[:] = pl.matmul(x, w1, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="down"):
        y[:] = pl.matmul(h, w2, out_dtype=pl.FP32)
    return y


@pl.jit
def bf16_chain(x: pl.Tensor, w1: pl.Tensor, w2: pl.Tensor, y: pl.Out[pl.Tensor]):
    m, _ = x.shape
    _, hidden = w1.shape
    h = pl.create_tensor([m, hidden], pl.FP32)
    hb = pl.create_tensor([m, hidden], pl.BF16)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="up"):
        h[:] = pl.matmul(x, w1, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="to_bf16"):
        hb[:] = pl.cast(h, pl.BF16, mode="rint")
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="down"):
        y[:] = pl.matmul(hb, w2, out_dtype=pl.FP32)
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x, w1, w2 = torch.randn(256, 512) * 0.1, torch.randn(512, 1024) * 0.1, torch.randn(1024, 128) * 0.1
    y = torch.zeros(256, 128)
    fp32_chain(x, w1, w2, y, config=config)
    torch.testing.assert_close(y, (x @ w1) @ w2, rtol=1e-3, atol=1e-3)

    xb, w1b, w2b = (t.to(torch.bfloat16) for t in (x, w1, w2))
    yb = torch.zeros(256, 128)
    bf16_chain(xb, w1b, w2b, yb, config=config)
    hidden = (xb.float() @ w1b.float()).to(torch.bfloat16)
    torch.testing.assert_close(yb, hidden.float() @ w2b.float(), rtol=1e-2, atol=1e-2)
    print("OK")


if __name__ == "__main__":
    main()
