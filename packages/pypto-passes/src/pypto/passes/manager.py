"""The pass manager: a named, ordered pipeline of passes over a ``Program``."""

from __future__ import annotations

import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pypto.ir import (
    Function,
    OptimizationStrategy,
    Program,
    PyptoError,
    Target,
    VerificationError,
    log,
    print_ir,
    verify_program,
)
from pypto.ir.compile_options import DiagnosticCheck, DiagnosticPhase
from pypto.ir.errors import CompileWarning, InternalError
from pypto.ir.targets import get_target
from pypto.passes.registry import DEFAULT_PIPELINE, PassRegistry


@dataclass
class PassContext:
    """What every pass may read: the target, user options, a sink for warnings, and which advisory
    checks report (``diagnostic_phase`` NONE: none; ``disabled_diagnostics``: not these)."""

    target: Target
    options: dict[str, Any] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)
    diagnostic_phase: DiagnosticPhase = DiagnosticPhase.PostPipeline
    disabled_diagnostics: frozenset[DiagnosticCheck] = frozenset()

    def reports(self, check: DiagnosticCheck) -> bool:
        """Whether ``check`` runs: the channel is on and the check not silenced."""
        return self.diagnostic_phase is not DiagnosticPhase.NONE and check not in self.disabled_diagnostics

    def warn(self, message: str, check: DiagnosticCheck | None = None) -> None:
        if check is not None and not self.reports(check):
            return
        self.diagnostics.append(message)
        warnings.warn(message, CompileWarning, stacklevel=2)


class Pass(Protocol):
    """A pass: a frozen dataclass whose fields are its options, with two names as class
    attributes: ``name`` (``AllocateMemory``; the dump files are ``NN_after_<name>.py``) and
    ``pipeline_name`` (``allocate``; a pipeline string may use either)."""

    name: ClassVar[str]
    pipeline_name: ClassVar[str]

    def run(self, program: Program, ctx: PassContext) -> Program: ...


Instrument = Callable[[int, Pass, Program], None]


def _kept_host(program: Program, host: dict[str, Function]) -> Program:
    """``program`` with its HOST functions as they were parsed: they drive the ranks from the
    host, and no pass (outlining, tiling, SSA rewrites) applies to them."""
    if not host or all(program.functions.get(name) is fn for name, fn in host.items()):
        return program
    functions = [host.get(fn.name, fn) for fn in program.functions.values()]
    return Program(program.name, functions, program.entry, program.attrs)


@dataclass
class PassManager:
    """Runs ``pipeline`` in order; verifies after each pass and calls each instrument."""

    pipeline: Sequence[Pass]
    instruments: Sequence[Instrument] = ()
    verify: bool = True

    @classmethod
    def get_strategy(cls, strategy: OptimizationStrategy = OptimizationStrategy.Default) -> PassManager:
        """The pass manager of an optimization strategy, as PyPTO code asks for it:
        ``ir.PassManager.get_strategy(ir.OptimizationStrategy.Default).run_passes(program)``.
        ``Default`` is the default pipeline (``pypto passes`` lists it)."""
        if not isinstance(strategy, OptimizationStrategy):
            raise TypeError(f"get_strategy takes a pypto.ir.OptimizationStrategy, got {strategy!r}")
        built_in = PassRegistry()  # the built-in passes only: the strategy names no plugin
        return cls([_load(built_in, name)() for name in DEFAULT_PIPELINE])

    def run_passes(
        self,
        program: Program,
        dump_ir: bool = False,
        output_dir: str | Path | None = None,
        prefix: str = "",
        *,
        target: Target | None = None,
        options: dict[str, Any] | None = None,
    ) -> Program:
        """Run the pipeline over ``program`` for ``target`` (default: the A2/A3 chip, ``a2a3``) and
        return the transformed program.

        ``dump_ir=True`` writes the program after each pass as ``<prefix>NN_after_<PassName>.py``
        into ``output_dir`` (default ``./pypto_passes/<program>``), as ``ir.compile``'s
        ``dump_passes`` does: ``pm.run_passes(program, dump_ir=True, output_dir="dumps")``.
        """
        if not isinstance(program, Program):
            raise TypeError(f"run_passes takes a pypto.ir.Program, got {type(program).__name__}")
        manager = self
        if dump_ir:
            directory = Path("pypto_passes") / program.name if output_dir is None else Path(output_dir)
            manager = PassManager(self.pipeline, [*self.instruments, dump_to(directory, prefix)], self.verify)
        return manager.run(program, PassContext(target or get_target("a2a3"), dict(options or {})))

    @property
    def passes(self) -> tuple[Pass, ...]:
        """The passes, in the order they run (a snapshot)."""
        return tuple(self.pipeline)

    @property
    def pass_names(self) -> tuple[str, ...]:
        """The passes' names, in the order they run: ``("OutlineScopes", ...)``."""
        return tuple(p.name for p in self.pipeline)

    def get_pass_names(self) -> list[str]:
        """The passes' names, in the order they run (as PyPTO code asks for them)."""
        return list(self.pass_names)

    def run(self, program: Program, ctx: PassContext) -> Program:
        """Run the passes in order. The program as given is verified first (its errors are the
        user's); a pass that fails other than with a ``PyptoError``, or whose result the verifier
        rejects, is an :class:`InternalError`: a compiler bug. Each pass's wall time is logged at
        ``DEBUG``."""
        if self.verify:
            verify_program(program)
        host = {fn.name: fn for fn in program.functions.values() if fn.is_host}
        total = len(self.pipeline)
        for index, p in enumerate(self.pipeline, start=1):
            start = time.perf_counter()
            program = _kept_host(_run_pass(p, program, ctx), host)
            if self.verify:
                _verify_after(p, program)
            log.debug(f"pass {index}/{total} {p.name}: {(time.perf_counter() - start) * 1e3:.2f} ms")
            for instrument in self.instruments:
                instrument(index, p, program)
        return program


