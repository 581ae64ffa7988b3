"""Every collective of ``pld.tensor`` against torch at 2, 3, 4 and 8 ranks, as a user writes it: in a
kernel on its windows (allreduce in mesh and ring modes and each ReduceOp, barrier, broadcast,
allgather, reduce_scatter, all_to_all) and as the HOST builtins between two dispatches. Each rank's
result is checked, not only rank 0's."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

NR = pl.dynamic("NR")
W = 128
RANKS = (2, 3, 4, 8)


def world(n: int) -> RunConfig:
    return RunConfig(platform="a2a3sim", distributed_config=DistributedConfig(device_ids=list(range(n))))


# ------------------------------------------------------------ allreduce in a kernel


def mesh_allreduce(op):
    @pl.jit.incore
    def kernel(
        x: pl.Tensor[[1, W], pl.FP32],
        y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ):
        data = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], data)
        data = pld.tensor.allreduce(data, signal, op=op, mode="mesh")
        return pl.store(pl.load(data, [0, 0], [1, W]), [0, 0], y)

    @pl.jit
    def chip(
        x: pl.Tensor[[1, W], pl.FP32],
        y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ):
        return kernel(x, y, data, signal)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
        n = x.shape[0]
        dbuf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
        sbuf = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            data = pld.window(dbuf, [1, W], dtype=pl.FP32)
            signal = pld.window(sbuf, [n, 1], dtype=pl.INT32)
            chip(x[r], y[r], data, signal, device=r)
        return y

    return host


MESH = {
    "Sum": (mesh_allreduce(pld.ReduceOp.Sum), lambda x: x.sum(0)),
    "Max": (mesh_allreduce(pld.ReduceOp.Max), lambda x: x.amax(0)),
    "Min": (mesh_allreduce(pld.ReduceOp.Min), lambda x: x.amin(0)),
    "Prod": (mesh_allreduce(pld.ReduceOp.Prod), lambda x: x.prod(0)),
}


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("op", list(MESH))
def test_a_mesh_allreduce_in_a_kernel_equals_torch(op, n):
    host, reduce = MESH[op]
    x = torch.rand(n, 1, W) + 0.5  # a product of 8 such stays well inside FP32
    y = torch.zeros_like(x)
    host(x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], reduce(x), rtol=1e-5, atol=1e-5)


def ring_allreduce(n: int):
    """The manual's factory pattern: the ring signal [2(NR-1), NR] needs NR known when compiling."""
    rounds = 2 * (n - 1)

    @pl.jit.incore
    def kernel(
        x: pl.Tensor[[1, W], pl.FP32],
        y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[rounds, n], pl.INT32]],
    ):
        data = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], data)
        data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum, mode="ring")
        return pl.store(pl.load(data, [0, 0], [1, W]), [0, 0], y)

    @pl.jit
    def chip(
        x: pl.Tensor[[1, W], pl.FP32],
        y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[rounds, n], pl.INT32]],
    ):
        return kernel(x, y, data, signal)

    @pl.jit.host
    def host(x: pl.Tensor[[n, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[n, 1, W], pl.FP32]]):
        dbuf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
        sbuf = pld.alloc_window_buffer([rounds, n], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            data = pld.window(dbuf, [1, W], dtype=pl.FP32)
            signal = pld.window(sbuf, [rounds, n], dtype=pl.INT32)
            chip(x[r], y[r], data, signal, device=r)
        return y

    return host


@pytest.mark.parametrize("n", RANKS)
def test_a_ring_allreduce_in_a_kernel_equals_torch(n):
    x = torch.randn(n, 1, W)
    y = torch.zeros_like(x)
    ring_allreduce(n)(x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], x.sum(0), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------ the other collectives in a kernel


@pl.jit.incore
def gather_kernel(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[NR, W], pl.FP32]],
    stage: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
    sig: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
):
    n = pld.nranks(pld.get_comm_ctx(data))
    stage = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], stage)
    data = pld.tensor.allgather(stage, data, sig)
    for j in pl.range(n):
        y = pl.store(pl.load(data, [j, 0], [1, W]), [j, 0], y)
    return y


