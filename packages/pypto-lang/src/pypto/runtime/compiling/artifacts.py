"""The output directory of a compiled program: the files this platform produces for it, laid out
as PyPTO's manual lays out a compile's output (docs/compiler.md, "Output directory").

When compiled:

- ``program.py``: the lowered program as ``pl`` source (``pypto.ir.printer.print_program``);
- ``compiled.json``: what rebuilds the compiled program from the directory with ``program.py``
  (``CompiledProgram.from_dir``): the platform, the chip family, the entry's call shape and the
  scalar constants compiled in (:func:`read_meta`);
- ``ptoas/<kernel>.pto``: one file per kernel that runs on a core (AIC, AIV, InCore), the lowered
  kernel as this compiler hands it to a backend (:func:`pto_text`): no PTO assembly (there is no
  ``ptoas`` here), but the kernel's printed IR with its memory plan, each tile's address;
- ``memory_map.txt``: each kernel's buffers, space by space (address, bytes), and each space's peak;
- ``report/perf_hints.log``: the compiler's performance hints, when it has any;
- ``report/pipeline_profile.txt`` / ``.json``: the wall time of each compile stage and pass, with
  ``RunConfig(compile_profiling=True)``;
- ``passes_dump/``: the program after each pass, when pass dumps were asked for.

After a run: ``report.json`` and ``report.txt`` (the backend's RunReport), and on request, in
``dfx_outputs/``: ``chip_swimlane_records.json`` (``enable_chip_swimlane`` at its level, or
``enable_profiling`` in full, as in the profile
directory, when the run writes here anyway), ``deps.json`` (``enable_dep_gen``),
``scope_stats/scope_stats.jsonl`` and ``scope_stats/scope_stats.png`` (``enable_scope_stats``,
:mod:`pypto.runtime.reports.scope_stats`) and ``pmu.csv`` (``enable_pmu``, :mod:`pypto.runtime.reports.pmu`);
during a run, ``args_dump/args_dump.json`` and ``args_dump/args_dump.bin`` (``enable_dump_args``,
:mod:`pypto.runtime.reports.args_dump`).
Every figure in them is modeled by the backend's cost model, not measured.

The directory is ``RunConfig.save_kernels_dir``, else ``<root>/<program>_<key>/`` where ``<root>`` is
``PYPTO_PROG_BUILD_DIR`` or ``./build_output`` and ``<key>`` starts the compile cache key of the
program (the same specialization, the same directory). Nothing is written on a plain call: see
:func:`wants_run_files` for when files are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pypto.ir import Direction, Function, FunctionKind, Program, PyptoError, RunReport, Target, log
from pypto.ir.printer import print_function, print_program
from pypto.runtime.compiling.cache import Uncacheable, cache_key
from pypto.runtime.config import DEFAULT_OUTPUT_ROOT, OUTPUT_ROOT_ENV, PASSES_DUMP, RunConfig, output_root
from pypto.runtime.reports.args_dump import ARGS_DUMP_DIR
from pypto.runtime.reports.memory_map import memory_map
from pypto.runtime.reports.pmu import pmu_csv
from pypto.runtime.reports.scope_stats import write_scope_stats
from pypto.runtime.reports.swimlane import swimlane_records

KEY_CHARS = 12  # of the key in a default directory's name: enough to tell specializations apart
PROGRAM_FILE, MEMORY_MAP_FILE, PASSES_DIR = "program.py", "memory_map.txt", PASSES_DUMP
META_FILE, META_FORMAT, META_VERSION = "compiled.json", "pypto-compiled", 1
PTO_DIR, PTO_SUFFIX = "ptoas", ".pto"
HINTS_FILE = "report/perf_hints.log"
PIPELINE_PROFILE = "report/pipeline_profile"  # .txt and .json
REPORT_JSON, REPORT_TEXT = "report.json", "report.txt"
DFX_DIR = "dfx_outputs"  # what a run writes on request
DEPS_FILE, PMU_FILE, SCOPE_STATS_DIR = f"{DFX_DIR}/deps.json", f"{DFX_DIR}/pmu.csv", f"{DFX_DIR}/scope_stats"
SWIMLANE_RECORDS = f"{DFX_DIR}/chip_swimlane_records.json"
# What a .pto file here says it is, so that no one mistakes it for PTO assembly.
PTO_FORMAT, PTO_VERSION = "pypto-kernel", 1
# The kinds of function that run on a core, each with a .pto of its own.
KERNEL_KINDS = (FunctionKind.AIC, FunctionKind.AIV, FunctionKind.InCore)
# What deps.json says it is, so that a viewer tells it from other JSON (``pypto deps view``).
DEPS_FORMAT, DEPS_VERSION = "pypto-deps", 1


def directory_key(program: Program, target: Target, config: RunConfig, provider: str) -> str:
    """The key naming a default output directory: the compile cache key of the parsed program,
    or (for a program with no stable fingerprint) a hash of its printed source and platform."""
    try:
        return cache_key(program, target, config, provider)
    except Uncacheable:
        text = f"{config.platform}\n{print_program(program)}"
        return hashlib.sha256(text.encode()).hexdigest()


def output_dir(config: RunConfig, program_name: str, key: str) -> Path:
    """Where the artifacts of ``program_name`` compiled under ``config`` go."""
    if config.save_kernels_dir is not None:
        return Path(config.save_kernels_dir)
    return output_root() / f"{program_name}_{key[:KEY_CHARS]}"


def write_compiled(
    directory: Path,
    lowered: Program,
    target: Target,
    config: RunConfig,
    constants: Mapping[str, Any] | None = None,
) -> None:
    """``program.py``, ``compiled.json``, ``ptoas/<kernel>.pto``, ``memory_map.txt``,
    ``report/perf_hints.log`` and (when dumps were written elsewhere) a copy of the pass dumps in
    ``passes_dump/``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PROGRAM_FILE).write_text(print_program(lowered))
    _json(directory / META_FILE, meta_data(lowered, config, constants or {}))
    (directory / MEMORY_MAP_FILE).write_text(memory_map(lowered.functions.values(), target) + "\n")
    write_kernels(directory, lowered, target, config.emit_source_loc)
    hints = [f"{fn.name}: {hint}" for fn in lowered.functions.values() for hint in fn.attrs.get("hints", ())]
    if hints and config.diagnostic_phase.enabled:
        (directory / HINTS_FILE).parent.mkdir(exist_ok=True)
        (directory / HINTS_FILE).write_text("\n".join(hints) + "\n")
    dumps = config.dump_dir(lowered.name, directory)
    passes = directory / PASSES_DIR
    if dumps is not None and dumps.is_dir() and dumps.resolve() != passes.resolve():
        passes.mkdir(exist_ok=True)
        for dump in sorted(dumps.glob("*.py")):
            shutil.copyfile(dump, passes / dump.name)
    log.debug(f"artifacts of {lowered.name} written to {directory}")


