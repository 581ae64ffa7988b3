"""Session defaults: command line, then environment, then [tool.pypto], then built-in defaults."""

from pathlib import Path

import pytest

from pypto.runtime import RunConfig, settings
from pypto.runtime.settings import ConfigError


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory with a pyproject.toml, entered from a sub-directory; no PYPTO_* set."""
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE_DIR", "PYPTO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "mine"\n\n[tool.pypto]\nplatform = "fromfile"\nprofile-dir = "prof"\n'
        'cache-dir = ".cache/pypto"\n'
    )
    inner = tmp_path / "src" / "deep"
    inner.mkdir(parents=True)
    monkeypatch.chdir(inner)
    return tmp_path


def test_the_config_file_is_found_upward_and_its_paths_are_relative_to_it(project):
    assert settings.find_config_file() == project / "pyproject.toml"
    assert settings.platform() == "fromfile"
    assert settings.profile_root() == project / "prof"
    assert settings.cache_dir() == project / ".cache" / "pypto"
    assert RunConfig().platform == "fromfile"


def test_the_environment_beats_the_config_file(project, monkeypatch):
    monkeypatch.setenv("PYPTO_PLATFORM", "fromenv")
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(project / "envcache"))
    monkeypatch.setenv("PYPTO_PROFILE", "envprof")
    assert settings.platform() == "fromenv"
    assert settings.cache_dir() == project / "envcache"
    assert settings.profile_root() == Path("envprof")
    assert settings.profile_everything()


def test_the_command_line_beats_the_environment(project, monkeypatch):
    monkeypatch.setenv("PYPTO_PLATFORM", "fromenv")
    with settings.command_line(platform="fromcli", profile_dir=Path("cliprof")):
        assert RunConfig().platform == "fromcli"
        assert RunConfig().profile_path("k") == Path("cliprof") / "k"
    assert RunConfig().platform == "fromenv"
    assert RunConfig().profile_path("k") is None


def test_an_explicit_platform_beats_every_default(project):
    with settings.command_line(platform="fromcli"):
        assert RunConfig(platform="mine").platform == "mine"


def test_built_in_defaults_without_a_config_file(tmp_path, monkeypatch):
    for name in ("PYPTO_PLATFORM", "PYPTO_PROFILE", "PYPTO_CACHE_DIR", "PYPTO_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(settings, "find_config_file", lambda start=None: None)
    assert settings.platform() == "a2a3sim"
    assert settings.profile_root() == Path("pypto_profile")
    assert settings.cache_dir() == Path.home() / ".cache" / "pypto"
    assert settings.cache_enabled()


@pytest.mark.parametrize(("value", "enabled"), [("off", False), ("0", False), ("no", False), ("on", True)])
def test_pypto_cache_switches_the_disk_cache(project, monkeypatch, value, enabled):
    monkeypatch.setenv("PYPTO_CACHE", value)
    assert settings.cache_enabled() is enabled


def test_cache_false_in_the_config_file_switches_it_off(project):
    (project / "pyproject.toml").write_text("[tool.pypto]\ncache = false\n")
    assert not settings.cache_enabled()


def test_a_bad_pypto_cache_value_is_an_error(project, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE", "maybe")
    with pytest.raises(ConfigError, match="PYPTO_CACHE='maybe' is neither on nor off"):
        settings.cache_enabled()


def test_an_unknown_setting_in_the_config_file_is_an_error(project):
    (project / "pyproject.toml").write_text('[tool.pypto]\nplatfrom = "x"\n')
    with pytest.raises(ConfigError) as info:
        settings.platform()
    assert "unknown setting 'platfrom' in [tool.pypto]" in info.value.message
    assert "platform" in info.value.hint


def test_a_setting_of_the_wrong_type_is_an_error(project):
    (project / "pyproject.toml").write_text("[tool.pypto]\nplatform = 3\n")
    with pytest.raises(ConfigError, match="platform must be a str, got 3"):
        settings.platform()
