"""RunReport: what it derives from a backend's timeline (overlap, breakdowns, roofline, rings)."""

from __future__ import annotations

import itertools
import random

import pytest

from pypto.ir import RunReport, TaskEdge, TaskRecord
from pypto.ir.backend import STALL, RingTrack, Roofline, Slice, busy_and_stalled_of, stretches


def _report(*slices: Slice, total: int = 100, tasks: list[TaskRecord] | None = None) -> RunReport:
    busy: dict[str, int] = {}
    for s in slices:
        if not s.stalled:
            busy[s.core] = busy.get(s.core, 0) + s.cycles
    return RunReport(
        "toy",
        clock_mhz=1000,
        total_cycles=total,
        busy_cycles=busy,
        timeline=list(slices),
        tasks=tasks or [TaskRecord("k", 0, 0, total)],
        aiv_per_group=2,
    )


def test_overlap_counts_cycles_where_the_cube_and_any_lane_of_its_group_are_busy():
    report = _report(
        Slice("cg0.AIC", 0, 50, "tile.matmul", "CUBE", "k"),
        Slice("cg0.AIV0", 20, 20, "tile.add", "VECTOR", "k"),
        Slice("cg0.AIV1", 30, 30, "tile.add", "VECTOR", "k"),  # 30..50 overlaps, 50..60 does not
        Slice("cg0.AIV0", 60, 30, "wait for x", STALL, "k"),
    )
    assert report.overlap_cycles() == 30
    assert report.overlap == pytest.approx(0.3)


def test_overlap_of_some_kernels_counts_only_their_work():
    report = _report(
        Slice("cg0.AIC", 0, 50, "tile.matmul", "CUBE", "proj"),
        Slice("cg0.AIV0", 20, 40, "tile.add", "VECTOR", "proj"),  # 20..50 with the cube
        Slice("cg1.AIC", 0, 50, "tile.matmul", "CUBE", "attn"),
        Slice("cg1.AIV0", 0, 50, "tile.exp", "VECTOR", "attn"),
    )
    assert report.overlap_cycles() == 50  # 0..50: some group overlaps
    assert report.overlap_cycles(per_group=True) == 80  # 30 in cg0, 50 in cg1
    assert report.overlap_cycles({"proj"}) == 30
    assert report.overlap_cycles({"attn", "proj"}, per_group=True) == 80
    assert report.overlap_cycles(set()) == 0
    assert report.overlap_by_group({"proj"}) == {"cg0": [(20, 50)]}


def test_overlap_of_several_core_groups_counts_each_cycle_once_and_stays_a_fraction():
    report = _report(
        *(Slice(f"cg{g}.AIC", 0, 80, "tile.matmul", "CUBE", "k") for g in range(4)),
        *(Slice(f"cg{g}.AIV0", 10, 60, "tile.exp", "VECTOR", "k") for g in range(4)),  # 10..70 in each
        Slice("cg4.AIC", 70, 30, "tile.matmul", "CUBE", "k"),
        Slice("cg4.AIV1", 60, 30, "tile.exp", "VECTOR", "k"),  # 70..90 extends the 10..70 above
    )
    assert report.overlap_cycles() == 80  # 10..90
    assert report.overlap == pytest.approx(0.8)
    assert report.overlap_cycles(per_group=True) == 4 * 60 + 20


def test_overlap_is_zero_when_cube_and_vector_take_turns():
    report = _report(
        Slice("cg0.AIC", 0, 50, "tile.matmul", "CUBE", "k"),
        Slice("cg0.AIV0", 50, 50, "tile.add", "VECTOR", "k"),
    )
    assert report.overlap == 0


def test_the_roofline_takes_the_largest_roof_and_spreads_vector_work_over_the_lanes():
    report = _report(
        Slice("cg0.AIC", 0, 40, "tile.matmul", "CUBE", "k", peak_cycles=30, roof="cube"),
        Slice("cg0.AIC", 40, 30, "tile.load", "MTE2", "k", peak_cycles=10, roof="memory"),
        Slice("cg0.AIV0", 0, 80, "tile.exp", "VECTOR", "k", peak_cycles=80, roof="vector"),
        Slice("cg0.AIV0", 80, 20, "tile.load", "MTE2", "k", peak_cycles=15, roof="memory"),
    )
    (line,) = report.roofline()
    assert (line.cube, line.vector, line.memory) == (30, 40, 15)
    assert line.bound == "vector" and line.ratio == pytest.approx(100 / 40)


