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


# What a nested frame is, as messages name it.
FRAME_NAMES = {"loop": "a loop", "if": "an if arm"}


class Env:
    """Python names of the body being parsed, one frame per enclosing loop body or ``if`` arm.

    ``ended`` holds the names whose frame has closed: ``name -> (where it was bound, frame kind)``.
    """

    def __init__(self) -> None:
        self.frames: list[dict[str, Binding]] = [{}]
        self.kinds: list[str] = ["body"]
        self.ended: dict[str, tuple[SourceSpan | None, str]] = {}

    def lookup(self, name: str) -> Binding | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    def bind(self, name: str, value: Any, span: SourceSpan | None) -> None:
        """Bind ``name``. In an ``if`` arm the binding shadows the one before the if (the values
        leave the arms when the if ends: :meth:`StmtParser.run_time_if`). In a loop that does not
        carry it, rebinding a name bound before the loop would need the value to leave the loop,
        which is an error; a name a loop carries is bound in the loop's frame first, so rebinding
        it there is legal."""
        if name in self.frames[-1] or self.kinds[-1] == "if":
            self.frames[-1][name] = Binding(value, span)
            return
        for frame in self.frames[:-1]:
            if name in frame:
                raise _rebinding_error(name, frame[name].span, span)
        self.frames[-1][name] = Binding(value, span)

    def carry(self, name: str, value: Any, span: SourceSpan | None) -> None:
        """Bind a loop-carried ``name`` in the loop's frame, where the body may then rebind it."""
        self.frames[-1][name] = Binding(value, span)

    @contextmanager
    def loop(self) -> Iterator[dict[str, Binding]]:
        """A loop body: names bound inside it end with it (unless the loop hands them on: see
        :meth:`StmtParser.leaving_names`); the ``with`` gives the body's bindings."""
        with self._frame("loop") as frame:
            yield frame

    @contextmanager
    def branch(self) -> Iterator[dict[str, Binding]]:
        """One arm of a run-time ``if``: names bound inside it end with it; the ``with`` gives
        the arm's bindings, from which the caller takes the values that leave the if."""
        with self._frame("if") as frame:
            yield frame

    @contextmanager
    def _frame(self, kind: str) -> Iterator[dict[str, Binding]]:
        self.frames.append({})
        self.kinds.append(kind)
        try:
            yield self.frames[-1]
        finally:
            frame = self.frames.pop()
            self.kinds.pop()
            self.ended.update({name: (b.span, kind) for name, b in frame.items()})

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
                self.ended[name] = (span, "loop")


def _rebinding_error(name: str, bound: SourceSpan | None, span: SourceSpan | None) -> ParseError:
    before = f" (line {bound.line})" if bound else ""
    return ParseError(
        f"'{name}' is bound before the loop{before} and rebound inside it, but this loop "
        "cannot carry it (pl.parallel carries only scalar arrays; a loop carries scalars, tiles, tensors "
        "and arrays)",
        span,
        f"use pl.range, or give the value computed in the loop a new name (e.g. {name}_next)",
    )
