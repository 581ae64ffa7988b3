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


def test_an_unknown_setting_underlines_the_key(project):
    (project / "pyproject.toml").write_text('[tool.pypto]\n"platfrom" = "x"\n')
    with pytest.raises(ConfigError) as info:
        settings.platform()
    assert str(info.value).splitlines()[1:3] == ['    2 | "platfrom" = "x"', "      | ^^^^^^^^^^"]


def test_a_setting_of_the_wrong_type_is_an_error(project):
    (project / "pyproject.toml").write_text("[tool.pypto]\nplatform = 3\n")
    with pytest.raises(ConfigError, match="platform must be a str, got 3"):
        settings.platform()


def test_a_setting_of_the_wrong_type_points_at_its_line_with_a_hint(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.pypto]\ncache = "no"\n')
    with pytest.raises(ConfigError) as info:
        settings.cache_enabled()
    assert (info.value.span.file, info.value.span.line) == (str(project / "pyproject.toml"), 5)
    assert info.value.hint == "write cache = true"
    assert '    5 | cache = "no"' in str(info.value)


def test_a_toml_syntax_error_points_at_its_line_and_column(project):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.pypto]\nplatform = a2a3sim\n')
    with pytest.raises(ConfigError) as info:
        settings.platform()
    path = project / "pyproject.toml"
    assert info.value.message == f"{path} is not valid TOML: Invalid value"
    assert (info.value.span.file, info.value.span.line, info.value.span.col) == (str(path), 5, 11)
    assert str(info.value).splitlines()[1:3] == ["    5 | platform = a2a3sim", "      |            ^"]
    assert info.value.hint


@pytest.mark.parametrize("text", ["[tool]\npypto = 3\n", 'tool.pypto = "a2a3sim"\n'])
def test_a_tool_pypto_that_is_not_a_table_is_an_error_at_its_line(project, text):
    """Not an AttributeError from reading it as one."""
    (project / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        settings.platform()
    assert info.value.message.startswith("[tool.pypto] must be a table of settings, got ")
    assert info.value.span.line == len(text.splitlines())
    assert "[tool.pypto] on its own line" in info.value.hint


def test_an_empty_platform_in_the_config_file_is_an_error_not_the_default(project):
    (project / "pyproject.toml").write_text('[tool.pypto]\nplatform = ""\n')
    with pytest.raises(ConfigError) as info:
        settings.platform()
    assert info.value.message == "[tool.pypto] platform is empty"
    assert info.value.span.line == 2
    assert info.value.hint == 'write platform = "a2a3sim", or remove the line'


@pytest.mark.parametrize("value", ["1", "on", "true", "yes", "YES"])
def test_pypto_profile_on_profiles_into_the_default_root_not_a_directory_named_after_it(
    project, monkeypatch, value
):
    monkeypatch.setenv("PYPTO_PROFILE", value)
    assert settings.profile_everything()
    assert settings.profile_root() == project / "prof"  # [tool.pypto] profile-dir
    (project / "pyproject.toml").write_text("[tool.pypto]\n")
    assert settings.profile_root() == Path("pypto_profile")
    assert RunConfig().profile_path("k") == Path("pypto_profile") / "k"


@pytest.mark.parametrize("value", ["0", "off", "false", "no", ""])
def test_pypto_profile_off_profiles_nothing(project, monkeypatch, value):
    monkeypatch.setenv("PYPTO_PROFILE", value)
    assert not settings.profile_everything()
    assert RunConfig().profile_path("k") is None


def test_each_setting_says_where_it_came_from(project, monkeypatch):
    origin = settings.platform_setting().origin
    assert origin.name == f"[tool.pypto] platform in {project / 'pyproject.toml'}"
    assert (origin.span.line, origin.span.col) == (5, len("platform = "))
    assert settings.profile_root_setting().origin.span.line == 6
    monkeypatch.setenv("PYPTO_PLATFORM", "fromenv")
    monkeypatch.setenv("PYPTO_PROFILE", "envprof")
    assert settings.platform_setting() == settings.Setting("fromenv", settings.Origin("PYPTO_PLATFORM"))
    assert settings.profile_root_setting().origin == settings.Origin("PYPTO_PROFILE")
    chosen = settings.Setting("fromcli", settings.Origin("-p/--platform"))
    with settings.command_line(platform=chosen):
        assert RunConfig().platform_origin == settings.Origin("-p/--platform")
    assert RunConfig(platform="mine").platform_origin.name == "RunConfig(platform=...)"
