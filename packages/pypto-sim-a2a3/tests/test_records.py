"""The simulator's many-per-run records (slices, shifted slices, scalar steps) are frozen_records:
each the same object its dataclass makes, every field set."""

from __future__ import annotations

import dataclasses
import random
import tracemalloc

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, program, rand, run, single, tensor_t, vector_binary_kernel

from pypto.ir import Direction, FunctionKind
from pypto.ir.backend import STALL, Slice, busy_and_stalled
from pypto_sim_a2a3.checks import races
from pypto_sim_a2a3.engine.scheduler import Advance, Scheduler
from pypto_sim_a2a3.engine.timeline import Recorder, make_slice, shifted


def _complete(record: object) -> bool:
    return set(vars(record)) == {f.name for f in dataclasses.fields(record)}  # type: ignore[arg-type]


def test_a_made_slice_is_the_slice_with_every_field():
    made = make_slice("cg1.AIV0", 40, 8, "tile.add", "VECTOR", "k", "k.py:3", 6.0, "vector", "V", "MTE2", 32)
    assert made == Slice(
        "cg1.AIV0", 40, 8, "tile.add", "VECTOR", "k", "k.py:3", 6.0, "vector", "V", "MTE2", 32
    )
    assert _complete(made)


def test_a_shifted_slice_is_block_0s_on_its_own_core_later():
    flagged = make_slice("cg0.AIC", 40, 8, "tile.matmul", "CUBE", "k", None, flag_from="MTE1", flag_at=35)
    plain = make_slice("cg0.AIC", 50, 2, "tile.move", "MTE1", "k", None)
    names = {"cg0.AIC": "cg3.AIC"}
    assert shifted(flagged, names, 100) == dataclasses.replace(
        flagged, core="cg3.AIC", start=140, flag_at=135
    )
    assert shifted(plain, names, 100) == dataclasses.replace(plain, core="cg3.AIC", start=150)
    assert _complete(shifted(flagged, names, 100)) and _complete(shifted(plain, names, 100))


def test_shifted_slices_recorded_at_once_take_the_places_their_one_by_one_records_would():
    """record_shifted leaves a replayed block's slices to the timeline it makes; the timeline is the one
    recording each shifted slice as it came gives, ties (one start, one core) in the order met."""
    block0 = [
        make_slice("cg0.AIC", 10, 5, "tile.load", "MTE2", "k", None),
        make_slice("cg0.AIC", 10, 3, "tile.move", "MTE1", "k", None, flag_from="MTE2", flag_at=12),
    ]
    names = {"cg0.AIC": "cg4.AIC"}
    other = [make_slice("cg4.AIC", 110, 1, f"op{i}", "SCALAR", "k", None) for i in range(3)]
    at_once, one_by_one = Recorder(Scheduler()), Recorder(Scheduler())
    at_once.record(other[0])
    at_once.record_shifted(block0, names, 100)
    at_once.record(other[1])
    at_once.record_shifted(block0[:1], names, 100)
    at_once.record(other[2])
    for piece in (
        other[0],
        *[shifted(p, names, 100) for p in block0],
        other[1],
        shifted(block0[0], names, 100),
    ):
        one_by_one.record(piece)
    one_by_one.record(other[2])
    made, one_by_one_made = at_once.timeline()(), one_by_one.timeline()()
    assert made == one_by_one_made
    assert [s.name for s in made] == ["op0", "tile.load", "tile.move", "op1", "tile.load", "op2"]
    assert at_once.slices == [] and at_once.timeline()() == []  # (handed over)


def _busy_and_stalled_as_made(recorder: Recorder) -> tuple[dict[str, int], dict[str, int]]:
    """The recorder's figures, then those of the timeline it makes (which it hands over)."""
    figures = recorder.busy_and_stalled()
    return figures, busy_and_stalled(recorder.timeline()())


def _block0() -> list[Slice]:
    return [
        make_slice("cg0.AIC", 10, 6, "tile.load", "MTE2", "k", None),
        make_slice("cg0.AIC", 12, 6, "tile.matmul", "CUBE", "k", None),  # overlaps the load
        make_slice("cg0.AIC", 16, 2, "wait for MTE2", STALL, "k", None, flag_from="MTE2", flag_at=16),
        make_slice("cg0.AIV0", 0, 9, "wait for a ring slot", STALL, "k", None),
        make_slice("cg0.AIV0", 4, 3, "tile.add", "VECTOR", "k", None),  # within the wait
        make_slice("cg0.AIV0", 30, 0, "tile.add", "VECTOR", "k", None),  # no cycles
    ]


