"""Passes as a registry users extend: a plugin's pass named in RunConfig(pipeline=...) and in
``pypto compile --passes``, its options typed; a backend that names its own pipeline; and the
mistakes, each an error at the user's text with a hint."""

import subprocess
import sys
import textwrap

import pytest
import torch
from click.testing import CliRunner
from lang_platforms import RecordingBackend, RecordingPlugin
from lang_test_passes import PassPlugin, StampEntry, Tone

import pypto.language as pl
from pypto.cli import cli
from pypto.ir import PlatformError
from pypto.passes import Pipeline
from pypto.runtime import RunConfig, register_plugin, registry, reset_registry
from pypto.runtime.compiling.cache import cache_key
from pypto.runtime.compiling.pipelines import pipeline_of
from pypto.runtime.settings import ConfigError


@pl.jit
def doubled(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="doubled"):
        out[:] = pl.add(a, a)
    return out


def stamps(compiled):
    return compiled.lowered.entry_function.attrs.get("stamp")


@pytest.fixture
def stamp_plugin(backend):
    register_plugin(PassPlugin(), name="stamps")
    doubled.cache_clear()
    return backend


def test_a_plugin_pass_runs_from_run_config_with_its_options_typed(stamp_plugin):
    config = RunConfig(
        platform="testsim", pipeline="outline-scopes,stamp-entry{label=hi times=3 loud=true tone=loud}"
    )
    compiled = doubled.compile(config=config)
    assert stamps(compiled) == (("hi", 3, True, Tone.LOUD),)
    assert [fn.name for fn in compiled.lowered.functions.values()] == [
        "doubled",
        "doubled_1",
    ]  # outlined first
    (step,) = [s for s in config.parsed_pipeline if s.entry.name == "StampEntry"]
    assert step.entry.origin == "plugin 'stamps' (registered in-process)"


def test_a_plugin_pass_may_be_named_in_a_list_too_with_its_options(stamp_plugin):
    compiled = doubled.compile(
        config=RunConfig(platform="testsim", pipeline=["StampEntry{times=2}", "stamp-entry"])
    )
    assert stamps(compiled) == (("plain", 2, False, Tone.QUIET), ("plain", 1, False, Tone.QUIET))


def test_naming_only_built_in_passes_loads_no_plugin(monkeypatch):
    def loaded():
        raise AssertionError("the plugins were loaded")

    monkeypatch.setattr(type(registry()), "passes", lambda self: loaded())
    assert str(
        RunConfig(platform="a2a3sim", pipeline="outline-scopes,tile-matmul{k_block=64}").parsed_pipeline
    ) == ("outline-scopes,tile-matmul{k_block=64}")


def test_listing_passes_and_naming_them_imports_no_pass():
    """`pypto passes` and RunConfig(pipeline=...) read the light declaration; only compiling
    (or options, which need the pass's fields) imports a pass."""
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from pypto.cli import cli\n"
        "from pypto.passes import BUILT_IN_PASSES\n"
        "from pypto.runtime import RunConfig\n"
        "assert CliRunner().invoke(cli, ['passes']).exit_code == 0\n"
        "RunConfig(platform='a2a3', pipeline='outline-scopes,tensor-to-tile,allocate')\n"
        "modules = {e.implementation.split(':')[0] for e in BUILT_IN_PASSES}\n"
        "print(sorted(modules & set(sys.modules)))\n"
        "RunConfig(platform='a2a3', pipeline='tile-matmul{k_block=64}')\n"
        "print(sorted(modules & set(sys.modules)))\n"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert shown.splitlines() == ["[]", "['pypto.passes.autotile']"]


def test_a_plugin_pass_is_not_known_without_its_plugin(backend):
    with pytest.raises(ConfigError) as info:
        RunConfig(platform="testsim", pipeline="outline-scopes,stamp-entry")
    assert info.value.message.startswith("RunConfig.pipeline: unknown pass 'stamp-entry'; known passes: ")
    assert info.value.hint == "did you mean stamp-tfree?"
    assert info.value.span is not None and info.value.span.file == __file__


