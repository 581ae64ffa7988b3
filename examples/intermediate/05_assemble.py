"""Assembling tiles into bigger tiles at offsets, and atomically into global memory.

``pl.tile.assemble(dst, src, [r, c])`` writes ``src`` into ``dst`` at ``[r, c]`` and returns
``dst`` (destination-passing: use it as a statement or as ``dst = pl.tile.assemble(dst, ...)``).
It runs Acc -> Mat on the cube (two matmul results side by side, multiplied on) and Vec -> Vec
on the vector units (rows in reverse order, blocks transposed in a double loop, one row
broadcast down a tile). ``pl.assemble(out, x, [r, c], atomic=pl.AtomicType.Add)`` adds into
global memory: two tasks each add one K-half of a matmul into the same output.

    python examples/intermediate/05_assemble.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

N = 64
H = N // 2
SQ = pl.Tensor[[N, N], pl.FP32]


@pl.jit
def acc_to_mat(a: SQ, b: SQ, d: SQ, out: pl.Out[SQ]):
    """out = [a @ b[:, :H] | a @ b[:, H:]] @ d, the two halves assembled in L1."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="acc_to_mat"):
        a_left = pl.move(pl.load(a, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        ab = pl.create_tile([N, N], pl.FP32, target_memory=pl.Mem.Mat)
        for j in pl.range(2):
            b_half = pl.load(b, [0, j * H], [N, H], target_memory=pl.Mem.Mat)
            half = pl.matmul(a_left, pl.move(b_half, target_memory=pl.Mem.Right))
            ab = pl.tile.assemble(ab, half, [0, j * H])
        d_right = pl.move(pl.load(d, [0, 0], [N, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.store(pl.matmul(pl.move(ab, target_memory=pl.Mem.Left), d_right), [0, 0], out)
    return out


@pl.jit
def vec_to_vec(
    x: SQ, v: pl.Tensor[[1, N], pl.FP32], flipped: pl.Out[SQ], blocks: pl.Out[SQ], rows: pl.Out[SQ]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vec_to_vec"):
        # Row by row: the rows of x in reverse order.
        rev = pl.create_tile([N, N], pl.FP32)
        for i in pl.range(N):
            rev = pl.tile.assemble(rev, pl.load(x, [N - 1 - i, 0], [1, N]), [i, 0])
        pl.store(rev, [0, 0], flipped)
        # A double loop: block (i, j) of 2 * x lands at block (j, i).
        swapped = pl.create_tile([N, N], pl.FP32)
        for i in pl.range(2):
            for j in pl.range(2):
                block = pl.mul(pl.load(x, [i * H, j * H], [H, H]), 2.0)
                pl.tile.assemble(swapped, block, [j * H, i * H])
        pl.store(swapped, [0, 0], blocks)
        # A column broadcast: the row v repeated down every row.
        row = pl.load(v, [0, 0], [1, N])
        repeated = pl.create_tile([N, N], pl.FP32)
        for i in pl.range(N):
            repeated = pl.tile.assemble(repeated, row, [i, 0])
        pl.store(repeated, [0, 0], rows)
    return flipped, blocks, rows


@pl.jit
def split_k(a: SQ, b: SQ, out: pl.InOut[SQ]):
    """out += a @ b, as two tasks that each add one K-half of the product."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_low"):
        pl.assemble(out, pl.matmul(a[:, 0:H], b[0:H, :]), [0, 0], atomic=pl.AtomicType.Add)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_high"):
        pl.assemble(out, pl.matmul(a[:, H:N], b[H:N, :]), [0, 0], atomic=pl.AtomicType.Add)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b, d = (torch.randn(N, N) / 4 for _ in range(3))
    out = torch.zeros(N, N)
    acc_to_mat(a, b, d, out, config=config)
    torch.testing.assert_close(out, (a @ b) @ d, rtol=1e-4, atol=1e-4)

    x, v = torch.randn(N, N), torch.randn(1, N)
    flipped, blocks, rows = torch.zeros(N, N), torch.zeros(N, N), torch.zeros(N, N)
    vec_to_vec(x, v, flipped, blocks, rows, config=config)
    torch.testing.assert_close(flipped, x.flip(0), rtol=0, atol=0)
    want = torch.cat([torch.cat([x[:H, :H], x[H:, :H]], 1), torch.cat([x[:H, H:], x[H:, H:]], 1)], 0) * 2
    torch.testing.assert_close(blocks, want, rtol=0, atol=0)
    torch.testing.assert_close(rows, v.expand(N, N), rtol=0, atol=0)

    out = torch.ones(N, N)
    split_k(a, b, out, config=config)
    torch.testing.assert_close(out, 1 + a @ b, rtol=1e-4, atol=1e-4)
    print("OK")


if __name__ == "__main__":
    main()
