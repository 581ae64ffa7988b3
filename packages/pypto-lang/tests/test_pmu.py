"""pmu.csv from a run's timeline: per core and hardware pipe, busy and stall cycles (level 1), and per
op on each pipe (level 2); summed per pipe, so that a core's pipes may overlap in time."""

import csv
import io

import pytest

from pypto.ir import RunReport
from pypto.ir.backend import STALL, Slice
from pypto.runtime import RunConfig
from pypto.runtime.reports.pmu import COLUMNS, NO_PIPE, PIPES, pipe_of, pmu_csv, pmu_rows
from pypto.runtime.settings import ConfigError


def _report(*slices: Slice) -> RunReport:
    timeline = list(slices)
    busy: dict[str, int] = {}
    for s in timeline:
        if not s.stalled and s.core.startswith("cg"):
            busy[s.core] = busy.get(s.core, 0) + s.cycles
    return RunReport(
        "testsim", 1000.0, total_cycles=max(s.end for s in timeline), timeline=timeline, busy_cycles=busy
    )


# An AIV lane: a load, a stall before a pop (at the pop's line), the pop, an add and a store; the
# host's slices are not a core's.
LANE = (
    Slice("host", 0, 100, "submit k", "AICPU"),
    Slice("cg0.AIV0", 100, 500, "tile.load", "MTE2", "k", "k.py:3"),
    Slice("cg0.AIV0", 600, 300, "wait for a ready slot of pipe k_c2v", STALL, "k", "k.py:4"),
    Slice("cg0.AIV0", 900, 50, "tile.tpop_from_aic", "MTE2", "k", "k.py:4"),
    Slice("cg0.AIV0", 950, 64, "tile.add", "VECTOR", "k", "k.py:5"),
    Slice("cg0.AIV0", 1014, 128, "tile.store", "MTE3", "k", "k.py:6"),
    Slice("cg0.AIV0", 1142, 40, "wait for the other lane", STALL, "k", "k.py:7"),
)


def _by_pipe(rows):
    return {row["pipe"]: row for row in rows if not row["op"]}


def test_units_map_to_the_hardware_pipes():
    assert [pipe_of(u) for u in ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")] == list(
        PIPES
    )
    assert pipe_of("M") == "M"  # a simulator that names its units after the pipes
    assert pipe_of(STALL) == pipe_of("AICPU") == NO_PIPE


def test_level_one_counts_each_pipes_ops_and_the_stalls_before_them():
    rows = pmu_rows(_report(*LANE), level=1)
    assert {row["core"] for row in rows} == {"cg0.AIV0"}  # the host has no PMU
    pipes = _by_pipe(rows)
    assert list(pipes) == [*PIPES, NO_PIPE]  # every pipe, zeros too; "-" as it holds a stall
    assert (pipes["MTE2"]["count"], pipes["MTE2"]["busy_cycles"], pipes["MTE2"]["stall_cycles"]) == (
        2,
        550,
        300,
    )
    assert (pipes["V"]["busy_cycles"], pipes["MTE3"]["busy_cycles"], pipes["M"]["busy_cycles"]) == (
        64,
        128,
        0,
    )
    # Nothing ran after the last wait: no pipe to charge it to.
    assert (pipes[NO_PIPE]["count"], pipes[NO_PIPE]["stall_cycles"]) == (0, 40)


def test_level_two_adds_each_op_with_its_class_under_its_pipe():
    rows = pmu_rows(_report(*LANE), level=2)
    ops = {(row["pipe"], row["op"]): row for row in rows if row["op"]}
    assert set(ops) == {
        ("MTE2", "tile.load"),
        ("MTE2", "tile.tpop_from_aic"),
        ("V", "tile.add"),
        ("MTE3", "tile.store"),
    }
    assert ops["MTE2", "tile.tpop_from_aic"]["op_class"] == "pipe_pop"
    assert ops["MTE2", "tile.tpop_from_aic"]["stall_cycles"] == 300  # the pop was the op the wait held up
    assert ops["V", "tile.add"]["op_class"] == "vector"
    # The ops under a pipe add up to its row.
    for pipe, total in _by_pipe(rows).items():
        mine = [row for (p, _), row in ops.items() if p == pipe]
        assert total["busy_cycles"] == sum(row["busy_cycles"] for row in mine)


def test_overlapping_pipes_of_one_core_each_count_their_own_cycles():
    # Concurrent pipes: a load under a matmul, and a stall of one pipe while another works.
    report = _report(
        Slice("cg0.AIC", 0, 1000, "tile.load", "MTE2", "k", "k.py:3"),
        Slice("cg0.AIC", 200, 600, "tile.matmul", "CUBE", "k", "k.py:5"),
        Slice("cg0.AIC", 800, 200, "wait for a free slot", STALL, "k", "k.py:6"),
        Slice("cg0.AIC", 1000, 100, "tpush_to_aiv", "FIXPIPE", "k", "k.py:6"),
        Slice("cg0.AIC", 1000, 300, "tile.load", "MTE2", "k", "k.py:3"),
    )
    pipes = _by_pipe(pmu_rows(report))
    assert (pipes["MTE2"]["busy_cycles"], pipes["M"]["busy_cycles"], pipes["FIX"]["busy_cycles"]) == (
        1300,
        600,
        100,
    )
    assert pipes["FIX"]["stall_cycles"] == 200  # the op at the wait's line, of those starting at its end
    assert sum(row["busy_cycles"] for row in pipes.values()) == report.busy_cycles["cg0.AIC"] == 2000


def test_the_csv_has_a_header_and_one_line_per_row():
    text = pmu_csv(_report(*LANE), level=2)
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ",".join(COLUMNS)
    assert [{k: str(v) for k, v in row.items()} for row in pmu_rows(_report(*LANE), 2)] == parsed


@pytest.mark.parametrize(("given", "level"), [(True, 1), (False, 0), (1, 1), (2, 2), (0, 0)])
def test_enable_pmu_takes_a_level_and_true_or_false(given, level):
    config = RunConfig(enable_pmu=given)
    assert config.enable_pmu == level and type(config.enable_pmu) is int


@pytest.mark.parametrize("given", [3, -1, "2", 1.0])
def test_enable_pmu_refuses_anything_else_with_a_hint(given):
    with pytest.raises(ConfigError, match=r"RunConfig\.enable_pmu takes") as info:
        RunConfig(enable_pmu=given)
    assert "enable_pmu=" in (info.value.hint or "")
