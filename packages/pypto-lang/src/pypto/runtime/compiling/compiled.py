"""Compiling a parsed program for a platform, and running it."""

from __future__ import annotations

import functools
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pypto.ir import (
    BackendType,
    Call,
    DiagnosticPhase,
    Direction,
    Function,
    FunctionKind,
    MemoryPlanner,
    Program,
    PyptoError,
    Return,
    RunReport,
    SpecializationError,
    Target,
    TensorType,
    Var,
    VerificationError,
    VerificationLevel,
    log,
    structural_diff,
)
from pypto.ir.argdump import DUMP_ARGS_OPTION
from pypto.ir.breakpoints import missing_break_line, parse_break_at
from pypto.ir.errors import CompileWarning
from pypto.ir.extents import ExtentBinding, is_dynamic
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import Observes, get_op
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.ir.types import describe
from pypto.passes import PassContext, PassManager, dump_to, roundtrip_check
from pypto.passes.manager import Instrument, Pass
from pypto.passes.param_writes import warn_undeclared_writes
from pypto.runtime import settings
from pypto.runtime.compiling import artifacts
from pypto.runtime.compiling.arguments import check_argument, check_runnable
from pypto.runtime.compiling.cache import OFF, cached_lower
from pypto.runtime.compiling.compile_profile import CompileProfile
from pypto.runtime.compiling.pipelines import pipeline_of
from pypto.runtime.config import TIMING_ONLY, RunConfig
from pypto.runtime.extensions import RUNTIME
from pypto.runtime.platforms.families import backend_type_of
from pypto.runtime.platforms.registry import get_backend, get_target, registry
from pypto.runtime.reports import launches
from pypto.runtime.reports.args_dump import ArgDumpWriter
from pypto.runtime.reports.profiling import ProfileFiles, write_profile
from pypto.runtime.reports.progress import TaskProgress, count_tasks, no_run_bars
from pypto.runtime.running.call import CallConfig, ChipCallable, OrchArgs
from pypto.runtime.running.device import ACTIVE_WORKER, DeviceTensor, DeviceTensorError
from pypto.runtime.settings import ConfigError


def lower_program(
    program: Program, target: Target, config: RunConfig, profile: CompileProfile | None = None
) -> Program:
    """Run ``config.pipeline`` over a parsed program (None: the pipeline the platform's backend
    asks for, else the default pipeline); with ``dump_passes=True`` the dumps go to the
    ``passes_dump/`` of the program's output directory; ``profile`` times each pass."""
    dump_dir = config.dump_dir(program.name, _output_dir(program, target, config))
    passes = pipeline_of(config).build()
    instruments = [dump_to(dump_dir)] if dump_dir else []
    if profile is not None:
        with profile.stage("passes") as stage:
            instruments.append(profile.pass_timer(stage))
            return _run_passes(program, target, config, passes, instruments)
    return _run_passes(program, target, config, passes, instruments)


ALLOCATE = "AllocateMemory"  # the pass memory_planner=PTOAS moves after the pipeline


def _run_passes(
    program: Program, target: Target, config: RunConfig, passes: list[Pass], instruments: list[Instrument]
) -> Program:
    level = config.verification_level
    if level is VerificationLevel.ROUNDTRIP:
        check = _roundtrip_instrument()
        check(0, _Parsed(), program)  # the parser's own output first
        instruments.append(check)
    ctx = PassContext(
        target,
        dict(config.options),
        diagnostic_phase=config.diagnostic_phase or DiagnosticPhase.PostPipeline,
        disabled_diagnostics=frozenset(config.disabled_diagnostics or ()),
    )
    # memory_planner=PTOAS: the addresses are placed after the pipeline, at code emission (the
    # role of PTO's assembler), so no pass dump carries them.
    emitted = [p for p in passes if p.name == ALLOCATE] if config.planner is MemoryPlanner.PTOAS else []
    manager = PassManager(
        [p for p in passes if p not in emitted], instruments, verify=level is not VerificationLevel.NONE
    )
    lowered = manager.run(program, ctx)
    for placement in emitted:
        lowered = placement.run(lowered, ctx)
    return lowered


