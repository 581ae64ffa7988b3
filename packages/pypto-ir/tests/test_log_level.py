"""pypto.set_log_level / get_log_level / LogLevel, PYPTO_LOG_LEVEL, and the error types the manual
names at the top of ``pypto``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

import pypto
from pypto.ir import log
from pypto.ir.errors import ConfigError, InternalError, PyptoError, SourceSpan


@pytest.fixture(autouse=True)
def _fresh_level(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PYPTO_LOG_LEVEL", raising=False)
    log.reset_log_level()
    yield
    log.reset_log_level()


def test_the_manuals_snippet_sets_and_reads_back_debug(capsys: pytest.CaptureFixture[str]) -> None:
    pypto.set_log_level(pypto.LogLevel.DEBUG)
    print(pypto.get_log_level())
    assert capsys.readouterr().out == "LogLevel.DEBUG\n"


def test_info_is_the_default_and_the_levels_grow_in_volume() -> None:
    assert pypto.get_log_level() is pypto.LogLevel.INFO
    order = ["NONE", "FATAL", "ERROR", "WARN", "INFO", "EVENT", "DEBUG"]
    volumes = [pypto.LogLevel[name] for name in order]
    assert volumes == sorted(volumes, reverse=True)  # a lower value lets more through


@pytest.mark.parametrize(
    ("threshold", "shown"),
    [
        ("DEBUG", ["debug", "event", "info"]),
        ("EVENT", ["event", "info"]),
        ("INFO", ["info"]),
        ("WARN", []),
        ("NONE", []),
    ],
)
def test_a_threshold_shows_its_level_and_the_ones_above(
    threshold: str, shown: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    pypto.set_log_level(threshold)
    log.debug("one")
    log.event("two")
    log.info("three")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == shown
    assert all(line.startswith("pypto: ") for line in lines)


@pytest.mark.parametrize(("threshold", "shown"), [("WARN", True), ("ERROR", False), ("NONE", False)])
def test_pyptos_warnings_are_shown_at_warn_and_hidden_below(threshold: str, shown: bool) -> None:
    script = (
        "import warnings, pypto\n"
        "from pypto.ir.errors import CompileWarning\n"
        f"pypto.set_log_level({threshold!r})\n"
        "warnings.warn('a pypto warning', CompileWarning)\n"
        "warnings.warn('a script warning', UserWarning)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert ("a pypto warning" in done.stderr) is shown
    assert "a script warning" in done.stderr  # not PyPTO's: the threshold leaves it alone


def test_the_environment_sets_the_default_and_an_explicit_level_beats_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYPTO_LOG_LEVEL", "Warn")
    assert pypto.get_log_level() is pypto.LogLevel.WARN
    assert log.log_level_origin() == (pypto.LogLevel.WARN, "PYPTO_LOG_LEVEL")
    pypto.set_log_level(pypto.LogLevel.DEBUG)
    assert log.log_level_origin() == (pypto.LogLevel.DEBUG, "set_log_level()")


def test_a_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_LOG_LEVEL", "loud")
    with pytest.raises(ConfigError, match=r"PYPTO_LOG_LEVEL='loud' names no log level") as caught:
        pypto.get_log_level()
    assert caught.value.hint is not None and "debug" in caught.value.hint


@pytest.mark.parametrize("bad", ["loud", 12, None, True])
def test_set_log_level_rejects_what_is_no_level(bad: object) -> None:
    with pytest.raises(ConfigError, match="names no log level"):
        pypto.set_log_level(bad)  # type: ignore[arg-type]
    assert pypto.get_log_level() is pypto.LogLevel.INFO  # left as it was


def test_the_manuals_error_types_are_at_the_top() -> None:
    assert pypto.Error is PyptoError
    assert issubclass(pypto.InternalError, pypto.Error)
    assert issubclass(pypto.ConfigError, ValueError)


def test_an_internal_error_says_so_and_names_the_compiler_location() -> None:
    err = InternalError(
        "a tile has no memory space", SourceSpan("kernel.py", 4, 2), compiler_location="pypto/passes/x.py:9"
    )
    text = str(err)
    assert "Internal error: a tile has no memory space" in text
    assert "pypto/passes/x.py:9" in text
    assert text.startswith("kernel.py:4:3: error:")
    assert "report it" in (err.hint or "")
    assert isinstance(err, RuntimeError)
