"""The expression half of the kernel parser: one visitor method per expression kind."""

from __future__ import annotations

import ast
import builtins
import difflib
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pypto.ir import (
    ArrayType,
    DataType,
    Eval,
    Expr,
    ParseError,
    PyptoError,
    ScalarType,
    SourceSpan,
    TensorType,
    TileType,
    Var,
)
from pypto.ir.ops import OPS, make_call
from pypto.ir.ops import array as array_ops
from pypto.ir.ops import debug as debug_ops
from pypto.language import annotations as ann
from pypto.language.builtins import Builtin, DistBuiltin, OpNamespace
from pypto.language.device import available_aiv_count, available_cluster_count
from pypto.language.directives import Directive
from pypto.language.kernel import KernelFunction
from pypto.language.options import cross_core_slot, split
from pypto.language.parser.arith import scalar_binary
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import FRAME_NAMES, Env
from pypto.language.parser.memref import memref_slot
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.ops import build_op
from pypto.language.parser.raw import build_raw, raw_spec
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.source import KernelSource
from pypto.language.parser.transfers import build_read
from pypto.language.parser.values import (
    KWARGS_HINT,
    describe_value,
    is_number,
    is_scalar,
    is_shaped,
    number,
    scalar_expr,
)

# The pl.debug calls the parser reads itself (their labels are string literals, no values).
DEBUG_CONSTRUCTS = ("debug.print", "debug.breakpoint")
DEBUG_HINT = 'write pl.debug.print("label", value, ...) or pl.debug.breakpoint(); see docs/debugging.md'

# Every Python construct, as an error names it in words.
CONSTRUCTS = {
    "FunctionDef": "a nested def",
    "AsyncFunctionDef": "a nested async def",
    "ClassDef": "a class definition",
    "Return": "a return statement",
    "Delete": "a del statement",
    "Assign": "an assignment",
    "AugAssign": "an augmented assignment (x += ...)",
    "AnnAssign": "an annotated assignment",
    "TypeAlias": "a type alias statement",
    "For": "a for loop",
    "AsyncFor": "async for",
    "While": "a while loop",
    "If": "an if statement",
    "With": "a with statement",
    "AsyncWith": "async with",
    "Match": "a match statement",
    "Raise": "a raise statement",
    "Try": "a try statement",
    "TryStar": "a try statement",
    "Assert": "an assert statement",
    "Import": "an import",
    "ImportFrom": "an import",
    "Global": "a global statement",
    "Nonlocal": "a nonlocal statement",
    "Expr": "an expression statement",
    "Pass": "pass",
    "Break": "break",
    "Continue": "continue",
    "BoolOp": "and / or",
    "NamedExpr": "an assignment expression (:=)",
    "BinOp": "a binary operator",
    "UnaryOp": "a unary operator",
    "Lambda": "a lambda",
    "IfExp": "a conditional expression (x if c else y)",
    "Dict": "a dict display",
    "Set": "a set display",
    "ListComp": "a list comprehension",
    "SetComp": "a set comprehension",
    "DictComp": "a dict comprehension",
    "GeneratorExp": "a generator expression",
    "Await": "await",
    "Yield": "yield",
    "YieldFrom": "yield from",
    "Compare": "a comparison",
    "Call": "a call",
    "FormattedValue": "an f-string",
    "JoinedStr": "an f-string",
    "Constant": "a constant",
    "Attribute": "an attribute",
    "Subscript": "a subscript",
    "Starred": "a starred expression (*x)",
    "Name": "a name",
    "List": "a list",
    "Tuple": "a tuple",
    "Slice": "a slice outside a subscript",
}
# What an assignment can target, as the error names a target it cannot take.
TARGETS = {
    "Attribute": "an attribute (x.attr = ...)",
    "Starred": "a starred name (*rest = ...)",
    "Subscript": "a subscript",
}


def construct(node: ast.AST) -> str:
    """A construct in words: ``a while loop``, ``a list comprehension``."""
    kind = type(node).__name__
    return CONSTRUCTS.get(kind, f"the Python construct {kind}")


RUN_TIME_SLICE = (
    "a region's extent is fixed when the kernel compiles: write lo:lo + 64 with a constant extent "
    "(a run-time valid size goes in pl.load(..., valid_shape=[n, 64]))"
)


def rank_hint(value: str, shape: tuple[int, ...]) -> str:
    """At most one slice per dimension: ``a[0:64, 0:128]`` for ``a`` of shape [64, 128]."""
    slices = ", ".join(f"0:{d}" for d in shape)
    return f"write at most {len(shape)} slices, one per dimension, e.g. {value}[{slices}]"


