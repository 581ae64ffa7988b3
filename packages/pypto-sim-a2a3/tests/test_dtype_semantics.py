"""The numbers of the manual's other dtypes: unsigned arithmetic wraps as the hardware's does
(torch computes with few unsigned dtypes), storage formats move bit for bit and convert as torch
converts them."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import Mem, expr

from pypto.ir import DataType, ScalarType, TileType, Var, make_call
from pypto_sim_a2a3 import ScalarRangeError
from pypto_sim_a2a3.engine.semantics import SEMANTICS

U16, U32, U64 = DataType.UINT16, DataType.UINT32, DataType.UINT64
TORCH = {U16: torch.uint16, U32: torch.uint32, U64: torch.uint64}


def apply(op, operands, **attrs):
    exprs = [Var("v", t) if isinstance(t, (TileType, ScalarType)) else t for t, _ in operands]
    call = make_call(op, [expr(e) for e in exprs], attrs)
    return SEMANTICS[op](call, [value for _, value in operands])


def unsigned(dtype, values):
    return torch.tensor(values, dtype=torch.int64).to(TORCH[dtype])


@pytest.mark.parametrize("dtype", [U16, U32])
def test_unsigned_add_and_sub_wrap_modulo_the_range(dtype):
    top = 2**dtype.bits - 1
    a, b = unsigned(dtype, [[top, 5, 0, 7]]), unsigned(dtype, [[2, 3, 1, 7]])
    t = TileType((1, 4), dtype, Mem.Vec)
    added = apply("tile.add", [(t, a), (t, b)])
    subbed = apply("tile.sub", [(t, a), (t, b)])
    assert added.dtype == TORCH[dtype] and subbed.dtype == TORCH[dtype]
    assert added.to(torch.int64).tolist() == [[1, 8, 1, 14]]
    assert subbed.to(torch.int64).tolist() == [[top - 2, 2, top, 0]]


def test_unsigned_maximum_division_and_row_sum_compare_as_unsigned_numbers():
    t = TileType((1, 3), U32, Mem.Vec)
    a, b = unsigned(U32, [[3_000_000_000, 9, 10]]), unsigned(U32, [[7, 2_500_000_000, 3]])
    assert apply("tile.maximum", [(t, a), (t, b)]).to(torch.int64).tolist() == [
        [3_000_000_000, 2_500_000_000, 10]
    ]
    assert apply("tile.div", [(t, a), (t, b)]).to(torch.int64).tolist() == [[428_571_428, 0, 3]]
    tmp = TileType((1, 3), U32, Mem.Vec)
    total = apply("tile.row_sum", [(t, a), (tmp, torch.zeros_like(a))])
    assert total.to(torch.int64).tolist() == [[(3_000_000_019) % 2**32]]


def test_an_unsigned_scalar_operand_outside_the_range_is_an_error_at_the_op():
    t = TileType((1, 2), U16, Mem.Vec)
    with pytest.raises(
        ScalarRangeError, match=r"does not fit torch.uint16 elements, whose range is \[0, 65535\]"
    ):
        apply("tile.adds", [(t, unsigned(U16, [[1, 2]])), (ScalarType(DataType.INT32), 70_000)])


def test_a_float_cast_to_an_unsigned_dtype_rounds_and_saturates_at_zero_and_the_top():
    t = TileType((1, 4), DataType.FP32, Mem.Vec)
    x = torch.tensor([[-5.0, 2.5, 1e12, 7.4]])
    got = apply("tile.cast", [(t, x)], dtype=U32)
    assert got.dtype == torch.uint32 and got.to(torch.int64).tolist() == [[0, 3, 2**32 - 1, 7]]


def test_fp8_round_trips_bit_for_bit_and_converts_as_torch_does():
    x = torch.randn(4, 32).to(torch.float8_e4m3fn)
    t = TileType((4, 32), DataType.FP8E4M3FN, Mem.Vec)
    moved = apply("tile.move", [(t, x)], target_memory=Mem.Vec)
    assert torch.equal(moved.view(torch.uint8), x.view(torch.uint8))
    widened = apply("tile.cast", [(t, x)], dtype=DataType.FP32)
    torch.testing.assert_close(widened, x.to(torch.float32), rtol=0, atol=0)
    back = apply(
        "tile.cast", [(TileType((4, 32), DataType.FP32, Mem.Vec), widened * 600)], dtype=DataType.FP8E4M3FN
    )
    assert torch.equal(back.view(torch.uint8), (widened * 600).to(torch.float8_e4m3fn).view(torch.uint8))


def test_uint64_moves_bit_for_bit():
    x = torch.tensor([[2**64 - 1, 5]], dtype=torch.uint64)
    got = apply("tile.move", [(TileType((1, 2), U64, Mem.Vec), x)], target_memory=Mem.Vec)
    assert torch.equal(got.view(torch.int64), x.view(torch.int64))