def test_the_pipeline_options_are_part_of_the_cache_key(stamp_plugin):
    program = doubled.parse()
    target = registry().target("testsim")

    def key(pipeline):
        return cache_key(program, target, RunConfig(platform="testsim", pipeline=pipeline), "p")

    assert key("stamp-entry{times=2}") != key("stamp-entry{times=3}")
    assert key("stamp-entry{times=2}") == key("StampEntry{times=2 label=plain}")  # the same passes
    assert key("stamp-entry") == key("stamp-entry{times=1}")  # an option at its default


def test_two_plugins_registering_one_pass_name_are_an_error_naming_both(stamp_plugin):
    register_plugin(PassPlugin(StampEntry), name="again")
    with pytest.raises(PlatformError) as info:
        registry().passes()
    assert info.value.message.startswith(
        "two passes are named 'StampEntry': StampEntry from plugin 'stamps' (registered in-process), and "
    )
    assert "from plugin 'again' (registered in-process)" in info.value.message
    assert "PYPTO_LOAD_PLUGINS" in info.value.hint


def test_a_plugin_registering_no_pass_class_is_an_error_naming_it(backend):
    register_plugin(PassPlugin(StampEntry()), name="confused")
    with pytest.raises(
        PlatformError, match=r"plugin 'confused' .* registered a StampEntry object, which is not a pass class"
    ):
        registry().passes()


# ---------------------------------------------------------------- a backend's own pipeline


@pytest.fixture
def picky(empty_registry):
    """``pickysim``, a backend that asks for its own pipeline, and the stamp pass."""
    backend = RecordingBackend(name="pickysim", pipeline="outline-scopes, stamp-entry{label=picky}")
    register_plugin(RecordingPlugin(backend), name="picky-plugin")
    register_plugin(PassPlugin(), name="stamps")
    doubled.cache_clear()
    return backend


def test_a_backend_names_the_pipeline_its_programs_are_lowered_with(picky):
    compiled = doubled.compile(config=RunConfig(platform="pickysim"))
    assert stamps(compiled) == (("picky", 1, False, Tone.QUIET),)
    assert str(pipeline_of(compiled.config)) == "outline-scopes,stamp-entry{label=picky}"
    doubled(torch.ones(64, 64), torch.zeros(64, 64), config=RunConfig(platform="pickysim"))
    assert picky.calls[-1][0].entry_function.attrs["stamp"] == (("picky", 1, False, Tone.QUIET),)


def test_run_config_pipeline_wins_over_the_backends(picky):
    compiled = doubled.compile(config=RunConfig(platform="pickysim", pipeline="outline-scopes"))
    assert stamps(compiled) is None


def test_another_platform_keeps_the_default_pipeline(picky):
    assert pipeline_of(RunConfig(platform="a2a3")) == Pipeline.default()


def test_the_backends_pipeline_is_part_of_the_cache_key(picky):
    program, target = doubled.parse(), picky.target
    picked = cache_key(program, target, RunConfig(platform="pickysim"), "p")
    picky.pipeline = None
    assert picked != cache_key(program, target, RunConfig(platform="pickysim"), "p")


def test_a_backend_pipeline_that_cannot_be_used_is_an_error_naming_the_plugin(picky):
    picky.pipeline = "outline-scopes,stamp-entry{lable=x}"
    with pytest.raises(PlatformError) as info:
        doubled.compile(config=RunConfig(platform="pickysim"))
    assert info.value.message.startswith(
        "platform 'pickysim' of plugin 'picky-plugin' (registered in-process) asks for the pipeline "
        "'outline-scopes,stamp-entry{lable=x}', which cannot be used: pass 'stamp-entry' has no option 'lable'"
    )
    assert info.value.hint.startswith("did you mean label=?, in the backend's pipeline")


def test_a_backend_pipeline_that_is_no_string_is_an_error_naming_the_plugin(picky):
    picky.pipeline = ["outline-scopes"]
    with pytest.raises(
        PlatformError, match="has a pipeline attribute of \\['outline-scopes'\\], not a pipeline string"
    ):
        doubled.compile(config=RunConfig(platform="pickysim"))


# ---------------------------------------------------------------- the command line

SCRIPT = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.jit
    def add(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
            out[:] = pl.add(a, a)
        return out
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch, stamp_plugin):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "kernels.py").write_text(SCRIPT)
    return tmp_path


