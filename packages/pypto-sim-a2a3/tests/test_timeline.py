"""The run's timeline: busy and stalled slices per core, ring occupancy, pipe transfers, and what the
report derives from them (overlap, breakdowns, roofline). Invariants and ratios only."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, rand, run, single, tensor_t, vector_binary_kernel
from sim_mixed import MatmulBias

from pypto.ir import Direction, FunctionKind, SplitMode


def _stream(slot_num: int = 2, consumer_work: int = 0, mode: SplitMode = SplitMode.UP_DOWN):
    kernel = MatmulBias(mode=mode, blocks=6, rows=64, k=128, slot_num=slot_num, consumer_work=consumer_work)
    a, b, bias, out = kernel.args()
    report = run(kernel.program(), a, b, bias, out)
    torch.testing.assert_close(out, kernel.expected(a, b, bias))
    return report


def _union(spans):
    merged = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def test_each_pipes_ops_run_one_at_a_time_and_a_cores_busy_cycles_are_their_union():
    report = _stream()
    for core in report.busy_cycles:
        mine = [s for s in report.timeline if s.core == core]
        for pipe in {s.pipe for s in mine}:
            ops = [s for s in mine if s.pipe == pipe and not s.stalled]
            assert all(
                earlier.end <= later.start for earlier, later in pairwise(ops)
            )  # in order, one at a time
        busy = _union((s.start, s.end) for s in mine if not s.stalled)
        assert sum(end - start for start, end in busy) == report.busy_cycles[core]
        waits = [s for s in mine if s.stalled and s.flag_from is None]  # on another core: a ring slot
        assert (report.stall_cycles[core] > 0) is bool(waits)
    # The pipes of the cube core overlap: a load streams while the cube multiplies.
    aic = [s for s in report.timeline if s.core == "cg0.AIC" and not s.stalled]
    assert sum(s.cycles for s in aic) > report.busy_cycles["cg0.AIC"]


def test_slices_name_the_op_its_unit_and_the_kernel_and_stalls_name_what_they_wait_for():
    report = _stream()
    matmuls = [s for s in report.timeline if s.name == "tile.matmul"]
    assert len(matmuls) == 6 and {(s.core, s.unit, s.task) for s in matmuls} == {("cg0.AIC", "CUBE", "mixed")}
    stalls = {s.name for s in report.timeline if s.stalled and s.core == "cg0.AIV0"}
    assert "wait for a ready slot of pipe mixed_c2v" in stalls


def test_ring_occupancy_stays_within_its_slots_and_ends_empty():
    report = _stream(slot_num=2)
    assert {ring.name for ring in report.rings} == {"mixed_c2v cg0.AIV0", "mixed_c2v cg0.AIV1"}
    for ring in report.rings:
        cycles = [cycle for cycle, _ in ring.samples]
        assert cycles == sorted(cycles)
        assert max(used for _, used in ring.samples) <= ring.slots == 2
        assert ring.samples[-1][1] == 0
        assert 0 < ring.mean_in_use(report.total_cycles) <= ring.slots


def test_every_share_pushed_is_popped_after_its_push_ends():
    report = _stream()
    assert len(report.transfers) == 6 * 2  # six tiles, one share per lane
    for transfer in report.transfers:
        assert transfer.producer == "cg0.AIC" and transfer.consumer in ("cg0.AIV0", "cg0.AIV1")
        assert transfer.push[0] < transfer.push[1] <= transfer.pop[0] < transfer.pop[1]


def test_with_one_slot_the_cube_cannot_push_the_next_tile_until_the_lane_freed_the_last():
    report = _stream(slot_num=1, consumer_work=2)
    frees = [s.end for s in report.timeline if s.core == "cg0.AIV0" and s.name == "system.tfree_to_aic"]
    to_lane0 = [t for t in report.transfers if t.consumer == "cg0.AIV0"]
    for freed, following in zip(frees, to_lane0[1:], strict=False):
        assert following.push[0] >= freed
    assert all(used <= 1 for ring in report.rings for _, used in ring.samples)


def test_two_slots_beat_one_when_the_lanes_are_about_as_busy_as_the_cube():
    one, two = _stream(slot_num=1, consumer_work=1), _stream(slot_num=2, consumer_work=1)
    cube, lane = two.busy_cycles["cg0.AIC"], two.busy_cycles["cg0.AIV0"]
    assert 0.8 < lane / cube < 1.2  # balanced, so neither side hides the handshake
    assert two.total_cycles < one.total_cycles


def test_a_streamed_group_kernel_overlaps_cube_and_vector_and_a_lone_kernel_does_not():
    streamed = _stream()
    assert 0 < streamed.overlap_cycles() <= min(streamed.busy_cycles.values())
    assert 0.05 < streamed.overlap < 1
    lone = run(single(vector_binary_kernel("tile.add")), rand(64, 128), rand(64, 128), torch.zeros(64, 128))
    assert lone.overlap == 0


def test_the_op_breakdown_adds_up_to_the_busy_cycles_of_the_kernels_cores():
    report = _stream()
    breakdown = report.op_breakdown("mixed")
    ops = sum(stats.cycles for stats in breakdown.values())
    assert ops == sum(s.cycles for s in report.timeline if s.task == "mixed" and not s.stalled)
    assert ops > sum(report.busy_cycles.values())  # the pipes of a core overlap
    assert breakdown["tile.matmul"].count == 6
    assert breakdown["tile.tpop_from_aic"].count == breakdown["system.tfree_to_aic"].count == 12
    assert "tile.matmul" in report.breakdown_table()


@pytest.mark.parametrize("consumer_work", [0, 12])
def test_the_roofline_is_never_beaten_and_names_the_bound(consumer_work):
    report = _stream(consumer_work=consumer_work)
    (line,) = report.roofline()
    assert line.kernel == "mixed" and line.cycles == report.kernel_cycles()["mixed"]
    assert line.ratio >= 1
    assert line.bound == ("vector" if consumer_work else "memory")
    assert "modeled cycles" in report.summary() and f"its {line.bound} bound" in report.summary()


def test_the_summary_states_overlap_and_ring_occupancy_as_modeled_figures():
    summary = _stream().summary()
    assert "cube-vector overlap" in summary and "of the modeled time" in summary
    assert "ring mixed_c2v cg0.AIV0:" in summary


def test_an_aiv_kernel_split_up_down_runs_on_both_lanes_each_on_its_half():
    k = FunctionBuilder("halves", FunctionKind.AIV)
    a, b = k.param("a", tensor_t((128, 128))), k.param("b", tensor_t((128, 128)))
    out = k.param("out", tensor_t((128, 128)), Direction.Out)
    lane = k.op("lane", "tile.get_subblock_idx")
    row = k.scalar("scalar.mul", lane, 64)
    x = k.op("x", "tile.load", a, [row, 0], shape=(64, 128), target_memory=Mem.Vec)
    y = k.op("y", "tile.load", b, [row, 0], shape=(64, 128), target_memory=Mem.Vec)
    k.do("tile.store", k.op("z", "tile.add", x, y), [row, 0], out)
    kernel = k.build()
    split = replace(kernel, attrs={**kernel.attrs, "split": SplitMode.UP_DOWN})
    x_in, y_in, result = rand(128, 128), rand(128, 128, seed=1), torch.zeros(128, 128)
    report = run(single(split), x_in, y_in, result)
    torch.testing.assert_close(result, x_in + y_in)
    assert report.busy_cycles["cg0.AIV0"] == report.busy_cycles["cg0.AIV1"] > 0
    alone = run(single(kernel), x_in, y_in, torch.zeros(128, 128))
    assert alone.busy_cycles["cg0.AIV1"] == 0