def test_a_kernel_without_roofed_work_has_an_infinite_ratio():
    assert Roofline("k", 10, 0, 0, 0).ratio == float("inf")


def test_the_op_breakdown_sums_busy_slices_per_op_and_skips_stalls():
    report = _report(
        Slice("cg0.AIC", 0, 40, "tile.matmul", "CUBE", "k"),
        Slice("cg0.AIC", 40, 40, "tile.matmul", "CUBE", "k"),
        Slice("cg0.AIV0", 0, 10, "wait for x", STALL, "k"),
    )
    stats = report.op_breakdown("k")
    assert list(stats) == ["tile.matmul"] and (stats["tile.matmul"].count, stats["tile.matmul"].cycles) == (
        2,
        80,
    )
    assert "tile.matmul" in report.breakdown_table()


def test_ring_occupancy_is_time_weighted_and_knows_when_the_ring_was_full():
    ring = RingTrack("p_c2v", "cg0.AIV0", slots=2, samples=[(10, 1), (20, 2), (60, 1), (80, 0)])
    assert ring.mean_in_use(100) == pytest.approx((10 * 1 + 40 * 2 + 20 * 1) / 100)
    assert ring.full_cycles(100) == 40


def test_the_summary_keeps_the_core_lines_and_labels_every_figure_modeled():
    report = _report(
        Slice("cg0.AIC", 0, 90, "tile.matmul", "CUBE", "k", peak_cycles=80, roof="cube"),
        Slice("cg0.AIV0", 0, 10, "tile.add", "VECTOR", "k", peak_cycles=10, roof="vector"),
    )
    summary = report.summary()
    assert "100 modeled cycles" in summary and "cg0.AIC" in summary
    assert "cube-vector overlap 10.0% of the modeled time" in summary
    assert "k: 100 modeled cycles = 1.25x its cube bound" in summary
    assert "the cube side dominates" in summary


def test_a_run_where_cube_and_vector_take_turns_suggests_a_mixed_kernel():
    report = _report(
        Slice("cg0.AIC", 0, 60, "tile.matmul", "CUBE", "k"),
        Slice("cg0.AIV0", 60, 40, "tile.add", "VECTOR", "k"),
    )
    assert "cube and vector never ran at once" in report.summary()
    assert "dominates" not in report.summary()


def test_the_summary_counts_tasks_core_groups_and_edges_when_several_tasks_ran():
    report = RunReport(
        platform="sim",
        clock_mhz=1000,
        total_cycles=150,
        tasks=[
            TaskRecord("a", 0, 0, 100, 1),
            TaskRecord("b", 1, 10, 110, 2),
            TaskRecord("c", 0, 120, 140, 3),
        ],
        edges=[TaskEdge(1, 3, "t")],
    )
    assert (
        "3 task(s) on 2 core group(s), 1 dependency edge(s); the tasks' modeled cycles add up to 1.47x the run"
        in (report.summary())
    )


def test_a_timeline_left_to_a_function_is_made_once_when_first_read():
    made: list[int] = []
    slices = [Slice("cg0.AIC", 0, 5, "tile.matmul", "CUBE", "k")]

    def make() -> list[Slice]:
        made.append(1)
        return list(slices)

    report = _report()
    report.make_timeline_when_read(make)
    assert made == []
    assert report.timeline == slices and report.timeline is report.timeline
    assert made == [1]
    assert report.overlap_cycles() == 0 and made == [1]


