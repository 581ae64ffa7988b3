"""More spellings of issue #12 (item 7) and loop-carried tensors inside a scope (item 2), against
torch or the exact error: pl.pipeline, pl.AUTO, pl.transpose, pl.array.create, pl.submit, column
reductions and reshapes of large tensors, an accumulator tensor carried by a K loop."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import For, ParseError, TypeCheckError, VerificationLevel, structural_diff
from pypto.ir.nodes import walk_stmts
from pypto.ir.printer import print_program
from pypto.runtime import RunConfig, run

# Built at import, before conftest sets the environment default: so the level is named here.
SIM = RunConfig(platform="a2a3sim", verification_level=VerificationLevel.ROUNDTRIP)


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
    assert "pl.pipeline(0, 4, 1, stage=2" in text and "pl.pipeline(0, 64, 32, stage=3" in text


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
    assert group.name == "auto_options_incore_0"  # the generated name, as without name_hint=
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


K = 256


@pl.jit
def k_loop(
    a: pl.Tensor[[64, K], pl.FP32], b: pl.Tensor[[K, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_loop"):
        acc = pl.matmul(a[:, 0:64], b[0:64, :])
        for k0 in pl.range(64, K, 64):
            acc = pl.add(acc, pl.matmul(a[:, k0 : k0 + 64], b[k0 : k0 + 64, :]))
        out[:, :] = acc
    return out


def test_an_accumulator_tensor_carried_by_a_k_loop_inside_a_scope_matches_torch():
    a, b = rand(64, K, seed=9), rand(K, 64, seed=10)
    out = torch.zeros(64, 64)
    k_loop(a, b, out, config=SIM)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)


@pl.jit
def k_loop_explicit(
    a: pl.Tensor[[128, K], pl.FP32],
    b: pl.Tensor[[K, 32], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_loop_explicit"):
        zero = pl.mul(out, 0.0)
        for k0, (acc,) in pl.range(0, K, 64, init_values=(zero,)):
            step = pl.matmul(a[:, k0 : k0 + 64], b[k0 : k0 + 64, :])
            total = pl.yield_(pl.add(acc, step))
        out[:, :] = pl.mul(total, 0.5)
    return out


def test_an_explicitly_carried_tensor_with_init_values_and_yield_matches_torch():
    a, b = rand(128, K, seed=11), rand(K, 32, seed=12)
    out = torch.zeros(128, 32)
    k_loop_explicit(a, b, out, config=SIM)
    torch.testing.assert_close(out, (a @ b) * 0.5, rtol=1e-4, atol=1e-4)


@pl.jit
def doubled_while(
    x: pl.Tensor[[64, 32], pl.FP32], n: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="doubled_while"):
        limit = pl.read(n, [0])
        acc = pl.exp(x)
        for (i,) in pl.while_(init_values=(0,)):
            pl.cond(i < limit)
            acc = pl.mul(acc, 2.0)
            i = i + 1
        out[:, :] = acc
    return out


@pytest.mark.parametrize("times", [0, 1, 3])
def test_a_tensor_carried_by_a_while_loop_with_a_run_time_condition_matches_torch(times):
    x = rand(64, 32, seed=13)
    out = torch.zeros(64, 32)
    doubled_while(x, torch.tensor([times], dtype=torch.int32), out, config=SIM)
    torch.testing.assert_close(out, x.exp() * 2**times)


@pl.jit
def two_tensors(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="two_tensors"):
        s = pl.mul(x, 0.0)
        m = pl.mul(x, 1.0)
        for i in pl.range(3):
            s = pl.add(s, m)
            m = pl.maximum(m, pl.mul(x, i))
        out[:, :] = pl.sub(s, m)
    return out


def test_two_tensors_carried_by_one_loop_match_torch():
    x = rand(64, 32, seed=14)
    out = torch.zeros(64, 32)
    two_tensors(x, out, config=SIM)
    s, m = torch.zeros_like(x), x.clone()
    for i in range(3):
        s, m = s + m, torch.maximum(m, x * i)
    torch.testing.assert_close(out, s - m)


def test_a_carried_tensor_swapped_with_another_is_an_error():
    @pl.jit
    def swapped(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            p = pl.mul(x, 2.0)
            q = pl.mul(x, 3.0)
            for _i in pl.range(3):  # swaps
                p, q = q, p
            out[:, :] = pl.add(p, q)
        return out

    with pytest.raises(ParseError) as info:
        swapped.lower(rand(64, 32), torch.zeros(64, 32))
    assert "takes the value another carried tensor had" in str(info.value)
    assert info.value.span.line == line_of("for _i in pl.range(3):  # swaps")


@pl.jit
def run_time_trips(
    x: pl.Tensor[[64, 32], pl.FP32], n: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="accumulate"):
        trips = pl.cast(pl.read(n, [0]), pl.INDEX)
        acc = pl.exp(x)
        for _i in pl.range(trips):
            acc = pl.add(acc, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="use_later"):
        out[:, :] = pl.neg(acc)
    return out


@pytest.mark.parametrize("trips", [0, 2])
def test_a_carried_tensor_of_a_run_time_loop_is_used_by_a_later_scope(trips):
    x = rand(64, 32, seed=15)
    out = torch.zeros(64, 32)
    run_time_trips(x, torch.tensor([trips], dtype=torch.int32), out, config=SIM)
    torch.testing.assert_close(out, -(x.exp() + trips * x))


def test_a_tensor_carried_by_a_loop_with_a_break_is_still_a_clear_error():
    @pl.jit
    def stops(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.exp(x)
            for i in pl.range(4):
                if i == 2:
                    break
                acc = pl.add(acc, x)
            out[:, :] = acc
        return out

    with pytest.raises(ParseError) as info:
        stops.lower(rand(64, 32), torch.zeros(64, 32))
    assert "is a loop-carried tensor inside a scope, which the compiler does not tile" in str(info.value)
    assert "carry a tile instead" in info.value.hint


@pl.jit.incore
def scale_rows(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [64, 32])
    pl.store(pl.mul(t, 3.0), [0, 0], out)
    return out


def test_submit_from_a_jit_function_asks_for_a_program_method():
    @pl.jit
    def submitted(
        x: pl.Tensor[[64, 32], pl.FP32],
        tmp: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
        out: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
    ):
        tmp, _first = pl.submit(scale_rows, x, tmp)
        return tmp

    with pytest.raises(ParseError) as info:
        submitted.lower(rand(64, 32), torch.zeros(64, 32), torch.zeros(64, 32))
    assert "pl.submit(...) first argument must be a self.<kernel> method reference" in str(info.value)
    assert info.value.span.line == line_of("tmp, _first = pl.submit(scale_rows, x, tmp)")
    assert "with pl.at(..., deps=[...]) as tid:" in info.value.hint


@pl.program
class Submitted:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: pl.Tensor[[32, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
        t = pl.load(a, [0, 0], [32, 32])
        pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[32, 32], pl.FP32],
        tmp: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
        out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
    ):
        tmp, t0 = pl.submit(self.double, a, tmp)
        out, _ = pl.submit(self.double, tmp, out, deps=[t0])
        return out


def test_submit_in_program_form_matches_torch_and_reads_back():
    a = rand(32, 32, seed=17)
    tmp, out = torch.zeros(32, 32), torch.zeros(32, 32)
    run(Submitted, a, tmp, out, config=SIM)
    torch.testing.assert_close(out, a * 4)
    assert structural_diff(pl.parse_program(print_program(Submitted)), Submitted) is None


def test_submit_of_something_that_is_no_kernel_is_an_error():
    @pl.jit
    def bad(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
        pl.submit(pl.exp, x, out)
        return out

    with pytest.raises(ParseError) as info:
        bad.lower(rand(64, 32), torch.zeros(64, 32))
    assert "pl.submit(...) first argument must be a self.<kernel> method reference" in str(info.value)
    assert info.value.span.line == line_of("pl.submit(pl.exp, x, out)")
