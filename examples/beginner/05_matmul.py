"""A cube-unit matmul, step by step: 64x64 fp32.

Operands travel DDR -> Mat (L1) by ``pl.load``, then Mat -> Left (L0A) / Right (L0B) by
``pl.move``; the cube writes Acc (L0C), which ``pl.store`` drains back to global memory.

    python examples/beginner/05_matmul.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def matmul(
    a: pl.Tensor[[64, 64], pl.FP32],
    b: pl.Tensor[[64, 64], pl.FP32],
    c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul"):
        a_mat = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_mat = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        a_left = pl.move(a_mat, target_memory=pl.Mem.Left)
        b_right = pl.move(b_mat, target_memory=pl.Mem.Right)
        c_acc = pl.matmul(a_left, b_right)
        pl.store(c_acc, [0, 0], c)
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b, c = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    matmul(a, b, c, config=config)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    print("OK")


if __name__ == "__main__":
    main()
