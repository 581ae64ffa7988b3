"""The pluggy platform registry: in-process plugins, entry points, and its error messages."""

import inspect
import re
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from lang_platforms import A2A3_LIKE, RecordingBackend, RecordingPlugin

import pypto.language as pl
from pypto.ir import PlatformError
from pypto.runtime import (
    RunConfig,
    SimulatedPlatformWarning,
    get_backend,
    get_target,
    hookimpl,
    list_platforms,
    register_plugin,
    reset_registry,
    settings,
)
from pypto.runtime.platforms import hookspecs
from pypto.runtime.settings import ConfigError


class BackendPlugin:
    def __init__(self, backend):
        self.backend = backend

    @hookimpl
    def pypto_register_backends(self, register):
        register(self.backend)


@pl.jit
def exp_kernel(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


def test_in_process_plugins_register_backends_and_targets(backend):
    assert get_backend("testsim") is backend
    assert get_target("a2a3") is A2A3_LIKE
    assert list_platforms() == ["a2a3", "testsim"]


def test_a_backends_target_is_the_target_of_its_platform(backend):
    assert get_target("testsim") is backend.target


def test_unknown_platform_is_a_value_error_listing_the_registered_ones(backend):
    with pytest.raises(ValueError) as info:
        get_backend("tpu")
    assert isinstance(info.value, PlatformError)
    assert info.value.message == "unknown platform 'tpu'; registered platforms: a2a3, testsim"


def test_unknown_platform_in_run_config_fails_when_compiling(backend):
    with pytest.raises(PlatformError, match="unknown platform 'nosuch'"):
        exp_kernel.compile(config=RunConfig(platform="nosuch", pipeline=()))


def test_two_backends_of_one_name_is_an_error_naming_both(empty_registry):
    register_plugin(BackendPlugin(RecordingBackend()), name="first")
    register_plugin(BackendPlugin(RecordingBackend()), name="second")
    with pytest.raises(PlatformError) as info:
        list_platforms()
    message = info.value.message
    assert message.startswith("two backends are named 'testsim': one from plugin ")
    assert "plugin 'first' (registered in-process)" in message
    assert "plugin 'second' (registered in-process)" in message


def test_registering_something_that_is_not_a_backend_is_rejected(empty_registry):
    register_plugin(BackendPlugin(object()), name="bogus")
    with pytest.raises(PlatformError) as info:
        list_platforms()
    assert info.value.message.startswith("plugin 'bogus' (registered in-process) registered <object object")
    assert info.value.message.endswith("which is not a pypto.ir.Backend")


def test_a2a3_compiles_without_a_backend_but_running_suggests_the_simulator(empty_registry):
    register_plugin(RecordingPlugin(RecordingBackend(name="a2a3sim")), name="sim")
    config = RunConfig(platform="a2a3", pipeline=())
    exp_kernel.cache_clear()
    lowered = exp_kernel.lower(config=config)
    assert lowered.entry == "exp_kernel"
    with pytest.raises(PlatformError) as info:
        exp_kernel(torch.ones(64, 64), torch.zeros(64, 64), config=config)
    assert info.value.message == (
        "platform 'a2a3' is a compile-only target here: running on it needs a device backend plugin, "
        "and none is installed"
    )
    assert info.value.hint == "run on 'a2a3sim' instead, e.g. RunConfig(platform='a2a3sim')"


def test_a_run_on_a_chip_with_no_device_backend_runs_on_its_simulator_warning_once(empty_registry):
    simulator = RecordingBackend(name="a2a3sim", simulator=True)
    register_plugin(RecordingPlugin(simulator), name="sim")
    config = RunConfig(platform="a2a3", pipeline=(), device_id=11)
    exp_kernel.cache_clear()
    a, out = torch.ones(64, 64), torch.zeros(64, 64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exp_kernel(a, out, config=config)
        exp_kernel(a, out, config=config)
    assert [w.category for w in caught] == [SimulatedPlatformWarning]  # once per platform and process
    assert str(caught[0].message).startswith(
        "platform 'a2a3' has no device backend installed: running on 'a2a3sim', its simulator"
    )
    assert caught[0].filename == __file__  # at the user's call
    assert [args for _, args, _ in simulator.calls] == [[a, out], [a, out]]
    assert simulator.calls[0][2]["device_id"] == 11 and exp_kernel.last_report.device_id == 11
    assert get_backend("a2a3") is simulator


def test_codegen_only_on_a_chip_runs_nothing_and_warns_of_nothing(empty_registry, tmp_path):
    simulator = RecordingBackend(name="a2a3sim", simulator=True)
    register_plugin(RecordingPlugin(simulator), name="sim")
    exp_kernel.cache_clear()
    config = RunConfig(platform="a2a3", pipeline=(), codegen_only=True, save_kernels_dir=tmp_path / "gen")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert exp_kernel(torch.ones(64, 64), torch.zeros(64, 64), config=config) is None
    assert simulator.calls == [] and (tmp_path / "gen" / "program.py").is_file()


def test_a_device_backend_of_the_chip_keeps_the_chip_from_falling_back(empty_registry):
    register_plugin(RecordingPlugin(RecordingBackend(name="a2a3sim", simulator=True)), name="sim")
    register_plugin(BackendPlugin(RecordingBackend(name="a2a3dev")), name="dev")
    with pytest.raises(PlatformError) as info:
        get_backend("a2a3")
    assert info.value.message.startswith("platform 'a2a3' is a compile-only target here")
    assert info.value.hint == "run on 'a2a3dev' or 'a2a3sim' instead, e.g. RunConfig(platform='a2a3dev')"


def test_a_simulator_takes_any_device_id_a_device_backend_only_its_own(empty_registry):
    register_plugin(RecordingPlugin(RecordingBackend(name="a2a3sim", simulator=True)), name="sim")
    assert RunConfig(platform="a2a3sim", device_id=11).device_id == 11
    assert RunConfig(platform="a2a3", device_id=7).device_id == 7
    register_plugin(BackendPlugin(RecordingBackend(name="dev")), name="dev")
    with pytest.raises(ConfigError, match=r"RunConfig\(device_id=1\): dev has 1 device\(s\)"):
        RunConfig(platform="dev", device_id=1)


def _fake_distribution(root, dist, module, backend_name, body=None):
    """A distribution on sys.path whose ``pypto`` entry point registers ``backend_name``."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[pypto]\n{dist} = {module}\n")
    (root / f"{module}.py").write_text(
        body
        or textwrap.dedent(
            f"""\
            import pluggy
            from lang_platforms import RecordingBackend

            hookimpl = pluggy.HookimplMarker("pypto")

            @hookimpl
            def pypto_register_backends(register):
                register(RecordingBackend(name={backend_name!r}))
            """
        )
    )


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    reset_registry()


def test_entry_points_load_lazily_and_pypto_load_plugins_restricts_them(plugin_path, monkeypatch):
    _fake_distribution(plugin_path, "alpha-plugin", "alpha_plugin_mod", "alphasim")
    _fake_distribution(plugin_path, "beta-plugin", "beta_plugin_mod", "betasim")
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin")
    reset_registry()
    assert list_platforms() == ["alphasim"]
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin, beta-plugin")
    reset_registry()
    assert list_platforms() == ["alphasim", "betasim"]
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "")
    reset_registry()
    assert list_platforms() == []


def test_an_unknown_name_in_pypto_load_plugins_is_warned_with_the_installed_names(plugin_path, monkeypatch):
    _fake_distribution(plugin_path, "alpha-plugin", "alpha_plugin_mod", "alphasim")
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin,alpah-plugin")
    reset_registry()
    from pypto.runtime.platforms.registry import PluginWarning

    with pytest.warns(PluginWarning) as caught:
        assert list_platforms() == ["alphasim"]
    (warning,) = caught
    message = str(warning.message)
    assert message.startswith(
        "PYPTO_LOAD_PLUGINS names 'alpah-plugin', but no installed plugin is called that"
    )
    installed = message[message.index("(installed plugins: ") :]
    assert "alpha-plugin" in installed and message.endswith("; it is ignored")


def test_known_names_in_pypto_load_plugins_give_no_warning(plugin_path, monkeypatch):
    _fake_distribution(plugin_path, "alpha-plugin", "alpha_plugin_mod", "alphasim")
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "alpha-plugin")
    reset_registry()
    from pypto.runtime.platforms.registry import PluginWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        assert list_platforms() == ["alphasim"]


@pytest.fixture
def no_session_platform(tmp_path, monkeypatch):
    """No PYPTO_PLATFORM and no pyproject.toml above the current directory."""
    monkeypatch.delenv("PYPTO_PLATFORM", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(settings, "find_config_file", lambda start=None: None)
    return tmp_path


def test_an_unknown_platform_from_pypto_platform_names_the_variable(
    backend, no_session_platform, monkeypatch
):
    monkeypatch.setenv("PYPTO_PLATFORM", "nosuch")
    exp_kernel.cache_clear()
    with pytest.raises(PlatformError) as info:
        exp_kernel.compile()
    assert info.value.message == (
        "unknown platform 'nosuch' (from PYPTO_PLATFORM); registered platforms: a2a3, testsim"
    )
    assert info.value.hint.startswith("change PYPTO_PLATFORM to one of those")


def test_an_unknown_platform_from_the_config_file_points_at_its_line(
    backend, no_session_platform, monkeypatch
):
    config = no_session_platform / "pyproject.toml"
    config.write_text('[project]\nname = "x"\n\n[tool.pypto]\nplatform = "nosuch"\n')
    monkeypatch.setattr(settings, "find_config_file", lambda start=None: config)
    exp_kernel.cache_clear()
    with pytest.raises(PlatformError) as info:
        exp_kernel.compile()
    assert f"(from [tool.pypto] platform in {config})" in info.value.message
    assert (info.value.span.file, info.value.span.line, info.value.span.col) == (str(config), 5, 11)
    assert str(info.value).splitlines()[1:3] == ['    5 | platform = "nosuch"', "      |            ^^^^^^^^"]
    assert info.value.hint.startswith(f"change [tool.pypto] platform in {config} to one of those")


def test_an_unknown_platform_given_to_run_config_points_at_the_call(backend, no_session_platform):
    line = inspect.currentframe().f_lineno + 1
    config = RunConfig(platform="nosuch")
    with pytest.raises(PlatformError) as info:
        exp_kernel.compile(config=config)
    assert "unknown platform 'nosuch' (from RunConfig(platform=...))" in info.value.message
    assert (info.value.span.file, info.value.span.line) == (__file__, line)


def test_a_missing_default_platform_says_how_to_get_one(empty_registry, no_session_platform):
    exp_kernel.cache_clear()
    with pytest.raises(PlatformError) as info:
        exp_kernel.compile()
    assert "unknown platform 'a2a3sim' (from the built-in default)" in info.value.message
    assert "install pypto-sim-a2a3" in info.value.hint


def test_duplicate_backends_from_two_distributions_name_both(plugin_path, monkeypatch):
    _fake_distribution(plugin_path, "gamma-plugin", "gamma_plugin_mod", "samesim")
    _fake_distribution(plugin_path, "delta-plugin", "delta_plugin_mod", "samesim")
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "gamma-plugin,delta-plugin")
    reset_registry()
    with pytest.raises(PlatformError) as info:
        get_backend("samesim")
    assert "distribution gamma-plugin 0.1" in info.value.message
    assert "distribution delta-plugin 0.1" in info.value.message


def test_a_plugin_that_fails_to_import_is_named(plugin_path, monkeypatch):
    _fake_distribution(
        plugin_path, "broken-plugin", "broken_plugin_mod", "", body="raise ImportError('boom')\n"
    )
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "broken-plugin")
    reset_registry()
    with pytest.raises(PlatformError) as info:
        list_platforms()
    assert info.value.message == (
        "cannot load plugin 'broken-plugin' (distribution broken-plugin 0.1): ImportError: boom"
    )
    assert "PYPTO_LOAD_PLUGINS" in info.value.hint


def _declared_signature(hook) -> str:
    signature = inspect.signature(hook)
    params = ", ".join(f"{p.name}: {p.annotation}" for p in signature.parameters.values())
    return f"({params}) -> {signature.return_annotation}"


def test_docs_plugins_md_documents_every_hook_with_its_exact_signature():
    doc = (Path(__file__).parents[3] / "docs" / "plugins.md").read_text()
    documented = dict(re.findall(r"^### `(pypto_\w+)(\(.*\) -> .*)`$", doc, re.MULTILINE))
    declared = {
        name: _declared_signature(getattr(hookspecs, name))
        for name in dir(hookspecs)
        if name.startswith("pypto_")
    }
    assert documented == declared
    assert {"pypto_register_backends", "pypto_register_targets", "pypto_register_commands"} <= set(declared)


def test_the_readme_shows_every_hook():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    shown = set(re.findall(r"def (pypto_\w+)\(", readme))
    assert shown == {name for name in dir(hookspecs) if name.startswith("pypto_")}


def test_a_compile_only_platform_from_pypto_platform_is_named_with_a_fix_of_that_variable(
    empty_registry, monkeypatch
):
    register_plugin(RecordingPlugin(RecordingBackend(name="a2a3sim")), name="sim")
    monkeypatch.setenv("PYPTO_PLATFORM", "a2a3")
    exp_kernel.cache_clear()
    with pytest.raises(PlatformError) as info:
        exp_kernel(torch.ones(64, 64), torch.zeros(64, 64), config=RunConfig(pipeline=()))
    assert info.value.message.startswith(
        "platform 'a2a3' (from PYPTO_PLATFORM) is a compile-only target here"
    )
    assert info.value.hint == "run on 'a2a3sim' instead, e.g. PYPTO_PLATFORM=a2a3sim"
