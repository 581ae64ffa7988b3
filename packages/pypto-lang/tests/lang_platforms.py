"""A test target with the a2a3 memory sizes, and a backend that records what it was given.

This package is tested without any backend plugin installed, so tests register these in-process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import MemorySpace, MemorySpec, Program, RunReport, Target
from pypto.runtime import hookimpl

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
    """A backend that runs nothing and remembers each call; ``pipeline`` is the pipeline string it
    asks for (None: the default pipeline)."""

    name: str = "testsim"
    target: Target = A2A3_LIKE
    calls: list[tuple[Program, list[Any], dict[str, Any]]] = field(default_factory=list)
    outputs: tuple[Any, ...] = ()
    pipeline: str | None = None

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
