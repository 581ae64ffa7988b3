"""The tasks of a ``pl.parallel`` grid of ``pl.at`` scopes replay one another
(``pypto_sim_a2a3.fast.replay``): a task launching the same kernel as an earlier one, on an idle
core group, replays the earlier one's recorded steps when it takes the same steps — always, for a
kernel whose loops and branches read none of its arguments and whose tensors have the same shapes
and share storage alike; after a walk for its numbers that says so, for a kernel that branches on
data or on its scalars. Each run reports exactly what the full engine (``PYPTO_SIM_REPLAY=off``)
reports: cycles, slices, tasks, heaps, rings, transfers, errors and numbers. (The kernels are in
``tests/grid_programs/grids.py``.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from pypto.ir import PyptoError, RaceError
from pypto.runtime import RunConfig
from pypto_sim_a2a3.fast.runner import FastRunner

_SPEC = importlib.util.spec_from_file_location("grids", Path(__file__).parent / "grid_programs" / "grids.py")
assert _SPEC is not None and _SPEC.loader is not None
grids = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grids)
grid_matmul, grid_branch, grid_widths = grids.grid_matmul, grids.grid_branch, grids.grid_widths
grid_in_place, grid_in_place_if, grid_race = grids.grid_in_place, grids.grid_in_place_if, grids.grid_race
grid_stages = grids.grid_stages


@pytest.fixture
def replayed(monkeypatch) -> list[int]:
    """The blocks each run's fast runner replayed, one count per run (none with replay off)."""
    counts: list[int] = []
    release = FastRunner.release

    def counting(self: FastRunner) -> None:
        counts.append(self.replayed)
        release(self)

    monkeypatch.setattr(FastRunner, "release", counting)
    return counts


def _both(monkeypatch, kernel, *args, config=None):
    """The report (or the error) and the arguments after the run, with replay and without it."""
    outcomes = []
    for mode in ("on", "off"):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", mode)
        copies = [a.clone() for a in args]
        try:
            kernel(*copies, config=config)
            outcomes.append((kernel.last_report, copies))
        except PyptoError as error:
            outcomes.append((error, copies))
    return outcomes


def _same(one, other) -> None:
    fields = ("total_cycles", "tasks", "edges", "busy_cycles", "stall_cycles", "timeline", "heaps")
    for field in (*fields, "rings", "transfers", "submitted"):
        assert getattr(one, field) == getattr(other, field), field


