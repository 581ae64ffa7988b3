"""Compile-time values written as Python literals: ``pl.func_attr({...})`` and decorator arguments.

These are evaluated, never executed: constants, lists, tuples, dicts, ``-x``, dotted names read
through the function's globals (``pl.SplitMode.UP_DOWN``), and calls of the few IR value
constructors the printer writes (``pl.MemoryPlan.placed(...)``, ``pl.Reservation(...)``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from pypto.ir import ParamRef, ParseError, PyptoError
from pypto.ir.memory import Allocation, MemoryPlan, Reservation
from pypto.language.annotations import dynamic
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.source import KernelSource

# The constructors an attribute value may call (what the printer writes for structured attrs).
VALUE_CONSTRUCTORS: frozenset[Callable[..., Any]] = frozenset(
    {MemoryPlan.placed, Reservation, Allocation, dynamic}
)
FUNC_ATTR_HINT = 'write the attributes as one dict literal: pl.func_attr({"key": value, ...})'


class LiteralReader:
    """Evaluates the literal AST of an attribute value against a function's names.

    ``params``: the function's parameter names; a bare name among them is a :class:`ParamRef`
    (in ``pl.func_attr`` a bare name always means a parameter).
    """

    def __init__(self, source: KernelSource, names: GlobalNames, params: Mapping[str, Any] | None = None):
        self.source = source
        self.names = names
        self.params = params

    def error(self, node: ast.AST, message: str, hint: str) -> ParseError:
        return ParseError(message, self.source.span(node), hint)

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            return self.mapping(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise self.error(
            node,
            f"{ast.unparse(node)} is not a literal value",
            "write a number, a string, a list, a dict or a pl enum value (pl.SplitMode.UP_DOWN)",
        )

    def mapping(self, node: ast.Dict) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise self.error(value_node, "**mapping is not supported here", FUNC_ATTR_HINT)
            key = self.value(key_node)
            if key in result:
                raise self.error(
                    key_node, f"key {key!r} is given twice", "give each key once; the second one would win"
                )
            result[key] = self.value(value_node)
        return result

    def name(self, node: ast.Name) -> Any:
        if self.params is not None:
            if node.id in self.params:
                return ParamRef(node.id)
            raise self.error(
                node,
                f"'{node.id}' is not a parameter: a bare name in pl.func_attr names a parameter",
                f"parameters: {', '.join(self.params) or 'none'}; write a literal value, or a "
                "dotted name such as pl.SplitMode.UP_DOWN",
            )
        found, value = self.names.lookup(node.id)
        if not found:
            raise self.error(node, f"unknown name '{node.id}'", "define it before the function uses it")
        return value

    def attribute(self, node: ast.Attribute) -> Any:
        parts = [node.attr]
        base: ast.expr = node.value
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name):
            raise self.error(node, f"{ast.unparse(node)} is not a literal value", FUNC_ATTR_HINT)
        found, value = self.names.lookup(base.id)
        if not found:
            raise self.error(base, f"unknown name '{base.id}'", "import it (import pypto.language as pl)")
        for attr in reversed(parts):
            if not hasattr(value, attr):
                raise self.error(
                    node, f"{ast.unparse(node)} does not exist", f"check the spelling of '{attr}'"
                )
            value = getattr(value, attr)
        return value

    def call(self, node: ast.Call) -> Any:
        callee = self.value(node.func)
        if callee not in VALUE_CONSTRUCTORS:
            raise self.error(
                node,
                f"{ast.unparse(node.func)}(...) cannot be called in an attribute value",
                "attribute values are literals; the calls allowed are pl.MemoryPlan.placed, "
                "pl.Allocation, pl.Reservation and pl.dynamic",
            )
        args = [self.value(a) for a in node.args]
        kwargs = {kw.arg: self.value(kw.value) for kw in node.keywords if kw.arg is not None}
        try:
            return callee(*args, **kwargs)
        except PyptoError as err:
            raise err.with_span(self.source.span(node)) from None
        except (TypeError, ValueError) as exc:
            raise self.error(node, f"{ast.unparse(node.func)}(...): {exc}", "check the arguments") from None


def is_func_attr(node: ast.stmt, names: GlobalNames) -> bool:
    """Whether ``node`` is a ``pl.func_attr(...)`` statement (its callee resolved by name)."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    if isinstance(func, ast.Attribute) and func.attr == "func_attr" and isinstance(func.value, ast.Name):
        found, value = names.lookup(func.value.id)
        return found and getattr(value, "func_attr", None) is not None and _is_pl(value)
    if isinstance(func, ast.Name):
        found, value = names.lookup(func.id)
        return found and getattr(value, "__name__", "") == "func_attr" and _is_pl_function(value)
    return False


def _is_pl(module: Any) -> bool:
    return getattr(module, "__name__", "") == "pypto.language"


def _is_pl_function(value: Any) -> bool:
    return getattr(value, "__module__", "").startswith("pypto.language")


def leading_func_attr(
    source: KernelSource, names: GlobalNames, params: Mapping[str, Any], body: list[ast.stmt]
) -> tuple[dict[str, Any], list[ast.stmt]]:
    """The attributes of the ``pl.func_attr({...})`` calls opening ``body`` (after its docstring,
    if any; several merge, a key declared twice is a ``ParseError`` naming it) and the body
    without them; a ``pl.func_attr`` anywhere else is a ``ParseError``."""
    first = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
    attrs: dict[str, Any] = {}
    reader = LiteralReader(source, names, params)
    while len(body) > first and is_func_attr(body[first], names):  # several calls merge
        node = body[first].value  # type: ignore[attr-defined]
        for key, value in read_func_attr(reader, node).items():
            if key in attrs:
                raise ParseError(
                    f"pl.func_attr declares {key!r} twice",
                    source.span(node),
                    f"declare {key!r} once: which of two values wins would depend on the order of the calls",
                )
            attrs[key] = value
        body = body[:first] + body[first + 1 :]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.stmt) and is_func_attr(node, names):
                raise ParseError(
                    "pl.func_attr(...) must be the first statement of the function body",
                    source.span(node),
                    "move it to the top of the body (after the docstring, if any)",
                )
    return attrs, body


def read_func_attr(reader: LiteralReader, node: ast.Call) -> dict[str, Any]:
    """The attributes of ``pl.func_attr({...})``: one dict literal with string keys."""
    if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Dict):
        raise reader.error(node, "pl.func_attr takes one dict literal", FUNC_ATTR_HINT)
    seen: set[Any] = set()
    for key_node in node.args[0].keys:
        if isinstance(key_node, ast.Constant):
            if key_node.value in seen:
                raise reader.error(
                    key_node,
                    f"pl.func_attr declares {key_node.value!r} twice",
                    f"declare {key_node.value!r} once",
                )
            seen.add(key_node.value)
    attrs = reader.mapping(node.args[0])
    for key_node, key in zip(node.args[0].keys, attrs, strict=False):
        if not isinstance(key, str):
            assert key_node is not None
            raise reader.error(key_node, f"attribute names are strings, got {key!r}", FUNC_ATTR_HINT)
    return {key: _frozen(value) for key, value in attrs.items()}


def _frozen(value: Any) -> Any:
    """IR attributes hold sequences as tuples (``[1, 2]`` is written, ``(1, 2)`` is kept)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value
