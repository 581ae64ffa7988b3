"""Bad input to @pl.autotune: an objective that is NaN or infinite never wins (a failed or an
infeasible trial that says why), and a name option that names no parameter is a TuneError at the
decorator's line that lists the parameters."""

from __future__ import annotations

import math

import pytest
import torch

import pypto.language as pl
from pypto.tuning.sweep import FAILED, INFEASIBLE, OK, Trial, TuneError, TuningReport

CONFIGS = [pl.Config(rows=16), pl.Config(rows=32)]
rows = 16  # the tuned name's default: a config's value shadows it


def _doubler(**options: object) -> pl.Autotuner:
    @pl.autotune(configs=CONFIGS, key=["x"], cache_results=False, **options)
    @pl.jit
    def doubler(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for r in pl.range(0, 64, rows):
                out[r : r + rows, :] = pl.mul(x[r : r + rows, :], 2.0)
        return out

    return doubler


def _first_then(first: float):
    """An objective that gives ``first`` for the first trial's run and the cycles after."""
    calls: list[int] = []

    def objective(report) -> float:
        calls.append(1)
        return first if len(calls) == 1 else float(report.total_cycles)

    return objective


@pytest.mark.parametrize(
    ("value", "status"), [(math.nan, FAILED), (-math.inf, FAILED), (math.inf, INFEASIBLE)]
)
def test_a_trial_whose_objective_is_not_finite_is_rejected_and_never_wins(value: float, status: str) -> None:
    tuner = _doubler(objective=_first_then(value))
    x = torch.randn(64, 64)
    out = torch.zeros(64, 64)
    tuner(x, out)
    torch.testing.assert_close(out, 2 * x)
    first, second = sorted(tuner.report.trials, key=lambda t: t.index)
    assert first.status == status and f"the objective is {value}" in first.message
    assert first.hint and first.objective is None
    assert second.status == OK and tuner.report.best is second


def test_when_every_objective_is_nan_the_error_says_so() -> None:
    tuner = _doubler(objective=lambda report: math.nan)
    with pytest.raises(TuneError) as info:
        tuner(torch.randn(64, 64), torch.zeros(64, 64))
    assert "the objective is nan" in str(info.value)


def test_a_report_never_picks_a_trial_whose_recorded_objective_is_nan() -> None:
    trials = [Trial(0, CONFIGS[0], OK, objective=math.nan), Trial(1, CONFIGS[1], OK, objective=100.0)]
    assert TuningReport("k", (), trials).best is trials[1]


@pytest.mark.parametrize("option", ["reset_to_zero", "restore_value"])
def test_a_name_option_naming_no_parameter_is_an_error_at_the_decorator(option: str) -> None:
    with pytest.raises(TuneError) as info:
        _doubler(**{option: ["outt"]})
    err = info.value
    assert err.message == f"{option}= names 'outt', which is no parameter of doubler"
    assert err.hint == "name arguments of doubler: x, out"
    assert err.span is not None and err.span.file == __file__
    assert "@pl.autotune(configs=CONFIGS" in err.render()


@pytest.mark.parametrize("option", ["reset_to_zero", "restore_value"])
def test_a_name_option_given_one_string_asks_for_a_list(option: str) -> None:
    with pytest.raises(TuneError, match=rf"{option}=\[names\], got 'out'") as info:
        _doubler(**{option: "out"})
    assert info.value.span is not None and info.value.span.file == __file__


def test_an_unknown_prune_configs_by_key_is_an_error_at_the_decorator() -> None:
    with pytest.raises(TuneError, match="prune_configs_by has 'topk', which it does not know") as info:
        _doubler(prune_configs_by={"topk": 1, "perf_model": lambda **c: 0})
    assert info.value.hint == "its keys are early_config_prune, perf_model, top_k"
    assert info.value.span is not None and info.value.span.file == __file__


def test_the_named_options_work_when_they_name_parameters() -> None:
    tuner = _doubler(reset_to_zero=["out"], restore_value=["x"])
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    tuner(x, out)
    torch.testing.assert_close(out, 2 * x)
