"""What a worker dispatches a compiled program with, as ``CompiledProgram`` hands it out:
``chip_callable`` (the program as the runtime loads it), ``build_orch_args(*args)`` (the
orchestration's arguments) and ``build_call_config(config)`` (the per-launch runtime settings).

On the simulator the three are plain data: a launch is ``backend.run(lowered, orch_args.values,
call_config.backend_options)``, and a harness that drives dispatch itself can read (and log) what
each launch received.

>>> args = compiled.build_orch_args(a, b, out)  # doctest: +SKIP
>>> call = compiled.build_call_config(RunConfig(ring_task_window=256))  # doctest: +SKIP
>>> call.ring_task_window  # doctest: +SKIP
(256, 256, 256, 256)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.runtime.running.rings import Sizes


@dataclass(frozen=True, eq=False)
class ChipCallable:
    """A compiled program as the runtime loads it onto a chip: the orchestration (``entry`` and
    the other ``orchestrations``) and its ``kernels`` (name, kind: ``"AIC"``, ``"AIV"``,
    ``"InCore"``), for ``platform``; ``key`` names the artifacts (the output directory's key).

    One object per compiled program: a worker loads it once (``ChipWorker.aicpu_dlopen_count``
    counts the loads) and compares by identity, as a loaded library is."""

    program: str
    platform: str
    entry: str
    orchestrations: tuple[str, ...]
    kernels: tuple[tuple[str, str], ...]
    key: str

    def __repr__(self) -> str:
        return f"ChipCallable({self.program!r}, {self.platform!r}, kernels={[k for k, _ in self.kernels]})"


@dataclass(frozen=True)
class OrchArgs:
    """The orchestration's arguments for one launch, in parameter order: ``values`` (torch
    tensors, scalars; a ``DeviceTensor`` stands as its device buffer), ``names`` and
    ``output_indices`` (the ``pl.Out`` / ``pl.InOut`` positions, written in place). ``made`` holds
    the output tensors the builder allocated because the call left them all out
    (``compiled(a, b)`` for ``entry(a, b, out)``)."""

    names: tuple[str, ...]
    values: tuple[Any, ...]
    output_indices: tuple[int, ...]
    made: tuple[Any, ...] = ()

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __getitem__(self, index: int) -> Any:
        return self.values[index]


@dataclass(frozen=True)
class CallConfig:
    """The runtime settings of one launch, from a ``RunConfig``.

    ``device_id``; ``aicpu_thread_num`` (None: the backend's default); the four sizes of each ring
    (``ring_task_window``, ``ring_heap``, ``ring_dep_pool``: the config's, else ``PTO2_RING_*``,
    else 0 = the backend's default); the DFX captures (``enable_chip_swimlane`` level 0-4,
    ``enable_dep_gen``, ``enable_pmu`` level, ``enable_scope_stats``) and ``output_prefix``, the
    ``dfx_outputs/`` directory they are written to (None when none is on). ``backend_options`` is
    the dict the backend's ``run`` receives; ``run_config`` the ``RunConfig`` it came from."""

    device_id: int
    aicpu_thread_num: int | None
    ring_task_window: Sizes
    ring_heap: Sizes
    ring_dep_pool: Sizes
    enable_chip_swimlane: int
    enable_dep_gen: bool
    enable_pmu: int
    enable_scope_stats: bool
    output_prefix: Path | None
    backend_options: Mapping[str, Any] = field(repr=False)
    run_config: Any = field(repr=False, compare=False)

    @property
    def any_dfx_enabled(self) -> bool:
        """Whether the launch captures anything into ``output_prefix``."""
        return self.output_prefix is not None


__all__ = ["CallConfig", "ChipCallable", "OrchArgs"]
