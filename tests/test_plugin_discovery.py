"""The simulator is found through the `pypto` entry point, like any third-party backend."""

import importlib.metadata

import pytest

from pypto.ir import PlatformError
from pypto.runtime import RunConfig, get_backend, list_platforms, reset_registry
from pypto.runtime.platforms.registry import PluginWarning


@pytest.fixture(autouse=True)
def fresh_registry():
    reset_registry()
    yield
    reset_registry()


def test_the_simulator_is_declared_as_an_entry_point():
    eps = importlib.metadata.entry_points(group="pypto")
    sim = [ep for ep in eps if ep.name == "a2a3sim"]
    assert len(sim) == 1 and sim[0].value == "pypto_sim_a2a3.plugin"
    assert sim[0].dist.name == "pypto-sim-a2a3"


def test_a2a3sim_is_registered_through_the_entry_point():
    assert {"a2a3sim", "a2a3"} <= set(list_platforms())
    assert get_backend("a2a3sim").name == "a2a3sim"


def test_without_the_entry_point_a2a3sim_is_unknown_with_a_clear_error(monkeypatch):
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "some-other-plugin")
    reset_registry()
    with pytest.raises(PlatformError) as info, pytest.warns(PluginWarning, match="'some-other-plugin'"):
        get_backend("a2a3sim")
    assert isinstance(info.value, ValueError)
    assert "a2a3sim" in str(info.value)


def test_run_config_defaults_to_the_simulator():
    assert RunConfig().platform == "a2a3sim"
