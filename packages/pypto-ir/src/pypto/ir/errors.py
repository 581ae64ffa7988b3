"""Diagnostics: every user-facing error is a :class:`PyptoError` with a source span.

A rendered error reads like a compiler message::

    kernel.py:12:9: error: Parameter 'a' missing type annotation
       12 |     def f(a, b: pl.Tensor[[64, 64], pl.FP32]):
          |           ^
    hint: annotate it, e.g. a: pl.Tensor[[128, 128], pl.FP32]
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceSpan:
    """A place in the user's source: 1-based line, 0-based column, optional end column."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def source_line(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def excerpt(self) -> str:
        """The source line with a caret under the span (empty when the file is unreadable)."""
        text = self.source_line()
        if not text:
            return ""
        width = 1
        if self.end_col is not None and self.end_col > self.col:
            width = self.end_col - self.col
        width = max(1, min(width, len(text) - self.col))
        gutter = f"{self.line:>5} | "
        return f"{gutter}{text}\n{' ' * (len(gutter) - 2)}| {' ' * self.col}{'^' * width}"


def at_line(span: SourceSpan | None) -> str:
    """``kernel.py:31`` for a span: the user's file and line, as diagnostics cite them."""
    return f"{span.file}:{span.line}" if span else "an unknown line"


# Who words the advice of an error raised with ``advice=(key, facts)``: the front end registers
# the advisor that says, in its own language, how to fix each problem the IR names.
Advisor = Callable[[str, Mapping[str, Any]], "str | None"]
_ADVISORS: list[Advisor] = []


def register_advisor(advisor: Advisor) -> None:
    """Let ``advisor(key, facts)`` word the hint of errors raised with that advice key."""
    if advisor not in _ADVISORS:
        _ADVISORS.append(advisor)


def compose_advice(key: str, facts: Mapping[str, Any]) -> str | None:
    """The hint the registered advisors give for problem ``key`` with ``facts``, if any."""
    for advisor in _ADVISORS:
        text = advisor(key, facts)
        if text:
            return text
    return None


class PyptoError(Exception):
    """Root of every error a PyPTO user can see.

    ``message`` is the plain text (tests may compare it exactly), ``span`` points at the user's
    line, ``hint`` says how to fix it. ``str(err)`` renders all three. A layer that knows what is
    wrong but not how the user spells the fix (the IR's type rules) gives ``advice``: a problem
    key and its facts, which the front end's advisor words into the hint.
    """

    kind = "error"

    def __init__(
        self,
        message: str,
        span: SourceSpan | None = None,
        hint: str | None = None,
        advice: tuple[str, Mapping[str, Any]] | None = None,
    ):
        self.message = message
        self.span = span
        self._hint = hint
        self.advice = advice
        super().__init__(message)

    @property
    def hint(self) -> str | None:
        """The advisor's wording of ``advice`` if one words it, else the hint given as text."""
        if self.advice is not None:
            worded = compose_advice(*self.advice)
            if worded:
                return worded
        return self._hint

    @hint.setter
    def hint(self, value: str | None) -> None:
        self._hint = value
        self.advice = None

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        head = f"{self.span}: {self.kind}: {self.message}" if self.span else self.message
        parts = [head]
        if self.span is not None:
            excerpt = self.span.excerpt()
            if excerpt:
                parts.append(excerpt)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)

    def with_span(self, span: SourceSpan | None) -> PyptoError:
        """Attach ``span`` if the error has none yet (used when re-raising at a call site)."""
        if self.span is None and span is not None:
            self.span = span
        return self


class ParseError(PyptoError, ValueError):
    """The kernel's Python source uses a construct the DSL does not accept (a ``ValueError``, as
    PyPTO's user errors are)."""


class TextSyntaxError(ParseError, SyntaxError):
    """Text handed to ``pl.parse`` / ``pl.loads`` is not valid Python (a ``SyntaxError`` too)."""


class SSAViolationError(ParseError):
    """A name bound twice in a function declared ``@pl.function(strict_ssa=True)``."""


class TypeCheckError(PyptoError, TypeError):
    """An op got operands of the wrong shape, dtype or memory space."""


class OpValueError(TypeCheckError, ValueError):
    """An op's keyword has a value the op refuses whatever its operands (``pipeline=True`` without
    both chunk sizes): a ``ValueError`` as PyPTO raises it, and a ``TypeCheckError`` like the
    other rules of an op."""


class VerificationError(PyptoError):
    """The IR broke an invariant (a pass produced bad IR, or a hand-built program is wrong)."""


