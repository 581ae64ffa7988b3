"""Semantics of element writes, dtype views and expanding fills, against torch."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from sim_lowered import Mem, expr, rand

from pypto.ir import INDEX, DataType, PadValue, ScalarType, TensorType, TileType, Var, make_call
from pypto_sim_a2a3 import OutOfBoundsError, ScalarRangeError
from pypto_sim_a2a3.engine.semantics import SEMANTICS

DTYPES = {
    torch.float32: DataType.FP32,
    torch.float16: DataType.FP16,
    torch.int32: DataType.INT32,
    torch.int16: DataType.INT16,
    torch.int8: DataType.INT8,
    torch.uint8: DataType.UINT8,
}
TESTED = {"scalar.write", "tile.write", "tile.reinterpret_view", "tile.fillpad_expand"}


def apply(op: str, operands: list[tuple[Any, Any]], **attrs: Any) -> Any:
    exprs = [Var("v", t) if isinstance(t, (TileType, TensorType, ScalarType)) else t for t, _ in operands]
    call = make_call(op, [expr(e) for e in exprs], attrs)
    return SEMANTICS[op](call, [value for _, value in operands])


def tile_of(x: torch.Tensor, valid: tuple[int, ...] | None = None) -> tuple[TileType, torch.Tensor]:
    return TileType(tuple(x.shape), DTYPES[x.dtype], Mem.Vec, valid), x


def gm(x: torch.Tensor) -> tuple[TensorType, torch.Tensor]:
    return TensorType(tuple(x.shape), DTYPES[x.dtype]), x


def at(i: int, j: int) -> tuple[Any, tuple[int, int]]:
    return [Var("i", INDEX), Var("j", INDEX)], (i, j)


# ---------------------------------------------------------------- pl.write


def test_a_write_stores_one_element_in_the_tensors_own_storage_in_its_dtype():
    x = torch.zeros(4, 8, dtype=torch.int16)
    got = apply("scalar.write", [gm(x), at(2, 5), (ScalarType(DataType.INT32), -7)])
    assert got is x
    want = torch.zeros(4, 8, dtype=torch.int16)
    want[2, 5] = -7
    assert torch.equal(x, want)


def test_a_tile_write_stores_one_element_of_the_tile_and_leaves_the_rest():
    x = rand(4, 8, seed=3)
    before = x.clone()
    got = apply("tile.write", [tile_of(x), at(0, 7), (ScalarType(DataType.FP32), 1.5)])
    assert got is x and x[0, 7].item() == 1.5
    before[0, 7] = 1.5
    assert torch.equal(x, before)


def test_a_write_outside_the_tensor_is_out_of_bounds_at_the_op():
    with pytest.raises(OutOfBoundsError, match=r"pl\.write: region \[8:9\] is outside dim 1 of size 8"):
        apply("scalar.write", [gm(torch.zeros(4, 8)), at(1, 8), (ScalarType(DataType.FP32), 1.0)])


def test_a_run_time_value_beyond_the_elements_range_is_a_scalar_range_error():
    with pytest.raises(ScalarRangeError, match=r"pl\.write: the scalar 300 does not fit torch\.int8"):
        apply(
            "tile.write",
            [tile_of(torch.zeros(2, 32, dtype=torch.int8)), at(0, 0), (ScalarType(DataType.INT32), 300)],
        )


# ---------------------------------------------------------------- pl.reinterpret_view


@pytest.mark.parametrize(
    ("src", "dst", "shape"),
    [
        (torch.float32, torch.int32, (8, 16)),
        (torch.float32, torch.int16, (8, 32)),
        (torch.int8, torch.float16, (8, 8)),
        (torch.float16, torch.uint8, (8, 32)),
    ],
)
def test_a_view_reads_the_same_bytes_as_the_other_dtype_scaling_the_last_axis(src, dst, shape):
    x = (rand(8, 16, seed=5) * 50).to(src)
    got = apply("tile.reinterpret_view", [tile_of(x)], dtype=DTYPES[dst])
    assert got.shape == shape and got.dtype == dst
    assert torch.equal(got.view(torch.uint8), x.view(dst).view(torch.uint8))  # bit for bit (NaNs too)


def test_a_view_with_an_explicit_shape_lays_the_bytes_out_row_major():
    x = rand(8, 16, seed=6)
    got = apply("tile.reinterpret_view", [tile_of(x)], dtype=DataType.INT16, shape=(16, 16))
    assert torch.equal(got, x.view(torch.int16).reshape(16, 16))


# ---------------------------------------------------------------- pl.fillpad_expand


def test_fillpad_expand_keeps_the_valid_region_at_the_origin_and_pads_the_rest_of_a_larger_tile():
    x = rand(4, 8, seed=7)
    got = apply("tile.fillpad_expand", [tile_of(x, (3, 5))], shape=(8, 16), pad_value=PadValue.max)
    want = torch.full((8, 16), torch.inf)
    want[:3, :5] = x[:3, :5]
    assert torch.equal(got, want)


def test_fillpad_expand_of_a_run_time_valid_shape_pads_past_it():
    x = torch.arange(32, dtype=torch.int32).reshape(4, 8)
    got = apply("tile.fillpad_expand", [tile_of(x), ([Var("r", INDEX), 8], (2, 8))], shape=(4, 16))
    want = torch.zeros(4, 16, dtype=torch.int32)
    want[:2, :8] = x[:2]
    assert torch.equal(got, want)
