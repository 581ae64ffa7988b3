"""``OpContext``: what an op builder needs to turn one DSL call into an IR ``Call``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    ArrayType,
    Call,
    DataType,
    Eval,
    Expr,
    HandleType,
    ParseError,
    SourceSpan,
    TensorType,
    TileType,
    TupleExpr,
    TypeCheckError,
    Unit,
    Var,
    get_op,
    make_call,
)
from pypto.ir.ops import OPS, Communicates, Effect, GmAccess, Level, OnHost, OpSpec, Role, SetsValid, array
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.valid import result_valid
from pypto.language.dslops import dsl_function
from pypto.language.parser.body import BodyBuilder
from pypto.language.parser.fills import demand, settle
from pypto.language.parser.values import describe_value, is_shaped


def _of_both_levels(op: str) -> bool:
    """Whether ``op`` (``tile.add``) has a form at the other level too (``tensor.add``)."""
    level, _, name = op.partition(".")
    other = {"tile": "tensor", "tensor": "tile"}.get(level)
    return other is not None and f"{other}.{name}" in OPS


SCOPE_HINT = "put it inside `with pl.at(level=pl.Level.CORE_GROUP):`, or in a @pl.jit.incore function"


@dataclass
class OpContext:
    """One DSL op call being built: where it is, what the user called it, which level it pins."""

    body: BodyBuilder
    span: SourceSpan | None
    name: str  # as the user wrote it, for messages: "pl.add", "pl.tile.load", "a + b (pl.add)"
    level: str | None = None  # "tile" / "tensor" for the pl.tile.* / pl.tensor.* spellings
    builtin: str | None = None  # the DSL function being built ("load"), once build_op knows it

    def fail(self, message: str, hint: str) -> ParseError:
        return ParseError(f"{self.name}: {message}", self.span, hint)

    def signature(self) -> str | None:
        """``pl.load(tensor, offsets, shape, ...)``: the DSL signature of the op being built."""
        function = dsl_function(self.builtin) if self.builtin is not None else None
        return function.text if function is not None else None

    def operand_hint(self, what: str, kind: str) -> str:
        """What an operand must be, after the op's signature when it is known."""
        need = f"{what if what.startswith('the ') else 'the ' + what} is {kind}"
        signature = self.signature()
        return f"{signature}: {need}" if signature else need

    def shaped(self, value: Any, what: str = "operand", hint: str | None = None) -> Expr:
        """``value`` as a tensor or tile operand (error otherwise; ``hint`` replaces the default one)."""
        if not is_shaped(value):
            raise self.fail(
                f"{what} must be a tensor or a tile, got {describe_value(value)}",
                hint or self.operand_hint(what, "a tensor (a kernel parameter) or a tile (a pl.load result)"),
            )
        return value

    @property
    def pinned(self) -> Level | None:
        """The level a ``pl.tile.*`` / ``pl.tensor.*`` spelling pins, if any."""
        return Level(self.level) if self.level in ("tile", "tensor") else None

    def settle(self, *values: Any) -> None:
        """The shaped ``values`` one op takes share a level: a ``pl.full`` value beside values of
        the other level takes theirs (:mod:`~pypto.language.parser.fills`)."""
        settle(self.body.fills, values, self.span, self.pinned)

    def demand(self, value: Any, level: Level) -> None:
        """``value`` must be of ``level``: a ``pl.full`` value of the other level takes it."""
        demand(self.body.fills, value, level, self.span)

    def level_of(self, value: Expr) -> str:
        """``"tensor"`` or ``"tile"``: the op family that matches the operand."""
        if self.pinned is not None:
            self.demand(value, self.pinned)
        level = "tile" if isinstance(value.type, TileType) else "tensor"
        if self.level is not None and level != self.level:
            raise self.fail(
                f"takes {self.level}s, got {describe_value(value)}",
                f"use pl.{self.name.rsplit('.', 1)[-1]}(...), which dispatches on the operand kind",
            )
        return level

    def tensor(self, value: Any, what: str) -> Expr:
        self.demand(value, Level.TENSOR)
        if not (isinstance(value, Expr) and isinstance(value.type, TensorType)):
            raise self.fail(
                f"{what} must be a tensor, got {describe_value(value)}",
                self.operand_hint(
                    what, "a global-memory tensor (a kernel parameter or a pl.create_tensor result)"
                ),
            )
        return value

    def tile(self, value: Any, what: str) -> Expr:
        self.demand(value, Level.TILE)
        if not (isinstance(value, Expr) and isinstance(value.type, TileType)):
            raise self.fail(
                f"{what} must be a tile, got {describe_value(value)}",
                self.operand_hint(what, "an on-chip tile (e.g. a pl.load result)"),
            )
        return value

    def array(self, value: Any, what: str) -> Expr:
        if not (isinstance(value, Expr) and isinstance(value.type, ArrayType)):
            raise self.fail(
                f"{what} must be a scalar array, got {describe_value(value)}",
                self.operand_hint(what, "a scalar array (a pl.array.create result)"),
            )
        return value

    def handle(self, value: Any, what: str) -> Expr:
        """``value`` as a handle operand; the op's type rule checks which handle it must be."""
        if not (isinstance(value, Expr) and isinstance(value.type, HandleType)):
            raise self.fail(
                f"{what} must be a handle, got {describe_value(value)}",
                self.operand_hint(what, "the handle a pl.prefetch call gave (a context, event or session)"),
            )
        return value

    def call(self, op: str, args: Sequence[Any], attrs: Mapping[str, Any] | None = None) -> Call | Var:
        """Build ``op(args)``; the op table's type rule checks the operands at this span.

        Inside a scope with ``pl.split_aiv`` regions, the region rules check the op too. A type
        error that carries no hint of its own gets the op's DSL signature as its hint.
        """
        if (
            get_op(op).unit is Unit.HOST
            and self.body.in_scope
            and not self.body.kernel
            and not self.body.host
        ):
            # pl.create_tensor in a pl.at scope: the orchestration allocates it before the scope
            return self.body.hoisted(op.rsplit(".", 1)[-1], make_call(op, args, attrs, self.span), self.span)
        spec = get_op(op)
        self._demand_levels(spec, args)
        self._check_placement(op, args, attrs or {})
        if spec.level is Level.TENSOR and self.body.host_views and not spec.has(SetsValid):
            # An entry tensor read here has its valid shape in the scope; a written one is itself.
            read = [o.effect is Effect.READ for o in spec.operands]
            args = [self.body.localize(a) if k < len(read) and read[k] else a for k, a in enumerate(args)]
        operands = [self.body.atom(a) for a in args]
        if self.body.regions is not None:
            self.body.regions.check_crossings(op, operands, self.name, self.span)
        try:
            call = make_call(op, operands, attrs, self.span)
        except TypeCheckError as err:
            if err.hint is None and self.signature() is not None:
                err.hint = f"signature: {self.signature()}"
            raise
        if self.body.regions is not None:
            self.body.regions.check(call, self.name, self.span)
        valid = result_valid(call, self.body.valid)
        if valid is not None:
            self.body.valid[call] = valid
        self._follow_fills(call, operands)
        return call

    def _demand_levels(self, spec: OpSpec, args: Sequence[Any]) -> None:
        """A ``pl.full`` value where the op takes only tiles (or only tensors) takes that level; one
        where the op reads or writes global memory is an error (a fill is in no memory)."""
        access = spec.trait(GmAccess)
        for k, (operand, arg) in enumerate(zip(spec.operands, args, strict=False)):
            if access is not None and k == access.tensor and is_shaped(arg) and arg in self.body.fills:
                raise self.fail(
                    "its tensor operand comes from pl.full, which is in no global memory to "
                    + ("write into" if access.write else "read from"),
                    "use the fill itself as the operand (it is a tile where tile ops meet it), or "
                    "write it into a tensor first: out[...] = pl.full(...)",
                )
            if operand.role is Role.TILE:
                self.demand(arg, Level.TILE)
            elif operand.role is Role.TENSOR:
                self.demand(arg, Level.TENSOR)

    def _follow_fills(self, call: Call, operands: Sequence[Any]) -> None:
        """A value computed from ``pl.full`` values and scalars only, by an op of both levels,
        has its level from them too (a one-level op's result has that op's level)."""
        shaped = [a for a in operands if is_shaped(a)]
        fills = self.body.fills
        if shaped and is_shaped(call) and all(a in fills for a in shaped) and _of_both_levels(call.op):
            fills[call] = frozenset().union(*(fills[a] for a in shaped))

    def valid_of(self, tile: Expr) -> TupleExpr | None:
        """The run-time valid shape ``tile`` carries, if any."""
        return self.body.valid.get(tile)

    def effect(self, op: str, args: Sequence[Any], attrs: Mapping[str, Any] | None, result: Any) -> Any:
        """Emit ``op(args)`` as a statement (a write); the expression's value is ``result``."""
        self.body.emit(Eval(self.call(op, args, attrs), self.span))
        return result

    def _check_placement(self, op: str, args: Sequence[Any], attrs: Mapping[str, Any]) -> None:
        """Host ops (allocations) run in the @pl.jit body, the others on a core group; scalar
        arithmetic anywhere; arrays of task ids (``pl.TASK_ID``) in the orchestration only."""
        spec = get_op(op)
        task_ids = attrs.get("dtype") is DataType.TASK_ID or any(
            isinstance(a, Expr) and isinstance(a.type, ArrayType) and a.type.dtype is DataType.TASK_ID
            for a in args
        )
        if task_ids and (op == array.create or any(o.role is Role.ARRAY for o in spec.operands)):
            if self.body.on_device:
                raise self.fail(
                    "an array of task ids (pl.TASK_ID) belongs to the orchestration, which submits the tasks",
                    "create it in the @pl.jit (or Orchestration) body, outside pl.at scopes, and fill it "
                    "there: tids[i] = tid",
                )
            return
        if self.body.plane_free or spec.has(Communicates):  # a pld builder checked where it stands
            return
        if self.body.host and op == tensor_ops.reshape and not self.body.on_device:
            return  # x[r]: the per-rank piece of a host tensor, a view
        if spec.unit is Unit.HOST:
            if self.body.on_device:
                raise self.fail(
                    "allocates a global-memory tensor, which the @pl.jit body does outside pl.at scopes",
                    "create the tensor before the `with pl.at(...)` block and pass it in",
                )
        elif self.body.on_device or spec.has(OnHost):  # a view of a tensor: the orchestration's too
            return
        elif spec.level in (Level.TILE, Level.TENSOR):
            raise self._outside_scope("tensor and tile operations")
        elif spec.level is Level.SYSTEM:
            raise self._outside_scope("cross-core, lane and system operations")
        elif op == array.create or any(o.role is Role.ARRAY for o in spec.operands):
            raise self._outside_scope("scalar arrays (held in a core's scalar memory)")

    def _outside_scope(self, what: str) -> ParseError:
        return ParseError(
            f"{self.name} outside a pl.at scope: {what} run on a core group, "
            "not directly in the @pl.jit body",
            self.span,
            SCOPE_HINT,
        )
