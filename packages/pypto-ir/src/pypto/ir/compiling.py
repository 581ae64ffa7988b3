"""``pypto.ir.compile`` and ``pypto.ir.PassManager``: the names PyPTO code reaches through
``pypto.ir`` for things the floors above provide.

The IR floor knows nothing of passes or platforms (arrows point down: ir <- passes <- lang), so
these are offered to it by the packages that define them (entry-point group ``pypto.ir``, see
:mod:`pypto.ir.extensions`): ``import pypto.ir`` works with pypto-ir alone, ``pypto.ir.compile``
needs pypto-lang installed and ``pypto.ir.PassManager`` pypto-passes.
"""

from __future__ import annotations

from typing import Any

from pypto.ir.errors import PyptoError
from pypto.ir.extensions import IR
from pypto.ir.tracebacks import call_site

# The name offered to pypto.ir, and the distribution that offers it.
OFFERED = {"compile": "pypto-lang", "PassManager": "pypto-passes"}


class MissingPackageError(PyptoError, ImportError):
    """A name of ``pypto.ir`` needs a package of a floor above that is not installed."""


def offered(name: str) -> Any:
    """``pypto.ir.<name>`` as the floor above offers it; a ``MissingPackageError`` naming the
    package to install when it is not (an ``AttributeError`` for a name no floor offers)."""
    try:
        return IR.get(name)
    except LookupError:
        if name not in OFFERED:
            raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}") from None
    distribution = OFFERED[name]
    raise MissingPackageError(
        f"pypto.ir.{name} needs {distribution}, which is not installed",
        call_site(),
        hint=f"pip install {distribution}",
    )


__all__: list[str] = ["OFFERED", "MissingPackageError", "offered"]
