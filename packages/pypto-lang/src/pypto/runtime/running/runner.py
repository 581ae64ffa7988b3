"""``pypto.runtime.running.runner``: running a program and getting back all that the run produced.

``run(...)`` here returns a :class:`RunResult` (the outputs, the backend's report, the output
directory, the compile and run times); ``pypto.runtime.run(...)`` returns only what the entry
returns, as it always has.

>>> from pypto.runtime.running.runner import RunConfig, RunResult, run
>>> result = run(kernel, a, b, out, config=RunConfig(save_kernels=True))  # doctest: +SKIP
>>> result.report.total_cycles, result.output_dir  # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import Program, RunReport
from pypto.ir.backend import WorldReport
from pypto.runtime.compiling import artifacts
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program
from pypto.runtime.config import RunConfig


@dataclass
class RunResult:
    """What one :func:`run` produced.

    ``outputs``: what the entry returns (None when it returns nothing, or when ``codegen_only``
    ran nothing). ``report``: the backend's ``RunReport`` (a ``WorldReport`` for a distributed
    program; None when nothing ran). ``ran``: False
    for ``codegen_only``. ``output_dir``: the directory the run wrote its artifacts to, None when
    it wrote none (``compiled.output_dir`` writes them on demand). ``compile_seconds``: the wall
    time the compile took (the first compile of a cached program), ``run_seconds`` the wall time
    of this run (the backend's modeled time is in ``report``). ``cache``: where the compiled
    program came from (``"hit"``, ``"miss"``, ``"off"``). ``compiled``: the compiled program.
    """

    outputs: Any
    report: RunReport | None
    output_dir: Path | None
    compile_seconds: float
    run_seconds: float
    cache: str
    ran: bool
    compiled: CompiledProgram

    def __repr__(self) -> str:
        """One line per part, tensors by shape and dtype, the report by its headline (print
        ``result.report`` for its summary)."""
        done: Any = self.report
        if isinstance(done, WorldReport):
            report = f"{done.total_cycles} modeled cycles on {done.world_size} chip(s)"
        elif done:
            report = f"{done.total_cycles} modeled cycles on {done.platform}, {len(done.tasks)} task(s)"
        else:
            report = "None"
        return (
            f"RunResult(ran={self.ran}, cache={self.cache!r}, compile_seconds={self.compile_seconds:.3f}, "
            f"run_seconds={self.run_seconds:.3f},\n  outputs={_brief(self.outputs)},\n  report=<{report}>,\n"
            f"  output_dir={self.output_dir!r},\n  compiled={self.compiled!r})"
        )


def _brief(value: Any) -> str:
    """A value with each tensor shown by its shape and dtype, not its numbers."""
    if isinstance(value, list):
        return "[" + ", ".join(_brief(item) for item in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_brief(item) for item in value) + (",)" if len(value) == 1 else ")")
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"tensor(shape={list(value.shape)}, dtype={value.dtype})"
    return repr(value)


def run(program_or_jit: Any, *args: Any, config: RunConfig | None = None) -> RunResult:
    """Compile (if needed) and run ``program_or_jit`` (a ``@pl.jit`` function, a ``Program`` or a
    ``CompiledProgram``) on ``args``; returns a :class:`RunResult`."""
    compiled = _compiled(program_or_jit, args, config)
    config = config or compiled.config
    start = time.perf_counter()
    outputs = compiled.run(*args, config=config)
    seconds = time.perf_counter() - start
    ran = not config.codegen_only
    wrote = config.codegen_only or artifacts.wants_run_files(config)
    return RunResult(
        outputs=outputs,
        report=compiled.last_report if ran else None,
        output_dir=compiled.output_dir_for(config) if wrote else None,
        compile_seconds=compiled.compile_seconds,
        run_seconds=seconds,
        cache=compiled.cache,
        ran=ran,
        compiled=compiled,
    )


def _compiled(program_or_jit: Any, args: tuple[Any, ...], config: RunConfig | None) -> CompiledProgram:
    if isinstance(program_or_jit, CompiledProgram):
        return program_or_jit
    if isinstance(program_or_jit, Program):
        return compile_program(program_or_jit, config)
    if callable(getattr(program_or_jit, "compile", None)):
        compiled = program_or_jit.compile(*args, config=config)
        if isinstance(compiled, CompiledProgram):
            return compiled
    raise TypeError(
        "runner.run() takes a @pl.jit function, a Program or a CompiledProgram, got "
        f"{type(program_or_jit).__name__}"
    )


__all__ = ["RunConfig", "RunResult", "run"]
