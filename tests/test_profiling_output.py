"""What profiling writes: a trace-event JSON, a PNG swimlane, the swimlane's records and a text
summary, and how it is switched on (RunConfig, its alias, PYPTO_PROFILE)."""

import json
from collections import defaultdict
from itertools import pairwise

import matplotlib.image
import pytest
import torch

import pypto.language as pl
from pypto.ir.targets import get_target
from pypto.runtime import RunConfig
from pypto.runtime.config import PROFILE_ENV

M = 512
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pl.jit
def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def inputs():
    torch.manual_seed(0)
    return (
        torch.randn(M, 256, dtype=torch.float16),
        torch.randn(256, 128, dtype=torch.float16),
        torch.randn(M, 128),
        torch.zeros(M, 128),
    )


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    directory = tmp_path_factory.mktemp("profile")
    mixed(*inputs(), config=RunConfig(enable_profiling=True, profile_dir=directory))
    report = mixed.last_report
    return report, json.loads((directory / "trace.json").read_text()), directory


def test_every_complete_event_has_phase_time_duration_process_and_thread(profile):
    _, trace, _ = profile
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert complete
    for event in complete:
        assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(event)
        assert event["dur"] >= 0


def test_one_process_per_active_core_group_and_lanes_named_by_metadata(profile):
    _, trace, _ = profile
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    groups = {
        e["pid"] for e in meta if e["name"] == "process_name" and e["args"]["name"].startswith("core group")
    }
    assert len(groups) == 1
    (pid,) = groups
    threads = {e["args"]["name"] for e in meta if e["name"] == "thread_name" and e["pid"] == pid}
    assert {"tasks", "pipe mixed_c2v"} <= threads
    cores = {name.split(" ")[0]: set() for name in threads if name.startswith(("AIC ", "AIV"))}
    for name in threads - {"tasks", "pipe mixed_c2v"}:
        core, pipe = name.split(" ")
        cores[core].add(pipe)
    # One thread per pipe of each core that ran work on it: the cube's loads, moves, matmuls and
    # pushes; the lanes' pops, loads, vector ops and stores.
    assert {"MTE2", "MTE1", "CUBE", "FIXPIPE"} <= cores["AIC"]
    assert {"MTE2", "VECTOR", "MTE3"} <= cores["AIV0"] and cores["AIV0"] == cores["AIV1"]


def test_times_are_modeled_microseconds_with_exact_cycles_in_args(profile):
    report, trace, _ = profile
    clock = get_target("a2a3").clock_mhz
    assert trace["otherData"]["clock_mhz"] == report.clock_mhz == clock
    assert trace["otherData"]["modeled"] is True
    for event in (e for e in trace["traceEvents"] if e["ph"] == "X"):
        # Start and end are whole nanoseconds: each within half a nanosecond, the duration within one.
        cycles = event["args"]["cycles"]
        assert event["dur"] == pytest.approx(cycles / clock, abs=1e-3)
        assert event["ts"] == pytest.approx(event["args"]["start_cycle"] / clock, abs=5e-4)


