"""The products of PyPTO's manual end to end on a2a3sim, against torch: ``pl.matmul`` of batches
(rank 3, lowered to a batched product and tiled over the batch), ``pl.batch_matmul`` on tiles,
``pl.gemv_acc`` and ``pl.gemv_bias``."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind, TypeCheckError, print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def batched(
    a: pl.Tensor[[64, 32, 64], pl.FP16],
    b: pl.Tensor[[64, 64, 32], pl.FP16],
    w: pl.Tensor[[32, 64], pl.FP16],
    c: pl.Out[pl.Tensor[[64, 32, 32], pl.FP32]],
    d: pl.Out[pl.Tensor[[64, 32, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
        d[:] = pl.matmul(a, w, b_trans=True)
    return c, d


def test_a_matmul_of_batches_multiplies_each_pair_and_broadcasts_one_weight():
    a, b, w = rand(64, 32, 64, seed=1).half(), rand(64, 64, 32, seed=2).half(), rand(32, 64, seed=3).half()
    c, d = torch.zeros(64, 32, 32), torch.zeros(64, 32, 32)
    batched(a, b, w, c, d, config=SIM)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d, a.float() @ w.float().T, rtol=1e-3, atol=1e-3)


def test_a_batch_too_large_for_l0_runs_as_a_loop_over_blocks_of_the_batch():
    a, b, w = rand(64, 32, 64).half(), rand(64, 64, 32).half(), rand(32, 64).half()
    program = batched.lower(a, b, w, torch.zeros(64, 32, 32), torch.zeros(64, 32, 32))
    text = print_ir(program)
    assert "pl.tile.batch_matmul(" in text and "for " in text
    assert any(f.kind is FunctionKind.AIC for f in program.functions.values())


def test_batch_matmul_of_tiles_in_left_and_right():
    @pl.jit
    def k(
        a: pl.Tensor[[2, 32, 64], pl.BF16],
        b: pl.Tensor[[2, 64, 32], pl.BF16],
        c: pl.Out[pl.Tensor[[2, 32, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            al = pl.move(
                pl.load(a, [0, 0, 0], [2, 32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
            )
            br = pl.move(
                pl.load(b, [0, 0, 0], [2, 64, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
            )
            pl.store(pl.batch_matmul(al, br), [0, 0, 0], c)
        return c

    a, b, c = rand(2, 32, 64, seed=4).bfloat16(), rand(2, 64, 32, seed=5).bfloat16(), torch.zeros(2, 32, 32)
    k(a, b, c, config=SIM)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_batch_matmul_of_tensors_says_to_call_matmul():
    @pl.jit
    def k(
        a: pl.Tensor[[2, 32, 64], pl.FP16],
        b: pl.Tensor[[2, 64, 32], pl.FP16],
        c: pl.Out[pl.Tensor[[2, 32, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.batch_matmul(a, b)
        return c

    with pytest.raises(Exception, match="takes tiles") as info:
        k(torch.zeros(2, 32, 64).half(), torch.zeros(2, 64, 32).half(), torch.zeros(2, 32, 32), config=SIM)
    assert "pl.matmul" in str(info.value)


def test_batches_that_do_not_broadcast_are_a_type_error_at_the_line():
    @pl.jit
    def k(
        a: pl.Tensor[[4, 32, 64], pl.FP16],
        b: pl.Tensor[[3, 64, 32], pl.FP16],
        c: pl.Out[pl.Tensor[[4, 32, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul(a, b)
        return c

    with pytest.raises(TypeCheckError) as info:
        k(torch.zeros(4, 32, 64).half(), torch.zeros(3, 64, 32).half(), torch.zeros(4, 32, 32), config=SIM)
    assert "batch dims [4] and [3] do not broadcast" in info.value.message
    assert "pl.matmul(a, b)" in str(info.value)


# ---------------------------------------------------------------- gemv_acc, gemv_bias


@pl.jit
def row_products(
    a: pl.Tensor[[1, 256], pl.FP16],
    b: pl.Tensor[[256, 64], pl.FP16],
    bias: pl.Tensor[[1, 64], pl.FP32],
    summed: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
    biased: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.gemv(a[:, 0:128], b[0:128, :], acc_phase="partial")
        summed[:] = pl.gemv_acc(acc, a[:, 128:256], b[128:256, :], acc_phase="final")
        biased[:] = pl.gemv_bias(a, b, bias)
    return summed, biased


def test_gemv_acc_continues_a_row_product_over_k_and_gemv_bias_adds_a_bias_row():
    a, b, bias = rand(1, 256, seed=6).half(), rand(256, 64, seed=7).half(), rand(1, 64, seed=8)
    summed, biased = torch.zeros(1, 64), torch.zeros(1, 64)
    row_products(a, b, bias, summed, biased, config=SIM)
    torch.testing.assert_close(summed, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(biased, a.float() @ b.float() + bias, rtol=1e-3, atol=1e-3)


def test_gemv_acc_on_tiles_in_a_k_loop():
    @pl.jit
    def k(
        a: pl.Tensor[[1, 256], pl.FP16],
        b: pl.Tensor[[256, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            al = pl.move(pl.load(a, [0, 0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            br = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.gemv(al, br)
            for k0 in pl.range(64, 256, 64):
                al = pl.move(
                    pl.load(a, [0, k0], [1, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                br = pl.move(
                    pl.load(b, [k0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right
                )
                acc = pl.gemv_acc(acc, al, br)
            pl.store(acc, [0, 0], out)
        return out

    a, b, out = rand(1, 256, seed=9).half(), rand(256, 64, seed=10).half(), torch.zeros(1, 64)
    k(a, b, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


def test_gemv_of_several_rows_or_a_bad_phase_is_a_type_error_at_the_line():
    @pl.jit
    def rows(
        a: pl.Tensor[[2, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        bias: pl.Tensor[[1, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[2, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.gemv_bias(a, b, bias)
        return out

    with pytest.raises(TypeCheckError, match="multiplies one row by a matrix"):
        rows(
            torch.zeros(2, 64).half(),
            torch.zeros(64, 64).half(),
            torch.zeros(1, 64),
            torch.zeros(2, 64),
            config=SIM,
        )

    @pl.jit
    def phase(
        a: pl.Tensor[[1, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.gemv(a, b, acc_phase="last")
        return out

    with pytest.raises(TypeCheckError, match="acc_phase must be one of"):
        phase(torch.zeros(1, 64).half(), torch.zeros(64, 64).half(), torch.zeros(1, 64), config=SIM)
