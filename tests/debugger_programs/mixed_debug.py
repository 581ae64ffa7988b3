"""A mixed kernel with a breakpoint, run by tests/test_kernel_debugger.py through a pseudo-terminal."""

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def mixed(
    a: pl.Tensor[[32, 64], pl.FP16],
    b: pl.Tensor[[64, 32], pl.FP16],
    bias: pl.Tensor[[32, 32], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        pl.debug.breakpoint()
        y = pl.add(acc, bias)
        out[:] = y
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(32, 64, dtype=torch.float16)
    b = torch.randn(64, 32, dtype=torch.float16)
    bias = torch.randn(32, 32, dtype=torch.float32)
    out = torch.zeros(32, 32, dtype=torch.float32)
    mixed(a, b, bias, out, config=RunConfig(platform="a2a3sim"))
    print("DONE", bool(torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)))