def _output_dir(program: Program, target: Target, config: RunConfig) -> Path | None:
    """The output directory of ``program`` (parsed) compiled under ``config``, when dumps go there."""
    if config.dump_passes is not True:
        return None
    provider = str(registry().origin(config.platform_name))
    return artifacts.output_dir(
        config, program.name, artifacts.directory_key(program, target, config, provider)
    )


@dataclass(frozen=True)
class _Parsed:
    """Stands for the parser in ROUNDTRIP's messages: "the program after pass 0 (parse)"."""

    name: ClassVar[str] = "parse"
    pipeline_name: ClassVar[str] = "parse"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return program


# The reader of printed programs ROUNDTRIP checks with: ``pl.parse_program``, registered by
# pypto.language when it is imported (it imports this module, so this one cannot import it).
_READER: list[Callable[[str], Program]] = []


def register_reader(reader: Callable[[str], Program]) -> None:
    _READER[:] = [reader]


def _roundtrip_instrument() -> Instrument:
    """``VerificationLevel.ROUNDTRIP``'s check: the ``pl`` parser reads each dump back and
    ``pypto.ir.structural_diff`` compares."""
    if not _READER:
        raise ConfigError(
            "RunConfig(verification_level=ROUNDTRIP) reads each pass's program back with the pl "
            "parser, which is not loaded",
            hint="import pypto.language first (it registers its parser), or use VerificationLevel.BASIC",
        )
    return roundtrip_check(_READER[0], structural_diff)


_REPR_KERNELS = 6  # function names a compiled program's repr lists


