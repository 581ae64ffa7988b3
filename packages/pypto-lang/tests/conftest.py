"""Fixtures: an isolated platform registry with the in-process test target and recording backend."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from lang_platforms import RecordingBackend, RecordingPlugin

from pypto.runtime import RunConfig, register_plugin, reset_registry
from pypto.runtime.reports.progress import TERMINAL_VARIABLES


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """rich takes any stream for a terminal when one of these is set (a CI runner's FORCE_COLOR,
    say); the tests decide for themselves what is a terminal."""
    for name in TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A registry that loads no entry-point plugin; reset again afterwards."""
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "")
    reset_registry(load_entry_points=False)
    yield
    reset_registry()


@pytest.fixture
def backend(empty_registry: None) -> RecordingBackend:
    """The recording ``testsim`` backend, registered in-process."""
    recording = RecordingBackend()
    register_plugin(RecordingPlugin(recording), name="test-plugin")
    return recording


@pytest.fixture
def config() -> RunConfig:
    """Run on the recording backend without lowering (the passes are tested in their package)."""
    return RunConfig(platform="testsim", pipeline=())
