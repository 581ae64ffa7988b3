"""The log threshold governs what compiling and running say; each PYPTO_* setting of the manual is
honoured or checked; an argument or RunConfig field beats its environment default."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import pypto
import pypto.language as pl
from pypto.cli import cli
from pypto.ir import ConfigError, DiagnosticPhase, InternalError, log
from pypto.ir.errors import CompileWarning
from pypto.ir.targets import get_target
from pypto.passes import PassContext, PassManager
from pypto.runtime import RunConfig, reset_registry
from pypto.runtime.compiling.compile_profile import profiling_by_default
from pypto.runtime.config import output_root

MANUAL_VARIABLES = [
    "PYPTO_VERIFY_LEVEL",
    "PYPTO_WARNING_LEVEL",
    "PYPTO_PROG_BUILD_DIR",
    "PYPTO_EMIT_PTO_LOC",
    "PYPTO_COMPILE_PROFILING",
    "PYPTO_EMIT_DEBUG_RUNNER",
]


@pytest.fixture(autouse=True)
def _quiet_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for name in [*MANUAL_VARIABLES, "PYPTO_LOG_LEVEL", "PYPTO_VERIFICATION_LEVEL", "PYPTO_TASK_GRAPH"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    log.reset_log_level()
    yield
    log.reset_log_level()


def _kernel():
    @pl.jit
    def twice(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out

    return twice


def _run_once(config: RunConfig | None = None) -> torch.Tensor:
    a = torch.randn(64, 64)
    out = torch.zeros(64, 64)
    _kernel()(a, out, config=config or RunConfig())
    torch.testing.assert_close(out, a + a)
    return out


def test_the_manuals_log_level_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    """The manual's "Log levels" lines: set DEBUG, read it back."""
    pypto.set_log_level(pypto.LogLevel.DEBUG)
    print(pypto.get_log_level())
    assert capsys.readouterr().out.strip() == "LogLevel.DEBUG"


@pytest.mark.disk_cache
def test_debug_shows_each_pass_and_the_cache_event_shows_the_compile_and_launch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pypto.set_log_level("debug")
    _run_once(RunConfig(verification_level=pypto.ir.VerificationLevel.BASIC))
    err = capsys.readouterr().err
    assert "pypto: debug: compile cache miss: twice" in err
    assert "pypto: debug: pass 1/" in err and " OutlineScopes: " in err
    assert "pypto: event: compiled twice for a2a3sim in " in err
    assert "pypto: event: ran twice on a2a3sim: " in err


@pytest.mark.disk_cache
def test_a_second_compile_logs_the_cache_hit(capsys: pytest.CaptureFixture[str]) -> None:
    config = RunConfig(verification_level=pypto.ir.VerificationLevel.BASIC)
    _run_once(config)
    capsys.readouterr()
    pypto.set_log_level(pypto.LogLevel.DEBUG)
    _run_once(config)  # a new @pl.jit function: its in-memory cache is empty, the disk one is not
    err = capsys.readouterr().err
    assert "compile cache hit: twice" in err and "from the compile cache" in err


