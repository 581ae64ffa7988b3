"""A profile directory that cannot be made is an error before anything runs, naming the directory,
why, and the setting that chose it; never an OSError after the kernel ran."""

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig, settings
from pypto.runtime.reports import profiling
from pypto.runtime.settings import ConfigError

X = pl.Tensor[[64, 64], pl.FP32]


@pl.jit
def double(a: X, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
        out[:] = pl.add(a, a)
    return out


@pytest.fixture
def project(tmp_path, monkeypatch, backend):
    """A directory with a file ``afile`` in it, entered; no profiling setting; testsim registered."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROFILE", raising=False)
    monkeypatch.setattr(settings, "find_config_file", lambda start=None: None)
    (tmp_path / "afile").write_text("not a directory")
    double.cache_clear()
    return tmp_path


def call(config=None):
    double(torch.ones(64, 64), torch.zeros(64, 64), config=config or RunConfig(platform="testsim"))


@pytest.mark.parametrize(
    ("directory", "why"),
    [
        ("afile/prof", "afile is a file, not a directory"),
        ("afile/a/b", "afile is a file, not a directory"),
        ("afile", "it is a file, not a directory"),
        ("/proc/pypto-prof", "cannot create a directory in /proc: "),
    ],
)
def test_run_config_rejects_a_profile_dir_that_cannot_be_made_at_the_call(project, backend, directory, why):
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ConfigError) as info:
        RunConfig(platform="testsim", profile_dir=directory)
    message = info.value.message
    assert message.startswith(
        f"cannot write profiles to {directory} (from RunConfig(profile_dir=...)): {why}"
    )
    assert (info.value.span.file, info.value.span.line) == (__file__, line)
    assert info.value.hint.startswith("point RunConfig(profile_dir=...) at a directory that can be created")
    last = info.tb
    while last.tb_next is not None:
        last = last.tb_next
    assert (last.tb_frame.f_code.co_filename, last.tb_lineno) == (__file__, line)  # no internal frame last
    assert backend.calls == []


def test_pypto_profile_naming_a_file_fails_before_the_kernel_runs(project, backend, monkeypatch):
    monkeypatch.setenv("PYPTO_PROFILE", "afile")
    with pytest.raises(ConfigError) as info:
        call()
    assert info.value.message == (
        "cannot write profiles to afile/double (from PYPTO_PROFILE): afile is a file, not a directory"
    )
    assert info.value.hint.startswith("point PYPTO_PROFILE at a directory")
    assert backend.calls == []


def test_a_config_file_profile_dir_naming_a_file_points_at_its_line(project, backend, monkeypatch):
    config = project / "pyproject.toml"
    config.write_text('[tool.pypto]\nplatform = "testsim"\nprofile-dir = "afile"\n')
    monkeypatch.setattr(settings, "find_config_file", lambda start=None: config)
    with pytest.raises(ConfigError) as info:
        call(RunConfig(enable_profiling=True))
    assert info.value.message == (
        f"cannot write profiles to {project / 'afile' / 'double'} (from [tool.pypto] profile-dir in "
        f"{config}): {project / 'afile'} is a file, not a directory"
    )
    assert (info.value.span.file, info.value.span.line) == (str(config), 3)
    assert '    3 | profile-dir = "afile"' in str(info.value)
    assert backend.calls == []


def test_a_writable_profile_dir_passes_and_the_check_leaves_nothing_behind(project, backend):
    before = sorted(p.name for p in project.iterdir())
    profiling.check_profile_dir(project / "new" / "deeper", settings.Origin("-o/--output"))
    profiling.check_profile_dir(project, settings.Origin("-o/--output"))
    assert sorted(p.name for p in project.iterdir()) == before
    call(RunConfig(platform="testsim", profile_dir="new/double"))
    assert (project / "new" / "double" / "trace.json").is_file()
    assert len(backend.calls) == 1


@pytest.mark.parametrize(
    ("dump", "why"),
    [
        ("afile/dumps", "afile is a file, not a directory"),
        ("/proc/pypto-dumps", "cannot create a directory in /proc: "),
    ],
)
def test_run_config_rejects_a_pass_dump_dir_that_cannot_be_made_at_the_call(project, backend, dump, why):
    """Not an OSError from deep in the pass manager once compiling starts."""
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(ConfigError) as info:
        RunConfig(platform="testsim", dump_passes=dump)
    assert info.value.message.startswith(
        f"cannot write pass dumps to {dump} (from RunConfig(dump_passes=...)): {why}"
    )
    assert (info.value.span.file, info.value.span.line) == (__file__, line)
    assert info.value.hint == (
        "point RunConfig(dump_passes=...) at a directory that can be created and written, e.g. pypto_passes"
    )
