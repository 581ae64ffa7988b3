"""``pypto.ir.compile``: PyPTO's entry for compiling a program, offered to ``pypto.ir`` by this
package (the entry-point group ``pypto.ir``; see :mod:`pypto.ir.extensions`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NoReturn

from pypto.ir import (
    BackendType,
    DiagnosticCheck,
    DiagnosticPhase,
    MemoryPlanner,
    OptimizationStrategy,
    PassDumpLevel,
    Program,
    VerificationLevel,
)
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program
from pypto.runtime.config import RunConfig, output_root
from pypto.runtime.settings import ConfigError

# The switches of PyPTO's code generation and of its PTO assembler (ptoas). This compiler hands
# each kernel to the backend as lowered IR (the ``ptoas/*.pto`` files are that IR printed): there
# is no assembler to skip or whose passes to dump, and the matmul tiler places L0C itself. They are
# checked, and change nothing. (``emit_source_loc`` does: each ``.pto`` statement names its line.)
CODEGEN_SWITCHES = ("skip_ptoas", "dump_ptoas_passes", "enable_pypto_l0c_double_buffer")


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
    memory_planner: MemoryPlanner | None = None,
    diagnostic_phase: DiagnosticPhase | None = None,
    disabled_diagnostics: Any = None,
    distributed_config: Any = None,
    analyze_auto_scopes_for_deps: bool = False,
    enable_pypto_l0c_double_buffer: bool | None = None,
    emit_source_loc: bool | None = None,
    dump_ptoas_passes: bool = False,
) -> CompiledProgram:
    """Lower ``program`` for ``backend_type``, write its artifacts and return the compiled program,
    which stands for its output directory where a path is asked for (``os.fspath``, ``/``).

    ``output_dir`` (default ``<PYPTO_PROG_BUILD_DIR or build_output>/<name>_<timestamp>``) receives
    the artifacts docs/runtime.md lists: ``program.py``, ``compiled.json``, one ``.pto`` per kernel
    in ``ptoas/``, ``memory_map.txt`` and, with ``dump_passes`` (True, or a :class:`PassDumpLevel`
    other than ``NONE``), the program after each pass in ``passes_dump/``. ``strategy`` picks the
    passes (``Default``: the platform backend's pipeline, else the default one). ``platform``
    picks one platform of the family (default: the session's, if it is one, else the family's
    simulator). ``verification_level`` None defers to ``PYPTO_VERIFY_LEVEL``, else ``BASIC``.
    ``memory_planner`` (:class:`pypto.ir.MemoryPlanner`) says who places on-chip buffers;
    ``diagnostic_phase`` (:class:`pypto.ir.DiagnosticPhase`; ``NONE`` silences every check) and
    ``disabled_diagnostics`` (:class:`pypto.ir.DiagnosticCheck` members) gate the warnings and
    performance hints. ``profiling`` times each compile stage and pass into
    ``report/pipeline_profile.txt`` / ``.json``. Left None, ``profiling`` defers to
    ``PYPTO_COMPILE_PROFILING``, ``diagnostic_phase`` to ``PYPTO_WARNING_LEVEL`` and
    ``emit_source_loc`` (each statement of the ``.pto`` files names its source line) to
    ``PYPTO_EMIT_PTO_LOC`` (docs/settings.md). ``analyze_auto_scopes_for_deps`` is checked and
    changes nothing: the runtime derives every edge of an AUTO scope from the tasks' tensors at
    submission, the edges a compiler analysis would prove. ``skip_ptoas``, ``dump_ptoas_passes``
    and ``enable_pypto_l0c_double_buffer`` steer PTO's code generation and
    assembler, which this compiler does not have (see :data:`CODEGEN_SWITCHES`): checked, no
    effect. ``distributed_config`` (a :class:`pypto.ir.distributed_compiled_program.DistributedConfig`)
    compiles a program whose entry is a HOST orchestrator for ``len(device_ids)`` chips and returns
    a ``DistributedCompiledProgram`` (docs/distributed.md). A bad option is a ``ConfigError`` at the
    call.

    >>> compiled = ir.compile(program, memory_planner=ir.MemoryPlanner.PTOAS)  # doctest: +SKIP
    >>> compiled(a, b, out)  # doctest: +SKIP
    """
    call = call_site()
    _check_program(program, call)
    for name, value in (
        ("skip_ptoas", skip_ptoas),
        ("dump_ptoas_passes", dump_ptoas_passes),
        ("analyze_auto_scopes_for_deps", analyze_auto_scopes_for_deps),
    ):
        _check_flag(name, value, call, optional=False)
    for name, optional_value in (
        ("enable_pypto_l0c_double_buffer", enable_pypto_l0c_double_buffer),
        ("emit_source_loc", emit_source_loc),
        ("profiling", profiling),
    ):
        _check_flag(name, optional_value, call, optional=True)
    if output_dir is None:
        output_dir = timestamped_dir(program.name)
    from_environment: dict[str, Any] = {  # None: the environment's setting (docs/settings.md)
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
        memory_planner=memory_planner,
        disabled_diagnostics=disabled_diagnostics,
        analyze_auto_scopes_for_deps=analyze_auto_scopes_for_deps,
        dump_ptoas_passes=dump_ptoas_passes,
        distributed_config=distributed_config,
        **{name: value for name, value in from_environment.items() if value is not None},
    )
    return compile_program(program, config)  # save_kernels: its artifacts are written


def timestamped_dir(name: str) -> Path:
    """``<output root>/<name>_<YYYYmmdd_HHMMSS>``, with ``_2``, ``_3``... when that exists already."""
    base = output_root() / f"{name}_{time.strftime('%Y%m%d_%H%M%S')}"
    chosen, n = base, 1
    while chosen.exists():
        n += 1
        chosen = base.with_name(f"{base.name}_{n}")
    return chosen


def _check_program(program: Any, call: Any) -> None:
    if isinstance(program, Program):
        return
    if callable(getattr(program, "lower", None)):
        hint = "compile a @pl.jit kernel with kernel.compile(*args), or ir.compile(kernel.lower(*args))"
    else:
        hint = "pass a @pl.program class, pl.parse(...) of one, or kernel.lower(*args) of a @pl.jit kernel"
    _fail(f"ir.compile takes a Program, got {type(program).__name__}", hint, call)


def _check_flag(name: str, value: Any, call: Any, optional: bool) -> None:
    if isinstance(value, bool) or (optional and value is None):
        return
    takes = "True, False or None" if optional else "True or False"
    _fail(
        f"ir.compile({name}=...) takes {takes}, got {value!r}",
        f"write ir.compile(program, {name}=False)",
        call,
    )


def _fail(message: str, hint: str, call: Any) -> NoReturn:
    err = ConfigError(message, span=call, hint=hint)
    if call is None:
        raise err
    raise_at_user_line(err, "ir.compile")


__all__ = ["CODEGEN_SWITCHES", "DiagnosticCheck", "compile", "timestamped_dir"]