@pytest.mark.parametrize(("threshold", "lines"), [("EVENT", {"event"}), ("INFO", set()), ("NONE", set())])
def test_quieter_thresholds_filter_the_compile_messages(
    threshold: str, lines: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    pypto.set_log_level(threshold)
    _run_once()
    err = capsys.readouterr().err
    shown = {line.split(":")[1].strip() for line in err.splitlines() if line.startswith("pypto: ")}
    assert shown == lines


def test_pypto_log_level_in_the_environment_is_the_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PYPTO_LOG_LEVEL", "event")
    _run_once()
    assert "pypto: event: compiled twice" in capsys.readouterr().err
    monkeypatch.setenv("PYPTO_LOG_LEVEL", "chatty")
    with pytest.raises(ConfigError, match="PYPTO_LOG_LEVEL='chatty' names no log level"):
        _run_once()


class _Crashing:
    name = "Crashing"
    pipeline_name = "crashing"

    def run(self, program, ctx):
        raise KeyError("no such buffer")


def test_a_pass_that_breaks_is_an_internal_error_naming_the_compiler_location() -> None:
    program = _kernel().lower(torch.zeros(64, 64), torch.zeros(64, 64))
    with pytest.raises(InternalError) as caught:
        PassManager([_Crashing()], verify=False).run(program, PassContext(get_target("a2a3")))
    text = str(caught.value)
    assert "Internal error: KeyError: 'no such buffer'" in text
    assert "test_log_levels_and_settings.py:" in text  # where the check failed, in the "compiler"
    assert isinstance(caught.value, pypto.Error)


# ---------------------------------------------------------------- the manual's variables


def test_pypto_warning_level_none_silences_compile_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    source = textwrap.dedent(
        """
        import pypto.language as pl

        @pl.jit
        def rebinds(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.add(a, a)
            return out
        """
    )
    path = Path("rebinds.py")
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path.resolve()), "exec"), namespace)
    kernel = namespace["rebinds"]
    args = (torch.ones(64, 64), torch.zeros(64, 64))
    with pytest.warns(CompileWarning):
        kernel.compile(*args, config=RunConfig())
    monkeypatch.setenv("PYPTO_WARNING_LEVEL", "none")
    assert RunConfig().diagnostic_phase is DiagnosticPhase.NONE
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel.compile(*args, config=RunConfig(platform="a2a3"))
    assert not [w for w in caught if issubclass(w.category, CompileWarning)]
    # The field beats the environment.
    assert RunConfig(diagnostic_phase=DiagnosticPhase.PostPass).diagnostic_phase is DiagnosticPhase.PostPass
    assert RunConfig(diagnostic_phase="post_pipeline").diagnostic_phase is DiagnosticPhase.PostPipeline


def test_a_bad_pypto_warning_level_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_WARNING_LEVEL", "loud")
    with pytest.raises(ConfigError, match="PYPTO_WARNING_LEVEL='loud' names no diagnostic phase") as caught:
        RunConfig()
    assert "post_pipeline" in (caught.value.hint or "")


def test_pypto_emit_pto_loc_puts_the_source_line_into_the_pto_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _run_once(RunConfig(save_kernels_dir=tmp_path / "with"))
    pto = next((tmp_path / "with" / "ptoas").glob("*.pto")).read_text()
    assert f"# loc: {__file__}:" in pto  # the kernel's lines, in this file
    monkeypatch.setenv("PYPTO_EMIT_PTO_LOC", "0")
    _run_once(RunConfig(save_kernels_dir=tmp_path / "without"))
    assert "# loc:" not in next((tmp_path / "without" / "ptoas").glob("*.pto")).read_text()
    _run_once(RunConfig(save_kernels_dir=tmp_path / "field", emit_source_loc=True))  # beats the env
    assert "# loc:" in next((tmp_path / "field" / "ptoas").glob("*.pto")).read_text()
    monkeypatch.setenv("PYPTO_EMIT_PTO_LOC", "maybe")
    with pytest.raises(ConfigError, match="PYPTO_EMIT_PTO_LOC='maybe' is neither on nor off"):
        RunConfig()


def test_pypto_compile_profiling_is_checked_and_the_field_beats_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "yes")
    assert profiling_by_default() and RunConfig().compile_profiling
    assert not RunConfig(compile_profiling=False).compile_profiling
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "sometimes")
    with pytest.raises(ConfigError, match="PYPTO_COMPILE_PROFILING='sometimes' is neither on nor off"):
        RunConfig()


def test_pypto_prog_build_dir_moves_the_output_and_must_be_a_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "out"))
    assert output_root() == tmp_path / "out"
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "afile"))
    with pytest.raises(ConfigError, match=r"PYPTO_PROG_BUILD_DIR=.* is a file, not a directory"):
        output_root()


