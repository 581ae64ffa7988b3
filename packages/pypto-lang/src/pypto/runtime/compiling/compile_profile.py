"""Compile profiling: the wall time of each stage of a compile, and of each pass.

``RunConfig(compile_profiling=True)`` (or ``PYPTO_COMPILE_PROFILING=1``, or
``ir.compile(program, profiling=True)``) times a compile: ``parse`` (when the compile parsed the
kernel), ``passes`` with one child per pass (the pass and the verification after it), and
``artifacts`` (writing the output directory). The profile goes to the output directory as
``report/pipeline_profile.txt`` (an indented table) and ``report/pipeline_profile.json``
(``{"total_seconds": ..., "stages": [{"name", "seconds", "children"}]}``), and is
``CompiledProgram.compile_profile``. These are wall-clock seconds of this machine, not modeled.

>>> profile = CompileProfile()
>>> with profile.stage("parse"):
...     pass
>>> [stage.name for stage in profile.stages]
['parse']
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.ir import Program
from pypto.passes.manager import Instrument, Pass
from pypto.runtime.settings import switch

PROFILE_ENV = "PYPTO_COMPILE_PROFILING"  # 1, on, true, yes: profile every compile
PROFILE_FILE = "report/pipeline_profile"  # .txt and .json, in the output directory


def profiling_by_default() -> bool:
    """Whether ``PYPTO_COMPILE_PROFILING`` asks for a profile of every compile (``1``, ``on``,
    ``true``, ``yes``; ``0``, ``off``, ``false``, ``no``: not; anything else is a ConfigError)."""
    return switch(PROFILE_ENV, False).value


@dataclass
class Stage:
    """One timed stage (``passes``) or pass (``AllocateMemory``), in wall-clock seconds."""

    name: str
    seconds: float = 0.0
    children: list[Stage] = field(default_factory=list)

    def data(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.seconds, "children": [c.data() for c in self.children]}


@dataclass
class CompileProfile:
    """The stages of one compile, in the order they ran."""

    stages: list[Stage] = field(default_factory=list)

    @property
    def total_seconds(self) -> float:
        return sum(stage.seconds for stage in self.stages)

    @contextmanager
    def stage(self, name: str) -> Iterator[Stage]:
        """Time the block as stage ``name`` (a stage of that name is added to, not repeated)."""
        found = next((s for s in self.stages if s.name == name), None)
        if found is None:
            found = Stage(name)
            self.stages.append(found)
        start = time.perf_counter()
        try:
            yield found
        finally:
            found.seconds += time.perf_counter() - start

    def pass_timer(self, stage: Stage) -> Instrument:
        """An instrument adding to ``stage`` one child per pass: the time since the pass before
        it finished (its run and the verification after it)."""
        last = [time.perf_counter()]

        def instrument(index: int, p: Pass, program: Program) -> None:
            now = time.perf_counter()
            stage.children.append(Stage(p.name, now - last[0]))
            last[0] = now

        return instrument

    def data(self) -> dict[str, Any]:
        return {"total_seconds": self.total_seconds, "stages": [stage.data() for stage in self.stages]}

    def text(self) -> str:
        """The profile as an indented table: each stage and pass, its seconds and share."""
        total = self.total_seconds or 1e-12
        title = "PyPTO compile profile (wall-clock seconds)"
        lines = [title, "=" * len(title), f"Total: {self.total_seconds:.3f}s", ""]

        def add(stage: Stage, depth: int) -> None:
            label = "  " * (depth + 1) + stage.name
            lines.append(f"{label:<40} {stage.seconds:8.3f}s  ({stage.seconds / total:5.1%})")
            for child in stage.children:
                add(child, depth + 1)

        for stage in self.stages:
            add(stage, 0)
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> list[Path]:
        """``report/pipeline_profile.txt`` and ``.json`` in ``directory``; returns their paths."""
        text, data = directory / f"{PROFILE_FILE}.txt", directory / f"{PROFILE_FILE}.json"
        text.parent.mkdir(parents=True, exist_ok=True)
        text.write_text(self.text())
        data.write_text(json.dumps(self.data(), indent=2) + "\n")
        return [text, data]


__all__ = ["PROFILE_ENV", "PROFILE_FILE", "CompileProfile", "Stage", "profiling_by_default"]
