"""Type rules of pl.batch_matmul (and pl.matmul of batches), pl.gemv_acc and pl.gemv_bias."""

import pytest

from pypto.ir import DataType, MemorySpace, TensorType, TileType, TypeCheckError, Var, make_call
from pypto.ir.ops import get_op

FP16, FP32, INT8 = DataType.FP16, DataType.FP32, DataType.INT8
Left, Right, Acc, Bias = MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Bias


def tile(shape, dtype=FP16, space=Left):
    return Var("t", TileType(tuple(shape), dtype, space))


def tensor(shape, dtype=FP16):
    return Var("x", TensorType(tuple(shape), dtype))


def test_a_batch_of_products_keeps_the_batch_dims_and_broadcasts_a_single_matrix():
    got = make_call("tile.batch_matmul", (tile([4, 32, 64]), tile([4, 64, 16], space=Right)))
    assert got.type == TileType((4, 32, 16), FP32, Acc)
    shared = make_call("tensor.batch_matmul", (tensor([2, 3, 32, 64]), tensor([64, 16])), {"out_dtype": FP16})
    assert shared.type == TensorType((2, 3, 32, 16), FP16)
    ones = make_call("tensor.batch_matmul", (tensor([1, 32, 64]), tensor([5, 16, 64])), {"b_trans": True})
    assert ones.type.shape == (5, 32, 16)


def test_a_batch_whose_dims_do_not_broadcast_or_whose_inner_dims_differ_names_them():
    with pytest.raises(TypeCheckError, match=r"batch dims \[4\] and \[3\] do not broadcast \(4 vs 3\)"):
        make_call("tensor.batch_matmul", (tensor([4, 32, 64]), tensor([3, 64, 16])))
    with pytest.raises(TypeCheckError, match=r"inner dimensions differ: .* \(64 != 32\)"):
        make_call("tensor.batch_matmul", (tensor([4, 32, 64]), tensor([4, 32, 16])))


def test_a_tile_batch_multiplies_left_by_right_tiles():
    with pytest.raises(TypeCheckError, match="the left operand must be in Left"):
        make_call(
            "tile.batch_matmul", (tile([4, 32, 64], space=MemorySpace.Mat), tile([4, 64, 16], space=Right))
        )


def test_gemv_acc_adds_a_row_product_to_an_fp32_accumulator_row():
    acc = tile([1, 64], FP32, Acc)
    got = make_call(
        "tile.gemv_acc", (acc, tile([1, 128]), tile([128, 64], space=Right)), {"acc_phase": "final"}
    )
    assert got.type == TileType((1, 64), FP32, Acc)
    with pytest.raises(TypeCheckError, match="accumulator must be a \\[1, 64\\] FP32 Acc tile"):
        make_call("tile.gemv_acc", (tile([1, 32], FP32, Acc), tile([1, 128]), tile([128, 64], space=Right)))
    with pytest.raises(TypeCheckError, match="multiplies one row by a matrix"):
        make_call("tensor.gemv_acc", (tensor([2, 64], FP32), tensor([2, 128]), tensor([128, 64])))


def test_gemv_bias_takes_a_bias_row_and_the_gemv_family_multiplies_int8_and_floats_only():
    bias = tile([1, 64], FP32, Bias)
    got = make_call(
        "tile.gemv_bias",
        (tile([1, 128], INT8), tile([128, 64], INT8, Right), tile([1, 64], DataType.INT32, Bias)),
    )
    assert got.type.dtype is DataType.INT32
    with pytest.raises(TypeCheckError, match="bias must be a \\[1, 64\\] FP32 Bias tile"):
        make_call("tile.gemv_bias", (tile([1, 128]), tile([128, 64], space=Right), tile([1, 32], FP32, Bias)))
    with pytest.raises(
        TypeCheckError, match=r"multiplies rows of pl\.INT8, pl\.FP16, pl\.BF16, pl\.FP32, got Tensor"
    ):
        make_call("tensor.gemv", (tensor([1, 128], DataType.INT16), tensor([128, 64], DataType.INT16)))
    assert (
        make_call("tile.gemv_bias", (tile([1, 128]), tile([128, 64], space=Right), bias)).type.dtype is FP32
    )


def test_acc_phase_takes_the_three_phases_only():
    spec_attr = make_call(
        "tile.gemv", (tile([1, 128]), tile([128, 64], space=Right)), {"acc_phase": "partial"}
    )
    assert spec_attr.attrs["acc_phase"] == "partial"
    attr = get_op("tile.gemv").attr("acc_phase")
    assert attr is not None and attr.choices == ("unspecified", "partial", "final")
    assert not attr.accepts("done")
    with pytest.raises(
        TypeCheckError, match="acc_phase must be one of 'unspecified', 'partial', 'final', got 'done'"
    ):
        make_call("tile.gemv", (tile([1, 128]), tile([128, 64], space=Right)), {"acc_phase": "done"})
