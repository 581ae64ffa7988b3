"""``@pl.autotune`` on a2a3sim: a sweep over ring depth x split mode x tile size of the seed
kernel picks the lowest modeled cycles, reports the infeasible configs, keeps the choice on disk
(a second process runs no trial), and gives the same trials on a 2-worker Dask LocalCluster."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.tuning.sweep import FAILED, INFEASIBLE, OK, TuneError

SPLITS = (pl.SplitMode.UP_DOWN, pl.SplitMode.NONE)
CONFIGS = [
    pl.Config(tile_m=tile_m, slot_num=slot_num, split=split)
    for tile_m in (64, 128)
    for slot_num in (2, 4)
    for split in SPLITS
]
M, K, N = 256, 256, 128
# Defaults of the tuned names: a config's value shadows them, and the kernels read as plain Python.
tile_m, slot_num, split, rows, tile = 64, 2, pl.SplitMode.UP_DOWN, 64, 32


def seed_args(m: int = M) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return (
        torch.randn(m, K, dtype=torch.float16),
        torch.randn(K, N, dtype=torch.float16),
        torch.randn(m, N),
        torch.zeros(m, N),
    )


def expected(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return a.float() @ b.float() + bias


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"tune_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The seed kernel reading tile_m, slot_num and split, shared with the tests of `pypto tune`.
SEED = _load(Path(__file__).parent / "data" / "tune" / "kernels.py").seed


def make_seed(configs: list[pl.Config] = CONFIGS, **options: object) -> pl.Autotuner:
    return pl.autotune(configs=configs, key=["M"], **options)(SEED)


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(directory))
    monkeypatch.delenv("PYPTO_CACHE", raising=False)
    monkeypatch.delenv("PYPTO_DASK_SCHEDULER", raising=False)
    monkeypatch.delenv("PYPTO_TUNE_WORKERS", raising=False)
    return directory


def figures(report: object) -> list[tuple[object, ...]]:
    return [
        (t.index, t.config, t.status, t.cycles, t.objective, t.roofline, t.overlap, t.memory)
        for t in report.trials
    ]


def test_the_sweep_picks_the_lowest_modeled_cycles_and_runs_it() -> None:
    seed = make_seed()
    a, b, bias, out = seed_args()
    seed(a, b, bias, out)
    assert torch.allclose(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)
    report = seed.report
    assert len(report.trials) == len(CONFIGS) and not report.cached
    feasible = [t for t in report.trials if t.status == OK]
    best = min(feasible, key=lambda t: (t.cycles, t.index))
    assert seed.best_config == best.config == report.best_config
    assert seed.last_report is not None and seed.last_report.total_cycles == best.cycles
    # The trials differ: the choice is a real one.
    assert len({t.cycles for t in feasible}) > 2
    for trial in feasible:
        assert trial.roofline is not None and trial.roofline >= 1.0
        assert 0.0 <= trial.overlap <= 1.0
        assert trial.memory["Vec"] <= trial.usable["Vec"]


def test_an_infeasible_config_is_recorded_with_its_reason_and_the_sweep_goes_on() -> None:
    seed = make_seed()
    seed(*seed_args())
    infeasible = seed.report.infeasible
    assert [t.config for t in infeasible] == [pl.Config(tile_m=128, slot_num=4, split=pl.SplitMode.UP_DOWN)]
    trial = infeasible[0]
    assert trial.status == INFEASIBLE and trial.cycles is None
    assert trial.message.startswith("MemoryBudgetError: Function 'mixed_aiv': Vec buffer usage")
    assert "cross_core_slot" in trial.error.render() and "^" in trial.error.render()
    table = seed.report.table()
    assert "infeasible" in table and "MemoryBudgetError" in table


def test_the_choice_is_kept_per_key_and_a_new_key_tunes_again() -> None:
    calls = []

    def cycles(report):
        calls.append(report.total_cycles)
        return report.total_cycles

    seed = make_seed(objective=cycles)
    seed(*seed_args())
    assert len(calls) == len(CONFIGS) - 1  # every feasible trial was measured once
    seed(*seed_args())
    assert len(calls) == len(CONFIGS) - 1  # the same M: no sweep
    seed(*seed_args(128))
    assert len(calls) == 2 * (len(CONFIGS) - 1)  # another M: another sweep
    assert len(seed.cache) == 2


def test_a_second_process_reuses_the_choice_from_disk(tmp_path: Path, cache_dir: Path) -> None:
    script = tmp_path / "tuned.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            import pypto.language as pl

            CONFIGS = [pl.Config(tile_m=t, slot_num=s) for t in (64, 128) for s in (2, 4)]

            @pl.autotune(configs=CONFIGS, key=["M"])
            @pl.jit
            def seed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
                M, _ = a.shape
                with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN),
                           pl.cross_core_slot(slot_num=slot_num)], name_hint="mixed"):
                    for i in pl.range(0, M, tile_m):
                        acc = pl.matmul(a[i : i + tile_m, :], b, out_dtype=pl.FP32)
                        out[i : i + tile_m, :] = pl.add(acc, bias[i : i + tile_m, :])
                return out

            torch.manual_seed(0)
            a, b = torch.randn(256, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
            bias, out = torch.randn(256, 128), torch.zeros(256, 128)
            seed(a, b, bias, out)
            assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
            print(seed.report.cached, seed.best_config, len(seed.report.trials))
            """
        )
    )
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache_dir)}

    def run() -> str:
        done = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first, second = run(), run()
    assert first.startswith("False ")
    assert second.startswith("True ")  # no trial ran: the choice came from the disk cache
    assert first.split(" ", 1)[1] == second.split(" ", 1)[1]  # the same best config, the same trials
    assert list((cache_dir / "tuning").glob("*.json"))
    # Another source is another key: the edited kernel is tuned again.
    script.write_text(script.read_text().replace('name_hint="mixed"', 'name_hint="mixed2"'))
    assert run().startswith("False ")