def meta_data(lowered: Program, config: RunConfig, constants: Mapping[str, Any]) -> dict[str, Any]:
    """``compiled.json``: the platform and chip family it was compiled for, the entry's name,
    parameters and outputs, and the scalar constants compiled in (their values a run must pass)."""
    entry = lowered.entry_function
    return {
        "format": META_FORMAT,
        "version": META_VERSION,
        "program": lowered.name,
        "platform": config.platform_name,
        "backend_type": None if config.backend_type is None else config.backend_type.name,
        "entry": entry.name,
        "param_names": [p.var.name for p in entry.params],
        "output_indices": [i for i, p in enumerate(entry.params) if p.direction is not Direction.In],
        "constants": {name: value for name, value in constants.items() if _json_scalar(value)},
    }


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def read_meta(directory: Path) -> dict[str, Any]:
    """The ``compiled.json`` of an artifact directory; an ArtifactError when ``directory`` is not
    one (no such directory, no ``compiled.json`` / ``program.py``, or a file of another kind)."""
    where = Path(directory)
    if not where.is_dir():
        raise ArtifactError(
            f"{str(where)!r} is not a directory",
            hint="pass the output directory of a compile (compiled.output_dir)",
        )
    missing = [name for name in (META_FILE, PROGRAM_FILE) if not (where / name).is_file()]
    if missing:
        raise ArtifactError(
            f"{str(where)!r} is not an artifact directory of a compiled program: it has no "
            f"{' and no '.join(missing)}",
            hint="pass the output directory of a compile (compiled.output_dir); a directory written "
            "before compiled.json existed is rebuilt by compiling again",
        )
    try:
        meta = json.loads((where / META_FILE).read_text())
    except json.JSONDecodeError as err:
        raise ArtifactError(
            f"{str(where / META_FILE)!r} is not JSON ({err.msg} at line {err.lineno})",
            hint="compile again to rewrite the artifact directory",
        ) from None
    if (
        not isinstance(meta, dict)
        or meta.get("format") != META_FORMAT
        or not isinstance(meta.get("platform"), str)
    ):
        raise ArtifactError(
            f"{str(where / META_FILE)!r} is not the description of a compiled program",
            hint="compile again to rewrite the artifact directory",
        )
    if meta.get("version") != META_VERSION:
        raise ArtifactError(
            f"{str(where / META_FILE)!r} is of version {meta.get('version')!r}, this PyPTO reads "
            f"version {META_VERSION}",
            hint="compile again with this PyPTO to rewrite the artifact directory",
        )
    return meta


