"""RunConfig and run(): options reach the passes and the backend, and every input kind runs."""

import re
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.runtime import CompiledProgram, RunConfig, compile_program, run
from pypto.runtime.settings import ConfigError


@pl.jit
def negate(a: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.neg(a)
    return out


def test_run_config_defaults_target_the_simulator():
    config = RunConfig()
    assert (config.platform, config.rtol, config.atol) == ("a2a3sim", 1e-5, 1e-5)
    assert (config.dump_passes, config.enable_profiling, config.profile_dir) == (False, False, None)
    assert config.options == {}


def test_a_chip_swimlane_level_turns_profiling_on_and_true_is_level_4():
    assert RunConfig(enable_chip_swimlane=True).enable_profiling is True
    assert RunConfig(enable_chip_swimlane=True).enable_chip_swimlane == 4
    assert RunConfig(enable_chip_swimlane=2).enable_profiling is True
    assert RunConfig(enable_chip_swimlane=False).enable_chip_swimlane == 0
    # Profiling alone captures no DFX swimlane level (its records go with the profile).
    assert RunConfig(enable_profiling=True).enable_chip_swimlane == 0


def test_dump_passes_true_dumps_into_the_output_directorys_passes_dump(monkeypatch):
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)  # the default: ./build_output
    assert RunConfig().dump_dir("k") is None
    assert RunConfig(dump_passes=True).dump_dir("k", Path("build_output/k_0123")) == Path(
        "build_output/k_0123/passes_dump"
    )
    assert RunConfig(dump_passes=True).dump_dir("k") == Path("build_output/k/passes_dump")
    assert RunConfig(dump_passes="out/dumps").dump_dir("k") == Path("out/dumps")


def test_an_empty_platform_name_is_rejected():
    with pytest.raises(ValueError, match=re.escape("RunConfig.platform must be a platform name")):
        RunConfig(platform="")


@pytest.mark.parametrize(
    ("kwargs", "message", "hint"),
    [
        ({"rtol": "x"}, "RunConfig.rtol takes a number, got str 'x'", "RunConfig(rtol=1e-05)"),
        ({"options": 3}, "RunConfig.options takes a dict of option names to values, got int 3", "options={"),
        (
            {"enable_profiling": "yes"},
            "RunConfig.enable_profiling takes True or False, got str 'yes'",
            "=True)",
        ),
        (
            {"dump_passes": 3},
            "RunConfig.dump_passes takes False, True, a directory or a pypto.ir.PassDumpLevel, got int 3",
            "'dumps/'",
        ),
        ({"profile_dir": 3}, "RunConfig.profile_dir takes a directory, got int 3", "'prof/'"),
        (
            {"verification_level": "roundtrip"},
            "RunConfig.verification_level takes a pypto.ir.VerificationLevel, got str 'roundtrip'",
            "RunConfig(verification_level=VerificationLevel.ROUNDTRIP)",
        ),
        (
            {"pipeline": 3},
            "RunConfig.pipeline takes a pipeline string or a list of pass names, got int 3",
            "RunConfig(pipeline='outline-scopes,tile-matmul{k_block=128}')",
        ),
        (
            {"pipeline": ["OutlineScopes", 3]},
            "RunConfig.pipeline takes a pipeline string or a list of pass names, got list",
            "RunConfig(pipeline='outline-scopes,",
        ),
        (
            {"pipeline": ["NoSuch"]},
            "RunConfig.pipeline names unknown pass(es) 'NoSuch'; passes: OutlineScopes",
            "None",
        ),
    ],
)
def test_a_run_config_option_of_the_wrong_kind_is_an_error_at_the_call(kwargs, message, hint):
    """Not an AttributeError or ValueError from deep in compiling, later."""
    with pytest.raises(ConfigError) as info:
        RunConfig(**kwargs)  # the RunConfig line
    assert info.value.message.startswith(message)
    assert info.value.span.file == __file__ and hint in info.value.hint
    with open(__file__) as source:
        assert "# the RunConfig line" in source.read().splitlines()[info.value.span.line - 1]


def test_options_and_profiling_switches_reach_the_backend(backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the profile goes to ./p
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)  # the default: ./build_output
    config = RunConfig(
        platform="testsim", pipeline=(), options={"trace": "full"}, enable_profiling=True, profile_dir="p"
    )
    negate.cache_clear()
    negate(torch.ones(8, 8), torch.zeros(8, 8), config=config)
    options = backend.calls[0][2]
    assert options["trace"] == "full"
    assert (options["enable_profiling"], options["profile_dir"]) == (True, "p")


def test_run_accepts_a_jit_function_a_program_or_a_compiled_program(backend, config):
    a, out = torch.ones(8, 8), torch.zeros(8, 8)
    assert run(negate, a, out, config=config) is out
    assert run(negate.parse(), a, out, config=config) is out
    compiled = compile_program(negate.parse(), config)
    assert isinstance(compiled, CompiledProgram)
    assert run(compiled, a, out) is out
    assert len(backend.calls) == 3


def test_run_rejects_anything_else():
    with pytest.raises(
        TypeError, match=re.escape("run() takes a @pl.jit function, a Program or a CompiledProgram")
    ):
        run(42)


def test_an_unknown_run_config_option_says_which_was_meant():
    from lang_diagnostics import rendered

    from pypto.runtime.settings import ConfigError

    with pytest.raises(ConfigError) as info:
        RunConfig(platfrom="a2a3sim")  # a typo of platform
    assert info.value.message.startswith("RunConfig has no option 'platfrom'; its options: platform, rtol")
    assert rendered(info.value).underlined == 'RunConfig(platfrom="a2a3sim")'
    assert info.value.hint == "did you mean platform=?"