def test_pypto_emit_debug_runner_is_checked_and_writes_nothing_on_the_simulator(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PYPTO_EMIT_DEBUG_RUNNER", "1")
    _run_once(RunConfig(save_kernels_dir=tmp_path / "k"))
    written = {p.name for p in (tmp_path / "k").rglob("*")}
    assert not [name for name in written if "runner" in name]
    assert "program.py" in written  # what replays a compile here
    monkeypatch.setenv("PYPTO_EMIT_DEBUG_RUNNER", "perhaps")
    result = CliRunner().invoke(cli, ["settings"])
    assert result.exit_code == 1
    assert "PYPTO_EMIT_DEBUG_RUNNER='perhaps' is neither on nor off" in result.stderr


def test_pypto_max_while_iterations_must_be_a_positive_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from pypto.ir.walker import max_while_iterations

    monkeypatch.setenv("PYPTO_MAX_WHILE_ITERATIONS", "-5")
    with pytest.raises(ConfigError, match="PYPTO_MAX_WHILE_ITERATIONS='-5' is not a number of iterations"):
        max_while_iterations()


# ---------------------------------------------------------------- pypto settings


@pytest.fixture
def runner():
    reset_registry()
    yield CliRunner()
    reset_registry()


def test_pypto_settings_lists_each_variable_with_its_value_and_origin(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_WARNING_LEVEL", "post_pass")
    Path("pyproject.toml").write_text('[tool.pypto]\nplatform = "a2a3"\n')
    result = runner.invoke(cli, ["settings", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name in [*MANUAL_VARIABLES, "PYPTO_LOG_LEVEL", "PYPTO_PLATFORM", "PYPTO_CACHE", "PYPTO_TASK_GRAPH"]:
        assert rows[name]["meaning"]
    assert (rows["PYPTO_WARNING_LEVEL"]["value"], rows["PYPTO_WARNING_LEVEL"]["from"]) == ("post_pass", "env")
    assert (rows["PYPTO_PLATFORM"]["value"], rows["PYPTO_PLATFORM"]["from"]) == ("a2a3", "[tool.pypto]")
    assert (rows["PYPTO_LOG_LEVEL"]["value"], rows["PYPTO_LOG_LEVEL"]["from"]) == ("info", "default")
    table = runner.invoke(cli, ["settings"]).stdout.splitlines()
    assert table[0].split() == ["SETTING", "VALUE", "FROM", "MEANING"]
    assert any(line.startswith("PYPTO_WARNING_LEVEL") and " post_pass " in line for line in table)


def test_pypto_help_names_every_setting_in_its_epilog(runner: CliRunner) -> None:
    text = " ".join(runner.invoke(cli, ["--help"]).stdout.split())
    for name in [*MANUAL_VARIABLES, "PYPTO_LOG_LEVEL", "PYPTO_TASK_GRAPH", "PYPTO_PLATFORM"]:
        assert name in text
    assert "pypto settings" in text


def test_ir_compile_options_left_none_take_the_environment_and_given_ones_beat_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    program = _kernel().parse(torch.zeros(64, 64), torch.zeros(64, 64))
    monkeypatch.setenv("PYPTO_COMPILE_PROFILING", "1")
    monkeypatch.setenv("PYPTO_EMIT_PTO_LOC", "off")
    compiled = pypto.ir.compile(program, output_dir=tmp_path / "env")
    assert (tmp_path / "env" / "report" / "pipeline_profile.txt").is_file()
    assert "# loc:" not in next((tmp_path / "env" / "ptoas").glob("*.pto")).read_text()
    assert compiled.config.diagnostic_phase is DiagnosticPhase.PrePipeline
    compiled = pypto.ir.compile(
        program,
        output_dir=tmp_path / "given",
        profiling=False,
        emit_source_loc=True,
        diagnostic_phase=DiagnosticPhase.NONE,
    )
    assert not (tmp_path / "given" / "report" / "pipeline_profile.txt").exists()
    assert "# loc:" in next((tmp_path / "given" / "ptoas").glob("*.pto")).read_text()
    assert compiled.config.diagnostic_phase is DiagnosticPhase.NONE
