"""The statement half of the kernel parser: one visitor method per statement kind.

Scopes and ``pl.split_aiv`` regions are parsed by :class:`~pypto.language.parser.scopes.ScopeParser`.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from pypto.ir import (
    INDEX,
    ArrayType,
    Break,
    Call,
    Continue,
    DataType,
    DimExpr,
    DistributedTensorType,
    DynDim,
    Expr,
    For,
    If,
    LoopKind,
    MemRefError,
    MemRefSlot,
    ParseError,
    Return,
    ScalarType,
    SourceSpan,
    Stmt,
    TensorType,
    TileType,
    TypeCheckError,
    Var,
    While,
    make_call,
)
from pypto.ir.errors import CompileWarning, SSAViolationError
from pypto.ir.extents import is_symbolic
from pypto.ir.nodes import (
    JUMP_STMTS,
    always_jumps,
    map_jumps,
    nested_bodies,
    pick_jump_values,
    stmt_bindings,
    used_vars,
    walk_stmts,
)
from pypto.ir.ops import Communicates, Level, trait_of
from pypto.ir.ops import array as array_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.ops.distributed import RUN_TIME_EXTENT
from pypto.ir.rewrite import substitute_body, substitute_expr
from pypto.ir.types import describe
from pypto.ir.validflow import (
    CarriedValid,
    IfValid,
    carried_extent,
    definitions,
    extent_of,
    is_extent_name,
    var_base,
)
from pypto.language.annotations import ArraySpec, HandleSpec, ScalarSpec, TensorSpec, TileSpec
from pypto.language.builtins import Builtin
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env
from pypto.language.parser.exprs import OPERATORS, TARGETS, KernelCalls, construct, rank_hint, slice_hint
from pypto.language.parser.fills import demand, settle
from pypto.language.parser.host_tensors import annotated_shape
from pypto.language.parser.memref import check_loop_variable
from pypto.language.parser.ops import build_op
from pypto.language.parser.partial import with_view
from pypto.language.parser.regions import REGION_FORM
from pypto.language.parser.reparse import parse_round
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.scopes import ScopeParser
from pypto.language.parser.signature import BIND_DYNAMIC_HINT, evaluate_annotation, is_bind_dynamic
from pypto.language.parser.source import KernelSource
from pypto.language.parser.tasks import SubmitResult
from pypto.language.parser.values import (
    annotation_text,
    describe_value,
    integer_converted,
    is_number,
    is_scalar,
    is_shaped,
    number,
    scalar_expr,
    shaped_type,
)


def _rebound_names(body: list[ast.stmt]) -> list[str]:
    """Names assigned anywhere in ``body`` (nested blocks included), in order of appearance."""
    found: dict[str, None] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                found.update((n.id, None) for n in ast.walk(target) if isinstance(n, ast.Name))
    return list(found)


def _carryable(value: Any) -> bool:
    """A value a loop can carry: a scalar, tile, tensor or scalar array (or a Python number, as a
    scalar)."""
    if is_number(value):
        return not isinstance(number(value), bool)
    return isinstance(value, Expr) and isinstance(value.type, (ScalarType, TileType, TensorType, ArrayType))


def _is_array(value: Any) -> bool:
    return isinstance(value, Expr) and isinstance(value.type, ArrayType)


def _carried(t: Any) -> Any:
    """A value's type as a carried value keeps it: a tile's valid shape aside."""
    return replace(t, valid_shape=None) if isinstance(t, TileType) else t


def augmented_hint(node: ast.AugAssign, rank: int | None) -> str:
    """``out[...] += x`` written with pl ops; ``rank`` is that of the subscripted value, if known."""
    if not isinstance(node.target, ast.Subscript):
        return "augment a plain name: x += y"
    target, value = ast.unparse(node.target), ast.unparse(node.value)
    base = ast.unparse(node.target.value)
    op = OPERATORS.get(type(node.op))
    if op == "add" and rank is not None:
        dims = node.target.slice.elts if isinstance(node.target.slice, ast.Tuple) else [node.target.slice]
        starts = [_start(d) for d in dims] + ["0"] * (rank - len(dims))
        offsets = ", ".join(starts)
        return f"add into the region: pl.assemble({base}, {value}, [{offsets}], atomic=pl.AtomicType.Add)"
    return (
        f"write the new value out: {target} = pl.{op or 'add'}({target}, {value}) "
        "(for a tile value, load the region with pl.load first)"
    )


def _start(node: ast.expr) -> str:
    """The first index of one subscript entry, as written."""
    if isinstance(node, ast.Slice):
        return "0" if node.lower is None else ast.unparse(node.lower)
    return ast.unparse(node)


def fill_hint(target: ast.Subscript, dst: Expr, value: Any) -> str:
    """``out[...] = 0.0`` written with a tile that holds the number."""
    shown = repr(number(value)) if is_number(value) else "value"
    dtype = dst.type.dtype.name  # type: ignore[attr-defined]
    return f"fill the region with a tile: {ast.unparse(target)} = pl.full(shape, pl.{dtype}, {shown})"


def carried_form_hint(kind: LoopKind, has_inits: bool) -> str:
    """How to write the target of a loop with (or without) ``init_values=``."""
    if has_inits:
        return (
            "name the index, then the carried names: "
            f"`for i, (acc,) in pl.{kind.value}(n, init_values=(acc0,)):`"
        )
    return f"a loop has one index: `for i in pl.{kind.value}(n):`; nest a second loop for a second index"


def region_write_hint(name: str, dst: Any) -> str:
    if isinstance(dst, Expr) and isinstance(dst.type, TileType):
        origin = [0] * len(dst.type.shape)
        return f"write a value into a tile with pl.assemble: {name} = pl.assemble({name}, value, {origin})"
    return "write into a tensor: a pl.Out / pl.InOut parameter or a pl.create_tensor(...) result"


LOOP_KINDS = {
    "range": LoopKind.range,
    "parallel": LoopKind.parallel,
    "unroll": LoopKind.unroll,
    "pipeline": LoopKind.pipeline,
}
FOR_BUILTINS = (*LOOP_KINDS, "while_", "split_aiv", "spmd")
# The loops a `break` / `continue` may leave: one iteration at a time, in order.
JUMPABLE = ("pl.range", "pl.while_", "while")


def _reads_after(tree: ast.AST, node: ast.stmt) -> set[str]:
    """The names the function ``tree`` reads after the end of the statement ``node`` before it
    binds them again (a later ``for b in ...`` binds ``b`` before its body reads it)."""
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    first: dict[str, bool] = {}
    for n in _names_in_evaluation_order(tree):
        if (n.lineno, n.col_offset) > end:
            first.setdefault(n.id, not isinstance(n.ctx, ast.Store))
    return {name for name, read in first.items() if read}


def _names_in_evaluation_order(node: ast.AST) -> Iterator[ast.Name]:
    """The names under ``node`` in the order Python evaluates them: an assignment's value before
    its targets (an augmented one reads its target first), a for loop's iterable before its target."""
    if isinstance(node, ast.Name):
        yield node
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield ast.Name(node.target.id, ast.Load(), lineno=node.lineno, col_offset=node.col_offset)
        parts: list[ast.AST] = [node.value] if node.value is not None else []
        parts += targets
    elif isinstance(node, ast.For):
        parts = [node.iter, node.target, *node.body, *node.orelse]
    else:
        parts = list(ast.iter_child_nodes(node))
    for part in parts:
        yield from _names_in_evaluation_order(part)


def _jumps_of(body: tuple[Stmt, ...]) -> list[Break | Continue]:
    """The ``break`` / ``continue`` statements of ``body``'s loop (not of loops inside it), in order."""
    found: list[Break | Continue] = []
    for stmt in body:
        if isinstance(stmt, JUMP_STMTS):
            found.append(stmt)
        elif not isinstance(stmt, (For, While)):
            for inner in nested_bodies(stmt):
                found.extend(_jumps_of(inner))
    return found


def _bound_in(body: tuple[Stmt, ...]) -> set[Var]:
    """The variables the statements of ``body`` bind (nested bodies included)."""
    return {v for stmt in walk_stmts(body) for v in stmt_bindings(stmt)}


