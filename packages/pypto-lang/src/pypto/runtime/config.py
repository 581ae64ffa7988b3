"""``RunConfig``: where and how a kernel is compiled and run."""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

from pypto.ir import (
    BackendType,
    DiagnosticCheck,
    DiagnosticPhase,
    MemoryPlanner,
    OptimizationStrategy,
    PassDumpLevel,
    PyptoError,
    SourceSpan,
    VerificationLevel,
)
from pypto.ir.argdump import DUMP_LEVELS
from pypto.ir.breakpoints import BREAK_AT, BREAK_AT_FORM
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.passes import PassRegistry, Pipeline, PipelineError, parse_text, resolve
from pypto.passes.pipeline import known_passes
from pypto.runtime import settings
from pypto.runtime.compiling.compile_profile import profiling_by_default
from pypto.runtime.compiling.pipelines import literal_start, parse_user_pipeline, pass_registry
from pypto.runtime.platforms.families import backend_type_of, check_supported, default_platform, platforms_of
from pypto.runtime.reports.pmu import LEVELS as PMU_LEVELS
from pypto.runtime.reports.profiling import check_output_dir, check_profile_dir
from pypto.runtime.running import rings
from pypto.runtime.running.rings import RING_FIELDS, Sizes
from pypto.runtime.settings import DEFAULT, DEFAULT_PROFILE_ROOT, PROFILE_ENV, ConfigError, Origin, Setting

# The root of the default output directories (``<root>/<program>_<key>/``), and the variable that
# moves it; dump_passes=True writes into the output directory's ``passes_dump/``.
DEFAULT_OUTPUT_ROOT = Path("build_output")
OUTPUT_ROOT_ENV = "PYPTO_PROG_BUILD_DIR"
PASSES_DUMP = "passes_dump"

__all__ = [
    "DEFAULT_OUTPUT_ROOT",
    "DEFAULT_PROFILE_ROOT",
    "OUTPUT_ROOT_ENV",
    "PASSES_DUMP",
    "PROFILE_ENV",
    "RunConfig",
    "UnknownOptionError",
    "VerificationLevel",
    "device_count",
    "output_root",
    "output_root_setting",
]


def output_root() -> Path:
    """Where default output directories go: ``PYPTO_PROG_BUILD_DIR``, else ``./build_output``."""
    return output_root_setting().value


def output_root_setting() -> Setting[Path]:
    """:func:`output_root` and where it came from; a ``PYPTO_PROG_BUILD_DIR`` that names a file is
    a ConfigError naming the variable."""
    chosen = os.environ.get(OUTPUT_ROOT_ENV, "").strip()
    if not chosen:
        return Setting(DEFAULT_OUTPUT_ROOT, DEFAULT)
    path = Path(chosen).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"{OUTPUT_ROOT_ENV}={chosen!r} is a file, not a directory",
            hint=f"point {OUTPUT_ROOT_ENV} at a directory (made if missing), or unset it for ./build_output",
        )
    return Setting(path, Origin(OUTPUT_ROOT_ENV))


def device_count(platform: str) -> int | None:
    """How many devices ``platform``'s backend has (its ``device_count``, else 1), or None when any
    ``device_id`` goes: a simulator (it models every device as its one chip), a platform that runs
    on its chip's simulator, or one that is not registered."""
    from pypto.runtime.platforms.registry import (
        is_simulator,
        registry,
    )  # the registry imports this module's settings

    try:
        backend = registry().backend(platform)
    except PyptoError:
        return None
    if is_simulator(backend):
        return None
    return int(getattr(backend, "device_count", 1))


# The former name of enable_chip_swimlane: a constructor keyword and a property, not a field, so
# that dataclasses.replace(cfg, enable_chip_swimlane=N) is not overridden by it.
L2_SWIMLANE = "enable_l2_swimlane"
SWIMLANE_LEVELS = range(5)  # 0 off .. 4 full; True is 4


def _l2_alias(kwargs: dict[str, Any]) -> None:
    """``RunConfig(enable_l2_swimlane=...)``: the old spelling of ``enable_chip_swimlane``; warns,
    and is an error beside the new one."""
    value = kwargs.pop(L2_SWIMLANE)
    if "enable_chip_swimlane" in kwargs:
        call = call_site()
        _raise_at(
            call,
            ConfigError(
                "RunConfig got both enable_l2_swimlane and enable_chip_swimlane (the same option)",
                span=call,
                hint="pass only enable_chip_swimlane=LEVEL (enable_l2_swimlane is its former name)",
            ),
        )
    warnings.warn(
        "RunConfig(enable_l2_swimlane=...) is deprecated: write enable_chip_swimlane=... (same values)",
        DeprecationWarning,
        stacklevel=3,
    )
    kwargs["enable_chip_swimlane"] = value


