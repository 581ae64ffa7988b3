"""The kernel walk runs a plain op (no launch part, no debugger, no subclass hooking ``run_step``)
without frames of its own, and a statement's nested scalar ops in a flat order decoded once
(:mod:`pypto_sim_a2a3.engine.decode`): the same cycles, slices, numbers and errors as the walk
that takes every op through :meth:`KernelFrame.run_step`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, rand, run, single, tensor_t
from sim_mixed import C2V, FP32, MatmulBias, _lane_offsets

from pypto.ir import DataType, Direction, Function, FunctionKind, PyptoError, SplitMode
from pypto.ir.ops import split_shape
from pypto_sim_a2a3 import PipeError
from pypto_sim_a2a3.engine import runner
from pypto_sim_a2a3.engine.decode import SLOT, Steps
from pypto_sim_a2a3.engine.interpreter import KernelFrame
from pypto_sim_a2a3.engine.semantics import SEMANTICS, UNWIDENED
from pypto_sim_a2a3.target import A2A3_TARGET


class HookedFrame(KernelFrame):
    """A frame whose subclass hooks each op's run: every op goes through run_step."""

    def run_step(self, step, args):
        return (yield from super().run_step(step, args))


def _walk(monkeypatch, prog, args, *, hooked: bool):
    """The report (or error) and the arguments after the run, on plain or hooked frames."""
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "off")  # every block walked on the reference runner
    monkeypatch.setattr(runner, "KernelFrame", HookedFrame if hooked else KernelFrame)
    copies = [a.clone() for a in args]
    try:
        return run(prog, *copies), copies
    except PyptoError as error:
        return error, copies


def _same_walks(monkeypatch, prog, args):
    plain, plain_args = _walk(monkeypatch, prog, args, hooked=False)
    hooked, hooked_args = _walk(monkeypatch, prog, args, hooked=True)
    if isinstance(plain, PyptoError):
        assert isinstance(hooked, PyptoError)
        assert (type(plain), plain.message, plain.span, plain.hint) == (
            type(hooked),
            hooked.message,
            hooked.span,
            hooked.hint,
        )
        return plain, plain_args
    for field in ("total_cycles", "busy_cycles", "stall_cycles", "timeline", "rings", "transfers"):
        assert getattr(plain, field) == getattr(hooked, field), field
    for mine, theirs in zip(plain_args, hooked_args, strict=True):
        assert torch.equal(mine, theirs)
    return plain, plain_args


@pytest.mark.parametrize("mode", [SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT, SplitMode.NONE])
def test_a_mixed_kernel_walks_the_same_on_plain_and_hooked_frames(monkeypatch, mode):
    """Nested scalar offsets (``(i % blocks) * rows + lane * share``), tuples of them, pipe ops,
    and under NONE a lane mirroring the other."""
    case = MatmulBias(mode=mode, blocks=3)
    a, b, bias, out = case.args()
    report, (_, _, _, result) = _same_walks(monkeypatch, case.program(), (a, b, bias, out))
    assert report.total_cycles > 0
    assert torch.allclose(result, MatmulBias.expected(a, b, bias), rtol=1e-3, atol=1e-3)


def _nested_kernel() -> Function:
    """Offsets two ops deep in a loop: ``[(i * 16 + 0) % 64, min(i, 0) * 8]``."""
    k = FunctionBuilder("nested", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((64, 64)))
    out = k.param("out", tensor_t((64, 64)), Direction.Out)
    with k.loop("i", 0, 4) as i:
        row = k.scalar("scalar.mod", k.scalar("scalar.add", k.scalar("scalar.mul", i, 16), 0), 64)
        col = k.scalar("scalar.mul", k.scalar("scalar.min", i, 0), 8)
        x = k.op("x_t", "tile.load", x_gm, [row, col], shape=(16, 64), target_memory=Mem.Vec)
        k.do("tile.store", k.op("y_t", "tile.exp", x), [row, col], out)
    return k.build()


def test_nested_scalar_ops_run_inner_first_left_to_right_as_slots():
    kernel = _nested_kernel()
    loop = kernel.body[0]
    load = loop.body[0].value  # type: ignore[attr-defined]
    step = Steps(A2A3_TARGET).step(load)
    ran = [nested.call.op for nested, _ in step.flat if nested is not None]
    assert ran == ["scalar.mul", "scalar.add", "scalar.mod", "scalar.min", "scalar.mul"]
    offsets = step.flat_operands[1][1]
    assert offsets == ((SLOT, 2), (SLOT, 4))


def test_nested_scalar_offsets_walk_the_same_on_plain_and_hooked_frames(monkeypatch):
    x = rand(64, 64)
    _, (_, result) = _same_walks(monkeypatch, single(_nested_kernel()), (x, torch.zeros(64, 64)))
    assert torch.equal(result, x.exp())


@dataclass(frozen=True)
class FreedTooEarly(MatmulBias):
    """The lanes free the popped tile before the add reads it."""

    def aiv(self) -> Function:
        b = FunctionBuilder("mixed_aiv", FunctionKind.AIV)
        _, _, bias_gm, out_gm = self.params(b)
        b.do("system.aiv_initialize_pipe", dir_mask=C2V, slot_size=self.slot_size, slot_num=self.slot_num)
        lane = b.op("lane", "tile.get_subblock_idx")
        share = split_shape((self.rows, self.n), self.mode)
        with b.loop("i", 0, self.blocks) as i:
            row = b.scalar("scalar.mul", i, self.rows)
            acc = b.op("acc_vec", "tile.tpop_from_aic", shape=share, dtype=FP32, split=self.mode)
            b.do("system.tfree_to_aic", acc)
            offsets = _lane_offsets(b, self.mode, row, lane, share)
            bias = b.op("bias_vec", "tile.load", bias_gm, offsets, shape=share, target_memory=Mem.Vec)
            b.do("tile.store", b.op("t", "tile.add", acc, bias), offsets, out_gm)
        ring = self.slot_num * self.slot_size
        return b.build(at={"t": ring, "bias_vec": ring}, reserve={Mem.Vec: ring})


def test_a_tile_read_after_its_free_is_the_same_pipe_error_on_plain_and_hooked_frames(monkeypatch):
    case = FreedTooEarly(blocks=2)
    error, _ = _same_walks(monkeypatch, case.program(), case.args())
    assert isinstance(error, PipeError)
    assert "reads acc_vec after pl.tfree_to_aic(acc_vec)" in error.message


def test_an_op_on_unsigned_tiles_keeps_the_widening_and_others_decode_without_it():
    """torch lacks arithmetic on uint16 / uint32: those operands are widened to int64; an op
    with no such operand is decoded to its semantics without that check per run."""
    steps = Steps(A2A3_TARGET)
    for dtype, widens in ((DataType.UINT32, True), (DataType.UINT16, True), (FP32, False)):
        k = FunctionBuilder("add", FunctionKind.AIV)
        x_gm = k.param("x", tensor_t((16, 16), dtype))
        x = k.op("x_t", "tile.load", x_gm, [0, 0], shape=(16, 16), target_memory=Mem.Vec)
        y = k.op("y_t", "tile.add", x, x)
        add = k.build().body[1].value
        assert steps.step(add).semantics is (SEMANTICS if widens else UNWIDENED)["tile.add"], (dtype, y)
