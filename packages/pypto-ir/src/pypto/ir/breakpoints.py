"""Where a debugging run stops: ``break_at="kernel.py:31"`` (optionally ``@aiv1``), as plain data.

The runtime checks a ``RunConfig(break_at=...)`` / ``pypto run --break`` against a program's op
lines with it, and a simulator's kernel debugger stops there (``pypto_sim_a2a3.engine.debugger``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pypto.ir.errors import PyptoError
from pypto.ir.nodes import Call, Function, FunctionKind, Program, stmt_exprs, walk_expr, walk_stmts

__all__ = ["BreakLocation", "BreakpointError", "kernel_calls", "missing_break_line", "parse_break_at"]

# FILE.py:LINE, optionally @CORE: aic, aiv, aiv1, cg3.AIV1.
BREAK_AT = re.compile(
    r"(?P<file>[^:@]+\.py):(?P<line>[1-9]\d*)(@(?P<core>(cg\d+\.)?(aic|aiv\d*)))?", re.IGNORECASE
)
BREAK_AT_FORM = "FILE.py:LINE, optionally @CORE (aic, aiv1, cg3.AIV1)"


class BreakpointError(PyptoError, ValueError):
    """A ``break_at`` of the wrong form, or on a line that no op of the program is on."""


@dataclass(frozen=True)
class BreakLocation:
    """``file.py:LINE`` (optionally ``@core``: ``aiv1``, ``cg3.AIV1``, ``aic``) where a run stops."""

    file: str
    line: int
    core: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" + (f"@{self.core}" if self.core else "")

    def matches_file(self, path: str) -> bool:
        """``path`` (a source span's file) is this file: by its full path, a path relative to the
        current directory, or its name."""
        given = os.path.normpath(self.file)
        if os.path.normpath(path) == given or os.path.basename(path) == given:
            return True
        return path.endswith(os.sep + given) or os.path.abspath(given) == os.path.normpath(path)

    def matches_core(self, core: str) -> bool:
        """``core`` (``cg0.AIV1``) is one this location stops on."""
        if self.core is None:
            return True
        want, name = self.core.lower(), core.lower()
        return name == want or name.split(".", 1)[-1] == want or (want == "aiv" and "aiv" in name)


def parse_break_at(text: str) -> BreakLocation:
    """``"kernel.py:31"`` or ``"kernel.py:31@aiv1"`` as a :class:`BreakLocation`; a
    :class:`BreakpointError` with the form to write otherwise."""
    match = BREAK_AT.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise BreakpointError(
            f"break_at takes {BREAK_AT_FORM}, got {text!r}",
            None,
            'write break_at="kernel.py:31" (or "kernel.py:31@aiv1" for one lane\'s cores)',
        )
    return BreakLocation(match["file"].strip(), int(match["line"]), match["core"])


def kernel_calls(fn: Function) -> Iterator[Call]:
    """The ops of a kernel (none of an orchestration function: a run stops on a core only)."""
    if fn.kind is FunctionKind.Orchestration:
        return
    for stmt in walk_stmts(fn.body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if isinstance(e, Call):
                    yield e


def missing_break_line(program: Program, where: BreakLocation) -> BreakpointError | None:
    """None if an op of a kernel of ``program`` is on ``where``'s line, else the error to raise,
    naming the lines of that file that hold ops (or the files the kernels are in)."""
    spans = [c.span for fn in program.functions.values() for c in kernel_calls(fn) if c.span is not None]
    if any(where.matches_file(s.file) and s.line == where.line for s in spans):
        return None
    lines = sorted({s.line for s in spans if where.matches_file(s.file)})
    if lines:
        shown = ", ".join(str(n) for n in lines[:20]) + (", ..." if len(lines) > 20 else "")
        hint = f"break on a line with kernel code; lines of {where.file} with ops: {shown}"
    else:
        files = sorted({os.path.basename(s.file) for s in spans})
        hint = f"name a file of the program's kernels: {', '.join(files) or '(none)'}"
    return BreakpointError(f"break_at={str(where)!r}: no op of the program is on that line", None, hint)
