"""``pypto tune`` on a2a3sim: a grid over split x ring depth x tile size of the seed kernel picks the
config with the fewest modeled cycles, reports the infeasible one and writes results.csv and
cycles.png; a 2-worker Dask LocalCluster gives the serial rows; an ``@pl.autotune`` kernel sweeps
its own configs; bad command lines are errors with a hint, never a traceback."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import pypto.language as pl
from pypto.cli import cli
from pypto.cli.tune_cmd import grid_configs, parse_grid
from pypto.runtime import reset_registry

KERNELS = Path(__file__).resolve().parent / "data" / "tune" / "kernels.py"
SEED = f"{KERNELS}::seed"
SEED_ARGS = ["--arg", "a=fp16[256,256]", "--arg", "b=fp16[256,128]"]
SEED_ARGS += ["--arg", "bias=fp32[256,128]", "--arg", "out=fp32[256,128]"]
GRID = ["--grid", "split=UP_DOWN,NONE", "--grid", "slot_num=2,4", "--grid", "tile_m=64,128"]
INFEASIBLE = "split=UP_DOWN slot_num=4 tile_m=128"
COLUMNS = ("config", "modeled_cycles", "roofline_ratio", "overlap", "memory_high_water", "feasible")
ENVIRONMENT = ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE", "PYPTO_DASK_SCHEDULER", "PYPTO_TUNE_WORKERS")


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    """A CliRunner in an empty directory, with a cache of its own and no tuning settings set."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    reset_registry()
    yield CliRunner()
    reset_registry()


def tune(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, ["tune", *args])


def tuned(runner: CliRunner, *args: str) -> Result:
    result = tune(runner, *args)
    assert result.exit_code == 0, result.output
    return result


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def best_row(rows: list[dict[str, str]]) -> dict[str, str]:
    """The feasible row with the fewest modeled cycles (the first on a tie)."""
    feasible = [row for row in rows if row["feasible"] == "yes"]
    return min(feasible, key=lambda row: int(row["modeled_cycles"]))