def slice_hint(node: ast.expr) -> str:
    """How to write a subscript entry that is an index or a stepped slice as a region."""
    if isinstance(node, ast.Slice):
        return "drop the step: a region is contiguous, e.g. a[0:64, :]"
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        one = f"{node.value}:{node.value + 1}"
    else:
        index = ast.unparse(node)
        one = f"{index}:{index} + 1"
    return (
        f"write the index as a one-element slice, {one} (a region keeps every dimension); "
        "pl.read(t, [i, j]) reads one element of a tensor"
    )


def _spelled(base: Any, node: ast.Attribute) -> str:
    """``pl.tile`` for the DSL's namespaces (as written), the value in words otherwise."""
    if isinstance(base, (types.ModuleType, OpNamespace)):
        return ast.unparse(node.value)
    return describe_value(base)


def attribute_hint(base: Any, node: ast.Attribute) -> str:
    """The nearest names ``base`` has to the one asked for (``pl.row_mx`` -> ``pl.row_max``)."""
    public = [name for name in dir(base) if not name.startswith("_")]
    near = difflib.get_close_matches(node.attr, public, n=3, cutoff=0.6)
    if not near:
        return f"check the spelling of '{node.attr}'"
    where = ast.unparse(node.value)
    return "did you mean " + " or ".join(f"{where}.{name}" for name in near) + "?"


def compare_hint(node: ast.Compare) -> str:
    if len(node.ops) > 1:
        return "split the chain into single comparisons: `if 0 < i:` and, inside it, `if i < n:`"
    return "`is` and `in` compare compile-time values; compare a run-time scalar with == or !="


def fold_call_hint(callee: Callable[..., Any]) -> str:
    """How to call a compile-time helper whose Python call failed."""
    if callee is split:
        return "write pl.split(pl.SplitMode.UP_DOWN) (or LEFT_RIGHT, NONE)"
    if callee is cross_core_slot:
        return "write pl.cross_core_slot(slot_num=2): slot_num is a keyword argument"
    return f"{callee.__name__}() runs in Python on its constant arguments: pass what plain Python accepts"