def test_pypto_cache_off_keeps_no_choice_on_disk(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_CACHE", "off")
    make_seed()(*seed_args())
    assert not (cache_dir / "tuning").exists()


def test_the_same_sweep_on_a_two_worker_local_cluster_gives_the_serial_results() -> None:
    pytest.importorskip("distributed")
    seed = make_seed()
    args = seed_args()
    serial = seed.tune(*args, workers=0)
    cluster = seed.tune(*args, workers=2)
    assert serial.executor.startswith("this process") and cluster.executor.startswith("Dask LocalCluster, 2")
    assert figures(cluster) == figures(serial)
    assert cluster.best_config == serial.best_config
    assert {t.where for t in cluster.trials if t.status == OK} - {"local"}  # they ran on the workers
    assert [t.message for t in cluster.trials] == [t.message for t in serial.trials]


def test_a_worker_that_dies_loses_only_its_trial() -> None:
    pytest.importorskip("distributed")

    def die_on_the_deep_ring(named: dict) -> None:
        if named["slot_num"] == 4 and named["tile_m"] == 64 and named["split"] is pl.SplitMode.NONE:
            os._exit(3)  # the worker process dies

    seed = make_seed(pre_hook=die_on_the_deep_ring)
    report = seed.tune(*seed_args(), workers=2)
    failed = report.failed
    assert [t.config for t in failed] == [pl.Config(tile_m=64, slot_num=4, split=pl.SplitMode.NONE)]
    assert "died" in failed[0].message and failed[0].status == FAILED
    assert sum(t.status == OK for t in report.trials) == len(CONFIGS) - 2
    assert report.best is not None


def test_a_worker_of_a_local_cluster_holds_only_the_trial_it_runs() -> None:
    # Else a worker that dies takes the trials queued on it along (each then reruns once, and a
    # trial whose rerun was queued on a dying worker too failed: a flaky sweep).
    pytest.importorskip("distributed")

    def alone_on_its_worker(named: dict) -> None:
        from distributed import get_worker

        tasks = get_worker().state.tasks.values()
        held = [t.key for t in tasks if "pypto-trial" in str(t.key) and t.state != "memory"]  # (not done)
        if len(held) != 1:
            raise RuntimeError(f"a worker held {held}")

    report = make_seed(pre_hook=alone_on_its_worker).tune(*seed_args(), workers=2)
    assert [t.message for t in report.trials if t.status == FAILED] == []


def test_tune_never_writes_the_callers_tensors() -> None:
    seed = make_seed()
    a, b, bias, out = seed_args()
    out.fill_(7.0)
    seed.tune(a, b, bias, out, workers=0)
    assert torch.equal(out, torch.full_like(out, 7.0))


def test_a_config_name_that_is_a_parameter_is_passed_as_the_argument() -> None:
    @pl.autotune(configs=[pl.Config(scale=2.0, rows=64), pl.Config(scale=3.0, rows=128)], key=["x"])
    @pl.jit
    def scaled(x: pl.Tensor, out: pl.Out[pl.Tensor], scale: pl.FP32 = 1.0):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 256, rows):
                out[i : i + rows, :] = pl.mul(x[i : i + rows, :], scale)
        return out

    x, out = torch.randn(256, 64), torch.zeros(256, 64)
    scaled(x, out)
    best = scaled.best_config
    assert torch.allclose(out, x * best["scale"])
    with pytest.raises(TuneError, match="scale, which its configs choose"):
        scaled(x, out, scale=5.0)