@dataclass
class CompiledProgram:
    """A compiled program: its lowered program bound to a platform, and the handle PyPTO's manual
    describes ("Running", "The CompiledProgram contract").

    ``program`` is the ``Program`` handed to compile, as it was given (None for a handle rebuilt
    with :meth:`from_dir`); ``lowered`` is the program the passes produced, which runs.
    ``constants`` maps scalar parameters that were compiled in as constants to their values; a
    run must pass the same values. ``compile_seconds`` is the wall time compiling took and
    ``cache`` says where the program came from: ``"hit"`` (the disk cache), ``"miss"`` (compiled,
    then stored) or ``"off"``. After a run, ``last_report`` holds the backend's report and,
    when profiling is on, ``last_profile`` the files written from it. ``output_dir`` is the
    directory of its artifacts (:mod:`pypto.runtime.compiling.artifacts`), written when first read,
    when compiled with ``save_kernels`` / ``codegen_only``, and after runs that ask for files.
    The dispatch surface (``chip_callable``, ``runtime_name``, ``runtime_config``,
    ``build_orch_args``, ``build_call_config``) is what a ``ChipWorker`` launches it with.

    >>> compiled = mixed.compile(a, b, bias, out)  # doctest: +SKIP
    >>> compiled.run(a, b, bias, out)  # doctest: +SKIP
    >>> CompiledProgram.from_dir(compiled.output_dir)(a, b, bias, out)  # doctest: +SKIP
    """

    lowered: Program
    config: RunConfig
    constants: Mapping[str, Any] = field(default_factory=dict)
    compile_seconds: float = 0.0
    cache: str = OFF
    last_report: RunReport | None = None
    last_profile: ProfileFiles | None = None
    parsed: Program | None = field(default=None, repr=False)  # the program handed to compile, as is
    compile_profile: CompileProfile | None = field(default=None, repr=False)  # compile_profiling
    home: Path | None = field(default=None, repr=False)  # the artifact directory it was loaded from
    _written: set[Path] = field(default_factory=set, init=False, repr=False)  # dirs holding artifacts
    _reported: RunReport | None = field(default=None, init=False, repr=False)  # last report on disk
    _has_debug_ops: bool | None = field(default=None, init=False, repr=False)  # pl.debug.* in a kernel

    @property
    def program(self) -> Program | None:
        """The ``Program`` handed to compile, stored as it was given: usually the parsed program,
        before any pass (for ``kernel.lower(...)`` handed on, already lowered); None after
        :meth:`from_dir`. The program that runs is :attr:`lowered`."""
        return self.parsed

    @property
    def entry(self) -> Function:
        return self.lowered.entry_function

    @property
    def platform(self) -> str:
        """The platform it was compiled for: ``"a2a3sim"``, ``"a2a3"``."""
        return self.config.platform_name

    @property
    def backend_type(self) -> BackendType | None:
        """The chip family it was compiled for (``BackendType.Ascend910B``); None for a platform of
        no family ``BackendType`` names."""
        return backend_type_of(self.platform)

    @property
    def param_names(self) -> list[str]:
        """The entry's parameter names, in order: ``["a", "b", "out"]``."""
        return [p.var.name for p in self.entry.params]

    @property
    def output_indices(self) -> list[int]:
        """The positions of the entry's ``pl.Out`` / ``pl.InOut`` parameters (written in place)."""
        return [i for i, p in enumerate(self.entry.params) if p.direction is not Direction.In]

    @property
    def has_return(self) -> bool:
        """Whether the entry returns values."""
        return any(isinstance(s, Return) and s.values for s in self.entry.body)

    @property
    def orchestration_names(self) -> list[str]:
        """The names of the program's orchestration functions (the entry first)."""
        found = [fn.name for fn in self.lowered.functions.values() if fn.kind is FunctionKind.Orchestration]
        return sorted(found, key=lambda name: name != self.entry.name)

    def __fspath__(self) -> str:
        """A compiled program stands for its output directory where a path is asked for:
        ``os.walk(ir.compile(program))``."""
        return str(self.output_dir)

    def __truediv__(self, name: str | Path) -> Path:
        """A file of the output directory: ``compiled / "program.py"``."""
        return self.output_dir / name

    def __str__(self) -> str:
        return self.__fspath__()

    def __repr__(self) -> str:
        """The entry's signature, the platform, the kernels, where it came from and the last run,
        in a line or two (the IR: ``pypto.ir.print_ir(compiled.lowered)``)."""
        params = ", ".join(
            f"{p.var.name}: {p.direction.value}" if p.direction is not Direction.In else p.var.name
            for p in self.entry.params
        )
        names = [name for name in self.lowered.functions if name != self.entry.name]
        kernels = ", ".join(names[:_REPR_KERNELS]) + (
            f", ... {len(names) - _REPR_KERNELS} more" if len(names) > _REPR_KERNELS else ""
        )
        last = (
            f"{self.last_report.total_cycles} modeled cycles" if self.last_report is not None else "not run"
        )
        constants = f", constants={dict(self.constants)}" if self.constants else ""
        return (
            f"CompiledProgram({self.entry.name}({params}) on {self.platform}, "
            f"{len(names)} other function(s) [{kernels}]{constants}, cache={self.cache!r}, "
            f"compiled in {self.compile_seconds:.2f} s, last run: {last})"
        )

    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Launch it: ``compiled(a, b, out)`` (see :meth:`dispatch`: ``codegen_only`` does not stop
        it; :meth:`run` heeds it). Inside a ``with ChipWorker(...):`` block the call goes through
        that worker (so a ``DeviceTensor`` of it may be passed)."""
        worker = ACTIVE_WORKER.get()
        if worker is not None:
            return worker.run(self, *args, config=config)
        resident = next((a for a in args if isinstance(a, DeviceTensor)), None)
        if resident is not None:
            raise DeviceTensorError(
                f"{self.entry.name}() was given a DeviceTensor outside a ChipWorker",
                call_site(),
                "dispatch through the worker that allocated it: worker.run(compiled, ...), a "
                "worker.register(compiled) handle, or call compiled(...) inside `with worker:`",
            )
        return self.dispatch(args, config)

    # ------------------------------------------------------------ the dispatch surface

    @functools.cached_property
    def chip_callable(self) -> ChipCallable:
        """The program as the runtime loads it onto a chip (one object per compiled program)."""
        kernels = tuple(
            (fn.name, fn.kind.value)
            for fn in self.lowered.functions.values()
            if fn.kind in artifacts.KERNEL_KINDS
        )
        return ChipCallable(
            self.lowered.name,
            self.platform,
            self.entry.name,
            tuple(self.orchestration_names),
            kernels,
            self._key[: artifacts.KEY_CHARS],
        )

    @property
    def runtime_name(self) -> str:
        """The runtime that schedules its tasks: the platform backend's ``runtime_name``, else the
        backend's name (``"a2a3sim"``: the simulator's own task runtime)."""
        backend = get_backend(self.platform, self.config.platform_origin)
        return str(getattr(backend, "runtime_name", None) or getattr(backend, "name", self.platform))

    @property
    def runtime_config(self) -> dict[str, Any]:
        """The runtime settings compiled into it, which a launch uses where its ``RunConfig`` sets
        none: the platform, the chip (``Target`` name), its ``core_groups`` (the block dim a task
        may spread over), ``aicpu_thread_num`` (None: the backend's default) and each ring field's
        four sizes (0: the backend's default)."""
        target = get_target(self.platform, self.config.platform_origin)
        return {
            "platform": self.platform,
            "chip": target.name,
            "core_groups": getattr(target, "core_groups", None),
            "aicpu_thread_num": self.config.aicpu_thread_num,
            **{name: sizes for name, sizes in self.config.ring_sizes().items()},
        }

    def build_orch_args(self, *args: Any) -> OrchArgs:
        """The orchestration's arguments for a launch on ``args``, checked against the entry's
        parameters (the outputs allocated when the call leaves them all out). A ``DeviceTensor``
        is a ``ChipWorker``'s to resolve: pass it through ``worker.run``."""
        values, made = self._with_outputs(tuple(args))
        self._check(values)
        return OrchArgs(tuple(self.param_names), values, tuple(self.output_indices), tuple(made))

    def build_call_config(self, config: RunConfig | None = None) -> CallConfig:
        """The runtime settings of a launch under ``config`` (default: the compile's config)."""
        config = config or self.config
        if not isinstance(config, RunConfig):
            raise ConfigError(
                f"build_call_config takes a RunConfig, got {type(config).__name__}",
                call_site(),
                "pass config=RunConfig(...), or nothing for the config it was compiled with",
            )
        sizes = config.ring_sizes()
        dfx = (
            config.enable_chip_swimlane
            or config.enable_dep_gen
            or config.enable_pmu
            or config.enable_scope_stats
        )
        prefix = self.output_dir_for(config) / artifacts.DFX_DIR if dfx else None
        return CallConfig(
            device_id=config.device_id,
            aicpu_thread_num=config.aicpu_thread_num,
            ring_task_window=sizes["ring_task_window"],
            ring_heap=sizes["ring_heap"],
            ring_dep_pool=sizes["ring_dep_pool"],
            enable_chip_swimlane=config.enable_chip_swimlane,
            enable_dep_gen=config.enable_dep_gen,
            enable_pmu=config.enable_pmu,
            enable_scope_stats=config.enable_scope_stats,
            output_prefix=prefix,
            backend_options=config.backend_options(),
            run_config=config,
        )

    @classmethod
    def from_dir(cls, path: str | Path) -> CompiledProgram:
        """Rebuild a compiled program from its artifact directory (``compiled.output_dir``, an
        ``ir.compile`` output directory): the lowered program from ``program.py`` and the rest from
        ``compiled.json``. ``program`` is None on the result; it runs as the original did.

        >>> again = CompiledProgram.from_dir("build_output/add_3f2a9c1b0d4e")  # doctest: +SKIP
        """
        try:
            if not isinstance(path, (str, os.PathLike)):
                raise artifacts.ArtifactError(
                    f"CompiledProgram.from_dir takes a directory, got {type(path).__name__}",
                    hint="pass the output directory of a compile: compiled.output_dir",
                )
            directory = Path(path)
            meta = artifacts.read_meta(directory)
            if not _READER:
                raise ConfigError(
                    "CompiledProgram.from_dir reads program.py with the pl parser, which is not loaded",
                    hint="import pypto.language first (it registers its parser)",
                )
            lowered = _READER[0]((directory / artifacts.PROGRAM_FILE).read_text())
        except PyptoError as err:
            failure = err.with_span(err.span or call_site())
        else:
            config = RunConfig(platform=meta["platform"], save_kernels_dir=directory)
            constants = dict(meta.get("constants", {}))
            return cls(lowered, config, constants, cache=OFF, home=directory)
        raise_at_user_line(failure, "CompiledProgram")

    load = from_dir

    @functools.cached_property
    def _key(self) -> str:
        target = get_target(self.config.platform_name, self.config.platform_origin)
        provider = str(registry().origin(self.config.platform_name))
        return artifacts.directory_key(self.parsed or self.lowered, target, self.config, provider)

    @property
    def output_dir(self) -> Path:
        """The directory holding this program's artifacts (``program.py``, ``memory_map.txt``, the
        pass dumps when asked for, the last run's report), written if they are not yet there."""
        return self.write_artifacts(self.config)

    def output_dir_for(self, config: RunConfig) -> Path:
        """Where the artifacts go under ``config`` (its ``save_kernels_dir``, else the directory it
        was loaded from, else the default)."""
        if self.home is not None and config.save_kernels_dir is None:
            return self.home
        return artifacts.output_dir(config, self.lowered.name, self._key)

    def write_artifacts(self, config: RunConfig) -> Path:
        """Write the compiled artifacts to ``config``'s output directory once, and the last run's
        report if it is not there yet; returns the directory."""
        directory = self.output_dir_for(config)
        if directory.absolute() not in self._written:  # absolute: a chdir moves a relative one
            target = get_target(self.config.platform_name, self.config.platform_origin)
            artifacts.write_compiled(directory, self.lowered, target, self.config, self.constants)
            if self.compile_profile is not None:
                self.compile_profile.write(directory)
            self._written.add(directory.absolute())
        if self.last_report is not None and self._reported is not self.last_report:
            artifacts.write_run(directory, self.last_report, config, self.lowered.name)
            self._reported = self.last_report
        return directory

    def validate_ir(
        self,
        tensors: Mapping[str, Any],
        expected: Mapping[str, Any],
        *,
        rtol: float = 5e-2,
        atol: float = 5e-2,
    ) -> dict[str, dict[str, float]]:
        """Run each pass dump of this program on the host (``pypto.debug.torch_codegen``) and
        compare it with ``expected``: :func:`pypto.debug.validate_pass_ir_codegen_results` on
        ``<output_dir>/passes_dump/`` (or the ``dump_passes`` directory). The program as parsed is
        checked first, so a first dump that differs is the pass's. ``FileNotFoundError`` when it
        was compiled without pass dumps.

        >>> compiled = kernel.compile(a, out, config=RunConfig(dump_passes=True))  # doctest: +SKIP
        >>> compiled.validate_ir({"a": a, "out": out}, {"out": ref}, rtol=1e-3)  # doctest: +SKIP
        """
        # pypto.debug's (it needs torch and the language's parser): offered to the runtime.
        validate_program = RUNTIME.get("validate_program")
        validate_pass_ir_codegen_results = RUNTIME.get("validate_pass_ir_codegen_results")
        directory = self.config.dump_dir(self.lowered.name, self.output_dir_for(self.config))
        if directory is None or not directory.is_dir():
            raise FileNotFoundError(
                f"{self.lowered.name} has no pass dumps to validate"
                + (f" (no {directory})" if directory is not None else "")
                + ": compile it with RunConfig(dump_passes=True)"
            )
        if self.parsed is not None:
            validate_program(self.parsed, tensors, expected, rtol=rtol, atol=atol, label="00_as_parsed")
        return validate_pass_ir_codegen_results(directory, tensors, expected, rtol=rtol, atol=atol)

    @functools.cached_property
    def task_count(self) -> int | None:
        """How many tasks a run launches (None when a loop bound is known only at run time)."""
        return count_tasks(self.lowered)

    @property
    def hints(self) -> list[str]:
        """The compiler's performance hints about the program (each kernel's, e.g. a pipelined loop
        that got fewer stages than it asked for); also in each run's report and ``hints.txt``."""
        return [hint for fn in self.lowered.functions.values() for hint in fn.attrs.get("hints", ())]

    def run(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Run the entry on ``args`` (written in place); returns what the entry returns.

        ``config`` (default: the one it was compiled with) gives the run-time options: the
        backend options and profiling. A cached program can so be run with profiling on.
        """
        self._check(args)
        return self.run_checked(args, config)

    def run_checked(self, args: tuple[Any, ...], config: RunConfig | None = None) -> Any:
        """:meth:`run` for arguments already checked against the entry's parameters (a ``@pl.jit``
        call specializes, and so checks, them before it looks the program up)."""
        config = config or self.config
        if config.codegen_only:  # compile and write the artifacts, run nothing
            self.write_artifacts(config)
            return None
        return self.launch(args, self.build_call_config(config))

    def dispatch(self, args: tuple[Any, ...], config: RunConfig | None = None) -> Any:
        """Launch the entry on ``args`` whatever the harness options say: ``codegen_only`` does not
        stop a dispatch (``compiled(...)``, ``ChipWorker.run``), as in PyPTO's runtime."""
        orch = self.build_orch_args(*args)
        return self._or_made(self.launch(orch.values, self.build_call_config(config)), list(orch.made))

    def _with_outputs(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any]]:
        """``args`` with the entry's ``pl.Out`` tensors allocated (zeros) when the call leaves them
        all out: ``compiled(a, b)`` for ``entry(a, b, out)``. The tensors made, in order."""
        import torch  # compiling needs no torch; running does

        params = self.entry.params
        outs = [p for p in params if p.direction is Direction.Out]
        if not outs or len(args) != len(params) - len(outs):
            return args, []
        given, full, made = iter(args), [], []
        for param in params:
            if param.direction is not Direction.Out:
                full.append(next(given))
                continue
            t = param.var.type
            if not isinstance(t, TensorType) or not all(isinstance(n, int) for n in t.shape):
                raise SpecializationError(
                    f"{self.entry.name}() was called without its output {param.var.name!r}, whose shape "
                    f"{describe(t)} is known only from the tensor passed",
                    param.var.span or self.entry.span,
                    f"pass {param.var.name} too: {self.entry.name}({', '.join(self.param_names)})",
                )
            tensor = torch.zeros(tuple(int(n) for n in t.shape), dtype=getattr(torch, t.dtype.torch_name))
            full.append(tensor)
            made.append(tensor)
        return tuple(full), made

    @staticmethod
    def _or_made(result: Any, made: list[Any]) -> Any:
        """What a call returns: the entry's results, or the outputs it allocated when the entry
        returns nothing."""
        if result is not None or not made:
            return result
        return made[0] if len(made) == 1 else tuple(made)

    def _session_break(self) -> dict[str, str]:
        """``pypto run --break FILE:LINE`` for this run: only where an op of the program is on that
        line (a script runs several programs; the command fails if none holds it)."""
        where = settings.break_at()
        if where is None or missing_break_line(self.lowered, parse_break_at(where)) is not None:
            return {}
        settings.note_break_line_held()
        return {"break_at": where}

    def _debugs(self) -> bool:
        """Whether the program prints or stops for the kernel debugger (``pl.debug.*``)."""
        if self._has_debug_ops is None:
            self._has_debug_ops = any(
                isinstance(e, Call) and get_op(e.op).has(Observes)
                for fn in self.lowered.functions.values()
                for stmt in walk_stmts(fn.body)
                for root in stmt_exprs(stmt)
                for e in walk_expr(root)
            )
        return self._has_debug_ops

    def launch(self, args: tuple[Any, ...], call: CallConfig) -> Any:
        """Launch the entry on orchestration arguments already built (:meth:`build_orch_args`)
        with the runtime settings ``call`` (:meth:`build_call_config`); returns what it returns."""
        config: RunConfig = call.run_config
        backend = get_backend(self.config.platform_name, self.config.platform_origin)
        directory = config.checked_profile_path(self.lowered.name)  # before the run, not after it
        start = time.perf_counter()
        dump = self._args_dump(config)
        options = {**self._session_break(), **_session_timing_only(), **call.backend_options}  # its own first
        # A kernel debugger's prints and prompt own the terminal: no progress bar draws over them.
        quiet = no_run_bars() if "break_at" in options or self._debugs() else nullcontext()
        with quiet, TaskProgress(self.lowered.name, self.task_count) as progress:
            try:
                report = backend.run(self.lowered, list(args), {**options, **progress.options(), **dump})
            except VerificationError as err:
                raise self._unfinished(err) from None
            finally:  # what a failing run dumped up to its failure is kept
                written = dump[DUMP_ARGS_OPTION].close() if dump else None
        report.hints = [*report.hints, *self.hints]
        report.device_id = call.device_id
        report.args_dump = None if written is None else str(written)
        self.last_report = report
        if directory is not None:
            self.last_profile = write_profile(report, directory, title=self.lowered.name)
        seconds = time.perf_counter() - start
        profile = self.last_profile if directory is not None else None
        launch = launches.Launch(self.lowered.name, self.config.platform_name, report, profile, seconds)
        log.event(
            f"ran {self.lowered.name} on {self.config.platform_name}: {report.total_cycles} modeled cycles "
            f"in {seconds:.3f} s"
        )
        launches.record(launch)
        if artifacts.wants_run_files(config):
            self.write_artifacts(config)
        return self._returned(report, args)

    def _args_dump(self, config: RunConfig) -> dict[str, ArgDumpWriter]:
        """The run option handing the backend the writer of ``enable_dump_args``'s dump, into
        ``dfx_outputs/args_dump/`` of the output directory (none when dumping is off)."""
        if not config.enable_dump_args:
            return {}
        directory = artifacts.args_dump_dir(self.output_dir_for(config))
        writer = ArgDumpWriter(directory, config.enable_dump_args, self.lowered.name, config.platform_name)
        return {DUMP_ARGS_OPTION: writer}

    def _unfinished(self, err: VerificationError) -> PyptoError:
        """A program the backend cannot run: the user's own pipeline left it so (a ConfigError at
        the kernel), else a compiler bug (the VerificationError as it is)."""
        if self.config.pipeline is None:
            return err
        given = self.config.pipeline
        shown = given if isinstance(given, str) else list(given)
        return ConfigError(
            f"{self.config.platform} cannot run what RunConfig(pipeline={shown!r}) "
            f"left of the program: {err.message}",
            span=err.span,
            hint="leave pipeline=None to run the default pipeline, or list every pass `pypto passes` shows",
        )

    def _check(self, args: tuple[Any, ...]) -> None:
        """The arguments fit the entry's parameters and hold data to run on; an error points at the
        parameter (its span in the kernel's ``def``)."""
        params = self.entry.params
        if len(args) != len(params):
            names = ", ".join(p.var.name for p in params)
            raise SpecializationError(
                f"{self.entry.name}() takes {len(params)} argument(s) ({names}), got {len(args)}",
                self.entry.span,
                f"pass one value per parameter: {self.entry.name}({names})",
            )
        extents = ExtentBinding()
        for param, value in zip(params, args, strict=True):
            name = param.var.name
            try:
                check_argument(value, param.var.type, name)
                if is_dynamic(param.var.type):
                    extents.bind(name, param.var.type, tuple(value.shape), param.var.span or self.entry.span)
                check_runnable(value, param.direction, name)
                if name in self.constants and value != self.constants[name]:
                    raise SpecializationError(
                        f"argument {name!r} is {value!r} but the program was compiled with {name}="
                        f"{self.constants[name]!r}",
                        hint="scalar values are part of the specialization: compile again for this value",
                    )
            except PyptoError as err:
                raise err.with_span(param.var.span or self.entry.span) from None
        extents.resolve()

    def _returned(self, report: RunReport, args: tuple[Any, ...]) -> Any:
        values = tuple(report.outputs) or self._returned_params(args)
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def _returned_params(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Returned entry params mapped to the caller's arguments (for backends that report none)."""
        ret = next((s for s in reversed(self.entry.body) if isinstance(s, Return)), None)
        if ret is None:
            return ()
        index = {p.var.name: i for i, p in enumerate(self.entry.params)}
        picked = [index.get(v.name) for v in ret.values if isinstance(v, Var)]
        if len(picked) != len(ret.values) or None in picked:
            return ()
        return tuple(args[i] for i in picked if i is not None)


def compile_program(
    program: Program,
    config: RunConfig | None = None,
    constants: Mapping[str, Any] | None = None,
    profile: CompileProfile | None = None,
) -> CompiledProgram:
    """Lower a parsed ``Program`` for ``config.platform``: ``compile_program(prog, RunConfig())``.

    With ``config.compile_profiling`` the compile is timed (into ``profile``, which may already
    hold the parse) and the profile written with the artifacts."""
    config = config or RunConfig()
    from pypto.runtime.distributed.compiled import check_entry, distributed

    check_entry(program, config)
    if config.compile_profiling and profile is None:
        profile = CompileProfile()
    target = get_target(config.platform_name, config.platform_origin)
    provider = str(registry().origin(config.platform_name))
    start = time.perf_counter()
    with diagnostics(config.diagnostic_phase):
        warn_undeclared_writes(program)
        lowered, cache = cached_lower(
            program, target, config, provider, lambda: lower_program(program, target, config, profile)
        )
    seconds = time.perf_counter() - start
    compiled = CompiledProgram(
        lowered, config, dict(constants or {}), compile_seconds=seconds, cache=cache, parsed=program
    )
    if config.distributed_config is not None:  # a HOST program for a world of chips
        compiled = distributed(compiled)
    cached = {"hit": ", from the compile cache", "miss": ", stored in the compile cache"}.get(cache, "")
    log.event(f"compiled {program.name} for {config.platform_name} in {seconds * 1e3:.1f} ms{cached}")
    if profile is not None and config.compile_profiling:
        with profile.stage("artifacts"):
            directory = compiled.write_artifacts(config)
        compiled.compile_profile = profile
        profile.write(directory)
    elif config.save_kernels or config.codegen_only:
        compiled.write_artifacts(config)
    if config.diagnostic_phase.enabled:
        _log_hints(compiled, config)
    return compiled


@contextmanager
def diagnostics(phase: DiagnosticPhase) -> Iterator[None]:
    """``DiagnosticPhase.NONE``: the ``CompileWarning`` s given inside the block (the parser's, the
    passes', a cached program's recorded ones) are dropped."""
    if phase.enabled:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        yield


def _log_hints(compiled: CompiledProgram, config: RunConfig) -> None:
    """The compile's performance hints at ``INFO``: one line naming the file that holds them when
    the artifacts were written, else each hint in full."""
    hints = compiled.hints
    if not hints:
        return
    name = compiled.lowered.name
    if config.save_kernels or config.codegen_only or config.compile_profiling:
        where = compiled.output_dir_for(config) / artifacts.HINTS_FILE
        log.info(f"[perf_hint] {len(hints)} hint(s) for {name}; see {where}")
        return
    for hint in hints:
        log.info(f"[perf_hint] {name}: {hint}")


def _session_timing_only() -> dict[str, bool]:
    """``pypto run --timing-only`` (or ``pypto profile --timing-only``): every run models its time alone."""
    return {TIMING_ONLY: True} if settings.timing_only() else {}


def run(
    program_or_jit: Any = None,
    *tensors: Any,
    config: RunConfig | None = None,
    golden: Callable[[dict[str, Any]], Any] | None = None,
    tensor_specs: Any = None,
    program: Any = None,
) -> Any:
    """Compile (if needed) and run: ``run(mixed, a, b, bias, out, config=RunConfig())``.

    Accepts a ``@pl.jit`` function, a parsed ``Program`` or a ``CompiledProgram`` (also as
    ``program=``); returns what the entry returns. ``tensor_specs`` (a list of
    :class:`pypto.runtime.TensorSpec`) makes the arguments instead of ``tensors``. The harness
    compares the outputs with a golden when ``golden`` (a function of the arguments by name that
    writes the expected outputs in place) or ``config.golden_data_dir`` is given, within
    ``config.rtol`` / ``config.atol``: see :mod:`pypto.runtime.running.golden`. A ``Program``
    whose entry takes parameters, given no arguments, is only compiled: ``compiled = run(program,
    config=cfg)`` returns the ``CompiledProgram``, and ``compiled(*tensors)`` runs it.
    """
    from pypto.runtime.running.golden import check_run

    if program_or_jit is None:
        program_or_jit = program
    if tensor_specs is not None:
        tensors = tuple(spec.create_tensor() for spec in tensor_specs)
    if isinstance(program_or_jit, CompiledProgram):
        compiled = program_or_jit
    elif isinstance(program_or_jit, Program):
        compiled = compile_program(program_or_jit, config)
        if not tensors and compiled.entry.params:
            return compiled  # nothing to run on: compile only, and hand back what runs it
    elif callable(getattr(program_or_jit, "compile", None)):
        jit = program_or_jit
        if golden is None and (config is None or config.golden_data_dir is None):
            return jit(*tensors, config=config)
        compiled = jit.compile(*tensors, config=config)
        return check_run(
            compiled.entry, tensors, lambda: jit(*tensors, config=config), golden, config or compiled.config
        )
    else:
        raise TypeError(
            "run() takes a @pl.jit function, a Program or a CompiledProgram, got "
            f"{type(program_or_jit).__name__}"
        )
    chosen = config or compiled.config
    return check_run(compiled.entry, tensors, lambda: compiled.run(*tensors, config=config), golden, chosen)
