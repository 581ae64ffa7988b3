"""Structural equality of IR: when two programs (functions, statements, expressions, types) are
the same program, and where they first differ.

Nodes compare by identity (``nodes.py``); this module says when two distinct trees mean the same
thing, which is what "printed IR parses back into an equal program" needs::

    structural_equal(program, pl.parse_program(program.as_python()))  # -> True
    structural_diff(a, b)  # None, or one line naming the first difference by its path:
    # "function 'k' body[2] (For) body[0] (Assign) value.args[1]: Var 'x' vs Const 0"
    assert_structural_equal(a, b)  # AssertionError: that line, then both sides printed around it

The definition:

- Both sides are nodes of the same classes, field by field. Spans are never compared, not even
  inside attribute values (``Reservation.span`` is ``compare=False``; a ``SourceSpan`` found in an
  attribute value is skipped).
- Programs: same name, entry and attrs, and the same functions matched by name; the order of the
  functions does not matter, the order of statements does.
- Functions: name, kind, parameters (direction, and the variable as a binding), attrs, body.
- Calls: op, args, attrs, type. Attrs (of calls, functions, programs) are dicts compared by key,
  the order of keys ignored; values compare by value, strictly typed (``1``, ``1.0`` and ``True``
  differ), a list equal to a tuple of the same items (both print as ``[...]``).
- ``Const``: value and type; ``1``, ``1.0`` and ``True`` differ, ``0.0`` and ``-0.0`` differ,
  NaN equals NaN.
- Types compare by value, a ``TileType`` whose ``valid_shape`` is None equal to one whose
  ``valid_shape`` is its shape (both say "valid everywhere").
- Variables are compared up to renaming (alpha-equivalence): each binding site — a parameter, an
  ``Assign`` target, a ``For``'s var, iter_args and results, a ``SplitAivRegion``'s lane, a
  ``ScopeStmt``'s task — pairs the left ``Var`` with the right one (their types must be equal),
  one to one, and each use must refer to the paired binding. A use of a variable bound nowhere in
  the compared unit (a free variable of a statement compared alone) compares by name and type.
  Each function is its own unit: its variables pair afresh.
- ``names=True`` (the default) also requires paired variables to have the same name: the printer
  prints each function's names uniquely and passes key memory plans and task ids by name, so a
  round trip keeps them. ``names=False`` is pure alpha-equivalence (names inside attribute
  values, such as a memory plan's, still compare as written).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.extents import extent_dims
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    DimExpr,
    DynDim,
    Eval,
    Expr,
    For,
    Function,
    If,
    Program,
    Return,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    TupleExpr,
    Var,
    While,
    function_bindings,
    stmt_bindings,
    walk_stmts,
)
from pypto.ir.types import TensorType, TileType, TupleType, Type

Node = Program | Function | Stmt | Expr | Type

__all__ = [
    "assert_structural_equal",
    "duplicate_bindings",
    "structural_diff",
    "structural_equal",
]


class _Role(Enum):
    """How a node's field takes part in the comparison."""

    VALUE = "value"  # a plain value: an enum, a count, a name hint
    EXPR = "expr"
    EXPRS = "exprs"
    BIND = "bind"  # binds a Var (or None)
    BINDS = "binds"
    BODY = "body"
    TYPE = "type"
    ATTRS = "attrs"
    EXTENT = "extent"  # which pl.dynamic object of its name a DynDim is: paired, one to one (expr)


