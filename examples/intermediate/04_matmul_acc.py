"""A matmul with K = 64 done as two K = 32 chunks: ``acc = pl.matmul(...)`` starts the sum in
Acc (L0C) and ``acc = pl.matmul_acc(acc, ...)`` adds the second chunk's product to it.

The tile form loads each chunk itself; the tensor form names chunks with subscripts
(``a[:, 0:32]``) and loops over two column blocks of the output, whose offsets are run-time
values (``b[0:32, n0:n0 + 32]``).

    python examples/intermediate/04_matmul_acc.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, K, N = 64, 64, 64
KC = 32  # the K chunk
NB = 32  # the output column block of the tensor form


@pl.jit
def matmul_tiles(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul_tiles"):
        a0 = pl.move(pl.load(a, [0, 0], [M, KC], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b0 = pl.move(pl.load(b, [0, 0], [KC, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(a0, b0)
        a1 = pl.move(pl.load(a, [0, KC], [M, KC], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b1 = pl.move(pl.load(b, [KC, 0], [KC, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul_acc(acc, a1, b1)
        pl.store(acc, [0, 0], c)
    return c


@pl.jit
def matmul_tensors(
    a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="matmul_tensors"):
        for j in pl.range(N // NB):
            n0 = j * NB
            acc = pl.matmul(a[:, 0:KC], b[0:KC, n0 : n0 + NB])
            acc = pl.matmul_acc(acc, a[:, KC:K], b[KC:K, n0 : n0 + NB])
            c[:, n0 : n0 + NB] = acc
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    want = a.float() @ b.float()
    for kernel in (matmul_tiles, matmul_tensors):
        c = torch.zeros(M, N)
        kernel(a, b, c, config=config)
        torch.testing.assert_close(c, want, rtol=1e-4, atol=1e-4)
    print("OK")


if __name__ == "__main__":
    main()
