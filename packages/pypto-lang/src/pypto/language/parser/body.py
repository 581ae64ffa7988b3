"""Where parsed statements land: the block stack, the scope state and the function's namer."""

from __future__ import annotations

import keyword
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    INDEX,
    Assign,
    Call,
    Const,
    DynDim,
    Expr,
    MemRefSlot,
    Predicate,
    SourceSpan,
    Stmt,
    TupleExpr,
    Var,
    get_op,
    make_call,
)
from pypto.ir.ops import Level, PadValue, op
from pypto.ir.ops import tensor as op_tensor
from pypto.language.parser.env import Namer
from pypto.language.parser.fills import FillLevels
from pypto.language.parser.regions import ScopeRegions


@dataclass(frozen=True)
class Window:
    """Where a tensor view lies: the tensor it views (never itself a view) and its offsets there."""

    base: Expr
    offsets: tuple[Expr, ...]


class BodyBuilder:
    """The statements of the function being built.

    ``kernel`` is True for an ``@pl.jit.incore`` body, where every op runs on a core group;
    in the ``@pl.jit`` body only the inside of a ``pl.at`` scope does. ``regions`` tracks the
    ``pl.split_aiv`` regions of the core-group scope (or incore body) being parsed. ``valid``
    holds the run-time valid shapes of tiles and the valid shapes of tensor views (see
    :mod:`~pypto.ir.valid`); ``windows`` where each tensor view starts in the tensor it views, and
    ``pads`` what reads outside a view's valid shape see.
    """

    def __init__(self, namer: Namer, kernel: bool, fill_levels: FillLevels | None = None) -> None:
        self.namer = namer
        self.kernel = kernel
        # The level of each pl.full site, and the sites each free value comes from (.fills).
        self.fill_levels = fill_levels or FillLevels(Level.TENSOR)
        self.fills: dict[Expr, frozenset[SourceSpan]] = {}
        self.in_scope = False
        self.in_cluster = False  # inside `with pl.cluster():` (its launches carry no hints)
        self.scope_body: list[Stmt] | None = None  # the open pl.at scope's statements
        self.scope_outer: list[Stmt] | None = None  # the block the open pl.at scope sits in
        self.block_idx: Var | None = None  # its pl.get_block_idx(), once an spmd index is read
        self.manual = False  # inside pl.manual_scope(): tasks take only explicit deps=
        self.runtime_scopes: list[bool] = []  # the open pl.scope() / pl.manual_scope(): manual or not
        self.block_num = 1  # inside `for i in pl.spmd(n)`: kernels launch on n core groups
        self.sync_start = False  # ... all n at once (pl.spmd(n, sync_start=True))
        self.spmd_deps: tuple[Var, ...] = ()  # ... after these tasks (pl.spmd(n, deps=[t]) as tid)
        self.spmd_predicate: Predicate | None = None  # ... if this holds (pl.spmd(n, predicate=...))
        self.spmd_early = False  # ... resolving early (pl.spmd(n, allow_early_resolve=True))
        self.dump_tags: list[Var] = []  # tensors pl.dump_tag marked: dumped by the tasks that take them
        self.regions: ScopeRegions | None = None
        self.blocks: list[list[Stmt]] = [[]]
        self.valid: dict[Expr, TupleExpr] = {}
        # The annotation of the assignment whose value is being built (``t: pl.Tile[...] = ...``):
        # a pop written without shape= / dtype= takes its type from it.
        self.annotation: Any = None
        # A function written per lane (``split_aiv``): its boundary ops split as ``function_split``.
        self.per_lane = False
        self.function_split: Any = None
        # An Opaque @pl.function: no plane yet, so no op is out of place in it.
        self.plane_free = False
        # A HOST function (@pl.jit.host, a HOST orchestrator or sub-worker): it drives the ranks.
        self.host = False
        # The name a plain assignment binds while its value is built (pld.alloc_window_buffer's name).
        self.target_name: str | None = None
        self.windows: dict[Expr, Window] = {}
        self.pads: dict[Expr, PadValue] = {}
        # The entry's tensors with a valid shape (a pl.TensorView), and their views in the open scope.
        self.host_views: dict[Expr, TupleExpr] = {}
        self.localized: dict[Expr, Var] = {}
        # The dynamic extent each run-time extent of the orchestration's tensors is named by (by its
        # variable, or by an expression's text): see :mod:`~pypto.language.parser.host_tensors`.
        self.host_dims: dict[Any, DynDim] = {}

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
    def scope(self) -> Iterator[list[Stmt]]:
        """A ``pl.at`` scope's body: collects its statements into a new list."""
        self.in_scope = True
        self.scope_outer = self.blocks[-1]
        try:
            with self.block() as stmts:
                self.scope_body = stmts
                yield stmts
        finally:
            self.in_scope = False
            self.scope_body, self.block_idx, self.scope_outer = None, None, None
            self.localized = {}

    def hoisted(self, name: str, value: Expr, span: SourceSpan | None) -> Var:
        """``name = value`` emitted before the open ``pl.at`` scope, in the block around it: a
        tensor the scope allocates is allocated by the orchestration, which passes it in."""
        assert self.scope_outer is not None
        var = Var(self.namer.fresh(name), value.type, span)
        self.scope_outer.append(Assign(var, value, span))
        return var

    def localize(self, value: Any) -> Any:
        """``value``, or in a ``pl.at`` scope, for an entry tensor with a valid shape, its view with
        that valid shape made at the top of the scope (what the scope's tensor ops read)."""
        if not self.in_scope or value not in self.host_views:
            return value
        if value not in self.localized:
            assert self.scope_body is not None and isinstance(value, Var)
            call = make_call(op_tensor.set_validshape, (value, self.host_views[value]), {}, value.span)
            view = Var(self.namer.fresh(value.name), call.type, value.span)
            self.scope_body.insert(0, Assign(view, call, value.span))
            self.valid[view] = self.host_views[value]
            self.windows[view] = Window(
                value, tuple(Const(0, INDEX) for _ in self.host_views[value].elements)
            )
            if value in self.pads:
                self.pads[view] = self.pads[value]
            self.localized[value] = view
        return self.localized[value]

    def block_index(self, span: SourceSpan | None) -> Var:
        """The scope's ``pl.get_block_idx()``, computed once at the top of the scope."""
        if self.block_idx is None:
            assert self.scope_body is not None
            call = make_call(op.get_block_idx, (), {}, span)
            self.block_idx = Var(self.namer.fresh("block_idx"), call.type, span)
            self.scope_body.insert(0, Assign(self.block_idx, call, span))
        return self.block_idx

    @contextmanager
    def runtime_scope(self, manual: bool) -> Iterator[None]:
        """A runtime scope (``pl.scope()``, ``pl.manual_scope()``): in a manual one tracking is off,
        so the tasks submitted inside take no edges from the tensors they touch (and give none)."""
        outer = self.manual
        self.runtime_scopes.append(manual)
        self.manual = manual
        try:
            yield
        finally:
            self.runtime_scopes.pop()
            self.manual = outer

    @contextmanager
    def spmd(self, block_num: int, sync_start: bool = False, deps: tuple[Var, ...] = ()) -> Iterator[None]:
        """Kernels launched inside the ``with`` run on ``block_num`` core groups (started together
        if ``sync_start``), after the tasks ``deps`` (and if ``spmd_predicate`` holds, set by the
        caller for the launch)."""
        self.block_num, self.sync_start, self.spmd_deps = block_num, sync_start, deps
        try:
            yield
        finally:
            self.block_num, self.sync_start, self.spmd_deps = 1, False, ()
            self.spmd_predicate, self.spmd_early = None, False

    def task_attrs(self) -> dict[str, Any]:
        """The ``call`` attrs of a task submitted here: manual, and its spmd launch."""
        attrs: dict[str, Any] = {"manual": True} if self.manual else {}
        if self.spmd_deps:
            attrs["deps"] = tuple(v.name for v in self.spmd_deps)
        if self.block_num > 1:
            attrs["block_num"] = self.block_num
        if self.sync_start:
            attrs["sync_start"] = True
        if self.spmd_predicate is not None:
            attrs["predicate"] = self.spmd_predicate
        if self.spmd_early:
            attrs["allow_early_resolve"] = True
        return attrs

    def tagged(self, values: Any) -> tuple[Var, ...]:
        """The tensors among ``values`` that ``pl.dump_tag`` marked, in the order they were marked."""
        given = {id(v) for v in values}
        return tuple(v for v in self.dump_tags if id(v) in given)

    @contextmanager
    def tracking(self, regions: ScopeRegions | None) -> Iterator[None]:
        """Check the ops emitted inside the ``with`` against the region rules of ``regions``."""
        self.regions = regions
        try:
            yield
        finally:
            self.regions = None

    def assign(
        self, name: str, value: Expr, span: SourceSpan | None, memref: MemRefSlot | None = None
    ) -> Var:
        """Emit ``name = value`` under a fresh unique name (placed in the ``pl.MemRef`` slot
        ``memref``, if given); returns the new variable."""
        var = Var(self.namer.fresh(name), value.type, span)
        self.emit(Assign(var, value, span, memref))
        if value in self.valid:
            self.valid[var] = self.valid[value]
        if value in self.windows:
            self.windows[var] = self.windows[value]
        if value in self.pads:
            self.pads[var] = self.pads[value]
        if value in self.host_views:
            self.host_views[var] = self.host_views[value]
        if value in self.fills:
            self.fills[var] = self.fills[value]
        if self.regions is not None:
            self.regions.note(var, value, name)
        return var

    def atom(self, value: Any) -> Any:
        """An op operand in A-normal form: a tensor or tile op nested in another gets its own name."""
        if isinstance(value, Call) and get_op(value.op).level is not Level.SCALAR:
            name = value.op.rsplit(".", 1)[-1]
            return self.assign(f"{name}_" if keyword.iskeyword(name) else name, value, value.span)
        return value