def _run_pass(p: Pass, program: Program, ctx: PassContext) -> Program:
    """``p.run``; an exception other than a ``PyptoError`` is a broken invariant of the pass."""
    try:
        return p.run(program, ctx)
    except PyptoError:
        raise
    except Exception as exc:
        raise InternalError(
            f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
            program.entry_function.span,
            compiler_location=_compiler_location(exc),
        ) from exc


def _verify_after(p: Pass, program: Program) -> None:
    """The verifier on what a pass produced: a failure is the compiler's, not the user's."""
    try:
        verify_program(program)
    except VerificationError as err:
        raise InternalError(
            f"a compiler pass produced a program that breaks an invariant: {err.message}",
            err.span,
            compiler_location=f"{type(p).__module__}.{type(p).__name__}",
        ) from err


def _compiler_location(exc: BaseException) -> str | None:
    """``file:line`` of the innermost frame that raised ``exc`` (inside the compiler)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def dump_to(directory: str | Path, prefix: str = "") -> Instrument:
    """An instrument writing ``<prefix>NN_after_<PassName>.py`` for each pass into ``directory``."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)

    def instrument(index: int, p: Pass, program: Program) -> None:
        (path / f"{prefix}{index:02d}_after_{p.name}.py").write_text(print_ir(program))

    return instrument


def roundtrip_check(
    reparse: Callable[[str], Program], compare: Callable[[Program, Program], str | None]
) -> Instrument:
    """An instrument that prints the program after each pass, parses the text back with
    ``reparse`` and compares the two with ``compare`` (None: equal, else what differs).

    A difference, or text that does not parse back, is a ``VerificationError`` naming the pass:
    the printer and the parser disagree on what the pass produced, a compiler bug.
    """

    def instrument(index: int, p: Pass, program: Program) -> None:
        text = print_ir(program)
        try:
            parsed = reparse(text)
        except PyptoError as err:
            raise VerificationError(
                f"the program after pass {index} ({p.name}) does not parse back: {err.message}",
                program.entry_function.span,
                ROUNDTRIP_HINT,
            ) from err
        difference = compare(program, parsed)
        if difference is not None:
            raise VerificationError(
                f"the program after pass {index} ({p.name}) parses back as a different program: {difference}",
                program.entry_function.span,
                ROUNDTRIP_HINT,
            )

    return instrument


ROUNDTRIP_HINT = (
    "a compiler bug: the printer and the parser disagree; report it with the dump "
    "(RunConfig(dump_passes=True)), or run with verification_level=VerificationLevel.BASIC"
)


def _load(registry: PassRegistry, name: str) -> Callable[[], Pass]:
    entry = registry.find(name)
    assert entry is not None, name  # a pass of the default pipeline is built in
    made: Callable[[], Pass] = entry.load()
    return made
