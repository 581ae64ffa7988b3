"""Fixtures: an isolated platform registry with an in-process test target and recording backend.

This package is tested without any backend plugin installed: the tests build their own Target
(with the a2a3 memory sizes) and a fake backend that records what it was given.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pypto.ir import MemorySpace, MemorySpec, Program, RunReport, Target
from pypto.runtime import RunConfig, hookimpl, register_plugin, reset_registry

sys.path.insert(0, str(Path(__file__).parent))

M = MemorySpace

A2A3_LIKE = Target(
    name="a2a3",
    core_groups=24,
    aic_per_group=1,
    aiv_per_group=2,
    clock_mhz=1850,
    memory={
        M.Vec: MemorySpec(196608, 188416),
        M.Mat: MemorySpec(524288, 524288),
        M.Left: MemorySpec(65536, 65536),
        M.Right: MemorySpec(65536, 65536),
        M.Acc: MemorySpec(131072, 131072),
        M.Bias: MemorySpec(1024, 1024),
    },
    data_paths=frozenset(
        {
            (M.DDR, M.Vec),
            (M.DDR, M.Mat),
            (M.Vec, M.DDR),
            (M.Mat, M.Left),
            (M.Mat, M.Right),
            (M.Mat, M.Bias),
            (M.Acc, M.Mat),
            (M.Acc, M.DDR),
        }
    ),
)


@dataclass
class RecordingBackend:
    """A backend that runs nothing and remembers each call."""

    name: str = "testsim"
    target: Target = A2A3_LIKE
    calls: list[tuple[Program, list[Any], dict[str, Any]]] = field(default_factory=list)
    outputs: tuple[Any, ...] = ()

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        self.calls.append((program, list(args), dict(options)))
        return RunReport(self.name, self.target.clock_mhz, total_cycles=100, outputs=self.outputs)


class TestPlugin:
    """Registers a recording backend (``testsim``) and the compile-only ``a2a3`` target."""

    def __init__(self, backend: RecordingBackend) -> None:
        self.backend = backend

    @hookimpl
    def pypto_register_backends(self, register: Any) -> None:
        register(self.backend)

    @hookimpl
    def pypto_register_targets(self, register: Any) -> None:
        register(A2A3_LIKE)


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
    register_plugin(TestPlugin(recording), name="test-plugin")
    return recording


@pytest.fixture
def config() -> RunConfig:
    """Run on the recording backend without lowering (the passes are tested in their package)."""
    return RunConfig(platform="testsim", pipeline=())
