"""scope_stats.jsonl and scope_stats.png from a RunReport: the high-water marks of the task window (in
all and per core group), of each pipe ring and of each core's heaps, per launch and for the run."""

import json

import matplotlib.image

from pypto.ir import RunReport, TaskRecord
from pypto.ir.backend import HeapUse, RingTrack, SubmittedTask
from pypto.runtime.reports.scope_stats import (
    group_windows,
    max_steps,
    peak,
    scope_stats_lines,
    task_window,
    value_at,
    write_scope_stats,
)


def _report() -> RunReport:
    """Three tasks: 1 and 2 at once on groups 0 and 1, then 3 on group 0 before 1 has retired
    (the scheduler retires it late), a ring on task 1's lane."""
    return RunReport(
        "testsim",
        1000.0,
        total_cycles=5000,
        submitted=[
            SubmittedTask(1, "a", 100, 2400),
            SubmittedTask(2, "b", 200, 2600),
            SubmittedTask(3, "a", 300, 4800),
        ],
        tasks=[
            TaskRecord("a", 0, 400, 2000, 1, 0, "k.py:3"),
            TaskRecord("b", 1, 600, 2200, 2, 0, "k.py:5"),
            TaskRecord("a", 0, 2100, 4500, 3, 0, "k.py:3"),
        ],
        rings=[
            RingTrack("a_c2v", "cg0.AIV0", 2, [(500, 1), (700, 2), (900, 1), (1500, 0)]),
            RingTrack("a_c2v", "cg0.AIV0", 2, [(2200, 1), (3000, 0)]),
        ],
        heaps=[
            HeapUse("cg0.AIV0", "a_aiv", 1, 0, 400, 2000, {"Vec": 65536}, {"Vec": 65536}),
            HeapUse("cg1.AIV0", "b", 2, 0, 600, 2200, {"Vec": 98304}, {"Vec": 32768}),
            HeapUse("cg0.AIV0", "a_aiv", 3, 0, 2100, 4500, {"Vec": 65536}, {"Vec": 65536}),
        ],
        usable_bytes={"Vec": 188416},
    )


def test_the_task_window_counts_tasks_from_submission_to_retirement():
    window = task_window(_report())
    assert window == [(100, 1), (200, 2), (300, 3), (2400, 2), (2600, 1), (4800, 0)]
    assert peak(window) == (3, 300)
    assert value_at(window, 250) == 2 and value_at(window, 50) == 0 and value_at(window, 9999) == 0


def test_a_core_groups_window_holds_blocks_until_their_task_retires():
    windows = group_windows(_report())
    # Task 3 starts on group 0 at 2100, before task 1 retires at 2400: two in flight there.
    assert windows[0] == [(400, 1), (2100, 2), (2400, 1), (4800, 0)]
    assert peak(windows[1]) == (1, 600)


def test_max_steps_is_the_highest_interval_in_force():
    assert max_steps([(0, 10, 3), (5, 20, 1), (8, 12, 5)]) == [(0, 3), (8, 5), (12, 1), (20, 0)]
    assert max_steps([]) == []


def test_the_run_record_holds_the_high_water_marks():
    run, *rest = scope_stats_lines(_report())
    assert run["record"] == "run" and run["tasks"] == 3
    assert run["task_window"] == {"peak": 3, "at_cycle": 300}
    assert run["task_window_per_core_group"] == {
        "cg0": {"peak": 2, "at_cycle": 2100},
        "cg1": {"peak": 1, "at_cycle": 600},
    }
    assert run["rings"] == {"a_c2v cg0.AIV0": {"slots": 2, "peak": 2}}
    assert run["heaps"]["cg1.AIV0"] == {"Vec": {"planned": 98304, "touched": 32768, "usable": 188416}}
    assert [line["record"] for line in rest] == ["kernel", "kernel", "launch", "launch", "launch"]


def test_each_launch_record_has_its_rings_and_heaps_and_the_window_it_started_in():
    launches = [line for line in scope_stats_lines(_report()) if line["record"] == "launch"]
    assert [(line["task_id"], line["task_window"]) for line in launches] == [(1, 3), (2, 3), (3, 3)]
    first, second, third = launches
    assert first["rings"] == {"a_c2v cg0.AIV0": {"slots": 2, "peak": 2}}
    assert second["rings"] == {}
    assert third["rings"] == {"a_c2v cg0.AIV0": {"slots": 2, "peak": 1}}  # the second launch's own ring
    assert third["heaps"] == {
        "cg0.AIV0": {"kernel": "a_aiv", "planned": {"Vec": 65536}, "touched": {"Vec": 65536}}
    }


def test_the_kernel_records_keep_what_scope_stats_json_held():
    kernels = {line["kernel"]: line for line in scope_stats_lines(_report()) if line["record"] == "kernel"}
    assert kernels["a"] == {
        "record": "kernel",
        "kernel": "a",
        "launches": 2,
        "cycles": 4000,
        "share_of_run": 0.8,
    }


def test_the_files_are_one_json_object_per_line_and_a_png(tmp_path):
    records, picture = write_scope_stats(_report(), tmp_path, "k")
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert lines == json.loads(json.dumps(scope_stats_lines(_report())))
    height, width, _ = matplotlib.image.imread(picture).shape
    assert width > height > 0


def test_a_report_without_the_windows_still_writes_both_files(tmp_path):
    bare = RunReport("testsim", 1000.0, total_cycles=10)
    records, picture = write_scope_stats(bare, tmp_path)
    run = json.loads(records.read_text().splitlines()[0])
    assert run["task_window"] == {"peak": 0, "at_cycle": None} and run["rings"] == run["heaps"] == {}
    assert picture.read_bytes().startswith(b"\x89PNG")
