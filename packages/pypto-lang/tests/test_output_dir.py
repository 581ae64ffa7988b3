"""CompiledProgram.output_dir: the artifacts of a compile, where they go and when they are written;
pypto.ir.compile and the names PyPTO code imports from pypto.ir and pypto.runtime.running.runner."""

import json
import os
from pathlib import Path

import pytest
import torch

import pypto.ir as ir
import pypto.language as pl
from pypto.backend import BackendType
from pypto.ir.printer import print_program
from pypto.runtime import RunConfig
from pypto.runtime.settings import ConfigError, command_line


@pl.jit
def scaled(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(a, 2.0)
    return out


@pytest.fixture
def workdir(tmp_path, monkeypatch, backend):
    """A fresh current directory (for ./build_output), the recording platform as the default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)  # the default: ./build_output
    monkeypatch.setenv("PYPTO_CACHE", "off")
    scaled.cache_clear()
    with command_line(platform="testsim"):
        yield tmp_path


def test_a_compile_writes_nothing_until_the_output_dir_is_read(workdir):
    compiled = scaled.compile()
    assert not (workdir / "build_output").exists()
    directory = compiled.output_dir
    assert directory.parent == Path("build_output") and directory.name.startswith("scaled_")
    assert (directory / "program.py").read_text() == print_program(compiled.lowered)
    memory = (directory / "memory_map.txt").read_text()
    assert "scale (AIV kernel)" in memory and "peak" in memory


def test_a_second_compile_is_the_cached_program_and_its_directory(workdir):
    first = scaled.compile()
    second = scaled.compile()
    assert second is first and second.output_dir == first.output_dir
    assert scaled.cache_info().hits == 1


def test_save_kernels_writes_the_artifacts_when_compiled(workdir):
    compiled = scaled.compile(config=RunConfig(save_kernels_dir="kept", dump_passes=True))
    assert sorted(p.name for p in (workdir / "kept").iterdir()) == [
        "compiled.json",
        "memory_map.txt",
        "passes_dump",
        "program.py",
        "ptoas",
    ]
    assert (workdir / "kept" / "passes_dump" / "01_after_OutlineScopes.py").is_file()
    assert [p.name for p in (workdir / "kept" / "ptoas").iterdir()] == ["scale.pto"]
    assert compiled.output_dir_for(compiled.config) == (workdir / "kept").relative_to(workdir)


def test_pass_dumps_written_elsewhere_are_copied_into_the_output_dir(workdir):
    compiled = scaled.compile(config=RunConfig(dump_passes="dumps", save_kernels=True))
    copied = sorted(p.name for p in (compiled.output_dir / "passes_dump").iterdir())
    assert copied == sorted(p.name for p in (workdir / "dumps").iterdir()) and copied


def test_ir_compile_returns_the_compiled_program_standing_for_its_output_directory(workdir, backend):
    program = scaled.parse()
    out = ir.compile(program, strategy=ir.OptimizationStrategy.Default, dump_passes=True, output_dir="ir_out")
    assert Path(out) == Path("ir_out") == out.output_dir and os.fspath(out) == str(out) == "ir_out"
    assert (out / "program.py").is_file() and any((out / "passes_dump").iterdir())
    walked = {name for _, _, files in os.walk(out) for name in files}
    assert {"program.py", "memory_map.txt", "scale.pto", "01_after_OutlineScopes.py"} <= walked
    a, result = torch.ones(16, 16), torch.zeros(16, 16)
    out(a, result)  # the compiled program runs
    assert [args for _, args, _ in backend.calls] == [[a, result]]


def test_dump_passes_true_writes_into_the_default_output_directory(workdir):
    compiled = scaled.compile(config=RunConfig(dump_passes=True))
    dumps = compiled.output_dir / "passes_dump"
    assert dumps.parent.parent == Path("build_output") and (dumps / "01_after_OutlineScopes.py").is_file()
    assert not (workdir / "pypto_passes").exists()


def test_pypto_prog_build_dir_moves_the_default_output_directories(workdir, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(workdir / "elsewhere"))
    compiled = scaled.compile()
    assert compiled.output_dir.parent == workdir / "elsewhere"
    assert (compiled.output_dir / "program.py").is_file() and not (workdir / "build_output").exists()


def test_each_kernel_has_a_pto_file_with_its_lowered_code_and_memory_plan(workdir):
    compiled = scaled.compile()
    text = (compiled.output_dir / "ptoas" / "scale.pto").read_text()
    header, code = text.split("\n\n", 1)
    assert header.splitlines()[:5] == [
        "# pypto-kernel 1: a lowered kernel of PyPTO (pl source), not PTO assembly",
        "# kernel: scale",
        "# kind: AIV",
        "# program: scaled",
        "# chip: a2a3",
    ]
    plan = compiled.lowered.functions["scale"].attrs["memory_plan"]
    for name, allocation in plan.allocations.items():
        assert f"0x{allocation.offset:05x}  {allocation.size}" in header and name in header
    assert code.startswith("@pl.function(type=pl.FunctionType.AIV)\ndef scale(")
    assert "pl.tile.muls(" in code or "pl.tile.mul(" in code
    # The orchestration runs on the host: it has no .pto.
    assert sorted(p.name for p in (compiled.output_dir / "ptoas").iterdir()) == ["scale.pto"]


def test_the_compiled_program_names_its_call_shape(workdir):
    compiled = scaled.compile()
    assert compiled.platform == "testsim" and compiled.backend_type is BackendType.Ascend910B
    assert compiled.param_names == ["a", "out"]
    assert compiled.output_indices == [1]
    assert compiled.has_return is True
    assert compiled.orchestration_names == ["scaled"]


def test_run_of_a_program_without_arguments_compiles_it_and_returns_what_runs_it(workdir, backend):
    from pypto.runtime import CompiledProgram, run

    compiled = run(scaled.parse(), config=RunConfig(platform="testsim"))
    assert isinstance(compiled, CompiledProgram) and backend.calls == []
    a, result = torch.ones(16, 16), torch.zeros(16, 16)
    assert compiled(a, result, config=RunConfig(platform="testsim", device_id=0)) is result
    assert [args for _, args, _ in backend.calls] == [[a, result]]


def test_ir_compile_takes_a_backend_type(workdir):
    with pytest.raises(ir.PlatformError, match="Ascend950"):
        ir.compile(scaled.parse(), backend_type=BackendType.Ascend950)


def test_the_public_names_of_pypto_ir():
    from pypto.passes import PassManager

    assert ir.PassManager is PassManager
    assert ir.FunctionType is ir.FunctionKind and ir.FunctionType.AIC is ir.FunctionKind.AIC
    assert ir.BackendType is BackendType
    assert [s.name for s in ir.OptimizationStrategy] == ["Default"]


def test_the_runner_module():
    from pypto.runtime import RunConfig as Config
    from pypto.runtime import RunResult
    from pypto.runtime.running.runner import RunConfig as RunnerConfig
    from pypto.runtime.running.runner import RunResult as RunnerResult

    assert RunnerConfig is Config and RunnerResult is RunResult


def test_lowered_functions_read_by_name(workdir):
    lowered = scaled.lower()
    assert list(lowered.functions) == ["scaled", "scale"]
    assert lowered.functions["scale"].func_type is ir.FunctionType.AIV


def test_compile_profiling_times_each_stage_and_pass_into_the_report_directory(workdir):
    from pypto.passes import DEFAULT_PIPELINE

    compiled = scaled.compile(config=RunConfig(compile_profiling=True, save_kernels_dir="prof"))
    data = json.loads((workdir / "prof" / "report" / "pipeline_profile.json").read_text())
    assert [stage["name"] for stage in data["stages"]] == ["parse", "passes", "artifacts"]
    passes = data["stages"][1]
    assert [child["name"] for child in passes["children"]] == list(DEFAULT_PIPELINE)
    assert all(stage["seconds"] >= 0 for stage in data["stages"])
    assert data["total_seconds"] == pytest.approx(sum(stage["seconds"] for stage in data["stages"]))
    text = (workdir / "prof" / "report" / "pipeline_profile.txt").read_text()
    assert text.startswith("PyPTO compile profile (wall-clock seconds)") and "    AllocateMemory" in text
    assert compiled.compile_profile is not None
    again = scaled.compile(config=RunConfig(compile_profiling=True, save_kernels_dir="prof"))
    assert again is not compiled  # a profile is of a compile: the caches are bypassed


def test_pypto_compile_profiling_and_ir_compile_profiling(workdir, monkeypatch):
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "1")
    assert RunConfig().compile_profiling is True
    monkeypatch.delenv("PYPTO_COMPILE_PROFILING")
    assert RunConfig().compile_profiling is False
    out = ir.compile(scaled.parse(), profiling=True, output_dir="ir_prof")
    assert (Path(out) / "report" / "pipeline_profile.json").is_file()
    plain = ir.compile(scaled.parse(), output_dir="ir_plain")
    assert not (Path(plain) / "report").exists()


def test_ir_compile_defers_its_verification_level_to_pypto_verify_level(workdir, monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "none")
    assert ir.compile(scaled.parse(), output_dir="v").config.verification_level is ir.VerificationLevel.NONE
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "sometimes")
    with pytest.raises(ConfigError, match="PYPTO_VERIFY_LEVEL='sometimes' names no verification level"):
        RunConfig()
