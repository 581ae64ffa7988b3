"""A mixed kernel (cube and vector in one scope, connected by pipes) over the blocks of a
``pl.spmd`` launch: its later blocks replay block 0 (``pypto_sim_a2a3.fast.replay``), rings and
transfers included, their numbers walked together (``pypto_sim_a2a3.fast.batch``: tiles crossing
batched rings) or block by block, and the run reports exactly what the full engine reports."""

import pytest
import torch

import pypto.language as pl
from pypto_sim_a2a3.fast import replay

ROWS = 128  # per block


@pl.jit
def spmd_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    blocks = a.shape[0] // ROWS
    for i in pl.spmd(blocks, name_hint="rows", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        r0 = i * ROWS
        acc = pl.matmul(a[r0 : r0 + ROWS, :], b, out_dtype=pl.FP32)  # cube
        out[r0 : r0 + ROWS, :] = pl.add(acc, bias[r0 : r0 + ROWS, :])  # vector
    return out


def _run(monkeypatch, mode: str, blocks: int):
    monkeypatch.setenv("PYPTO_SIM_REPLAY", mode)
    torch.manual_seed(0)
    a, b = torch.randn(blocks * ROWS, 256).half(), torch.randn(256, 128).half()
    bias, out = torch.randn(blocks * ROWS, 128), torch.zeros(blocks * ROWS, 128)
    spmd_matmul_bias(a, b, bias, out)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    return spmd_matmul_bias.last_report, out


@pytest.mark.parametrize("batch", ["on", "off"])
@pytest.mark.parametrize("blocks", [3, 30])
def test_a_mixed_kernel_over_spmd_blocks_replays_and_reports_what_the_full_engine_does(
    monkeypatch, batched_blocks, blocks, batch
):
    ghosts: list[int] = []
    original = replay.GhostBlock.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        ghosts.append(self.launch.site.block)

    monkeypatch.setattr(replay.GhostBlock, "__init__", counting)
    monkeypatch.setenv("PYPTO_SIM_BATCH", batch)
    replayed, out_on = _run(monkeypatch, "on", blocks)
    assert sorted(ghosts) == list(range(1, blocks))
    assert batched_blocks == (list(range(1, blocks)) if batch == "on" else [])
    full, out_off = _run(monkeypatch, "off", blocks)
    assert len(ghosts) == blocks - 1  # none in the second run
    assert torch.equal(out_on, out_off)
    for field in (
        "total_cycles",
        "tasks",
        "busy_cycles",
        "stall_cycles",
        "timeline",
        "rings",
        "transfers",
        "heaps",
    ):
        assert getattr(replayed, field) == getattr(full, field), field
    assert {t.consumer for t in replayed.transfers} >= {"cg0.AIV0", f"cg{min(blocks, 24) - 1}.AIV1"}


def _scale_matmul_bias(mode: pl.SplitMode):
    """The vector lanes compute exp of their share of a row block and push it to the cube (V2C),
    whose a @ b comes back to them (C2V) to have the bias added."""

    @pl.jit
    def spmd_exp_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        blocks = a.shape[0] // 64
        for i in pl.spmd(blocks, name_hint="rows", optimizations=[pl.split(mode)]):
            r0 = i * 64
            x = pl.exp(a[r0 : r0 + 64, :])  # vector
            acc = pl.matmul(pl.cast(x, pl.FP16), b, out_dtype=pl.FP32)  # cube
            out[r0 : r0 + 64, :] = pl.add(acc, bias[r0 : r0 + 64, :])  # vector
        return out

    return spmd_exp_matmul_bias


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE])
def test_tiles_crossing_both_ways_are_batched_with_every_split_and_match_the_full_engine(
    monkeypatch, batched_blocks, mode
):
    kernel = _scale_matmul_bias(mode)
    runs = []
    for replaying in ("on", "off"):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", replaying)
        torch.manual_seed(0)
        a, b = torch.randn(5 * 64, 128) * 0.1, torch.randn(128, 128).half()
        bias, out = torch.randn(5 * 64, 128), torch.zeros(5 * 64, 128)
        kernel(a, b, bias, out)
        torch.testing.assert_close(out, (a.exp().half().float() @ b.float()) + bias, rtol=1e-2, atol=1e-2)
        runs.append((kernel.last_report, out))
    (replayed, out_on), (full, out_off) = runs
    # (Under split=NONE lane 1 pops data-less tokens and pushes them back: the batch passes them on.)
    assert batched_blocks == [1, 2, 3, 4]
    assert {t.pipe.rsplit("_", 1)[-1] for t in replayed.transfers} == {"c2v", "v2c"}
    assert torch.equal(out_on, out_off)
    for field in ("total_cycles", "tasks", "timeline", "rings", "transfers", "heaps"):
        assert getattr(replayed, field) == getattr(full, field), field
