"""The pypto command on the real simulator: the acceptance commands of the issue."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pypto.cli import cli
from pypto.runtime import reset_registry

ROOT = Path(__file__).resolve().parent.parent
MIXED = str(ROOT / "examples" / "advanced" / "03_mixed_kernel.py")
MIXED_ARGS = ["--arg", "a=fp16[128,256]", "--arg", "b=fp16[256,128]", "--arg", "bias=fp32[128,128]"]
MIXED_ARGS += ["--arg", "out=fp32[128,128]"]


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE", "PYPTO_LOAD_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    reset_registry()
    yield CliRunner()
    reset_registry()


def pypto(runner, *args, **kwargs):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kwargs)
    assert result.exit_code == 0, result.output
    return result.output


def test_run_the_mixed_kernel_example_prints_ok(runner):
    assert pypto(runner, "run", MIXED).splitlines()[-1] == "OK"


def test_run_passes_the_script_its_arguments(runner):
    assert pypto(runner, "run", MIXED, "--", "--mode", "staged", "--m", "256").splitlines()[-1] == "OK"


def test_profile_writes_the_three_artifacts_and_says_where(runner, tmp_path):
    output = pypto(runner, "profile", "-o", str(tmp_path / "prof"), MIXED)
    directory = tmp_path / "prof" / "mixed_matmul_bias"
    for name in ("trace.json", "swimlane.png", "summary.txt"):
        assert (directory / name).is_file()
        assert str(directory / name) in output
    assert "mixed_matmul_bias on a2a3sim: " in output and "modeled cycles" in output
    assert json.loads((directory / "trace.json").read_text())["otherData"]["platform"] == "a2a3sim"


def test_compile_shows_the_ring_at_the_bottom_of_vec(runner):
    output = pypto(runner, "compile", f"{MIXED}::mixed_matmul_bias", *MIXED_ARGS, "--emit", "memory-map")
    aiv = output[output.index("mixed_aiv (AIV kernel)") :]
    ring = aiv.splitlines()[2].split()
    assert ring[:3] == ["Vec", "0x00000", "131072"]
    assert "[reserved] cross-core pipe ring (automatic)" in aiv.splitlines()[2]


def test_compile_emits_the_lowered_program_by_default(runner):
    output = pypto(runner, "compile", f"{MIXED}::mixed_matmul_bias", *MIXED_ARGS)
    assert "def mixed_aiv(" in output and "pl.tile.tpop_from_aic(" in output


def test_platforms_lists_the_simulator_with_its_distribution(runner):
    listed = json.loads(pypto(runner, "platforms", "--json"))
    sim = next(entry for entry in listed if entry["name"] == "a2a3sim")
    assert (sim["kind"], sim["distribution"], sim["version"]) == ("backend", "pypto-sim-a2a3", "0.1.0")


def test_pypto_load_plugins_can_hide_the_simulator(runner):
    assert pypto(runner, "platforms", env={"PYPTO_LOAD_PLUGINS": ""}).startswith("no platform is registered")


def python_pypto(cache_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "pypto.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


@pytest.mark.disk_cache
def test_a_second_run_hits_the_disk_cache_and_cache_info_shows_it(runner, tmp_path):
    cache_dir = tmp_path / "cache"
    for _ in range(2):
        result = python_pypto(cache_dir, "run", MIXED)
        assert result.returncode == 0 and result.stdout.splitlines()[-1] == "OK", result.stderr
    info = pypto(runner, "cache", "info", env={"PYPTO_CACHE_DIR": str(cache_dir)})
    assert "entries:   1 (" in info and "1 hit(s)" in info
    row = info.splitlines()[-1].split()
    assert row[:2] == ["mixed_matmul_bias", "a2a3sim"]
    # The counters, not the wall-clock times (which a loaded machine can make any size).
    hits, last_hit = int(row[4]), row[5]
    assert hits == 1 and last_hit != "-"


@pytest.mark.disk_cache
def test_a_corrupted_entry_recovers(runner, tmp_path):
    cache_dir = tmp_path / "cache"
    assert python_pypto(cache_dir, "run", MIXED).returncode == 0
    (entry,) = (cache_dir / "compiled").glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])
    result = python_pypto(cache_dir, "run", MIXED)
    assert result.returncode == 0 and result.stdout.splitlines()[-1] == "OK"
    assert "CacheWarning" in result.stderr and "is corrupted" in result.stderr
    assert python_pypto(cache_dir, "run", MIXED).returncode == 0
    assert "1 hit(s)" in pypto(runner, "cache", "info", env={"PYPTO_CACHE_DIR": str(cache_dir)})


PROGRAM_SCRIPT = """
import pypto.language as pl

