"""The calls of a loaded program, decoded once: what running a call needs that no run changes.

A kernel's walk meets the same :class:`~pypto.ir.Call` in every iteration of its loops, in every
block of an spmd launch and in every run of the program. A :class:`Step` holds, per call, what the
kernel interpreter (:mod:`pypto_sim_a2a3.engine.interpreter`) would otherwise look up each time: the op's
meaning on the chip (a launch op's coroutine, or the checked semantics), its cost on the target,
the operands it writes, whether a mirroring lane skips it, and how to read its operands straight
from the frame's variables. The steps of a :class:`~pypto.ir.launch.LoadedProgram` are kept with
it (:func:`steps_of`), so launches and runs reuse them.

Decoding never raises: a call that cannot run as decoded (an op no core runs, one without
semantics, a data path the target lacks) gets no semantics, and the interpreter reports it when
the call runs, at the same point of the run as a walk that decodes nothing.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    ArrayType,
    Call,
    Const,
    DataType,
    Expr,
    MemorySpace,
    PyptoError,
    ScalarType,
    Target,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    Type,
    Unit,
    Var,
    get_op,
)
from pypto.ir.launch import LoadedProgram
from pypto.ir.ops import system as system_ops
from pypto.ir.ops import tile
from pypto.ir.semantics import OpImpl
from pypto_sim_a2a3.engine.crosscore import LAUNCH_OPS, LaunchOp
from pypto_sim_a2a3.engine.semantics import SEMANTICS, UNWIDENED
from pypto_sim_a2a3.hw.cost import CostModel, OpCost

# An operand as the frame reads it: (VARIABLE, the Var), (CONSTANT, its value), (TUPLE, the
# operands of its elements) or (CALL, the Step of a nested scalar op, e.g. an offset ``i * 128``);
# in a step's ``flat`` form, (SLOT, n): the value of the n-th nested op the statement ran.
Operand = tuple[int, Any]
CONSTANT, VARIABLE, TUPLE, CALL, SLOT = 0, 1, 2, 3, 4

CORE_UNITS = (Unit.VECTOR, Unit.CUBE, Unit.MTE, Unit.SCALAR)
# Ops whose operand may be a tile its own tfree gave back (the freed check skips them).
FREE_OPS = (system_ops.tfree_to_aic, system_ops.tfree_to_aiv)
_LOAD, _STORE, _MOVE = tile.load, tile.store, tile.move


@dataclass(eq=False)
class Step:
    """One call, decoded: ``launch`` for a pipe, index or system op, else ``semantics`` (None when
    the call cannot run: the interpreter then raises the reason)."""

    call: Call
    launch: LaunchOp | None
    semantics: OpImpl | None
    work: bool  # a mirroring lane skips it (a load, a store, compute, anything making a tile)
    writes: tuple[int, ...]  # the operands it writes in place
    # Each operand's variable, constant, nested scalar op or tuple of those; None if one needs
    # the walker (a dynamic extent, a nested op making a tile).
    operands: tuple[Operand, ...] | None
    # It reads a tile variable (which must not be one a tfree gave back): only a popped tile is freed.
    checks_freed: bool
    nested: bool = False  # an operand is (or holds) a nested op, which may take the core's time
    cost: OpCost | None = None  # its cost on the target, set when it first runs
    # Of a step with nested ops: what its statement runs before the op itself, in the walk's
    # order: (None, a nested Call) to check that call's operands are not freed tiles (before its
    # own operands run), (nested Step, its flat operands) to run a nested op, whose value is the
    # next SLOT; and ``flat_operands``, the op's operands with each nested op as its SLOT.
    flat: tuple[tuple[Any, Any], ...] = ()
    flat_operands: tuple[Operand, ...] = ()


class Steps:
    """The decoded calls of one loaded program on one target, each decoded at its first run."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._steps: dict[int, Step] = {}  # id(call) -> its step (which keeps the call alive)

    def step(self, call: Call) -> Step:
        """``call``'s step, decoded now if this is its first run."""
        found = self._steps.get(id(call))
        if found is None:
            found = self._steps[id(call)] = self._decode(call)
        return found

    def cost(self, step: Step, model: CostModel) -> OpCost:
        """``step``'s cost on the target (the model's, the first time)."""
        if step.cost is None:
            step.cost = model.op_cost(step.call)
        return step.cost

    def _decode(self, call: Call) -> Step:
        try:
            spec = get_op(call.op)
        except PyptoError:  # an op the table does not know: the walker reports it where it runs
            return Step(call, None, None, False, (), None, True)
        launch = LAUNCH_OPS.get(call.op)
        runnable = (
            launch is None
            and spec.unit in CORE_UNITS
            and not call.op.startswith("tensor.")
            and call.op in SEMANTICS
            and self._legal_route(call)
        )
        operands = self._operands(call.args)
        step = Step(
            call,
            launch,
            _semantics(call) if runnable else None,
            spec.unit in (Unit.VECTOR, Unit.CUBE, Unit.MTE)
            or (isinstance(call.type, TileType) and not spec.in_pipe_slot),
            spec.writes,
            operands,
            call.op not in FREE_OPS
            and any(isinstance(a, Var) and isinstance(a.type, TileType) for a in call.args),
            operands is not None and _has_call(operands),
        )
        if step.nested:
            assert operands is not None
            order: list[tuple[Any, Any]] = []
            step.flat_operands = _flatten(operands, order)
            step.flat = tuple(order)
        return step

    def _operands(self, args: tuple[Expr, ...]) -> tuple[Operand, ...] | None:
        operands: list[Operand] = []
        for arg in args:
            if isinstance(arg, Var):
                operands.append((VARIABLE, arg))
            elif isinstance(arg, Const):
                operands.append((CONSTANT, arg.value))
            elif isinstance(arg, TupleExpr):
                elements = self._operands(arg.elements)
                if elements is None:
                    return None
                operands.append((TUPLE, elements))
            elif isinstance(arg, Call) and not isinstance(arg.type, TileType):
                nested = self.step(arg)
                if nested.operands is None:
                    return None
                operands.append((CALL, nested))
            else:
                return None
        return tuple(operands)

    def _legal_route(self, call: Call) -> bool:
        route = data_route(call)
        return route is None or self.target.is_legal_path(*route)


