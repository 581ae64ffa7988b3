"""Semantics of the generators against torch: arange, random (reproducible, position-keyed), tri."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from sim_lowered import expr

from pypto.ir import INDEX, DataType, ScalarType, TupleExpr, TupleType, Var, make_call
from pypto_sim_a2a3 import OutOfBoundsError, ScalarRangeError
from pypto_sim_a2a3.engine.semantics import SEMANTICS

I32 = ScalarType(DataType.INT32)
TESTED = {"tile.ci", "tile.random", "tile.tri"}


def run(op: str, args: list[tuple[Any, Any]], **attrs: Any) -> Any:
    call = make_call(op, [expr(t) for t, _ in args], attrs)
    return SEMANTICS[op](call, [v for _, v in args])


def scalar(value: int, t: ScalarType = I32) -> tuple[Var, int]:
    return Var("s", t), value


def extents(*values: int) -> tuple[TupleExpr, tuple[int, ...]]:
    elements = tuple(Var("n", INDEX) for _ in values)
    return TupleExpr(elements, TupleType(tuple(INDEX for _ in values))), values


@pytest.mark.parametrize("dtype", [DataType.INT16, DataType.INT32])
def test_arange_counts_from_start_in_row_major_order(dtype):
    got = run("tile.ci", [scalar(-5)], shape=(4, 16), dtype=dtype)
    assert got.dtype == getattr(torch, dtype.torch_name)
    assert torch.equal(got.to(torch.int64), torch.arange(-5, 59).reshape(4, 16))


def test_a_descending_arange_counts_down_and_int16_wraps_as_the_counter_does():
    got = run("tile.ci", [scalar(3)], shape=(2, 8), descending=True)
    assert torch.equal(got, (3 - torch.arange(16)).reshape(2, 8).to(torch.int32))
    wrapped = run("tile.ci", [scalar(32760)], shape=(1, 16), dtype=DataType.INT16)
    assert torch.equal(wrapped, torch.arange(32760, 32776).to(torch.int16).reshape(1, 16))


def test_a_run_time_start_beyond_the_dtype_is_a_scalar_range_error():
    with pytest.raises(ScalarRangeError, match=r"pl\.arange: the scalar 70000 does not fit torch\.int16"):
        run("tile.ci", [scalar(70000)], shape=(1, 16), dtype=DataType.INT16)


def test_random_floats_are_uniform_in_zero_one_and_the_same_for_the_same_seed():
    a = run("tile.random", [scalar(11)], shape=(256, 256))
    assert a.dtype == torch.float32 and float(a.min()) >= 0.0 and float(a.max()) < 1.0
    assert abs(float(a.mean()) - 0.5) < 0.01 and abs(float(a.var()) - 1 / 12) < 0.01
    assert torch.equal(a, run("tile.random", [scalar(11)], shape=(256, 256)))
    assert not torch.equal(a, run("tile.random", [scalar(12)], shape=(256, 256)))


def test_a_block_of_random_numbers_is_the_whole_tiles_numbers_at_its_position():
    whole = run("tile.random", [scalar(3)], shape=(64, 32), dtype=DataType.FP16)
    block = run("tile.random", [scalar(3), (Var("o", INDEX), 16 * 32)], shape=(8, 32), dtype=DataType.FP16)
    assert torch.equal(block, whole[16:24])
    assert float(whole.max()) < 1.0  # no draw rounds up to 1 in FP16


@pytest.mark.parametrize("dtype", [DataType.INT8, DataType.UINT8, DataType.INT32])
def test_random_integers_cover_the_dtypes_range(dtype):
    got = run("tile.random", [scalar(5)], shape=(64, 64), dtype=dtype)
    low, high = dtype.int_range
    assert int(got.min()) < low + (high - low) // 8 and int(got.max()) > high - (high - low) // 8


@pytest.mark.parametrize(("upper", "diagonal"), [(False, 0), (False, 3), (True, 0), (True, -2)])
def test_tri_is_torchs_tril_or_triu_mask(upper, diagonal):
    got = run("tile.tri", [scalar(diagonal)], shape=(16, 32), dtype=DataType.FP32, upper=upper)
    ones = torch.ones(16, 32)
    assert torch.equal(got, torch.triu(ones, diagonal) if upper else torch.tril(ones, diagonal))


def test_tri_writes_only_its_valid_region():
    got = run("tile.tri", [scalar(0), extents(5, 12)], shape=(16, 32), dtype=DataType.INT32)
    want = torch.zeros(16, 32, dtype=torch.int32)
    want[:5, :12] = torch.tril(torch.ones(5, 12, dtype=torch.int32))
    assert torch.equal(got, want)
    with pytest.raises(
        OutOfBoundsError, match=r"pl\.tri: valid_shape \[17, 12\] leaves the tile's \[16, 32\]"
    ):
        run("tile.tri", [scalar(0), extents(17, 12)], shape=(16, 32), dtype=DataType.INT32)