def test_objective_prune_warmup_rep_and_hooks() -> None:
    seen: list[int] = []
    kept = CONFIGS[:4]

    def prune(configs, named_args, **kwargs):
        assert set(named_args) == {"a", "b", "bias", "out"}
        return [c for c in configs if c in kept]

    def count(named: dict) -> None:
        assert torch.equal(named["out"], torch.zeros_like(named["out"]))  # reset_to_zero before each run
        named["out"].fill_(1.0)
        seen.append(named["tile_m"])

    seed = make_seed(
        objective=lambda report: -report.overlap,  # the most overlap wins
        prune_configs_by={"early_config_prune": prune, "perf_model": lambda **c: -c["slot_num"], "top_k": 2},
        warmup=1,
        rep=2,
        reset_to_zero=["out"],
        pre_hook=count,
    )
    seed(*seed_args())
    tried = [t.config for t in seed.report.trials]
    assert tried == [c for c in kept if c["slot_num"] == 4]  # pruned, then the top 2 by the model
    assert len(seen) == 3 * len(tried)  # warmup + rep runs per trial
    assert seed.report.best.objective == min(-t.overlap for t in seed.report.trials)
    assert seed.report.objective.endswith("<lambda>")


def test_when_no_config_runs_the_error_lists_each_reason() -> None:
    seed = make_seed([pl.Config(tile_m=128, slot_num=4, split=pl.SplitMode.UP_DOWN)])
    with pytest.raises(TuneError) as info:
        seed(*seed_args())
    assert (
        "no config of seed ran: tile_m=128 slot_num=4 split=UP_DOWN: MemoryBudgetError" in info.value.message
    )
    assert info.value.span is not None and info.value.span.line > 0