@dataclass
class LoopFrame:
    """A loop whose body is being parsed, as its ``break`` / ``continue`` statements see it."""

    kind: str  # "pl.range", "pl.while_", ...
    names: list[str]  # the carried names, in the order of the iter_args
    iter_args: list[Var]
    depth: int  # loops, scopes and regions open around its body (ifs aside)
    jumps: list[Break | Continue] = field(default_factory=list)
    var: Var | None = None  # a pl.range-like loop's variable
    on_device: bool = False  # the loop runs on a core (inside a pl.at scope or an incore body)
    leaving: list[str] = field(default_factory=list)  # names first bound in the body, read after it
    # Per jump (in the order of ``jumps``): the values the leaving names have there (None: unbound).
    leaving_at_jumps: list[dict[str, Expr | None]] = field(default_factory=list)


@dataclass(frozen=True)
class CarriedLoop:
    """A parsed loop body and the values the loop carries; ``dropped`` maps the iter_args of the
    names the body only bound to their own value to their init values."""

    body: tuple[Stmt, ...]
    iter_args: tuple[Var, ...]
    inits: tuple[Expr, ...]
    yields: tuple[Expr, ...]
    results: tuple[Var, ...]
    dropped: dict[Var, Expr]


def _ends_block(stmt: Stmt) -> bool:
    """Whether nothing after ``stmt`` in its block can run: it is a jump, or an if whose arms
    both always jump."""
    return isinstance(stmt, JUMP_STMTS) or always_jumps((stmt,))


class Role(Enum):
    """What the function being parsed is, which decides what ``return`` means."""

    entry = "entry"
    incore = "incore"
    inline = "inline"
    opaque = "opaque"


# The functions whose caller binds what they return to the tensors it passed for their outputs.
_RETURNS_OUTPUTS = {Role.incore: "an @pl.jit.incore function", Role.opaque: "an @pl.jit.opaque function"}


