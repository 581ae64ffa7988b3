"""CompiledProgram.output_dir: the artifacts of a compile, where they go and when they are written;
pypto.ir.compile and the names PyPTO code imports from pypto.ir and pypto.runtime.runner."""

from pathlib import Path

import pytest

import pypto.ir as ir
import pypto.language as pl
from pypto.backend import BackendType
from pypto.ir.printer import print_program
from pypto.runtime import RunConfig
from pypto.runtime.settings import command_line


@pl.jit
def scaled(a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
        out[:] = pl.mul(a, 2.0)
    return out


@pytest.fixture
def workdir(tmp_path, monkeypatch, backend):
    """A fresh current directory (for ./build_output), the recording platform as the default."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE", "off")
    scaled.cache_clear()
    with command_line(platform="testsim"):
        yield tmp_path


def test_a_compile_writes_nothing_until_the_output_dir_is_read(workdir):
    compiled = scaled.compile()
    assert not (workdir / "build_output").exists()
    directory = compiled.output_dir
    assert directory.parent == Path("build_output") and directory.name.startswith("scaled_")
    assert (directory / "program.py").read_text() == print_program(compiled.program)
    memory = (directory / "memory_map.txt").read_text()
    assert "scale (AIV kernel)" in memory and "peak" in memory


def test_a_second_compile_is_the_cached_program_and_its_directory(workdir):
    first = scaled.compile()
    second = scaled.compile()
    assert second is first and second.output_dir == first.output_dir
    assert scaled.cache_info().hits == 1


def test_save_kernels_writes_the_artifacts_when_compiled(workdir):
    compiled = scaled.compile(config=RunConfig(save_kernels_dir="kept", dump_passes=True))
    assert sorted(p.name for p in (workdir / "kept").iterdir()) == ["memory_map.txt", "passes", "program.py"]
    assert (workdir / "kept" / "passes" / "01_after_OutlineScopes.py").is_file()
    assert compiled.output_dir_for(compiled.config) == (workdir / "kept").relative_to(workdir)


def test_pass_dumps_written_elsewhere_are_copied_into_the_output_dir(workdir):
    compiled = scaled.compile(config=RunConfig(dump_passes="dumps", save_kernels=True))
    copied = sorted(p.name for p in (compiled.output_dir / "passes").iterdir())
    assert copied == sorted(p.name for p in (workdir / "dumps").iterdir()) and copied


def test_ir_compile_returns_the_output_directory(workdir):
    program = scaled.parse()
    out = ir.compile(program, strategy=ir.OptimizationStrategy.Default, dump_passes=True, output_dir="ir_out")
    assert out == (workdir / "ir_out").relative_to(workdir)
    assert (out / "program.py").is_file() and any((out / "passes").iterdir())


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
    from pypto.runtime.runner import RunConfig as RunnerConfig
    from pypto.runtime.runner import RunResult as RunnerResult

    assert RunnerConfig is Config and RunnerResult is RunResult


def test_lowered_functions_read_by_name(workdir):
    lowered = scaled.lower()
    assert list(lowered.functions) == ["scaled", "scale"]
    assert lowered.functions["scale"].func_type is ir.FunctionType.AIV
