"""A world of simulated chips run by a HOST orchestrator: windows, dispatch, signals between ranks,
remote loads, the interconnect's timing, and the per-rank reports."""

import torch
from sim_lowered import FunctionBuilder, launcher, tensor_t
from sim_world import (
    FP32,
    INT32,
    Mem,
    dispatch_each_rank,
    do,
    peers,
    row_of,
    run_world,
    window_t,
    world_program,
)

from pypto.ir import (
    Direction,
    FunctionKind,
    NotifyOp,
    WaitCmp,
)

SIZE = 64


def allreduce_kernel(notify=True, wait=True, expected=1):
    """The manual's quickstart: stage in, notify every peer, wait for every peer, sum every peer's
    window, stage out."""
    b = FunctionBuilder("reduce_step", FunctionKind.AIV)
    inp = b.param("inp", tensor_t((1, SIZE)))
    out = b.param("out", tensor_t((1, SIZE)), Direction.Out)
    data = b.param("data", window_t((1, SIZE)), Direction.InOut)
    signal = b.param("signal", window_t((4, 1), INT32), Direction.InOut)
    ctx = b.op("ctx", "dist.get_comm_ctx", data)
    me = b.op("me", "dist.rank", ctx)
    n = b.op("n", "dist.nranks", ctx)
    local = b.op("local", "tile.load", inp, [0, 0], shape=(1, SIZE), target_memory=Mem.Vec)
    b.do("tile.store", local, [0, 0], data)
    if notify:
        peers(b, me, n, lambda peer: do(b, "dist.notify", signal, peer, [me, 0], 1, op=NotifyOp.AtomicAdd))
    if wait:
        peers(b, me, n, lambda src: b.do("dist.wait", signal, [src, 0], expected, cmp=WaitCmp.Ge))
    acc = b.op("acc", "tile.load", data, [0, 0], shape=(1, SIZE), target_memory=Mem.Vec)

    with b.carried_loop("k", 1, n, {"acc_in": acc}) as loop:
        total = b.op("total", "scalar.add", me, loop.var)
        peer = b.op("peer", "scalar.mod", total, n)
        theirs = b.op("theirs", "dist.remote_load", data, peer, [0, 0], shape=(1, SIZE))
        summed = b.op("summed", "tile.add", loop.iter_args[0], theirs)
        loop.yields.append(summed)
    b.do("tile.store", loop.results[0], [0, 0], out)
    return b.build()


def allreduce_program(ranks=None, **kernel):
    kernel_fn = allreduce_kernel(**kernel)
    chip = launcher(kernel_fn)
    entry = dispatch_each_rank(
        "orchestrator",
        chip,
        [("inputs", tensor_t((4, SIZE)), Direction.In), ("outputs", tensor_t((4, SIZE)), Direction.Out)],
        [("data", SIZE * 4, (1, SIZE), FP32), ("signal", 4 * 4, (4, 1), INT32)],
        lambda b, v, r: [
            row_of(b, v["inputs"], r, SIZE, "inp"),
            row_of(b, v["outputs"], r, SIZE, "out"),
            v["data"],
            v["signal"],
        ],
        ranks_to_cover=ranks,
    )
    return world_program(entry, chip, kernel_fn)


def test_the_quickstart_allreduce_sums_every_rank_on_every_rank():
    inputs = torch.randn(4, SIZE)
    outputs = torch.zeros(4, SIZE)
    report = run_world(allreduce_program(), [inputs, outputs], ranks=4)
    for r in range(4):
        torch.testing.assert_close(outputs[r], inputs.sum(0))
    assert len(report.chips) == 4
    assert report.total_cycles >= max(chip.total_cycles for chip in report.chips) > 0
    assert report.transfers, "the remote loads and notifies crossed the links"
    assert {(t.src, t.dst) for t in report.transfers if t.op == "dist.remote_load"} == {
        (a, b) for a in range(4) for b in range(4) if a != b
    }