class ArtifactError(PyptoError, ValueError):
    """A directory handed to ``CompiledProgram.from_dir`` that holds no compiled program."""


def write_kernels(directory: Path, lowered: Program, target: Target, locations: bool = True) -> list[Path]:
    """One ``ptoas/<kernel>.pto`` per kernel that runs on a core; returns their paths.
    ``locations`` (``RunConfig.emit_source_loc``): each statement names its source line."""
    kernels = [fn for fn in lowered.functions.values() if fn.kind in KERNEL_KINDS]
    if not kernels:
        return []
    folder = directory / PTO_DIR
    folder.mkdir(exist_ok=True)
    written = []
    for fn in kernels:
        path = folder / f"{fn.name}{PTO_SUFFIX}"
        path.write_text(pto_text(fn, lowered.name, target, locations))
        written.append(path)
    return written


def pto_text(kernel: Function, program: str, target: Target, locations: bool = False) -> str:
    """The ``.pto`` file of ``kernel``: a header of ``#`` lines (what the file is, the kernel, its
    kind, program and chip, its memory map), then the kernel as ``pl`` source, every tile with its
    memory space and address as the memory plan placed it; with ``locations``, each statement's
    line ends with ``# loc: file:line:col``, the kernel source it came from."""
    header = [
        f"# {PTO_FORMAT} {PTO_VERSION}: a lowered kernel of PyPTO (pl source), not PTO assembly",
        f"# kernel: {kernel.name}",
        f"# kind: {kernel.kind.value}",
        f"# program: {program}",
        f"# chip: {target.name}",
    ]
    plan = memory_map([kernel], target).splitlines()[1:]  # its first line names the kernel again
    header += ["# memory:", *(f"# {line.strip()}" for line in plan if line.strip())]
    return "\n".join(header) + "\n\n" + print_function(kernel, locations=locations) + "\n"


def wants_run_files(config: RunConfig) -> bool:
    """Whether a run under ``config`` writes files to the output directory: with ``save_kernels``
    (or ``save_kernels_dir``), ``enable_dep_gen``, ``enable_scope_stats``, ``enable_pmu``, an
    ``enable_chip_swimlane`` level (each DFX capture keeps its ``dfx_outputs/``, as PyPTO's does) or
    ``enable_dump_args`` (whose dump the run writes as it goes: :func:`args_dump_dir`). A run
    profiled with ``enable_profiling`` alone writes its profile to the profile directory."""
    return (
        config.save_kernels
        or config.enable_dep_gen
        or config.enable_scope_stats
        or config.enable_pmu > 0
        or config.enable_chip_swimlane > 0
        or config.enable_dump_args > 0
    )


