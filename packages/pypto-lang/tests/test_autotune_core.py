"""``pl.autotune`` and ``pl.Config`` without a simulator: on the recording ``testsim`` backend,
which reports 100 modeled cycles for every run, so these tests choose by an objective of their own.
(The sweep on a2a3sim, Dask and the second process are tested in the root ``tests/test_autotune.py``.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError
from pypto.runtime import RunConfig
from pypto.tuning import cluster
from pypto.tuning.sweep import OK, SerialExecutor, Trial, TuneError, TuneWarning, TuningCache

TILES = (16, 32, 64)
tile = 64  # the default of the tuned name: a config's value shadows it


def make_tuned(tiles=TILES, **options):
    picked: list[int] = []

    def remember(named: dict) -> None:
        picked.append(named["tile"])

    options.setdefault("pre_hook", remember)
    options.setdefault("objective", lambda report: -picked[-1])  # the largest tile wins

    @pl.autotune(configs=[pl.Config(tile=t) for t in tiles], key=["a"], **options)
    @pl.jit
    def double(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 64, tile):
                out[i : i + tile, :] = pl.add(a[i : i + tile, :], a[i : i + tile, :])
        return out

    return double, picked


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYPTO_CACHE", raising=False)
    monkeypatch.delenv("PYPTO_DASK_SCHEDULER", raising=False)
    monkeypatch.delenv("PYPTO_TUNE_WORKERS", raising=False)
    return tmp_path / "cache"


def test_config_reads_as_triton_writes_it() -> None:
    config = pl.Config({"tile_m": 128}, split=pl.SplitMode.UP_DOWN)
    assert config.all_kwargs() == {"tile_m": 128, "split": pl.SplitMode.UP_DOWN}
    assert config["tile_m"] == 128 and "split" in config and len(config) == 2
    assert config.label == "tile_m=128 split=UP_DOWN"
    assert repr(config) == "Config(tile_m=128, split=UP_DOWN)"
    assert config == pl.Config(tile_m=128, split=pl.SplitMode.UP_DOWN)
    assert hash(config) == hash(pl.Config(tile_m=128, split=pl.SplitMode.UP_DOWN))


def test_the_objective_chooses_and_the_winner_runs(backend, config: RunConfig) -> None:
    double, picked = make_tuned()
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    double(a, out, config=config)
    assert double.best_config == pl.Config(tile=64)
    assert [t.status for t in double.report.trials] == [OK, OK, OK]
    assert picked == list(TILES)  # one measured run per config, in config order
    assert len(backend.calls) == len(TILES) + 1  # the trials, then the winner on the caller's tensors
    assert backend.calls[-1][1][0] is a
    assert all(call[1][0] is not a for call in backend.calls[:-1])  # trials run on copies


def test_equal_objectives_pick_the_first_config(backend, config: RunConfig) -> None:
    double, _ = make_tuned(objective=None)  # modeled cycles: 100 for every config here
    double(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert double.best_config == pl.Config(tile=16)


def test_the_choice_is_read_back_from_disk_by_a_new_tuner(
    backend, config: RunConfig, cache_dir: Path
) -> None:
    first, _ = make_tuned()
    first(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    second, picked = make_tuned()
    second(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert picked == [] and second.report.cached  # no trial ran
    assert second.best_config == pl.Config(tile=64)
    assert [t.objective for t in second.report.trials] == [t.objective for t in first.report.trials]
    assert len(list((cache_dir / "tuning").glob("*.json"))) == 1
    third, picked = make_tuned(tiles=(16, 32))  # other configs: another key
    third(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert picked == [16, 32]


def test_cache_results_false_keeps_nothing_on_disk(backend, config: RunConfig, cache_dir: Path) -> None:
    double, _ = make_tuned(cache_results=False)
    double(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert not (cache_dir / "tuning").exists()


def test_a_name_no_config_reads_is_an_error(backend, config: RunConfig) -> None:
    @pl.autotune(configs=[pl.Config(tile=32, depth=2)], key=[])
    @pl.jit
    def double(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 64, tile):
                out[i : i + tile, :] = pl.add(a[i : i + tile, :], a[i : i + tile, :])
        return out

    with pytest.raises(TuneError) as info:
        double(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert "set depth, which is neither a parameter of double nor a name its body reads" in info.value.message
    assert "@pl.autotune(configs=[pl.Config(tile=32, depth=2)], key=[])" in info.value.render()


def test_a_parse_error_of_one_config_is_an_infeasible_trial(backend, config: RunConfig) -> None:
    double, _ = make_tuned(tiles=(32, 0))  # a zero-row slice does not parse
    double(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    trials = double.report.trials
    assert [t.status for t in trials] == [OK, "infeasible"]
    assert trials[1].message.startswith("ParseError: ") and trials[1].error.span is not None


def test_trials_round_trip_through_json() -> None:
    trial = Trial(2, pl.Config(tile=8), OK, objective=5.0, cycles=5, memory={"Vec": 10}, usable={"Vec": 20})
    back = Trial.from_json(trial.to_json(), pl.Config(tile=8))
    assert back == trial


def test_an_unreadable_cache_entry_is_ignored(tmp_path: Path) -> None:
    cache = TuningCache(tmp_path)
    cache.directory.mkdir(parents=True)
    cache.path("k").write_text("{not json")
    assert cache.report("k", "kernel", (), [pl.Config(tile=8)]) is None


def test_where_a_sweep_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(cluster.make_executor(), SerialExecutor)
    assert isinstance(cluster.make_executor(workers=1), SerialExecutor)
    monkeypatch.setenv("PYPTO_TUNE_WORKERS", "lots")
    with pytest.raises(TuneError, match="PYPTO_TUNE_WORKERS='lots' is not a number"):
        cluster.make_executor()
    monkeypatch.setenv("PYPTO_TUNE_WORKERS", "0")
    assert isinstance(cluster.make_executor(default_workers=4), SerialExecutor)
    monkeypatch.delenv("PYPTO_TUNE_WORKERS")
    monkeypatch.setattr(cluster, "dask_installed", lambda: False)
    with pytest.warns(TuneWarning, match="runs serially"):
        assert isinstance(cluster.make_executor(workers=2), SerialExecutor)
    with pytest.raises(TuneError, match="Dask is not installed") as info:
        cluster.make_executor(scheduler="tcp://127.0.0.1:8786")
    assert "pypto-lang[tune]" in info.value.hint


FACTOR = 2.0  # a module global the kernel below reads: part of what its parse gives


def make_scaled():
    picked: list[int] = []

    @pl.autotune(
        configs=[pl.Config(tile=t) for t in TILES],
        key=[],
        pre_hook=lambda named: picked.append(named["tile"]),
        objective=lambda report: -picked[-1],
    )
    @pl.jit
    def scaled(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 64, tile):
                out[i : i + tile, :] = pl.mul(a[i : i + tile, :], FACTOR)
        return out

    return scaled, picked


def test_a_changed_global_the_body_reads_sweeps_again(backend, config: RunConfig, monkeypatch) -> None:
    """The disk cache is keyed by what each config parsed to, not by the source text alone."""
    args = (torch.randn(64, 64), torch.zeros(64, 64))
    first, picked = make_scaled()
    first(*args, config=config)
    assert picked == list(TILES)
    again, picked = make_scaled()
    again(*args, config=config)
    assert picked == [] and again.report.cached
    monkeypatch.setattr(sys.modules[__name__], "FACTOR", 3.0)
    changed, picked = make_scaled()
    changed(*args, config=config)
    assert picked == list(TILES) and not changed.report.cached


def test_a_mistake_every_config_hits_is_raised_as_it_is(backend, config: RunConfig) -> None:
    """Not "no config ran ... add configs that fit": the kernel's own error, at its line."""

    @pl.autotune(configs=[pl.Config(tile=t) for t in TILES], key=[])
    @pl.jit
    def broken(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, 64, tile):
                out[i : i + tile, :] = pl.add(a[i : i + tile, :], undefined_name)  # noqa: F821
        return out

    with pytest.raises(ParseError) as info:
        broken(torch.randn(64, 64), torch.zeros(64, 64), config=config)
    assert "unknown name 'undefined_name'" in info.value.message
    assert "undefined_name)" in info.value.render()
    assert [t.status for t in info.value.report.trials] == ["infeasible"] * len(TILES)