# Operators as the user wrote them, for errors about the ones kernels do not take.
SYMBOLS: dict[type, str] = {
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.Invert: "~",
    ast.Not: "not",
    ast.UAdd: "unary +",
    ast.USub: "unary -",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

OPERATORS: dict[type, str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.MatMult: "matmul",
}
COMPARISONS: dict[type, str] = {
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}
# The comparison with its operands swapped: c < x is x > c.
MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
PY_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
# Called at parse time on constants (never on IR values).
COMPILE_TIME_FUNCTIONS: frozenset[Any] = frozenset(
    {len, min, max, abs, int, float, bool, split, cross_core_slot}
    | {available_cluster_count, available_aiv_count}  # the chip's counts (pypto.language.device)
    | {ann.TileView, ann.TensorView}  # views in annotations: pl.Tile[..., pl.TileView(valid_shape=[r, c])]
    | {ann.MemRef}  # a hand-placed tile's allocation: pl.Tile[..., pl.MemRef("ub", slots=2)[i % 2]]
)
# Methods of compile-time values called at parse time: ``x.dtype.get_byte()``.
COMPILE_TIME_METHODS: frozenset[Any] = frozenset({DataType.get_byte})


def compile_time_method(callee: Any) -> bool:
    """Whether ``callee`` is a method of a compile-time value that folds (``pl.FP16.get_byte``)."""
    return getattr(callee, "__func__", None) in COMPILE_TIME_METHODS


ANNOTATION_CLASSES = (ann.Tensor, ann.Tile, ann.Scalar, ann.Out, ann.InOut, ann.Array, ann.DistributedTensor)
CONSTANT_HINT = (
    "use a value that folds while the kernel compiles: a literal, a module global, a.shape, or a "
    "scalar parameter called with a Python number (not a loop index or a pl.read(...) result)"
)
# Run-time counterparts of the compile-time helpers, for their hint on a run-time argument.
RUN_TIME_FORMS = {
    min: "for run-time scalars use pl.minimum(a, b)",
    max: "for run-time scalars use pl.maximum(a, b)",
    int: "convert a run-time scalar with pl.cast(x, pl.INDEX)",
    float: "convert a run-time scalar with pl.cast(x, pl.FP32)",
}
STATEMENT_BUILTINS = {
    "at": "pl.at(...) opens a scope: use it as `with pl.at(level=pl.Level.CORE_GROUP):`",
    "range": "pl.range(...) is the iterable of a for loop: `for i in pl.range(n):`",
    "parallel": "pl.parallel(...) is the iterable of a for loop: `for i in pl.parallel(n):`",
    "unroll": "pl.unroll(...) is the iterable of a for loop: `for i in pl.unroll(n):`",
    "pipeline": "pl.pipeline(...) is the iterable of a for loop: `for i in pl.pipeline(n, stage=2):`",
    "split_aiv": "pl.split_aiv(...) opens a vector region: `for aiv_id in pl.split_aiv(2, mode=...):`",
    "while_": "pl.while_(...) is the iterable of a while loop: `for (x,) in pl.while_(init_values=(0,)):`",
    "cond": "pl.cond(c) is the first statement of a pl.while_ loop body: `pl.cond(x < 10)`",
}


def _names_op_only(callee: Builtin) -> bool:
    """Whether the spelling names an IR op and no DSL function (``pl.tile.muls``). An op that is
    its DSL function's one form at its level is that function under the op's name, and takes the
    function's arguments too: ``pl.tensor.create(shape, dtype)`` is ``pl.create_tensor``."""
    if callee.op is None or callee.op.rsplit(".", 1)[-1] == callee.name.rsplit(".", 1)[-1]:
        return False
    function = callee.function
    spec = OPS.get(callee.op)
    if function is None or spec is None or spec not in function.forms:
        return True
    return sum(1 for form in function.forms if form.level is spec.level) > 1


def _call_name(callee: Builtin) -> str:
    """The call as the user wrote it, for messages: ``pl.tensor.create`` (not ``create_tensor``)."""
    if callee.level and callee.op is not None and callee.scalar_form is None:
        return f"pl.{callee.level}.{callee.op.rsplit('.', 1)[-1]}"
    return callee.dsl_name


def _binds(callee: Builtin, args: list[Any], kwargs: dict[str, Any]) -> bool:
    """Whether the call's arguments bind to the DSL function the spelling names (a DSL call),
    rather than only to the IR op's operands (the printed form, see parser.raw)."""
    function = callee.function
    if function is None or _names_op_only(callee):
        return False
    try:
        function.signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


class KernelCalls(Protocol):
    """How the parser calls other kernels (provided by the program being built)."""

    def call_kernel(
        self,
        parser: ExprParser,
        callee: KernelFunction,
        args: list[Any],
        kwargs: dict[str, Any],
        node: ast.Call,
        task_attrs: dict[str, Any] | None = None,
    ) -> Any: ...


@dataclass(frozen=True)
class Linear:
    """``sum(coeff * term) + const`` over run-time terms (keyed by their AST), for slice extents."""

    terms: dict[str, int | float]
    const: int | float

    def plus(self, other: Linear) -> Linear:
        terms = dict(self.terms)
        for term, coeff in other.terms.items():
            terms[term] = terms.get(term, 0) + coeff
        return Linear({t: c for t, c in terms.items() if c != 0}, self.const + other.const)

    def scaled(self, factor: int | float) -> Linear:
        return Linear({t: c * factor for t, c in self.terms.items() if c * factor != 0}, self.const * factor)

    def minus(self, other: Linear) -> Linear:
        return self.plus(other.scaled(-1))

    def times(self, other: Linear) -> Linear | None:
        if not other.terms:
            return self.scaled(other.const)
        if not self.terms:
            return other.scaled(self.const)
        return None  # a product of run-time values

    def constant(self) -> int | float | None:
        return None if self.terms else self.const


@dataclass(frozen=True)
class BlockIndex:
    """The variable of ``for i in pl.spmd(n)``: inside a scope it reads ``pl.get_block_idx()``."""

    name: str


class ExprParser:
    """Turns expression nodes into parse-time values (IR expressions or Python constants)."""

    def __init__(
        self, source: KernelSource, names: GlobalNames, env: Env, body: BodyBuilder, calls: KernelCalls
    ) -> None:
        self.source = source
        self.names = names
        self.env = env
        self.body = body
        self.calls = calls

    # ------------------------------------------------------------ helpers

    def span(self, node: ast.AST) -> SourceSpan:
        return self.source.span(node)

    def error(self, node: ast.AST, message: str, hint: str) -> ParseError:
        """A ``ParseError`` at ``node``; ``hint`` says how to fix it."""
        return ParseError(message, self.span(node), hint)

    def unsupported(self, node: ast.AST) -> ParseError:
        what = construct(node)
        return self.error(
            node,
            f"unsupported Python construct in a kernel: {what}",
            "kernel bodies accept assignments, pl.* calls, `for ... in pl.range(...)`, "
            "`with pl.at(...)`, compile-time `if`, and `return`",
        )

    def op_context(self, node: ast.AST, name: str, level: str | None = None) -> OpContext:
        return OpContext(self.body, self.span(node), name, level)

    def expr(self, node: ast.expr) -> Any:
        visitor = getattr(self, f"visit_{type(node).__name__}", None)
        if visitor is None:
            raise self.unsupported(node)
        return visitor(node)

    def constant(self, node: ast.expr, what: str, hint: str = CONSTANT_HINT) -> Any:
        """A value that must be known at compile time (folds; IR values are an error). ``hint`` says
        what to write instead of a run-time value."""
        value = self.expr(node)
        if isinstance(value, Expr) and not is_number(value):
            raise self.error(node, f"{what} must be known at compile time, got {describe_value(value)}", hint)
        return number(value) if is_number(value) else value

    # ------------------------------------------------------------ names and literals

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        binding = self.env.lookup(node.id)
        if binding is not None and isinstance(binding.value, BlockIndex):
            return self.block_index(node)
        if binding is not None:
            return binding.value
        found, value = self.names.lookup(node.id)
        if found:
            return value
        if node.id in self.env.ended:
            where, kind = self.env.ended[node.id]
            construct = FRAME_NAMES[kind]
            hint = (
                f"assign '{node.id}' in both arms of the if (or before it), so that it exists after it"
                if kind == "if"
                else "a value made in a pl.parallel loop (which carries nothing), or a tensor view or "
                "array made in a loop, stays in it: write the value into a tensor inside the loop, or "
                "compute it after it"
            )
            raise self.error(
                node,
                f"'{node.id}' is defined inside {construct}{f' (line {where.line})' if where else ''} "
                "and does not exist after it",
                hint,
            )
        raise self.error(
            node,
            f"unknown name '{node.id}'",
            "define it before the kernel uses it (a module global, a closure variable, or a "
            "name assigned earlier in the kernel)",
        )

    def block_index(self, node: ast.Name) -> Var:
        """The variable of ``for i in pl.spmd(n)``: the block index, read inside a scope only."""
        if not self.body.in_scope:
            raise self.error(
                node,
                f"'{node.id}' is the block index of pl.spmd: it exists inside the pl.at scopes of the loop",
                "use it inside `with pl.at(level=pl.Level.CORE_GROUP):`",
            )
        return self.body.block_index(self.span(node))

    def visit_Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.expr(e) for e in node.elts)

    def visit_List(self, node: ast.List) -> list[Any]:
        return [self.expr(e) for e in node.elts]

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Expr):
            return self.ir_attribute(base, node)
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            raise self.error(
                node, f"{_spelled(base, node)} has no attribute '{node.attr}'", attribute_hint(base, node)
            ) from None
        path = self.global_path(node)
        if path is not None:
            self.names.noted(path, value)
        return value

    def global_path(self, node: ast.Attribute) -> tuple[str, ...] | None:
        """``("cfg", "rows")`` for ``cfg.rows`` when ``cfg`` is a module global or closure name."""
        parts = [node.attr]
        base: ast.expr = node.value
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or self.env.lookup(base.id) is not None:
            return None
        return (base.id, *reversed(parts))

    def ir_attribute(self, base: Expr, node: ast.Attribute) -> Any:
        """``a.shape`` and ``a.dtype`` fold to the specialized constants."""
        t = base.type
        if node.attr == "shape" and isinstance(t, (TensorType, TileType)):
            return t.shape
        if node.attr == "dtype" and isinstance(t, (TensorType, TileType, ScalarType)):
            return t.dtype
        raise self.error(
            node,
            f"'.{node.attr}' is not available on {describe_value(base)}",
            "kernel values offer .shape and .dtype",
        )

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Expr):
            return self.region_read(base, node)
        if isinstance(base, ann.MemRef):
            return memref_slot(self, base, node.slice)
        key = self.subscript_key(node.slice)
        if isinstance(base, type) and issubclass(base, ANNOTATION_CLASSES):
            try:
                return base.__class_getitem__(key)  # base[key]: mypy reads only the explicit form
            except PyptoError as err:
                raise err.with_span(self.span(node)) from None
        if isinstance(base, (tuple, list)):
            if isinstance(key, Expr):
                raise self.run_time_index(node, base, key)
            try:
                return base[key]
            except (IndexError, TypeError) as exc:
                raise self.error(
                    node,
                    f"cannot index {describe_value(base)} with {key!r}: {exc}",
                    f"index it with an int from 0 to {len(base) - 1}",
                ) from None
        raise self.error(
            node,
            f"cannot subscript {describe_value(base)}",
            "kernels subscript tensors and tiles (regions), and Python tuples and lists (at compile time)",
        )

    def run_time_index(self, node: ast.Subscript, base: tuple[Any, ...] | list[Any], key: Expr) -> ParseError:
        """A Python tuple or list indexed by a run-time value (a pl.range loop variable, a scalar)."""
        kind = "tuple" if isinstance(base, tuple) else "list"
        index = ast.unparse(node.slice)
        return self.error(
            node,
            f"{ast.unparse(node.value)} is a Python {kind}, read at compile time, but the index {index} is "
            f"a run-time value ({describe_value(key)}), e.g. a pl.range loop variable",
            f"compute the value from {index} (e.g. {index} * 32), or keep the values in a tensor and "
            f"read one with pl.read(t, [{index}])",
        )

    def element_read(self, array: Expr, node: ast.Subscript) -> Any:
        """``arr[i]``: one element of a scalar array, a scalar of its dtype (``array.get_element``)."""
        ctx = self.op_context(node, ast.unparse(node))
        return ctx.call(array_ops.get_element, [array, self.element_index(node, ctx)])

    def element_index(self, node: ast.Subscript, ctx: OpContext) -> Expr:
        """The index of ``arr[i]``: one integer, a constant or a run-time scalar."""
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            raise ctx.fail(
                "a scalar array takes one index, not a slice or several indices",
                "read or write one element: arr[i]",
            )
        index = self.expr(node.slice)
        if isinstance(index, bool) or not is_scalar(index):
            raise ctx.fail(
                f"the index must be an integer, got {describe_value(index)}",
                "index the array with an int, a loop index or an integer run-time scalar",
            )
        result: Expr = scalar_expr(index, DataType.INDEX, ctx.span)
        return result

    def region_read(self, base: Expr, node: ast.Subscript) -> Any:
        """``a[:, k0:k0 + 128]``: a region of a tensor or tile (``pl.slice``); omitted trailing dims
        are whole. Offsets may be run-time; extents must be constant."""
        t = base.type
        if isinstance(t, ArrayType):
            return self.element_read(base, node)
        if not isinstance(t, (TensorType, TileType)):
            raise self.error(
                node,
                f"cannot subscript {describe_value(base)}",
                "subscripts read regions of tensors and tiles (a[0:64, :]); use a scalar as it is",
            )
        dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indexed = not all(isinstance(d, ast.Slice) for d in dims)
        if self.body.host and isinstance(t, TensorType) and indexed and len(dims) <= len(t.shape):
            from pypto.language.parser.dispatch import host_index

            return host_index(self, base, node, list(dims))
        if len(dims) > len(t.shape):
            raise self.error(
                node,
                f"{len(dims)} subscripts for a value of rank {len(t.shape)}",
                rank_hint(ast.unparse(node.value), t.shape),
            )
        if len(dims) == len(t.shape) and not any(isinstance(d, ast.Slice) for d in dims):
            # a[i, j]: one element, as PyPTO reads it (pl.tensor.read / pl.tile.read)
            return build_read(self.op_context(node, ast.unparse(node)), base, [self.expr(d) for d in dims])
        bounds = [self.slice_bounds(d, full) for d, full in zip(dims, t.shape, strict=False)]
        bounds += [(0, full) for full in t.shape[len(dims) :]]
        offsets, shape = [b[0] for b in bounds], [b[1] for b in bounds]
        ctx = self.op_context(node, ast.unparse(node))
        return build_op(ctx, "slice", [base, shape, offsets], {})

    def slice_bounds(self, node: ast.expr, full: int) -> tuple[Any, int]:
        """(start, extent) of one subscript: ``lo:hi`` with constants, or ``lo:lo + n`` at run time."""
        if not isinstance(node, ast.Slice) or node.step is not None:
            raise self.error(
                node, "read a region with slices: a[r0:r1, c0:c1] (no indices, no steps)", slice_hint(node)
            )
        if node.lower is None and node.upper is None:  # the whole dim, whose extent may be dynamic
            return 0, full
        lower = 0 if node.lower is None else self.expr(node.lower)
        if is_number(lower):
            upper = (
                full
                if node.upper is None
                else self.constant(node.upper, "the end of a slice", RUN_TIME_SLICE)
            )
            extent = number(upper) - number(lower)
        else:
            extent = self.run_time_extent(node)
        if not isinstance(extent, int) or extent <= 0:
            raise self.error(
                node,
                f"a slice must hold at least one element, got {ast.unparse(node)}",
                "write lo:hi with integer bounds and hi > lo; it holds hi - lo elements",
            )
        return lower, extent

    def run_time_extent(self, node: ast.Slice) -> Any:
        """The extent of a slice that starts at run time: the end minus the start must simplify to
        a constant (``k0:k0 + 128``, ``i * T:(i + 1) * T``, ``r + 1:r + 2``)."""
        extent = None
        if node.lower is not None and node.upper is not None:
            upper, lower = self.linear(node.upper), self.linear(node.lower)
            extent = upper.minus(lower).constant() if upper is not None and lower is not None else None
        if extent is None:
            raise self.error(
                node,
                f"a slice with a run-time start needs a constant extent, got {ast.unparse(node)}",
                "write the end as the start plus a constant: a[:, k0:k0 + 128] or a[i * T:(i + 1) * T]",
            )
        return extent

    def linear(self, node: ast.expr) -> Linear | None:
        """``node`` as a sum of constant multiples of run-time terms plus a constant, or None when
        it is not one (a product of two run-time values). Terms are compared as written."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            lhs, rhs = self.linear(node.left), self.linear(node.right)
            if lhs is None or rhs is None:
                return None
            if isinstance(node.op, ast.Add):
                return lhs.plus(rhs)
            if isinstance(node.op, ast.Sub):
                return lhs.minus(rhs)
            return lhs.times(rhs)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.linear(node.operand)
            return None if inner is None else inner.scaled(-1)
        if not any(isinstance(n, ast.Call) for n in ast.walk(node)):
            value = self.expr(node)  # no call in it: evaluating it again builds no run-time work
            if is_number(value) and not isinstance(number(value), bool):
                return Linear({}, number(value))
        return Linear({ast.dump(node): 1}, 0)

    def subscript_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(None if p is None else self.constant(p, "a slice bound") for p in parts))
        key = self.expr(node)
        return number(key) if is_number(key) else key

    # ------------------------------------------------------------ operators

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        lhs, rhs = self.expr(node.left), self.expr(node.right)
        name = OPERATORS.get(type(node.op))
        if name is None:
            if is_number(lhs) and is_number(rhs) and isinstance(node.op, ast.Pow):
                return number(lhs) ** number(rhs)
            raise self.error(
                node,
                f"operator {SYMBOLS[type(node.op)]} is not supported on {describe_value(lhs)} and "
                f"{describe_value(rhs)}",
                "kernels take + - * / // % and @; use pl.* ops for the rest (e.g. pl.exp, pl.maximum)",
            )
        ctx = self.op_context(node, f"pl.{name}")
        if name in ("floordiv", "mod"):
            return scalar_binary(ctx, name, lhs, rhs)
        return build_op(ctx, name, [lhs, rhs], {})

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return build_op(self.op_context(node, "pl.neg"), "neg", [value], {})
        if isinstance(node.op, ast.UAdd) and is_scalar(value):
            return value
        if isinstance(value, Expr) and not is_number(value):
            raise self.error(
                node,
                f"operator {SYMBOLS[type(node.op)]} on {describe_value(value)} is not supported",
                "`not` and `~` apply to compile-time values; on a run-time scalar compare instead (x == 0)",
            )
        folded: Any = number(value) if is_number(value) else value  # `~` on a float is the TypeError below
        try:
            return not folded if isinstance(node.op, ast.Not) else ~folded
        except TypeError as exc:
            raise self.error(
                node,
                f"cannot fold {ast.unparse(node)}: {exc}",
                "`~` takes an int known at compile time (and `not` any constant)",
            ) from None

    def visit_Compare(self, node: ast.Compare) -> Any:
        values = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
        if any(is_shaped(v) for v in values):
            return self.shaped_compare(node, values)
        if any(isinstance(v, Expr) and not is_number(v) for v in values):
            if len(node.ops) != 1 or type(node.ops[0]) not in COMPARISONS:
                raise self.error(
                    node,
                    "only a single <, <=, >, >=, == or != compares run-time scalars",
                    compare_hint(node),
                )
            ctx = self.op_context(node, "comparison")
            return scalar_binary(ctx, COMPARISONS[type(node.ops[0])], values[0], values[1])
        plain = [number(v) if is_number(v) else v for v in values]
        try:
            return all(
                PY_COMPARISONS[type(op)](lhs, rhs)
                for op, lhs, rhs in zip(node.ops, plain, plain[1:], strict=False)
            )
        except TypeError as exc:
            raise self.error(
                node,
                f"cannot compare at compile time: {exc}",
                "compare values of one kind: numbers with numbers (e.g. a.shape[0] < 128), not a "
                "shape tuple with a number",
            ) from None

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        *leading, last = node.values
        for operand in leading:
            result = self.constant(
                operand,
                "an operand of and/or before the last",
                "and / or combine compile-time conditions, with a run-time one only last "
                "(`causal and i == r0`); nest run-time ifs instead: `if i > 0:` then `if i < n:` inside it",
            )
            if bool(result) is isinstance(node.op, ast.Or):
                return result
        value = self.expr(last)  # as in Python, `a and b` is `b` once `a` holds: it may be run-time
        return number(value) if is_number(value) else value

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        test = self.constant(
            node.test,
            "the condition of `x if cond else y`",
            "pick between values at compile time only; on a run-time condition write an if statement "
            "whose arms write their results into a tensor (out[...] = ...)",
        )
        return self.expr(node.body if test else node.orelse)

    # ------------------------------------------------------------ calls

    def visit_Call(self, node: ast.Call) -> Any:
        callee = self.expr(node.func)
        if isinstance(callee, Expr):
            raise self.error(
                node,
                f"cannot call {describe_value(callee)}",
                f"{ast.unparse(node.func)} is a value, not a function: pass it to a pl.* op, e.g. pl.exp(x)",
            )
        return self.call_node(callee, node)

    def call_node(self, callee: Any, node: ast.Call) -> Any:
        """A call of ``callee``: its arguments evaluated (without the annotation of the name the
        call is assigned to, which types only the call itself), then :meth:`call`."""
        if isinstance(callee, Builtin) and callee.name in DEBUG_CONSTRUCTS:
            return self.debug_call(callee, node)
        annotation, self.body.annotation = self.body.annotation, None
        try:
            args = [self.expr(a) for a in node.args]
            kwargs: dict[str, Any] = {}
            for kw in node.keywords:
                if kw.arg is None:
                    raise self.error(
                        kw.value, "unsupported Python construct in a kernel: **kwargs in a call", KWARGS_HINT
                    )
                kwargs[kw.arg] = self.expr(kw.value)
        finally:
            self.body.annotation = annotation
        return self.call(callee, args, kwargs, node)

    def debug_call(self, callee: Builtin, node: ast.Call) -> None:
        """``pl.debug.print("acc", acc, i)`` (string literals are labels, the rest values to show)
        or ``pl.debug.breakpoint()``: kernel code only."""
        what = f"{callee.dsl_name}(...)"
        if not self.body.on_device:
            raise self.error(
                node,
                f"{what} looks inside a running kernel: it cannot stand in the orchestration",
                f"write {what} inside a kernel: a `with pl.at(...)` scope, an InCore function or a "
                "pl.spmd body; print host tensors with Python's print after the call returns",
            )
        if node.keywords:
            raise self.error(node.keywords[0].value, f"{what} takes no keyword arguments", DEBUG_HINT)
        if callee.name == "debug.breakpoint":
            if node.args:
                raise self.error(node.args[0], "pl.debug.breakpoint() takes no arguments", DEBUG_HINT)
            self.body.emit(Eval(make_call(debug_ops.breakpoint, (), {}, self.span(node)), self.span(node)))
            return None
        parts: list[str | int] = []
        values: list[Expr] = []
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                parts.append(arg.value)
                continue
            value = self.expr(arg)
            if is_number(value) and not isinstance(value, Expr):
                value = scalar_expr(value, None, self.span(arg))  # a compile-time number, shown as is
            if not isinstance(value, Expr):
                raise self.error(
                    arg, f"{what} shows tiles, tensors and scalars, got {describe_value(value)}", DEBUG_HINT
                )
            parts.append(len(values))
            values.append(value)
        call = make_call(debug_ops.print, tuple(values), {"parts": tuple(parts)}, self.span(node))
        self.body.emit(Eval(call, self.span(node)))  # a statement of its own, never a value
        return None

    def shaped_compare(self, node: ast.Compare, values: list[Any]) -> Any:
        """``a < b`` on tensors or tiles: ``pl.cmp(a, b, cmp_type="lt")`` (a BOOL mask); a scalar
        on either side is the scalar form, ``pl.cmps``."""
        if len(node.ops) != 1 or type(node.ops[0]) not in COMPARISONS:
            raise self.error(
                node,
                "only a single <, <=, >, >=, == or != compares tensors or tiles",
                "compare once per expression and combine the masks, e.g. "
                "pl.and_(pl.cast(a > 0, pl.INT16), pl.cast(a < 1, pl.INT16))",
            )
        test = COMPARISONS[type(node.ops[0])]
        lhs, rhs = values
        if is_scalar(lhs):  # c < x is x > c
            lhs, rhs, test = rhs, lhs, MIRRORED.get(test, test)
        return build_op(self.op_context(node, "pl.cmp"), "cmp", [lhs, rhs], {"cmp_type": test})

    def check_scalar_form(
        self, callee: Builtin, args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> None:
        """``pl.maximums(x, s)``: the scalar form of ``pl.maximum``, so its right operand is a scalar."""
        rhs = args[1] if len(args) > 1 else kwargs.get("rhs", kwargs.get("scalar"))
        if rhs is not None and not is_scalar(rhs):
            raise self.error(
                node,
                f"{callee.dsl_name}: the right operand must be a scalar, got {describe_value(rhs)}",
                f"pass a number or a run-time scalar; combine two tensors or tiles by pl.{callee.name}(a, b)",
            )

    def call(self, callee: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if isinstance(callee, Builtin):
            if callee.name in STATEMENT_BUILTINS:
                raise self.error(
                    node, f"{callee.dsl_name}(...) cannot be used here", STATEMENT_BUILTINS[callee.name]
                )
            if callee.name == "yield_":
                return self.yielded_values(args, kwargs, node)
            if callee.scalar_form is not None:
                self.check_scalar_form(callee, args, kwargs, node)
            spec = (
                raw_spec(callee.op, args, kwargs, _names_op_only(callee))
                if not _binds(callee, args, kwargs)
                else None
            )
            try:
                if spec is not None:
                    spelled = (
                        f"pl.{callee.level}.{spec.name.rsplit('.', 1)[-1]}"
                        if callee.level
                        else f"pl.{spec.name}"
                    )
                    return build_raw(self.op_context(node, spelled, callee.level), spec, args, kwargs)
                ctx = self.op_context(node, _call_name(callee), callee.level)
                return build_op(ctx, callee.name, args, kwargs)
            except PyptoError as err:
                _name_captured_object(err, node, args, kwargs)
                raise
        if isinstance(callee, Directive):
            if callee.name == "static_assert":
                _check_literal_message(self, node)
            return callee.run(self.op_context(node, f"pl.{callee.name}"), args, kwargs)
        if compile_time_method(callee):
            return self.fold_call(callee, args, kwargs, node)
        if isinstance(callee, KernelFunction):
            return self.calls.call_kernel(self, callee, args, kwargs, node)
        if isinstance(callee, DistBuiltin):
            from pypto.language.parser.distributed import build_dist

            return build_dist(self, callee, args, kwargs, node)
        if callee is builtins.range:
            raise self.error(
                node,
                "Python range() cannot drive a kernel loop: a kernel loop is compiled, not run by Python",
                "use pl.range(...) (or pl.parallel / pl.unroll)",
            )
        if callee in COMPILE_TIME_FUNCTIONS:
            return self.fold_call(callee, args, kwargs, node)
        name = getattr(callee, "__qualname__", None) or describe_value(callee)
        raise self.error(
            node,
            f"cannot call {name} inside a kernel",
            "a kernel calls pl.* operations, @pl.jit.incore / @pl.jit.inline / @pl.jit.opaque functions, and "
            "compile-time helpers such as len, min and max",
        )

    def yielded_values(self, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        """``pl.yield_(a2, b2)`` is its arguments: assigned to a loop's carried names, they are the
        values of the next iteration."""
        if kwargs or not args:
            raise self.error(
                node,
                "pl.yield_ takes the carried values, e.g. `a, b = pl.yield_(a2, b2)`",
                "pass one value per carried name, positionally and in the order of init_values=",
            )
        return args[0] if len(args) == 1 else tuple(args)

    def fold_call(
        self, callee: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], node: ast.Call
    ) -> Any:
        """Evaluate a compile-time function (``len(a.shape)``, ``pl.split(...)``) on constants."""
        plain = [number(a) if is_number(a) else a for a in args]
        named = {k: number(v) if is_number(v) else v for k, v in kwargs.items()}
        if any(isinstance(v, Expr) for v in (*plain, *named.values())):
            raise self.error(
                node,
                f"{callee.__name__}() runs at compile time and needs constant arguments",
                RUN_TIME_FORMS.get(callee, CONSTANT_HINT),
            )
        try:
            return callee(*plain, **named)
        except PyptoError as err:
            raise err.with_span(self.span(node)) from None
        except (TypeError, ValueError) as exc:
            raise self.error(
                node, f"{callee.__name__}() failed at compile time: {exc}", fold_call_hint(callee)
            ) from None


def _check_literal_message(parser: Any, node: ast.Call) -> None:
    """``pl.static_assert(cond, msg)``: ``msg`` is a string literal at the call site (as PyPTO
    requires), not a name or an expression that makes one."""
    given = (
        node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "msg"), None)
    )
    if given is not None and not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
        raise parser.error(
            given,
            "pl.static_assert: the message must be a string literal",
            'write the text at the call: pl.static_assert(x.shape[1] == 128, "expected 128 columns")',
        )


def _name_captured_object(err: PyptoError, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> None:
    """An op rejected an argument that is a Python object a name captured from the enclosing
    scope (one that folds to no kernel value): say so by its name, as PyPTO's manual does."""
    given = [
        *zip(node.args, args, strict=False),
        *((k.value, kwargs.get(k.arg or "")) for k in node.keywords),
    ]
    for arg, value in given:
        plain = describe_value(value)
        builtin = isinstance(arg, ast.Name) and arg.id in vars(builtins)  # (float: no capture)
        captured = (
            isinstance(arg, (ast.Name, ast.Attribute)) and plain.startswith("a Python ") and not builtin
        )
        if captured and plain in err.message:
            name = ast.unparse(arg)
            err.message = err.message.replace(
                plain,
                f"{name!r}, {plain} captured from the enclosing scope (it cannot be folded into the kernel)",
            )
            err.args = (err.message,)
            err.hint = (
                f"pass {name} to the kernel as a parameter instead of capturing it, or capture a number"
            )
            return
