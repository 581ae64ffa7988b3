"""The pass manager: a named, ordered pipeline of passes over a ``Program``."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pypto.ir import Program, Target, print_ir, verify_program
from pypto.ir.errors import CompileWarning


@dataclass
class PassContext:
    """What every pass may read: the target, user options, and a sink for warnings."""

    target: Target
    options: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.diagnostics.append(message)
        warnings.warn(message, CompileWarning, stacklevel=2)


class Pass(Protocol):
    name: str

    def run(self, program: Program, ctx: PassContext) -> Program: ...


# Pass name -> "module:Class", imported only when the pass is built (the CLI lists names cheaply).
PASS_REGISTRY: dict[str, str] = {
    "OutlineScopes": "pypto.passes.outline:OutlineScopes",
    "AutoTileMatmul": "pypto.passes.autotile:AutoTileMatmul",
    "ConvertTensorToTileOps": "pypto.passes.tensor_to_tile:ConvertTensorToTileOps",
    "InferTileMemorySpace": "pypto.passes.memory_space:InferTileMemorySpace",
    "LowerAutoVectorSplit": "pypto.passes.vector_split:LowerAutoVectorSplit",
    "ExpandMixedKernel": "pypto.passes.expand_mixed:ExpandMixedKernel",
    "StampTfree": "pypto.passes.tfree:StampTfree",
    "AllocateMemory": "pypto.passes.allocate:AllocateMemory",
    "DeriveTaskDependencies": "pypto.passes.task_deps:DeriveTaskDependencies",
}

DEFAULT_PIPELINE: tuple[str, ...] = (
    "OutlineScopes",
    "AutoTileMatmul",
    "ConvertTensorToTileOps",
    "InferTileMemorySpace",
    "LowerAutoVectorSplit",
    "ExpandMixedKernel",
    "StampTfree",
    "AllocateMemory",
    "DeriveTaskDependencies",
)


def build_pass(name: str, **options: Any) -> Pass:
    try:
        module_name, cls_name = PASS_REGISTRY[name].split(":")
    except KeyError:
        raise ValueError(f"unknown pass {name!r}; known passes: {', '.join(PASS_REGISTRY)}") from None
    cls: type[Pass] = getattr(importlib.import_module(module_name), cls_name)
    return cls(**options)


def default_pipeline() -> list[Pass]:
    return [build_pass(name) for name in DEFAULT_PIPELINE]


Instrument = Callable[[int, Pass, Program], None]


@dataclass
class PassManager:
    """Runs ``pipeline`` in order; verifies after each pass and calls each instrument."""

    pipeline: Sequence[Pass]
    instruments: Sequence[Instrument] = ()
    verify: bool = True

    def run(self, program: Program, ctx: PassContext) -> Program:
        if self.verify:
            verify_program(program)
        for index, p in enumerate(self.pipeline, start=1):
            program = p.run(program, ctx)
            if self.verify:
                verify_program(program)
            for instrument in self.instruments:
                instrument(index, p, program)
        return program


def dump_to(directory: str | Path) -> Instrument:
    """An instrument writing ``NN_after_<PassName>.py`` for each pass into ``directory``."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)

    def instrument(index: int, p: Pass, program: Program) -> None:
        (path / f"{index:02d}_after_{p.name}.py").write_text(print_ir(program))

    return instrument


def lower(
    program: Program,
    target: Target,
    *,
    options: dict[str, Any] | None = None,
    dump_dir: str | Path | None = None,
    verify: bool = True,
) -> Program:
    """Run the default pipeline: a parsed program in, a program a backend can run out."""
    instruments = [dump_to(dump_dir)] if dump_dir else []
    ctx = PassContext(target, dict(options or {}))
    return PassManager(default_pipeline(), instruments, verify).run(program, ctx)