def args_dump_dir(directory: Path) -> Path:
    """Where a run writes its argument dump in the output directory ``directory``."""
    return directory / ARGS_DUMP_DIR


def write_run(
    directory: Path, report: RunReport, config: RunConfig, program: str | None = None
) -> list[Path]:
    """The files of one run of ``program``: the report always, the others as ``config`` asks;
    returns them. ``program`` (its name) is recorded in ``deps.json`` and heads the pictures."""
    title = program or ""
    directory.mkdir(parents=True, exist_ok=True)
    written = [_json(directory / REPORT_JSON, report_data(report))]
    (directory / REPORT_TEXT).write_text(report.summary() + "\n")
    written.append(directory / REPORT_TEXT)
    swimlane = config.enable_chip_swimlane or config.enable_profiling  # profiling: the full records
    if config.enable_dep_gen or config.enable_scope_stats or config.enable_pmu or swimlane:
        (directory / DFX_DIR).mkdir(exist_ok=True)
    if swimlane:
        level = int(config.enable_chip_swimlane) or 4
        written.append(_json(directory / SWIMLANE_RECORDS, swimlane_records(report, title, level)))
    if config.enable_dep_gen:
        written.append(_json(directory / DEPS_FILE, deps_file_data(report, program)))
    if config.enable_scope_stats:
        (directory / SCOPE_STATS_DIR).mkdir(exist_ok=True)
        written += write_scope_stats(report, directory / SCOPE_STATS_DIR, title)
    if config.enable_pmu:
        (directory / PMU_FILE).write_text(pmu_csv(report, config.enable_pmu))
        written.append(directory / PMU_FILE)
    return written


def report_data(report: RunReport) -> dict[str, Any]:
    """The report's figures as JSON data: totals, per-core cycles, tasks and edges (the timeline,
    rings and transfers are in the profile, ``RunConfig(enable_profiling=True)``)."""
    return {
        "platform": report.platform,
        "device_id": report.device_id,
        "modeled": report.modeled,
        "clock_mhz": report.clock_mhz,
        "total_cycles": report.total_cycles,
        "total_us": report.total_us,
        "busy_cycles": dict(report.busy_cycles),
        "stall_cycles": dict(report.stall_cycles),
        "kernel_cycles": report.kernel_cycles(),
        "overlap": report.overlap,
        **deps_data(report),
    }


def deps_data(report: RunReport) -> dict[str, Any]:
    """The task graph the run built: each task block (kernel, core group, modeled start and end)
    and each dependency edge (``tensor`` is None for one declared with ``deps=``)."""
    return {
        "tasks": [dataclasses.asdict(task) for task in report.tasks],
        "edges": [{**dataclasses.asdict(edge), "declared": edge.declared} for edge in report.edges],
    }


def deps_file_data(report: RunReport, program: str | None = None) -> dict[str, Any]:
    """``deps.json``: what the file is, the program, the platform, its clock and the modeled
    total (for a viewer to scale times by), then the tasks and the edges (:func:`deps_data`)."""
    return {
        "format": DEPS_FORMAT,
        "version": DEPS_VERSION,
        "program": program,
        "platform": report.platform,
        "modeled": report.modeled,
        "clock_mhz": report.clock_mhz,
        "total_cycles": report.total_cycles,
        **deps_data(report),
    }


def _json(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


__all__ = [
    "DEFAULT_OUTPUT_ROOT",
    "OUTPUT_ROOT_ENV",
    "ArtifactError",
    "args_dump_dir",
    "directory_key",
    "output_dir",
    "output_root",
    "pto_text",
    "read_meta",
    "wants_run_files",
    "write_compiled",
    "write_kernels",
    "write_run",
]
