"""``pypto.ir.compile`` and ``pypto.ir.PassManager``: the names PyPTO code reaches through
``pypto.ir`` for things the floors above provide.

The IR floor knows nothing of passes or platforms (arrows point down: ir <- passes <- lang), so
these import ``pypto.passes`` and ``pypto.runtime`` only when called: ``import pypto.ir`` works
with pypto-ir alone, and ``pypto.ir.compile`` needs pypto-lang installed (it compiles through the
runtime's platform registry, cache and artifact writer).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pypto.ir.compile_options import BackendType, OptimizationStrategy, PassDumpLevel, VerificationLevel
from pypto.ir.errors import PyptoError
from pypto.ir.nodes import Program
from pypto.ir.tracebacks import call_site

if TYPE_CHECKING:
    from pypto.passes import PassManager as PassManager
    from pypto.runtime import CompiledProgram


class MissingPackageError(PyptoError, ImportError):
    """A name of ``pypto.ir`` needs a package of a floor above that is not installed."""


def compile(
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
    try:
        from pypto.runtime import RunConfig, compile_program, settings
    except ImportError as err:
        raise _missing("pypto.ir.compile", "pypto-lang") from err
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


def pass_manager_class() -> type[PassManager]:
    """``pypto.passes.PassManager``, imported when ``pypto.ir.PassManager`` is first read."""
    try:
        from pypto.passes import PassManager as PassManager
    except ImportError as err:
        raise _missing("pypto.ir.PassManager", "pypto-passes") from err
    return PassManager


def _missing(name: str, distribution: str) -> MissingPackageError:
    return MissingPackageError(
        f"{name} needs {distribution}, which is not installed",
        call_site(),
        hint=f"pip install {distribution}",
    )


__all__: list[str] = ["MissingPackageError", "compile", "pass_manager_class"]