class UnknownOptionError(ConfigError, TypeError):
    """``RunConfig(platfrom=...)``: an option ``RunConfig`` does not have. A ``TypeError``, as
    Python's own for an unknown keyword, and a ``ConfigError`` at the user's call."""


class _ConfigFields(type):
    """``RunConfig(platfrom=...)``: an unknown option is an UnknownOptionError at the user's call
    that names the known options and says which one was meant, not the bare TypeError of the
    dataclass's ``__init__``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        known = [f.name for f in fields(cls) if f.init]  # type: ignore[arg-type]
        if L2_SWIMLANE in kwargs:
            _l2_alias(kwargs)
        unknown = [name for name in kwargs if name not in known]
        if unknown or len(args) > len(known):
            call = call_site()
            what = f"option {unknown[0]!r}" if unknown else f"{len(args)} positional options"
            close = difflib.get_close_matches(unknown[0], known, n=1) if unknown else []
            hint = f"did you mean {close[0]}=?" if close else "pass the options by name"
            message = f"RunConfig has no {what}; its options: {', '.join(known)}"
            _raise_at(call, UnknownOptionError(message, span=call, hint=hint))
        return super().__call__(*args, **kwargs)


@dataclass
class RunConfig(metaclass=_ConfigFields):
    """Options for compiling and running a kernel.

    ``platform`` names a registered backend (``"a2a3sim"``) or a compile-only target
    (``"a2a3"``); None takes the session default (``pypto run -p``, ``PYPTO_PLATFORM``,
    ``[tool.pypto] platform``, else ``"a2a3sim"``: see :mod:`pypto.runtime.settings`).
    ``backend_type`` (a :class:`pypto.backend.BackendType`) names the chip family instead: without
    ``platform`` it picks the session default if that is of the family, else the family's
    simulator; with a ``platform`` of another family it is an error, and a family no installed
    backend provides (``Ascend950``) is an :class:`pypto.backend.UnsupportedBackendError`.
    ``rtol`` / ``atol`` go to the backend. ``device_id`` picks the device a run uses (an int >= 0
    below the backend's ``device_count``; on a simulator any int >= 0, recorded in the report: it
    models every device as its one chip).
    ``dump_passes`` is False, True (dump into the output directory's ``passes_dump/``), a
    directory, or a :class:`pypto.ir.PassDumpLevel` (``NONE`` is False; ``CONCISE`` and
    ``EXPLICIT`` are True: the printed IR always writes memory spaces and layouts out).
    ``enable_profiling`` writes a profile of every run (see :meth:`profile_path`);
    ``enable_chip_swimlane`` is its alias and ``profile_dir`` implies it; a ``profile_dir``
    that cannot be created is an error here, before anything runs. ``options`` go to
    the passes and the backend as they are. ``pipeline`` names the passes to run: a pipeline
    string (``"outline-scopes,tile-matmul{k_block=128}"``, see ``docs/compiler.md``) or a list of
    pass names; None runs the pipeline the platform's backend asks for, else the default one.

    Artifacts (see ``docs/compiler.md``, "Output directory"): ``save_kernels`` writes the compiled
    program's artifacts (``program.py``, ``memory_map.txt``, ``report.json`` after a run) to its
    output directory when it is compiled and after each run; ``save_kernels_dir`` is that
    directory (default ``./build_output/<program>_<key>/``) and implies ``save_kernels``.
    ``codegen_only`` compiles and writes the artifacts and runs nothing: a call returns None and
    leaves the output tensors as they were. After a run, into ``dfx_outputs/`` of the output
    directory, ``enable_dep_gen`` writes ``deps.json`` (the task graph the run built),
    ``enable_scope_stats`` ``scope_stats/scope_stats.jsonl`` and ``.png`` (each launch's modeled
    cycles and the high-water marks of the task window, the runtime rings, the pipe rings and the
    cores' heaps) and ``enable_pmu`` ``pmu.csv`` (1: each core's modeled busy and stall cycles per
    pipe; 2: also per op; True is 1). ``enable_dump_args`` dumps task arguments into
    ``dfx_outputs/args_dump/`` during the run (1: the tensors marked with ``pl.dump_tag`` /
    ``dumps=``; 2: every task's inputs and outputs; 0, the default, nothing; True is 1; see
    :mod:`pypto.runtime.reports.args_dump`).
    ``verification_level`` (:class:`pypto.ir.VerificationLevel`): ``NONE`` skips the verifier
    between passes, ``BASIC`` (default) runs it, ``ROUNDTRIP`` also prints the program after each
    pass, parses it back and compares. ``strategy`` (:class:`pypto.ir.OptimizationStrategy`) picks
    the pass pipeline (``Default``: ``pipeline``, else the backend's, else the default one).

    Run-time fields (not part of :meth:`cache_key`): ``ring_task_window`` (task slots, a power of
    two >= 4), ``ring_heap`` (bytes, a power of two >= 1024) and ``ring_dep_pool`` (edge entries
    in [4, 2**31-1]) size the runtime's four rings (:mod:`pypto.runtime.running.rings`): an int for every
    ring or a list of 4 (0: that ring's default), None for ``PTO2_RING_*`` or the backend's
    default. ``aicpu_thread_num`` (an int >= 1) is handed to the backend. ``compile_profiling``
    (default: ``PYPTO_COMPILE_PROFILING``) times each compile stage and pass into the output
    directory's ``report/pipeline_profile.txt`` / ``.json`` (:mod:`pypto.runtime.compiling.compile_profile`).
    ``diagnostic_phase`` (:class:`pypto.ir.DiagnosticPhase`, or its name; default:
    ``PYPTO_WARNING_LEVEL``, else ``PrePipeline``): ``NONE`` silences the compile's
    ``CompileWarning`` s and performance hints. ``emit_source_loc`` (default:
    ``PYPTO_EMIT_PTO_LOC``, else True) ends each statement of the artifacts' ``.pto`` files with the
    kernel source line it came from (``# loc: kernel.py:12:9``).

    Harness fields, read by ``pypto.runtime.run()`` only (``compiled(...)`` and
    ``ChipWorker.run(...)`` ignore them): ``rtol`` / ``atol`` and ``golden_data_dir``, where the
    goldens of the outputs are kept (:mod:`pypto.runtime.running.golden`).

    ``enable_chip_swimlane`` is a swimlane collection level 0-4 (True is 4, False 0) written to
    ``dfx_outputs/chip_swimlane_records.json`` after each run; a level > 0 implies
    ``enable_profiling``; ``enable_l2_swimlane=`` is its former name (a DeprecationWarning).
    ``memory_planner`` (:class:`pypto.ir.MemoryPlanner`), ``diagnostic_phase``
    (:class:`pypto.ir.DiagnosticPhase`) and ``disabled_diagnostics`` (:class:`pypto.ir.DiagnosticCheck`
    members, kept as a frozenset) change the lowered program and are part of :meth:`cache_key`;
    ``analyze_auto_scopes_for_deps`` and ``dump_ptoas_passes`` are checked and change nothing here;
    ``distributed_config`` (a :class:`pypto.ir.distributed_compiled_program.DistributedConfig`)
    compiles a HOST-level program for ``len(device_ids)`` chips: compiling gives a
    ``DistributedCompiledProgram`` (docs/distributed.md). See
    ``docs/runtime.md`` for every field.

    ``break_at`` (``"kernel.py:31"``, optionally ``"kernel.py:31@aiv1"``) stops a simulator run
    where a core reaches the first op of that line and opens the kernel debugger
    (docs/debugging.md); a line no op is on is an error when the run starts.

    ``timing_only`` (a run-time field, default False; ``pypto run --timing-only``) asks a
    simulator for the modeled time alone: every cycle, task and diagnostic of a full run, without
    computing the tiles' values. The scalars that steer the run (loop bounds, branches, offsets,
    predicates, and what they read) are still computed; the output tensors keep whatever they
    held. It cannot be combined with a golden comparison (``golden_data_dir``, ``rtol`` /
    ``atol``) nor with ``distributed_config`` (docs/runtime.md).

    ``parsed_pipeline`` is the pipeline ``pipeline`` names, its options typed. ``platform_origin``
    says where the platform's name came from (the session setting, or this call), for error
    messages. An unknown option is an :class:`UnknownOptionError` (a ``TypeError``).

    >>> RunConfig(platform="a2a3sim", dump_passes="dumps/", options={"verify": True})
    >>> RunConfig(pipeline="outline-scopes,tile-matmul{k_block=128},tensor-to-tile")
    >>> RunConfig(enable_profiling=True)  # profiles go to ./pypto_profile/<kernel>/
    >>> RunConfig(backend_type=BackendType.Ascend910B, codegen_only=True, save_kernels_dir="out/")
    """

    platform: str | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    dump_passes: bool | str | Path | PassDumpLevel = False
    enable_profiling: bool = False
    enable_chip_swimlane: int | bool = 0
    profile_dir: str | Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    pipeline: str | Sequence[str] | None = None
    device_id: int = 0
    backend_type: BackendType | None = None
    codegen_only: bool = False
    save_kernels: bool = False
    save_kernels_dir: str | Path | None = None
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    enable_pmu: int = 0
    enable_dump_args: int = 0
    verification_level: VerificationLevel = field(default_factory=settings.verification_level)
    strategy: OptimizationStrategy = OptimizationStrategy.Default
    ring_task_window: int | Sequence[int] | None = None
    ring_heap: int | Sequence[int] | None = None
    ring_dep_pool: int | Sequence[int] | None = None
    aicpu_thread_num: int | None = None
    compile_profiling: bool = field(default_factory=profiling_by_default)
    golden_data_dir: str | Path | None = None
    memory_planner: MemoryPlanner | None = None
    diagnostic_phase: DiagnosticPhase = field(default_factory=settings.diagnostic_phase)  # None given: this
    disabled_diagnostics: Any = None  # DiagnosticCheck members; kept as a frozenset
    analyze_auto_scopes_for_deps: bool = False
    dump_ptoas_passes: bool = False
    distributed_config: Any = None
    emit_source_loc: bool = field(default_factory=settings.emit_source_loc)
    break_at: str | None = None
    timing_only: bool = False
    parsed_pipeline: Pipeline | None = field(default=None, init=False, repr=False, compare=False)
    platform_origin: Origin = field(default=DEFAULT, init=False, repr=False, compare=False)
    _profile_origin: Origin = field(default=DEFAULT, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        needs_call = (
            self.platform is not None or self.profile_dir is not None or self.backend_type is not None
        )
        call = call_site() if needs_call else None
        if isinstance(self.dump_passes, PassDumpLevel):  # NONE as False; CONCISE / EXPLICIT as True
            self.dump_passes = self.dump_passes.dumps
        if isinstance(self.diagnostic_phase, str):  # "none", as PYPTO_WARNING_LEVEL spells it
            spelled = self.diagnostic_phase.lower()
            self.diagnostic_phase = next(
                (phase for phase in DiagnosticPhase if spelled in (phase.value, phase.name.lower())),
                self.diagnostic_phase,
            )
        if self.diagnostic_phase is None:  # None, as ir.compile passes it: the environment's
            self.diagnostic_phase = settings.diagnostic_phase()
        self._check_fields()
        self._check_swimlane_level()
        self._check_diagnostics()
        self._check_distributed()
        self._check_pmu_level()
        self._check_dump_level()
        self._check_runtime_fields()
        self._check_break_at()
        self._check_timing_only()
        platform_given = self.platform is not None
        if not platform_given:
            chosen = settings.platform_setting()
            self.platform, self.platform_origin = chosen.value, chosen.origin
            if self.backend_type is not None:
                self._platform_of_family(call)
        else:
            self.platform_origin = Origin("RunConfig(platform=...)", call)
        if not isinstance(self.platform, str) or not self.platform:
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig.platform must be a platform name, got {self.platform!r}",
                    span=call,
                    hint='name a platform `pypto platforms` lists, e.g. RunConfig(platform="a2a3sim")',
                ),
            )
        if self.backend_type is not None and platform_given:
            self._check_family(call)
        self._check_device(call)
        self._check_pipeline()
        self.enable_profiling = bool(
            self.enable_profiling or self.enable_chip_swimlane or self.profile_dir is not None
        )
        if self.profile_dir is not None:
            self._profile_origin = Origin("RunConfig(profile_dir=...)", call)
            try:
                check_profile_dir(self.profile_dir, self._profile_origin)
            except ConfigError as err:
                _raise_at(call, err)
        self.save_kernels = self.save_kernels or self.save_kernels_dir is not None
        if self.dump_passes is True and self.save_kernels_dir is not None:
            self.dump_passes = Path(self.save_kernels_dir) / PASSES_DUMP  # the dumps beside the artifacts
        dump_root = output_root() if self.dump_passes is True else self.dump_dir("")
        if dump_root is not None:
            try:  # before anything compiles, as for profile_dir
                check_output_dir(
                    dump_root,
                    Origin("RunConfig(dump_passes=...)", call_site()),
                    "pass dumps",
                    "pypto_passes",
                )
            except ConfigError as err:
                _raise_at(err.span, err)
        if self.pipeline is not None and not isinstance(self.pipeline, str):
            self.pipeline = tuple(self.pipeline)

    def _platform_of_family(self, call: SourceSpan | None) -> None:
        """``backend_type`` without ``platform``: the session default if it is of the family,
        else the family's simulator."""
        assert self.backend_type is not None and self.platform is not None
        try:
            chosen = default_platform(self.backend_type, self.platform, call)
        except PyptoError as err:
            _raise_at(call, err)
        if chosen != self.platform:
            self.platform = chosen
            self.platform_origin = Origin(
                f"RunConfig(backend_type=BackendType.{self.backend_type.name})", call
            )

    def _check_family(self, call: SourceSpan | None) -> None:
        """A ``platform`` and a ``backend_type`` that name different chip families."""
        assert self.backend_type is not None and self.platform is not None
        try:
            check_supported(self.backend_type, call)
        except PyptoError as err:
            _raise_at(call, err)
        family = backend_type_of(self.platform)
        if family is not None and family is not self.backend_type:
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig(platform={self.platform!r}) is a {family.generation} platform "
                    f"(BackendType.{family.name}), but backend_type is BackendType.{self.backend_type.name}",
                    span=call,
                    hint="give one of them, or a platform of that backend type: "
                    f"{', '.join(platforms_of(self.backend_type))}",
                ),
            )

    def _check_device(self, call: SourceSpan | None) -> None:
        """``device_id`` names a device the platform has (the simulator has one)."""
        if self.device_id < 0:
            _field_error(f"RunConfig.device_id takes an int >= 0, got {self.device_id}", "device_id", 0)
        if self.device_id == 0:
            return  # every platform has device 0: no registry lookup on the common path
        assert self.platform is not None
        devices = device_count(self.platform)
        if devices is not None and self.device_id >= devices:
            _raise_at(
                call or call_site(),
                ConfigError(
                    f"RunConfig(device_id={self.device_id}): {self.platform} has {devices} device(s), "
                    f"numbered from 0",
                    span=call or call_site(),
                    hint="leave device_id=0" if devices == 1 else f"pass a device_id below {devices}",
                ),
            )

    def _check_fields(self) -> None:
        """Each option of the kind it takes, and the pipeline's passes known: a ConfigError at the
        user's ``RunConfig(...)``, not an AttributeError once compiling starts."""
        for name, kinds, kind, example in _FIELDS:
            value = getattr(self, name)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                _field_error(
                    f"RunConfig.{name} takes {kind}, got {type(value).__name__} {value!r}", name, example
                )

    def _check_swimlane_level(self) -> None:
        """``enable_chip_swimlane`` is a level 0-4 (True is 4, False 0); kept as an int."""
        level = self.enable_chip_swimlane
        if level is True:
            level = 4
        if isinstance(level, bool) or not isinstance(level, int) or level not in SWIMLANE_LEVELS:
            if level is not False:
                call = call_site()
                _raise_at(
                    call,
                    ConfigError(
                        "RunConfig.enable_chip_swimlane takes a level 0-4 (True is 4, False 0), got "
                        f"{level!r}",
                        span=call,
                        hint="1 records each task's start and end per core, 2 adds its dispatch and "
                        "finish, 3 the scheduler's phases, 4 the orchestrator's too: "
                        "RunConfig(enable_chip_swimlane=4)",
                    ),
                )
            level = 0
        self.enable_chip_swimlane = level

    @property
    def enable_l2_swimlane(self) -> int:
        """The former name of ``enable_chip_swimlane`` (reading it is silent; setting it warns)."""
        return int(self.enable_chip_swimlane)

    @enable_l2_swimlane.setter
    def enable_l2_swimlane(self, value: int | bool) -> None:
        warnings.warn(
            "RunConfig.enable_l2_swimlane is deprecated: set enable_chip_swimlane (same values)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.enable_chip_swimlane = value
        self._check_swimlane_level()
        self.enable_profiling = self.enable_profiling or bool(self.enable_chip_swimlane)

    def _check_diagnostics(self) -> None:
        """``disabled_diagnostics``: None, a :class:`pypto.ir.DiagnosticCheck` or several; kept
        as a frozenset."""
        given = self.disabled_diagnostics
        if given is None:
            self.disabled_diagnostics = frozenset()
            return
        items: list[Any]
        try:
            items = [given] if isinstance(given, DiagnosticCheck) else list(given)
        except TypeError:
            items = [given]
        bad = next((item for item in items if not isinstance(item, DiagnosticCheck)), None)
        if bad is not None or isinstance(given, (str, bytes)):
            bad = given if isinstance(given, (str, bytes)) else bad
            names = ", ".join(f"DiagnosticCheck.{c.name}" for c in DiagnosticCheck)
            _field_error(
                f"RunConfig.disabled_diagnostics takes pypto.ir.DiagnosticCheck members, got {bad!r} "
                f"(checks: {names})",
                "disabled_diagnostics",
                {DiagnosticCheck.PipelineStagesCut},
            )
        self.disabled_diagnostics = frozenset(items)

    def _check_distributed(self) -> None:
        """``distributed_config`` is a ``DistributedConfig`` (or None, a single-chip program)."""
        from pypto.ir.distributed_compiled_program import DistributedConfig

        given = self.distributed_config
        if given is not None and not isinstance(given, DistributedConfig):
            call = call_site()
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig(distributed_config=...) takes a DistributedConfig, got "
                    f"{type(given).__name__} {given!r}",
                    span=call,
                    hint="from pypto.ir.distributed_compiled_program import DistributedConfig; "
                    "RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))",
                ),
            )

    @property
    def planner(self) -> MemoryPlanner:
        """``memory_planner`` with its default filled in (``MemoryPlanner.PYPTO``)."""
        return self.memory_planner or MemoryPlanner.PYPTO

    @property
    def diagnostics_on(self) -> bool:
        """Whether the compiler's advisory checks run (``diagnostic_phase`` is not NONE)."""
        return self.diagnostic_phase is not DiagnosticPhase.NONE

    def lowering_options(self) -> tuple[Any, ...]:
        """The options beside the passes that change the lowered program: the memory planner
        and the silenced checks, when not the defaults (an empty tuple when all are)."""
        extra: list[Any] = []
        if self.planner is not MemoryPlanner.PYPTO:
            extra.append(("memory_planner", self.planner.value))
        if not self.diagnostics_on:
            extra.append(("diagnostic_phase", "none"))
        elif self.disabled_diagnostics:
            silenced = sorted(c.value for c in self.disabled_diagnostics)
            extra.append(("disabled_diagnostics", tuple(silenced)))
        return tuple(extra)

    def _check_pmu_level(self) -> None:
        """``enable_pmu`` is a level, 0, 1 or 2 (False and True mean 0 and 1); kept as an int."""
        if self.enable_pmu not in PMU_LEVELS:
            call = call_site()
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig.enable_pmu takes a level 0, 1 or 2, got {self.enable_pmu!r}",
                    span=call,
                    hint="enable_pmu=1 counts busy and stall cycles per core and pipe, 2 also per op; "
                    "0 (or False) writes no pmu.csv",
                ),
            )
        self.enable_pmu = int(self.enable_pmu)

    def _check_dump_level(self) -> None:
        """``enable_dump_args`` is a level, 0 (off), 1 (the marked tensors) or 2 (every task's
        tensors); False and True mean 0 and 1, as in PyPTO. Kept as an int."""
        if self.enable_dump_args not in DUMP_LEVELS:
            call = call_site()
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig.enable_dump_args takes a level 0, 1 or 2, got {self.enable_dump_args!r}",
                    span=call,
                    hint="enable_dump_args=1 dumps the tensors marked with pl.dump_tag(t) or dumps=[...], "
                    "2 every task's inputs and outputs; 0 (or False) dumps nothing",
                ),
            )
        self.enable_dump_args = int(self.enable_dump_args)

    def _check_runtime_fields(self) -> None:
        """The ring sizes (an int, or 4 ints for rings 0..3, each by its rule) and the AICPU
        thread count (an int >= 1): a ConfigError at the user's ``RunConfig(...)``."""
        for ring in RING_FIELDS:
            try:
                rings.normalize(ring, getattr(self, ring.name))
            except ConfigError as err:
                call = call_site()
                _raise_at(call, err.with_span(call))
        threads = self.aicpu_thread_num
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            _field_error(
                f"RunConfig.aicpu_thread_num takes an int >= 1 (AICPU threads) or None, got {threads!r}",
                "aicpu_thread_num",
                4,
            )

    def _check_break_at(self) -> None:
        """``break_at`` is ``FILE.py:LINE``, optionally ``@CORE`` (``aiv1``, ``cg3.AIV1``, ``aic``)."""
        given = self.break_at
        if given is None:
            return
        if not isinstance(given, str) or not BREAK_AT.fullmatch(given.strip()):
            _field_error(
                f"RunConfig.break_at takes {BREAK_AT_FORM}, got {given!r}", "break_at", "kernel.py:31"
            )

    def _check_timing_only(self) -> None:
        """A timing-only run computes no tile values: nothing to compare with a golden, and the
        distributed simulator does not model it."""
        if not self.timing_only:
            return
        compared = [
            f"{name}={getattr(self, name)!r}"
            for name, default in (("golden_data_dir", None), ("rtol", 1e-5), ("atol", 1e-5))
            if getattr(self, name) != default
        ]
        if self.distributed_config is not None:
            compared.append("distributed_config=...")
        if compared:
            call = call_site()
            _raise_at(
                call,
                ConfigError(
                    f"RunConfig(timing_only=True) computes no tile values, so it cannot be combined "
                    f"with {', '.join(compared)}",
                    span=call,
                    hint="drop timing_only to check the numbers, or drop the golden settings (and "
                    "distributed_config) to model the time alone",
                ),
            )

    def ring_sizes(self) -> dict[str, Sizes]:
        """Each ring field's four per-ring sizes for a run: this config's entries where not 0, else
        the environment's (``PTO2_RING_*``), else 0 (the backend's default).
        ``{"ring_task_window": (64, 64, 64, 64), "ring_heap": (0, 0, 0, 0), ...}``"""
        return {
            ring.name: rings.resolve(ring, rings.normalize(ring, getattr(self, ring.name)))
            for ring in RING_FIELDS
        }

    def _check_pipeline(self) -> None:
        """A pipeline string or a list of pass names, each pass known and its options usable."""
        if self.pipeline is None:
            return
        if isinstance(self.pipeline, str):
            call = call_site()
            try:
                self.parsed_pipeline = parse_user_pipeline(self.pipeline, literal_start(call, self.pipeline))
            except PipelineError as err:
                _raise_at(call, _pipeline_error(err, call))
            return
        if not all(isinstance(p, str) for p in self.pipeline):
            _field_error(
                f"RunConfig.pipeline takes a pipeline string or a list of pass names, got "
                f"{type(self.pipeline).__name__} {self.pipeline!r}",
                "pipeline",
                _FIELDS[-1][-1],
            )
        self.parsed_pipeline = _listed_pipeline(self.pipeline)

    @property
    def platform_name(self) -> str:
        """``platform`` with the session default filled in (``__post_init__`` always fills it)."""
        assert self.platform is not None
        return self.platform

    def dump_dir(self, kernel: str, output_dir: Path | None = None) -> Path | None:
        """The directory pass dumps of ``kernel`` go to, or None when dumping is off: the directory
        ``dump_passes`` names, else (True) the ``passes_dump/`` of the program's output directory
        ``output_dir`` (without it, of ``<output root>/<kernel>``)."""
        if self.dump_passes is False or self.dump_passes is None:
            return None
        if self.dump_passes is True:
            return (output_dir if output_dir is not None else output_root() / kernel) / PASSES_DUMP
        assert not isinstance(self.dump_passes, PassDumpLevel)  # (made a bool in __post_init__)
        return Path(self.dump_passes)

    def profile_path(self, kernel: str) -> Path | None:
        """Where a run of ``kernel`` writes its profile, or None when profiling is off.

        ``profile_dir`` if given; else, with profiling on here or for the whole session
        (``PYPTO_PROFILE``, ``pypto profile -o DIR``), ``ROOT/<kernel>`` where ROOT is the
        session's directory (``-o DIR``, ``PYPTO_PROFILE=DIR``), ``[tool.pypto] profile-dir``
        or ``./pypto_profile``.
        """
        chosen = self._profile_setting(kernel)
        return None if chosen is None else chosen.value

    def checked_profile_path(self, kernel: str) -> Path | None:
        """:meth:`profile_path`, checked before a run: a ``ConfigError`` naming the directory, why
        profiles cannot be written there and the setting that chose it (``PYPTO_PROFILE``,
        ``[tool.pypto] profile-dir`` in its file, ``-o``, ``RunConfig(profile_dir=...)``)."""
        chosen = self._profile_setting(kernel)
        if chosen is None:
            return None
        check_profile_dir(chosen.value, chosen.origin)
        return chosen.value

    def _profile_setting(self, kernel: str) -> Setting[Path] | None:
        if self.profile_dir is not None:
            return Setting(Path(self.profile_dir), self._profile_origin)
        if not (self.enable_profiling or settings.profile_everything()):
            return None
        root = settings.profile_root_setting()
        return Setting(root.value / kernel, root.origin)

    def backend_options(self) -> dict[str, Any]:
        """What a backend's ``run`` receives: the user options plus the profiling switches."""
        return {
            **self.options,
            "enable_profiling": self.enable_profiling,
            "profile_dir": self.profile_dir,
            "rtol": self.rtol,
            "atol": self.atol,
            "device_id": self.device_id,
            "aicpu_thread_num": self.aicpu_thread_num,
            **({"break_at": self.break_at} if self.break_at is not None else {}),
            **({TIMING_ONLY: True} if self.timing_only else {}),
            **self.ring_sizes(),
        }

    def cache_key(self) -> tuple[Any, ...]:
        """The part of the config a compiled program depends on: the platform, the options, the
        passes (``pipeline``, ``strategy``). The run-time fields (the ring sizes,
        ``aicpu_thread_num``, ``device_id``, tolerances, the files a run writes) are not part of it:
        changing them runs the same compiled program."""
        options = tuple(sorted((k, repr(v)) for k, v in self.options.items()))
        pipeline = None if self.parsed_pipeline is None else self.parsed_pipeline.key()
        return (self.platform, options, pipeline, self.strategy.value, self.lowering_options())

    def artifact_key(self) -> tuple[Any, ...]:
        """:meth:`cache_key` and every other field that changes what a compile writes or checks:
        the pass dumps, the output directory, ``save_kernels`` / ``codegen_only``, the compile
        profile, the verification level, ``backend_type``. Two configs of one artifact key give the
        same compiled program object (``kernel.compile`` keys its cache on it)."""
        dumps = self.dump_passes if isinstance(self.dump_passes, bool) else str(self.dump_passes)
        where = None if self.save_kernels_dir is None else str(self.save_kernels_dir)
        family = None if self.backend_type is None else self.backend_type.name
        return (
            *self.cache_key(),
            dumps,
            where,
            self.save_kernels,
            self.codegen_only,
            self.compile_profiling,
            self.verification_level.value,
            family,
            self.analyze_auto_scopes_for_deps,
            self.dump_ptoas_passes,
            None if self.distributed_config is None else self.distributed_config.key(),
        )


