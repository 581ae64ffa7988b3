"""The ``pypto`` command through Click's CliRunner, on the in-process ``testsim`` backend."""

import json
import subprocess
import sys
import textwrap

import click
import pytest
from click.testing import CliRunner
from lang_platforms import RecordingBackend

import pypto.language as pl
from pypto.cli import cli
from pypto.cli.arguments import parse_value
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
    ["deps"],
    ["deps", "view"],
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
        (
            ["profile"],
            "[default: (PYPTO_PROFILE if a directory, [tool.pypto] profile-dir, else pypto_profile)]",
        ),
        (["compile"], "[default: ir]"),
    ],
)
def test_help_shows_the_defaults(runner, command, shown):
    assert shown in " ".join(invoke(runner, *command, "--help").output.split())


def test_run_applies_the_platform_and_passes_the_script_its_arguments(runner, backend):
    result = invoke(runner, "run", "-p", "testsim", "kernels.py", "--m", "512")
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
    assert "platform othersim" in invoke(runner, "run", "-p", "othersim", "kernels.py").output


def test_run_rejects_an_unknown_platform_listing_the_known_ones(runner):
    result = invoke(runner, "run", "-p", "tpu", "kernels.py")
    assert result.exit_code == 1
    assert "unknown platform 'tpu' (from -p/--platform); registered platforms: a2a3, testsim" in result.output


def test_run_with_profile_writes_and_lists_the_profile(runner, tmp_path):
    result = invoke(runner, "run", "-p", "testsim", "--profile", "prof", "kernels.py")
    assert result.exit_code == 0, result.output
    assert "add on testsim: 100 modeled cycles" in result.output
    for name in ("trace.json", "swimlane.png", "chip_swimlane_records.json", "summary.txt"):
        assert (tmp_path / "prof" / "add" / name).is_file()
        assert f"prof/add/{name}" in result.output


def test_profile_writes_each_launch_under_the_output_directory(runner, tmp_path):
    result = invoke(runner, "profile", "-o", "out", "-p", "testsim", "kernels.py")
    assert result.exit_code == 0, result.output
    assert "trace    out/add/trace.json" in result.output
    assert "swimlane out/add/swimlane.png" in result.output
    assert "records  out/add/chip_swimlane_records.json" in result.output
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
    ("directory", "why"),
    [
        ("afile/dumps", "afile is a file, not a directory"),
        ("/proc/pypto-dumps", "cannot create a directory in /proc"),
    ],
)
def test_compile_rejects_a_dump_directory_that_cannot_be_made_naming_the_option(
    runner, tmp_path, directory, why
):
    (tmp_path / "afile").write_text("")
    result = invoke(runner, "compile", "kernels.py::add", "-p", "testsim", "--dump-passes", directory)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"Error: cannot write pass dumps to {directory} (from --dump-passes): {why}" in result.output
    assert "hint: point --dump-passes at a directory that can be created and written" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["kernels.py"], "is not SCRIPT::KERNEL"),
        (["nosuch.py::add"], "script 'nosuch.py' does not exist"),
        (["kernels.py::nope"], "has no @pl.jit kernel named 'nope' (kernels: add, bare)"),
        (["kernels.py::bare"], "--arg a=fp16[128,256]"),
        (["kernels.py::bare", "--arg", "a=fp99[1,2]"], "unknown dtype 'fp99'"),
        (["kernels.py::bare", "--arg", "a=index[64,64]"], "unknown dtype 'index'; dtypes: fp16, bf16, fp32"),
        (["kernels.py::bare", "--arg", "a=fp32[64,64]", "--arg", "c=fp32[64,64]"], "has no parameter 'c'"),
        (["kernels.py::bare", "--arg", "oops"], "is not NAME=VALUE"),
        (
            ["kernels.py::bare", "--arg", "a=3", "--arg", "out=fp32[64,64]"],
            "--arg a: parameter 'a' of bare is a tensor (pl.Tensor), but the value is the number 3",
        ),
        (["kernels.py::bare", "--arg", "a=3", "--arg", "out=fp32[64,64]"], "--arg a=fp16[128,256]"),
    ],
)
def test_compile_argument_errors_say_what_to_write(runner, args, message):
    result = invoke(runner, "compile", *args, "-p", "testsim")
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