@pytest.mark.parametrize(
    ("key", "configs", "message"),
    [
        (["Q"], CONFIGS[:1], "key name 'Q' of @pl.autotune is no parameter of seed nor an extent it reads"),
        (["M"], [pl.Config(tile_m=64, slot_num=2, split=pl.SplitMode.NONE, tile_n=32)], "set tile_n, which"),
    ],
)
def test_tuner_mistakes_point_at_the_decorator(
    key: list[str], configs: list[pl.Config], message: str
) -> None:
    @pl.autotune(configs=configs, key=key)
    @pl.jit
    def seed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        M, _ = a.shape
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(split), pl.cross_core_slot(slot_num=slot_num)],
            name_hint="mixed",
        ):
            for i in pl.range(0, M, tile_m):
                acc = pl.matmul(a[i : i + tile_m, :], b, out_dtype=pl.FP32)
                out[i : i + tile_m, :] = pl.add(acc, bias[i : i + tile_m, :])
        return out

    with pytest.raises(TuneError) as info:
        seed(*seed_args())
    assert message in info.value.message
    assert info.value.span.file == __file__
    assert "@pl.autotune(configs=configs, key=key)" in info.value.render()
    assert info.value.hint


def test_the_decorator_checks_what_it_is_given() -> None:
    with pytest.raises(TuneError, match=r"configs=\[pl.Config"):
        pl.autotune(configs=[], key=["M"])
    with pytest.raises(TuneError, match=r"key=\[names\]"):
        pl.autotune(configs=CONFIGS, key="M")
    with pytest.raises(TuneError, match="rep=0"):
        pl.autotune(configs=CONFIGS, key=["M"], rep=0)
    with pytest.raises(TuneError, match=r"decorates a @pl\.jit kernel, got function"):
        pl.autotune(configs=CONFIGS, key=["M"])(lambda a: a)
    with pytest.raises(TypeError, match="identifiers"):
        pl.Config({"not a name": 1})


def test_the_report_writes_a_csv_and_a_plot(tmp_path: Path) -> None:
    seed = make_seed()
    report = seed.tune(*seed_args(), workers=0)
    csv_path = report.write_csv(tmp_path / "results.csv")
    lines = csv_path.read_text().splitlines()
    header = lines[0].split(",")
    for column in ("config", "modeled_cycles", "roofline_ratio", "overlap", "memory_high_water", "feasible"):
        assert column in header
    assert len(lines) == 1 + len(CONFIGS)
    png = report.plot(tmp_path / "cycles.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


ROWS = pl.dynamic("rows")


def test_a_tuned_kernel_with_dynamic_extents_keys_on_their_values() -> None:
    @pl.autotune(configs=[pl.Config(tile=32), pl.Config(tile=64)], key=["rows"])
    @pl.jit
    def double(x: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(0, 64, tile):
                out[:, j : j + tile] = pl.add(x[:, j : j + tile], x[:, j : j + tile])
        return out

    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    double(x, out, config=RunConfig())
    assert torch.allclose(out, 2 * x)
    assert next(iter(double.cache))[0] == ("rows", 128)


def test_an_unguarded_script_on_local_workers_gets_the_fix_not_a_hang(
    tmp_path: Path, cache_dir: Path
) -> None:
    """Spawned workers import the script again: without a __main__ guard the cluster cannot start,
    and the call says so at the user's line."""
    pytest.importorskip("distributed")
    kernels = Path(__file__).parent / "data" / "tune" / "kernels.py"
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import importlib.util
            import torch
            import pypto.language as pl

            spec = importlib.util.spec_from_file_location("kernels", {str(kernels)!r})
            kernels = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(kernels)
            configs = [pl.Config(tile_m=t, slot_num=2, split=pl.SplitMode.UP_DOWN) for t in (64, 128)]
            seed = pl.autotune(configs=configs, key=["M"], workers=2)(kernels.seed)
            a, b = torch.randn(256, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
            seed(a, b, torch.randn(256, 128), torch.zeros(256, 128))
            """
        )
    )
    env = {**os.environ, "PYPTO_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()
    assert "TuneError" in done.stderr and "did not start" in done.stderr
    assert last[-1].startswith(
        "hint: a script that sweeps on local workers must call the kernel under `if __name__"
    )
    assert any("seed(a, b, torch.randn(256, 128), torch.zeros(256, 128))" in line for line in last[-6:])
