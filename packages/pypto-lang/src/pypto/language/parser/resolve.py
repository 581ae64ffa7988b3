"""Resolving free names of a kernel against its closure, its module globals and the builtins."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

_MISSING = object()


class GlobalNames:
    """The names a kernel sees besides its own locals, read at parse time (never executed).

    >>> GlobalNames(fn).lookup("pl")  # doctest: +SKIP
    (True, <module 'pypto.language'>)
    """

    def __init__(self, func: Callable[..., Any]) -> None:
        self.globals: dict[str, Any] = func.__globals__
        cells = func.__closure__ or ()
        self.closure = dict(zip(func.__code__.co_freevars, cells, strict=True))
        raw = self.globals.get("__builtins__", builtins)
        self.builtins: dict[str, Any] = raw if isinstance(raw, dict) else vars(raw)

    def lookup(self, name: str) -> tuple[bool, Any]:
        """``(found, value)`` for ``name``; a closure cell not yet filled counts as not found."""
        if name in self.closure:
            try:
                return True, self.closure[name].cell_contents
            except ValueError:
                return False, None
        for table in (self.globals, self.builtins):
            value = table.get(name, _MISSING)
            if value is not _MISSING:
                return True, value
        return False, None
