"""The ``pypto`` command through Click's CliRunner, on the in-process ``testsim`` backend."""

import json
import textwrap

import click
import pytest
from click.testing import CliRunner
from lang_platforms import RecordingBackend

from pypto.cli import cli
from pypto.runtime import hookimpl, register_plugin, reset_registry

SCRIPT = textwrap.dedent(
    """\
    import sys

    import torch

    import pypto.language as pl
    from pypto.runtime import RunConfig


    @pl.jit
    def add(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
            out[:] = pl.add(a, a)
        return out


    @pl.jit
    def bare(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):
            out[:] = pl.exp(a)
        return out


    if __name__ == "__main__":
        add(torch.ones(64, 64), torch.zeros(64, 64))
        print("platform", RunConfig().platform, "args", sys.argv[1:])
    """
)
COMMANDS = [
    [],
    ["run"],
    ["profile"],
    ["compile"],
    ["platforms"],
    ["passes"],
    ["cache"],
    ["cache", "info"],
    ["cache", "clear"],
]


@pytest.fixture
def runner(tmp_path, monkeypatch, backend):
    """A CliRunner in a temporary project with a script, its own cache and the testsim backend."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "kernels.py").write_text(SCRIPT)
    return CliRunner()


def invoke(runner, *args, **kwargs):
    result = runner.invoke(cli, list(args), catch_exceptions=False, **kwargs)
    return result


def test_version(runner):
    result = invoke(runner, "--version")
    assert result.exit_code == 0 and result.output.startswith("pypto 0.1")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "pypto")
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_every_command_has_help_with_a_summary_and_an_example(runner, command, flag):
    result = invoke(runner, *command, flag)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: pypto")
    assert "Example" in result.output


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        (["run"], "[default: (PYPTO_PLATFORM, [tool.pypto] platform, else a2a3sim)]"),
        (["run"], "[default: (off)]"),
        (["profile"], "[default: ([tool.pypto] profile-dir, else pypto_profile)]"),
        (["compile"], "[default: ir]"),
    ],
)
def test_help_shows_the_defaults(runner, command, shown):
    assert shown in " ".join(invoke(runner, *command, "--help").output.split())


def test_run_applies_the_platform_and_passes_the_script_its_arguments(runner, backend):
    result = invoke(runner, "run", "kernels.py", "-p", "testsim", "--", "--m", "512")
    assert result.exit_code == 0, result.output
    assert "platform testsim args ['--m', '512']" in result.output
    assert len(backend.calls) == 1


class OtherSimPlugin:
    @hookimpl
    def pypto_register_backends(self, register):
        register(RecordingBackend(name="othersim"))


def test_run_takes_the_platform_from_the_config_file_then_the_environment_then_the_command_line(
    runner, tmp_path, monkeypatch
):
    register_plugin(OtherSimPlugin(), name="other")
    (tmp_path / "pyproject.toml").write_text('[tool.pypto]\nplatform = "othersim"\n')
    assert "platform othersim" in invoke(runner, "run", "kernels.py").output
    monkeypatch.setenv("PYPTO_PLATFORM", "testsim")
    assert "platform testsim" in invoke(runner, "run", "kernels.py").output
    assert "platform othersim" in invoke(runner, "run", "kernels.py", "-p", "othersim").output


def test_run_rejects_an_unknown_platform_listing_the_known_ones(runner):
    result = invoke(runner, "run", "kernels.py", "-p", "tpu")
    assert result.exit_code == 1
    assert "unknown platform 'tpu'; registered platforms: a2a3, testsim" in result.output


def test_run_with_profile_writes_and_lists_the_profile(runner, tmp_path):
    result = invoke(runner, "run", "kernels.py", "-p", "testsim", "--profile", "prof")
    assert result.exit_code == 0, result.output
    assert "add on testsim: 100 modeled cycles" in result.output
    for name in ("trace.json", "swimlane.png", "summary.txt"):
        assert (tmp_path / "prof" / "add" / name).is_file()
        assert f"prof/add/{name}" in result.output


def test_profile_writes_each_launch_under_the_output_directory(runner, tmp_path):
    result = invoke(runner, "profile", "kernels.py", "-o", "out", "-p", "testsim")
    assert result.exit_code == 0, result.output
    assert "trace    out/add/trace.json" in result.output
    assert "swimlane out/add/swimlane.png" in result.output
    assert "summary  out/add/summary.txt" in result.output
    assert (tmp_path / "out" / "add" / "trace.json").is_file()


def test_compile_prints_the_lowered_program(runner):
    result = invoke(runner, "compile", "kernels.py::add", "-p", "testsim")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("@pl.program\nclass add:")
    assert "pl.tile.add(" in result.output


def test_compile_emits_the_memory_map_and_a_report(runner):
    args = (
        "compile",
        "kernels.py::bare",
        "-p",
        "a2a3",
        "--arg",
        "a=fp32[128,64]",
        "--arg",
        "out=fp32[128,64]",
    )
    memory = invoke(runner, *args, "--emit", "memory-map").output
    assert "bare_1 (AIV kernel)" in memory and "SPACE  ADDRESS  BYTES  BUFFER" in memory
    assert "Vec: peak" in memory and "of 188416 usable bytes" in memory
    report = invoke(runner, *args, "--emit", "report").output
    assert report.startswith("bare: compiled for a2a3 (target a2a3) in ")
    assert "(disk cache: hit)" in report  # memory-map compiled it first
    assert "pipeline: OutlineScopes, " in report


def test_compile_dumps_the_passes(runner, tmp_path):
    result = invoke(runner, "compile", "kernels.py::add", "-p", "testsim", "--dump-passes", "dumps")
    assert result.exit_code == 0
    assert (tmp_path / "dumps" / "01_after_OutlineScopes.py").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kernels.py"], "is not SCRIPT::KERNEL"),
        (["nosuch.py::add"], "script 'nosuch.py' does not exist"),
        (["kernels.py::nope"], "has no @pl.jit kernel named 'nope' (kernels: add, bare)"),
        (["kernels.py::bare"], "--arg a=fp16[128,256]"),
        (["kernels.py::bare", "--arg", "a=fp99[1,2]"], "unknown dtype 'fp99'"),
        (["kernels.py::bare", "--arg", "a=fp32[64,64]", "--arg", "c=fp32[64,64]"], "has no parameter 'c'"),
        (["kernels.py::bare", "--arg", "oops"], "is not NAME=VALUE"),
    ],
)
def test_compile_argument_errors_say_what_to_write(runner, args, message):
    result = invoke(runner, "compile", *args, "-p", "testsim")
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_platforms_lists_each_with_its_plugin(runner):
    result = invoke(runner, "platforms")
    assert result.output.splitlines()[0].split() == [
        "PLATFORM",
        "KIND",
        "CHIP",
        "PLUGIN",
        "DISTRIBUTION",
        "VERSION",
    ]
    assert result.output.splitlines()[2].split() == [
        "testsim",
        "backend",
        "a2a3",
        "test-plugin",
        "(in-process)",
    ]
    listed = json.loads(invoke(runner, "platforms", "--json").output)
    assert listed[1] == {
        "name": "testsim",
        "kind": "backend",
        "chip": "a2a3",
        "plugin": "test-plugin",
        "distribution": "(in-process)",
        "version": None,
    }


def test_passes_lists_the_default_pipeline_in_order(runner):
    lines = invoke(runner, "passes").output.splitlines()
    assert lines[1].split() == ["1", "OutlineScopes", "pypto.passes.outline:OutlineScopes"]
    assert any(line.split()[1] == "AllocateMemory" for line in lines[1:])


def test_cache_info_and_clear(runner, tmp_path):
    invoke(runner, "compile", "kernels.py::add", "-p", "testsim")
    invoke(runner, "compile", "kernels.py::add", "-p", "testsim")
    info = invoke(runner, "cache", "info").output
    assert f"directory: {tmp_path / 'cache'}" in info
    assert "entries:   1 (" in info and "1 hit(s)" in info
    assert info.splitlines()[-1].split()[:2] == ["add", "testsim"]
    assert invoke(runner, "cache", "clear").output == f"removed 1 entries from {tmp_path / 'cache'}\n"
    assert "entries:   0 (0 B), 0 hit(s)" in invoke(runner, "cache", "info").output


def test_cache_info_says_when_the_cache_is_off(runner):
    assert "enabled:   no" in invoke(runner, "cache", "info", env={"PYPTO_CACHE": "off"}).output


class CommandPlugin:
    @hookimpl
    def pypto_register_commands(self, cli):
        @cli.command()
        def hello():
            """Say hello (a plugin command)."""
            click.echo("hello from a plugin")


def test_plugins_add_commands(runner):
    register_plugin(CommandPlugin(), name="commands")
    assert "hello" in invoke(runner, "--help").output
    assert invoke(runner, "hello").output == "hello from a plugin\n"
    reset_registry(load_entry_points=False)
    assert invoke(runner, "hello").exit_code == 2  # gone with the plugin


def test_pypto_load_plugins_restricts_what_platforms_shows(runner, plugin_dists, monkeypatch):
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin")
    reset_registry()
    assert [e["name"] for e in json.loads(invoke(runner, "platforms", "--json").output)] == ["alphasim"]
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin,beta-plugin")
    reset_registry()
    table = invoke(runner, "platforms").output
    assert "alphasim  backend  a2a3  alpha-plugin  alpha-plugin  0.1" in table
    assert "betasim   backend  a2a3  beta-plugin   beta-plugin   0.1" in table


def test_two_backends_of_one_name_fail_naming_both_distributions(runner, plugin_dists, monkeypatch):
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin,twin-plugin")
    reset_registry()
    result = invoke(runner, "platforms")
    assert result.exit_code == 1
    assert (
        "distribution alpha-plugin 0.1" in result.output and "distribution twin-plugin 0.1" in result.output
    )


@pytest.fixture
def plugin_dists(tmp_path, monkeypatch):
    """Three entry-point distributions on sys.path: alphasim, betasim, and a second alphasim."""
    root = tmp_path / "site"
    root.mkdir()
    for dist, backend in (
        ("alpha-plugin", "alphasim"),
        ("beta-plugin", "betasim"),
        ("twin-plugin", "alphasim"),
    ):
        module = dist.replace("-", "_") + "_mod"
        info = root / f"{dist}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[pypto]\n{dist} = {module}\n")
        (root / f"{module}.py").write_text(
            "import pluggy\nfrom lang_platforms import RecordingBackend\n"
            'hookimpl = pluggy.HookimplMarker("pypto")\n\n'
            f"@hookimpl\ndef pypto_register_backends(register):\n    register(RecordingBackend(name={backend!r}))\n"
        )
    monkeypatch.syspath_prepend(str(root))
    yield root
    reset_registry()


def test_run_reports_an_error_in_the_users_kernel_at_its_line(runner, tmp_path):
    (tmp_path / "bad.py").write_text(
        "import torch\nimport pypto.language as pl\n\n\n@pl.jit\ndef k(a: pl.Tensor[[64, 64], pl.FP32]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n        b = pl.nosuch(a)\n    return a\n\n\n"
        "k(torch.ones(64, 64))\n"
    )
    result = runner.invoke(cli, ["run", "bad.py", "-p", "testsim"])
    assert result.exit_code == 1
    assert "bad.py:8:13: error: " in result.output and "^" in result.output
