"""Scalar operands: (a + b) * 2.0 with the scalar form of mul.

A Python number as the right operand selects the scalar instruction (``pl.mul(t, 2.0)``);
so does Python arithmetic on tiles (``t * 2.0``).

    python examples/beginner/03_scalar_ops.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def add_then_double(
    a: pl.Tensor[[128, 128], pl.FP32],
    b: pl.Tensor[[128, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_then_double"):
        ta = pl.load(a, [0, 0], [128, 128])
        tb = pl.load(b, [0, 0], [128, 128])
        doubled = pl.mul(pl.add(ta, tb), 2.0)
        pl.store(doubled, [0, 0], out)
    return out


@pl.jit
def operators(
    a: pl.Tensor[[64, 64], pl.FP32],
    b: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="operators"):
        ta = pl.load(a, [0, 0], [64, 64])
        tb = pl.load(b, [0, 0], [64, 64])
        pl.store((ta + tb) * 2.0 - tb / 4.0, [0, 0], out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b, out = torch.randn(128, 128), torch.randn(128, 128), torch.zeros(128, 128)
    add_then_double(a, b, out, config=config)
    torch.testing.assert_close(out, (a + b) * 2.0)

    a, b, out = torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)
    operators(a, b, out, config=config)
    torch.testing.assert_close(out, (a + b) * 2.0 - b / 4.0)
    print("OK")


if __name__ == "__main__":
    main()