SCALED = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.jit
    def scaled(a: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled"):
            out[:] = pl.mul(a, 2.0)
        return out
    """
)


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["--arg", "n=fp32[4]"],
            "--arg n: parameter 'n' of scaled is a scalar (pl.Scalar[pl.INT32]), but the value is a tensor "
            "(pl.Tensor[[4], pl.FP32])",
            "give its value: --arg n=4",
        ),
        (
            ["--arg", "a=fp32[64,64]"],
            "parameter 'n' of scaled is annotated pl.Scalar[pl.INT32], which fixes no value to compile for",
            "give it one: --arg n=4",
        ),
    ],
)
def test_compile_names_a_scalar_parameter_by_its_annotation(runner, tmp_path, args, message, hint):
    """Not a Python repr (ScalarSpec(dtype=...)) nor a class name (TensorSpec)."""
    (tmp_path / "scaled.py").write_text(SCALED)
    result = invoke(runner, "compile", "scaled.py::scaled", *args, "-p", "testsim")
    assert result.exit_code == 2
    output = " ".join(result.output.split())
    assert message in output and f"hint: {hint}" in output


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
    result = runner.invoke(cli, ["run", "-p", "testsim", "bad.py"])
    assert result.exit_code == 1
    assert "bad.py:8:13: error: " in result.output and "^" in result.output


def test_cache_info_warns_about_an_entry_without_a_readable_index_instead_of_showing_question_marks(
    runner, tmp_path
):
    invoke(runner, "compile", "-p", "testsim", "kernels.py::add")
    (meta,) = (tmp_path / "cache" / "compiled").glob("*.json")
    meta.write_text("{corrupt")
    result = invoke(runner, "cache", "info")
    assert result.exit_code == 0
    assert (
        f"pypto: CacheWarning: compile cache entry {meta.with_suffix('.pickle')} is not listed"
        in result.stderr
    )
    assert "is not valid JSON" in result.stderr
    assert "?" not in result.stdout and "entries:   0 (0 B), 0 hit(s)" in result.stdout


# ---------------------------------------------------------------- the script's command line


@pytest.mark.parametrize("command", [["run"], ["profile", "-o", "prof"]], ids=["run", "profile"])
@pytest.mark.parametrize(
    ("after_script", "argv"),
    [
        (["--m", "512"], ["--m", "512"]),
        (["--m", "512", "-p", "x", "--help"], ["--m", "512", "-p", "x", "--help"]),
        (["--", "--m", "512"], ["--m", "512"]),
        (["--m", "512", "--", "rest"], ["--m", "512", "--", "rest"]),
        (["--", "--", "x"], ["--", "x"]),
        ([], []),
    ],
    ids=["options", "pypto-like options", "leading --", "later --", "two --", "none"],
)
def test_everything_after_the_script_is_the_scripts_command_line(runner, command, after_script, argv):
    result = invoke(runner, *command, "-p", "testsim", "kernels.py", *after_script)
    assert result.exit_code == 0, result.output
    assert f"platform testsim args {argv!r}" in result.output


def test_a_double_dash_before_the_script_ends_pyptos_options(runner):
    result = invoke(runner, "run", "-p", "testsim", "--", "kernels.py", "--m", "1")
    assert result.exit_code == 0, result.output
    assert "platform testsim args ['--m', '1']" in result.output


def test_pyptos_options_go_before_the_script(runner):
    result = invoke(runner, "run", "--m", "512", "kernels.py")
    assert result.exit_code == 2 and "No such option '--m'" in result.output


@pytest.mark.parametrize("command", [["run"], ["profile"]], ids=["run", "profile"])
def test_help_says_the_arguments_after_script_are_the_scripts(runner, command):
    text = " ".join(invoke(runner, *command, "--help").output.split())
    assert "[OPTIONS] (SCRIPT | -m MODULE) [ARGS]..." in text
    assert "everything after SCRIPT" in text


MODULE = textwrap.dedent(
    """\
    import sys

    import torch

    from pypto.runtime import RunConfig
    from tool_kernels import add  # a module beside it: the current directory is on the path

    add(torch.ones(64, 64), torch.zeros(64, 64))
    print("module", __name__, "platform", RunConfig().platform, "args", sys.argv[1:])
    """
)


@pytest.mark.parametrize("command", [["run"], ["profile", "-o", "prof"]], ids=["run", "profile"])
def test_dash_m_runs_a_module_as_python_does_with_every_word_after_it_its_own(
    runner, tmp_path, command, backend
):
    (tmp_path / "tool.py").write_text(MODULE)
    (tmp_path / "tool_kernels.py").write_text(SCRIPT)
    result = invoke(runner, *command, "-p", "testsim", "-m", "tool", "--config", "tiny", "-p", "x", "--", "y")
    assert result.exit_code == 0, result.output
    assert "module __main__ platform testsim args ['--config', 'tiny', '-p', 'x', '--', 'y']" in result.output
    assert len(backend.calls) == 1


def test_dash_m_runs_a_packages_main_module(runner, tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "__main__.py").write_text(MODULE)
    (tmp_path / "tool_kernels.py").write_text(SCRIPT)
    result = invoke(runner, "run", "-p", "testsim", "--module=tools", "--m", "1")
    assert result.exit_code == 0, result.output
    assert "args ['--m', '1']" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "no_such_module"], "-m no_such_module: no module named 'no_such_module'"),
        ([], "Missing argument 'SCRIPT': give a script to run, or -m MODULE"),
    ],
)
def test_dash_m_of_nothing_runnable_is_a_usage_error(runner, args, message):
    result = invoke(runner, "run", *args)
    assert result.exit_code == 2 and message in result.output


def test_an_error_in_a_module_shows_the_modules_traceback_only(runner, tmp_path):
    (tmp_path / "failing.py").write_text(FAILING)
    result = invoke(runner, "run", "-m", "failing")
    assert result.exit_code == 1 and result.stdout == "before\n"
    frames = [line for line in result.stderr.splitlines() if line.startswith('  File "')]
    assert frames and all(line.startswith(f'  File "{tmp_path / "failing.py"}"') for line in frames)


# ---------------------------------------------------------------- a failing script


FAILING = textwrap.dedent(
    """\
    def divide(x):
        return x / 0


    print("before")
    divide(1)
    """
)


def test_a_python_error_in_the_script_shows_the_scripts_traceback_only(runner, tmp_path):
    (tmp_path / "failing.py").write_text(FAILING)
    result = invoke(runner, "run", "failing.py")
    assert result.exit_code == 1
    assert result.stdout == "before\n"
    path = tmp_path / "failing.py"
    assert result.stderr == (
        "Traceback (most recent call last):\n"
        f'  File "{path}", line 6, in <module>\n'
        "    divide(1)\n"
        f'  File "{path}", line 2, in divide\n'
        "    return x / 0\n"
        "           ~~^~~\n"
        "ZeroDivisionError: division by zero\n"
    )


def test_a_syntax_error_in_the_script_is_shown_as_python_shows_it(runner, tmp_path):
    (tmp_path / "broken.py").write_text("x = (\n")
    result = invoke(runner, "run", "broken.py")
    assert result.exit_code == 1
    assert result.stderr.startswith(f'  File "{tmp_path / "broken.py"}", line 1\n')
    assert result.stderr.endswith("SyntaxError: '(' was never closed\n")
    assert "Traceback" not in result.stderr


def test_a_script_that_fails_while_loaded_for_compile_shows_its_traceback(runner, tmp_path):
    (tmp_path / "failing.py").write_text(FAILING)
    result = invoke(runner, "compile", "failing.py::divide")
    assert result.exit_code == 1
    # What the script printed while loaded goes to stderr, apart from what compile prints.
    assert result.stdout == ""
    assert result.stderr.startswith("before\nTraceback (most recent call last):\n")
    frames = [line for line in result.stderr.splitlines() if line.startswith('  File "')]
    assert frames and all(line.startswith(f'  File "{tmp_path / "failing.py"}"') for line in frames)
    assert result.stderr.endswith("ZeroDivisionError: division by zero\n")


def test_the_scripts_own_exit_status_is_kept(runner, tmp_path):
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    assert invoke(runner, "run", "exits.py").exit_code == 3


# ---------------------------------------------------------------- profile directories, up front


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["profile", "-o", "afile/prof"],
            "cannot write profiles to afile/prof (from -o/--output): afile is a file, not a directory",
        ),
        (
            ["run", "--profile", "afile"],
            "cannot write profiles to afile (from --profile): it is a file, not a directory",
        ),
        (
            ["run", "--profile", "/proc/pypto-prof"],
            "cannot write profiles to /proc/pypto-prof (from --profile): cannot create a directory in /proc",
        ),
    ],
    ids=["under a file", "a file", "in /proc"],
)
def test_a_profile_directory_that_cannot_be_made_fails_before_the_script_runs(
    runner, tmp_path, backend, args, message
):
    (tmp_path / "afile").write_text("")
    result = invoke(runner, *args, "-p", "testsim", "kernels.py")
    assert result.exit_code == 1
    assert message in result.output
    assert "hint: point " in result.output
    assert "platform testsim" not in result.output and backend.calls == []


def test_a_profile_dir_in_the_config_file_that_names_a_file_fails_before_the_script_runs(
    runner, tmp_path, backend
):
    (tmp_path / "afile").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.pypto]\nprofile-dir = "afile"\n')
    result = invoke(runner, "profile", "-p", "testsim", "kernels.py")
    assert result.exit_code == 1
    assert (
        f"{tmp_path / 'pyproject.toml'}:2:15: error: cannot write profiles to {tmp_path / 'afile'}"
        in result.output
    )
    assert f"(from [tool.pypto] profile-dir in {tmp_path / 'pyproject.toml'})" in result.output
    assert '    2 | profile-dir = "afile"' in result.output
    assert backend.calls == []


# ---------------------------------------------------------------- --arg, strictly


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("a=fp32[64,,64]", "--arg a=fp32[64,,64]: dimension 2 of [64,,64] is empty"),
        ("a=fp32[64,64,]", "--arg a=fp32[64,64,]: dimension 3 of [64,64,] is empty"),
        ("a=fp32[,64]", "--arg a=fp32[,64]: dimension 1 of [,64] is empty"),
        ("a=fp32[]", "--arg a=fp32[]: a tensor needs at least one dimension"),
        ("a=fp32[ ]", "--arg a=fp32[ ]: a tensor needs at least one dimension"),
        ("a=fp32[64 64]", "--arg a=fp32[64 64]: dimension 1 of [64 64] is '64 64', not a positive integer"),
        ("a=fp32[64,x]", "--arg a=fp32[64,x]: dimension 2 of [64,x] is 'x', not a positive integer"),
        ("a=fp32[-1,64]", "--arg a=fp32[-1,64]: dimension 1 of [-1,64] is '-1', not a positive integer"),
        ("a=fp32[1.5]", "--arg a=fp32[1.5]: dimension 1 of [1.5] is '1.5', not a positive integer"),
        ("a=fp32[0,64]", "--arg a=fp32[0,64]: dimension 1 of [0,64] is 0; a dimension is a positive integer"),
        ("a=fp32[64,64", "--arg a=fp32[64,64: 'fp32[64,64' is not a tensor"),
        ("a=fp32 64,64]", "--arg a=fp32 64,64]: 'fp32 64,64]' is not a tensor"),
        ("a=[64,64]", "--arg a=[64,64]: '[64,64]' is not a tensor"),
        ("a=fp32[64][64]", "--arg a=fp32[64][64]: 'fp32[64][64]' is not a tensor"),
        ("a=fp32[64]x", "--arg a=fp32[64]x: 'fp32[64]x' is not a tensor"),
        ("a=fp99[64]", "--arg a=fp99[64]: unknown dtype 'fp99'; dtypes: "),
        ("a=", "--arg a=: a has no value"),
        ("a", "--arg a: 'a' is not NAME=VALUE"),
        ("=fp32[64]", "--arg =fp32[64]: '=fp32[64]' is not NAME=VALUE"),
        ("1a=4", "--arg 1a=4: '1a=4' is not NAME=VALUE"),
        ("n=4=5", "--arg n=4=5: '4=5' is neither a tensor like fp16[128,256] nor a number"),
        ("n=0x10", "--arg n=0x10: '0x10' is neither a tensor like fp16[128,256] nor a number"),
        ("n=four", "--arg n=four: 'four' is neither a tensor like fp16[128,256] nor a number"),
    ],
)
def test_a_malformed_arg_is_an_error_naming_it_and_the_form_expected(runner, backend, arg, message):
    result = invoke(runner, "compile", "kernels.py::bare", "-p", "testsim", "--arg", arg)
    assert result.exit_code == 2
    assert "Usage: pypto compile [OPTIONS] SCRIPT::KERNEL" in result.output
    assert f"Error: {message}" in result.output
    assert "hint: write " in result.output
    assert backend.calls == []


def test_an_arg_given_twice_is_an_error(runner):
    result = invoke(runner, "compile", "kernels.py::bare", "--arg", "a=fp32[64]", "--arg", "a=fp32[32]")
    assert result.exit_code == 2
    assert "--arg a=fp32[32]: a is given twice" in result.output


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4", 4), ("-3", -3), ("0.5", 0.5), ("1e-3", 1e-3), (".5", 0.5), ("true", True), ("False", False)],
)
def test_well_formed_scalars_parse(text, expected):
    value = parse_value(text)
    assert value == expected and type(value) is type(expected)


def test_a_well_formed_tensor_parses_with_spaces_around_its_dimensions():
    tensor = parse_value("FP16[ 128 , 256 ]")
    assert tensor == pl.Tensor[[128, 256], pl.FP16]  # the annotation stands in: no torch needed


def test_python_dash_m_pypto_is_the_command(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pypto", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("pypto 0.1")


def test_an_unknown_name_in_pypto_load_plugins_is_a_warning_line_of_pypto(runner, plugin_dists, monkeypatch):
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin,nosuch")
    reset_registry()
    result = invoke(runner, "platforms")
    assert result.exit_code == 0
    assert result.stderr.startswith(
        "pypto: PluginWarning: PYPTO_LOAD_PLUGINS names 'nosuch', but no installed"
    )
    assert "registry.py" not in result.stderr
