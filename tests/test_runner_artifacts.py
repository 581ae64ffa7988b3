"""Running on a2a3sim with the RunConfig fields PyPTO code passes: codegen_only runs nothing,
runner.run returns a RunResult, and the files a run writes hold what its report says."""

import csv
import json

import pytest
import torch

import pypto.language as pl
from pypto.backend import BackendType
from pypto.runtime import RunConfig, run
from pypto.runtime.running.runner import RunResult
from pypto.runtime.running.runner import run as run_for_result
from pypto.runtime.settings import ConfigError


@pl.jit
def two_adds(
    a: pl.Tensor[[64, 64], pl.FP32],
    b: pl.Tensor[[64, 64], pl.FP32],
    c: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    d: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        c[:] = pl.add(a, b)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        d[:] = pl.add(c, b)
    return c, d


@pytest.fixture
def tensors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    return torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64), torch.zeros(64, 64)


def test_codegen_only_writes_the_artifacts_and_runs_nothing(tensors, tmp_path):
    a, b, c, d = tensors
    config = RunConfig(platform="a2a3sim", codegen_only=True, save_kernels_dir=tmp_path / "gen")
    assert two_adds(a, b, c, d, config=config) is None
    assert torch.count_nonzero(c) == 0 and torch.count_nonzero(d) == 0
    assert (tmp_path / "gen" / "program.py").is_file() and not (tmp_path / "gen" / "report.json").exists()
    assert run(two_adds, a, b, c, d, config=config) is None and torch.count_nonzero(c) == 0


def test_runner_run_returns_what_the_run_produced(tensors, tmp_path):
    a, b, c, d = tensors
    config = RunConfig(
        backend_type=BackendType.Ascend910B,
        save_kernels_dir=tmp_path / "kept",
        enable_dep_gen=True,
        enable_scope_stats=True,
        enable_pmu=True,
    )
    result = run_for_result(two_adds, a, b, c, d, config=config)
    assert isinstance(result, RunResult) and result.ran
    torch.testing.assert_close(c, a + b)
    torch.testing.assert_close(d, a + b + b)
    assert result.outputs[0] is c and result.output_dir == tmp_path / "kept"
    report = result.report
    deps = json.loads((tmp_path / "kept" / "dfx_outputs" / "deps.json").read_text())
    assert [t["kernel"] for t in deps["tasks"]] == [t.kernel for t in report.tasks] == ["first", "second"]
    assert [(e["src"], e["dst"]) for e in deps["edges"]] == [(e.src, e.dst) for e in report.edges] == [(1, 2)]
    stats = [
        json.loads(line)
        for line in (tmp_path / "kept" / "dfx_outputs" / "scope_stats" / "scope_stats.jsonl")
        .read_text()
        .splitlines()
    ]
    assert {
        line["kernel"]: line["cycles"] for line in stats if line["record"] == "kernel"
    } == report.kernel_cycles()
    assert (
        stats[0]["record"] == "run" and stats[0]["task_window"]["peak"] == 2
    )  # both submitted before either retired
    assert (
        (tmp_path / "kept" / "dfx_outputs" / "scope_stats" / "scope_stats.png")
        .read_bytes()
        .startswith(b"\x89PNG")
    )
    with (tmp_path / "kept" / "dfx_outputs" / "pmu.csv").open() as pmu:
        rows = list(csv.DictReader(pmu))
    busy: dict[str, int] = {}
    for row in rows:
        busy[row["core"]] = busy.get(row["core"], 0) + int(row["busy_cycles"])
    assert busy == {core: cycles for core, cycles in report.busy_cycles.items() if cycles}
    assert not any(row["op"] for row in rows)  # enable_pmu=True is level 1: per pipe, not per op
    saved = json.loads((tmp_path / "kept" / "report.json").read_text())
    assert saved["total_cycles"] == report.total_cycles and saved["modeled"] is True


def test_a_plain_call_writes_no_file(tensors, tmp_path):
    a, b, c, d = tensors
    for _ in range(3):
        two_adds(a, b, c, d, config=RunConfig(platform="a2a3sim"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_output_dir_holds_the_last_report_once_read(tensors):
    a, b, c, d = tensors
    two_adds(a, b, c, d, config=RunConfig(platform="a2a3sim"))
    compiled = two_adds.compile(config=RunConfig(platform="a2a3sim"))
    report = json.loads((compiled.output_dir / "report.json").read_text())
    assert report["total_cycles"] == two_adds.last_report.total_cycles


def test_the_simulator_takes_any_device_id_and_records_it(tensors, tmp_path):
    a, b, c, d = tensors
    config = RunConfig(platform="a2a3sim", device_id=11, save_kernels_dir=tmp_path / "kept")
    two_adds(a, b, c, d, config=config)
    torch.testing.assert_close(d, a + b + b)
    assert two_adds.last_report.device_id == 11
    assert json.loads((tmp_path / "kept" / "report.json").read_text())["device_id"] == 11
    with pytest.raises(ConfigError, match=r"RunConfig.device_id takes an int >= 0, got -1"):
        RunConfig(platform="a2a3sim", device_id=-1)


def test_the_chip_swimlane_switch_writes_its_records_into_dfx_outputs_too(tensors, tmp_path):
    a, b, c, d = tensors
    config = RunConfig(
        platform="a2a3sim",
        enable_chip_swimlane=True,
        profile_dir=tmp_path / "prof",
        save_kernels_dir=tmp_path / "out",
    )
    two_adds(a, b, c, d, config=config)
    kept = json.loads((tmp_path / "out" / "dfx_outputs" / "chip_swimlane_records.json").read_text())
    profiled = json.loads((tmp_path / "prof" / "chip_swimlane_records.json").read_text())
    assert kept["records"] == profiled["records"] and {r["kernel"] for r in kept["records"]} == {
        "first",
        "second",
    }
