"""FileCheck-style checks of printed IR, for tests of passes and of the printer.

A test states the lines that matter, in order, instead of keeping a golden copy of the whole
text, so a change of the printer's layout elsewhere does not churn every test::

    filecheck(print_ir(lowered), '''
        CHECK-LABEL: def mixed_aic(
        CHECK:       acc: pl.Tile[[128, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right
        CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        CHECK-LABEL: def mixed_aiv(
        CHECK-NOT:   pl.tile.matmul
        CHECK:       pl.tile.tpop_from_aic(shape=[64, 128]
    ''')

The directives are LLVM FileCheck's: ``CHECK:`` finds its pattern at or after the end of the
last match; ``CHECK-NEXT:`` on the line right after the last match's; ``CHECK-SAME:`` on the last
match's line, after it; ``CHECK-EMPTY:`` wants the next line empty; ``CHECK-NOT:`` must not
appear between the matches before and after it; ``CHECK-LABEL:`` lines are matched first, in
order, and cut the text into blocks that confine the directives after each label. A pattern is
literal text in which a run of spaces matches any run of spaces; ``{{regex}}`` is a regular
expression, ``[[NAME:regex]]`` captures what it matched and ``[[NAME]]`` must repeat it. A
failure raises :class:`CheckFailure` (an ``AssertionError``) that shows where matching stopped.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["CheckFailure", "filecheck"]

_DIRECTIVE = re.compile(r"(?<![\w-])CHECK(?:-([A-Za-z]+))?:(.*)$")
_KINDS = ("CHECK", "CHECK-NEXT", "CHECK-SAME", "CHECK-EMPTY", "CHECK-NOT", "CHECK-LABEL")
# Literal text, then a {{regex}}, a [[NAME:regex]] capture or a [[NAME]] use.
_PIECE = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_]\w*)(?::(.*?))?\]\]")
_SPACES = re.compile(r"[ \t]+")
_SHOWN_LINES = 80  # of the input, in a failure


class CheckFailure(AssertionError):
    """The text does not satisfy the checks; the message shows where matching stopped."""


@dataclass(frozen=True)
class _Directive:
    """One check line: its kind (``CHECK-NEXT``), its pattern as written, its line in the checks."""

    kind: str
    pattern: str
    line: int

    def __str__(self) -> str:
        return f"{self.kind}: {self.pattern} (checks line {self.line})"


def filecheck(text: str, checks: str) -> None:
    """Match ``text`` against the directives in ``checks``; raise :class:`CheckFailure` if it fails.

    >>> filecheck("a = load(x)\\nb = add(a, a)\\n", "CHECK: load(\\nCHECK-NEXT: add(a, a)")
    """
    _Matcher(text, _parse_checks(checks)).run()


def _parse_checks(checks: str) -> list[_Directive]:
    """The directives of ``checks`` in order; lines without one are comments."""
    directives: list[_Directive] = []
    for number, line in enumerate(checks.splitlines(), start=1):
        found = _DIRECTIVE.search(line)
        if found is None:
            continue
        kind = "CHECK" + (f"-{found.group(1)}" if found.group(1) else "")
        pattern = found.group(2).strip()
        if kind not in _KINDS:
            known = ", ".join(_KINDS)
            raise CheckFailure(f"checks line {number}: unknown directive {kind}: (known: {known})")
        if not pattern and kind != "CHECK-EMPTY":
            raise CheckFailure(f"checks line {number}: {kind}: has no pattern")
        directives.append(_Directive(kind, pattern, number))
    if not directives:
        raise CheckFailure("the checks hold no CHECK directive")
    return directives


@dataclass
class _Block:
    """The part of the text between two labels, and the directives that match inside it."""

    start: int
    end: int
    directives: list[_Directive]
    label: _Directive | None = None

    @property
    def name(self) -> str:
        return f"the block of CHECK-LABEL: {self.label.pattern}" if self.label else "the text"


class _Matcher:
    def __init__(self, text: str, directives: list[_Directive]) -> None:
        self.text = text
        self.directives = directives
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.variables: dict[str, str] = {}

    def run(self) -> None:
        for block in self.blocks():
            self.match_block(block)

    def blocks(self) -> list[_Block]:
        """Labels matched in order over the whole text; each block runs to the next label."""
        blocks = [_Block(0, len(self.text), [])]
        for directive in self.directives:
            if directive.kind != "CHECK-LABEL":
                blocks[-1].directives.append(directive)
                continue
            pos = blocks[-1].start
            found = self.search(directive, pos, len(self.text))
            if found is None:
                where = f"after input line {self.line_of(pos) + 1}" if blocks[-1].label else "in the text"
                raise self.failure(f"{directive}: no match {where}", pos, (pos, len(self.text)), directive)
            blocks[-1].end = found.start()
            blocks.append(_Block(found.end(), len(self.text), [], directive))
        return blocks

    def match_block(self, block: _Block) -> None:
        pos = block.start
        # After a label, its line is the last match's; at the top of the text there is none.
        last_line: int | None = self.line_of(block.start) if block.label else None
        last = block.label
        excluded: list[_Directive] = []
        for directive in block.directives:
            if directive.kind == "CHECK-NOT":
                excluded.append(directive)
                continue
            if directive.kind != "CHECK" and last_line is None:
                raise CheckFailure(f"{directive}: there is no match before it to be next to")
            start, end = self.find(directive, pos, last_line, block)
            self.check_absent(excluded, (pos, start), last, directive)
            excluded = []
            pos, last_line, last = end, self.line_of(start), directive
        self.check_absent(excluded, (pos, block.end), last, None)

    def find(self, directive: _Directive, pos: int, last_line: int | None, block: _Block) -> tuple[int, int]:
        """Where ``directive`` matches, as (start, end) offsets; a failure if it does not."""
        if directive.kind == "CHECK":
            where, stop, span = f"in the rest of {block.name}", pos, (pos, block.end)
        elif directive.kind == "CHECK-SAME":
            assert last_line is not None
            span = (pos, self.line_end(last_line))
            where, stop = f"on input line {last_line + 1} after the last match", pos
        else:  # CHECK-NEXT, CHECK-EMPTY: the line after the last match's
            assert last_line is not None
            line = last_line + 1
            if line >= len(self.line_starts) or self.line_starts[line] >= block.end:
                raise self.failure(f"{directive}: the last match is on the last line of {block.name}", pos)
            stop = self.line_starts[line]
            span = (stop, self.line_end(line))
            if directive.kind == "CHECK-EMPTY":
                if span[0] != span[1]:
                    raise self.failure(f"{directive}: input line {line + 1} is not empty", stop)
                return span
            where = f"on input line {line + 1}, the line after the last match"
        found = self.search(directive, *span)
        if found is None:
            raise self.failure(f"{directive}: no match {where}", stop, (pos, block.end), directive)
        return found.start(), found.end()

    def check_absent(
        self,
        excluded: list[_Directive],
        span: tuple[int, int],
        before: _Directive | None,
        after: _Directive | None,
    ) -> None:
        """No ``CHECK-NOT`` pattern of ``excluded`` matches in ``span``."""
        for directive in excluded:
            found = self.search(directive, *span)
            if found is not None:
                between = f"after {before}" if before else "before"
                between += f" and before {after}" if after else " and the end of its block"
                line = self.line_of(found.start()) + 1
                raise self.failure(f"{directive}: found on input line {line}, {between}", found.start())

    def search(self, directive: _Directive, start: int, end: int) -> re.Match[str] | None:
        """The first match of ``directive`` in ``text[start:end]``; its captures become variables."""
        found = self.compile(directive).search(self.text, start, end)
        if found is not None:
            self.variables.update({k: v for k, v in found.groupdict().items() if v is not None})
        return found

    # ------------------------------------------------------------ patterns

    def compile(self, directive: _Directive) -> re.Pattern[str]:
        """The pattern as a regular expression, with the variables captured so far filled in."""
        parts: list[str] = []
        defined: set[str] = set()
        pos = 0
        for piece in _PIECE.finditer(directive.pattern):
            parts.append(_literal(directive.pattern[pos : piece.start()]))
            regex, name, capture = piece.groups()
            if regex is not None:
                parts.append(f"(?:{regex})")
            elif capture is not None:
                parts.append(f"(?P<{name}>{capture})")
                defined.add(name)
            elif name in defined:
                parts.append(f"(?P={name})")
            elif name in self.variables:
                parts.append(re.escape(self.variables[name]))
            else:
                raise CheckFailure(f"{directive}: [[{name}]] is used before any [[{name}:...]] captured it")
            pos = piece.end()
        parts.append(_literal(directive.pattern[pos:]))
        try:
            return re.compile("".join(parts))
        except re.error as exc:
            raise CheckFailure(f"{directive}: bad regular expression: {exc}") from None

    # ------------------------------------------------------------ positions and messages

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset) - 1

    def line_end(self, line: int) -> int:
        end = self.text.find("\n", self.line_starts[line])
        return len(self.text) if end < 0 else end

    def line_text(self, line: int) -> str:
        return self.text[self.line_starts[line] : self.line_end(line)]

    def failure(
        self,
        headline: str,
        stop: int,
        search: tuple[int, int] | None = None,
        pattern: _Directive | None = None,
    ) -> CheckFailure:
        """The headline; the input line where matching stopped, with a caret; the line of the searched
        range that comes closest to the pattern; the variables captured; the input, numbered."""
        line = self.line_of(stop)
        column = stop - self.line_starts[line]
        lines = [headline, f"matching stopped at input line {line + 1}, column {column + 1}:"]
        lines += [self.numbered(line), " " * (9 + column) + "^"]
        if search is not None and pattern is not None:
            closest = self.closest_line(pattern.pattern, search)
            if closest is not None and closest != line:
                lines += ["the closest line in the range searched:", self.numbered(closest)]
        if self.variables:
            lines.append(
                "captured: " + ", ".join(f"[[{k}]]={v!r}" for k, v in sorted(self.variables.items()))
            )
        shown = range(len(self.line_starts))
        if len(shown) > _SHOWN_LINES:  # a long input: the lines around where matching stopped
            shown = range(max(0, line - 10), min(len(self.line_starts), line + _SHOWN_LINES - 10))
        lines.append("input:")
        lines += [self.numbered(n, marked=n == line) for n in shown]
        return CheckFailure("\n".join(lines))

    def numbered(self, line: int, marked: bool = False) -> str:
        return f"{'>' if marked else ' '}{line + 1:>5} | {self.line_text(line)}"

    def closest_line(self, pattern: str, search: tuple[int, int]) -> int | None:
        """The line of ``search`` that holds most of ``pattern``'s characters in order, if any holds half."""
        first, last = self.line_of(search[0]), self.line_of(max(search[0], search[1] - 1))
        wanted = _SPACES.sub(" ", pattern)

        def held(line: int) -> int:
            text = _SPACES.sub(" ", self.line_text(line))
            blocks = difflib.SequenceMatcher(None, text, wanted, autojunk=False).get_matching_blocks()
            return sum(b.size for b in blocks)

        best = max(range(first, last + 1), key=held)
        return best if 2 * held(best) >= len(wanted) else None


def _literal(text: str) -> str:
    """Literal pattern text as a regular expression: a run of spaces matches any run of spaces."""
    return r"[ \t]+".join(re.escape(part) for part in _SPACES.split(text))
