"""Pipeline strings: ``"outline-scopes,tile-matmul{k_block=128},allocate"``, in the style of MLIR.

Passes are separated by commas and named by their pipeline name (``tile-matmul``) or their name
(``AutoTileMatmul``). Options follow a pass in braces, ``key=value``, separated by spaces or
commas; a value is parsed by the type of the pass's field (``128``, ``true``, ``up_down``,
``none``, a word or a quoted string). Every mistake is a :class:`PipelineError` that says what is
wrong and how to fix it; given where the string starts in a file (``at``), its span points at
the mistake.

>>> pipeline = parse_pipeline("outline-scopes,tile-matmul{k_block=128}")
>>> str(pipeline), [p.name for p in pipeline.build()]
('outline-scopes,tile-matmul{k_block=128}', ['OutlineScopes', 'AutoTileMatmul'])
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pypto.ir import Program, PyptoError, SourceSpan, Target
from pypto.passes.manager import Pass, PassContext, PassManager, dump_to
from pypto.passes.options import BadValue, PassOption, render
from pypto.passes.registry import DEFAULT_PIPELINE, PassEntry, PassRegistry

_SEPARATORS = " \t\n,"
_STOPS = " \t\n,{}="  # end a bare value
_QUOTES = "\"'"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class PipelineError(PyptoError, ValueError):
    """A pipeline string that cannot be used. ``start`` and ``end`` are the offsets of the
    mistake in the string."""

    def __init__(
        self,
        message: str,
        span: SourceSpan | None = None,
        hint: str | None = None,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        super().__init__(message, span, hint)
        self.start = start
        self.end = end


# ---------------------------------------------------------------- the text


@dataclass(frozen=True)
class Word:
    """A piece of the pipeline string and its offsets (``text`` as written, quotes removed)."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class PassSpec:
    """One pass as written: its name and its ``key=value`` options (not yet looked up)."""

    name: Word
    options: tuple[tuple[Word, Word], ...] = ()


