"""Compiling a parsed program for a platform, and running it."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pypto.ir import (
    BackendType,
    Direction,
    Function,
    FunctionKind,
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
    structural_diff,
)
from pypto.ir.argdump import DUMP_ARGS_OPTION
from pypto.ir.extents import ExtentBinding, is_dynamic
from pypto.ir.types import describe
from pypto.passes import PassContext, PassManager, dump_to, roundtrip_check
from pypto.passes.manager import Instrument, Pass
from pypto.runtime.compiling import artifacts
from pypto.runtime.compiling.arguments import check_argument, check_runnable
from pypto.runtime.compiling.cache import OFF, cached_lower
from pypto.runtime.compiling.compile_profile import CompileProfile
from pypto.runtime.compiling.pipelines import pipeline_of
from pypto.runtime.config import RunConfig
from pypto.runtime.extensions import RUNTIME
from pypto.runtime.platforms.families import backend_type_of
from pypto.runtime.platforms.registry import get_backend, get_target, registry
from pypto.runtime.reports import launches
from pypto.runtime.reports.args_dump import ArgDumpWriter
from pypto.runtime.reports.profiling import ProfileFiles, write_profile
from pypto.runtime.reports.progress import TaskProgress, count_tasks
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


def _run_passes(
    program: Program, target: Target, config: RunConfig, passes: list[Pass], instruments: list[Instrument]
) -> Program:
    level = config.verification_level
    if level is VerificationLevel.ROUNDTRIP:
        check = _roundtrip_instrument()
        check(0, _Parsed(), program)  # the parser's own output first
        instruments.append(check)
    manager = PassManager(passes, instruments, verify=level is not VerificationLevel.NONE)
    return manager.run(program, PassContext(target, dict(config.options)))


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


@dataclass
class CompiledProgram:
    """A lowered program bound to a platform.

    ``constants`` maps scalar parameters that were compiled in as constants to their values; a
    run must pass the same values. ``compile_seconds`` is the wall time compiling took and
    ``cache`` says where the program came from: ``"hit"`` (the disk cache), ``"miss"`` (compiled,
    then stored) or ``"off"``. After a run, ``last_report`` holds the backend's report and,
    when profiling is on, ``last_profile`` the files written from it. ``output_dir`` is the
    directory of its artifacts (:mod:`pypto.runtime.compiling.artifacts`), written when first read, when
    compiled with ``save_kernels`` / ``codegen_only``, and after runs that ask for files.

    >>> compiled = mixed.compile(a, b, bias, out)  # doctest: +SKIP
    >>> compiled.run(a, b, bias, out)  # doctest: +SKIP
    """

    program: Program
    config: RunConfig
    constants: Mapping[str, Any] = field(default_factory=dict)
    compile_seconds: float = 0.0
    cache: str = OFF
    last_report: RunReport | None = None
    last_profile: ProfileFiles | None = None
    parsed: Program | None = field(default=None, repr=False)  # the program before the passes
    compile_profile: CompileProfile | None = field(default=None, repr=False)  # compile_profiling
    _written: set[Path] = field(default_factory=set, init=False, repr=False)  # dirs holding artifacts
    _reported: RunReport | None = field(default=None, init=False, repr=False)  # last report on disk

    @property
    def entry(self) -> Function:
        return self.program.entry_function

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
        found = [fn.name for fn in self.program.functions.values() if fn.kind is FunctionKind.Orchestration]
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

    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Launch it: ``compiled(a, b, out)`` (see :meth:`dispatch`: ``codegen_only`` does not stop
        it; :meth:`run` heeds it)."""
        return self.dispatch(args, config)

    @functools.cached_property
    def _key(self) -> str:
        target = get_target(self.config.platform_name, self.config.platform_origin)
        provider = str(registry().origin(self.config.platform_name))
        return artifacts.directory_key(self.parsed or self.program, target, self.config, provider)

    @property
    def output_dir(self) -> Path:
        """The directory holding this program's artifacts (``program.py``, ``memory_map.txt``, the
        pass dumps when asked for, the last run's report), written if they are not yet there."""
        return self.write_artifacts(self.config)

    def output_dir_for(self, config: RunConfig) -> Path:
        """Where the artifacts go under ``config`` (its ``save_kernels_dir``, else the default)."""
        return artifacts.output_dir(config, self.program.name, self._key)

    def write_artifacts(self, config: RunConfig) -> Path:
        """Write the compiled artifacts to ``config``'s output directory once, and the last run's
        report if it is not there yet; returns the directory."""
        directory = self.output_dir_for(config)
        if directory not in self._written:
            target = get_target(self.config.platform_name, self.config.platform_origin)
            artifacts.write_compiled(directory, self.program, target, self.config)
            if self.compile_profile is not None:
                self.compile_profile.write(directory)
            self._written.add(directory)
        if self.last_report is not None and self._reported is not self.last_report:
            artifacts.write_run(directory, self.last_report, config, self.program.name)
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
        directory = self.config.dump_dir(self.program.name, self.output_dir_for(self.config))
        if directory is None or not directory.is_dir():
            raise FileNotFoundError(
                f"{self.program.name} has no pass dumps to validate"
                + (f" (no {directory})" if directory is not None else "")
                + ": compile it with RunConfig(dump_passes=True)"
            )
        if self.parsed is not None:
            validate_program(self.parsed, tensors, expected, rtol=rtol, atol=atol, label="00_as_parsed")
        return validate_pass_ir_codegen_results(directory, tensors, expected, rtol=rtol, atol=atol)

    @functools.cached_property
    def task_count(self) -> int | None:
        """How many tasks a run launches (None when a loop bound is known only at run time)."""
        return count_tasks(self.program)

    @property
    def hints(self) -> list[str]:
        """The compiler's performance hints about the program (each kernel's, e.g. a pipelined loop
        that got fewer stages than it asked for); also in each run's report and ``hints.txt``."""
        return [hint for fn in self.program.functions.values() for hint in fn.attrs.get("hints", ())]

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
        return self._launch(args, config)

    def dispatch(self, args: tuple[Any, ...], config: RunConfig | None = None) -> Any:
        """Launch the entry on ``args`` whatever the harness options say: ``codegen_only`` does not
        stop a dispatch (``compiled(...)``, ``ChipWorker.run``), as in PyPTO's runtime."""
        args, made = self._with_outputs(args)
        self._check(args)
        return self._or_made(self._launch(args, config or self.config), made)

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

    def _launch(self, args: tuple[Any, ...], config: RunConfig) -> Any:
        backend = get_backend(self.config.platform_name, self.config.platform_origin)
        directory = config.checked_profile_path(self.program.name)  # before the run, not after it
        start = time.perf_counter()
        dump = self._args_dump(config)
        with TaskProgress(self.program.name, self.task_count) as progress:
            try:
                report = backend.run(
                    self.program, list(args), {**config.backend_options(), **progress.options(), **dump}
                )
            except VerificationError as err:
                raise self._unfinished(err) from None
            finally:  # what a failing run dumped up to its failure is kept
                written = dump[DUMP_ARGS_OPTION].close() if dump else None
        report.hints = [*report.hints, *self.hints]
        report.device_id = config.device_id
        report.args_dump = None if written is None else str(written)
        self.last_report = report
        if directory is not None:
            self.last_profile = write_profile(report, directory, title=self.program.name)
        seconds = time.perf_counter() - start
        profile = self.last_profile if directory is not None else None
        launch = launches.Launch(self.program.name, self.config.platform_name, report, profile, seconds)
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
        writer = ArgDumpWriter(directory, config.enable_dump_args, self.program.name, config.platform_name)
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
    if config.compile_profiling and profile is None:
        profile = CompileProfile()
    target = get_target(config.platform_name, config.platform_origin)
    provider = str(registry().origin(config.platform_name))
    start = time.perf_counter()
    lowered, cache = cached_lower(
        program, target, config, provider, lambda: lower_program(program, target, config, profile)
    )
    seconds = time.perf_counter() - start
    compiled = CompiledProgram(
        lowered, config, dict(constants or {}), compile_seconds=seconds, cache=cache, parsed=program
    )
    if profile is not None and config.compile_profiling:
        with profile.stage("artifacts"):
            directory = compiled.write_artifacts(config)
        compiled.compile_profile = profile
        profile.write(directory)
    elif config.save_kernels or config.codegen_only:
        compiled.write_artifacts(config)
    return compiled


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
