"""``pypto.ir.compile``: PyPTO's entry for compiling a program, offered to ``pypto.ir`` by this
package (the entry-point group ``pypto.ir``; see :mod:`pypto.ir.extensions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pypto.ir import (
    BackendType,
    DiagnosticPhase,
    OptimizationStrategy,
    PassDumpLevel,
    Program,
    VerificationLevel,
)
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program
from pypto.runtime.config import RunConfig


def compile(  # PyPTO's name: pypto.ir.compile
    program: Program,
    strategy: OptimizationStrategy = OptimizationStrategy.Default,
    dump_passes: bool | PassDumpLevel = True,
    backend_type: BackendType = BackendType.Ascend910B,
    output_dir: str | Path | None = None,
    platform: str | None = None,
    verification_level: VerificationLevel | None = None,
    skip_ptoas: bool = False,
    profiling: bool | None = None,
    diagnostic_phase: DiagnosticPhase | None = None,
    emit_source_loc: bool | None = None,
) -> CompiledProgram:
    """Lower ``program`` for ``backend_type``, write its artifacts and return the compiled program,
    which stands for its output directory where a path is asked for (``os.fspath``, ``/``).

    The directory (``output_dir``, else ``./build_output/<program>_<key>/``) holds the artifacts
    docs/compiler.md lists ("Output directory"): ``program.py``, one ``.pto`` per kernel in
    ``ptoas/``, ``memory_map.txt`` and, with ``dump_passes`` (True, or a :class:`PassDumpLevel`
    other than ``NONE``), the program after each pass in ``passes_dump/``. ``strategy`` picks the
    passes (``Default``: the platform backend's pipeline, else the default one). ``platform``
    picks one platform of the family (default: the session's, if it is one, else the family's
    simulator). ``profiling`` times each compile stage and pass into
    ``report/pipeline_profile.txt`` / ``.json``. Each option left None defers to its environment
    setting (docs/settings.md): ``profiling`` to ``PYPTO_COMPILE_PROFILING`` (else off),
    ``verification_level`` to ``PYPTO_VERIFY_LEVEL`` (else ``BASIC``), ``diagnostic_phase`` to
    ``PYPTO_WARNING_LEVEL`` (else ``PRE_PIPELINE``; ``NONE`` drops the compile warnings and
    performance hints), ``emit_source_loc`` (each statement's source line in the ``.pto`` files)
    to ``PYPTO_EMIT_PTO_LOC`` (else on). ``skip_ptoas`` changes nothing: there is no
    PTO assembler here, so a compile always stops at the ``.pto`` files. A bad option is a
    ``ConfigError`` at the call.

    >>> out = ir.compile(program, strategy=ir.OptimizationStrategy.Default)  # doctest: +SKIP
    >>> compiled = ir.compile(program); compiled(a, b, out)  # doctest: +SKIP
    """
    defaults: dict[str, Any] = {
        "compile_profiling": profiling,
        "verification_level": verification_level,
        "diagnostic_phase": diagnostic_phase,
        "emit_source_loc": emit_source_loc,
    }
    config = RunConfig(
        platform=platform,
        backend_type=backend_type,
        strategy=strategy,
        dump_passes=dump_passes,
        save_kernels=True,
        save_kernels_dir=output_dir,
        **{name: value for name, value in defaults.items() if value is not None},  # None: the env's
    )
    return compile_program(program, config)  # save_kernels: its artifacts are written
