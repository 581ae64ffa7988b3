"""The statement half of the kernel parser: one visitor method per statement kind.

Scopes and ``pl.split_aiv`` regions are parsed by :class:`~pypto.language.parser.scopes.ScopeParser`.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace
from enum import Enum
from typing import Any

from pypto.ir import (
    INDEX,
    TASK_ID,
    Call,
    DataType,
    Expr,
    For,
    If,
    LoopKind,
    ParseError,
    Return,
    ScalarType,
    SourceSpan,
    Stmt,
    TensorType,
    TileType,
    TypeCheckError,
    Var,
)
from pypto.ir.errors import CompileWarning
from pypto.ir.rewrite import substitute_body
from pypto.ir.types import describe
from pypto.language.annotations import ScalarSpec, TaskIdSpec, TensorSpec, TileSpec
from pypto.language.builtins import Builtin
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.env import Env
from pypto.language.parser.exprs import OPERATORS, TARGETS, KernelCalls, construct, rank_hint, slice_hint
from pypto.language.parser.ops import build_op
from pypto.language.parser.regions import REGION_FORM
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.scopes import ScopeParser
from pypto.language.parser.signature import evaluate_annotation
from pypto.language.parser.source import KernelSource
from pypto.language.parser.values import (
    annotation_text,
    describe_value,
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
    """A value a loop can carry: a scalar, tile or tensor (or a Python number, as a scalar)."""
    if is_number(value):
        return not isinstance(number(value), bool)
    return isinstance(value, Expr) and isinstance(value.type, (ScalarType, TileType, TensorType))


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


LOOP_KINDS = {"range": LoopKind.range, "parallel": LoopKind.parallel, "unroll": LoopKind.unroll}
FOR_BUILTINS = (*LOOP_KINDS, "split_aiv", "spmd")


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
        self.nesting = 0  # loops, scopes and regions this parser opened
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

    # ------------------------------------------------------------ simple statements

    def visit_Pass(self, node: ast.Pass) -> None:
        return

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.body.atom(self.expr(node.value))

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            first, second = (ast.unparse(t) for t in node.targets[:2])
            raise self.error(
                node,
                "chained assignment (a = b = ...) is not supported",
                f"assign once and copy the name: {second} = ... then {first} = {second}",
            )
        self.assign(node.targets[0], self.expr(node.value))

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
        value = self.checked(spec, self.expr(node.value), node)
        self.bind_name(node.target.id, value, node.target)

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
        """Both arms become an ``If``; names bound in an arm end with it (no values leave it)."""
        t = test.type
        if not isinstance(t, ScalarType) or not (t.dtype is DataType.BOOL or t.dtype.is_integer):
            raise self.error(
                node.test,
                f"an if condition must be a boolean or integer scalar, got {describe_value(test)}",
                "compare the value: `if x > 0:`",
            )
        self.nesting += 1
        arms = []
        for nodes in (node.body, node.orelse):
            with self.env.branch(), self.body.block() as stmts:
                self.stmts(nodes)
            arms.append(tuple(stmts))
        self.nesting -= 1
        self.body.emit(If(test, arms[0], arms[1], self.span(node)))

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
        if not (isinstance(value, Var) and isinstance(value.type, TensorType)):
            raise self.error(
                node,
                f"a kernel returns tensors, got {describe_value(value)}",
                "write the result into an output parameter (out[...] = ...) and return that: `return out`",
            )
        if self.role in _RETURNS_OUTPUTS and not any(value is out for out in self.outputs):
            raise self.error(
                node,
                f"{_RETURNS_OUTPUTS[self.role]} returns the pl.Out / pl.InOut tensors it writes; "
                f"'{value.name}' is not one",
                "return the output parameters, e.g. `return out`",
            )
        return value

    # ------------------------------------------------------------ assignment targets

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, value)
        elif isinstance(target, ast.Subscript):
            self.write_region(target, value)
        else:
            what = TARGETS.get(type(target).__name__, construct(target))
            raise self.error(
                target,
                f"cannot assign to {what} in a kernel",
                "assign to a name (x = ...), several names (a, b = ...), or a tensor region (out[...] = ...)",
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
        if len(value) != len(target.elts):
            raise self.error(
                target,
                f"cannot unpack {len(value)} values into {len(target.elts)} names",
                f"write {len(value)} names on the left, one per value",
            )
        for elt, item in zip(target.elts, value, strict=True):
            self.assign(elt, item)

    def bind_name(self, name: str, value: Any, node: ast.AST) -> None:
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
        ):
            warnings.warn_explicit(
                f"line {span.line}: `{name} = ...` rebinds the name and writes nothing to the output "
                f"tensor '{name}'; write into it with `{name}[:] = ...`",
                CompileWarning,
                span.file,
                span.line,
            )
        if isinstance(value, Call):
            value = self.body.assign(name, value, span)
        self.env.bind(name, value, span)

    def write_region(self, target: ast.Subscript, value: Any) -> None:
        """``out[:] = v`` / ``out[r0:r1, c0:c1] = v``: assemble a tensor (or store a tile) into ``out``."""
        dst = self.expr(target.value)
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
        if dim < len(sizes) and end - start != sizes[dim]:
            raise TypeCheckError(
                f"{ctx.name}: the region [{start}:{end}] of dim {dim} holds "
                f"{end - start} elements but the value has {sizes[dim]} "
                f"({describe(value.type)})",
                ctx.span,
                f"make the region as large as the value: [{start}:{start + sizes[dim]}] in dim {dim}",
            )

    def checked(self, spec: Any, value: Any, node: ast.AnnAssign) -> Any:
        """The value of ``x: <spec> = value``, checked against the annotation."""
        if isinstance(spec, ScalarSpec) and is_number(value):
            assert node.value is not None  # visit_AnnAssign rejects `x: T` without a value
            return scalar_expr(number(value), spec.dtype, self.span(node.value))
        expected: Any = None
        if isinstance(spec, TileSpec):
            expected = TileType(spec.shape, spec.dtype, spec.memory_space)
        elif isinstance(spec, TensorSpec) and spec.shape is not None:
            expected = TensorType(spec.shape, spec.dtype)  # type: ignore[arg-type]
        elif isinstance(spec, ScalarSpec):
            expected = ScalarType(spec.dtype)
        elif isinstance(spec, TaskIdSpec):  # tid: pl.TaskId = t0
            expected = TASK_ID
        actual = getattr(value, "type", None) if isinstance(value, Expr) else None
        if isinstance(actual, TileType):
            actual = replace(actual, valid_shape=None)
            if isinstance(spec, TileSpec) and spec.memory_space is None:
                expected = replace(expected, memory_space=actual.memory_space)  # any space matches
        kind_ok = isinstance(spec, TensorSpec) and isinstance(actual, TensorType)
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
                "a kernel loop has no break, so the else block would always run: move its statements "
                "after the loop",
            )
        if name in LOOP_KINDS:
            self.loop(node, call, LOOP_KINDS[name])
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
        index, explicit = self.loop_target(node, call, kind)
        start, stop, step = self.loop_bounds(call, kind)
        var = Var(self.body.namer.fresh(index.id), INDEX, self.span(index))
        names, inits = self.carried(node, explicit, kind)
        span = self.header_span(node)
        iter_args = tuple(
            Var(self.body.namer.fresh(n), i.type, span) for n, i in zip(names, inits, strict=True)
        )
        outputs = self.yield_targets(node, explicit)
        body, yields = self.loop_body(node, index.id, var, dict(zip(names, iter_args, strict=True)), outputs)
        # A name the body only bound to its own value is not carried after all.
        keep = [k for k, name in enumerate(names) if yields[k] is not iter_args[k] or name in explicit]
        body = substitute_body(body, {iter_args[k]: inits[k] for k in range(len(names)) if k not in keep})
        if outputs is not None:  # `r = pl.yield_(...)` ends the body: r is bound after the loop
            names = list(outputs) + names[len(outputs) :]
        results = tuple(Var(self.body.namer.fresh(names[k]), iter_args[k].type, span) for k in keep)
        self.body.emit(
            For(
                var,
                start,
                stop,
                step,
                body,
                kind,
                span,
                iter_args=tuple(iter_args[k] for k in keep),
                init_values=tuple(inits[k] for k in keep),
                yields=tuple(yields[k] for k in keep),
                results=results,
            )
        )
        for k, result in zip(keep, results, strict=True):
            self.env.bind(names[k], result, result.span)

    def header_span(self, node: ast.For) -> SourceSpan:
        """``for i in pl.range(0, n, step)`` without the colon: what an error about the loop itself
        (a run-time step of 0) underlines."""
        whole, iterator = self.span(node), self.span(node.iter)
        return replace(whole, end_col=iterator.end_col) if iterator.line == whole.line else whole

    def loop_body(
        self,
        node: ast.For,
        index: str,
        var: Var,
        iter_args: dict[str, Var],
        outputs: list[str] | None = None,
    ) -> tuple[tuple[Stmt, ...], tuple[Expr, ...]]:
        """The loop's statements and, per carried name, its value at the body's end (``outputs``:
        the body ends with ``r = pl.yield_(...)``, whose values are the carried names' next ones)."""
        self.nesting += 1
        with self.env.loop(), self.body.block() as stmts:
            self.env.bind(index, var, var.span)
            for name, iter_arg in iter_args.items():
                self.env.carry(name, iter_arg, iter_arg.span)
            if outputs is None:
                self.stmts(node.body)
            else:
                self.stmts(node.body[:-1])
                final = node.body[-1]
                assert isinstance(final, ast.Assign)
                values = self.expr(final.value)
                values = values if isinstance(values, tuple) else (values,)
                carried = list(iter_args)
                if len(values) != len(outputs) or len(outputs) > len(carried):
                    raise self.error(
                        final,
                        f"pl.yield_ gives {len(values)} value(s) for {len(outputs)} name(s) and "
                        f"{len(carried)} carried value(s)",
                        "yield one value per carried name, in the order of init_values=",
                    )
                for name, value in zip(carried, values, strict=False):
                    self.env.carry(name, value, self.span(final))
            yields = tuple(self.yielded(name, a, node) for name, a in iter_args.items())
        self.nesting -= 1
        return tuple(stmts), yields

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
        other = [kw for kw in call.keywords if kw.arg != "init_values"]
        if other:
            raise self.error(
                other[0].value,
                f"pl.{kind.value}() takes no keyword argument {other[0].arg}=",
                f"pass the bounds positionally, pl.{kind.value}(start, stop, step); the one keyword is "
                "init_values=(...)",
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
        values = self.expr(inits[0].value)
        values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        assert isinstance(names, ast.Tuple) and isinstance(index, ast.Name)
        if len(values) != len(names.elts):
            raise self.error(
                inits[0].value,
                f"{len(names.elts)} carried names but {len(values)} init_values",
                f"give one initial value per carried name: {len(names.elts)} values in init_values=(...)",
            )
        given = inits[0].value
        places = given.elts if isinstance(given, (ast.Tuple, ast.List)) else [given] * len(values)
        for name, value, place in zip(names.elts, values, places, strict=True):
            if not _carryable(value):
                raise self.error(
                    place,
                    f"the loop-carried value '{name.id}' is {describe_value(value)}; "  # type: ignore[attr-defined]
                    "a loop carries scalars, tiles and tensors",
                    "start it from a number (0, 0.0), a tile or a tensor; a flag is the INDEX scalar 0 or 1",
                )
        return index, {e.id: v for e, v in zip(names.elts, values, strict=True)}  # type: ignore[attr-defined]

    def carried(
        self, node: ast.For, explicit: dict[str, Any], kind: LoopKind
    ) -> tuple[list[str], list[Expr]]:
        """The carried names and their initial values: the explicit ones, then every name bound
        before the loop to a scalar, tile or tensor and rebound in its body (pl.range / pl.unroll)."""
        names = list(explicit)
        values = list(explicit.values())
        if kind is not LoopKind.parallel:
            for name in _rebound_names(node.body):
                current = self.env.lookup(name)
                if name not in explicit and current is not None and _carryable(current.value):
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

    def yielded(self, name: str, iter_arg: Var, node: ast.For) -> Expr:
        """The value ``name`` has at the end of the loop body: the next iteration's ``iter_arg``."""
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
            return value
        raise self.error(
            node,
            f"pl.{kind.value}() bounds must be integers, got {describe_value(value)}",
            "write ints (e.g. a.shape[0] // 64) or integer scalars; convert a float scalar with "
            "pl.cast(x, pl.INDEX)",
        )
