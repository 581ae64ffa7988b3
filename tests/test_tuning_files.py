"""The files for tuning a kernel, written after runs on a2a3sim: pmu.csv (per core and pipe, and per
op at level 2) and scope_stats.jsonl (the high-water marks of the task window, the rings and the
heaps); what they say agrees with the run's report."""

import csv
import json

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, R, C = 256, 16, 64


@pl.jit
def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def wide(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.spmd(48, name_hint="rows"):  # more blocks than core groups
        out[i * R : i * R + R, :] = pl.exp(x[i * R : i * R + R, :])
    return out


def _run_mixed(config):
    torch.manual_seed(0)
    a, b = torch.randn(M, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    bias, out = torch.randn(M, 128), torch.zeros(M, 128)
    mixed(a, b, bias, out, config=config)
    torch.testing.assert_close(out, a.float() @ b.float() + bias)
    return mixed.last_report


def _pmu(path):
    with path.open() as f:
        return [
            {**row, "busy_cycles": int(row["busy_cycles"]), "stall_cycles": int(row["stall_cycles"])}
            for row in csv.DictReader(f)
        ]


def test_per_core_the_pmu_pipes_add_up_to_the_ops_the_core_ran(tmp_path):
    report = _run_mixed(RunConfig(save_kernels_dir=tmp_path, enable_pmu=2))
    rows = _pmu(tmp_path / "dfx_outputs" / "pmu.csv")
    for core, busy in report.busy_cycles.items():
        pipes = [row for row in rows if row["core"] == core and not row["op"]]
        ran = sum(s.cycles for s in report.timeline if s.core == core and not s.stalled)
        waited = sum(s.cycles for s in report.timeline if s.core == core and s.stalled)
        # Each pipe counts its own ops; the core is busy while any pipe is, so its pipes overlap.
        assert sum(row["busy_cycles"] for row in pipes) == ran >= busy
        assert max(row["busy_cycles"] for row in pipes) <= busy
        # A pipe's stalls are the stretches it waited (on another pipe's flag or another core).
        assert sum(row["stall_cycles"] for row in pipes) == waited >= report.stall_cycles.get(core, 0)
        for pipe in pipes:
            ops = [row for row in rows if row["core"] == core and row["pipe"] == pipe["pipe"] and row["op"]]
            assert sum(row["busy_cycles"] for row in ops) == pipe["busy_cycles"]


def test_the_pmu_puts_each_op_on_its_hardware_pipe_and_each_wait_on_the_op_it_held_up(tmp_path):
    _run_mixed(RunConfig(save_kernels_dir=tmp_path, enable_pmu=2))
    ops = {(row["core"], row["op"]): row for row in _pmu(tmp_path / "dfx_outputs" / "pmu.csv") if row["op"]}
    assert (
        ops["cg0.AIC", "tile.matmul"]["pipe"] == "M" and ops["cg0.AIC", "tile.matmul"]["op_class"] == "matmul"
    )
    assert ops["cg0.AIC", "tile.tpush_to_aiv"]["pipe"] == "FIX"
    assert ops["cg0.AIV0", "tile.add"]["pipe"] == "V"
    # The lanes wait for the cube's pushes: the stall is the pop's, on MTE2.
    pop = ops["cg0.AIV0", "tile.tpop_from_aic"]
    assert pop["pipe"] == "MTE2" and pop["stall_cycles"] > 0


def test_scope_stats_hold_the_rings_and_heaps_high_water_marks(tmp_path):
    report = _run_mixed(RunConfig(save_kernels_dir=tmp_path, enable_scope_stats=True))
    lines = [
        json.loads(line)
        for line in (tmp_path / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl").read_text().splitlines()
    ]
    run = lines[0]
    assert run["rings"] == {
        ring.name: {"slots": ring.slots, "peak": max(used for _, used in ring.samples)}
        for ring in report.rings
    }
    for core, spaces in run["heaps"].items():
        for space, top in spaces.items():
            assert 0 < top["touched"] <= top["planned"] <= top["usable"], (core, space)
    assert set(run["heaps"]) == {"cg0.AIC", "cg0.AIV0", "cg0.AIV1"}
    assert "Vec" in run["heaps"]["cg0.AIV0"] and "Acc" in run["heaps"]["cg0.AIC"]
    (launch,) = [line for line in lines if line["record"] == "launch"]
    assert launch["rings"] == run["rings"] and launch["task_window"] == 1


def test_an_spmd_task_holds_several_blocks_on_a_core_group_until_it_retires(tmp_path):
    x, out = torch.randn(48 * R, C), torch.zeros(48 * R, C)
    wide(x, out, config=RunConfig(save_kernels_dir=tmp_path, enable_scope_stats=True))
    torch.testing.assert_close(out, x.exp())
    lines = [
        json.loads(line)
        for line in (tmp_path / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl").read_text().splitlines()
    ]
    run, launches = lines[0], [line for line in lines if line["record"] == "launch"]
    assert run["task_window"]["peak"] == 1  # one task
    # Short blocks free their group before the scheduler has dispatched all 48: a group runs
    # several blocks of the one task, each in its window until the task retires.
    assert max(group["peak"] for group in run["task_window_per_core_group"].values()) >= 2
    assert sorted(line["block"] for line in launches) == list(range(48))
    assert all(line["heaps"][f"cg{line['core_group']}.AIV0"]["touched"]["Vec"] > 0 for line in launches)