# The backend option a timing-only run sets (RunConfig(timing_only=True), pypto run --timing-only).
TIMING_ONLY = "timing_only"

# The options checked by kind: (field, the types it takes, in words, a good value).
_FIELDS: tuple[tuple[str, tuple[type, ...], str, Any], ...] = (
    ("rtol", (int, float), "a number", 1e-5),
    ("atol", (int, float), "a number", 1e-5),
    ("dump_passes", (bool, str, Path), "False, True, a directory or a pypto.ir.PassDumpLevel", "dumps/"),
    ("enable_profiling", (bool,), "True or False", True),
    ("profile_dir", (str, Path, type(None)), "a directory", "prof/"),
    ("options", (dict,), "a dict of option names to values", {"verify": True}),
    ("device_id", (int,), "a device number (an int >= 0)", 0),
    ("backend_type", (BackendType, type(None)), "a pypto.backend.BackendType", BackendType.Ascend910B),
    ("codegen_only", (bool,), "True or False", True),
    ("save_kernels", (bool,), "True or False", True),
    ("save_kernels_dir", (str, Path, type(None)), "a directory", "build_output/"),
    ("enable_dep_gen", (bool,), "True or False", True),
    ("enable_scope_stats", (bool,), "True or False", True),
    ("enable_pmu", (bool, int), "a level 0, 1 or 2 (False, True)", 2),
    ("enable_dump_args", (bool, int), "a level 0, 1 or 2 (False, True)", 1),
    ("verification_level", (VerificationLevel,), "a pypto.ir.VerificationLevel", VerificationLevel.ROUNDTRIP),
    ("strategy", (OptimizationStrategy,), "a pypto.ir.OptimizationStrategy", OptimizationStrategy.Default),
    ("compile_profiling", (bool,), "True or False", True),
    ("golden_data_dir", (str, Path, type(None)), "a directory", "golden/"),
    ("memory_planner", (MemoryPlanner, type(None)), "a pypto.ir.MemoryPlanner or None", MemoryPlanner.PYPTO),
    (
        "diagnostic_phase",
        (DiagnosticPhase, type(None)),
        "a pypto.ir.DiagnosticPhase or None",
        DiagnosticPhase.NONE,
    ),
    ("analyze_auto_scopes_for_deps", (bool,), "True or False", True),
    ("dump_ptoas_passes", (bool,), "True or False", False),
    ("emit_source_loc", (bool,), "True or False", False),
    ("timing_only", (bool,), "True or False", True),
    (
        "pipeline",
        (list, tuple, str, type(None)),
        "a pipeline string or a list of pass names",
        "outline-scopes,tile-matmul{k_block=128}",
    ),
)


