"""More spellings of issue #12 (item 7) and loop-carried tensors inside a scope (item 2), against
torch or the exact error: pl.pipeline, pl.AUTO, pl.transpose, pl.array.create, pl.submit, column
reductions and reshapes of large tensors, an accumulator tensor carried by a K loop."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import For, ParseError, TypeCheckError, structural_diff
from pypto.ir.nodes import walk_stmts
from pypto.ir.printer import print_program
from pypto.runtime import RunConfig, run

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@pl.jit
def staged(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="staged"):
        for i in pl.pipeline(4, stage=2):
            out[i * 16 : (i + 1) * 16, :] = pl.exp(x[i * 16 : (i + 1) * 16, :])
        for j in pl.pipeline(0, 64, 32, stage=3):
            out[j : j + 32, :] = pl.add(out[j : j + 32, :], x[j : j + 32, :])
    return out


def test_a_pipeline_loop_runs_sequentially_and_keeps_its_stage_in_the_printed_ir():
    x = rand(64, 32, seed=1)
    out = torch.zeros(64, 32)
    staged(x, out, config=SIM)
    torch.testing.assert_close(out, x.exp() + x)
    program = staged.lower(x, out)
    loops = [s for fn in program.functions.values() for s in walk_stmts(fn.body) if isinstance(s, For)]
    assert sorted(s.stage for s in loops) == [2, 3]
    text = print_program(program)
    assert "pl.pipeline(0, 4, 1, stage=2)" in text and "pl.pipeline(0, 64, 32, stage=3)" in text


def test_a_pipeline_stage_below_one_is_an_error_with_a_hint():
    @pl.jit
    def bad(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.pipeline(4, stage=0):
                out[i * 16 : (i + 1) * 16, :] = pl.exp(x[i * 16 : (i + 1) * 16, :])
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(64, 32), torch.zeros(64, 32))
    assert "pl.pipeline() stage must be a literal int of at least 1, got the int 0" in str(info.value)
    assert info.value.span.line == line_of("for i in pl.pipeline(4, stage=0):")
    assert "stage=2" in info.value.hint


def test_a_run_time_pipeline_stage_is_an_error():
    @pl.jit
    def bad(
        x: pl.Tensor[[64, 32], pl.FP32],
        idx: pl.Tensor[[4], pl.INT32],
        out: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            n = pl.tensor.read(idx, [0])
            for i in pl.pipeline(4, stage=n):
                out[i * 16 : (i + 1) * 16, :] = pl.exp(x[i * 16 : (i + 1) * 16, :])
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(64, 32), torch.zeros(4, dtype=torch.int32), torch.zeros(64, 32))
    assert "pl.pipeline() stage must be a literal int of at least 1" in str(info.value)
    assert info.value.span.line == line_of("for i in pl.pipeline(4, stage=n):")


@pl.jit
def transposed(
    x: pl.Tensor[[32, 64], pl.FP32],
    y: pl.Tensor[[64, 32], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="transposed"):
        out[:, :] = pl.add(pl.transpose(pl.exp(x), 0, 1), y)
    return out


def test_transpose_of_a_tensor_inside_a_scope_matches_torch():
    x, y = rand(32, 64, seed=3), rand(64, 32, seed=4)
    out = torch.zeros(64, 32)
    transposed(x, y, out, config=SIM)
    torch.testing.assert_close(out, x.exp().transpose(0, 1) + y)


@pl.program
class TileTranspose:
    @pl.function(type=pl.FunctionType.InCore)
    def flip(self, a: pl.Tensor[[16, 48], pl.FP32], out: pl.Out[pl.Tensor[[48, 16], pl.FP32]]):
        t = pl.load(a, [0, 0], [16, 48])
        pl.store(pl.tile.transpose(pl.mul(t, 2.0), 1, 0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 48], pl.FP32], out: pl.Out[pl.Tensor[[48, 16], pl.FP32]]):
        out = self.flip(a, out)
        return out


def test_transpose_of_a_tile_in_program_form_matches_torch_and_reads_back():
    a = rand(16, 48, seed=5)
    out = torch.zeros(48, 16)
    run(TileTranspose, a, out, config=SIM)
    torch.testing.assert_close(out, (a * 2).transpose(0, 1))
    assert structural_diff(pl.parse_program(print_program(TileTranspose)), TileTranspose) is None


def test_transpose_of_one_axis_with_itself_is_a_type_error():
    @pl.jit
    def bad(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.transpose(x, 1, 1)
        return out

    with pytest.raises(TypeCheckError) as info:
        bad.lower(rand(32, 64), torch.zeros(32, 64))
    assert "axes 1 and 1 are not two distinct axes of" in str(info.value)
    assert info.value.span.line == line_of("out[:, :] = pl.transpose(x, 1, 1)")
    assert "pl.transpose(x, 0, 1)" in info.value.hint


@pl.jit
def auto_options(
    a: pl.Tensor[[64, 64], pl.FP32],
    b: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        name_hint=pl.AUTO,
        optimizations=[pl.split(pl.AUTO), pl.cross_core_slot(slot_num=pl.AUTO)],
    ):
        out[:, :] = pl.add(pl.matmul(a, b), a)
    return out


def test_auto_options_of_a_scope_are_left_to_the_compiler():
    a, b = rand(64, 64, seed=6), rand(64, 64, seed=7)
    out = torch.zeros(64, 64)
    auto_options(a, b, out, config=SIM)
    torch.testing.assert_close(out, a @ b + a, rtol=1e-4, atol=1e-4)
    program = auto_options.lower(a, b, out)
    group = next(fn for fn in program.functions.values() if fn.kind is pl.FunctionType.Group)
    assert group.name == "auto_options_incore"  # the generated name, as without name_hint=
    assert group.attrs["split"] is pl.SplitMode.NONE and "slot_num" not in group.attrs


@pl.program
class AutoMemory:
    @pl.function(type=pl.FunctionType.InCore)
    def neg(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        t = pl.load(a, [0, 0], [32, 32], target_memory=pl.AUTO)
        pl.store(pl.neg(t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        out = self.neg(a, out)
        return out


def test_auto_for_an_optional_op_argument_is_the_compilers_choice():
    a = rand(32, 32, seed=8)
    out = torch.zeros(32, 32)
    run(AutoMemory, a, out, config=SIM)
    torch.testing.assert_close(out, -a)
    assert "target_memory=pl.Mem.Vec" in print_program(AutoMemory)  # the default: as if left out


def test_auto_for_a_required_argument_is_an_error():
    @pl.jit
    def bad(x: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:, :] = pl.reshape(x, pl.AUTO)
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(32, 32), torch.zeros(32, 32))
    assert "shape= has no automatic value: pl.AUTO stands for an optional argument only" in str(info.value)
    assert info.value.span.line == line_of("out[:, :] = pl.reshape(x, pl.AUTO)")
    assert "pl.reshape(x, shape)" in info.value.hint
