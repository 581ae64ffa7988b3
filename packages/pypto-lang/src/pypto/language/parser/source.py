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


def _def_node(text: str, indented: bool) -> ast.stmt | None:
    """The first statement of a function's source lines (None if they do not parse on their own)."""
    # An indented def (a method, a function in a function) parses inside `if True:`, which
    # keeps every column as it is in the file and shifts lines by one.
    try:
        module = ast.parse("if True:\n" + text if indented else text)
    except SyntaxError:
        return None
    return module.body[0].body[0] if indented else module.body[0]  # type: ignore[attr-defined]


def _described(node: ast.stmt | None) -> str:
    if isinstance(node, ast.AsyncFunctionDef):
        return "an async def"
    if isinstance(node, ast.ClassDef):
        return "a class"
    return "something that is not a def"


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
        code = getattr(func, "__code__", None)
        where = SourceSpan(code.co_filename, code.co_firstlineno) if code is not None else None
        try:
            lines, first_line = inspect.getsourcelines(func)
        except (OSError, TypeError) as exc:
            raise ParseError(
                f"cannot read the source of {getattr(func, '__qualname__', func)!r}: {exc}",
                where,
                "define @pl.jit functions in a .py file (the parser reads their source)",
            ) from None
        text = "".join(lines)
        indented = lines[0][:1] in (" ", "\t")
        node = _def_node(text, indented)
        if not isinstance(node, ast.FunctionDef):
            got = "a lambda" if func.__name__ == "<lambda>" else _described(node)
            raise ParseError(
                f"@pl.jit decorates a plain def, got {got}",
                SourceSpan(func.__code__.co_filename, first_line),
                "write the kernel as `def name(...):` with the decorator on the line above",
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