def test_a_report_whose_timeline_is_made_when_read_compares_copies_and_pickles_as_a_made_one():
    import copy
    import dataclasses
    import pickle

    slices = [Slice("cg0.AIC", 0, 5, "tile.matmul", "CUBE", "k"), Slice("cg0.AIV0", 5, 3, "wait", STALL, "k")]
    plain = _report(*slices)

    def lazy() -> RunReport:
        report = _report(*slices)
        report.timeline = []
        report.make_timeline_when_read(lambda: list(slices))
        return report

    assert lazy() == plain and repr(lazy()) == repr(plain)
    assert pickle.loads(pickle.dumps(lazy())) == plain  # (a Dask worker's report: no function travels)
    assert "_make_timeline" not in lazy().__getstate__()
    assert copy.deepcopy(lazy()) == plain and copy.copy(lazy()).timeline == slices
    assert dataclasses.replace(lazy(), total_cycles=7).timeline == slices
    assert dataclasses.asdict(lazy())["timeline"] == [dataclasses.asdict(s) for s in slices]
    assert "timeline" in [f.name for f in dataclasses.fields(RunReport)]


def test_setting_the_timeline_drops_the_function_that_would_have_made_it():
    report = _report()
    report.make_timeline_when_read(lambda: pytest.fail("the timeline was set: nothing makes it"))
    report.timeline = [Slice("cg0.AIC", 0, 1, "tile.add", "VECTOR", "k")]
    assert [s.name for s in report.timeline] == ["tile.add"]
    assert RunReport("toy", 1000).timeline == []  # the field's default


def test_repr_of_a_chip_wide_report_counts_its_records_in_a_few_lines():
    cores = [f"cg{g}.{core}" for g in range(24) for core in ("AIC", "AIV0", "AIV1")]
    slices = [Slice(core, 10 * i, 10, "tile.add", "VECTOR", "k") for i in range(400) for core in cores[:30]]
    tasks = [TaskRecord("k", t % 24, 0, 4000, task_id=t) for t in range(96)]
    report = RunReport(
        "toy",
        clock_mhz=1000,
        total_cycles=4000,
        busy_cycles={core: 400 for core in cores},
        timeline=slices,
        tasks=tasks,
        edges=[TaskEdge(t, t + 1) for t in range(95)],
    )
    text = repr(report)
    assert len(text) < 2000 and text.count("\n") < 15
    assert "4000 modeled cycles" in text and "96 task(s)" in text
    assert "95 edge(s)" in text and f"{len(slices)} slice(s)" in text
    assert "print(report.summary())" in text  # the cut lines are one call away
    assert report == RunReport(**{f: getattr(report, f) for f in report.__dataclass_fields__})


def test_repr_of_a_report_whose_timeline_is_made_when_read_counts_it():
    report = RunReport("toy", clock_mhz=1000, total_cycles=10)
    report.make_timeline_when_read(lambda: [Slice("cg0.AIC", 0, 10, "tile.matmul", "CUBE", "k")])
    assert "1 slice(s)" in repr(report)


def test_a_timing_only_report_says_so_in_its_summary_and_a_full_one_does_not():
    full = RunReport(platform="sim", clock_mhz=1850.0, total_cycles=100)
    timed = RunReport(platform="sim", clock_mhz=1850.0, total_cycles=100, timing_only=True)
    assert not full.timing_only and "timing only" not in full.summary()
    assert timed.summary().splitlines()[0].endswith("timing only (no tile values computed)")


def test_a_cores_stretches_are_its_connected_time_with_the_busy_cycles_in_each():
    busy = [(10, 20), (15, 30), (50, 55)]
    waits = [(0, 12), (30, 40), (60, 61), (52, 58)]  # (30 touches the busy span that ends there)
    assert stretches(busy, waits) == [(0, 40, 20), (50, 58, 5), (60, 61, 0)]
    assert stretches([], [(5, 9)]) == [(5, 9, 0)] and stretches([(1, 2)], []) == [(1, 2, 1)]


@pytest.mark.parametrize("seed", range(20))
def test_a_cores_stretches_add_up_to_its_busy_and_stalled_cycles(seed):
    rng = random.Random(seed)

    def spans() -> list[tuple[int, int]]:
        return [(s, s + rng.randint(1, 30)) for s in (rng.randint(0, 400) for _ in range(rng.randint(0, 25)))]

    busy, waits = spans(), spans()
    found = stretches(busy, waits)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(found))  # in time order, apart
    cycles = sum(c for _, _, c in found)
    assert (cycles, sum(e - s for s, e, _ in found) - cycles) == busy_and_stalled_of(busy, waits)
