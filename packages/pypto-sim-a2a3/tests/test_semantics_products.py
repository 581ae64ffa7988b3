"""Semantics of the batched and one-row products against torch."""

from __future__ import annotations

import torch
from sim_lowered import Mem, expr, rand

from pypto.ir import DataType, TileType, Var, make_call
from pypto_sim_a2a3.engine.semantics import SEMANTICS

FP16, FP32 = DataType.FP16, DataType.FP32
TESTED = {"tile.batch_matmul", "tile.gemv_acc", "tile.gemv_bias"}


def run(op, operands, **attrs):
    call = make_call(op, [expr(Var("v", t)) for t, _ in operands], attrs)
    return SEMANTICS[op](call, [v for _, v in operands])


def tile(x, space, dtype=FP16):
    return TileType(tuple(x.shape), dtype, space), x


def test_a_batch_multiplies_each_matrix_in_fp32_and_broadcasts_one_right_matrix():
    a, b = rand(3, 16, 32, seed=1).half(), rand(32, 8, seed=2).half()
    got = run("tile.batch_matmul", [tile(a, Mem.Left), tile(b, Mem.Right)])
    assert got.dtype == torch.float32 and got.shape == (3, 16, 8)
    torch.testing.assert_close(got, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


def test_a_batch_transposes_the_last_two_dims_per_attrs():
    a, b = rand(2, 32, 16, seed=3), rand(2, 8, 32, seed=4)
    got = run(
        "tile.batch_matmul", [tile(a, Mem.Left, FP32), tile(b, Mem.Right, FP32)], a_trans=True, b_trans=True
    )
    torch.testing.assert_close(got, a.transpose(1, 2) @ b.transpose(1, 2), rtol=1e-5, atol=1e-5)


def test_gemv_acc_adds_the_row_product_and_gemv_bias_the_bias_row():
    acc, a, b, bias = (
        rand(1, 16, seed=5),
        rand(1, 64, seed=6).half(),
        rand(64, 16, seed=7).half(),
        rand(1, 16, seed=8),
    )
    summed = run("tile.gemv_acc", [tile(acc, Mem.Acc, FP32), tile(a, Mem.Left), tile(b, Mem.Right)])
    torch.testing.assert_close(summed, acc + a.float() @ b.float(), rtol=1e-5, atol=1e-5)
    biased = run("tile.gemv_bias", [tile(a, Mem.Left), tile(b, Mem.Right), tile(bias, Mem.Bias, FP32)])
    torch.testing.assert_close(biased, a.float() @ b.float() + bias, rtol=1e-5, atol=1e-5)


def test_int8_rows_accumulate_in_int32():
    a = torch.randint(-128, 127, (1, 64), dtype=torch.int8, generator=torch.Generator().manual_seed(9))
    b = torch.randint(-128, 127, (64, 16), dtype=torch.int8, generator=torch.Generator().manual_seed(10))
    acc = torch.full((1, 16), 2**20, dtype=torch.int32)
    got = run(
        "tile.gemv_acc",
        [
            tile(acc, Mem.Acc, DataType.INT32),
            tile(a, Mem.Left, DataType.INT8),
            tile(b, Mem.Right, DataType.INT8),
        ],
    )
    assert torch.equal(got, acc + a.int() @ b.int())