def test_an_edit_of_the_backends_source_sweeps_again(backend, config: RunConfig, monkeypatch) -> None:
    """The backend's cost model times the trials: a choice made with other backend source (an
    editable install edited, its version the same) is not reused."""
    args = (torch.randn(64, 64), torch.zeros(64, 64))
    first, picked = make_scaled()
    first(*args, config=config)
    assert picked == list(TILES)
    autotune_module = sys.modules["pypto.tuning.autotune"]
    edited = autotune_module.source_digest(type(backend).__module__) + "-edited"
    monkeypatch.setattr(autotune_module, "source_digest", lambda module: edited)
    again, picked = make_scaled()
    again(*args, config=config)
    assert picked == list(TILES) and not again.report.cached


def test_the_source_digest_follows_a_package_or_a_module_file(tmp_path: Path, monkeypatch) -> None:
    from pypto.runtime.compiling.cache import source_digest

    package = tmp_path / "tuned_plugin_pkg"
    (package / "cost").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    model = package / "cost" / "model.py"
    model.write_text("CYCLES = 10\n")
    (tmp_path / "tuned_plugin_file.py").write_text("CYCLES = 10\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tuned_plugin_file
    import tuned_plugin_pkg.cost.model

    digests = {name: source_digest(name) for name in ("tuned_plugin_pkg.cost.model", "tuned_plugin_file")}
    assert source_digest("tuned_plugin_pkg") == digests["tuned_plugin_pkg.cost.model"]  # the whole package
    model.write_text("CYCLES = 20\n")
    (tmp_path / "tuned_plugin_file.py").write_text("CYCLES = 20\n")
    source_digest.cache_clear()  # a new process
    try:
        assert source_digest("tuned_plugin_pkg.cost.model") != digests["tuned_plugin_pkg.cost.model"]
        assert source_digest("tuned_plugin_file") != digests["tuned_plugin_file"]
        assert source_digest("not_imported_anywhere")  # nothing to read: the name alone
    finally:
        source_digest.cache_clear()
        for name in (
            "tuned_plugin_file",
            "tuned_plugin_pkg",
            "tuned_plugin_pkg.cost",
            "tuned_plugin_pkg.cost.model",
        ):
            sys.modules.pop(name, None)
    assert tuned_plugin_file.CYCLES == tuned_plugin_pkg.cost.model.CYCLES == 10
