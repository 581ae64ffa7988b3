"""``platform="a2a3"`` compiles against the target pypto.ir declares, with no plugin installed."""

import textwrap

import pytest
import torch
from click.testing import CliRunner

import pypto.language as pl
from pypto.cli import cli
from pypto.ir import MemorySpace, PlatformError
from pypto.ir.targets import get_target
from pypto.runtime import RunConfig, list_platforms
from pypto.runtime import get_target as platform_target

KERNELS = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.jit
    def bare(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):
            out[:] = pl.exp(a)
        return out
    """
)


@pl.jit
def scale(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(a, 2.0)
    return out


def test_a2a3_is_the_built_in_target_when_no_plugin_registers_it(empty_registry):
    assert list_platforms() == []
    assert platform_target("a2a3") is get_target("a2a3")


def test_lowering_for_a2a3_needs_no_plugin(empty_registry):
    scale.cache_clear()
    lowered = scale.lower(config=RunConfig(platform="a2a3"))
    assert sorted(f.kind.value for f in lowered.functions.values()) == ["AIV", "Orchestration"]
    kernel = next(f for f in lowered.functions.values() if f.kind.value == "AIV")
    assert kernel.attrs["memory_plan"].peak[MemorySpace.Vec] <= get_target("a2a3").usable(MemorySpace.Vec)


def test_running_on_the_built_in_target_says_it_only_compiles(empty_registry):
    scale.cache_clear()
    with pytest.raises(PlatformError) as info:
        scale(torch.ones(64, 64), torch.zeros(64, 64), config=RunConfig(platform="a2a3"))
    assert info.value.message.startswith("platform 'a2a3' is a compile-only target here")
    assert info.value.hint == "install a backend plugin"


def test_pypto_compile_for_a2a3_needs_no_plugin(empty_registry, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    (tmp_path / "kernels.py").write_text(KERNELS)
    args = [
        "compile",
        "kernels.py::bare",
        "-p",
        "a2a3",
        "--arg",
        "a=fp32[128,64]",
        "--arg",
        "out=fp32[128,64]",
    ]
    result = CliRunner().invoke(cli, [*args, "--emit", "memory-map"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"of {get_target('a2a3').usable(MemorySpace.Vec)} usable bytes" in result.output
