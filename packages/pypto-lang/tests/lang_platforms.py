"""The a2a3 target (for the tests' in-process plugin), and a backend that records what it was given.

This package is tested without any backend plugin installed, so tests register these in-process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import Program, RunReport, Target
from pypto.ir.targets import get_target
from pypto.runtime import hookimpl

A2A3_LIKE = get_target("a2a3")  # the built-in a2a3 target, registered in-process by the tests


@dataclass
class RecordingBackend:
    """A backend that runs nothing and remembers each call; ``pipeline`` is the pipeline string it
    asks for (None: the default pipeline)."""

    name: str = "testsim"
    target: Target = A2A3_LIKE
    calls: list[tuple[Program, list[Any], dict[str, Any]]] = field(default_factory=list)
    outputs: tuple[Any, ...] = ()
    pipeline: str | None = None
    simulator: bool = False  # True: it simulates its target's chip (runs that chip's platform)

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        self.calls.append((program, list(args), dict(options)))
        return RunReport(self.name, self.target.clock_mhz, total_cycles=100, outputs=self.outputs)


class RecordingPlugin:
    """Registers a recording backend (``testsim``) and the compile-only ``a2a3`` target."""

    def __init__(self, backend: RecordingBackend) -> None:
        self.backend = backend

    @hookimpl
    def pypto_register_backends(self, register: Any) -> None:
        register(self.backend)

    @hookimpl
    def pypto_register_targets(self, register: Any) -> None:
        register(A2A3_LIKE)