def test_the_figures_of_cores_that_replay_block_0_alone_are_block_0s():
    block0 = _block0()
    recorder = Recorder(Scheduler())
    for piece in block0:
        recorder.record(piece)
    for group, shift in ((1, 40), (2, 41), (3, 1000)):
        names = {"cg0.AIC": f"cg{group}.AIC", "cg0.AIV0": f"cg{group}.AIV0"}
        recorder.record_shifted(block0[:3], names, shift)  # a step of the cube ...
        recorder.record_shifted(block0[3:], names, shift)  # ... and one of the lane
    (busy, stalled), (want_busy, want_stalled) = _busy_and_stalled_as_made(recorder)
    assert busy == want_busy and stalled == want_stalled
    assert busy["cg3.AIC"] == busy["cg0.AIC"] == 8 and stalled["cg3.AIV0"] == stalled["cg0.AIV0"] == 6


def test_the_figures_of_a_core_with_its_own_slices_or_two_replayed_blocks_are_its_spans():
    block0 = _block0()
    recorder = Recorder(Scheduler())
    names = {"cg0.AIC": "cg1.AIC", "cg0.AIV0": "cg1.AIV0"}
    recorder.record_shifted(block0, names, 5)  # two blocks on one core group, overlapping in time
    recorder.record_shifted(block0, names, 9)
    recorder.record(make_slice("cg1.AIV0", 2, 4, "tile.exp", "VECTOR", "k", None))  # and its own work
    recorder.record_shifted(block0[3:], {"cg0.AIV0": "cg2.AIV0"}, 0)
    recorder.record(make_slice("cg2.AIV0", 100, 4, "wait for a task", STALL, "k", None))
    (busy, stalled), (want_busy, want_stalled) = _busy_and_stalled_as_made(recorder)
    assert busy == want_busy and stalled == want_stalled
    assert busy["cg1.AIC"] == 12 and stalled["cg2.AIV0"] == 10


def test_a_run_of_more_blocks_than_core_groups_has_the_figures_of_its_timeline():
    rows, blocks, cols = 16, 60, 64  # some cores run several blocks, one after the other
    shape = (rows * blocks, cols)
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t(shape))
    out = k.param("out", tensor_t(shape), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), rows)
    x = k.op("x", "tile.load", a, [row, 0], shape=(rows, cols), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], out)
    kernel = k.build()
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    params = (
        host.param("a", tensor_t(shape), Direction.In),
        host.param("out", tensor_t(shape), Direction.Out),
    )
    host.call(kernel.name, *params, block_num=blocks)
    data, result = rand(*shape), torch.zeros(shape)
    report = run(program(host.build(), kernel), data, result)
    assert torch.equal(result, torch.exp(data))
    assert "_make_timeline" in vars(report)  # (made only when read)
    busy, stalled = busy_and_stalled(report.timeline)
    assert all(report.busy_cycles[core] == busy.get(core, 0) for core in report.busy_cycles)
    assert all(report.stall_cycles[core] == stalled.get(core, 0) for core in report.stall_cycles)
    groups = [task.core_group for task in report.tasks]
    assert len(groups) == blocks and max(groups.count(group) for group in groups) > 1  # (a core ran several)


def test_a_scalar_step_is_the_silent_scalar_advance():
    assert Advance.scalar(7) == Advance("SCALAR", 7, silent=True) and _complete(Advance.scalar(7))


