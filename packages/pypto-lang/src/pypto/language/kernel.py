"""``KernelFunction``: a Python function marked by ``@pl.jit``, ``@pl.jit.incore``, ``@pl.jit.inline``
(``@pl.inline``) or ``@pl.jit.opaque``.

It holds what the parser reads from the function (source, free names, signature), each read once
(the signature again if a value its annotations name has changed: see
:func:`pypto.language.parser.signature.signature_of`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from typing import Any

from pypto.language.annotations import ParamSignature
from pypto.language.parser.resolve import GlobalNames, GlobalReads
from pypto.language.parser.source import KernelSource


class JitKind(Enum):
    """Which decorator made the kernel."""

    entry = "@pl.jit"
    incore = "@pl.jit.incore"
    inline = "@pl.jit.inline"
    function = "@pl.function"  # a function of a @pl.program (pypto.language.parser.classes)
    opaque = "@pl.jit.opaque"
    host = "@pl.jit.host"  # the HOST orchestrator of a distributed program


class KernelFunction:
    """A decorated kernel; parsing happens on demand, never at decoration time."""

    def __init__(self, func: Callable[..., Any], kind: JitKind) -> None:
        self.func = func
        self.kind = kind
        # The parameters and the global reads their annotations made (pypto.language.parser.signature.
        # signature_of reads them, again when a value an annotation names has changed).
        self.signature_cache: tuple[tuple[ParamSignature, ...], GlobalReads] | None = None
        # Whether the compiler places the function's AUTO runtime scopes; False
        # (``@pl.jit(auto_scope=False)``): the author writes them, ``with pl.scope():``.
        self.auto_scope = True
        self.strict_ssa = False  # @pl.function(strict_ssa=True): a name is bound once

    @property
    def name(self) -> str:
        return self.func.__name__

    @property
    def skips_self(self) -> bool:
        """Whether the ``def``'s first parameter is a method's ``self`` (not a kernel parameter)."""
        return False

    @functools.cached_property
    def source(self) -> KernelSource:
        return KernelSource.of(self.func)

    @functools.cached_property
    def names(self) -> GlobalNames:
        return GlobalNames(self.func)

    @functools.cached_property
    def python_signature(self) -> inspect.Signature:
        """The function's Python signature, for binding call arguments (and their defaults)."""
        return inspect.signature(self.func)

    def __repr__(self) -> str:
        return f"<{self.kind.value} {self.name}>"