@pl.jit
def gather_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[NR, W], pl.FP32]],
    stage: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
    sig: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
):
    return gather_kernel(x, y, stage, data, sig)


@pl.jit.host
def gather(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, NR, W], pl.FP32]]):
    n = x.shape[0]
    stage_buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
    data_buf = pld.alloc_window_buffer([n, W], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([n], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        stage = pld.window(stage_buf, [1, W], dtype=pl.FP32)
        data = pld.window(data_buf, [n, W], dtype=pl.FP32)
        sig = pld.window(sig_buf, [n], dtype=pl.INT32)
        gather_chip(x[r], y[r], stage, data, sig, device=r)
    return y


@pytest.mark.parametrize("n", RANKS)
def test_allgather_gives_every_rank_every_chunk(n):
    x = torch.randn(n, 1, W)
    y = torch.zeros(n, n, W)
    gather(x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], x[:, 0, :])


def rows_collective(body):
    """A kernel that stages its [NR, W] input as ``stage`` rows (and ``data`` rows, but for
    all_to_all), runs ``body`` (one of the collectives below) and writes ``data``'s rows out."""

    @pl.jit.incore
    def kernel(
        x: pl.Tensor[[NR, W], pl.FP32],
        y: pl.Out[pl.Tensor[[NR, W], pl.FP32]],
        stage: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
        sig: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        n = pld.nranks(ctx)
        for j in pl.range(n):
            row = pl.load(x, [j, 0], [1, W])
            stage = pl.store(row, [j, 0], stage)
            if body != "all_to_all":  # all_to_all's peers write data: a store of ours would race them
                data = pl.store(row, [j, 0], data)
        if body == "reduce_scatter":
            data = pld.tensor.reduce_scatter(data, sig, op=pld.ReduceOp.Sum)
        elif body == "all_to_all":
            data = pld.tensor.all_to_all(stage, data, sig)
        elif body == "broadcast":
            if me != 1:
                for j in pl.range(n):
                    data = pl.store(pl.full([1, W], dtype=pl.FP32, value=0.0), [j, 0], data)
            data = pld.tensor.broadcast(data, sig, root=1)
        for j in pl.range(n):
            y = pl.store(pl.load(data, [j, 0], [1, W]), [j, 0], y)
        return y

    @pl.jit
    def chip(
        x: pl.Tensor[[NR, W], pl.FP32],
        y: pl.Out[pl.Tensor[[NR, W], pl.FP32]],
        stage: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]],
        sig: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        return kernel(x, y, stage, data, sig)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, NR, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, NR, W], pl.FP32]]):
        n = x.shape[0]
        sbuf = pld.alloc_window_buffer([n, W], dtype=pl.FP32)
        dbuf = pld.alloc_window_buffer([n, W], dtype=pl.FP32)
        gbuf = pld.alloc_window_buffer([n], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            stage = pld.window(sbuf, [n, W], dtype=pl.FP32)
            data = pld.window(dbuf, [n, W], dtype=pl.FP32)
            sig = pld.window(gbuf, [n], dtype=pl.INT32)
            chip(x[r], y[r], stage, data, sig, device=r)
        return y

    return host


ROWS = {name: rows_collective(name) for name in ("reduce_scatter", "all_to_all", "broadcast")}


@pytest.mark.parametrize("n", RANKS)
def test_reduce_scatter_gives_each_rank_its_summed_row(n):
    x = torch.randn(n, n, W)
    y = torch.zeros_like(x)
    ROWS["reduce_scatter"](x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r, r], x[:, r, :].sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", RANKS)
def test_all_to_all_gives_each_rank_the_row_every_rank_meant_for_it(n):
    x = torch.randn(n, n, W)
    y = torch.zeros_like(x)
    ROWS["all_to_all"](x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], x[:, r, :])


@pytest.mark.parametrize("n", RANKS)
def test_broadcast_gives_every_rank_the_roots_data(n):
    x = torch.randn(n, n, W)
    y = torch.zeros_like(x)
    ROWS["broadcast"](x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], x[1])


# ------------------------------------------------------------ barrier, reused


