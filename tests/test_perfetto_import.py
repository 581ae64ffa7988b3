"""Traces survive Perfetto's import: it turns each complete event's ``ts`` and ``dur`` (microseconds)
into whole nanoseconds on its own and drops a slice that then partly overlaps another on its track.
Every track of the examples' traces must still nest after that rounding."""

import importlib.util
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from pypto.runtime import RunConfig
from pypto.runtime.reports.profiling import chrome_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def example(relative: str):
    """An example file imported as a module (its ``main`` not run)."""
    path = EXAMPLES / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mixed_run(m: int, staged: bool = False):
    module = example("advanced/03_mixed_kernel.py")
    kernel = module.staged_matmul_bias if staged else module.mixed_kernel()
    torch.manual_seed(0)
    a, b = torch.randn(m, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    kernel(a, b, torch.randn(m, 128), torch.zeros(m, 128), config=RunConfig(platform="a2a3sim"))
    return kernel.last_report


def task_graph_run():
    module = example("intermediate/07_task_graph.py")
    x, y = torch.randn(module.R, module.C), torch.randn(module.R, module.C)
    module.task_graph(x, y, torch.zeros_like(x), torch.zeros_like(y), config=RunConfig(platform="a2a3sim"))
    return module.task_graph.last_report


RUNS = {
    "mixed m=1024": lambda: mixed_run(1024),
    "mixed m=4096": lambda: mixed_run(4096),
    "mixed m=16384": lambda: mixed_run(16384),
    "staged m=4096": lambda: mixed_run(4096, staged=True),
    "task graph": task_graph_run,
}


def as_perfetto_imports(trace: dict) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Each track's complete slices as (start, end) in whole nanoseconds, rounded as Perfetto does."""
    tracks = defaultdict(list)
    for event in trace["traceEvents"]:
        if event["ph"] == "X":
            start, dur = round(event["ts"] * 1000), round(event["dur"] * 1000)
            tracks[event["pid"], event["tid"]].append((start, start + dur))
    return tracks


def partial_overlaps(slices: list[tuple[int, int]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Pairs of slices that neither nest nor are disjoint (what Perfetto drops)."""
    found = []
    open_slices: list[tuple[int, int]] = []  # the slices enclosing the current one, outermost first
    for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
        while open_slices and open_slices[-1][1] <= start:
            open_slices.pop()
        if open_slices and end > open_slices[-1][1]:
            found.append((open_slices[-1], (start, end)))
        open_slices.append((start, end))
    return found


def test_the_overlap_rule_finds_a_slice_that_ends_a_nanosecond_late():
    assert partial_overlaps([(0, 10), (10, 20), (2, 5)]) == []
    assert partial_overlaps([(0, 11), (10, 20)]) == [((0, 11), (10, 20))]


@pytest.mark.parametrize("run", list(RUNS), ids=list(RUNS))
def test_every_track_nests_after_perfettos_rounding_to_nanoseconds(run):
    trace = chrome_trace(RUNS[run]())
    tracks = as_perfetto_imports(trace)
    assert sum(len(slices) for slices in tracks.values()) > 10
    for track, slices in tracks.items():
        assert partial_overlaps(slices) == [], f"track {track} has partly overlapping slices"


@pytest.mark.parametrize("run", ["mixed m=4096", "task graph"])
def test_timestamps_are_whole_nanoseconds_of_the_modeled_cycles(run):
    report = RUNS[run]()
    for event in chrome_trace(report)["traceEvents"]:
        if "ts" not in event:
            continue
        assert event["ts"] * 1000 == pytest.approx(round(event["ts"] * 1000), abs=1e-6)
        if event["ph"] == "X":
            start = event["args"]["start_cycle"]
            end_ns = round((start + event["args"]["cycles"]) * 1000 / report.clock_mhz)
            assert round(event["ts"] * 1000) == round(start * 1000 / report.clock_mhz)
            assert round((event["ts"] + event["dur"]) * 1000) == end_ns
