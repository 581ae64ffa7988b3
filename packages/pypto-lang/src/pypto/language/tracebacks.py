"""Re-raising a ``PyptoError`` so that the user's kernel line is the last traceback frame."""

from __future__ import annotations

from typing import NoReturn

from pypto.ir import PyptoError


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
