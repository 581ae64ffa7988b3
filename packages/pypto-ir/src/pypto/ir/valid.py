"""Run-time valid shapes: which tiles carry one, and how an op passes it on.

``pl.load(t, offsets, shape, valid_shape=[n, 64])`` with a run-time ``n`` makes a tile whose
valid shape is known only at run time. The IR carries it as operands: of the load
(``tile.load_partial``), and of the ops whose result depends on it (``tile.store_partial``,
``tile.store_atomic``, ``tile.fillpad``). While parsing, the valid shape follows the tile through
ops the way a static one follows it through their type rules, as the ops' traits say: an op that
keeps the valid shape (``KeepsValid``: elementwise ops, broadcasts, moves) passes its first tile
operand's on, a row reduction the valid rows, a column reduction the valid columns, and a load of
a run-time region (``GmAccess(valid=...)``) makes it; ``pl.set_validshape`` (``SetsValid``)
replaces it. Other ops (``pl.fillpad``, which defines the
padding) give a tile that is valid everywhere.

A reduction sees only the valid region of its operand: the parser builds it on
``pl.fillpad(x, pad_value=identity)`` of a partial tile; and a push of a tile with a run-time valid
shape carries it as the push's second operand. A pass that makes tiles partial (a lane's share of
an odd extent, the last block of a dynamic one) or pushes them builds those ops the same way with
:func:`build_as_parsed`, so its output reads back as the same program.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pypto.ir.nodes import (
    JUMP_STMTS,
    LOOP_STMTS,
    Assign,
    Break,
    Call,
    Const,
    Continue,
    Eval,
    Expr,
    For,
    If,
    Stmt,
    TupleExpr,
    Var,
    While,
    nested_bodies,
    walk_stmts,
    with_bodies,
)
from pypto.ir.ops import (
    GmAccess,
    KeepsValid,
    PipeAction,
    PipeEnd,
    Product,
    Reduction,
    Reinterprets,
    SetsValid,
    get_op,
    make_call,
)
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.ops import tile as tile_ops
from pypto.ir.rewrite import scalar_call, substitute_body, substitute_expr
from pypto.ir.types import INDEX, TensorType, TileType, TupleType, Type
from pypto.ir.validflow import (
    CarriedValid,
    IfValid,
    carried_extent,
    definitions,
    extent_of,
    extents,
    var_base,
)


def result_valid(call: Call, valid: Mapping[Expr, TupleExpr]) -> TupleExpr | None:
    """The valid shape ``call``'s result has beyond its type, given those of the values in
    ``valid``: a tile's run-time valid shape, a tensor view's valid shape (constant or not)."""
    if not isinstance(call.type, (TileType, TensorType)):
        return None
    tensor = isinstance(call.type, TensorType)
    spec = get_op(call.op)
    access = spec.trait(GmAccess)
    if access is not None and not access.write and access.valid is not None and not spec.writes:
        region = call.args[access.valid]  # a load of a run-time region (a gather's is its copy's)
        return region if isinstance(region, TupleExpr) else None
    sets = spec.trait(SetsValid)
    if sets is not None:  # pl.set_validshape: a run-time one is the operand, a constant one the type
        if sets.operand >= len(call.args):
            return None  # an optional valid shape not given (a pop of the whole tile, a whole view)
        given = call.args[sets.operand]
        if isinstance(given, TupleExpr) and (tensor or any(not isinstance(e, Const) for e in given.elements)):
            return given
        return None
    product = spec.trait(Product)
    if product is not None:
        return _product_valid(call, product, valid)
    if spec.has(Reinterprets):
        return _reinterpreted_valid(call, valid)
    reduction = spec.trait(Reduction)
    if reduction is None and not spec.has(KeepsValid):
        return None
    source = next((a for a in call.args if isinstance(a.type, (TileType, TensorType))), None)
    if source is None or source not in valid:
        return None
    elements = valid[source].elements
    if reduction is not None and reduction.axis == 1:  # 2-D by the type rule
        return _shape(elements[0], Const(1, INDEX))
    if reduction is not None:
        return _shape(Const(1, INDEX), elements[1])
    return valid[source]


def _product_valid(call: Call, product: Product, valid: Mapping[Expr, TupleExpr]) -> TupleExpr | None:
    """``a @ b`` of operands with a run-time valid shape: the left one's valid rows by the right
    one's valid columns (a transposed operand's other axis)."""
    a, b = call.args[product.lhs], call.args[product.rhs]
    if a not in valid and b not in valid:
        return None
    rows = _extents_of(a, valid)[1 if call.attrs.get("a_trans") else 0]
    cols = _extents_of(b, valid)[0 if call.attrs.get("b_trans") else 1]
    return _shape(rows, cols)


def _reinterpreted_valid(call: Call, valid: Mapping[Expr, TupleExpr]) -> TupleExpr | None:
    """A run-time valid shape seen through ``pl.reinterpret_view``: the last extent counts the new
    elements over the valid bytes (rounded up: a partly valid element counts)."""
    source = call.args[0]
    if source not in valid:
        return None
    *lead, last = valid[source].elements
    src, dst = source.type.dtype, call.type.dtype  # type: ignore[attr-defined]
    if src.nbytes >= dst.nbytes:
        scaled = scalar_call(scalar_ops.mul, last, Const(src.nbytes // dst.nbytes, INDEX))
    else:
        ratio = dst.nbytes // src.nbytes
        scaled = scalar_call(
            scalar_ops.floordiv,
            scalar_call(scalar_ops.add, last, Const(ratio - 1, INDEX)),
            Const(ratio, INDEX),
        )
    return _shape(*lead, scaled)


def _extents_of(x: Expr, valid: Mapping[Expr, TupleExpr]) -> tuple[Expr, ...]:
    if x in valid:
        return valid[x].elements
    t = x.type
    assert isinstance(t, (TileType, TensorType))
    own = getattr(t, "valid_shape", None) or t.shape
    return tuple(n if isinstance(n, Expr) else Const(n, INDEX) for n in own)


def _shape(*elements: Expr) -> TupleExpr:
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))


def is_partial(t: object) -> bool:
    """A tile type whose constant valid shape leaves part of it out."""
    return isinstance(t, TileType) and t.valid_shape is not None and tuple(t.valid_shape) != t.shape


def build_as_parsed(body: tuple[Stmt, ...], fresh: Callable[[str], str]) -> tuple[Stmt, ...]:
    """``body`` with the ops that depend on valid shapes built as the parser builds them: every
    reduction of a partial tile (a constant valid shape in its type, or a run-time one it
    inherits) on ``tile.fillpad`` of it with the reduction's identity (``fresh`` names the padded
    tiles), every pipe push of a tile with a run-time valid shape carrying it, and every tile that
    leaves an if or is carried by a loop with the extents of its valid shape beside it
    (:mod:`pypto.ir.validflow`). Ops already so built stay as they are."""
    return _AsParsed(fresh).block(body)


class _AsParsed:
    def __init__(self, fresh: Callable[[str], str], valid: dict[Expr, TupleExpr] | None = None) -> None:
        self.fresh = fresh
        self.valid: dict[Expr, TupleExpr] = {} if valid is None else valid
        self.renamed: dict[Var, Expr] = {}  # results retyped here: later statements use the new vars

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for stmt in body:
            if self.renamed:
                stmt = substitute_body((stmt,), self.renamed)[0]
            if isinstance(stmt, If) and stmt.results:
                out.append(self.carried_if(stmt))
                continue
            if isinstance(stmt, LOOP_STMTS) and stmt.iter_args:
                out.append(self.carried_loop(stmt))
                continue
            bodies = nested_bodies(stmt)
            if bodies:
                out.append(with_bodies(stmt, tuple(self.block(b) for b in bodies)))
                continue
            if isinstance(stmt, Eval) and isinstance(stmt.value, Call):
                stmt = Eval(self.pushed(stmt.value), stmt.span)
            if isinstance(stmt, Assign) and isinstance(stmt.value, Call):
                value = self.padded(stmt.value, out)
                if value is not stmt.value:
                    stmt = replace(stmt, value=value)
                known = result_valid(value, self.valid)
                if known is not None:
                    self.valid[stmt.target] = known
            out.append(stmt)
        return tuple(out)

    def carried_if(self, stmt: If) -> If:
        """An if whose tile results keep their valid shapes: the extents the arms disagree on
        leave it too (as :class:`~pypto.ir.validflow.IfValid` finds them)."""
        arms = [self.block(stmt.then_body), self.block(stmt.else_body)]
        falling = [k for k in (0, 1) if stmt.arm_yields(k)]
        if not falling:
            return replace(stmt, then_body=arms[0], else_body=arms[1])
        leaving = {
            r.name: [(stmt.arm_yields(k) or stmt.arm_yields(falling[0]))[i] for k in (0, 1)]
            for i, r in enumerate(stmt.results)
        }
        flow = IfValid(leaving, arms, falling, self.valid, self.fresh)
        results = [self.retyped(r, flow.result_type(r.name, r.type)) for r in stmt.results]
        for name in list(flow.leaving)[len(results) :]:
            results.append(Var(self.fresh(var_base(name)), flow.leaving[name][falling[0]].type, stmt.span))
        yields = [tuple(ys[k] for ys in flow.leaving.values()) if k in falling else () for k in (0, 1)]
        flow.bind(dict(zip(flow.leaving, results, strict=True)), self.valid)
        then_body, else_body = (tuple(a) for a in flow.arms)
        return replace(
            stmt,
            then_body=then_body,
            else_body=else_body,
            then_yields=yields[0],
            else_yields=yields[1],
            results=tuple(results),
        )

    def carried_loop(self, loop: For | While) -> For | While:
        """A loop whose carried tiles keep their valid shapes: each extent an iteration changes
        is carried beside its tile (as :class:`~pypto.ir.validflow.CarriedValid` finds them,
        walking the body again while the plan grows)."""
        names = [v.name for v in loop.iter_args]
        plan = CarriedValid(names, list(loop.init_values), self.valid)
        if not plan.dims:
            return with_bodies(loop, (self.block(loop.body),))  # type: ignore[return-value]
        carriers: dict[str, Var] = {}  # the iter_args of the extents the plan adds, made once
        while True:
            table = dict(self.valid)
            iter_args = self.iter_args(loop, plan, carriers)
            plan.enter(dict(zip(plan.names, iter_args, strict=True)), table)
            inner = _AsParsed(self.fresh, table)
            inner.renamed = {
                old: new for old, new in zip(loop.iter_args, iter_args, strict=False) if old is not new
            }
            body = inner.block(loop.body)
            yields = [substitute_expr(y, inner.renamed) for y in loop.yields]
            ends = [yields, *(list(j.values) for j in _jumps(body))]
            ends = [[*end, *(self.extent(plan, name, end, table) for name in carriers)] for end in ends]
            if not plan.widened(iter_args, ends, table, definitions(walk_stmts(body))):
                break
        return self.finished(loop, plan, carriers, iter_args, body, yields, table, inner.renamed)

    def iter_args(self, loop: For | While, plan: CarriedValid, carriers: dict[str, Var]) -> list[Var]:
        """The loop's iter_args under ``plan``: a tile's typed as the plan carries it, then the
        carried extents."""
        out = []
        for var, init in zip(loop.iter_args, loop.init_values, strict=True):
            t = plan.iter_arg_type(var.name, init)
            out.append(var if _same_type(t, var.type) else Var(var.name, t, var.span))
        for name in plan.names[len(out) :]:
            if name not in carriers:
                carriers[name] = Var(
                    self.fresh(var_base(name)), plan.iter_arg_type(name, Const(0, INDEX)), loop.span
                )
            out.append(carriers[name])
        return out

    def extent(self, plan: CarriedValid, name: str, end: list[Expr], table: dict[Expr, TupleExpr]) -> Expr:
        """The carried extent ``name`` where the body ends with the carried values ``end``."""
        tile, dim = extent_of(name)
        found = extents(end[plan.names.index(tile)], table)
        assert found is not None
        return found[dim]

    def finished(
        self,
        loop: For | While,
        plan: CarriedValid,
        carriers: dict[str, Var],
        iter_args: list[Var],
        body: tuple[Stmt, ...],
        yields: list[Expr],
        table: dict[Expr, TupleExpr],
        renamed: dict[Var, Expr],
    ) -> For | While:
        """The loop carrying the extents ``plan`` added: given where the body ends and at every
        ``break`` / ``continue``, after the values the loop carried already."""

        def extra(values: list[Expr], out: list[Stmt]) -> list[Expr]:
            given = []
            for name in carriers:
                dtype = carriers[name].type.dtype  # type: ignore[attr-defined]
                tile, _ = extent_of(name)
                value = values[plan.names.index(tile)]
                given.append(carried_extent(name, value, dtype, table, out, self.fresh))
            return given

        tail: list[Stmt] = []
        yields = [*yields, *extra(yields, tail)]
        body = _with_jump_values((*body, *tail), extra)
        results = [self.retyped(r, iter_args[k].type) for k, r in enumerate(loop.results)]
        for name in carriers:
            results.append(Var(self.fresh(var_base(name)), carriers[name].type, loop.span))
        plan.leave(
            dict(zip(plan.names, results, strict=True)),
            dict(zip(plan.names, iter_args, strict=True)),
            {},
            self.valid,
        )
        changes: dict[str, Any] = {}
        if isinstance(loop, While):
            changes["cond"] = substitute_expr(loop.cond, renamed)
        inits = [*loop.init_values, *plan.inits[len(loop.init_values) :]]
        return replace(
            loop,
            body=body,
            iter_args=tuple(iter_args),
            init_values=tuple(inits),
            yields=tuple(yields),
            results=tuple(results),
            **changes,
        )

    def retyped(self, var: Var, t: Type) -> Var:
        """``var`` typed ``t`` (a tile result whose valid shape is known only at run time);
        later statements use the new var."""
        if _same_type(t, var.type):
            return var
        new = Var(var.name, t, var.span)
        self.renamed[var] = new
        return new

    def pushed(self, call: Call) -> Call:
        """A push of a tile whose run-time valid shape is known here, with it as its operand."""
        end = get_op(call.op).trait(PipeEnd)
        if end is None or end.action is not PipeAction.PUSH or len(call.args) != 1:
            return call
        valid = self.valid.get(call.args[0])
        return call if valid is None else make_call(call.op, (call.args[0], valid), call.attrs, call.span)

    def padded(self, call: Call, out: list[Stmt]) -> Call:
        reduction = get_op(call.op).trait(Reduction)
        x = call.args[0] if call.args else None
        if reduction is None or not isinstance(x, Var) or not isinstance(x.type, TileType):
            return call
        run_time = self.valid.get(x)
        if run_time is None and not is_partial(x.type):
            return call
        args = (x,) if run_time is None else (x, run_time)
        fill = make_call(tile_ops.fillpad, args, {"pad_value": reduction.identity}, call.span)
        padded = Var(self.fresh(f"{x.name}_padded"), fill.type, x.span)
        out.append(Assign(padded, fill, call.span))
        return make_call(call.op, (padded, *call.args[1:]), call.attrs, call.span)


def _same_type(a: Type, b: Type) -> bool:
    return a == b


def _jumps(body: tuple[Stmt, ...]) -> list[Break | Continue]:
    """The ``break`` / ``continue`` statements of the loop whose body is ``body`` (not of loops
    inside it)."""
    found: list[Break | Continue] = []
    for stmt in body:
        if isinstance(stmt, JUMP_STMTS):
            found.append(stmt)
        elif not isinstance(stmt, LOOP_STMTS):
            for inner in nested_bodies(stmt):
                found.extend(_jumps(inner))
    return found


def _with_jump_values(
    body: tuple[Stmt, ...], extra: Callable[[list[Expr], list[Stmt]], list[Expr]]
) -> tuple[Stmt, ...]:
    """``body`` with each ``break`` / ``continue`` of its loop giving the values ``extra`` adds
    (computed by statements it puts before the jump)."""
    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, JUMP_STMTS):
            stmt = replace(stmt, values=(*stmt.values, *extra(list(stmt.values), out)))
        elif not isinstance(stmt, LOOP_STMTS) and nested_bodies(stmt):
            stmt = with_bodies(stmt, tuple(_with_jump_values(b, extra) for b in nested_bodies(stmt)))
        out.append(stmt)
    return tuple(out)
