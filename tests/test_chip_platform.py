"""Programs that name the chip, ``RunConfig(platform="a2a3", device_id=...)``, as PyPTO's own do: with
no device backend installed they run on the chip's simulator, and ``codegen_only`` writes each
kernel's ``.pto`` and runs nothing."""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind
from pypto.runtime import RunConfig, SimulatedPlatformWarning, registry, reset_registry

ROWS, COLS = 128, 64


@pl.jit
def gelu_ish(
    x: pl.Tensor[[ROWS, COLS], pl.FP32],
    w: pl.Tensor[[COLS, COLS], pl.FP32],
    out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm_exp"):
        out[:] = pl.exp(pl.matmul(x, w))
    return out


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """A registry of its own (the warning is once per registry), no disk cache, a fresh directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    reset_registry()
    gelu_ish.cache_clear()
    yield
    reset_registry()


def _args():
    torch.manual_seed(0)
    return torch.randn(ROWS, COLS) / 8, torch.randn(COLS, COLS) / 8, torch.zeros(ROWS, COLS)


def test_a_run_on_a2a3_runs_on_the_simulator_with_one_warning():
    x, w, out = _args()
    config = RunConfig(platform="a2a3", device_id=11)
    with pytest.warns(SimulatedPlatformWarning, match="running on 'a2a3sim', its simulator") as caught:
        gelu_ish(x, w, out, config=config)
    assert len(caught) == 1 and caught[0].filename == __file__
    torch.testing.assert_close(out, torch.exp(x @ w), rtol=1e-4, atol=1e-4)
    report = gelu_ish.last_report
    assert report.platform == "a2a3sim" and report.device_id == 11 and report.total_cycles > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not again
        gelu_ish(x, w, torch.zeros(ROWS, COLS), config=config)


def test_codegen_only_on_a2a3_writes_a_pto_per_kernel_and_runs_nothing(tmp_path):
    x, w, out = _args()
    config = RunConfig(platform="a2a3", codegen_only=True, save_kernels=True, save_kernels_dir=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulatedPlatformWarning)
        assert gelu_ish(x, w, out, config=config) is None
    assert torch.count_nonzero(out) == 0
    lowered = gelu_ish.lower(config=config)
    kernels = sorted(
        f.name for f in lowered.functions.values() if f.kind in (FunctionKind.AIC, FunctionKind.AIV)
    )
    assert len(kernels) == 2  # the mixed scope split into cube and vector halves
    ptos = sorted(tmp_path.rglob("*.pto"))
    assert [p.stem for p in ptos] == kernels and all(p.parent.name == "ptoas" for p in ptos)
    aic = next(p for p in ptos if lowered.functions[p.stem].kind is FunctionKind.AIC).read_text()
    assert "# kind: AIC" in aic and "pl.tile.matmul(" in aic and "Acc" in aic


def test_lower_and_compile_for_a2a3_need_no_arguments_when_the_kernel_is_annotated():
    program = gelu_ish.lower(config=RunConfig(platform="a2a3"))
    assert program.entry == "gelu_ish"
    assert {f.kind for f in program.functions.values()} == {
        FunctionKind.Orchestration,
        FunctionKind.AIC,
        FunctionKind.AIV,
        FunctionKind.Group,
    }
    compiled = gelu_ish.compile(config=RunConfig(platform="a2a3"))
    assert compiled.platform == "a2a3" and (compiled.output_dir / "ptoas").is_dir()


def test_without_a_simulator_of_the_chip_a_run_on_it_is_still_an_error(monkeypatch):
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "")  # no plugin: the chip's target alone
    reset_registry()
    assert registry().platforms() == []
    x, w, out = _args()
    with pytest.raises(Exception, match="platform 'a2a3' is a compile-only target here") as info:
        gelu_ish(x, w, out, config=RunConfig(platform="a2a3"))
    assert info.value.hint == "install a backend plugin"