def test_slices_on_one_thread_never_overlap(profile):
    _, trace, _ = profile
    by_thread = defaultdict(list)
    for event in (e for e in trace["traceEvents"] if e["ph"] == "X"):
        by_thread[event["pid"], event["tid"]].append((event["args"]["start_cycle"], event["args"]["cycles"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(start + cycles <= after for (start, cycles), (after, _) in pairwise(spans))


def test_ring_occupancy_is_a_counter_track_per_ring(profile):
    _, trace, _ = profile
    counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
    assert counters == {"ring mixed_c2v AIV0", "ring mixed_c2v AIV1"}
    values = [e["args"]["slots in use"] for e in trace["traceEvents"] if e["ph"] == "C"]
    assert max(values) <= 2 and min(values) == 0


def test_each_push_flows_to_its_pop_and_both_ends_sit_inside_a_slice(profile):
    _, trace, _ = profile
    events = trace["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and starts.keys() == finishes.keys()
    assert all(e.get("bp") == "e" for e in finishes.values())
    slices = [e for e in events if e["ph"] == "X"]
    for flow in (*starts.values(), *finishes.values()):
        on_thread = [e for e in slices if (e["pid"], e["tid"]) == (flow["pid"], flow["tid"])]
        assert any(e["ts"] <= flow["ts"] <= e["ts"] + e["dur"] for e in on_thread)
    for flow_id, start in starts.items():
        assert start["ts"] < finishes[flow_id]["ts"]


def test_the_swimlane_is_a_png_matplotlib_can_read(profile):
    _, _, directory = profile
    png = directory / "swimlane.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    height, width, channels = matplotlib.image.imread(png).shape
    assert width > 800 and height > 100 and channels in (3, 4)


def test_the_swimlane_records_give_each_core_of_each_block_its_start_end_and_cycles(profile):
    report, _, directory = profile
    saved = json.loads((directory / "chip_swimlane_records.json").read_text())
    assert saved["modeled"] is True and saved["clock_mhz"] == report.clock_mhz
    records = saved["records"]
    (task,) = report.tasks
    assert {r["core"] for r in records} == {"cg0.AIC", "cg0.AIV0", "cg0.AIV1"}
    for record in records:
        assert (record["kernel"], record["task_id"], record["block"], record["core_group"]) == (
            task.kernel,
            1,
            0,
            0,
        )
        assert record["source"] == task.source
        assert task.start_cycle <= record["start_cycle"] < record["end_cycle"] <= task.end_cycle
        assert record["end_us"] == pytest.approx(record["end_cycle"] / report.clock_mhz, abs=5e-4)
        # One block on the run: the block's cycles on a core are the core's.
        assert record["busy_cycles"] == report.busy_cycles[record["core"]]
        assert record["stall_cycles"] == report.stall_cycles[record["core"]]
    assert max(r["end_cycle"] for r in records) == task.end_cycle  # the block lasts until its last core ends


def test_the_summary_labels_its_figures_modeled_and_breaks_time_down_per_op(profile):
    _, _, directory = profile
    text = (directory / "summary.txt").read_text()
    assert "modeled cycles" in text and "cube-vector overlap" in text
    assert "tile.matmul" in text and "mixed" in text


def test_the_chip_swimlane_alias_writes_under_pypto_profile_by_kernel(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    mixed(*inputs(), config=RunConfig(enable_chip_swimlane=True))
    written = tmp_path / "pypto_profile" / "mixed"
    names = {p.name for p in written.iterdir()}
    assert names == {"trace.json", "swimlane.png", "chip_swimlane_records.json", "summary.txt"}


def test_the_environment_variable_profiles_every_run_into_a_directory_per_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / "profiles"))
    mixed(*inputs())
    assert (tmp_path / "profiles" / "mixed" / "trace.json").is_file()


def test_profiling_is_off_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    mixed.cache_clear()  # a cached program would keep the config it was first compiled with
    compiled = mixed.compile(*inputs())
    compiled.run(*inputs())
    assert compiled.last_profile is None and not (tmp_path / "pypto_profile").exists()


@pl.jit
def doubled_matmul(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="dmm"):
        out[:] = pl.matmul(pl.add(a, a), b, out_dtype=pl.FP32)
    return out


def test_a_vector_to_cube_pipe_gets_its_thread_its_ring_on_the_cube_and_a_flow_per_lane_share(tmp_path):
    a, b = torch.randn(256, 128, dtype=torch.float16), torch.randn(128, 128, dtype=torch.float16)
    out = torch.zeros(256, 128)
    doubled_matmul(a, b, out, config=RunConfig(profile_dir=tmp_path))
    torch.testing.assert_close(out, (a + a).float() @ b.float(), rtol=1e-2, atol=1e-2)
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name" and e["pid"] == 1}
    assert "pipe dmm_v2c" in threads and {"AIV0 MTE3", "AIV1 MTE3", "AIC MTE2"} <= threads
    assert {e["name"] for e in events if e["ph"] == "C"} == {"ring dmm_v2c AIC"}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    pushes = {names[e["pid"], e["tid"]] for e in events if e["ph"] == "s" and e["cat"] == "pipe"}
    assert pushes == {"AIV0 MTE3", "AIV1 MTE3"}  # both lanes push their share to the cube
