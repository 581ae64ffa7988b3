"""The remaining spellings of issue #12 (item 7) and the nearest-name hint (item 8), against torch
or the exact error: pl.tensor.read, pl.const, pl.min / pl.max, pl.cast(x, target_type=),
pl.static_print / pl.static_assert, dtype.get_byte(), pl.TaskId / pl.TASK_ID, slices whose
end is the start plus a constant."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
T = 16


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


@pl.jit
def pick_rows(
    x: pl.Tensor[[64, 32], pl.FP32], idx: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="pick"):
        for i in pl.range(4):
            r = pl.cast(pl.tensor.read(idx, [i]), target_type=pl.INDEX)
            r = pl.max(pl.min(r, 62), 0)  # clamp, so r + 1 stays inside x
            out[i : i + 1, :] = pl.mul(x[r + 1 : r + 2, :], pl.const(2, pl.FP32))
    return out


def test_tensor_read_min_max_cast_target_type_const_and_a_run_time_start_plus_constant():
    x, idx = rand(64, 32, seed=1), torch.tensor([5, 70, -3, 0], dtype=torch.int32)
    out = torch.zeros(4, 32)
    pick_rows(x, idx, out, config=SIM)
    rows = idx.clamp(0, 62) + 1
    torch.testing.assert_close(out, x[rows] * 2, rtol=0, atol=0)


@pl.jit
def blocks(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="blocks"):
        for i in pl.range(64 // T):
            out[i * T : (i + 1) * T, :] = pl.exp(x[i * T : (i + 1) * T, :])
    return out


def test_a_slice_written_i_t_to_i_plus_one_t_has_the_constant_extent_t():
    x = rand(64, 32, seed=2)
    out = torch.zeros(64, 32)
    blocks(x, out, config=SIM)
    torch.testing.assert_close(out, x.exp())


@pl.jit
def product_end(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(1, 4):
            out[:, :] = x[i : i * i, :]
    return out


def test_an_end_that_is_not_the_start_plus_a_constant_is_an_error_at_the_slice():
    with pytest.raises(ParseError) as info:
        product_end.lower(rand(64, 32), torch.zeros(8, 32))
    assert "a slice with a run-time start needs a constant extent, got i:i * i" in str(info.value)
    assert info.value.span.line == line_of("out[:, :] = x[i : i * i, :]")
    assert "a[i * T:(i + 1) * T]" in info.value.hint


@pl.jit
def printed_and_asserted(x: pl.Tensor[[32, 64], pl.FP16], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]):
    rows, cols = x.shape
    pl.static_print("rows", rows, "bytes", x.dtype.get_byte() * rows * cols, x)
    pl.static_assert(x.dtype.get_byte() == 2, "fp16 only")
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.abs(x)
    return out


@pl.jit
def plain_abs(x: pl.Tensor[[32, 64], pl.FP16], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.abs(x)
    return out


def test_static_print_and_static_assert_run_at_parse_time_and_leave_no_ir(capsys):
    x, out = rand(32, 64, seed=3).half(), torch.zeros(32, 64, dtype=torch.float16)
    printed_and_asserted(x, out, config=SIM)
    torch.testing.assert_close(out, x.abs(), rtol=0, atol=0)
    shown = capsys.readouterr().out
    line = line_of("pl.static_print(")
    assert f"test_spellings.py:{line}: static_print: rows 32 bytes 4096 " in shown
    assert "Tensor[[32, 64], FP16]" in shown
    printed = printed_and_asserted.lower(x, out).as_python().replace("printed_and_asserted", "plain_abs")
    assert printed == plain_abs.lower(x, out).as_python()


@pl.jit
def fp32_only(x: pl.Tensor[[32, 64], pl.FP16], out: pl.Out[pl.Tensor[[32, 64], pl.FP16]]):
    pl.static_assert(x.dtype.get_byte() == 4, "fp32 only")
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.abs(x)
    return out


def test_a_false_static_assert_fails_the_compile_with_its_message():
    with pytest.raises(ParseError) as info:
        fp32_only.lower(torch.zeros(32, 64, dtype=torch.float16), torch.zeros(32, 64, dtype=torch.float16))
    assert info.value.message == "pl.static_assert: static assertion failed: fp32 only"
    assert info.value.span.line == line_of('pl.static_assert(x.dtype.get_byte() == 4, "fp32 only")')


def test_get_byte_is_the_element_size():
    assert [d.get_byte() for d in (pl.FP16, pl.BF16, pl.FP32, pl.INT8, pl.INT32, pl.INT64)] == [
        2,
        2,
        4,
        1,
        4,
        8,
    ]


@pl.jit
def fractional_int(x: pl.Tensor[[32, 64], pl.INT32], out: pl.Out[pl.Tensor[[32, 64], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, pl.const(1.5, pl.INT32))
    return out


def test_pl_const_refuses_a_value_its_dtype_cannot_hold():
    with pytest.raises(ParseError) as info:
        fractional_int.lower(torch.zeros(32, 64, dtype=torch.int32), torch.zeros(32, 64, dtype=torch.int32))
    assert info.value.message == "pl.const: 1.5 is not a whole number, so it is no pl.INT32"
    assert info.value.hint == "round it first, or pick a float dtype: pl.const(1.5, pl.FP32)"


@pl.jit
def min_of_tensors(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.min(x, x)
    return out


def test_pl_min_on_a_tensor_points_at_minimum_and_row_min():
    with pytest.raises(ParseError) as info:
        min_of_tensors.lower(rand(32, 64), torch.zeros(32, 64))
    assert info.value.message == "pl.min: takes scalars, got Tensor[[32, 64], FP32]"
    assert "pl.minimum(a, b)" in info.value.hint and "pl.row_min(x)" in info.value.hint


@pl.jit
def ordered(
    x: pl.Tensor[[32, 64], pl.FP32],
    y: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    z: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as t0:
        y[:] = pl.exp(x)
    first: pl.TaskId = t0
    again: pl.TASK_ID = first
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second", deps=[again]):
        z[:] = pl.neg(x)
    return y, z


def test_task_id_annotations_name_the_task_handle_type():
    x, y, z = rand(32, 64, seed=4), torch.zeros(32, 64), torch.zeros(32, 64)
    ordered(x, y, z, config=SIM)
    torch.testing.assert_close(y, x.exp())
    torch.testing.assert_close(z, -x)


@pl.jit
def task_id_for_a_tensor(x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    t: pl.TaskId = x
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.exp(t)
    return y


def test_a_task_id_annotation_on_a_tensor_is_a_type_error():
    with pytest.raises(TypeCheckError) as info:
        task_id_for_a_tensor.lower(rand(32, 64), torch.zeros(32, 64))
    assert info.value.message == "'t' is annotated pl.TaskId but the value is Tensor[[32, 64], FP32]"


@pl.jit
def misspelled(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.tensor.rowmax(x)
    return out


def test_an_unknown_pl_name_suggests_the_nearest_real_ones():
    with pytest.raises(ParseError) as info:
        misspelled.lower(rand(32, 64), torch.zeros(32, 1))
    assert info.value.message == "pl.tensor has no attribute 'rowmax'"
    assert info.value.hint == "did you mean pl.tensor.row_max or pl.tensor.row_argmax or pl.tensor.row_sum?"
    assert info.value.span.line == line_of("out[:] = pl.tensor.rowmax(x)")
    assert info.value.span.col == len("        out[:] = ")