@pl.jit.incore
def barrier_kernel(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    data = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], data)
    sig = pld.tensor.barrier(sig)  # the store above is seen by every peer after it
    got = pld.tile.remote_load(data, peer=(me + 1) % n, offsets=[0, 0], shape=[1, W])
    sig = pld.tensor.barrier(sig)  # self-clearing: the same signal again; no one overwrites a row read
    data = pl.store(pl.add(got, got), [0, 0], data)
    sig = pld.tensor.barrier(sig)
    back = pld.tile.remote_load(data, peer=(me + n - 1) % n, offsets=[0, 0], shape=[1, W])
    return pl.store(back, [0, 0], y)


@pl.jit
def barrier_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    return barrier_kernel(x, y, data, sig)


@pl.jit.host
def barriers(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    n = x.shape[0]
    dbuf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    sbuf = pld.alloc_window_buffer([n, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(dbuf, [1, W], dtype=pl.FP32)
        sig = pld.window(sbuf, [n, 1], dtype=pl.INT32)
        barrier_chip(x[r], y[r], data, sig, device=r)
    return y


@pytest.mark.parametrize("n", RANKS)
def test_a_barrier_reused_three_times_orders_every_remote_load(n):
    x = torch.randn(n, 1, W)
    y = torch.zeros_like(x)
    barriers(x, y, config=world(n))
    # rank r read rank r+1's row and doubled it into its own; then read rank r-1's: 2 * x[r]
    torch.testing.assert_close(y, 2 * x)


# ------------------------------------------------------------ the HOST builtins


@pl.jit.incore
def put_rows(x: pl.Tensor[[NR, W], pl.FP32], d: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]]):
    n = pld.nranks(pld.get_comm_ctx(d))
    for j in pl.range(n):
        d = pl.store(pl.load(x, [j, 0], [1, W]), [j, 0], d)
    return d


@pl.jit
def put_chip(x: pl.Tensor[[NR, W], pl.FP32], d: pl.InOut[pld.DistributedTensor[[NR, W], pl.FP32]]):
    return put_rows(x, d)


@pl.jit.incore
def take_rows(d: pld.DistributedTensor[[NR, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, W], pl.FP32]]):
    n = pld.nranks(pld.get_comm_ctx(d))
    for j in pl.range(n):
        y = pl.store(pl.load(d, [j, 0], [1, W]), [j, 0], y)
    return y


@pl.jit
def take_chip(d: pld.DistributedTensor[[NR, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, W], pl.FP32]]):
    return take_rows(d, y)


@pl.jit.host
def host_allreduce(x: pl.Tensor[[NR, NR, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, NR, W], pl.FP32]]):
    n = x.shape[0]
    buf = pld.alloc_window_buffer([n, W], dtype=pl.FP32)
    data = pld.window(buf, [n, W], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        put_chip(x[r], data, device=r)
    data = pld.tensor.allreduce(data, op=pld.ReduceOp.Max, core_num=2)
    for r in pl.range(pld.world_size()):
        take_chip(data, y[r], device=r)
    return y


@pl.jit.host
def host_reduce_scatter(x: pl.Tensor[[NR, NR, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, NR, W], pl.FP32]]):
    n = x.shape[0]
    buf = pld.alloc_window_buffer([n, W], dtype=pl.FP32)
    sig_buf = pld.alloc_window_buffer([n], dtype=pl.INT32)
    data = pld.window(buf, [n, W], dtype=pl.FP32)
    sig = pld.window(sig_buf, [n], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        put_chip(x[r], data, device=r)
    data = pld.tensor.reduce_scatter(data, sig, op=pld.ReduceOp.Sum)
    for r in pl.range(pld.world_size()):
        take_chip(data, y[r], device=r)
    return y


@pytest.mark.parametrize("n", RANKS)
def test_the_host_allreduce_and_reduce_scatter_builtins_equal_torch(n):
    x = torch.randn(n, n, W)
    y = torch.zeros_like(x)
    host_allreduce(x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r], x.amax(0))
    y.zero_()
    host_reduce_scatter(x, y, config=world(n))
    for r in range(n):
        torch.testing.assert_close(y[r, r], x[:, r, :].sum(0), rtol=1e-5, atol=1e-5)
