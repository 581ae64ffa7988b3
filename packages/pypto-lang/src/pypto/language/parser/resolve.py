"""Resolving free names of a kernel against its closure, its module globals and the builtins, and
recording what a parse read, so a compiled program can tell when the values it was built from changed.

A kernel is compiled from the values its body reads at parse time: ``SCALE = 2`` in the module,
a closure's ``tile``, ``cfg.rows`` of a config object. :class:`GlobalReads` keeps a snapshot of each
(per name, and per attribute path read from it); :meth:`GlobalReads.changed` says which one no longer
holds, so the ``@pl.jit`` function compiles again instead of running a stale program (as Triton does).
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any

_MISSING = object()
_SNAPSHOT_DEPTH = 8  # nested containers deeper than this compare by identity


def snapshot(value: Any, depth: int = 0) -> Any:
    """A value's state as plain comparable data: numbers, strings and enums by value, containers and
    dataclasses by their contents, anything else (a module, a function, a kernel) by identity."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, Enum)):
        return (type(value), repr(value) if value != value else value)  # NaN equals itself here
    if depth < _SNAPSHOT_DEPTH:
        if isinstance(value, (tuple, list)):
            return (type(value), tuple(snapshot(v, depth + 1) for v in value))
        if isinstance(value, dict):
            return (dict, tuple((snapshot(k, depth + 1), snapshot(v, depth + 1)) for k, v in value.items()))
        if isinstance(value, (set, frozenset)):
            return (type(value), frozenset(snapshot(v, depth + 1) for v in value))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            return (type(value), tuple((f.name, snapshot(getattr(value, f.name), depth + 1)) for f in fields))
    return ("identity", id(value))


class GlobalReads:
    """What one parse read of module globals and closures: ``(names, path) -> snapshot``.

    >>> with recording_reads() as reads:  # doctest: +SKIP
    ...     program = parse_program(kernel, params)
    >>> reads.changed()  # None while every value read still holds  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self._reads: dict[tuple[int, tuple[str, ...]], tuple[GlobalNames, tuple[str, ...], Any]] = {}
        self._alive: list[Any] = []  # values compared by identity stay alive, so ids are not reused

    def note(self, names: GlobalNames, path: tuple[str, ...], value: Any) -> None:
        key = (id(names), path)
        if key not in self._reads:
            self._reads[key] = (names, path, snapshot(value))
            self._alive.append(value)

    def changed(self) -> str | None:
        """The first name (``SCALE``, ``cfg.rows``) whose value differs from what the parse read."""
        for names, path, before in self._reads.values():
            found, value = names.resolve(path)
            if not found or snapshot(value) != before:
                return ".".join(path)
        return None


_recording: ContextVar[tuple[GlobalReads, ...]] = ContextVar("pypto_global_reads", default=())


@contextmanager
def recording_reads() -> Iterator[GlobalReads]:
    """Record every global and closure value read inside the block (nested parses included); a
    recording open around this one sees the same reads."""
    reads = GlobalReads()
    token = _recording.set((*_recording.get(), reads))
    try:
        yield reads
    finally:
        _recording.reset(token)


class GlobalNames:
    """The names a kernel sees besides its own locals, read at parse time (never executed).

    >>> GlobalNames(fn).lookup("pl")  # doctest: +SKIP
    (True, <module 'pypto.language'>)
    """

    def __init__(self, func: Callable[..., Any]) -> None:
        self.globals: dict[str, Any] = func.__globals__
        cells = func.__closure__ or ()
        self.closure = dict(zip(func.__code__.co_freevars, cells, strict=True))
        # The defining function's locals when the decorator ran (names a string annotation reads;
        # see pypto.language.jit._note_enclosing_locals), after the closure, before the globals.
        self.enclosing: dict[str, Any] = getattr(func, "__pypto_enclosing_locals__", {})
        raw = self.globals.get("__builtins__", builtins)
        self.builtins: dict[str, Any] = raw if isinstance(raw, dict) else vars(raw)

    def lookup(self, name: str) -> tuple[bool, Any]:
        """``(found, value)`` for ``name``; a closure cell not yet filled counts as not found."""
        found, value = self._lookup(name)
        if found:
            self.noted((name,), value)
        return found, value

    def noted(self, path: tuple[str, ...], value: Any) -> None:
        """Tell the recording parse (if any) that ``path`` (a name, then attributes) read ``value``."""
        for reads in _recording.get():
            reads.note(self, path, value)

    def resolve(self, path: tuple[str, ...]) -> tuple[bool, Any]:
        """``(found, value)`` of a name followed by attributes, as it reads now."""
        found, value = self._lookup(path[0])
        for attr in path[1:]:
            if not found:
                break
            value = getattr(value, attr, _MISSING)
            found = value is not _MISSING
        return found, value

    def _lookup(self, name: str) -> tuple[bool, Any]:
        if name in self.closure:
            try:
                return True, self.closure[name].cell_contents
            except ValueError:
                return False, None
        for table in (self.enclosing, self.globals, self.builtins):
            value = table.get(name, _MISSING)
            if value is not _MISSING:
                return True, value
        return False, None