def test_a_task_access_of_the_race_check_is_its_fields_by_name():
    recorded: list[races.TaskAccess] = []
    record = races.TaskRaces.record

    def keeping(self, task, block, access, tensor, order):
        record(self, task, block, access, tensor, order)
        for log in (self._reads, self._writes):
            recorded.extend(
                item for boxes in log.boxes.values() for _, item in boxes.overlapping(access.region)
            )

    x, y = rand(16, 64), rand(16, 64, seed=1)
    out = torch.zeros(16, 64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(races.TaskRaces, "record", keeping)
        run(single(vector_binary_kernel("tile.add", (16, 64))), x, y, out)
    assert torch.equal(out, x + y)
    made = {id(m): m for m in recorded}.values()
    assert len(made) == 3 and all(type(m) is races.TaskAccess for m in made)  # two loads, a store
    for m in made:
        fields = dict(task=m.task, block=m.block, access=m.access, tensor=m.tensor, position=m.position)
        assert all(getattr(races.TaskAccess(**fields), name) is value for name, value in fields.items())
        assert m.label == m.task.label
    assert sorted(m.position for m in made) == [0, 1, 2]  # in its core's GM record


def _random_steps(rng: random.Random, cores: list[str], steps: int) -> list[tuple[Slice, ...]]:
    """Block 0's steps: each a few slices of one core (busy, stalled, flagged, of no cycles)."""
    made = []
    for _ in range(steps):
        core = rng.choice(cores)
        pieces = []
        for _ in range(rng.randint(0, 3)):
            start, cycles = rng.randint(0, 300), rng.choice([0, 1, 2, 5, 9, 30])
            unit = rng.choice(["CUBE", "VECTOR", "MTE2", STALL, STALL])
            flag = rng.random() < 0.3 and unit == STALL
            pieces.append(
                make_slice(
                    core, start, cycles, "op", unit, "k", None,
                    flag_from="MTE2" if flag else None, flag_at=start if flag else None,
                )
            )  # fmt: skip
        made.append(tuple(pieces))
    return made


@pytest.mark.parametrize("seed", range(12))
def test_replayed_blocks_figures_and_timeline_are_those_of_their_slices_recorded_one_by_one(seed):
    """Blocks replaying block 0 at various shifts (several on one core group, some overlapping in
    time), their steps interleaved with each other and with cores' own slices (some on a replayed
    block's core): the figures and the made timeline are those of every slice recorded as it came."""
    rng = random.Random(seed)
    cores = ["cg0.AIC", "cg0.AIV0", "cg0.AIV1"]
    block0 = _random_steps(rng, cores, 40)
    blocks = []
    for _ in range(rng.randint(1, 6)):
        group = rng.randint(1, 3)
        names = {core: core.replace("cg0", f"cg{group}") for core in cores}
        blocks.append((names, rng.choice([0, 17, 300, 301, 5000, rng.randint(0, 9000)]), 0))
    at_once, one_by_one = Recorder(Scheduler()), Recorder(Scheduler())
    for step in block0:
        for piece in step:
            at_once.record(piece)
            one_by_one.record(piece)
    while blocks:
        which = rng.randrange(len(blocks))
        names, shift, done = blocks[which]
        if rng.random() < 0.15:  # a slice of a core's own, maybe on a replayed block's core
            core = rng.choice([*names.values(), "cg5.AIC"])
            unit = rng.choice(["SCALAR", STALL])
            own = make_slice(core, shift + rng.randint(0, 300), rng.randint(0, 9), "own", unit, "k", None)
            at_once.record(own)
            one_by_one.record(own)
        if done == len(block0):
            blocks.pop(which)
            continue
        step = block0[done]
        if step:
            at_once.record_shifted(step, names, shift)
            for piece in step:
                one_by_one.record(shifted(piece, names, shift))
        blocks[which] = (names, shift, done + 1)
    figures = at_once.busy_and_stalled()
    made = at_once.timeline()()
    assert made == one_by_one.timeline()()  # every slice, in order
    assert figures == busy_and_stalled(made)


def test_a_replayed_blocks_steps_recorded_in_a_row_take_a_few_bytes_each():
    """Each of a replayed block's steps is remembered as a reference to block 0's, not as a record
    of its own (a Qwen3-32B layer replays ~330,000 steps)."""
    block0 = [(make_slice("cg0.AIC", i, 2, "op", "CUBE", "k", None),) for i in range(1000)]
    recorder = Recorder(Scheduler())
    names = [{"cg0.AIC": f"cg{group}.AIC"} for group in range(1, 9)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for step in block0:
        for group in names:  # eight blocks stepping by turns
            recorder.record_shifted(step, group, 40)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 16 * len(block0) * len(names)
    busy, _ = recorder.busy_and_stalled()
    assert busy == {f"cg{group}.AIC": 1001 for group in range(1, 9)}