class StmtParser(ScopeParser):
    """Parses a function body statement by statement into ``self.body``."""

    def __init__(
        self,
        kernel: Any,
        source: KernelSource,
        names: GlobalNames,
        env: Env,
        body: BodyBuilder,
        calls: KernelCalls,
        role: Role,
        outputs: tuple[Var, ...] = (),
    ) -> None:
        super().__init__(source, names, env, body, calls)
        self.kernel = kernel
        self.role = role
        self.outputs = outputs  # the pl.Out / pl.InOut parameters
        self.nesting = 0  # loops, scopes, regions and ifs this parser opened
        self.open_ifs = 0  # the run-time ifs among them
        self.loops: list[LoopFrame] = []  # the loops around the statement being parsed
        self.returned: tuple[Any, ...] | None = None

    def stmts(self, nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if self.returned is not None:
                raise self.error(node, "code after `return` is not supported", "remove it or move it up")
            if self.body.regions is not None:
                self.body.regions.advance(self.source, node)
            visitor = getattr(self, f"visit_{type(node).__name__}", None)
            if visitor is None:
                raise self.unsupported(node)
            visitor(node)
            block = self.body.blocks[-1]
            if block and _ends_block(block[-1]):
                return  # what follows a break / continue never runs

    # ------------------------------------------------------------ simple statements

    def visit_Pass(self, node: ast.Pass) -> None:
        return

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        if is_bind_dynamic(node):  # those at the top level were read with the signature
            raise self.error(
                node,
                f"{ast.unparse(node.value)} declares a dim of a parameter dynamic for the whole "
                "function: it cannot stand inside a block",
                BIND_DYNAMIC_HINT,
            )
        self.body.atom(self.expr(node.value))

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            first, second = (ast.unparse(t) for t in node.targets[:2])
            raise self.error(
                node,
                "chained assignment (a = b = ...) is not supported",
                f"assign once and copy the name: {second} = ... then {first} = {second}",
            )
        target = node.targets[0]
        outer, self.body.target_name = (
            self.body.target_name,
            target.id if isinstance(target, ast.Name) else None,
        )
        try:
            value = self.expr(node.value)
        finally:
            self.body.target_name = outer
        self.assign(target, value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            base = self.expr(node.target.value) if isinstance(node.target, ast.Subscript) else None
            rank = len(shaped_type(base).shape) if is_shaped(base) else None
            hint = augmented_hint(node, rank)
            raise self.error(node, "augmented assignment works on names only (x += y)", hint)
        binop = ast.BinOp(node.target, node.op, node.value)
        ast.copy_location(binop, node)
        self.bind_name(node.target.id, self.visit_BinOp(binop), node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None or not isinstance(node.target, ast.Name):
            raise self.error(
                node,
                "an annotated assignment needs a plain name and a value: t: pl.Tile[...] = ...",
                "e.g. t: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])",
            )
        spec = evaluate_annotation(self.kernel, node.annotation, self.env)
        outer, self.body.annotation = (
            self.body.annotation,
            spec if isinstance(spec, (TileSpec, TensorSpec)) else None,
        )
        named, self.body.target_name = self.body.target_name, node.target.id
        try:
            value = self.expr(node.value)
        finally:
            self.body.annotation = outer
            self.body.target_name = named
        value = self.checked(spec, value, node)
        memref = spec.memref if isinstance(spec, TileSpec) else None
        if memref is not None:
            self.check_memref(memref, value, node)
        self.check_single_binding(node.target.id, node.target)
        self.bind_name(node.target.id, value, node.target, memref)
        if isinstance(spec, TileSpec) and spec.view is not None:
            self.annotated_view(spec, node)

    def check_memref(self, slot: MemRefSlot, value: Any, node: ast.AnnAssign) -> None:
        """A ``pl.MemRef`` places the tile an op computes, by a constant or a loop's variable."""
        loops = [f.var for f in self.loops if f.var is not None and f.on_device == self.body.on_device]
        check_loop_variable(slot, loops, node.annotation, self)
        if not isinstance(value, Call):
            raise MemRefError(
                f"pl.MemRef({slot.name!r}) places the tile an op computes, but "
                f"'{ast.unparse(node.target)}' names {describe_value(value)} computed before",
                self.span(node),
                "annotate the assignment where the tile is computed, e.g. t: pl.Tile[..., "
                f"pl.MemRef({slot.name!r}, slots={slot.slots})[...], pl.Mem.Vec] = pl.load(...)",
            )

    def visit_Assert(self, node: ast.Assert) -> None:
        if not self.constant(node.test, "an assert condition"):
            message = self.constant(node.msg, "an assert message") if node.msg else ast.unparse(node.test)
            raise self.error(
                node,
                f"assertion failed at compile time: {message}",
                "the assert checks the kernel's compile-time values (shapes, constants, scalar arguments): "
                "call it with arguments that satisfy it",
            )

    def visit_If(self, node: ast.If) -> None:
        """A compile-time condition parses the taken arm only; a run-time one makes an ``If``."""
        test = self.expr(node.test)
        if isinstance(test, Expr) and not is_number(test):
            self.run_time_if(node, test)
            return
        self.stmts(node.body if (number(test) if is_number(test) else test) else node.orelse)

    def run_time_if(self, node: ast.If, test: Expr) -> None:
        """Both arms become an ``If``. A name bound in an arm leaves the if when every arm that
        reaches its end gives it a value (its own binding, or the one from before the if):
        the arms yield those values and the name is bound to the if's result after it. Other
        names bound in an arm end with it."""
        t = test.type
        if isinstance(t, (TileType, TensorType)):
            raise self.error(
                node.test,
                f"an if condition must be a boolean or integer scalar, got {describe_value(test)}:"
                " a comparison of tiles or tensors is an elementwise mask, not one truth value",
                "choose elementwise with `pl.sel(mask, lhs, rhs)`, or compare scalars:"
                " `if pl.read(a, [0, 0]) < s:`",
            )
        if not isinstance(t, ScalarType) or not (t.dtype is DataType.BOOL or t.dtype.is_integer):
            raise self.error(
                node.test,
                f"an if condition must be a boolean or integer scalar, got {describe_value(test)}",
                "compare the value: `if x > 0:`",
            )
        self.nesting += 1
        self.open_ifs += 1
        arms: list[tuple[Stmt, ...]] = []
        frames: list[dict[str, Any]] = []
        for nodes in (node.body, node.orelse):
            with self.env.branch() as frame, self.body.block() as stmts:
                self.stmts(nodes)
            arms.append(tuple(stmts))
            frames.append(dict(frame))
        self.nesting -= 1
        self.open_ifs -= 1
        falling = [k for k in (0, 1) if not always_jumps(arms[k])]
        valid = IfValid(
            self.if_results(node, arms, frames), arms, falling, self.body.valid, self.body.namer.fresh
        )
        leaving, arms = valid.leaving, [tuple(a) for a in valid.arms]
        span = self.span(node)
        results = tuple(
            Var(self.body.namer.fresh(var_base(name)), valid.result_type(name, ys[0].type), span)
            for name, ys in leaving.items()
        )
        yields = [tuple(ys[k] for ys in leaving.values()) if k in falling else () for k in (0, 1)]
        fills = self.body.fills
        for ys, result in zip(leaving.values(), results, strict=True):
            arriving = [ys[k] for k in falling]  # from pl.full values in every arm: its level is theirs
            if arriving and all(is_shaped(y) and y in fills for y in arriving):
                fills[result] = frozenset().union(*(fills[y] for y in arriving))
        self.body.emit(If(test, arms[0], arms[1], span, yields[0], yields[1], results))
        valid.bind(dict(zip(leaving, results, strict=True)), self.body.valid)
        for (name, _), result in zip(leaving.items(), results, strict=True):
            if is_extent_name(name):
                continue  # a tile's valid extent: its result's valid shape names it
            where = frames[0].get(name) or frames[1].get(name)
            self.env.bind(name, result, where.span if where is not None else span)

    def if_results(
        self, node: ast.If, arms: list[tuple[Stmt, ...]], frames: list[dict[str, Any]]
    ) -> dict[str, list[Expr]]:
        """The names that leave a run-time if, each with its value per arm (an arm that always
        jumps gives none: its entry repeats another arm's, never used)."""
        falling = [k for k in (0, 1) if not always_jumps(arms[k])]
        leaving: dict[str, list[Expr]] = {}
        for name in dict.fromkeys([*frames[0], *frames[1]]):
            before = self.env.lookup(name)
            found = [frames[k].get(name, before) for k in falling]
            bindings = [b for b in found if b is not None]
            if not bindings or len(bindings) < len(found):
                continue  # bound in one arm only: it ends with the arm
            if before is not None and all(b.value is before.value for b in bindings):
                continue  # unchanged in every arm that reaches its end
            if isinstance(bindings[0].value, Expr) and all(b.value is bindings[0].value for b in bindings):
                self.env.bind(name, bindings[0].value, bindings[0].span)  # one value in every arm
                continue
            merged = self.arm_values(name, bindings)
            if merged is None and before is not None:
                changed = next(b for b in bindings if b.value is not before.value)
                raise ParseError(
                    f"'{name}' is bound to {describe_value(changed.value)} in an arm of a run-time if; "
                    "only scalars, tiles and tensors leave an if",
                    changed.span,
                    f"give the value in the arm another name (e.g. {name}_then)",
                )
            if merged is None:
                continue
            leaving[name] = [merged[falling.index(k)] if k in falling else merged[0] for k in (0, 1)]
        return leaving

    def arm_values(self, name: str, bindings: list[Any]) -> list[Expr] | None:
        """The values ``name`` has at the end of the arms, as IR values of one type; None when
        some are not IR values (a Python object stays inside the arm that bound it)."""
        values = [b.value for b in bindings]
        if not all(_carryable(v) for v in values):
            return None
        typed = next((v for v in values if not is_number(v)), None)
        if typed is not None:
            dtype = getattr(typed.type, "dtype", None)
        else:
            dtype = DataType.FP32 if any(isinstance(number(v), float) for v in values) else DataType.INDEX
        exprs = [
            scalar_expr(number(v), dtype, b.span) if is_number(v) else self.body.atom(v)
            for v, b in zip(values, bindings, strict=True)
        ]
        settle(self.body.fills, exprs, bindings[-1].span)  # a pl.full value takes the other arm's level
        first = _carried(exprs[0].type)
        for expr, binding in zip(exprs[1:], bindings[1:], strict=True):
            if _carried(expr.type) != first:
                raise ParseError(
                    f"'{name}' is {describe(exprs[0].type)} at the end of one arm of the if and "
                    f"{describe(expr.type)} at the end of the other",
                    binding.span,
                    f"a value leaving an if has one type in both arms: give one of them another name "
                    f"(e.g. {name}_else), or make both {describe(exprs[0].type)}",
                )
        return exprs

    def visit_Return(self, node: ast.Return) -> None:
        if self.nesting:
            raise self.error(
                node,
                "`return` must be the last statement, outside loops and scopes",
                "write into the outputs inside the block (out[...] = ...) and `return out` once, "
                "as the last statement of the function",
            )
        elts: list[ast.expr] = []
        if node.value is not None:
            elts = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        values = tuple(self.expr(e) for e in elts)
        self.returned = values
        if self.role is not Role.inline:
            exprs = tuple(self.returned_tensor(v, e) for v, e in zip(values, elts, strict=True))
            self.body.emit(Return(exprs, self.span(node)))

    def returned_tensor(self, value: Any, node: ast.expr) -> Expr:
        value = self.body.atom(value)
        viewed = self.body.windows.get(value)
        if viewed is not None and any(viewed.base is out for out in self.outputs):
            value = viewed.base  # a view of an output (its pl.TensorView's valid shape): the output
        if not (isinstance(value, Var) and isinstance(value.type, TensorType)):
            raise self.error(
                node,
                f"a kernel returns tensors, got {describe_value(value)}",
                "write the result into an output parameter (out[...] = ...) and return that: `return out`",
            )
        plane_free = self.body.plane_free  # an Opaque @pl.function returns what it computes
        if self.role in _RETURNS_OUTPUTS and not plane_free and not any(value is out for out in self.outputs):
            raise self.error(
                node,
                f"{_RETURNS_OUTPUTS[self.role]} returns the pl.Out / pl.InOut tensors it writes; "
                f"'{value.name}' is not one",
                "return the output parameters, e.g. `return out`",
            )
        return value

    # ------------------------------------------------------------ assignment targets

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(value, SubmitResult) and value.results == 0 and isinstance(target, ast.Name):
            value = value[0]  # a submit of a kernel that returns nothing gives its task id alone
        if isinstance(target, ast.Name):
            self.check_single_binding(target.id, target)
            self.bind_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, value)
        elif isinstance(target, ast.Subscript):
            if getattr(self.kernel, "strict_ssa", False) and isinstance(target.value, ast.Name):
                name = target.value.id
                raise SSAViolationError(
                    f"`{ast.unparse(target)} = ...` rebinds '{name}', which strict_ssa=True forbids",
                    self.span(target),
                    f"write it explicitly: {name}_2 = pl.assemble({name}, value, offsets); or drop "
                    "strict_ssa",
                )
            self.write_region(target, value)
        else:
            what = TARGETS.get(type(target).__name__, construct(target))
            raise self.error(
                target,
                f"cannot assign to {what} in a kernel",
                "assign to a name (x = ...), several names (a, b = ...), or a tensor region (out[...] = ...)",
            )

    def check_single_binding(self, name: str, node: ast.AST) -> None:
        """Under ``strict_ssa=True`` a name is bound once: binding it again is an error."""
        if not getattr(self.kernel, "strict_ssa", False) or self.env.lookup(name) is None:
            return
        raise SSAViolationError(
            f"'{name}' is bound a second time, which strict_ssa=True forbids",
            self.span(node),
            f"give the new value a name of its own (e.g. {name}_2), or drop strict_ssa; a loop carries "
            "values through init_values= and pl.yield_",
        )

    def unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        if not isinstance(value, (tuple, list)):
            raise self.error(
                target,
                f"cannot unpack {describe_value(value)}",
                f"it is one value: assign it to one name, {ast.unparse(target.elts[0])} = ..."
                if target.elts
                else "assign it to a name",
            )
        if isinstance(value, SubmitResult) and len(value) != len(target.elts):
            wanted = len(target.elts) - 1
            raise self.error(
                target,
                f"pl.submit(...) unpacks {wanted} result value(s) but kernel returns {value.results} "
                f"({value.kernel})",
                f"unpack the {value.results} tensor(s) {value.kernel} returns, then the task id: "
                f"{', '.join([*(f'r{k}' for k in range(value.results)), 'tid'])} = pl.submit(...); a kernel "
                "returns the pl.Out tensors of its return statement",
            )
        if len(value) != len(target.elts):
            raise self.error(
                target,
                f"cannot unpack {len(value)} values into {len(target.elts)} names",
                f"write {len(value)} names on the left, one per value",
            )
        for elt, item in zip(target.elts, value, strict=True):
            self.assign(elt, item)

    def bind_name(self, name: str, value: Any, node: ast.AST, memref: MemRefSlot | None = None) -> None:
        """``name = value``: an op result gets a fresh unique variable; other values are aliased.

        Binding a name to the value it already names (``rows = pl.gather_row(rows, ...)``,
        ``out = helper(a, out)``) keeps the binding, so it is legal inside a loop too.
        """
        span = self.span(node)
        current = self.env.lookup(name)
        if current is not None and value is current.value:
            return
        if (
            current is not None
            and any(current.value is out for out in self.outputs)
            and value is not current.value
            and not _writes_in_place(value, current.value)
        ):
            warnings.warn_explicit(
                f"line {span.line}: `{name} = ...` rebinds the name and writes nothing to the output "
                f"tensor '{name}'; write into it with `{name}[:] = ...`",
                CompileWarning,
                span.file,
                span.line,
            )
        if isinstance(value, Call) and not isinstance(value, DimExpr):  # an extent is a value
            value = self.body.assign(name, value, span, memref)
        self.env.bind(name, value, span)

    def write_element(self, target: ast.Subscript, array: Expr, value: Any) -> None:
        """``arr[i] = v``: the name ``arr`` is rebound to the array with element ``i`` written
        (``array.update_element``), so a loop that writes it carries it."""
        if not isinstance(target.value, ast.Name):
            raise self.error(
                target,
                f"write an element of a scalar array through its name, not {ast.unparse(target.value)}",
                "bind the array to a name first: arr = pl.array.create(n, dtype); arr[i] = v",
            )
        ctx = self.op_context(target, f"{ast.unparse(target)} = ...")
        index = self.element_index(target, ctx)
        if not is_scalar(value):
            raise ctx.fail(
                f"the written value must be a scalar, got {describe_value(value)}",
                "write one number or run-time scalar per element, e.g. one element of a tensor read "
                "with pl.read(t, [i])",
            )
        written = ctx.call(array_ops.update_element, [array, index, scalar_expr(value, None, ctx.span)])
        self.bind_name(target.value.id, written, target)

    def write_region(self, target: ast.Subscript, value: Any) -> None:
        """``out[:] = v`` / ``out[r0:r1, c0:c1] = v``: assemble a tensor (or store a tile) into ``out``."""
        dst = self.expr(target.value)
        if isinstance(dst, Expr) and isinstance(dst.type, ArrayType):
            self.write_element(target, dst, value)
            return
        if not (isinstance(dst, Expr) and isinstance(dst.type, TensorType)):
            raise self.error(
                target,
                f"only tensors take region writes (out[...] = ...), got {describe_value(dst)}",
                region_write_hint(ast.unparse(target.value), dst),
            )
        dims = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        shape = dst.type.shape
        if len(dims) > len(shape):
            raise self.error(
                target,
                f"{len(dims)} subscripts for a tensor of rank {len(shape)}",
                rank_hint(ast.unparse(target.value), shape),
            )
        ctx = self.op_context(target, f"{ast.unparse(target)} = ...")
        value = ctx.shaped(
            value, "the written value", fill_hint(target, dst, value) if is_scalar(value) else None
        )
        offsets = [self.region_start(d, i, shape[i], value, ctx) for i, d in enumerate(dims)]
        for dim in range(len(dims), len(shape)):  # an omitted trailing dim is written whole
            self.check_extent(0, shape[dim], dim, value, ctx)
        offsets += [0] * (len(shape) - len(dims))
        if isinstance(value.type, TileType):
            build_op(ctx, "store", [value, offsets, dst], {})
        else:
            build_op(ctx, "assemble", [dst, value, offsets], {})

    def region_start(self, node: ast.expr, dim: int, full: int, value: Expr, ctx: Any) -> Any:
        if not isinstance(node, ast.Slice) or node.step is not None:
            raise self.error(
                node, "write a region with slices: out[r0:r1, c0:c1] (no indices, no steps)", slice_hint(node)
            )
        lower = 0 if node.lower is None else self.expr(node.lower)
        upper = full if node.upper is None else self.expr(node.upper)
        if is_number(lower) and is_number(upper):
            self.check_extent(number(lower), number(upper), dim, value, ctx)
        return lower

    def check_extent(self, start: Any, end: Any, dim: int, value: Expr, ctx: Any) -> None:
        """The region ``[start:end]`` of ``dim`` holds exactly as many elements as ``value`` has there."""
        sizes = value.type.shape  # type: ignore[attr-defined]
        if dim < len(sizes) and (is_symbolic(end) or is_symbolic(sizes[dim])):
            if not (start == 0 and end == sizes[dim]):  # a dynamic extent is written whole or not at all
                raise TypeCheckError(
                    f"{ctx.name}: the region [{start}:{end}] of dim {dim} does not hold the value's "
                    f"{sizes[dim]} elements ({describe(value.type)})",
                    ctx.span,
                    "write a dynamic extent whole (out[:] = v of the same extent), or store blocks: "
                    "pl.store(tile, [r, 0], out) in a pl.range(0, M, block) loop",
                )
            return
        if dim < len(sizes) and end - start != sizes[dim]:
            raise TypeCheckError(
                f"{ctx.name}: the region [{start}:{end}] of dim {dim} holds "
                f"{end - start} elements but the value has {sizes[dim]} "
                f"({describe(value.type)})",
                ctx.span,
                f"make the region as large as the value: [{start}:{start + sizes[dim]}] in dim {dim}",
            )

    def annotated_view(self, spec: TileSpec, node: ast.AnnAssign) -> None:
        """``t: pl.Tile[..., pl.TileView(valid_shape=..., pad=...)] = value``: the name means the
        value with the view's valid shape and padding (see :func:`partial.with_view`)."""
        assert isinstance(node.target, ast.Name) and spec.view is not None
        binding = self.env.lookup(node.target.id)
        assert binding is not None
        ctx = self.op_context(node, ast.unparse(node.annotation))
        viewed = with_view(ctx, binding.value, spec.view, f"'{node.target.id}'")
        if viewed is not binding.value:
            self.bind_name(node.target.id, viewed, node.target)

    def checked(self, spec: Any, value: Any, node: ast.AnnAssign) -> Any:
        """The value of ``x: <spec> = value``, checked against the annotation."""
        if isinstance(spec, ScalarSpec) and is_number(value) and spec.dtype is not DataType.TASK_ID:
            assert node.value is not None  # visit_AnnAssign rejects `x: T` without a value
            return scalar_expr(number(value), spec.dtype, self.span(node.value))
        if isinstance(spec, ScalarSpec):  # n: pl.Scalar[pl.INT64] = an INT32 (or INDEX) scalar
            assert node.value is not None
            value = integer_converted(value, spec.dtype, self.span(node.value))
        expected: Any = None
        if isinstance(spec, TileSpec):
            expected = TileType(spec.shape, spec.dtype, spec.memory_space)
        elif isinstance(spec, TensorSpec) and spec.shape is not None:
            expected = spec.type_of(annotated_shape(self.body, spec.shape), spec.dtype)  # type: ignore[arg-type]
        elif isinstance(spec, ScalarSpec):  # tid: pl.TaskId = t0 is a pl.Scalar[pl.TASK_ID] too
            expected = ScalarType(spec.dtype)
        elif isinstance(spec, ArraySpec):  # arr: pl.Array[8, pl.INT32] = pl.array.create(8, pl.INT32)
            expected = ArrayType(spec.size, spec.dtype)
        elif isinstance(spec, HandleSpec):  # evt: pl.AsyncEvent = pl.prefetch.async_prefetch(x, ctx)
            expected = spec.type
        if isinstance(spec, (TileSpec, TensorSpec)):  # a pl.full value takes the annotated level
            level = Level.TILE if isinstance(spec, TileSpec) else Level.TENSOR
            demand(self.body.fills, value, level, self.span(node))
        actual = getattr(value, "type", None) if isinstance(value, Expr) else None
        if isinstance(actual, TileType):
            actual = replace(actual, valid_shape=None)
            if isinstance(spec, TileSpec) and spec.memory_space is None:
                expected = replace(expected, memory_space=actual.memory_space)  # any space matches
        plain_annotation = isinstance(spec, TensorSpec) and not spec.distributed
        if isinstance(actual, DistributedTensorType) and plain_annotation:
            actual = TensorType(actual.shape, actual.dtype)  # a window is a tensor too
        kind_ok = isinstance(spec, TensorSpec) and isinstance(actual, TensorType)
        if isinstance(expected, TensorType) and isinstance(actual, TensorType):
            expected = _run_time_extents_named(expected, actual)
        if (expected is not None and actual != expected) or (expected is None and not kind_ok):
            written = annotation_text(actual) if actual is not None else None
            raise TypeCheckError(
                f"'{ast.unparse(node.target)}' is annotated {ast.unparse(node.annotation)} but the "
                f"value is {describe_value(value)}",
                self.span(node),
                f"annotate it as the value's type, {written}" if written else "drop the annotation",
            )
        return value

    # ------------------------------------------------------------ loops

    def visit_For(self, node: ast.For) -> None:
        name, call = self.loop_call(node.iter)
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "for ... else is not supported in a kernel",
                "move its statements after the loop; to run them only when no `break` left it, carry "
                "a flag through the loop and test it after",
            )
        if name in LOOP_KINDS:
            self.loop(node, call, LOOP_KINDS[name])
            return
        if name == "while_":
            self.while_loop(node, call)
            return
        if not isinstance(node.target, ast.Name):
            form = REGION_FORM if name == "split_aiv" else "for i in pl.spmd(n)"
            raise self.error(
                node.target, f"the target of pl.{name}(...) must be one name", f"write `{form}:`"
            )
        if name == "split_aiv":
            self.visit_region(node, call)
        else:
            self.visit_spmd(node, call)

    def loop(self, node: ast.For, call: ast.Call, kind: LoopKind) -> None:
        """``for i in pl.range(...)`` (or parallel / unroll); bounds may be run-time INDEX scalars.

        Names bound before the loop and rebound in its body are carried (see :meth:`carried`),
        as are the names of ``for i, (a, b) in pl.range(n, init_values=(a0, b0))``.
        """
        stage = self.pipeline_stage(call) if kind is LoopKind.pipeline else None
        index, explicit = self.loop_target(node, call, kind)
        start, stop, step = self.loop_bounds(call, kind)
        var = Var(self.body.namer.fresh(index.id), INDEX, self.span(index))
        names, inits = self.carried(node, explicit, kind)
        c = self.carried_loop(node, f"pl.{kind.value}", names, inits, explicit, index.id, var)
        span = self.header_span(node)
        self.body.emit(
            For(var, start, stop, step, c.body, kind, span, c.iter_args, c.inits, c.yields, c.results, stage)
        )

    def pipeline_stage(self, call: ast.Call) -> int:
        """The ``stage=k`` of ``pl.pipeline(..., stage=k)``: a literal int of at least 1."""
        given = [kw for kw in call.keywords if kw.arg == "stage"]
        if not given:
            raise self.error(
                call,
                "pl.pipeline() needs stage=k: how many iterations are in flight at once",
                "e.g. `for i in pl.pipeline(n, stage=2):` (2 to 4 are usual)",
            )
        value = self.expr(given[0].value)
        plain = number(value) if is_number(value) else value
        if not isinstance(plain, int) or isinstance(plain, bool) or plain < 1:
            raise self.error(
                given[0].value,
                f"pl.pipeline() stage must be a literal int of at least 1, got {describe_value(value)}",
                "write the depth as a number, e.g. stage=2 (1 is a plain sequential loop)",
            )
        return plain

    def while_loop(self, node: ast.For, call: ast.Call) -> None:
        """``for (a, b) in pl.while_(init_values=(a0, b0)):`` whose body starts with
        ``pl.cond(c)``: runs while ``c`` (over the carried names) holds. Other names bound before
        the loop and rebound in it are carried too, as in pl.range."""
        explicit = self.while_target(node, call)
        first = node.body[0] if node.body else node
        cond_call = first.value if isinstance(first, ast.Expr) else None
        if not (isinstance(cond_call, ast.Call) and self.names_builtin(cond_call.func, "cond")):
            raise self.error(
                first,
                "a pl.while_ loop body starts with its condition, pl.cond(...)",
                "write the condition first: `pl.cond(x < 10)`; the loop runs while it is true",
            )
        assert isinstance(cond_call, ast.Call)
        if len(cond_call.args) != 1 or cond_call.keywords:
            raise self.error(cond_call, "pl.cond takes one condition", "e.g. pl.cond(x < 10)")
        rest = ast.For(target=node.target, iter=node.iter, body=node.body[1:], orelse=[], type_comment=None)
        ast.copy_location(rest, node)
        names, inits = self.carried(rest, explicit, LoopKind.range)
        cond: list[Expr] = []
        c = self.carried_loop(
            rest,
            "pl.while_",
            names,
            inits,
            explicit,
            before=lambda: cond.append(self.condition(cond_call.args[0])),
        )
        test = substitute_expr(cond[-1], c.dropped)  # the last parse of the body is the one kept
        self.body.emit(While(test, c.body, self.header_span(node), c.iter_args, c.inits, c.yields, c.results))

    def visit_While(self, node: ast.While) -> None:
        """``while c:``: a loop that runs while the run-time condition ``c`` holds, tested before
        every iteration. Names bound before it and rebound in its body are carried, as in
        ``pl.range``; ``c`` reads them. A condition false at compile time skips the body."""
        if node.orelse:
            raise self.error(
                node.orelse[0],
                "while ... else is not supported in a kernel",
                "move its statements after the loop; to run them only when no `break` left it, carry "
                "a flag through the loop and test it after",
            )
        with self.body.block():
            test = self.expr(node.test)
        if is_number(test) and not number(test):
            return
        shaped = ast.For(target=ast.Name("_", ast.Store()), iter=node.test, body=node.body, orelse=[])
        ast.copy_location(shaped, node)
        names, inits = self.carried(shaped, {}, LoopKind.range)
        cond: list[Expr] = []
        c = self.carried_loop(
            node, "while", names, inits, {}, before=lambda: cond.append(self.condition(node.test, "while"))
        )
        test = substitute_expr(cond[-1], c.dropped)
        changing = set(c.iter_args)
        if not any(v in changing for v in used_vars(test)) and not any(
            isinstance(j, Break) for j in _jumps_of(c.body)
        ):
            raise self.error(
                node.test,
                f"this while loop never ends once it starts: its condition `{ast.unparse(node.test)}` "
                "reads nothing the body changes, and the body has no `break`",
                "rebind a name the condition reads in the body (e.g. `i = i + 1`), or leave with `break`",
            )
        self.body.emit(While(test, c.body, self.header_span(node), c.iter_args, c.inits, c.yields, c.results))

    def condition(self, node: ast.expr, form: str = "pl.cond") -> Expr:
        """A while loop's condition: a boolean or integer scalar computed without statements."""
        with self.body.block() as pre:
            value = self.expr(node)
        if is_number(value):
            value = scalar_expr(bool(number(value)), DataType.BOOL, self.span(node))
        t = getattr(value, "type", None)
        if pre or not (isinstance(t, ScalarType) and (t.dtype is DataType.BOOL or t.dtype.is_integer)):
            example = "pl.cond(x < 10)" if form == "pl.cond" else "while x < 10:"
            raise self.error(
                node,
                f"{'pl.cond takes' if form == 'pl.cond' else 'a while condition is'} a comparison of "
                f"scalars, got {describe_value(value)}",
                f"compare the carried values, e.g. {example}; compute other values in the body "
                "(a tile reduction, a pl.read) and carry them",
            )
        return value

    def names_builtin(self, node: ast.expr, name: str) -> bool:
        """Whether ``node`` is the pl statement builtin ``name`` (``pl.cond``)."""
        try:
            value = self.expr(node)
        except ParseError:
            return False
        return isinstance(value, Builtin) and value.name == name

    def while_target(self, node: ast.For, call: ast.Call) -> dict[str, Any]:
        """The carried names of a while loop with their ``init_values`` (mandatory)."""
        inits = [kw for kw in call.keywords if kw.arg == "init_values"]
        other = [kw for kw in call.keywords if kw.arg != "init_values"]
        if call.args or other:
            bad = call.args[0] if call.args else other[0].value
            raise self.error(
                bad,
                "pl.while_() takes only init_values=(...)",
                "write the condition as the body's first statement: `pl.cond(x < 10)`",
            )
        target = node.target
        if not inits:
            raise self.error(
                call,
                "pl.while_() needs init_values=(...): the values the loop carries and its condition reads",
                "e.g. `for (x,) in pl.while_(init_values=(0,)):`, one initial value per carried name",
            )
        if not (
            isinstance(target, ast.Tuple)
            and target.elts
            and all(isinstance(e, ast.Name) for e in target.elts)
        ):
            raise self.error(
                target,
                "the target of pl.while_(...) is the tuple of its carried names",
                "write `for (x,) in pl.while_(init_values=(0,)):` (a tuple, even for one name)",
            )
        return self.carried_inits(target, inits[0].value)

    def carried_loop(
        self,
        node: ast.For | ast.While,
        kind: str,
        names: list[str],
        inits: list[Expr],
        explicit: dict[str, Any],
        index: str | None = None,
        var: Var | None = None,
        before: Any = None,
    ) -> CarriedLoop:
        """Parse a loop's body with its carried names; the body, then of the values it carries
        (the names the body only bound to their own value aside): the iter_args, init values,
        yields and results. The results are bound to the carried names after the loop (or to
        the names of ``r = pl.yield_(...)`` ending the body). Names first bound in the body and
        read after the loop leave it too (see :meth:`leaving_names`)."""
        span = self.header_span(node)
        outputs = self.yield_targets(node, explicit) if isinstance(node, ast.For) else None
        valid = CarriedValid(names, inits, self.body.valid)
        leaving = self.leaving_candidates(node, names)
        frame, body, yields, ends = self.carrying_body(
            node, kind, valid, span, outputs, index, var, before, leaving
        )
        names, inits, iter_args = list(valid.names), list(valid.inits), list(frame.iter_args)
        carried = list(valid.names)  # those leaving the loop are added after them
        inside = _bound_in(body) | set(iter_args) | ({var} if var is not None else set())
        names, iter_args, inits, yields, body, aliases = self.leaving_names(
            node, frame, ends, inside, (names, iter_args, inits, yields, body)
        )
        # A name the body only bound to its own value is not carried after all (nor is a tensor
        # the body only writes in place, carried by init_values=: it names one buffer throughout).
        keep = [
            k
            for k, name in enumerate(names)
            if yields[k] is not iter_args[k]
            or (name in explicit and not isinstance(iter_args[k].type, TensorType))
            or any(j.values[k] is not iter_args[k] for j in frame.jumps)
        ]
        dropped = {iter_args[k]: inits[k] for k in range(len(names)) if k not in keep}
        body = substitute_body(pick_jump_values(body, keep), dropped)
        if outputs is not None:  # `r = pl.yield_(...)` ends the body: r is bound after the loop
            names = list(outputs) + names[len(outputs) :]
        results = tuple(Var(self.body.namer.fresh(var_base(names[k])), iter_args[k].type, span) for k in keep)
        self.follow_fills([iter_args[k] for k in keep], results)
        for k, result in zip(keep, results, strict=True):
            if not is_extent_name(names[k]):  # a tile's valid extent: its result's valid shape names it
                self.env.bind(names[k], result, result.span)
        for k in range(len(outputs or ())):
            if k not in keep:  # `r = pl.yield_(t)` of a tensor carried unchanged: r names it
                self.env.bind(names[k], inits[k], span)
        for name, value in aliases.items():
            self.env.bind(name, substitute_expr(value, dropped) if isinstance(value, Expr) else value, span)
        valid.leave(
            {carried[k]: r for k, r in zip(keep, results, strict=True) if k < len(carried)},
            dict(zip(carried, iter_args, strict=False)),
            dropped,
            self.body.valid,
        )
        return CarriedLoop(
            body,
            tuple(iter_args[k] for k in keep),
            tuple(inits[k] for k in keep),
            tuple(yields[k] for k in keep),
            results,
            dropped,
        )

    def leaving_candidates(self, node: ast.For | ast.While, carried: list[str]) -> list[str]:
        """The names the loop body binds that are unbound before the loop, not carried by it, and
        read after it: they leave the loop with their last value (:meth:`leaving_names`)."""
        after = _reads_after(self.source.tree, node)
        return [
            n
            for n in _rebound_names(node.body)
            if n in after and n not in carried and self.env.lookup(n) is None
        ]

    def leaving_names(
        self,
        node: ast.For | ast.While,
        frame: LoopFrame,
        ends: dict[str, Expr | None],
        inside: set[Var],
        loop: tuple[list[str], list[Var], list[Expr], tuple[Expr, ...], tuple[Stmt, ...]],
    ) -> tuple[list[str], list[Var], list[Expr], tuple[Expr, ...], tuple[Stmt, ...], dict[str, Any]]:
        """Names first bound in a loop's body and read after it leave the loop, as in Python.

        A name whose value at the end of the body was made before the loop (``r = pl.store(t, o,
        out)`` names ``out``; a constant) names that value after the loop. A scalar or tile made in
        the body becomes a carried value: before the loop it holds a placeholder (0, an
        uninitialised tile) that only a loop running no iteration leaves in it; a ``break`` gives
        the value the name has there. Other values (tensor views, arrays made in the body, any
        value of a ``pl.parallel`` loop, which carries nothing) end with the loop, as before.

        Returns the carried names, iter_args, init values, yields and body extended by the new
        carried values, and the names that alias a value from before the loop."""
        names, iter_args, inits, yields, body = loop
        aliases: dict[str, Any] = {}
        added: list[tuple[str, Var, Expr]] = []  # name, iter_arg, end value
        for name, value in ends.items():
            if not (isinstance(value, Expr) and any(v in inside for v in used_vars(value))):
                aliases[name] = value
                continue
            init = None if frame.kind == "pl.parallel" else self.leaving_init(value, node)
            if init is not None:
                span = self.header_span(node)
                iter_arg = Var(self.body.namer.fresh(name), init.type, span)
                names, iter_args, inits = [*names, name], [*iter_args, iter_arg], [*inits, init]
                yields = (*yields, value)
                added.append((name, iter_arg, value))
        if added:
            at_jump = {id(j): k for k, j in enumerate(frame.jumps)}

            def extended(values: tuple[Expr, ...], jump: Break | Continue) -> tuple[Expr, ...]:
                known = frame.leaving_at_jumps[at_jump[id(jump)]]
                extra = tuple(
                    self.leaving_value(name, known.get(name), iter_arg, jump.span)
                    for name, iter_arg, _ in added
                )
                return (*values, *extra)

            body = map_jumps(body, extended)
            frame.jumps[:] = [j for j in _jumps_of(body)]
        return names, iter_args, inits, yields, body, aliases

    def leaving_value(self, name: str, value: Any, iter_arg: Var, span: SourceSpan | None) -> Expr:
        """The value a name leaving the loop has at a ``break`` / ``continue`` (unbound there: its
        value from the iteration before), of the type it has at the end of the body."""
        if value is None:
            return iter_arg
        if is_number(value) and isinstance(iter_arg.type, ScalarType):
            value = scalar_expr(number(value), iter_arg.type.dtype, span)
        if not isinstance(value, Expr) or _carried(value.type) != _carried(iter_arg.type):
            raise ParseError(
                f"'{name}' is {describe_value(value)} at this jump but {describe(iter_arg.type)} at the "
                "end of the loop body, and the loop hands its last value on",
                span,
                f"give '{name}' one type on every path out of the loop, or another name on one of them",
            )
        return value

    def leaving_init(self, value: Expr, node: ast.For | ast.While) -> Expr | None:
        """What a name made in a loop body and read after the loop holds before the loop: a
        placeholder of its type (None: a value of this type does not leave a loop)."""
        span = self.header_span(node)
        t = value.type
        if isinstance(t, ScalarType):
            zero: int | float | bool = False if t.dtype is DataType.BOOL else (0.0 if t.dtype.is_float else 0)
            return scalar_expr(zero, t.dtype, span)
        if isinstance(t, TileType) and self.body.on_device:
            attrs = {"shape": t.shape, "dtype": t.dtype, "target_memory": t.memory_space}
            placeholder = make_call(tile_ops.create, (), attrs, span)
            return self.body.assign("placeholder", placeholder, span)
        return None

    def carrying_body(
        self,
        node: ast.For | ast.While,
        kind: str,
        valid: CarriedValid,
        span: SourceSpan,
        outputs: list[str] | None,
        index: str | None,
        var: Var | None,
        before: Any,
        leaving: list[str],
    ) -> tuple[LoopFrame, tuple[Stmt, ...], tuple[Expr, ...], dict[str, Expr | None]]:
        """The loop's frame, body and yields, its carried tiles keeping their valid shapes: parsed
        again (carrying one more extent) while an iteration changes an extent it entered with."""
        while True:
            keep = [not valid.dims]  # a loop that carries no tile is parsed once
            with parse_round(self.body.namer, self.env, self.body, keep):
                iter_args = [
                    Var(self.body.namer.fresh(var_base(n)), valid.iter_arg_type(n, i), span)
                    for n, i in zip(valid.names, valid.inits, strict=True)
                ]
                self.follow_fills(valid.inits, iter_args)  # a carried fill: its type is the fill's
                valid.enter(dict(zip(valid.names, iter_args, strict=True)), self.body.valid)
                frame = LoopFrame(kind, valid.names, iter_args, 0, leaving=leaving)
                body, yields, ends_of_names = self.loop_body(node, index, var, frame, outputs, before)
                ends = [yields, *(j.values for j in frame.jumps)]
                defs = definitions(walk_stmts(body))
                keep[0] = keep[0] or not valid.widened(iter_args, ends, self.body.valid, defs)
            if keep[0]:
                return frame, body, yields, ends_of_names

    def follow_fills(self, sources: Sequence[Any], values: Sequence[Var]) -> None:
        """Each of ``values`` has its level from the ``pl.full`` its source came from, if any."""
        fills = self.body.fills
        for source, value in zip(sources, values, strict=True):
            if is_shaped(source) and source in fills:
                fills[value] = fills[source]

    def header_span(self, node: ast.For | ast.While) -> SourceSpan:
        """``for i in pl.range(0, n, step)`` (``while c``) without the colon: what an error about the
        loop itself (a run-time step of 0) underlines."""
        whole = self.span(node)
        iterator = self.span(node.iter if isinstance(node, ast.For) else node.test)
        return replace(whole, end_col=iterator.end_col) if iterator.line == whole.line else whole

    def loop_body(
        self,
        node: ast.For | ast.While,
        index: str | None,
        var: Var | None,
        frame: LoopFrame,
        outputs: list[str] | None = None,
        before: Any = None,
    ) -> tuple[tuple[Stmt, ...], tuple[Expr, ...], dict[str, Expr | None]]:
        """The loop's statements and, per carried name, its value at the body's end (``outputs``:
        the body ends with ``r = pl.yield_(...)``, whose values are the carried names' next ones),
        and the values the names leaving the loop have at its end (those bound there).
        ``before`` runs first in the body's frame (a while loop's condition)."""
        self.nesting += 1
        frame.depth = self.nesting - self.open_ifs
        frame.var, frame.on_device = var, self.body.on_device
        self.loops.append(frame)
        iter_args = dict(zip(frame.names, frame.iter_args, strict=True))
        with self.env.loop() as bound, self.body.block() as stmts:
            if index is not None and var is not None:
                self.env.bind(index, var, var.span)
            for name, iter_arg in iter_args.items():
                self.env.carry(name, iter_arg, iter_arg.span)
            if before is not None:
                before()
            if outputs is None:
                self.stmts(node.body)
            else:
                self.stmts(node.body[:-1])
                if not always_jumps(tuple(stmts)):
                    self.final_yield(node.body[-1], outputs, list(iter_args))
            yields = tuple(self.yielded(name, a, node) for name, a in iter_args.items())
            ends = {} if always_jumps(tuple(stmts)) else self.leaving_values(frame, bound)
        self.loops.pop()
        self.nesting -= 1
        return tuple(stmts), yields, ends

    def leaving_values(self, frame: LoopFrame, bound: dict[str, Any]) -> dict[str, Expr | None]:
        """The values the names leaving ``frame``'s loop have here (in its body), for those bound."""
        values: dict[str, Any] = {}
        for name in frame.leaving:
            binding = bound.get(name)
            if binding is not None:
                values[name] = self.body.atom(binding.value)
        return values

    def final_yield(self, final: ast.stmt, outputs: list[str], carried: list[str]) -> None:
        """``r1, r2 = pl.yield_(v1, v2)`` ending a loop body: the carried names' next values."""
        assert isinstance(final, ast.Assign)
        values = self.expr(final.value)
        values = values if isinstance(values, tuple) else (values,)
        if len(values) != len(outputs) or len(outputs) > len(carried):
            raise self.error(
                final,
                f"pl.yield_ gives {len(values)} value(s) for {len(outputs)} name(s) and "
                f"{len(carried)} carried value(s)",
                "yield one value per carried name, in the order of init_values=",
            )
        for name, value in zip(carried, values, strict=False):
            self.env.carry(name, value, self.span(final))

    def visit_Break(self, node: ast.Break) -> None:
        self.jump(node, Break)

    def visit_Continue(self, node: ast.Continue) -> None:
        self.jump(node, Continue)

    def jump(self, node: ast.Break | ast.Continue, kind: type[Break] | type[Continue]) -> None:
        """``break`` / ``continue``: the innermost loop's carried names give their values here."""
        word = kind.__name__.lower()
        frame = self.loops[-1] if self.loops else None
        if frame is None:
            raise self.error(node, f"`{word}` outside a loop", f"use `{word}` inside a pl.range loop")
        if frame.kind not in JUMPABLE:
            raise self.error(
                node,
                f"`{word}` works in pl.range and pl.while_ loops, not in a {frame.kind} loop",
                "make the loop a pl.range (its iterations then run one after the other)",
            )
        if self.nesting - self.open_ifs != frame.depth:
            raise self.error(
                node,
                f"`{word}` cannot leave a pl.at scope, pl.split_aiv region or pl.spmd block",
                "put the loop inside the scope, or guard the scope's work with an if",
            )
        iter_args = zip(frame.names, frame.iter_args, strict=True)
        values = tuple(self.yielded(name, a, node) for name, a in iter_args)  # type: ignore[arg-type]
        stmt = kind(values, self.span(node))
        frame.jumps.append(stmt)
        bound = {name: b for name in frame.leaving if (b := self.env.lookup(name)) is not None}
        frame.leaving_at_jumps.append(self.leaving_values(frame, bound))
        self.body.emit(stmt)

    def yield_targets(self, node: ast.For, explicit: dict[str, Any]) -> list[str] | None:
        """The names of ``r1, r2 = pl.yield_(...)`` ending the body of a loop with ``init_values``,
        when they are not the carried names themselves (then they name the loop's results, bound
        after it, as printed IR writes it)."""
        final = node.body[-1] if node.body else None
        if not explicit or not isinstance(final, ast.Assign) or len(final.targets) != 1:
            return None
        call = final.value
        if not (
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "yield_"
        ):
            return None
        target = final.targets[0]
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(e, ast.Name) for e in elts):
            return None
        names = [e.id for e in elts]  # type: ignore[attr-defined]
        if names == list(explicit)[: len(names)]:
            return None  # `a, b = pl.yield_(...)`: the carried names take the values, as before
        return names

    def loop_target(self, node: ast.For, call: ast.Call, kind: LoopKind) -> tuple[ast.Name, dict[str, Any]]:
        """The loop variable and the explicitly carried names with their ``init_values``."""
        inits = [kw for kw in call.keywords if kw.arg == "init_values"]
        allowed = ("init_values", "stage") if kind is LoopKind.pipeline else ("init_values",)
        other = [kw for kw in call.keywords if kw.arg not in allowed]
        if other:
            raise self.error(
                other[0].value,
                f"pl.{kind.value}() takes no keyword argument {other[0].arg}=",
                f"pass the bounds positionally, pl.{kind.value}(start, stop, step); the one keyword is "
                "init_values=(...)",
            )
        if inits and kind is LoopKind.unroll:
            raise self.error(
                inits[0].value,
                "pl.unroll() takes no init_values=: an unrolled loop carries no values",
                "use pl.range(..., init_values=(...)) for a loop that carries values",
            )
        if isinstance(node.target, ast.Name) and not inits:
            return node.target, {}
        target = node.target
        pair = target.elts if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        index = pair[0] if pair else None
        names = pair[1] if pair else None
        names_ok = isinstance(names, ast.Tuple) and all(isinstance(e, ast.Name) for e in names.elts)
        if not (inits and isinstance(index, ast.Name) and names_ok):
            raise self.error(
                target,
                "loop-carried values are written `for i, (a, b) in pl.range(n, init_values=(a0, b0)):`",
                carried_form_hint(kind, bool(inits)),
            )
        assert isinstance(names, ast.Tuple) and isinstance(index, ast.Name)
        return index, self.carried_inits(names, inits[0].value)

    def carried_inits(self, names: ast.Tuple, given: ast.expr) -> dict[str, Any]:
        """The explicitly carried names with their ``init_values=`` (one each, carryable)."""
        values = self.expr(given)
        values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        if len(values) != len(names.elts):
            raise self.error(
                given,
                f"{len(names.elts)} carried names but {len(values)} init_values",
                f"give one initial value per carried name: {len(names.elts)} values in init_values=(...)",
            )
        places = given.elts if isinstance(given, (ast.Tuple, ast.List)) else [given] * len(values)
        for name, value, place in zip(names.elts, values, places, strict=True):
            if not _carryable(value):
                raise self.error(
                    place,
                    f"the loop-carried value '{name.id}' is {describe_value(value)}; "  # type: ignore[attr-defined]
                    "a loop carries scalars, tiles and tensors",
                    "start it from a number (0, 0.0), a tile or a tensor; a flag is the INDEX scalar 0 or 1",
                )
        return {e.id: v for e, v in zip(names.elts, values, strict=True)}  # type: ignore[attr-defined]

    def carried(
        self, node: ast.For, explicit: dict[str, Any], kind: LoopKind
    ) -> tuple[list[str], list[Expr]]:
        """The carried names and their initial values: the explicit ones, then every name bound
        before the loop to a scalar, tile, tensor or array and rebound in its body (every loop
        form carries, pl.parallel too)."""
        names = list(explicit)
        values = list(explicit.values())
        for name in _rebound_names(node.body):
            current = self.env.lookup(name)
            if name in explicit or current is None or not _carryable(current.value):
                continue
            # pl.parallel carries too: its iterations are asserted independent, which a carried
            # value makes the author's promise (the simulator's race checks hold it to it).
            names.append(name)
            values.append(current.value)
        inits = [self.carried_init(n, v, node) for n, v in zip(names, values, strict=True)]
        return names, inits

    def carried_init(self, name: str, value: Any, node: ast.For) -> Expr:
        """The initial value of a carried name (carryable: checked where it was chosen)."""
        value = self.body.atom(value)
        if is_number(value):
            plain = number(value)
            return scalar_expr(
                plain, DataType.INDEX if isinstance(plain, int) else DataType.FP32, self.span(node)
            )
        return value

    def yielded(self, name: str, iter_arg: Var, node: ast.For | ast.While) -> Expr:
        """The value ``name`` has at the end of the loop body: the next iteration's ``iter_arg``."""
        if is_extent_name(name):  # an extent of a carried tile's valid shape: the tile's, here
            tile = self.env.lookup(extent_of(name)[0])
            assert tile is not None and isinstance(iter_arg.type, ScalarType)
            value = self.body.atom(tile.value)
            return carried_extent(
                name, value, iter_arg.type.dtype, self.body.valid, self.body.blocks[-1], self.body.namer.fresh
            )
        binding = self.env.lookup(name)
        value = self.body.atom(binding.value if binding is not None else iter_arg)
        if is_number(value):
            value = scalar_expr(number(value), iter_arg.type.dtype, self.span(node))  # type: ignore[attr-defined]
        actual = getattr(value, "type", None)
        if isinstance(actual, TileType) and isinstance(iter_arg.type, TileType):
            actual = replace(actual, valid_shape=iter_arg.type.valid_shape)
        if actual != iter_arg.type:
            # At the assignment that changed it, where the fix goes.
            span = binding.span if binding is not None and binding.span is not None else self.span(node)
            raise ParseError(
                f"the loop-carried value '{name}' enters the loop as {describe(iter_arg.type)} but "
                f"is {describe_value(value)} at the end of the body",
                span,
                "a carried value keeps its type, shape and memory space across iterations: give the "
                f"value computed in the loop another name (e.g. {name}_next), or make it "
                f"{describe(iter_arg.type)} again",
            )
        return value

    def loop_call(self, node: ast.expr) -> tuple[str, ast.Call]:
        """The builtin a for statement iterates over: a pl.range kind, or ``split_aiv``."""
        callee = self.expr(node.func) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Call) and isinstance(callee, Builtin) and callee.name in FOR_BUILTINS:
            return callee.name, node
        if callee is range:
            raise self.error(
                node,
                "Python range() cannot drive a kernel loop: a kernel loop is compiled, not run by Python",
                "use pl.range(...) (or pl.parallel / pl.unroll)",
            )
        raise self.error(
            node,
            "a kernel loop iterates over pl.range(...), pl.parallel(...) or pl.unroll(...)",
            "for i in pl.range(n):",
        )

    def loop_bounds(self, call: ast.Call, kind: LoopKind) -> tuple[Expr, Expr, Expr]:
        if not 1 <= len(call.args) <= 3:
            raise self.error(
                call,
                f"pl.{kind.value}() takes (stop), (start, stop) or (start, stop, step); "
                f"got {len(call.args)} arguments",
                f"e.g. pl.{kind.value}(4) or pl.{kind.value}(0, 256, 64)",
            )
        values = [self.loop_bound(arg, kind) for arg in call.args]
        if len(values) == 1:
            values.insert(0, 0)
        if len(values) == 2:
            values.append(1)
        if is_number(values[2]) and number(values[2]) == 0:
            raise self.error(
                call.args[2],
                f"pl.{kind.value}() step must not be zero",
                "use a positive step: 1, or the tile size to walk tiles (e.g. 64)",
            )
        span = self.span(call)
        start, stop, step = (self.body.atom(scalar_expr(v, DataType.INDEX, span)) for v in values)
        return start, stop, step

    def loop_bound(self, node: ast.expr, kind: LoopKind) -> Any:
        value = self.expr(node)
        plain = number(value) if is_number(value) else value
        if isinstance(plain, int) and not isinstance(plain, bool):
            return plain
        if isinstance(value, Expr) and isinstance(value.type, ScalarType) and value.type.dtype.is_integer:
            if kind is LoopKind.unroll:
                raise self.error(
                    node,
                    f"pl.unroll() bounds must be known at compile time, got {describe_value(value)}",
                    "write an int (a literal, a constant or a static shape); use pl.range for a run-time "
                    "bound",
                )
            return value
        raise self.error(
            node,
            f"pl.{kind.value}() bounds must be integers, got {describe_value(value)}",
            "write ints (e.g. a.shape[0] // 64) or integer scalars; convert a float scalar with "
            "pl.cast(x, pl.INDEX)",
        )


def _run_time_extents_named(expected: TensorType, actual: TensorType) -> TensorType:
    """``expected`` with each dynamic extent that names one of ``actual``'s run-time extents (a
    window's ``[pld.world_size(), 1]``, printed as ``world_size = pl.dynamic("world_size")``) at the
    same axis replaced by that extent: the printed program's annotation reads back as its value."""
    if len(expected.shape) != len(actual.shape):
        return expected
    shape = tuple(
        have
        if isinstance(want, DynDim)
        and isinstance(have, DynDim)
        and have.ident == RUN_TIME_EXTENT
        and want.name == have.name
        else want
        for want, have in zip(expected.shape, actual.shape, strict=True)
    )
    return replace(expected, shape=shape) if shape != expected.shape else expected


def _writes_in_place(value: Any, tensor: Any) -> bool:
    """``value`` is a call that writes ``tensor`` in place and gives it back: a collective
    (``data = pld.tensor.allreduce(data, signal)``), whose result is the window it was given."""
    return (
        isinstance(value, Call)
        and trait_of(value.op, Communicates) is not None
        and any(arg is tensor for arg in value.args)
        and isinstance(value.type, TensorType)
    )