def compile_(*args):
    return CliRunner().invoke(
        cli, ["compile", "kernels.py::add", "-p", "testsim", *args], catch_exceptions=False
    )


def test_compile_passes_runs_a_plugin_pass_with_its_options(project):
    result = compile_(
        "--passes", "outline-scopes,stamp-entry{label='from the cli' times=2}", "--emit", "report"
    )
    assert result.exit_code == 0, result.output
    assert 'pipeline: OutlineScopes, StampEntry{label="from the cli" times=2}' in result.output


def test_compile_passes_dumps_each_pass_by_its_name(project):
    result = compile_("--passes", "outline-scopes,stamp-entry", "--dump-passes", "dumps")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (project / "dumps").iterdir()) == [
        "01_after_OutlineScopes.py",
        "02_after_StampEntry.py",
    ]


@pytest.mark.parametrize(
    ("passes", "shown", "under", "hint"),
    [
        (
            "outline-scopes,stamp-entry{tmies=2}",
            "--passes:1:28: error: pass 'stamp-entry' has no option 'tmies'; its options: label: str = plain, "
            "times: int = 1, loud: bool = false, tone: Tone = quiet",
            (27, 5),
            "hint: did you mean times=?",
        ),
        (
            "outline-scopes,stamp-entry{times=0}",
            "--passes:1:34: error: option times of 'stamp-entry' takes an integer >= 1, got '0'",
            (33, 1),
            "hint: write times=1",
        ),
        (
            "outline-scopes,stamp-entry{times=2",
            "--passes:1:27: error: unbalanced '{': the options of 'stamp-entry' are never closed",
            (26, 1),
            "hint: close them with '}': stamp-entry{times=2}",
        ),
        (
            "outline-scope,stamp-entry",
            "--passes:1:1: error: unknown pass 'outline-scope'; known passes: OutlineScopes (outline-scopes), ",
            (0, 13),
            "hint: did you mean outline-scopes?",
        ),
    ],
)
def test_a_bad_passes_option_shows_the_string_with_a_caret_under_the_mistake(
    project, passes, shown, under, hint
):
    result = compile_("--passes", passes)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    error = next(i for i, line in enumerate(lines) if "--passes:1:" in line)
    assert lines[error].startswith("Error: " + shown), result.output
    assert lines[error + 1] == f"    1 | {passes}"
    col, width = under  # the offset and length of the mistake in the string
    assert lines[error + 2] == "      | " + " " * col + "^" * width
    assert lines[error + 3] == hint


def test_passes_all_lists_plugin_passes_with_their_options(project):
    result = CliRunner().invoke(cli, ["passes", "--all"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert rows[0] == ["PASS", "PIPELINE", "NAME", "FROM", "OPTIONS"]
    assert rows[2][:4] == ["AutoTileMatmul", "tile-matmul", "pypto-passes", "k_block:"]
    stamp = next(i for i, row in enumerate(rows) if row[0] == "StampEntry")
    assert rows[stamp][:5] == ["StampEntry", "stamp-entry", "plugin", "'stamps'", "(registered"]
    assert " ".join(rows[stamp][6:]) == "label: str = plain (what to write)"
    assert rows[stamp + 1] == ["times:", "int", "=", "1"]


def test_a_pass_plugin_is_found_through_its_entry_point(tmp_path, monkeypatch):
    """Installed, a pass plugin is discovered like a backend: through the ``pypto`` entry point;
    its passes carry the distribution and its version (into the cache key)."""
    info = tmp_path / "stamp_plugin-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stamp-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text("[pypto]\nstamp-plugin = stamp_plugin_mod\n")
    (tmp_path / "stamp_plugin_mod.py").write_text(
        "import pluggy\nfrom lang_test_passes import StampEntry\n\n"
        'hookimpl = pluggy.HookimplMarker("pypto")\n\n\n'
        "@hookimpl\ndef pypto_register_passes(register):\n    register(StampEntry)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "stamp-plugin")
    reset_registry()
    try:
        config = RunConfig(platform="a2a3", pipeline="outline-scopes,stamp-entry{times=2}")
        assert config.parsed_pipeline.key()[-1] == (
            "stamp-entry{times=2}",
            "plugin 'stamp-plugin' (distribution stamp-plugin 0.3)",
        )
    finally:
        reset_registry()
