"""The simulator's kernel debugger on hand-lowered kernels: debug.print's prefixes and values, its
zero cost, the per-core stop rules, source names, and break_at checks."""

from __future__ import annotations

import io
import re

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, rand, single, tensor_t

from pypto.ir import Direction, FunctionKind
from pypto_sim_a2a3 import A2A3SimBackend
from pypto_sim_a2a3.engine.debugger import BreakpointError, DebuggerQuit, parse_break_at, source_name


def _kernel(printing: bool, breaking: bool = False):
    b = FunctionBuilder("dbg", FunctionKind.AIV)
    a_gm = b.param("a", tensor_t((16, 32)))
    out = b.param("out", tensor_t((16, 32)), Direction.Out)
    x = b.op("x", "tile.load", a_gm, [0, 0], shape=(16, 32), target_memory=Mem.Vec)
    y = b.op("y_2", "tile.exp", x)
    if printing:
        b.do("debug.print", y, 7, parts=("y", 0, "seven", 1))
    if breaking:
        b.do("debug.breakpoint")
    b.do("tile.store", y, [0, 0], out)
    return single(b.build())


def _run(prog, options=None):
    a, out = rand(16, 32), torch.zeros(16, 32)
    report = A2A3SimBackend().run(prog, [a, out], options or {})
    assert torch.allclose(out, torch.exp(a))
    return report, a


def test_print_shows_prefix_labels_and_the_tile_and_costs_nothing(capsys):
    from torch._tensor_str import get_printoptions

    plain, _ = _run(_kernel(False))
    torch.set_printoptions(precision=2)
    try:
        printing, a = _run(_kernel(True))
        assert get_printoptions()["precision"] == 2  # the user's print options are left as they were
    finally:
        torch.set_printoptions(profile="default")
    text = capsys.readouterr().out
    line = text.splitlines()[0]
    assert re.match(
        r"\[cg0\.AIV0 lane=0 block=0 cycle=\d+\] y Tile\[16, 32\] FP32 Vec valid=\[16, 32\]", line
    )
    assert text.rstrip().endswith("seven 7")
    first = float(re.search(r"\[\[\s*(-?\d+\.\d+)", text).group(1))
    assert first == pytest.approx(torch.exp(a)[0, 0].item(), rel=1e-3)
    assert printing.total_cycles == plain.total_cycles
    assert printing.busy_cycles == plain.busy_cycles


def test_a_breakpoint_reads_commands_and_quits_cleanly(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("p y\np x + 1\nw\nlocals\np nope\nq\n"))
    with pytest.raises(DebuggerQuit):
        _run(_kernel(False, breaking=True))
    text = capsys.readouterr().out
    assert "stopped (breakpoint) in dbg" in text
    assert "y = Tile[16, 32] FP32 Vec" in text  # y_2 by its source name
    assert "core cg0.AIV0  lane 0  block 0 of 1" in text
    assert "*** no variable 'nope'" in text


def test_break_at_stops_at_the_first_op_of_the_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("c\n"))
    _run(_kernel(False), {"break_at": "dbg.py:4"})
    text = capsys.readouterr().out
    assert text.count("stopped (break_at dbg.py:4)") == 1 and "pl.exp" in text


def test_break_at_a_line_without_ops_or_a_bad_form_is_an_error():
    with pytest.raises(BreakpointError, match="no op of the program is on that line"):
        _run(_kernel(False), {"break_at": "dbg.py:99"})
    with pytest.raises(BreakpointError, match=r"FILE\.py:LINE"):
        _run(_kernel(False), {"break_at": "dbg.py"})


def test_break_at_forms():
    assert str(parse_break_at("k.py:3@aiv1")) == "k.py:3@aiv1"
    assert parse_break_at("k.py:3").core is None
    assert parse_break_at("k.py:3@cg2.AIV1").matches_core("cg2.AIV1")
    assert not parse_break_at("k.py:3@aiv1").matches_core("cg0.AIV0")
    for bad in ("k.py", "k.py:0", "k.py:3@gpu"):
        with pytest.raises(ValueError):
            parse_break_at(bad)


def test_source_names_drop_the_compilers_suffixes():
    from pypto.ir import Var

    for name, shown in (("acc_2", "acc"), ("acc_vec", "acc"), ("acc_1_home_vec_1", "acc"), ("x", "x")):
        assert source_name(Var(name, tensor_t((1, 1)))) == shown
