"""RunConfig's runtime fields on a2a3sim: the ring sizes a run asks for are the sizes its rings get
(and a ring too small for a scope's tasks is an error at the user's line); aicpu_thread_num changes
no modeled time."""

import json
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto_sim_a2a3.errors import RingCapacityError

N, TR, TC = 8, 64, 128


@pl.jit
def per_block(a: pl.Tensor[[N * TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[N * TR, TC], pl.FP32]]):
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="affine"):
            t = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.add(pl.mul(t, 2.0), 1.0), [i * TR, 0], out)
    return out


@pl.jit
def five_steps(a: pl.Tensor[[TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="s1"):
        out[:] = pl.add(a, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="s2"):
        out[:] = pl.add(out, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="s3"):
        out[:] = pl.add(out, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="s4"):
        out[:] = pl.add(out, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="s5"):  # the fifth task of the body's scope
        out[:] = pl.add(out, 1.0)
    return out


@pytest.fixture(autouse=True)
def no_ring_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for env in ("PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL"):
        monkeypatch.delenv(env, raising=False)


def test_the_rings_get_the_sizes_the_run_asks_for_and_scope_stats_show_them():
    a, out = torch.randn(N * TR, TC), torch.zeros(N * TR, TC)
    config = RunConfig(
        platform="a2a3sim",
        ring_task_window=[8192, 4, 131072, 524288],
        ring_heap=[134217728, 268435456, 268435456, 536870912],
        enable_scope_stats=True,
        save_kernels_dir="out",
    )
    per_block(a, out, config=config)
    torch.testing.assert_close(out, a * 2.0 + 1.0)
    rings = per_block.last_report.runtime_rings
    assert [r.task_window for r in rings] == [8192, 4, 131072, 524288]
    assert [r.heap for r in rings] == [134217728, 268435456, 268435456, 536870912]
    assert rings[1].peak_tasks == 4  # the loop's tasks, in ring 1, held to its 4 slots
    with open("out/dfx_outputs/scope_stats/scope_stats.jsonl") as f:
        run = json.loads(f.readline())
    assert run["task_window_max"] == [8192, 4, 131072, 524288]
    assert run["heap_max"] == [134217728, 268435456, 268435456, 536870912]
    assert run["task_window_peak"] == [0, 4, 0, 0]


def test_the_environment_sizes_a_ring_the_config_leaves_unset(monkeypatch):
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "0,8,0,0")
    a, out = torch.randn(N * TR, TC), torch.zeros(N * TR, TC)
    per_block(a, out, config=RunConfig(platform="a2a3sim"))
    assert per_block.last_report.runtime_rings[1].task_window == 8


def test_a_ring_too_small_for_its_scopes_tasks_is_an_error_at_the_submission():
    a, out = torch.randn(TR, TC), torch.zeros(TR, TC)
    with pytest.raises(RingCapacityError) as info:
        five_steps(a, out, config=RunConfig(platform="a2a3sim", ring_task_window=[4, 0, 0, 0]))
    err = info.value
    lines = Path(__file__).read_text().splitlines()
    fifth = next(i for i, line in enumerate(lines, 1) if "the fifth task of the body" in line)
    assert (err.span.file, err.span.line) == (__file__, fifth)
    assert err.message.startswith("ring 0's task window (4 task slots) is full when task 5 (kernel s5")
    assert "the body of five_steps" in err.message
    assert "ring_task_window=[8, 0, 0, 0]" in err.hint
    five_steps(a, out, config=RunConfig(platform="a2a3sim", ring_task_window=[8, 0, 0, 0]))
    torch.testing.assert_close(out, a + 5.0)


def test_aicpu_thread_num_changes_no_modeled_time():
    a = torch.randn(N * TR, TC)
    cycles = []
    for threads in (None, 1, 4):
        per_block(a, torch.zeros(N * TR, TC), config=RunConfig(platform="a2a3sim", aicpu_thread_num=threads))
        cycles.append(per_block.last_report.total_cycles)
    assert cycles[0] == cycles[1] == cycles[2]