class _Scanner:
    """Reads a pipeline string left to right; a mistake is a :class:`PipelineError` at its offset."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self, chars: str = " \t\n") -> None:
        while self.peek() and self.peek() in chars:
            self.pos += 1

    def error(
        self, message: str, hint: str, start: int | None = None, end: int | None = None
    ) -> PipelineError:
        start = self.pos if start is None else start
        return PipelineError(message, hint=hint, start=start, end=max(start + 1, end or start + 1))

    def word(self) -> Word:
        """A pass or option name: letters, digits, ``_``, ``-`` and ``.``."""
        start = self.pos
        while self.peek() and self.peek() in _NAME_CHARS:
            self.pos += 1
        return Word(self.text[start : self.pos], start, self.pos)

    def bare(self) -> Word:
        """A value without quotes: everything up to a space, ``,``, a brace, ``=`` or a quote."""
        start = self.pos
        while self.peek() and self.peek() not in _STOPS and self.peek() not in _QUOTES:
            self.pos += 1
        return Word(self.text[start : self.pos], start, self.pos)

    def specs(self) -> tuple[PassSpec, ...]:
        self.skip()
        if not self.peek():
            return ()  # an empty pipeline runs no pass
        found = [self.spec()]
        while self.peek():
            comma = self.pos
            self.pos += 1
            self.skip()
            if not self.peek():
                raise self.error(
                    "the pipeline ends with ','", "remove the last ',', or name a pass after it", comma
                )
            found.append(self.spec())
        return tuple(found)

    def spec(self) -> PassSpec:
        name = self.word()
        if not name.text:
            raise self._no_name()
        self.skip()
        options: tuple[tuple[Word, Word], ...] = ()
        if self.peek() == "{":
            options = self.options(name)
            self.skip()
        if self.peek() and self.peek() != ",":
            raise self._after_pass(name)
        return PassSpec(name, options)

    def _no_name(self) -> PipelineError:
        char = self.peek()
        if char == ",":
            first = not self.text[: self.pos].strip()
            message = "the pipeline starts with ','" if first else "two ',' in a row: a pass name is missing"
            return self.error(message, "remove the extra ',', or name a pass there")
        if char == "{":
            return self.error(
                "options '{...}' with no pass name before them",
                "write them after a pass: tile-matmul{k_block=128}",
            )
        if char == "}":
            return self.error(
                "unbalanced '}': no '{' opens it",
                "remove it, or open the options with '{' after the pass name",
            )
        return self.error(f"{char!r} cannot start a pass name", "name a pass, e.g. tile-matmul")

    def _after_pass(self, name: Word) -> PipelineError:
        char = self.peek()
        if char == "}":
            return self.error(
                "unbalanced '}': no '{' opens it",
                "remove it, or open the options with '{' after the pass name",
            )
        if char == "{":
            return self.error(
                f"a second '{{' after the options of {name.text!r}",
                "give a pass one '{...}' with all its options",
            )
        start = self.pos
        stray = self.word() if char not in _QUOTES else Word(char, start, start + 1)
        shown = stray.text or char
        return self.error(
            f"{shown!r} after pass {name.text!r}: passes are separated by ','",
            f"write {name.text},{shown} for two passes, or {name.text}{{key=value}} for its options",
            start,
            max(stray.end, start + 1),
        )

    def options(self, name: Word) -> tuple[tuple[Word, Word], ...]:
        brace = self.pos
        self.pos += 1
        found: list[tuple[Word, Word]] = []
        while True:
            self.skip(_SEPARATORS)
            char = self.peek()
            if not char:
                raise self.error(
                    f"unbalanced '{{': the options of {name.text!r} are never closed",
                    f"close them with '}}': {self.text[name.start :].rstrip()}}}",
                    brace,
                )
            if char == "}":
                self.pos += 1
                return tuple(found)
            found.append(self.option(name))

    def option(self, name: Word) -> tuple[Word, Word]:
        key = self.word()
        if not key.text:
            what = "'{'" if self.peek() == "{" else repr(self.peek())
            raise self.error(
                f"{what} inside the options of {name.text!r}: expected key=value",
                "write them as {key=value key2=value2}",
            )
        self.skip()
        if self.peek() != "=":
            raise self.error(
                f"option {key.text} of {name.text!r} has no value",
                f"write {key.text}=VALUE, or close the options of {name.text!r} with '}}' before it",
                key.start,
                key.end,
            )
        self.pos += 1
        self.skip()
        value = self.quoted() if self.peek() and self.peek() in _QUOTES else self.bare()
        if self.peek() == "{":
            raise self.error(
                f"'{{' inside the options of {name.text!r}", "options do not nest: write {key=value}"
            )
        if value.start == value.end:
            raise self.error(
                f"option {key.text} of {name.text!r} has no value",
                f"write {key.text}=VALUE",
                key.start,
                key.end,
            )
        return key, value

    def quoted(self) -> Word:
        quote, start = self.peek(), self.pos
        close = self.text.find(quote, start + 1)
        if close < 0:
            raise self.error(
                "a quoted value is never closed", f"close it with {quote}", start, len(self.text)
            )
        self.pos = close + 1
        return Word(self.text[start + 1 : close], start, self.pos)


def parse_text(text: str) -> tuple[PassSpec, ...]:
    """The passes ``text`` names, as written (syntax only: nothing is looked up)."""
    return _Scanner(text).specs()


# ---------------------------------------------------------------- the passes


@dataclass(frozen=True)
class PipelineStep:
    """One pass of a pipeline with its options, typed: ``tile-matmul{k_block=128}``."""

    entry: PassEntry
    options: tuple[tuple[str, Any], ...] = ()

    def build(self) -> Pass:
        """A new instance of the pass, with its options."""
        built: Pass = self.entry.load()(**dict(self.options))
        return built

    def _options_text(self) -> str:
        return "{" + " ".join(f"{k}={render(v)}" for k, v in self.options) + "}" if self.options else ""

    def __str__(self) -> str:
        return self.entry.pipeline_name + self._options_text()

    @property
    def label(self) -> str:
        """The pass's name with its options, as reports show it: ``AutoTileMatmul{k_block=128}``."""
        return self.entry.name + self._options_text()


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of passes with their options; ``str()`` is its canonical pipeline string."""

    steps: tuple[PipelineStep, ...] = ()

    def build(self) -> list[Pass]:
        return [step.build() for step in self.steps]

    def __str__(self) -> str:
        return ",".join(map(str, self.steps))

    def __iter__(self) -> Iterator[PipelineStep]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def key(self) -> tuple[tuple[str, str], ...]:
        """What a compiled program depends on: each pass with its options, and who provides it."""
        return tuple((str(step), step.entry.origin) for step in self.steps)

    @classmethod
    def default(cls, registry: PassRegistry | None = None) -> Pipeline:
        """The default pipeline: every built-in pass, in order."""
        found = registry or PassRegistry()
        return cls(tuple(PipelineStep(_found(found, name)) for name in DEFAULT_PIPELINE))


def _found(registry: PassRegistry, name: str) -> PassEntry:
    entry = registry.find(name)
    if entry is None:
        raise PipelineError(f"unknown pass {name!r}; known passes: {known_passes(registry)}")
    return entry


def known_passes(registry: PassRegistry) -> str:
    """``OutlineScopes (outline-scopes), AutoTileMatmul (tile-matmul), ...``."""
    return ", ".join(f"{e.name} ({e.pipeline_name})" for e in registry.entries())


def resolve(specs: Sequence[PassSpec], registry: PassRegistry | None = None) -> Pipeline:
    """Look each pass of ``specs`` up in ``registry`` and type its options; a
    :class:`PipelineError` (with offsets, no span) names the first thing that cannot be used."""
    registry = registry or PassRegistry()
    return Pipeline(tuple(_step(spec, registry) for spec in specs))


def _step(spec: PassSpec, registry: PassRegistry) -> PipelineStep:
    entry = registry.find(spec.name.text)
    if entry is None:
        raise _unknown_pass(spec.name, registry)
    if not spec.options:
        return PipelineStep(entry)  # a built-in pass stays unimported until it is built
    known = {o.name: o for o in entry.options()}
    given: dict[str, Any] = {}
    for key, value in spec.options:
        found = known.get(key.text.replace("-", "_"))
        if found is None:
            raise _unknown_option(key, entry, list(known.values()))
        if found.name in given:
            raise PipelineError(
                f"option {found.name} of {entry.pipeline_name!r} is given twice",
                hint=f"keep one {found.name}=...",
                start=key.start,
                end=key.end,
            )
        try:
            given[found.name] = found.parse(value.text)
        except BadValue as bad:
            raise _bad_value(found, entry, repr(value.text), bad, value) from None
    # Canonical: the options in field order, those at their default left out.
    chosen = tuple(
        (o.name, given[o.name]) for o in known.values() if o.name in given and given[o.name] != o.default
    )
    return PipelineStep(entry, chosen)


def _bad_value(
    option: PassOption, entry: PassEntry, got: str, bad: BadValue, where: Word | None
) -> PipelineError:
    return PipelineError(
        f"option {option.name} of {entry.pipeline_name!r} takes {bad.expected}, got {got}",
        hint=f"write {option.name}={bad.example}",
        start=where.start if where else 0,
        end=where.end if where else None,
    )


def _unknown_pass(name: Word, registry: PassRegistry) -> PipelineError:
    lowered: dict[str, str] = {}
    for word in registry.words():  # a pipeline name before the name it stands beside
        lowered.setdefault(word.lower(), word)
    close = difflib.get_close_matches(name.text.lower(), list(lowered), n=1, cutoff=0.6)
    hint = f"did you mean {lowered[close[0]]}?" if close else "name one of the known passes"
    return PipelineError(
        f"unknown pass {name.text!r}; known passes: {known_passes(registry)}",
        hint=hint,
        start=name.start,
        end=name.end,
    )


def _unknown_option(key: Word, entry: PassEntry, options: list[PassOption]) -> PipelineError:
    if not options:
        return PipelineError(
            f"pass {entry.pipeline_name!r} has no option {key.text!r}: it takes no options",
            hint=f"write {entry.pipeline_name} alone",
            start=key.start,
            end=key.end,
        )
    names = [o.name for o in options]
    close = difflib.get_close_matches(key.text.replace("-", "_"), names, n=1)
    listed = ", ".join(o.describe() for o in options)
    return PipelineError(
        f"pass {entry.pipeline_name!r} has no option {key.text!r}; its options: {listed}",
        hint=f"did you mean {close[0]}=?" if close else f"use one of its options: {', '.join(names)}",
        start=key.start,
        end=key.end,
    )


def parse_pipeline(
    text: str, registry: PassRegistry | None = None, *, at: SourceSpan | None = None
) -> Pipeline:
    """The pipeline ``text`` names, its passes looked up in ``registry`` (default: the built-in
    ones). ``at`` is where ``text`` starts in a file (the first character inside its quotes): an
    error's span then points at the mistake in that line; without it the error has no span."""
    try:
        return resolve(parse_text(text), registry)
    except PipelineError as err:
        raise placed(err, text, at) from None


