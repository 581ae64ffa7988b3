"""Where parsed statements land: the block stack, the scope state and the function's namer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pypto.ir import Assign, Call, Expr, SourceSpan, Stmt, TupleExpr, Var
from pypto.language.parser.env import Namer
from pypto.language.parser.regions import ScopeRegions


class BodyBuilder:
    """The statements of the function being built.

    ``kernel`` is True for an ``@pl.jit.incore`` body, where every op runs on a core group;
    in the ``@pl.jit`` body only the inside of a ``pl.at`` scope does. ``regions`` tracks the
    ``pl.split_aiv`` regions of the core-group scope (or incore body) being parsed. ``valid``
    holds the run-time valid shapes of tiles (see :mod:`~pypto.language.parser.valid`).
    """

    def __init__(self, namer: Namer, kernel: bool) -> None:
        self.namer = namer
        self.kernel = kernel
        self.in_scope = False
        self.regions: ScopeRegions | None = None
        self.blocks: list[list[Stmt]] = [[]]
        self.valid: dict[Expr, TupleExpr] = {}

    @property
    def on_device(self) -> bool:
        return self.kernel or self.in_scope

    @property
    def statements(self) -> tuple[Stmt, ...]:
        return tuple(self.blocks[0])

    def emit(self, stmt: Stmt) -> None:
        self.blocks[-1].append(stmt)

    @contextmanager
    def block(self) -> Iterator[list[Stmt]]:
        """Collect the statements emitted inside the ``with`` into a new list."""
        self.blocks.append([])
        try:
            yield self.blocks[-1]
        finally:
            self.blocks.pop()

    @contextmanager
    def scope(self) -> Iterator[None]:
        self.in_scope = True
        try:
            yield
        finally:
            self.in_scope = False

    @contextmanager
    def tracking(self, regions: ScopeRegions | None) -> Iterator[None]:
        """Check the ops emitted inside the ``with`` against the region rules of ``regions``."""
        self.regions = regions
        try:
            yield
        finally:
            self.regions = None

    def assign(self, name: str, value: Expr, span: SourceSpan | None) -> Var:
        """Emit ``name = value`` under a fresh unique name; returns the new variable."""
        var = Var(self.namer.fresh(name), value.type, span)
        self.emit(Assign(var, value, span))
        if value in self.valid:
            self.valid[var] = self.valid[value]
        if self.regions is not None:
            self.regions.note(var, value)
        return var

    def atom(self, value: Any) -> Any:
        """An op operand in A-normal form: a tensor or tile op nested in another gets its own name."""
        if isinstance(value, Call) and not value.op.startswith("scalar."):
            return self.assign(value.op.rsplit(".", 1)[-1], value, value.span)
        return value
