"""RMSNorm, statistics in FP32 as Qwen3 has it: ``rmsnorm`` on tensors (tiled by rows) and
``rmsnorm_rows``, an inline helper on the per-head tiles of the q/k norm. Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/rmsnorm.py``.

    python examples/models/qwen3_jit/kernels/rmsnorm.py [-p a2a3sim]

normalises a batch of FP32 rows into BF16 with layer 1 of stacked weights, against torch.
"""

import argparse

import torch

import pypto.language as pl
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm, rmsnorm_rows
from pypto.runtime import RunConfig

__all__ = ["main", "rmsnorm", "rmsnorm_rows"]


@pl.jit
def input_norm(x: pl.Tensor, weights: pl.Tensor, out: pl.Out[pl.Tensor], eps: pl.FP32):
    out = rmsnorm(x, weights, out, eps, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)
    torch.manual_seed(0)
    x, weights = torch.randn(4, 1024), (1 + 0.1 * torch.randn(2, 1024)).to(torch.bfloat16)
    out = torch.zeros(4, 1024, dtype=torch.bfloat16)
    input_norm(x, weights, out, 1e-6, config=config)
    normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(out, weights[1] * normed.to(torch.bfloat16))
    print("OK")


if __name__ == "__main__":
    main()