def placed(err: PipelineError, text: str, at: SourceSpan | None) -> PipelineError:
    """``err`` with the span of its offsets in ``text``, which starts at ``at`` (a copy of ``at``
    when ``text`` spans lines before the mistake)."""
    if at is None:
        return err
    if "\n" in text[: err.start]:
        err.span = at
        return err
    end = at.col + (err.end if err.end is not None else err.start + 1)
    err.span = replace(at, col=at.col + err.start, end_col=end)
    return err


# ---------------------------------------------------------------- building and running


def build_pass(name: str, **options: Any) -> Pass:
    """A built-in pass by name or pipeline name, with options as keyword arguments:
    ``build_pass("tile-matmul", k_block=128)``. A wrong name or option is a :class:`PipelineError`."""
    registry = PassRegistry()
    entry = registry.find(name)
    if entry is None:
        raise _unknown_pass(Word(name, 0, len(name)), registry)
    known = {o.name: o for o in entry.options()}
    for key, value in options.items():
        if key not in known:
            raise _unknown_option(Word(key, 0, len(key)), entry, list(known.values()))
        try:
            known[key].check(value)
        except BadValue as bad:
            raise _bad_value(known[key], entry, repr(value), bad, None) from None
    built: Pass = entry.load()(**options)
    return built


def default_pipeline() -> list[Pass]:
    """A new instance of every pass of the default pipeline, in order."""
    return Pipeline.default().build()


def lower(
    program: Program,
    target: Target,
    *,
    options: dict[str, Any] | None = None,
    dump_dir: str | Path | None = None,
    verify: bool = True,
    pipeline: str | Pipeline | None = None,
) -> Program:
    """Run a pipeline (default: the default one): a parsed program in, a program a backend can
    run out. ``pipeline`` may be a pipeline string: ``lower(p, t, pipeline="outline-scopes")``."""
    if isinstance(pipeline, str):
        pipeline = parse_pipeline(pipeline)
    passes = (Pipeline.default() if pipeline is None else pipeline).build()
    instruments = [dump_to(dump_dir)] if dump_dir else []
    ctx = PassContext(target, dict(options or {}))
    return PassManager(passes, instruments, verify).run(program, ctx)
