"""``@pl.jit``: lazy, specializing compilation of a kernel on its first call per argument signature."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, NamedTuple, ParamSpec, TypeVar

from pypto.ir import Level, Program, PyptoError, RunReport
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.language.errors import JitOptionError, KernelOnlyError, RunConfigError
from pypto.language.kernel import JitKind, KernelFunction
from pypto.language.parser.program import parse_program
from pypto.language.parser.resolve import GlobalReads, recording_reads
from pypto.language.specialize import Specialization, specialize
from pypto.runtime.compiling.compile_profile import CompileProfile
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program, diagnostics
from pypto.runtime.config import RunConfig

P = ParamSpec("P")
R = TypeVar("R")


class CacheInfo(NamedTuple):
    """Compile cache statistics of one ``@pl.jit`` function, like ``functools.lru_cache``'s."""

    hits: int
    misses: int
    size: int


def _user_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Raise any PyptoError at the user's line, without the compiler's frames or exception chain."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except PyptoError as err:
            failure = err
        raise_at_user_line(failure, getattr(args[0], "name", "kernel"))

    return wrapper


class JitFunction(KernelFunction):
    """A ``@pl.jit`` (or ``@pl.jit.incore``) kernel: call it with torch tensors to compile and run.

    >>> out = mixed(a, b, bias, out, config=RunConfig(platform="a2a3sim"))  # doctest: +SKIP
    >>> mixed.last_report.total_cycles  # doctest: +SKIP
    """

    def __init__(self, func: Callable[..., Any], kind: JitKind = JitKind.entry) -> None:
        functools.update_wrapper(self, func)  # the kernel reads as its function: name, doc, module
        super().__init__(func, kind)
        self.last_report: RunReport | None = None
        # Per key, the compiled program and the global/closure values its parse read.
        self._compiled: dict[tuple[Any, ...], tuple[CompiledProgram, GlobalReads]] = {}
        self._hits = 0
        self._misses = 0

    def _specialize(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], running: bool = False
    ) -> Specialization:
        if self.kind is JitKind.inline:
            raise KernelOnlyError(
                f"{self.name}() is @pl.jit.inline: it is spliced into the kernel that calls it",
                call_site(),
                hint="call it from a @pl.jit or @pl.jit.incore body",
            )
        return specialize(self, args, kwargs, running)

    @_user_errors
    def parse(self, *args: Any, **kwargs: Any) -> Program:
        """The parsed, not lowered, program for these arguments: ``mixed.parse(a, b, bias, out)``."""
        return parse_program(self, self._specialize(args, kwargs).params)

    def _compile(self, spec: Specialization, config: RunConfig) -> CompiledProgram:
        """The compiled program for ``spec``: from the in-memory cache unless a module global or
        closure value the kernel read has changed since, or pass dumps or a compile profile are
        asked for (each is written whenever it is asked for)."""
        key = (spec.key, config.artifact_key())
        cached = self._compiled.get(key)
        fresh = config.dump_dir(self.name) is not None or config.compile_profiling
        if cached is not None and cached[1].changed() is None and not fresh:
            self._hits += 1
            return cached[0]
        self._misses += 1
        profile = CompileProfile() if config.compile_profiling else None
        with (
            recording_reads() as reads,
            profile.stage("parse") if profile else nullcontext(),
            diagnostics(config.diagnostic_phase),
        ):
            program = parse_program(self, spec.params)
        compiled = compile_program(program, config, spec.constants, profile)
        self._compiled[key] = (compiled, reads)
        return compiled

    @_user_errors
    def compile(self, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> CompiledProgram:
        """Compile for these arguments (none needed when every parameter is fully annotated).

        >>> mixed.compile(config=RunConfig(platform="a2a3")).lowered  # doctest: +SKIP
        """
        return self._compile(self._specialize(args, kwargs), _config(config))

    @_user_errors
    def lower(self, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Program:
        """The lowered IR program: ``list(mixed.lower().functions)`` (the function names)."""
        return self._compile(self._specialize(args, kwargs), _config(config)).lowered

    @_user_errors
    def __call__(self, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Any:
        """Compile (once per specialization) and run; ``pl.Out`` tensors are written in place."""
        config = _config(config)
        spec = self._specialize(args, kwargs, running=True)
        compiled = self._compile(spec, config)
        result = compiled.run_checked(spec.args, config)  # specialize checked the arguments
        self.last_report = compiled.last_report
        return result

    def cache_info(self) -> CacheInfo:
        """``CacheInfo(hits, misses, size)`` of the compile cache."""
        return CacheInfo(self._hits, self._misses, len(self._compiled))

    def cache_clear(self) -> None:
        self._compiled.clear()
        self._hits = self._misses = 0


def _config(config: Any) -> RunConfig:
    """``config=`` of a call: a ``RunConfig``, or None for the defaults."""
    if config is None:
        return RunConfig()
    if not isinstance(config, RunConfig):
        example = f'RunConfig(platform="{config}")' if isinstance(config, str) else "RunConfig(...)"
        raise RunConfigError(
            f"config= takes a RunConfig, got {type(config).__name__} {config!r}",
            call_site(),
            f"from pypto.runtime import RunConfig; pass config={example}",
        )
    return config


class Jit:
    """The ``pl.jit`` decorator, with ``pl.jit.incore``, ``pl.jit.inline`` and ``pl.jit.opaque``.

    >>> @pl.jit
    ... def add(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]): ...
    """

    def __call__(self, func: Callable[..., Any] | None = None, **options: Any) -> Any:
        if func is None and not options:
            return self
        return _decorate("pl.jit", JitKind.entry, func, options)

    @staticmethod
    def incore(func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """A device kernel, callable by its bare name from a ``@pl.jit`` body."""
        return _decorate("pl.jit.incore", JitKind.incore, func, options)

    @staticmethod
    def inline(func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """A function spliced into the kernel that calls it (also spelled ``@pl.inline``)."""
        return _decorate("pl.jit.inline", JitKind.inline, func, options)

    @staticmethod
    def host(func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """The HOST orchestrator of a distributed program: it allocates window buffers, views them
        (``pld.window``) and dispatches a ``@pl.jit`` chip orchestration to each rank
        (``chip(x[r], y[r], device=r)`` in ``for r in pl.range(pld.world_size())``). The chip
        orchestrations it calls, and their kernels, are found from its body.

        >>> @pl.jit.host
        ... def hello(x: pl.Tensor[[2, 8, 8], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 8], pl.FP32]]):
        ...     for r in pl.range(pld.world_size()):
        ...         per_rank(x[r], y[r], r, device=r)
        """
        return _decorate("pl.jit.host", JitKind.host, func, options)

    @staticmethod
    def opaque(func: Callable[..., Any] | None = None, **options: Any) -> Any:
        """A control-plane function of its own: it may hold ``pl.range`` / ``pl.parallel`` loops,
        ``pl.at`` scopes and calls of ``@pl.jit.incore`` kernels, and is called by its bare name
        from a ``@pl.jit`` body (or another opaque function). Called from Python, it runs as the
        entry of its own program."""
        return _decorate("pl.jit.opaque", JitKind.opaque, func, options)


class InlineFunction(JitFunction):
    """What ``@pl.inline`` (``@pl.jit.inline``) makes: a template the parser splices into each
    kernel that calls it, leaving no function of its own; called from Python it raises.

    >>> isinstance(normalize, pl.InlineFunction)  # doctest: +SKIP
    True
    """


# Where what a user may have meant to pass a decorator goes instead.
_OPTION_HINT = (
    'the decorator takes no other options: split a kernel with pl.func_attr({"split": pl.SplitMode.UP_DOWN}) '
    "as its first statement, put optimizations=[...] on a pl.at(...) scope or a pl.spmd(...) loop, "
    "and pass run settings as config=RunConfig(...) when calling the kernel"
)
# The options each decorator takes: auto_scope=False (the author places the AUTO runtime scopes,
# `with pl.scope():`) on the functions whose body is control-plane code, or is spliced into one.
# level= on @pl.jit.incore names the hierarchy level the kernel targets (a core group here).
_OPTIONS = {JitKind.entry: ("auto_scope",), JitKind.inline: ("auto_scope",), JitKind.incore: ("level",)}


def _decorate(name: str, kind: JitKind, func: Any, options: dict[str, Any]) -> Any:
    """``@name`` on ``func`` (``@name()`` / ``@name(auto_scope=False)`` return the decorator);
    an option the decorator does not take is an error."""
    _check_options(name, kind, options)
    if func is None:
        return lambda f: _decorate(name, kind, f, options)
    if not callable(func) or isinstance(func, (JitFunction, type)):
        what = "a @pl.jit function" if isinstance(func, JitFunction) else type(func).__name__
        raise JitOptionError(
            f"@{name} decorates a Python function, got {what}",
            call_site(),
            f"write @{name} directly above one def, once",
        )
    jitted = InlineFunction(func, kind) if kind is JitKind.inline else JitFunction(func, kind)
    jitted.auto_scope = options.get("auto_scope", True)
    _note_enclosing_locals(func)
    return jitted


def _note_enclosing_locals(func: Any) -> None:
    """A kernel defined inside a Python function (the manual's factory pattern: ``def make(nr):``
    derives ``rounds = 2 * (nr - 1)`` and defines kernels whose annotations name it) may name that
    function's locals in its annotations. Under ``from __future__ import annotations`` those are
    strings, which Python does not close over: keep a snapshot of the defining function's locals
    as they are when the decorator runs, for the parser to read after the closure (see
    :class:`pypto.language.parser.resolve.GlobalNames`)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pypto.language"):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_code.co_name == "<module>" or frame.f_locals is frame.f_globals:
        return
    with contextlib.suppress(AttributeError, TypeError):  # a callable object without a __dict__
        func.__pypto_enclosing_locals__ = dict(frame.f_locals)


def _check_options(name: str, kind: JitKind, options: dict[str, Any]) -> None:
    """A JitOptionError at the decorator for an option ``@name`` does not take, or a bad value."""
    allowed = _OPTIONS.get(kind, ())
    unknown = [key for key in options if key not in allowed]
    if kind is JitKind.host and "level" in options:
        raise JitOptionError(
            "@pl.jit.host takes no level=: a HOST orchestrator runs at pl.Level.HOST by definition",
            call_site(),
            "write @pl.jit.host with no options",
        )
    if "auto_scope" in unknown:
        raise JitOptionError(
            f"@{name} does not take auto_scope=: it is outlined into a kernel of its own, with no "
            "orchestration body for a runtime scope to stand in",
            call_site(),
            "put auto_scope=False on the @pl.jit entry, or on a @pl.jit.inline helper",
        )
    if unknown:
        given = ", ".join(f"{key}=" for key in unknown)
        takes = f"takes only {', '.join(f'{k}=' for k in allowed)}" if allowed else "takes no options"
        raise JitOptionError(f"@{name} {takes}, got {given}", call_site(), _OPTION_HINT)
    if "level" in options:
        level = options["level"]
        if not isinstance(level, Level):
            raise JitOptionError(
                f"@{name}(level=...) takes a pl.Level member, got {level!r}",
                call_site(),
                f"write @{name}(level=pl.Level.CORE_GROUP)",
            )
        if level is not Level.CORE_GROUP:
            raise JitOptionError(
                f"@{name}(level=pl.Level.{level.name}) does not make a kernel yet: a kernel here runs on "
                "one core group",
                call_site(),
                f"write @{name}(level=pl.Level.CORE_GROUP), or leave level= out",
            )
    if "auto_scope" in options and not isinstance(options["auto_scope"], bool):
        raise JitOptionError(
            f"@{name}(auto_scope=...) takes True or False, got {options['auto_scope']!r}",
            call_site(),
            f"write @{name}(auto_scope=False) to place the AUTO scopes yourself (with pl.scope():)",
        )


jit = Jit()

inline = Jit.inline  # ``@pl.inline``: the same as ``@pl.jit.inline``