def test_the_tasks_of_a_grid_replay_the_first_and_report_what_the_full_engine_does(monkeypatch, replayed):
    torch.manual_seed(0)
    a, b = torch.randn(384, 128).half(), torch.randn(128, 384).half()
    (on, (*_, out_on)), (off, (*_, out_off)) = _both(monkeypatch, grid_matmul, a, b, torch.zeros(384, 384))
    assert replayed == [35]  # 36 tasks, more than the 24 core groups: all but the first replay
    _same(on, off)
    assert torch.equal(out_on, out_off)
    torch.testing.assert_close(out_on, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("batch", ["on", "off"])
def test_the_replayed_tasks_of_a_grid_walk_their_numbers_together(
    monkeypatch, replayed, batched_blocks, batch
):
    """The ready tasks that will replay one recording walk their numbers in one batch (their
    scalars differ: the grid indices), up to 32 at once; with PYPTO_SIM_BATCH=off, one by one."""
    monkeypatch.setenv("PYPTO_SIM_BATCH", batch)
    torch.manual_seed(1)
    a, b = torch.randn(512, 128).half(), torch.randn(128, 512).half()
    (on, (*_, out_on)), (off, (*_, out_off)) = _both(monkeypatch, grid_matmul, a, b, torch.zeros(512, 512))
    assert replayed == [63]
    assert len(batched_blocks) == (63 if batch == "on" else 0)  # every replayed task, in batches
    _same(on, off)
    assert torch.equal(out_on, out_off)
    torch.testing.assert_close(out_on, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_grid_tasks_walk_their_numbers_together_only_once_the_tasks_they_read_have_written(
    monkeypatch, replayed, batched_blocks
):
    """Three steps: a fill of ``y``, then a grid of four tasks reading it. A later step's grid
    tasks are submitted before this step's run but ready only after the next fill: they are not
    walked with this step's, each step's grid batches its own."""
    x = torch.randn(64, 64)
    (on, (_, _, out_on)), (off, (_, _, out_off)) = _both(
        monkeypatch, grid_stages, x, torch.zeros(64, 64), torch.zeros(192, 64)
    )
    assert replayed == [13]  # the first fill and the first grid task run recorded
    assert len(batched_blocks) == 11  # the three grids' ghosts, step by step
    _same(on, off)
    assert torch.equal(out_on, out_off)
    torch.testing.assert_close(out_on, grids.stages_reference(x))


def test_grid_tasks_that_branch_on_data_replay_the_first_that_walked_their_way(monkeypatch, replayed):
    x = torch.randn(256, 64)
    flags = torch.tensor([i % 2 for i in range(16)], dtype=torch.int32)
    (on, (_, _, out_on)), (off, (_, _, out_off)) = _both(
        monkeypatch, grid_branch, x, flags, torch.zeros(256, 64)
    )
    # Task 1 runs on the full engine (most kernels launch once); tasks 2 and 3 walk first and
    # match nothing (recorded: one for each way); the 13 after them walk and replay one of those.
    assert replayed == [13]
    _same(on, off)
    assert torch.equal(out_on, out_off)
    want = torch.where(flags.repeat_interleave(16)[:, None] > 0, x.exp(), -(x + x))
    torch.testing.assert_close(out_on, want)


def test_grid_tasks_of_other_dynamic_extents_replay_only_the_tasks_of_theirs(monkeypatch, replayed):
    x = torch.randn(128, 256)
    (on, (_, out_on)), (off, (_, out_off)) = _both(monkeypatch, grid_widths, x, torch.zeros(128, 256))
    assert replayed == [6]  # tasks 1 (64 columns) and 2 (192) are recorded, the six after replay
    _same(on, off)
    assert torch.equal(out_on, out_off)
    want = torch.zeros(128, 256)
    for b in range(8):
        width = 64 + (b % 2) * 128
        want[b * 16 : b * 16 + 16, :width] = 2 * x[b * 16 : b * 16 + 16, :width]
    torch.testing.assert_close(out_on, want)


def test_grid_tasks_whose_tensors_share_storage_replay_only_the_tasks_that_share_alike(monkeypatch, replayed):
    x, y = torch.randn(128, 128), torch.randn(128, 128)
    (on, (_, y_on)), (off, (_, y_off)) = _both(monkeypatch, grid_in_place, x, y)
    assert replayed == [6]  # tasks 1 (two storages) and 2 (one) are recorded, the six after replay
    _same(on, off)
    assert torch.equal(y_on, y_off)
    want = torch.cat([2 * (x if b % 2 == 0 else y)[b * 16 : b * 16 + 16] for b in range(8)])
    torch.testing.assert_close(y_on, want)


def test_grid_tasks_that_would_walk_first_but_write_what_they_read_run_on_the_full_engine(
    monkeypatch, replayed
):
    x, y, flags = torch.randn(128, 128), torch.randn(128, 128), torch.tensor([1], dtype=torch.int32)
    (on, (_, y_on, _)), (off, (_, y_off, _)) = _both(monkeypatch, grid_in_place_if, x, y, flags)
    # A walk first would double an in-place task's rows before its run: the odd tasks run on the
    # full engine; of the even ones, task 1 runs alone, task 3 is recorded, tasks 5 and 7 replay.
    assert replayed == [2]
    _same(on, off)
    assert torch.equal(y_on, y_off)
    want = torch.cat([2 * (x if b % 2 == 0 else y)[b * 16 : b * 16 + 16] for b in range(8)])
    torch.testing.assert_close(y_on, want)


def test_replayed_grid_tasks_writing_the_same_rows_are_the_same_race_at_the_same_line(monkeypatch, replayed):
    (on, _), (off, _) = _both(monkeypatch, grid_race, torch.randn(64, 64), torch.zeros(16, 64))
    assert replayed and replayed[0] > 0  # the run met the race in a replayed task
    assert isinstance(on, RaceError) and isinstance(off, RaceError)
    assert (on.message, on.span, on.hint) == (off.message, off.span, off.hint)


def test_a_timing_only_grid_replays_and_models_the_cycles_of_a_full_run(monkeypatch, replayed):
    torch.manual_seed(0)
    a, b = torch.randn(256, 128).half(), torch.randn(128, 256).half()
    timing = RunConfig(timing_only=True)
    (on, _), (off, _) = _both(monkeypatch, grid_matmul, a, b, torch.zeros(256, 256), config=timing)
    assert replayed == [15]
    _same(on, off)
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    grid_matmul(a, b, torch.zeros(256, 256))
    assert grid_matmul.last_report.total_cycles == on.total_cycles
    assert grid_matmul.last_report.timeline == on.timeline
