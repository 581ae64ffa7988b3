"""Distributed programs end to end on a2a3sim: the shapes of PyPTO's distributed examples (a rank
scalar, windows, barriers, remote loads and stores, put/get, any world size, host callbacks, two
programs on one worker with a resident KV cache), written here from the manual, run through
compile, the prepared worker and the world simulator, each rank's numbers checked against torch;
the world report and trace, and the cross-chip diagnostics.
"""

from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto import ir
from pypto.ir import DeadlockError, RaceError
from pypto.ir.backend import WorldReport
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.ir.errors import CommError
from pypto.runtime import DistributedWorker, RunConfig
from pypto.runtime.distributed_runner import _tensor_from_continuous

NR = pl.dynamic("NR")
ROWS, COLS, W = 16, 64, 128


def world(*device_ids: int) -> RunConfig:
    return RunConfig(platform="a2a3sim", distributed_config=DistributedConfig(device_ids=list(device_ids)))


# ------------------------------------------------------------ a rank scalar (01, 02)


@pl.jit.incore
def affine_by_rank(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    rank: pl.Scalar[pl.INT32],
):
    t = pl.load(x, [0, 0], [ROWS, COLS])
    r = pl.cast(rank, target_type=pl.FP32)
    return pl.store(pl.add(pl.mul(t, r), r), [0, 0], y)  # x * r + r


@pl.jit
def affine_chip(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
    rank: pl.Scalar[pl.INT32],
):
    return affine_by_rank(x, y, rank)


@pl.jit.host
def affine(x: pl.Tensor[[NR, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[NR, ROWS, COLS], pl.FP32]]):
    for r in pl.range(pld.world_size()):
        affine_chip(x[r], y[r], r, device=r)


def test_each_rank_gets_its_own_index_and_slice():
    x = torch.randn(3, ROWS, COLS)
    y = torch.zeros(3, ROWS, COLS)
    compiled = affine.compile(x, y, config=world(7, 2, 5))
    assert isinstance(compiled, DistributedCompiledProgram) and compiled.world_size == 3
    compiled(x, y, config=RunConfig(platform="a2a3sim"))
    r = torch.arange(3, dtype=torch.float32).view(3, 1, 1)
    torch.testing.assert_close(y, x * r + r)
    report = compiled.last_report
    assert isinstance(report, WorldReport) and report.device_ids == (7, 2, 5) and len(report.chips) == 3


def test_the_host_kernel_call_compiles_and_runs():
    x = torch.randn(2, ROWS, COLS)
    y = torch.zeros(2, ROWS, COLS)
    affine(x, y, config=world(0, 1))
    r = torch.arange(2, dtype=torch.float32).view(2, 1, 1)
    torch.testing.assert_close(y, x * r + r)
    assert isinstance(affine.last_report, WorldReport)


# ------------------------------------------------------------ windows and a hand barrier (03, 04)