def _listed_pipeline(names: Sequence[str]) -> Pipeline:
    """The pipeline of a list of passes, each element one pass (with its options, if any): an
    unknown name or an unusable option is a ConfigError at the user's ``RunConfig(...)``."""
    call = call_site()
    try:
        specs = [parse_text(name) for name in names]
        several = next((name for name, found in zip(names, specs, strict=True) if len(found) != 1), None)
        if several is not None:
            raise PipelineError(
                f"the list names {several!r} as one pass",
                hint='give one pass per element, or the whole pipeline as one string: "a,b"',
            )
        flat = [spec for found in specs for spec in found]
        passes = pass_registry(flat)
        unknown = [spec.name.text for spec in flat if passes.find(spec.name.text) is None]
        if unknown:
            _raise_at(call, _unknown_listed(unknown, passes, call))
        return resolve(flat, passes)
    except PipelineError as err:
        _raise_at(call, _pipeline_error(err, call))


def _unknown_listed(unknown: list[str], passes: PassRegistry, call: SourceSpan | None) -> ConfigError:
    close = difflib.get_close_matches(unknown[0], passes.words(), n=1)
    fallback = "leave pipeline=None for the default pipeline (`pypto passes` lists it), or name those passes"
    return ConfigError(
        f"RunConfig.pipeline names unknown pass(es) {', '.join(map(repr, unknown))}; passes: "
        f"{known_passes(passes)}",
        span=call,
        hint=f"did you mean {close[0]}? Or {fallback}" if close else fallback,
    )


def _pipeline_error(err: PipelineError, call: SourceSpan | None) -> ConfigError:
    """A pipeline mistake as the ConfigError of ``RunConfig.pipeline``, at the mistake when the
    string is spelled in the call, else at the call."""
    return ConfigError(f"RunConfig.pipeline: {err.message}", span=err.span or call, hint=err.hint)


def _field_error(message: str, name: str, example: Any) -> NoReturn:
    call = call_site()
    shown = f"{type(example).__name__}.{example.name}" if isinstance(example, Enum) else repr(example)
    _raise_at(call, ConfigError(message, span=call, hint=f"write it like RunConfig({name}={shown})"))


def _raise_at(call: SourceSpan | None, err: PyptoError) -> NoReturn:
    """Raise ``err`` so that the traceback ends at the user's ``RunConfig(...)`` line."""
    if call is None:
        raise err
    raise_at_user_line(err, "RunConfig")
