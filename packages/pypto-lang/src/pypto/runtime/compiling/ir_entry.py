"""``pypto.ir.compile``: PyPTO's entry for compiling a program, offered to ``pypto.ir`` by this
package (the entry-point group ``pypto.ir``; see :mod:`pypto.ir.extensions`)."""

from __future__ import annotations

from pathlib import Path

from pypto.ir import BackendType, OptimizationStrategy, PassDumpLevel, Program, VerificationLevel
from pypto.runtime import settings
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
    profiling: bool = False,
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
    ``report/pipeline_profile.txt`` / ``.json``. ``verification_level`` None defers to
    ``PYPTO_VERIFY_LEVEL``, else ``BASIC``. ``skip_ptoas`` changes nothing: there is no
    PTO assembler here, so a compile always stops at the ``.pto`` files. A bad option is a
    ``ConfigError`` at the call.

    >>> out = ir.compile(program, strategy=ir.OptimizationStrategy.Default)  # doctest: +SKIP
    >>> compiled = ir.compile(program); compiled(a, b, out)  # doctest: +SKIP
    """
    config = RunConfig(
        platform=platform,
        backend_type=backend_type,
        strategy=strategy,
        dump_passes=dump_passes,
        save_kernels=True,
        save_kernels_dir=output_dir,
        compile_profiling=profiling,
        verification_level=settings.verification_level()
        if verification_level is None
        else verification_level,
    )
    return compile_program(program, config)  # save_kernels: its artifacts are written
