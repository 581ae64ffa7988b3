"""Elementwise ops: add and mul at 128x128 and 64x64, and a [512, 128] add in four chunks.

Kernels are specialised per shape: the same ``@pl.jit`` function with bare ``pl.Tensor``
parameters serves both sizes. Its body is written on whole tensors; the compiler tiles it so
that the operands, the sum and the product fit the vector unit's memory together. The chunked
add does the tiling by hand: it walks the rows with ``pl.range`` and loop-variable offsets, one
[128, 128] tile at a time.

    python examples/beginner/02_elementwise.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def sum_and_product(a: pl.Tensor, b: pl.Tensor, total: pl.Out[pl.Tensor], product: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_mul"):
        total[:] = pl.add(a, b)
        product[:] = pl.mul(a, b)
    return total, product


@pl.jit
def chunked_add(
    a: pl.Tensor[[512, 128], pl.FP32],
    b: pl.Tensor[[512, 128], pl.FP32],
    c: pl.Out[pl.Tensor[[512, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="chunked_add"):
        for i in pl.range(4):
            ta = pl.load(a, [i * 128, 0], [128, 128])
            tb = pl.load(b, [i * 128, 0], [128, 128])
            pl.store(pl.add(ta, tb), [i * 128, 0], c)
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    for size in (128, 64):
        a, b = torch.randn(size, size), torch.randn(size, size)
        total, product = torch.zeros(size, size), torch.zeros(size, size)
        sum_and_product(a, b, total, product, config=config)
        torch.testing.assert_close(total, a + b)
        torch.testing.assert_close(product, a * b)

    a, b, c = torch.randn(512, 128), torch.randn(512, 128), torch.zeros(512, 128)
    chunked_add(a, b, c, config=config)
    torch.testing.assert_close(c, a + b)
    print("OK")


if __name__ == "__main__":
    main()
