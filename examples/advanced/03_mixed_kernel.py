"""Mixed kernels: a @ b + bias with the cube and the vector units in one scope.

Modes:
  mixed       one scope, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]
  left_right  the same scope split along columns (pl.SplitMode.LEFT_RIGHT)
  staged      the two-scope form: the matmul scope, then the add scope

    python examples/advanced/03_mixed_kernel.py [--mode staged] [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def mixed_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)  # cube (AIC)
        out[:] = pl.add(acc, bias)  # vector (AIV)
    return out


@pl.jit
def mixed_matmul_bias_left_right(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT)],
        name_hint="mixed",
    ):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def staged_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_only"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector_only"):
        out[:] = pl.add(acc, bias)
    return out


KERNELS = {
    "mixed": mixed_matmul_bias,
    "left_right": mixed_matmul_bias_left_right,
    "staged": staged_matmul_bias,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode", choices=sorted(KERNELS), default="staged", help="kernel form (default: staged)"
    )
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    parser.add_argument("--m", type=int, default=128, help="rows of a, bias and out (default: 128)")
    args = parser.parse_args()

    torch.manual_seed(0)
    a = torch.randn(args.m, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    bias = torch.randn(args.m, 128, dtype=torch.float32)
    out = torch.zeros(args.m, 128, dtype=torch.float32)
    KERNELS[args.mode](a, b, bias, out, config=RunConfig(platform=args.platform))
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    print("OK")


if __name__ == "__main__":
    main()