@pl.jit.incore
def mirror(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    win: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    seen: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    ctx = pld.get_comm_ctx(win)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    win = pl.store(pl.exp(pl.load(x, [0, 0], [1, W])), [0, 0], win)
    for p in pl.range(n):
        if p != me:
            pld.system.notify(seen, peer=p, offsets=[me, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    for p in pl.range(n):
        if p != me:
            pld.system.wait(seen, offsets=[p, 0], expected=1, cmp=pld.WaitCmp.Ge)
    acc = pl.load(win, [0, 0], [1, W])
    for p in pl.range(n):
        if p != me:
            acc = pl.add(acc, pld.tile.remote_load(win, peer=p, offsets=[0, 0], shape=[1, W]))
    return pl.store(acc, [0, 0], y)


@pl.jit
def mirror_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    win: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    seen: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    return mirror(x, y, win, seen)


@pl.jit.host
def exp_sum(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    win_buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    seen_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
    for r in pl.range(pld.world_size()):
        win = pld.window(win_buf, [1, W], dtype=pl.FP32)
        seen = pld.window(seen_buf, [pld.world_size(), 1], dtype=pl.INT32)
        mirror_chip(x[r], y[r], win, seen, device=r)
    return y


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_a_hand_barrier_orders_every_remote_load(ranks):
    x = torch.randn(ranks, 1, W)
    y = torch.zeros(ranks, 1, W)
    exp_sum(x, y, config=world(*range(ranks)))
    torch.testing.assert_close(y, torch.exp(x).sum(dim=0, keepdim=True).expand_as(y), rtol=1e-5, atol=1e-5)
    report = exp_sum.last_report
    assert len(report.transfers) > 0
    assert {t.src for t in report.transfers} == set(range(ranks))


# ------------------------------------------------------------ remote store and put/get (05, 06, 07)


@pl.jit.incore
def push_left(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    inbox: pld.DistributedTensor[[1, W], pl.FP32],
    flag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    ctx = pld.get_comm_ctx(inbox)
    n = pld.nranks(ctx)
    left = (pld.rank(ctx) + n - 1) % n
    t = pl.load(x, [0, 0], [1, W])
    pld.tile.remote_store(pl.mul(t, t), inbox, peer=left, offsets=[0, 0])
    pld.system.notify(flag, peer=left, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(flag, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)
    return pl.store(pl.load(inbox, [0, 0], [1, W]), [0, 0], y)


@pl.jit.incore
def pull_right(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    inbox: pld.DistributedTensor[[1, W], pl.FP32],
    flag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    ctx = pld.get_comm_ctx(inbox)
    n = pld.nranks(ctx)
    me = pld.rank(ctx)
    inbox = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], inbox)
    pld.system.notify(flag, peer=(me + n - 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(flag, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
    pld.tensor.get(y, peer=(me + 1) % n, src=inbox)
    return y


@pl.jit
def push_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    inbox: pld.DistributedTensor[[1, W], pl.FP32],
    flag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    return push_left(x, y, inbox, flag)


@pl.jit
def pull_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    inbox: pld.DistributedTensor[[1, W], pl.FP32],
    flag: pld.DistributedTensor[[1, 1], pl.INT32],
):
    return pull_right(x, y, inbox, flag)


@pl.jit.host
def squares_left(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    inbox_buf = pld.alloc_window_buffer(W * pl.FP32.get_byte())
    flag_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
    for r in pl.range(pld.world_size()):
        inbox = pld.window(inbox_buf, [1, W], dtype=pl.FP32)
        flag = pld.window(flag_buf, [1, 1], dtype=pl.INT32)
        push_chip(x[r], y[r], inbox, flag, device=r)
    return y


@pl.jit.host
def from_right(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    inbox_buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    flag_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        inbox = pld.window(inbox_buf, [1, W], dtype=pl.FP32)
        flag = pld.window(flag_buf, [1, 1], dtype=pl.INT32)
        pull_chip(x[r], y[r], inbox, flag, device=r)
    return y


@pytest.mark.parametrize("ranks", [2, 5])
def test_remote_store_pushes_to_the_left_neighbour(ranks):
    x = torch.randn(ranks, 1, W)
    y = torch.zeros(ranks, 1, W)
    squares_left(x, y, config=world(*range(ranks)))
    torch.testing.assert_close(y, torch.roll(x * x, -1, dims=0))


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_get_pulls_from_the_right_neighbour(ranks):
    x = torch.randn(ranks, 1, W)
    y = torch.zeros(ranks, 1, W)
    compiled = from_right.compile(x, y, config=world(*range(ranks)))
    compiled(x, y)
    torch.testing.assert_close(y, torch.roll(x, -1, dims=0))


def test_each_link_transfer_carries_its_bytes_and_the_users_line():
    squares_left(torch.randn(2, 1, W), torch.zeros(2, 1, W), config=world(0, 1))
    report = squares_left.last_report
    stores = [t for t in report.transfers if t.nbytes == W * 4]
    assert {(t.src, t.dst) for t in stores} == {(0, 1), (1, 0)}
    assert all(t.end > t.start and t.span and "test_distributed_examples.py" in t.span for t in stores)
    assert report.total_cycles >= max(t.end for t in report.transfers)


# ------------------------------------------------------------ the prepared worker


def test_a_prepared_worker_with_shared_io_and_a_stacked_weight():
    x = torch.zeros(2, ROWS, COLS).share_memory_()
    y = torch.zeros(2, ROWS, COLS).share_memory_()
    compiled = affine.compile(x, y, config=world(3, 4))
    with compiled.prepare() as rt:
        for step in range(3):
            x.copy_(torch.full((2, ROWS, COLS), float(step)))
            rt(x, y)
            r = torch.arange(2, dtype=torch.float32).view(2, 1, 1)
            torch.testing.assert_close(y, x * r + r)
        with pytest.raises(TypeError, match="'y'"):
            rt(x, torch.zeros(2, ROWS, COLS))
        stacked_out = rt.alloc_stacked_tensor(torch.zeros(2, ROWS, COLS))
        rt(x, stacked_out)
        back = torch.empty(2, ROWS, COLS)
        rt.copy_stacked_from(stacked_out, back)
        torch.testing.assert_close(back, x * r + r)
        handles = [rt.submit(compiled, x, y) for _ in range(3)]
        for h in handles:
            h.result()
        assert all(h.done for h in handles)


@pl.jit.incore
def count_calls(
    y: pl.Out[pl.Tensor[[1, 8], pl.INT32]],
    counter: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
):
    # What the earlier dispatches left in the cell, then one more: the wait sees this call's own
    # notify land (a counter that is not reset needs a generation-specific expectation).
    ctx = pld.get_comm_ctx(counter)
    v = pl.read(counter, [0, 0])
    pl.write(y, [0, 0], v)
    pld.system.notify(counter, peer=pld.rank(ctx), offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(counter, offsets=[0, 0], expected=v + 1, cmp=pld.WaitCmp.Ge)
    return y


@pl.jit
def count_chip(
    y: pl.Out[pl.Tensor[[1, 8], pl.INT32]], counter: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]]
):
    return count_calls(y, counter)


@pl.jit.host
def counting(y: pl.Out[pl.Tensor[[NR, 1, 8], pl.INT32]]):
    buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        counter = pld.window(buf, [1, 1], dtype=pl.INT32)
        count_chip(y[r], counter, device=r)
    return y


@pytest.mark.parametrize(("reset", "seen"), [(True, [0, 0, 0]), (False, [0, 1, 2])])
def test_persistent_windows_keep_or_reset_their_contents(reset, seen):
    y = torch.zeros(2, 1, 8, dtype=torch.int32).share_memory_()
    compiled = counting.compile(y, config=world(0, 1))
    got = []
    with compiled.prepare(persistent=True, reset_persistent_windows=reset) as rt:
        for _ in range(3):
            rt(y)
            got.append(int(y[1, 0, 0]))
    assert got == seen


# ------------------------------------------------------------ callbacks and two programs


@pl.program
class SumThenInspect:
    @pl.function(type=pl.FunctionType.InCore)
    def tile_sub(
        self,
        a: pl.Tensor[[64, 64], pl.FP32],
        b: pl.Tensor[[64, 64], pl.FP32],
        f: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        return pl.store(pl.sub(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64])), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(
        self,
        a: pl.Tensor[[64, 64], pl.FP32],
        b: pl.Tensor[[64, 64], pl.FP32],
        f: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        return self.tile_sub(a, b, f)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def look(f: pl.Tensor[[64, 64], pl.FP32]): ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(
        self,
        a: pl.Tensor[[64, 64], pl.FP32],
        b: pl.Tensor[[64, 64], pl.FP32],
        f: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ) -> pl.Tensor[[64, 64], pl.FP32]:
        out: pl.Tensor[[64, 64], pl.FP32] = self.chip_orch(a, b, f)
        self.look(out)
        return out


def test_a_sub_worker_callback_sees_the_chip_result():
    assert SumThenInspect.get_function("look").requires_runtime_binding
    compiled = ir.compile(
        SumThenInspect, distributed_config=DistributedConfig(device_ids=[0], num_sub_workers=1)
    )
    a = torch.randn(64, 64).share_memory_()
    b = torch.randn(64, 64).share_memory_()
    f = torch.zeros(64, 64).share_memory_()
    seen = torch.zeros(64, 64).share_memory_()  # the callback runs in a worker process

    def look(args):
        seen.copy_(_tensor_from_continuous(args[0]))

    with compiled.prepare(callbacks={"look": look}) as rt:
        rt(a, b, f)
    torch.testing.assert_close(f, a - b)
    torch.testing.assert_close(seen, a - b)
    with pytest.raises(ValueError, match="look"):
        compiled.prepare()


T = 64


@pl.jit.incore
def fill_cache(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    p = pl.load(prompt, [0, 0], [T, T])
    return pl.store(pl.mul(p, p), [0, 0], kv)


@pl.jit
def fill_chip(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    return fill_cache(prompt, kv)


@pl.jit.host
def prefill(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    return fill_chip(prompt, kv)


@pl.jit.incore
def use_cache(token: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    return pl.store(pl.sub(pl.load(kv, [0, 0], [T, T]), pl.load(token, [0, 0], [T, T])), [0, 0], out)


@pl.jit
def use_chip(token: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    return use_cache(token, kv, out)


@pl.jit.host
def decode(token: pl.Tensor, kv: pl.Tensor, out: pl.Out[pl.Tensor]):
    return use_chip(token, kv, out)


def test_two_programs_share_one_worker_and_a_resident_cache():
    cfg = world(0)
    prompt = torch.randn(T, T).share_memory_()
    token = torch.zeros(T, T).share_memory_()
    out = torch.zeros(T, T).share_memory_()
    sample = torch.zeros(T, T)
    pre = prefill.compile(prompt, sample, config=cfg)
    dec = decode.compile(token, sample, out, config=cfg)
    with DistributedWorker([pre, dec]) as rt:
        kv = rt.alloc_tensor((T, T), torch.float32)
        with pytest.raises(TypeError):
            rt(prompt, kv)
        rt.run(pre, prompt, kv)
        for step in range(3):
            token.fill_(float(step))
            rt.run(dec, token, kv, out)
            torch.testing.assert_close(out, prompt * prompt - step)
        rt.free_tensor(kv)


# ------------------------------------------------------------ diagnostics and reports


@pl.jit.incore
def reads_too_early(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    win: pld.DistributedTensor[[1, W], pl.FP32],
):
    ctx = pld.get_comm_ctx(win)
    win = pl.store(pl.load(x, [0, 0], [1, W]), [0, 0], win)
    peer = (pld.rank(ctx) + 1) % pld.nranks(ctx)
    return pl.store(pld.tile.remote_load(win, peer=peer, offsets=[0, 0], shape=[1, W]), [0, 0], y)


@pl.jit
def early_chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    win: pld.DistributedTensor[[1, W], pl.FP32],
):
    return reads_too_early(x, y, win)


@pl.jit.host
def racy(x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        win = pld.window(buf, [1, W], dtype=pl.FP32)
        early_chip(x[r], y[r], win, device=r)
    return y


def test_an_unordered_remote_load_is_a_race_naming_both_ranks():
    with pytest.raises(RaceError) as caught:
        racy(torch.randn(2, 1, W), torch.zeros(2, 1, W), config=world(0, 1))
    assert "remote_load" in caught.value.span.source_line()
    text = str(caught.value)
    assert "0" in text and "1" in text


@pl.jit.host
def dispatches_one_rank_too_many(
    x: pl.Tensor[[NR, 1, W], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]
):
    buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    flags = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        inbox = pld.window(buf, [1, W], dtype=pl.FP32)
        flag = pld.window(flags, [1, 1], dtype=pl.INT32)
        push_chip(x[r], y[r], inbox, flag, device=r + 1)
    return y


def test_a_device_index_outside_the_world_is_a_comm_error():
    with pytest.raises(CommError):
        dispatches_one_rank_too_many(torch.randn(2, 1, W), torch.zeros(2, 1, W), config=world(0, 1))


@pl.jit.incore
def waits_forever(y: pl.Out[pl.Tensor[[1, W], pl.FP32]], flag: pld.DistributedTensor[[1, 1], pl.INT32]):
    pld.system.wait(flag, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
    return y


@pl.jit
def forever_chip(y: pl.Out[pl.Tensor[[1, W], pl.FP32]], flag: pld.DistributedTensor[[1, 1], pl.INT32]):
    return waits_forever(y, flag)


@pl.jit.host
def nobody_notifies(y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    flags = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        flag = pld.window(flags, [1, 1], dtype=pl.INT32)
        forever_chip(y[r], flag, device=r)
    return y


def test_a_wait_nobody_satisfies_is_a_deadlock_naming_the_rank_and_cell():
    with pytest.raises(DeadlockError) as caught:
        nobody_notifies(torch.zeros(2, 1, W), config=world(0, 1))
    assert "pld.system.wait" in caught.value.span.source_line()
    assert "flag" in str(caught.value)


def test_a_profiled_run_writes_a_trace_with_a_process_per_chip(tmp_path):
    x = torch.randn(4, 1, W)
    y = torch.zeros(4, 1, W)
    cfg = RunConfig(
        platform="a2a3sim",
        distributed_config=DistributedConfig(device_ids=[0, 1, 2, 3]),
        profile_dir=tmp_path / "prof",
    )
    squares_left(x, y, config=cfg)
    trace = json.loads((tmp_path / "prof" / "trace.json").read_text())
    names = {
        e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert {"rank0 (device 0)", "rank3 (device 3)", "interconnect (chip-to-chip links)"} <= names
    assert any(e.get("cat") == "link" for e in trace["traceEvents"])
    assert (tmp_path / "prof" / "swimlane.png").stat().st_size > 0


@pytest.mark.parametrize("program", [squares_left, from_right])
def test_ranks_as_processes_model_the_same_world_as_one_process(program):
    x = torch.randn(4, 1, W).share_memory_()
    y = torch.zeros(4, 1, W).share_memory_()
    compiled = program.compile(x, y, config=world(0, 1, 2, 3))
    compiled.run_world((x, y), compiled.config)  # the whole world in this process
    one, once = compiled.last_report, y.clone()
    y.zero_()
    with compiled.prepare() as rt:
        assert rt.engine.in_processes  # a2a3sim simulates one rank per process
        rt(x, y)
        apart = rt.last_report
    assert torch.equal(y, once)
    assert apart.total_cycles == one.total_cycles
    assert [c.total_cycles for c in apart.chips] == [c.total_cycles for c in one.chips]

    def order(t):
        return (t.start, t.src, t.dst, t.op)

    assert sorted(apart.transfers, key=order) == sorted(one.transfers, key=order)