T = pl.Tensor[[64, 64], pl.FP32]


@pl.program
class Doubler:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: T, out: pl.Out[T]):
        out[:] = pl.add(pl.exp(a), a)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, out: pl.Out[T]):
        return self.double(a, out)
"""


def test_compile_dumps_of_a_program_class_parse_back_and_run_against_torch(runner, tmp_path):
    import torch

    import pypto.language as pl
    from pypto.runtime import run

    script = tmp_path / "doubler.py"
    script.write_text(PROGRAM_SCRIPT)
    dumps = tmp_path / "dumps"
    output = pypto(runner, "compile", f"{script}::Doubler", "--dump-passes", str(dumps))
    assert output.startswith("@pl.program\nclass Doubler:")  # --emit ir: the lowered program
    files = sorted(dumps.glob("*.py"))
    assert len(files) >= 8
    a = torch.randn(64, 64)
    for dump in files:
        out = torch.zeros(64, 64)
        run(pl.parse(dump.read_text(), filename=str(dump)), a, out)
        assert torch.allclose(out, torch.exp(a) + a, rtol=1e-5, atol=1e-5), dump.name


def test_compile_of_a_program_class_takes_no_arg(runner, tmp_path):
    script = tmp_path / "doubler.py"
    script.write_text(PROGRAM_SCRIPT)
    result = runner.invoke(cli, ["compile", f"{script}::Doubler", "--arg", "a=fp32[8,8]"])
    assert result.exit_code != 0
    assert "is a @pl.program" in result.output


def test_run_dash_m_the_qwen3_model(runner):
    output = pypto(
        runner,
        "run",
        "-m",
        "pypto.models.qwen3",
        "--config",
        "tiny",
        "--prompt-ids",
        "1,2,3",
        "--max-new-tokens",
        "2",
        "--check",
    )
    tokens = output.splitlines()[0]
    assert tokens.startswith("tokens: 1,2,3,") and len(tokens.split(",")) == 5
    assert "modeled tokens/s" in output and output.splitlines()[-1] == "OK"


TIMING_ONLY_SCRIPT = """
import torch
import pypto.language as pl

@pl.jit
def double(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.mul(pl.load(x, [0, 0], [32, 64]), 2.0), [0, 0], out)
    return out

out = torch.full((32, 64), 7.0)
double(torch.ones(32, 64), out)
report = double.last_report
print("timing_only", report.timing_only, "untouched", bool((out == 7.0).all()), report.total_cycles)
"""


def test_pypto_run_and_profile_take_timing_only(runner, tmp_path):
    script = tmp_path / "double.py"
    script.write_text(TIMING_ONLY_SCRIPT)
    full = runner.invoke(cli, ["run", str(script)], catch_exceptions=False).output.split()
    timed = runner.invoke(cli, ["run", "--timing-only", str(script)], catch_exceptions=False).output.split()
    assert full[:4] == ["timing_only", "False", "untouched", "False"]
    assert timed[:4] == ["timing_only", "True", "untouched", "True"]
    assert timed[4] == full[4]  # the same modeled cycles
    profiled = runner.invoke(
        cli, ["profile", "--timing-only", "-o", str(tmp_path / "prof"), str(script)], catch_exceptions=False
    )
    assert "timing_only True untouched True" in profiled.output
    summary = (tmp_path / "prof" / "double" / "summary.txt").read_text()
    assert "timing only" in summary
