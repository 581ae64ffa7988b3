"""Kernel debugging: ``pl.debug.print`` and ``pl.debug.breakpoint``.

Both ops only *observe* (trait :class:`~pypto.ir.ops.spec.Observes`): they change no value and
take no modeled time, and a backend that cannot show them may drop them. ``debug.print`` takes
any number of tile, tensor or scalar operands; its ``parts`` attribute interleaves them with the
string labels of the call as written: ``pl.debug.print("acc", acc, i)`` is the call
``debug.print(acc, i, parts=("acc", 0, 1))`` (a string is a label, an int the operand shown
there). ``debug.breakpoint`` stops a debugging run where a core reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.rules import fail
from pypto.ir.ops.spec import Attr, FormatFree, Level, Observes, OpSpec, TaskIds, Unit, declare
from pypto.ir.types import UNIT, ArrayType, ScalarType, TensorType, TileType, Type, describe

_SHOWN = (TileType, TensorType, ScalarType, ArrayType)


def print_rule(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """Every operand is a value that can be shown; ``parts`` names each operand once, in order."""
    for arg in args:
        if not isinstance(arg.type, _SHOWN):
            raise fail(
                spec.name,
                f"prints tiles, tensors and scalars, got {describe(arg.type)}",
                span,
                'pass the values to show, and labels as string literals: pl.debug.print("acc", acc)',
            )
    parts = attrs.get("parts", tuple(range(len(args))))
    shown = [p for p in parts if not isinstance(p, str)]
    if shown != list(range(len(args))) or any(isinstance(p, bool) for p in shown):
        raise fail(
            spec.name,
            f"parts={tuple(parts)!r} does not list its {len(args)} operand(s) in order",
            span,
            "parts interleaves labels (strings) with the operands' positions 0, 1, ... in order; "
            'write the call as pl.debug.print("label", value, ...)',
        )
    return UNIT


def breakpoint_rule(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    return UNIT


def print_parts(call_args: Sequence[Any], attrs: Mapping[str, Any]) -> list[tuple[str | None, Any]]:
    """The pieces of a print in the order written: ``(label, None)`` for a label, ``(None, value)``
    for an operand (``call_args`` are the operands or their run-time values)."""
    parts = attrs.get("parts", tuple(range(len(call_args))))
    return [(p, None) if isinstance(p, str) else (None, call_args[p]) for p in parts]


def _declare() -> None:
    # Observes: no data effect, no modeled time, never dropped as dead; TaskIds: a task id may be
    # shown; FormatFree: a storage-format tile may be shown too.
    traits = (Observes(), TaskIds(), FormatFree())
    declare(
        OpSpec(
            "debug.print",
            Level.SYSTEM,
            Unit.SCALAR,
            print_rule,
            attrs=(Attr("parts", tuple),),
            traits=traits,
            dsl="debug.print",
            signature="pl.debug.print(*values)",
            doc="print labels and values on every core that runs it, prefixed by core, lane, block "
            "and modeled cycle (no modeled time)",
            open=True,
        )
    )
    declare(
        OpSpec(
            "debug.breakpoint",
            Level.SYSTEM,
            Unit.SCALAR,
            breakpoint_rule,
            traits=traits,
            dsl="debug.breakpoint",
            signature="pl.debug.breakpoint()",
            doc="stop a debugging run where a core reaches this line and open the kernel debugger",
        )
    )


_declare()
