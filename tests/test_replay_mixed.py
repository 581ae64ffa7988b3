"""A mixed kernel (cube and vector in one scope, connected by pipes) over the blocks of a
``pl.spmd`` launch: its later blocks replay block 0 (``pypto_sim_a2a3.replay``), rings and
transfers included, and the run reports exactly what the full engine reports."""

import pytest
import torch

import pypto.language as pl
from pypto_sim_a2a3 import replay

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


@pytest.mark.parametrize("blocks", [3, 30])
def test_a_mixed_kernel_over_spmd_blocks_replays_and_reports_what_the_full_engine_does(monkeypatch, blocks):
    ghosts: list[int] = []
    original = replay.GhostBlock.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        ghosts.append(self.launch.site.block)

    monkeypatch.setattr(replay.GhostBlock, "__init__", counting)
    replayed, out_on = _run(monkeypatch, "on", blocks)
    assert sorted(ghosts) == list(range(1, blocks))
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
