"""What a first-time user of the ``pypto`` command meets: the task graph written by a run, a hint
when pypto's options come after the script, a note when compile's script works at import."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from pypto.cli import cli
from pypto.runtime import reset_registry

ROOT = Path(__file__).resolve().parent.parent
MIXED = str(ROOT / "examples" / "advanced" / "03_mixed_kernel.py")

TWO_KERNELS = textwrap.dedent(
    """\
    import argparse

    import torch

    import pypto.language as pl


    @pl.jit
    def first(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out


    @pl.jit
    def second(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(a, a)
        return out


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--n", type=int, default=1)
        parser.parse_args()
        a = torch.randn(64, 64)
        out = torch.zeros(64, 64)
        first(a, out)
        second(a, out)
        torch.testing.assert_close(out, a * a)
        print("OK")
    """
)


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE", "PYPTO_LOAD_PLUGINS", "PYPTO_TASK_GRAPH"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "two.py").write_text(TWO_KERNELS)
    reset_registry()
    yield CliRunner()
    reset_registry()


def _page(path: Path, kernel: str) -> str:
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") or text.lstrip().lower().startswith("<!doctype html")
    assert kernel in text and "<svg" in text
    return text


def test_run_task_graph_dir_writes_a_page_per_kernel(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["run", "--task-graph", "graphs", "two.py"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "OK"
    assert sorted(p.name for p in (tmp_path / "graphs").iterdir()) == ["first.html", "second.html"]
    _page(tmp_path / "graphs" / "first.html", "first")
    assert "task graph of second: graphs/second.html" in result.stderr


def test_run_task_graph_file_takes_the_last_kernel_and_says_so(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["run", "--task-graph", "view.html", "two.py"])
    assert result.exit_code == 0, result.output
    _page(tmp_path / "view.html", "second")
    assert "view.html shows second, the last kernel launched (first too" in result.stderr


def test_profile_writes_the_task_graph_from_the_environment(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_TASK_GRAPH", str(tmp_path / "env_graphs"))
    result = runner.invoke(cli, ["profile", "-o", "prof", MIXED])
    assert result.exit_code == 0, result.output
    _page(tmp_path / "env_graphs" / "mixed_matmul_bias.html", "mixed_matmul_bias")


def test_an_unwritable_task_graph_target_fails_before_the_script(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    result = runner.invoke(cli, ["run", "--task-graph", "afile/graphs", "two.py"])
    assert result.exit_code == 1
    assert "cannot write task graphs to afile/graphs (from --task-graph)" in result.output
    assert "OK" not in result.stdout


@pytest.mark.parametrize(
    ("after", "moved"),
    [
        (["-p", "a2a3sim"], "pypto run -p a2a3sim two.py --n 2"),
        (["--task-graph=g"], "pypto run --task-graph=g two.py --n 2"),
        (["--profile", "prof", "-p", "a2a3sim"], "pypto run --profile prof -p a2a3sim two.py --n 2"),
    ],
)
def test_pypto_options_after_the_script_get_a_hint_when_the_script_rejects_them(
    runner: CliRunner, after: list[str], moved: str
) -> None:
    result = runner.invoke(cli, ["run", "two.py", "--n", "2", *after])
    assert result.exit_code == 2  # the script's own status for a command line it rejects
    assert "unrecognized arguments" in result.stderr
    assert f"pypto's own options go before the script: {moved}" in result.stderr


def test_an_unknown_option_of_the_script_alone_gets_no_hint(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["run", "two.py", "--bogus"])
    assert result.exit_code == 2
    assert "hint" not in result.stderr


def test_an_option_the_script_takes_itself_is_not_hinted_at(runner: CliRunner) -> None:
    """The example takes -p itself: its error is about --bogus alone, so -p is not moved."""
    result = runner.invoke(cli, ["run", MIXED, "-p", "a2a3sim", "--bogus"])
    assert result.exit_code == 2
    assert "unrecognized arguments: --bogus" in result.stderr
    assert "hint" not in result.stderr


def test_profile_hint_names_profiles_own_options(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["profile", "two.py", "-o", "prof"])
    assert result.exit_code == 2
    assert "pypto's own options go before the script: pypto profile -o prof two.py" in result.stderr


WORKS_AT_IMPORT = textwrap.dedent(
    """\
    import torch

    import pypto.language as pl


    @pl.jit
    def twice(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, a)
        return out


    print("loading")
    twice(torch.ones(64, 64), torch.zeros(64, 64))
    """
)


def test_compile_notes_that_the_scripts_top_level_ran(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "busy.py").write_text(WORKS_AT_IMPORT)
    result = runner.invoke(cli, ["compile", "busy.py::twice"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("@pl.program")  # the IR alone: the script's print went to stderr
    note = "pypto: note: busy.py printed and launched 1 kernel(s) while it was loaded: its top level ran"
    assert note in result.stderr
    assert "loading" in result.stderr


def test_compile_of_a_quiet_script_has_no_note(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["compile", "two.py::first"])
    assert result.exit_code == 0, result.output
    assert "note" not in result.stderr


def test_compile_help_says_the_top_level_runs(runner: CliRunner) -> None:
    text = " ".join(runner.invoke(cli, ["compile", "--help"]).stdout.split())
    assert "The script is imported: its top level runs" in text
