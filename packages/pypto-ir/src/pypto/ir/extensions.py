"""Names that packages of a floor above offer to a namespace of a floor below.

``pypto.ir.compile`` is the runtime's, ``pypto.ir.PassManager`` the pass manager's, and
``pl.autotune`` the tuner's: each lives in a package that imports the namespace it is offered to,
so that namespace cannot import it. The offering package names it in an entry-point group of its
``pyproject.toml`` (``[project.entry-points."pypto.ir"] compile = "pypto.runtime...:compile"``),
or calls :meth:`Extensions.extend` when imported; the namespace's module ``__getattr__`` asks
:meth:`Extensions.get` when the name is first read. No import arrow points up.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any


class Extensions:
    """The names offered to one namespace, through the entry-point group ``group``."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._names: dict[str, Any] = {}

    def extend(self, **names: Any) -> None:
        """Offer ``names`` (what an offering package calls when it is imported)."""
        self._names.update(names)

    def get(self, name: str) -> Any:
        """The value offered as ``name``, loaded on first use; ``LookupError`` if none is."""
        if name not in self._names:
            for point in importlib.metadata.entry_points(group=self.group, name=name):
                self._names[name] = point.load()
                break
        if name not in self._names:
            raise LookupError(name)
        return self._names[name]

    def offered(self) -> list[str]:
        """The names offered by the installed packages and the imported ones."""
        points = importlib.metadata.entry_points(group=self.group)
        return sorted({*self._names, *(point.name for point in points)})


IR = Extensions("pypto.ir")  # pypto.ir.compile (pypto-lang), pypto.ir.PassManager (pypto-passes)
