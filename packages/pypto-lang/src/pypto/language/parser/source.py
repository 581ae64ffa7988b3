"""The source of a kernel: its AST and the map from AST positions to the user's file spans."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.ir import ParseError, SourceSpan


def _char_col(text: str, byte_col: int) -> int:
    """AST columns count UTF-8 bytes; carets need characters."""
    return len(text.encode()[:byte_col].decode(errors="replace"))


@dataclass(frozen=True)
class KernelSource:
    """The ``def`` of one Python function, parsed, with file-relative positions.

    >>> KernelSource.of(fn).span(fn_node.args.args[0])  # doctest: +SKIP
    """

    file: str
    tree: ast.FunctionDef
    first_line: int  # file line of the first source line (the first decorator)
    lines: tuple[str, ...]
    line_offset: int  # file line = AST line + line_offset

    @classmethod
    def of(cls, func: Callable[..., Any]) -> KernelSource:
        try:
            lines, first_line = inspect.getsourcelines(func)
        except (OSError, TypeError) as exc:
            raise ParseError(
                f"cannot read the source of {getattr(func, '__qualname__', func)!r}: {exc}",
                hint="define @pl.jit functions in a .py file (the parser reads their source)",
            ) from None
        text = "".join(lines)
        indented = lines[0][:1] in (" ", "\t")
        # An indented def (a method, a function in a function) parses inside `if True:`, which
        # keeps every column as it is in the file and shifts lines by one.
        module = ast.parse("if True:\n" + text if indented else text)
        node = module.body[0].body[0] if indented else module.body[0]  # type: ignore[attr-defined]
        if not isinstance(node, ast.FunctionDef):
            raise ParseError(
                f"@pl.jit decorates a plain def, got {type(node).__name__}",
                SourceSpan(func.__code__.co_filename, first_line),
            )
        offset = first_line - 2 if indented else first_line - 1
        return cls(func.__code__.co_filename, node, first_line, tuple(lines), offset)

    def span(self, node: ast.AST) -> SourceSpan:
        """The file span of an AST node (line, character column, end column on the same line)."""
        line = node.lineno + self.line_offset  # type: ignore[attr-defined]
        index = line - self.first_line
        text = self.lines[index] if 0 <= index < len(self.lines) else ""
        col = _char_col(text, node.col_offset)  # type: ignore[attr-defined]
        end_col = None
        if getattr(node, "end_lineno", None) == node.lineno:  # type: ignore[attr-defined]
            end_col = _char_col(text, node.end_col_offset)  # type: ignore[attr-defined]
        return SourceSpan(self.file, line, col, end_col)