class InternalError(PyptoError, RuntimeError):
    """An invariant the compiler keeps broke: a compiler bug, whatever the input was.

    Its text says so (``Internal error: ...``) and names ``compiler_location``, the place in the
    compiler where the check failed (``pypto/passes/allocate.py:88``); the kernel's line, when
    one is known, is shown as for any error. Report it with the IR that reproduces it.
    """

    def __init__(
        self,
        message: str,
        span: SourceSpan | None = None,
        hint: str | None = None,
        compiler_location: str | None = None,
    ):
        super().__init__(message, span, hint or INTERNAL_HINT)
        self.compiler_location = compiler_location

    def render(self) -> str:
        head = f"Internal error: {self.message}"
        if self.compiler_location:
            head += f" (in the compiler, at {self.compiler_location})"
        parts = [f"{self.span}: {self.kind}: {head}" if self.span else head]
        excerpt = self.span.excerpt() if self.span is not None else ""
        if excerpt:
            parts.append(excerpt)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


INTERNAL_HINT = (
    "this is a bug in PyPTO, not in your kernel: please report it with the program that reproduces "
    "it (RunConfig(dump_passes=True) writes the IR after each pass)"
)


class ConfigError(PyptoError, ValueError):
    """A setting in ``[tool.pypto]``, the environment, on the command line or in a call that cannot
    be used; the message names where the value came from (``PYPTO_LOG_LEVEL='loud' ...``)."""


class MemoryBudgetError(PyptoError, ValueError):
    """An on-chip memory space is over its platform limit."""


class MemRefError(PyptoError, ValueError):
    """A ``pl.MemRef`` placement that cannot be honoured: a bad index, slots that differ between
    the tiles of one name, or tiles of different memory spaces under one name."""


class UnsupportedDtypeError(PyptoError, TypeError):
    """A torch tensor of a dtype PyPTO has no mapping for was passed in."""


class SpecializationError(PyptoError, TypeError):
    """Call arguments do not match the kernel's annotations."""


class PlatformError(PyptoError, ValueError):
    """A platform or backend cannot do what was asked."""


class PipeSetupError(PyptoError, ValueError):
    """The two sides of a core group's cross-core pipes disagree, or a pipe op names a pipe or
    a buffer that is not set up."""


class DeadlockError(PyptoError):
    """Every live core of a simulated launch is blocked."""


class RaceError(PyptoError):
    """Two accesses to the same global memory are not ordered."""


class CommError(PyptoError, ValueError):
    """A distributed program misuses the ranks: a device index outside ``[0, world)``, a dispatch
    loop that misses a rank, a host callback left unbound, a window access outside its buffer."""


class CompileWarning(UserWarning):
    """A compile-time finding that does not stop compilation (e.g. a rebinding that writes nothing).

    Given a ``span`` and a ``hint`` it renders as an error does, with the line and a caret; its
    text starts with the plain message, so a ``warnings`` filter's ``message=`` pattern matches it.
    """

    def __init__(self, message: str, span: SourceSpan | None = None, hint: str | None = None):
        self.message, self.span, self.hint = message, span, hint
        super().__init__(message)

    def __str__(self) -> str:
        parts = [self.message]
        if self.span is not None:
            parts.append(f"  at {self.span}")
            excerpt = self.span.excerpt()
            if excerpt:
                parts.append(excerpt)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class LoopLimitError(PyptoError):
    """A kernel's ``while`` loop ran more iterations than the simulator allows one loop
    (:data:`pypto.ir.walker.MAX_WHILE_ITERATIONS`, ``PYPTO_MAX_WHILE_ITERATIONS``): its condition
    looks like it never turns false."""


class LoopStepError(PyptoError, ValueError):
    """A loop whose step is a run-time value that comes out 0: it would never end."""


class OutOfBoundsError(PyptoError, IndexError):
    """A region of global memory outside its tensor, at offsets known only at run time: a load or
    store of a kernel, or a view the orchestration makes (``pl.slice``) that starts outside it."""


class ExtentError(PyptoError, ValueError):
    """A tensor extent computed at run time that cannot size a tensor: ``pl.create_tensor`` or an
    orchestration ``pl.slice`` whose extent comes out below 1."""


class TimingOnlyError(PyptoError):
    """A timing-only run (``RunConfig(timing_only=True)``) needs a value it does not compute: a
    loop bound, a branch, an address or a predicate read from GM that a task of the run wrote."""