def test_a_grid_picks_the_fewest_modeled_cycles_and_writes_the_results(
    runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = tuned(runner, SEED, *GRID, *SEED_ARGS, "--workers", "0", "-o", str(out))
    rows = read_rows(out / "results.csv")
    assert [row["config"] for row in rows] == [
        config.label for config in grid_configs(parse_grid(GRID[1::2]))
    ]
    assert all(column in rows[0] for column in COLUMNS)
    (infeasible,) = [row for row in rows if row["feasible"] == "no"]
    assert infeasible["config"] == INFEASIBLE and "MemoryBudgetError" in infeasible["message"]
    assert all(row["modeled_cycles"] and row["memory_high_water"] for row in rows if row is not infeasible)
    best = best_row(rows)
    stdout = result.stdout.splitlines()
    (marked,) = [line for line in stdout if line.startswith("*")]
    assert best["config"] in marked
    python = f"split=pl.SplitMode.{best['split']}, slot_num={best['slot_num']}, tile_m={best['tile_m']}"
    assert f"best: pl.Config({python})  # {int(best['modeled_cycles']):,} modeled cycles" in stdout
    assert any(line.startswith(f"  {INFEASIBLE}: infeasible: MemoryBudgetError") for line in stdout)
    assert (out / "cycles.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"  results  {out / 'results.csv'}" in stdout and f"  plot     {out / 'cycles.png'}" in stdout
    # The progress, one line per trial as it finishes, goes to standard error.
    assert sum(line.startswith("[") for line in result.stderr.splitlines()) == len(rows)


def test_two_dask_workers_give_the_rows_of_a_serial_sweep(runner: CliRunner, tmp_path: Path) -> None:
    tuned(runner, SEED, *GRID, *SEED_ARGS, "--workers", "0", "-o", str(tmp_path / "serial"))
    result = tuned(runner, SEED, *GRID, *SEED_ARGS, "--workers", "2", "-o", str(tmp_path / "dask"))
    assert "Dask LocalCluster, 2 worker process(es)" in result.output

    def figures(directory: str) -> list[dict[str, str]]:
        rows = read_rows(tmp_path / directory / "results.csv")
        return [{name: value for name, value in row.items() if name != "seconds"} for row in rows]

    assert figures("dask") == figures("serial")


def test_an_autotune_kernel_without_grid_sweeps_its_own_configs(runner: CliRunner, tmp_path: Path) -> None:
    """Its parameters are fully annotated, so it needs no --arg; the results go to
    pypto_tune/<kernel> and the choice to the tuning cache."""
    result = tuned(runner, f"{KERNELS}::tuned_seed", "--workers", "0")
    directory = Path("pypto_tune") / "tuned_seed"
    rows = read_rows(tmp_path / directory / "results.csv")
    labels = [
        pl.Config(tile_m=t, slot_num=s, split=pl.SplitMode.UP_DOWN).label
        for t, s in ((64, 2), (128, 2), (128, 4))
    ]
    assert [row["config"] for row in rows] == labels
    assert [row["feasible"] for row in rows] == ["yes", "yes", "no"]
    (marked,) = [line for line in result.stdout.splitlines() if line.startswith("*")]
    assert best_row(rows)["config"] in marked
    assert f"  results  {directory / 'results.csv'}" in result.stdout
    assert list((tmp_path / "cache" / "tuning").glob("*.json"))


def test_a_grid_name_that_is_a_parameter_is_passed_as_the_argument(runner: CliRunner, tmp_path: Path) -> None:
    tuned(runner, f"{KERNELS}::scaled", "--grid", "rows=64,128", "--grid", "scale=2.0,3", "--workers", "1")
    rows = read_rows(tmp_path / "pypto_tune" / "scaled" / "results.csv")
    assert [(row["rows"], row["scale"], row["feasible"]) for row in rows] == [
        ("64", "2.0", "yes"),
        ("64", "3", "yes"),
        ("128", "2.0", "yes"),
        ("128", "3", "yes"),
    ]


def test_workers_on_the_command_line_beat_a_scheduler_in_the_environment(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_DASK_SCHEDULER", "tcp://127.0.0.1:9")  # nothing listens there
    result = tuned(runner, f"{KERNELS}::tuned_seed", "--workers", "0")
    assert "tuning tuned_seed: 3 config(s) on this process (serially)" in result.stderr


def test_without_dask_the_sweep_runs_here_with_a_warning(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pypto.tuning.cluster.dask_installed", lambda: False)
    result = tuned(runner, f"{KERNELS}::tuned_seed", "--workers", "2")
    assert "pypto: TuneWarning: Dask is not installed, so the sweep runs serially" in result.stderr
    assert "on this process (serially)" in result.stderr and result.stdout.startswith("best  config")


def test_grid_values_are_numbers_bools_enum_members_or_words() -> None:
    axes = parse_grid(
        [
            "split=UP_DOWN,SplitMode.NONE,pl.SplitMode.LEFT_RIGHT",
            "n=4,-1,0.5,1e-3",
            "flag=true,False",
            "dtype=FP16,pl.BF16",
            "mode=row,'min'",
        ]
    )
    assert axes == [
        ("split", [pl.SplitMode.UP_DOWN, pl.SplitMode.NONE, pl.SplitMode.LEFT_RIGHT]),
        ("n", [4, -1, 0.5, 1e-3]),
        ("flag", [True, False]),
        ("dtype", [pl.FP16, pl.BF16]),
        ("mode", ["row", "min"]),
    ]
    configs = grid_configs(axes[:2])
    assert len(configs) == 12 and configs[1].kwargs == {"split": pl.SplitMode.UP_DOWN, "n": -1}


def _a_file(tmp_path: Path) -> str:
    (tmp_path / "a_file").write_text("not a directory")
    return str(tmp_path / "a_file" / "out")


BAD = [
    (
        "grid-not-a-pair",
        [SEED, "--grid", "tile_m", *SEED_ARGS],
        2,
        "--grid tile_m: 'tile_m' is not NAME=V1,V2,...",
    ),
    ("grid-no-values", [SEED, "--grid", "tile_m=", *SEED_ARGS], 2, "--grid tile_m=: tile_m has no values"),
    ("grid-empty-value", [SEED, "--grid", "tile_m=64,,128", *SEED_ARGS], 2, "value 2 of tile_m is empty"),
    ("grid-twice", [SEED, "--grid", "tile_m=64", "--grid", "tile_m=128"], 2, "tile_m is given twice"),
    (
        "grid-unknown-member",
        [SEED, "--grid", "split=SplitMode.UPDOWN"],
        2,
        "SplitMode has no member 'UPDOWN'",
    ),
    (
        "grid-ambiguous-member",
        [SEED, "--grid", "split=NONE"],
        2,
        "NONE is a member of AtomicType and SplitMode",
    ),
    (
        "grid-name-not-read",
        [SEED, *GRID, "--grid", "tile_n=64,128", *SEED_ARGS],
        2,
        "--grid tile_n=64,128: seed neither reads tile_n nor has a parameter tile_n",
    ),
    (
        "scheduler-and-workers",
        [SEED, *GRID, "--scheduler", "tcp://127.0.0.1:8786", "--workers", "2"],
        2,
        "--scheduler tcp://127.0.0.1:8786 and --workers 2",
    ),
    (
        "unknown-kernel",
        [f"{KERNELS}::nope"],
        2,
        "has no @pl.jit kernel named 'nope' (kernels: scaled, seed, tuned_seed)",
    ),
    (
        "plain-kernel-without-grid",
        [SEED, *SEED_ARGS],
        2,
        "seed is a plain @pl.jit kernel, so there is nothing to sweep without --grid (its body reads split, "
        "slot_num, tile_m",
    ),
    (
        "arg-the-grid-chooses",
        [f"{KERNELS}::scaled", "--grid", "rows=64", "--grid", "scale=2.0", "--arg", "scale=1.0"],
        2,
        "--arg scale: the configurations choose scale",
    ),
    ("unusable-output", [SEED, *GRID, *SEED_ARGS, "-o", _a_file], 2, "cannot write tuning results to"),
    (
        "no-config-runs",
        [
            SEED,
            "--grid",
            "split=UP_DOWN",
            "--grid",
            "slot_num=4",
            "--grid",
            "tile_m=128",
            *SEED_ARGS,
            "--workers",
            "0",
        ],
        1,
        f"no config of seed ran: {INFEASIBLE}: MemoryBudgetError",
    ),
]


@pytest.mark.parametrize(("argv", "status", "message"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_a_bad_command_line_is_an_error_with_a_hint_and_no_traceback(
    runner: CliRunner, tmp_path: Path, argv: list, status: int, message: str
) -> None:
    result = tune(runner, *(part(tmp_path) if callable(part) else part for part in argv))
    assert result.exit_code == status, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    assert message in result.output and "\nhint: " in result.output, result.output


def test_help_explains_the_options_with_examples(runner: CliRunner) -> None:
    result = tuned(runner, "--help")
    text = " ".join(result.output.split())
    for part in ("--grid NAME=V1,V2,...", "--arg NAME=VALUE", "--workers N", "--scheduler ADDR", "Examples:"):
        assert part in text
    assert "[default: (pypto_tune/<KERNEL>)]" in text


def test_the_console_script_keeps_the_table_on_stdout_and_the_progress_on_stderr(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
    done = subprocess.run(
        [sys.executable, "-m", "pypto", "tune", f"{KERNELS}::tuned_seed", "--workers", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYPTO_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split() == [
        "best",
        "config",
        "modeled",
        "cycles",
        "roofline",
        "overlap",
        "memory",
        "high-water",
        "feasible",
    ]
    assert "best: pl.Config(tile_m=128, slot_num=2, split=pl.SplitMode.UP_DOWN)" in done.stdout
    assert done.stderr.splitlines()[0] == "tuning tuned_seed: 3 config(s) on this process (serially)"
    assert [line.split("]")[0] for line in done.stderr.splitlines()[1:]] == ["[1/3", "[2/3", "[3/3"]


def test_cache_info_lists_the_tuning_choices_and_clear_removes_them(
    runner: CliRunner, tmp_path: Path
) -> None:
    tuned(runner, f"{KERNELS}::tuned_seed", "--workers", "0")
    info = runner.invoke(cli, ["cache", "info"]).output
    assert "tuning choices: 1" in info
    assert "tuned_seed" in info and "tile_m=128 slot_num=2 split=UP_DOWN" in info
    cleared = runner.invoke(cli, ["cache", "clear"]).output
    assert f"removed 1 tuning choice(s) from {tmp_path / 'cache' / 'tuning'}" in cleared
    assert "tuning choices" not in runner.invoke(cli, ["cache", "info"]).output
