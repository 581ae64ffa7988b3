"""Grids of ``pl.at`` scopes under ``pl.parallel`` loops: a task per tile or row band, of kernels
that replay alike and of kernels that do not (a branch on data, dynamic extents that differ from
task to task, tensors sharing storage in some tasks, a race). ``tests/test_replay_grid.py`` runs
them with and without replay; run as a script (``tests/test_engines_agree.py`` does), each runs
once, checked against torch, a matmul grid in timing-only mode too."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto.ir import RaceError
from pypto.runtime import RunConfig

TILE = 64
W = pl.dynamic("W")  # the columns of the view a task is passed


@pl.jit
def grid_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    m, k = a.shape
    _, n = b.shape
    for i in pl.parallel(m // TILE):
        for j in pl.parallel(n // TILE):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="grid_tile"):
                r0 = i * TILE
                c0 = j * TILE
                acc = pl.matmul(a[r0 : r0 + TILE, 0:TILE], b[0:TILE, c0 : c0 + TILE], out_dtype=pl.FP32)
                for kk in pl.range(1, k // TILE):
                    k0 = kk * TILE
                    acc = pl.matmul_acc(
                        acc, a[r0 : r0 + TILE, k0 : k0 + TILE], b[k0 : k0 + TILE, c0 : c0 + TILE]
                    )
                out[r0 : r0 + TILE, c0 : c0 + TILE] = acc
    return out


@pl.jit
def grid_branch(x: pl.Tensor[[256, 64], pl.FP32], flags: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor]):
    for i in pl.parallel(16):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="branchy"):
            t = x[i * 16 : i * 16 + 16, :]
            if pl.read(flags, [i]) > 0:  # data: the tasks walk one of two ways
                out[i * 16 : i * 16 + 16, :] = pl.exp(t)
            else:
                out[i * 16 : i * 16 + 16, :] = pl.neg(pl.add(t, t))
    return out


@pl.jit.incore
def scaled(x: pl.Tensor[[16, W], pl.FP32], out: pl.Out[pl.Tensor[[16, W], pl.FP32]]):
    for c in pl.range(0, W, 64):  # as many steps as the view's columns
        pl.store(pl.mul(pl.load(x, [0, c], [16, 64]), 2.0), [0, c], out)
    return out


@pl.jit
def grid_widths(x: pl.Tensor[[128, 256], pl.FP32], out: pl.Out[pl.Tensor[[128, 256], pl.FP32]]):
    for b in pl.parallel(8):
        width = 64 + (b % 2) * 128  # 64 or 192 columns: the tasks' dynamic extents differ
        part = pl.slice(out, [16, width], [b * 16, 0])
        part = scaled(pl.slice(x, [16, width], [b * 16, 0]), part)
    return out


@pl.jit.incore
def doubled(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    pl.store(pl.mul(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], out)
    pl.store(pl.mul(pl.load(x, [0, 64], [16, 64]), 2.0), [0, 64], out)  # (this load after that store)
    return out


@pl.jit.incore
def doubled_if(
    x: pl.Tensor[[16, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
    flags: pl.Tensor[[1], pl.INT32],
):
    if pl.read(flags, [0]) > 0:  # data: its tasks walk first
        pl.store(pl.mul(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], out)
        pl.store(pl.mul(pl.load(x, [0, 64], [16, 64]), 2.0), [0, 64], out)
    return out


@pl.jit
def grid_in_place(x: pl.Tensor[[128, 128], pl.FP32], y: pl.InOut[pl.Tensor[[128, 128], pl.FP32]]):
    for b in pl.parallel(8):
        rows = pl.slice(y, [16, 128], [b * 16, 0])
        if b % 2 == 0:
            rows = doubled(pl.slice(x, [16, 128], [b * 16, 0]), rows)
        if b % 2 == 1:  # in place: its second load waits for its first store, to the same storage
            rows = doubled(rows, rows)
    return y


@pl.jit
def grid_in_place_if(
    x: pl.Tensor[[128, 128], pl.FP32],
    y: pl.InOut[pl.Tensor[[128, 128], pl.FP32]],
    flags: pl.Tensor[[1], pl.INT32],
):
    for b in pl.parallel(8):
        rows = pl.slice(y, [16, 128], [b * 16, 0])
        if b % 2 == 0:
            rows = doubled_if(pl.slice(x, [16, 128], [b * 16, 0]), rows, flags)
        else:
            rows = doubled_if(rows, rows, flags)
    return y


@pl.jit
def grid_stages(
    x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]], out: pl.Out[pl.Tensor]
):
    for s in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="fill"):  # waits for the last step's readers
            y[:, :] = pl.mul(x, s + 1.0)
        for i in pl.parallel(4):  # each reads what this step's fill wrote, and none before it did
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="read_band"):
                r = (s * 4 + i) * 16
                out[r : r + 16, :] = pl.exp(y[i * 16 : i * 16 + 16, :])
    return out


def stages_reference(x: torch.Tensor) -> torch.Tensor:
    """What :func:`grid_stages` leaves in ``out``."""
    return torch.cat([((s + 1.0) * x[i * 16 : i * 16 + 16]).exp() for s in range(3) for i in range(4)])


@pl.jit
def grid_race(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    for i in pl.parallel(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="racy"):
            out[0:16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])  # every task: the same rows
    return out


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(384, 128).half(), torch.randn(128, 384).half()
    out = torch.zeros(384, 384)
    grid_matmul(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    grid_matmul(a, b, torch.zeros(384, 384), config=RunConfig(timing_only=True))

    x, flags = torch.randn(256, 64), torch.tensor([i % 3 == 0 for i in range(16)], dtype=torch.int32)
    out = torch.zeros(256, 64)
    grid_branch(x, flags, out)
    torch.testing.assert_close(out, torch.where(flags.repeat_interleave(16)[:, None] > 0, x.exp(), -(x + x)))

    x, out = torch.randn(128, 256), torch.zeros(128, 256)
    grid_widths(x, out)
    torch.testing.assert_close(out[:16, :64], 2 * x[:16, :64])

    x, y = torch.randn(128, 128), torch.randn(128, 128)
    want = torch.cat([2 * (x if i % 2 == 0 else y)[i * 16 : i * 16 + 16] for i in range(8)])
    grid_in_place(x, y)
    torch.testing.assert_close(y, want)
    y = torch.randn(128, 128)
    want = torch.cat([2 * (x if i % 2 == 0 else y)[i * 16 : i * 16 + 16] for i in range(8)])
    grid_in_place_if(x, y, torch.tensor([1], dtype=torch.int32))
    torch.testing.assert_close(y, want)

    x, y, out = torch.randn(64, 64), torch.zeros(64, 64), torch.zeros(192, 64)
    grid_stages(x, y, out)
    torch.testing.assert_close(out, stages_reference(x))

    try:
        grid_race(torch.randn(64, 64), torch.zeros(16, 64))
    except RaceError as error:
        print(error.message)
    else:
        raise AssertionError("the grid's tasks write the same rows: a race")


if __name__ == "__main__":
    main()
