"""Each call of a loaded program is decoded once (:mod:`pypto_sim_a2a3.engine.decode`); what cannot run is
still reported when it runs, at the user's line."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, rand, single, tensor_t, tile_t, vector_binary_kernel

from pypto.ir import Direction, FunctionKind, Var, VerificationError
from pypto_sim_a2a3 import A2A3SimBackend
from pypto_sim_a2a3.engine import semantics as sim_semantics
from pypto_sim_a2a3.engine.decode import Steps, steps_of
from pypto_sim_a2a3.target import A2A3_TARGET


def _calls_decoded(monkeypatch) -> list[str]:
    decoded: list[str] = []
    original = Steps._decode

    def counting(self, call):
        decoded.append(call.op)
        return original(self, call)

    monkeypatch.setattr(Steps, "_decode", counting)
    return decoded


def test_a_program_is_decoded_at_its_first_run_and_later_runs_reuse_its_steps(monkeypatch):
    decoded = _calls_decoded(monkeypatch)
    prog = single(vector_binary_kernel("tile.add"))
    backend = A2A3SimBackend()
    a, b = rand(64, 128), rand(64, 128, seed=1)
    first = torch.zeros(64, 128)
    backend.run(prog, [a, b, first], {})
    assert decoded == ["tile.load", "tile.load", "tile.add", "tile.store"]

    second = torch.zeros(64, 128)
    report = backend.run(prog, [a, b, second], {})
    assert decoded == ["tile.load", "tile.load", "tile.add", "tile.store"]  # nothing new
    assert torch.equal(first, a + b) and torch.equal(second, a + b)
    assert report.total_cycles > 0


def test_a_loop_body_is_decoded_once_not_per_iteration(monkeypatch):
    decoded = _calls_decoded(monkeypatch)
    k = FunctionBuilder("rows", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((128, 64)))
    out = k.param("out", tensor_t((128, 64)), Direction.Out)
    with k.loop("i", 0, 4) as i:
        row = k.scalar("scalar.mul", i, 32)
        x = k.op("x_t", "tile.load", x_gm, [row, 0], shape=(32, 64), target_memory=Mem.Vec)
        y = k.op("y_t", "tile.exp", x)
        k.do("tile.store", y, [row, 0], out)
    x, result = rand(128, 64), torch.zeros(128, 64)
    A2A3SimBackend().run(single(k.build()), [x, result], {})
    assert sorted(decoded) == ["scalar.mul", "tile.exp", "tile.load", "tile.store"]
    assert torch.allclose(result, torch.exp(x))


def test_steps_are_kept_per_loaded_program_and_target():
    from pypto.ir.launch import LoadedProgram

    loaded = LoadedProgram(single(vector_binary_kernel("tile.add")))
    assert steps_of(loaded, A2A3_TARGET) is steps_of(loaded, A2A3_TARGET)
    assert steps_of(LoadedProgram(loaded.program), A2A3_TARGET) is not steps_of(loaded, A2A3_TARGET)


def _exp_kernel(name: str):
    """``out = exp(x)`` over one [16, 16] tile: its statements are load, exp, store."""
    k = FunctionBuilder(name, FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((16, 16)))
    out = k.param("out", tensor_t((16, 16)), Direction.Out)
    x = k.op("x_t", "tile.load", x_gm, [0, 0], shape=(16, 16), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y_t", "tile.exp", x), [0, 0], out)
    return k.build()


def test_an_op_the_simulator_has_no_semantics_for_is_reported_at_its_line(monkeypatch):
    monkeypatch.delitem(sim_semantics.SEMANTICS, "tile.exp")
    kernel = _exp_kernel("no_exp")
    with pytest.raises(VerificationError, match=r"a2a3sim has no semantics for op 'tile\.exp'") as info:
        A2A3SimBackend().run(single(kernel), [rand(16, 16), torch.zeros(16, 16)], {})
    assert info.value.span == kernel.body[1].span


def test_an_operand_used_before_it_is_defined_is_reported_at_the_operand():
    k = FunctionBuilder("undefined", FunctionKind.AIV)
    out = k.param("out", tensor_t((16, 16)), Direction.Out)
    ghost = Var("ghost", tile_t((16, 16)), k.span())  # never assigned
    y = k.op("y_t", "tile.exp", ghost)  # operands all variables: read straight from the frame
    k.do("tile.store", y, [0, 0], out)
    with pytest.raises(VerificationError, match="ghost is used before it is defined") as info:
        A2A3SimBackend().run(single(k.build()), [torch.zeros(16, 16)], {})
    assert info.value.span == ghost.span


def test_an_op_the_table_does_not_know_is_reported_when_it_runs_not_when_decoded():
    kernel = _exp_kernel("odd")
    body = list(kernel.body)
    body[1] = replace(body[1], value=replace(body[1].value, op="tile.nosuch"))  # a hand-built kernel
    steps = Steps(A2A3_TARGET)
    assert steps.step(body[1].value).semantics is None  # decoding does not raise
    with pytest.raises(VerificationError, match=r"unknown op 'tile\.nosuch'"):
        A2A3SimBackend().run(
            single(replace(kernel, body=tuple(body))), [rand(16, 16), torch.zeros(16, 16)], {}
        )
