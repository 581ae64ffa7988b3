"""Where an error meets the user: re-raising a ``PyptoError`` so that the user's line is the last
traceback frame, and finding in the stack the user's own expression that led to it (their kernel
call, their ``RunConfig(...)``, the annotation Python is evaluating at ``def`` time)."""

from __future__ import annotations

import linecache
import sys
from types import FrameType
from typing import NoReturn

from pypto.ir.errors import PyptoError, SourceSpan

# Modules whose frames are PyPTO's own, not the user's (pypto.models is user code written in pl).
INTERNAL_MODULES = (
    "pypto.ir",
    "pypto.passes",
    "pypto.language",
    "pypto.runtime",
    "pypto.tuning",
    "pypto.debug",
    "pypto.tools",
    "pypto.cli",
    "pypto_sim_",
)
CLI_MODULES = "pypto.cli"


def is_internal(frame: FrameType) -> bool:
    module = frame.f_globals.get("__name__", "")
    return module.startswith(INTERNAL_MODULES) or module in ("functools", "contextlib")


def call_site() -> SourceSpan | None:
    """The span of the expression the first frame outside PyPTO is evaluating: the user's
    ``kernel(a, b, config="a2a3sim")`` call or ``RunConfig(...)``. None when the ``pypto``
    command itself made the call: then no line of the user's did."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and is_internal(frame):
        if frame.f_globals.get("__name__", "").startswith(CLI_MODULES):
            return None
        frame = frame.f_back
    return None if frame is None else frame_span(frame)


def frame_span(frame: FrameType) -> SourceSpan:
    """The span of the instruction ``frame`` is executing (its line, and its columns on that line)."""
    code = frame.f_code
    positions = list(code.co_positions())
    index = frame.f_lasti // 2
    line, end_line, col, end_col = positions[index] if 0 <= index < len(positions) else (None,) * 4
    line = line or frame.f_lineno
    text = linecache.getline(code.co_filename, line)
    start = _char_col(text, col) if col is not None else 0
    end = _char_col(text, end_col) if end_col is not None and end_line == line else None
    return SourceSpan(code.co_filename, line, start, end)


def _char_col(text: str, byte_col: int) -> int:
    """Code positions count UTF-8 bytes; carets need characters."""
    return len(text.encode()[:byte_col].decode(errors="replace"))


def raise_at_user_line(err: PyptoError, where: str) -> NoReturn:
    """Raise ``err`` from a frame that sits at its span's line in the user's file.

    The parser's own frames are dropped. The raising frame is compiled with the user's file
    name and line number, so the traceback ends on the user's source line, named ``where``.
    """
    err = err.with_traceback(None)
    span = err.span
    if span is None or not span.source_line():
        raise err from None
    # The raise starts where the user's line starts and spans two lines, so tracebacks show
    # the line without underlining part of it.
    line = span.source_line()
    indent = line[: len(line) - len(line.lstrip())]
    if span.line < 2:
        indent = ""
    head = "\n" * (span.line - 2) + "if 1:\n" if indent else "\n" * (span.line - 1)
    code = compile(head + indent + "raise __pypto_error__ \\\n    from None\n", span.file, "exec")
    exec(code.replace(co_name=where), {"__pypto_error__": err})
    raise err from None  # exec always raises; this line only states that to type checkers
