"""Reading a rendered PyptoError back: header, source line, underlined text and hint."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pypto.ir import PyptoError


def line_of(path: str, snippet: str) -> int:
    """The 1-based line of ``path`` that starts with ``snippet`` (after indentation; must be unique)."""
    text = Path(path).read_text().splitlines()
    lines = [i for i, line in enumerate(text, 1) if line.strip().startswith(snippet)]
    assert len(lines) == 1, f"{snippet!r} found on lines {lines}"
    return lines[0]


@dataclass(frozen=True)
class Rendered:
    header: str
    source: str
    underlined: str
    hint: str | None


def rendered(err: PyptoError) -> Rendered:
    """Split ``str(err)``: ``file:line:col: error: msg`` / ``NN | source`` / ``| ^^^`` / ``hint: ...``."""
    lines = str(err).splitlines()
    header, source, carets = lines[0], lines[1], lines[2]
    gutter = source.index("| ") + 2
    start = carets.index("^")
    width = len(carets) - start
    hint = lines[3].removeprefix("hint: ") if len(lines) > 3 else None
    return Rendered(header, source[gutter:], source[start : start + width], hint)


def header(path: str, snippet: str, column_text: str, message: str) -> str:
    """The expected first line: the file, the line holding ``snippet`` and the column of ``column_text``."""
    line = line_of(path, snippet)
    col = Path(path).read_text().splitlines()[line - 1].index(column_text) + 1
    return f"{path}:{line}:{col}: error: {message}"


def module_at(path: Path, source: str) -> ModuleType:
    """``source`` written to ``path`` and imported: the parser reads a kernel's source from its file."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