# Every compared field of every statement and compound expression, in the order a reader meets
# them (an Assign's value before its target; a loop's yields after its body). A field missing
# here is not compared: a test checks the table covers every field but the spans.
_FIELDS: dict[type, tuple[tuple[str, _Role], ...]] = {
    Assign: (("value", _Role.EXPR), ("target", _Role.BIND), ("memref", _Role.VALUE)),
    Eval: (("value", _Role.EXPR),),
    Return: (("values", _Role.EXPRS),),
    For: (
        ("kind", _Role.VALUE),
        ("stage", _Role.VALUE),
        ("start", _Role.EXPR),
        ("stop", _Role.EXPR),
        ("step", _Role.EXPR),
        ("init_values", _Role.EXPRS),
        ("var", _Role.BIND),
        ("iter_args", _Role.BINDS),
        ("body", _Role.BODY),
        ("yields", _Role.EXPRS),
        ("results", _Role.BINDS),
    ),
    If: (
        ("cond", _Role.EXPR),
        ("then_body", _Role.BODY),
        ("then_yields", _Role.EXPRS),
        ("else_body", _Role.BODY),
        ("else_yields", _Role.EXPRS),
        ("results", _Role.BINDS),
    ),
    While: (
        ("init_values", _Role.EXPRS),
        ("iter_args", _Role.BINDS),
        ("cond", _Role.EXPR),
        ("body", _Role.BODY),
        ("yields", _Role.EXPRS),
        ("results", _Role.BINDS),
    ),
    Break: (("values", _Role.EXPRS),),
    Continue: (("values", _Role.EXPRS),),
    ScopeStmt: (
        ("level", _Role.VALUE),
        ("name_hint", _Role.VALUE),
        ("split", _Role.VALUE),
        ("slot_num", _Role.VALUE),
        ("manual", _Role.VALUE),
        ("block_num", _Role.VALUE),
        ("sync_start", _Role.VALUE),
        ("allow_early_resolve", _Role.VALUE),
        ("predicate", _Role.VALUE),
        ("deps", _Role.EXPRS),
        ("no_dep_args", _Role.EXPRS),
        ("dumps", _Role.EXPRS),
        ("body", _Role.BODY),
        ("task", _Role.BIND),  # bound after the scope
    ),
    SplitAivRegion: (("mode", _Role.VALUE), ("lane", _Role.BIND), ("body", _Role.BODY)),
    Call: (("op", _Role.VALUE), ("args", _Role.EXPRS), ("attrs", _Role.ATTRS), ("type", _Role.TYPE)),
    DimExpr: (("op", _Role.VALUE), ("args", _Role.EXPRS), ("attrs", _Role.ATTRS), ("type", _Role.TYPE)),
    TupleExpr: (("elements", _Role.EXPRS), ("type", _Role.TYPE)),
    DynDim: (("name", _Role.VALUE), ("ident", _Role.EXTENT)),
}


def duplicate_bindings(fn: Function) -> list[str]:
    """Names bound more than once in ``fn`` by different ``Var`` objects, in the order their
    second binding appears: ``duplicate_bindings(fn)  # -> ['acc']``. The printer renames these,
    since a printed function must name each variable once."""
    first: dict[str, Var] = {}
    twice: list[str] = []
    for var in function_bindings(fn):
        seen = first.setdefault(var.name, var)
        if seen is not var and var.name not in twice:
            twice.append(var.name)
    return twice


def structural_equal(a: Node, b: Node, *, names: bool = True) -> bool:
    """Whether ``a`` and ``b`` are the same IR in the sense of this module's docstring."""
    return structural_diff(a, b, names=names) is None


def structural_diff(a: Node, b: Node, *, names: bool = True) -> str | None:
    """None when ``a`` and ``b`` are structurally equal, else one line naming the first
    difference by its path: ``function 'f' body[0] (Assign) value.args[1]: Var 'x' vs Const 0``."""
    found = _first_difference(a, b, names)
    return None if found is None else found.line


def assert_structural_equal(a: Node, b: Node, *, names: bool = True) -> None:
    """Raise ``AssertionError`` naming the first difference, with both sides printed around it
    (the innermost statement, function or expression holding it)."""
    found = _first_difference(a, b, names)
    if found is None:
        return
    left, right = found.spot
    raise AssertionError(
        f"{found.line}\n--- left, around the difference ---\n{_print(left)}\n"
        f"--- right, around the difference ---\n{_print(right)}"
    )


class _Difference(Exception):
    """The first difference found: its one-line description and the nodes around it."""

    def __init__(self, line: str, spot: tuple[object, object]) -> None:
        super().__init__(line)
        self.line = line
        self.spot = spot


def _first_difference(a: Node, b: Node, names: bool) -> _Difference | None:
    comparison = _Comparison(names)
    try:
        comparison.root(a, b)
    except _Difference as found:
        return found
    return None


def _print(node: object) -> str:
    from pypto.ir.printer import print_ir  # the printer names variables with this module's bindings

    if isinstance(node, (Program, Function, Stmt, Expr)):
        return print_ir(node)
    return str(node)


def _shape(node: Stmt | Expr) -> tuple[tuple[str, _Role], ...]:
    try:
        return _FIELDS[type(node)]
    except KeyError:
        raise TypeError(f"structural equality does not know {type(node).__name__} nodes") from None


