"""Row softmax of a [64, 64] fp32 matrix, written with tile reductions and row broadcasts.

Each row is shifted by its maximum (``pl.row_max``, ``pl.row_expand_sub``) so ``pl.exp`` cannot
overflow, then divided by its sum (``pl.row_sum``, ``pl.row_expand_div``). On tiles a row
reduction takes a scratch tile shaped like its input; on tensors the compiler makes one.

    python examples/intermediate/02_softmax.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M = N = 64
T = pl.Tensor[[M, N], pl.FP32]


@pl.jit
def softmax(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
        tile = pl.load(x, [0, 0], [M, N])
        tmp = pl.create_tile([M, N], pl.FP32)
        shifted = pl.row_expand_sub(tile, pl.row_max(tile, tmp))
        e = pl.exp(shifted)
        pl.store(pl.row_expand_div(e, pl.row_sum(e, tmp)), [0, 0], out)
    return out


@pl.jit
def softmax_tensors(x: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax_tensors"):
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x = torch.randn(M, N) * 4
    want = torch.softmax(x, dim=1)
    for kernel in (softmax, softmax_tensors):
        out = torch.zeros(M, N)
        kernel(x, out, config=config)
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
    print("OK")


if __name__ == "__main__":
    main()
