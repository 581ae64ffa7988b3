"""Local names of a kernel body: SSA renaming and loop frames."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pypto.ir import ParseError, SourceSpan


class Namer:
    """Hands out names unique within one function: ``x``, ``x_1``, ``x_2``, ..."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


@dataclass(frozen=True)
class Binding:
    """What a Python name currently means: an IR value or a compile-time Python value."""

    value: Any
    span: SourceSpan | None


class Env:
    """Python names of the body being parsed, one frame per enclosing loop body."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Binding]] = [{}]
        self.loop_locals: dict[str, SourceSpan | None] = {}

    def lookup(self, name: str) -> Binding | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    def bind(self, name: str, value: Any, span: SourceSpan | None) -> None:
        """Bind ``name``; rebinding inside a loop a name bound before it is a loop-carried value."""
        for frame in self.frames[:-1]:
            if name in frame:
                where = frame[name].span
                before = f" (line {where.line})" if where else ""
                raise ParseError(
                    f"'{name}' is bound before the loop{before} and rebound inside it: "
                    "loop-carried values are not supported yet",
                    span,
                    f"give the value computed in the loop a new name (e.g. {name}_next), or write "
                    "it into a tensor region with out[...] = ...",
                )
        self.frames[-1][name] = Binding(value, span)

    @contextmanager
    def loop(self) -> Iterator[None]:
        """A loop body: names bound inside it end with it."""
        self.frames.append({})
        try:
            yield
        finally:
            frame = self.frames.pop()
            self.loop_locals.update({name: b.span for name, b in frame.items()})

    @contextmanager
    def lane(self, name: str, lane: Any, span: SourceSpan | None) -> Iterator[None]:
        """A region's lane variable: bound in the region's body only, unlike the names bound there."""
        frame = self.frames[-1]
        before = frame.get(name)
        self.bind(name, lane, span)
        try:
            yield
        finally:
            if before is not None:
                frame[name] = before
            else:
                frame.pop(name, None)
                self.loop_locals[name] = span