def normal_type(t: Type) -> Type:
    """``t`` with every TileType's ``valid_shape`` equal to its shape spelled None, and a tensor's
    dynamic extents by name alone (which ``pl.dynamic`` object made them is not compared: printed
    text read back makes new ones)."""
    if isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) == tuple(t.shape):
        return replace(t, valid_shape=None)
    if isinstance(t, TensorType) and any(isinstance(d, (DynDim, DimExpr)) for d in t.shape):
        return replace(t, shape=tuple(_by_name(d) for d in t.shape))
    if isinstance(t, TupleType):
        return TupleType(tuple(normal_type(e) for e in t.types))
    return t


def _by_name(extent: Any) -> Any:
    """An extent with each dynamic extent in it made the first ``pl.dynamic`` object of its name."""
    if isinstance(extent, DynDim):
        return DynDim(extent.name)
    if isinstance(extent, DimExpr):
        return replace(extent, args=tuple(_by_name(a) for a in extent.args))
    return extent


def _describe(node: object) -> str:
    """A node as a difference names it: ``Var 'x'``, ``Const 0``, ``Call tile.add``, ``For``."""
    if node is None:
        return "nothing"
    if isinstance(node, Var):
        return f"Var {node.name!r}"
    if isinstance(node, Const):
        return f"Const {node.value!r}"
    if isinstance(node, Call):
        return f"Call {node.op}"
    if isinstance(node, TupleExpr):
        return f"TupleExpr of {len(node.elements)}"
    if isinstance(node, Enum):
        return f"{type(node).__name__}.{node.name}"
    if isinstance(node, Type):
        return str(node)
    if isinstance(node, (Program, Function, Stmt, Expr)):
        return type(node).__name__
    text = repr(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _count(name: str, left: int, right: int) -> str:
    """``'f' only`` (absent on the right) or ``'f' 2 times`` (a different count there)."""
    return f"{name!r} only" if right == 0 else f"{name!r} {left} times vs {right}"


def _same_scalar(a: object, b: object) -> bool:
    """Strictly typed scalar equality: 1, 1.0 and True differ; -0.0 is not 0.0; NaN is NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


class _Comparison:
    """One comparison: the path to where it is, the variables paired so far, the spot to print."""

    def __init__(self, names: bool) -> None:
        self.names = names
        self.extents_paired: dict[object, object] = {}
        self.extents_paired_back: dict[object, object] = {}
        self.path: list[str] = []
        self.spots: list[tuple[object, object]] = []
        self.start_unit((), ())

    # ------------------------------------------------------------ bookkeeping

    def start_unit(self, left: Sequence[Var], right: Sequence[Var]) -> None:
        """Begin a unit whose binding sites bind ``left`` / ``right``: nothing is paired yet."""
        self.bound_left = set(left)
        self.bound_right = set(right)
        self.pair_of_left: dict[Var, Var] = {}
        self.pair_of_right: dict[Var, Var] = {}
        self.left_bound_at: dict[Var, str] = {}
        self.right_bound_at: dict[Var, str] = {}

    @contextmanager
    def at(self, segment: str) -> Iterator[None]:
        # No finally: a difference leaves the path as it was where it was found.
        self.path.append(segment)
        yield
        self.path.pop()

    @contextmanager
    def around(self, left: object, right: object) -> Iterator[None]:
        self.spots.append((left, right))
        yield
        self.spots.pop()

    def where(self) -> str:
        text = ""
        for segment in self.path:
            text += segment if not text or segment.startswith((".", "[")) else " " + segment
        return text

    def fail(self, detail: str) -> None:
        where = self.where()
        spot = self.spots[-1] if self.spots else (None, None)
        raise _Difference(f"{where}: {detail}" if where else detail, spot)

    def differ(self, a: object, b: object) -> None:
        self.fail(f"{_describe(a)} vs {_describe(b)}")

    # ------------------------------------------------------------ units

    def root(self, a: Node, b: Node) -> None:
        if isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b)
        elif type(a) is not type(b):
            self.differ(a, b)
        elif isinstance(a, Program) and isinstance(b, Program):
            self.program(a, b)
        elif isinstance(a, Function) and isinstance(b, Function):
            self.function(a, b)
        elif isinstance(a, Stmt) and isinstance(b, Stmt):
            self.start_unit(
                [v for s in walk_stmts((a,)) for v in stmt_bindings(s)],
                [v for s in walk_stmts((b,)) for v in stmt_bindings(s)],
            )
            self.stmt(a, b)
        elif isinstance(a, Expr) and isinstance(b, Expr):
            with self.around(a, b):
                self.expr(a, b)
        else:
            raise TypeError(f"structural equality compares IR nodes and types, not {type(a).__name__}")

    def program(self, a: Program, b: Program) -> None:
        with self.around(a, b):
            for name in ("name", "entry"):
                with self.at(name):
                    self.value(getattr(a, name), getattr(b, name))
            with self.at("attrs"):
                self.attrs(a.attrs, b.attrs)
            with self.at("functions"):
                self.function_names(a, b)
        right = {fn.name: fn for fn in b.functions.values()}
        for fn in a.functions.values():
            self.function(fn, right[fn.name])

    def function_names(self, a: Program, b: Program) -> None:
        left = Counter(fn.name for fn in a.functions.values())
        right = Counter(fn.name for fn in b.functions.values())
        if left == right:
            return
        parts = [
            f"{_count(name, n, right[name])} on the left" for name, n in left.items() if right[name] != n
        ]
        parts += [f"{name!r} only on the right" for name in right if name not in left]
        self.fail("; ".join(parts))

    def function(self, a: Function, b: Function) -> None:
        self.start_unit(list(function_bindings(a)), list(function_bindings(b)))
        with self.around(a, b), self.at(f"function {a.name!r}"):
            for name in ("name", "kind"):
                with self.at(name):
                    self.value(getattr(a, name), getattr(b, name))
            if len(a.params) != len(b.params):
                self.fail(f"{len(a.params)} parameters vs {len(b.params)}")
            for i, (pa, pb) in enumerate(zip(a.params, b.params, strict=True)):
                with self.at(f"params[{i}]"):
                    with self.at(".direction"):
                        self.value(pa.direction, pb.direction)
                    self.bind(pa.var, pb.var)
            with self.at("attrs"):
                self.attrs(a.attrs, b.attrs)
            self.body("body", a.body, b.body)

    # ------------------------------------------------------------ statements

    def body(self, name: str, a: Sequence[Stmt], b: Sequence[Stmt]) -> None:
        for i in range(max(len(a), len(b))):
            if i >= len(a) or i >= len(b):
                with self.at(f"{name}[{i}]"):
                    left = _describe(a[i]) if i < len(a) else f"end of {name}"
                    right = _describe(b[i]) if i < len(b) else f"end of {name}"
                    self.fail(f"{left} vs {right}")
            if type(a[i]) is not type(b[i]):
                with self.at(f"{name}[{i}]"):
                    self.differ(a[i], b[i])
            with self.at(f"{name}[{i}] ({type(a[i]).__name__})"):
                self.stmt(a[i], b[i])

    def stmt(self, a: Stmt, b: Stmt) -> None:
        if type(a) is not type(b):
            self.differ(a, b)
        with self.around(a, b):
            self.fields(a, b, "")

    def fields(self, a: Stmt | Expr, b: Stmt | Expr, sep: str) -> None:
        """Compare the table's fields of two nodes of one class; ``sep`` is ``.`` inside an
        expression (``value.args[1]``) and a space between a statement's fields."""
        for name, role in _shape(a):
            left, right = getattr(a, name), getattr(b, name)
            if role is _Role.BODY:
                self.body(sep + name, left, right)
            elif role is _Role.EXPRS:
                self.each(sep + name, left, right, self.expr)
            elif role is _Role.BINDS:
                self.each(sep + name, left, right, self.bind)
            else:
                with self.at(sep + name):
                    self.field(role, left, right)

    def field(self, role: _Role, a: Any, b: Any) -> None:
        if role is _Role.VALUE:
            self.value(a, b)
        elif role is _Role.EXPR:
            self.expr(a, b)
        elif role is _Role.BIND:
            self.bind(a, b)
        elif role is _Role.TYPE:
            self.type(a, b)
        else:
            self.attrs(a, b)

    def each(
        self, name: str, a: Sequence[Any], b: Sequence[Any], compare: Callable[[Any, Any], None]
    ) -> None:
        """Two sequences item by item, at ``name[i]`` (``name`` empty inside a value)."""
        if len(a) != len(b):
            if name:
                self.path.append(name)
            self.fail(f"{len(a)} items vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            with self.at(f"{name}[{i}]"):
                compare(x, y)

    # ------------------------------------------------------------ variables

    def bind(self, a: Var | None, b: Var | None) -> None:
        """A binding site: pair ``a`` with ``b`` (a later binding of either replaces the pair)."""
        if a is None or b is None:
            if a is not b:
                self.differ(a, b)
            return
        if self.names and a.name != b.name:
            self.differ(a, b)
        with self.at(".type"):
            self.type(a.type, b.type)
        for var, pairs, back in (
            (a, self.pair_of_left, self.pair_of_right),
            (b, self.pair_of_right, self.pair_of_left),
        ):
            old = pairs.pop(var, None)
            if old is not None and back.get(old) is var:
                del back[old]
        self.pair_of_left[a], self.pair_of_right[b] = b, a
        self.left_bound_at[a] = self.right_bound_at[b] = self.where()

    def use(self, a: Var, b: Var) -> None:
        if a not in self.bound_left and b not in self.bound_right:
            # Free on both sides: nothing pairs them, so they must look alike.
            if a.name != b.name:
                self.differ(a, b)
            with self.at(".type"):
                self.type(a.type, b.type)
            return
        if self.pair_of_left.get(a) is b and self.pair_of_right.get(b) is a:
            return
        left = self.binding_of(a, self.bound_left, self.left_bound_at)
        right = self.binding_of(b, self.bound_right, self.right_bound_at)
        self.fail(f"{_describe(a)} vs {_describe(b)}: the left is {left}, the right {right}")

    def binding_of(self, var: Var, bound: set[Var], bound_at: dict[Var, str]) -> str:
        if var in bound_at:
            return f"bound at {bound_at[var] or 'the top'}"
        return "bound only later" if var in bound else "bound nowhere here"

    # ------------------------------------------------------------ expressions, types, values

    def expr(self, a: Expr, b: Expr) -> None:
        if type(a) is not type(b):
            self.differ(a, b)
        if isinstance(a, Var) and isinstance(b, Var):
            self.use(a, b)
        elif isinstance(a, Const) and isinstance(b, Const):
            if not _same_scalar(a.value, b.value):
                self.differ(a, b)
            with self.at(".type"):
                self.type(a.type, b.type)
        elif isinstance(a, DynDim) and isinstance(b, DynDim):
            if a.name != b.name:
                self.differ(a, b)
            self.extent_ident((a.name, a.ident), (b.name, b.ident))
        else:
            self.fields(a, b, ".")

    def type(self, a: Type, b: Type) -> None:
        if normal_type(a) != normal_type(b):
            self.differ(a, b)
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            for x, y in zip(a.shape, b.shape, strict=True):
                for dx, dy in zip(extent_dims(x), extent_dims(y), strict=True):
                    self.extent_ident((dx.name, dx.ident), (dy.name, dy.ident))

    def extent_ident(self, a: object, b: object) -> None:
        """Two dynamic extents (or their idents, met in a DynDim's fields): a printed program read
        back makes new ``pl.dynamic`` objects, so the pairing of left and right ones is compared,
        one to one, not their idents."""
        paired = self.extents_paired.setdefault(a, b)
        back = self.extents_paired_back.setdefault(b, a)
        if paired != b or back != a:
            self.differ(a, b)

    def attrs(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> None:
        self.value(a, b)

    def value(self, a: object, b: object) -> None:
        """Attribute values and plain fields, recursively, with the path into them."""
        if isinstance(a, SourceSpan | None) and isinstance(b, SourceSpan | None) and (a or b):
            return  # spans are never compared
        if isinstance(a, Expr) and isinstance(b, Expr):
            self.expr(a, b)
        elif isinstance(a, Type) and isinstance(b, Type):
            self.type(a, b)
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            self.mapping(a, b)
        elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
            self.each("", a, b, self.value)
        elif type(a) is not type(b):
            self.differ(a, b)
        elif is_dataclass(a) and not isinstance(a, type):
            for f in fields(a):
                if f.compare:
                    with self.at(f".{f.name}"):
                        self.value(getattr(a, f.name), getattr(b, f.name))
        elif not _same_scalar(a, b):
            self.differ(a, b)

    def mapping(self, a: Mapping[Any, Any], b: Mapping[Any, Any]) -> None:
        only_left = [k for k in a if k not in b]
        only_right = [k for k in b if k not in a]
        if only_left or only_right:
            side, keys = ("left", only_left) if only_left else ("right", only_right)
            self.fail(f"key {keys[0]!r} only on the {side}")
        for key in a:
            with self.at(f"[{key!r}]"):
                self.value(a[key], b[key])