def _semantics(call: Call) -> OpImpl:
    """The call's checked semantics; without the widening of unsigned 16- and 32-bit tensors
    when no operand is one (a tile or tensor holds its type's dtype, a scalar is a number)."""
    if call.op in UNWIDENED and not any(_widened(arg.type) for arg in call.args):
        return UNWIDENED[call.op]
    return SEMANTICS[call.op]


def _widened(t: Type) -> bool:
    """Whether an operand of type ``t`` may be a tensor the semantics widen (or is of unknown kind)."""
    if isinstance(t, (TileType, TensorType)):
        return t.dtype in (DataType.UINT16, DataType.UINT32)
    return not isinstance(t, (ScalarType, TupleType, ArrayType))  # (numbers, tuples of them)


def _flatten(operands: tuple[Operand, ...], order: list[tuple[Any, Any]]) -> tuple[Operand, ...]:
    """``operands`` with each nested op as a SLOT, the nested ops appended to ``order`` as they
    run: an op's own nested operands first, left to right (its freed check before them)."""
    flat: list[Operand] = []
    for kind, item in operands:
        if kind == CALL:
            if item.checks_freed:
                order.append((None, item.call))
            inner = _flatten(item.operands, order)
            flat.append((SLOT, sum(1 for nested, _ in order if nested is not None)))
            order.append((item, inner))
        elif kind == TUPLE:
            flat.append((TUPLE, _flatten(item, order)))
        else:
            flat.append((kind, item))
    return tuple(flat)


def _has_call(operands: tuple[Operand, ...]) -> bool:
    return any(kind == CALL or (kind == TUPLE and _has_call(item)) for kind, item in operands)


def data_route(call: Call) -> tuple[MemorySpace, MemorySpace] | None:
    """The (source, destination) spaces of a data-movement op, or None for other ops."""
    if call.op == _LOAD and isinstance(call.type, TileType) and call.type.memory_space:
        return MemorySpace.DDR, call.type.memory_space
    source = call.args[0].type if call.args else None
    if not isinstance(source, TileType) or source.memory_space is None:
        return None
    if call.op == _STORE:
        return source.memory_space, MemorySpace.DDR
    if call.op == _MOVE:
        return source.memory_space, call.attrs["target_memory"]
    return None


# Per loaded program, its steps per target (by identity: a target holds dicts, it has no hash).
_STEPS: weakref.WeakKeyDictionary[LoadedProgram, dict[int, Steps]] = weakref.WeakKeyDictionary()


def steps_of(loaded: LoadedProgram, target: Target) -> Steps:
    """The decoded calls of ``loaded`` on ``target``: made at its first run, kept while it lives."""
    per_target = _STEPS.setdefault(loaded, {})
    found = per_target.get(id(target))
    if found is None or found.target is not target:
        found = per_target[id(target)] = Steps(target)
    return found
