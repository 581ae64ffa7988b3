"""The kernel debugger's ops and break locations, at the IR level: declared once, printed as written,
checked operands, and break_at parsed and checked against a program's op lines."""

from __future__ import annotations

import pytest

from pypto.ir import DataType, Function, FunctionKind, Program, SourceSpan, TileType, TypeCheckError, Var
from pypto.ir.breakpoints import BreakpointError, missing_break_line, parse_break_at
from pypto.ir.nodes import Eval, Param
from pypto.ir.ops import Observes, debug, get_op, make_call
from pypto.ir.printer import format_expr
from pypto.ir.types import TASK_ID, MemorySpace, ScalarType

TILE = TileType((16, 32), DataType.FP32, MemorySpace.Vec)


def test_the_debug_ops_only_observe():
    assert get_op(debug.print).has(Observes) and get_op(debug.breakpoint).has(Observes)


def test_a_print_prints_its_labels_between_its_operands():
    acc = Var("acc", TILE)
    i = Var("i", ScalarType(DataType.INDEX))
    call = make_call(debug.print, (acc, i), {"parts": ("acc", 0, "at", 1)})
    assert format_expr(call) == "pl.debug.print('acc', acc, 'at', i)"
    assert format_expr(make_call(debug.breakpoint, ())) == "pl.debug.breakpoint()"


def test_a_print_whose_parts_skip_an_operand_is_a_type_error():
    with pytest.raises(TypeCheckError, match="does not list its 1 operand"):
        make_call(debug.print, (Var("acc", TILE),), {"parts": ("acc",)})


def test_a_task_id_may_be_shown():
    make_call(debug.print, (Var("tid", TASK_ID),), {"parts": (0,)})


def _program(line: int) -> Program:
    span = SourceSpan("kernel.py", line)
    kernel = Function(
        "k",
        (Param(Var("x", TILE)),),
        (Eval(make_call(debug.breakpoint, (), {}, span), span),),
        FunctionKind.AIV,
    )
    host = Function("main", (), (), FunctionKind.Orchestration)
    return Program("main", (host, kernel), "main")


def test_break_at_forms_and_lines():
    where = parse_break_at("kernel.py:7@aiv1")
    assert (where.file, where.line, where.core) == ("kernel.py", 7, "aiv1")
    assert where.matches_core("cg3.AIV1") and not where.matches_core("cg3.AIV0")
    assert missing_break_line(_program(7), where) is None
    error = missing_break_line(_program(7), parse_break_at("kernel.py:8"))
    assert isinstance(error, BreakpointError) and "lines of kernel.py with ops: 7" in (error.hint or "")
    for bad in ("kernel.py", "kernel.py:0", "kernel.py:3@gpu", "k.txt:3"):
        with pytest.raises(BreakpointError, match=r"FILE\.py:LINE"):
            parse_break_at(bad)
