"""Constructs the models track leans on (issue #13), each on a2a3sim against torch: scalars read
from global memory bounding loops and conditions inside a mixed (cube + vector) kernel, and a
flash-decode loop whose cube and vector halves hand tiles back and forth."""

import pytest
import torch

import pypto.language as pl

G, D, BLK, S = 2, 64, 64, 256


@pl.jit
def flash_decode(
    q: pl.Tensor[[G, D], pl.FP32],
    k: pl.Tensor[[S, D], pl.FP32],
    v: pl.Tensor[[S, D], pl.FP32],
    seq_len: pl.Tensor[[1], pl.INT32],
    out: pl.Out[pl.Tensor[[G, D], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE)], name_hint="attn"):
        n = pl.cast(pl.read(seq_len, [0]), pl.INDEX)  # bounds the loop on both halves
        q_l = pl.move(pl.load(q, [0, 0], [G, D], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        m = pl.full([G, 1], pl.FP32, -1e30)
        row_sum = pl.full([G, 1], pl.FP32, 0.0)
        acc = pl.full([G, D], pl.FP32, 0.0)
        for s0 in pl.range(0, n, BLK):
            valid = pl.min(BLK, n - s0)
            k_mat = pl.load(k, [s0, 0], [BLK, D], target_memory=pl.Mem.Mat, valid_shape=[valid, D])
            scores = pl.move(
                pl.matmul(q_l, pl.move(k_mat, target_memory=pl.Mem.Right), b_trans=True),
                target_memory=pl.Mem.Vec,
            )
            scores = pl.fillpad(pl.set_validshape(pl.mul(scores, 0.125), G, valid), pad_value=pl.PadValue.min)
            tmp = pl.create_tile([G, BLK], pl.FP32)
            m_new = pl.maximum(m, pl.row_max(scores, tmp))
            p = pl.exp(pl.row_expand_sub(scores, m_new))
            alpha = pl.exp(pl.sub(m, m_new))
            row_sum = pl.add(pl.mul(row_sum, alpha), pl.row_sum(p, tmp))
            v_mat = pl.load(v, [s0, 0], [BLK, D], target_memory=pl.Mem.Mat, valid_shape=[valid, D])
            p_l = pl.move(pl.move(p, target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            pv = pl.move(pl.matmul(p_l, pl.move(v_mat, target_memory=pl.Mem.Right)), target_memory=pl.Mem.Vec)
            acc = pl.add(pl.row_expand_mul(acc, alpha), pv)
            m = m_new
        pl.store(pl.row_expand_div(acc, row_sum), [0, 0], out)
    return out


@pytest.mark.parametrize("n", [256, 100, 7])
def test_a_scalar_read_in_a_mixed_kernel_bounds_the_loop_on_both_halves(n):
    torch.manual_seed(n)
    q, k, v = torch.randn(G, D), torch.randn(S, D), torch.randn(S, D)
    out = torch.zeros(G, D)
    flash_decode(q, k, v, torch.tensor([n], dtype=torch.int32), out)
    want = torch.softmax(q @ k[:n].T * 0.125, -1) @ v[:n]
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert flash_decode.cache_info().misses == 1


@pl.jit
def scaled_if_positive(
    a: pl.Tensor[[64, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    flag: pl.Tensor[[1], pl.INT32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        f = pl.read(flag, [0])  # rebound on the vector side, read by the if there
        a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.move(pl.matmul(a_l, b_r), target_memory=pl.Mem.Vec)
        if f > 0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.mul(acc, 2.0)
        else:
            r = pl.neg(acc)
        pl.store(r, [0, 0], out)
    return out


@pytest.mark.parametrize("f", [1, 0])
def test_a_scalar_read_in_a_mixed_kernel_decides_an_if_on_the_vector_side(f):
    torch.manual_seed(f)
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    out = torch.zeros(64, 64)
    scaled_if_positive(a, b, torch.tensor([f], dtype=torch.int32), out)
    prod = a.float() @ b.float()
    torch.testing.assert_close(out, 2 * prod if f else -prod, rtol=1e-3, atol=1e-3)


@pl.jit.inline
def times_two_plus(x, y):
    return pl.add(pl.mul(x, 2.0), y)


@pl.jit.inline
def rows_of(x, r0, rows):  # spliced: a view of the caller's tensor
    return x[r0 : r0 + rows, :]


@pl.jit
def spmd_with_inline_helpers(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    for i in pl.spmd(4, name_hint="rows"):  # ops through inline helpers: still the kernel form
        out[i * 16 : i * 16 + 16, :] = times_two_plus(rows_of(x, i * 16, 16), 1.0)
    return out


def test_an_spmd_body_of_inline_helper_calls_is_itself_the_kernel():
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    spmd_with_inline_helpers(x, out)
    torch.testing.assert_close(out, 2 * x + 1)
    assert sorted(t.block for t in spmd_with_inline_helpers.last_report.tasks) == [0, 1, 2, 3]
    assert {t.kernel for t in spmd_with_inline_helpers.last_report.tasks} == {"rows"}


@pl.jit.inline
def exp_scope(x, out):  # spliced, but it opens a scope: a body calling it dispatches
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_rows"):
        i = pl.get_block_idx()
        out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])
    return out


@pl.jit
def spmd_dispatching_through_an_inline(
    x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]
):
    with pl.spmd(4):
        out = exp_scope(x, out)
    return out


def test_an_inline_helper_that_opens_a_scope_makes_the_spmd_body_a_dispatch():
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    spmd_dispatching_through_an_inline(x, out)
    torch.testing.assert_close(out, x.exp())
    assert {t.kernel for t in spmd_dispatching_through_an_inline.last_report.tasks} == {"exp_rows"}


A16, B16, T64 = pl.Tensor[[64, 128], pl.FP16], pl.Tensor[[128, 64], pl.FP16], pl.Tensor[[64, 64], pl.FP32]


@pl.jit.incore
def split_matmul_bias(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    pl.func_attr({"split": pl.SplitMode.UP_DOWN})
    out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


@pl.jit
def calls_split_helper(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    out = split_matmul_bias(a, b, bias, out)
    return out


@pl.jit
def split_scope(a: A16, b: B16, bias: T64, out: pl.Out[T64]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def test_an_incore_helper_opening_with_func_attr_split_runs_as_the_split_scope_does():
    torch.manual_seed(0)
    a, b = torch.randn(64, 128, dtype=torch.float16), torch.randn(128, 64, dtype=torch.float16)
    bias = torch.randn(64, 64)
    helper_out, scope_out = torch.zeros(64, 64), torch.zeros(64, 64)
    calls_split_helper(a, b, bias, helper_out)
    split_scope(a, b, bias, scope_out)
    assert torch.equal(helper_out, scope_out)
    torch.testing.assert_close(helper_out, a.float() @ b.float() + bias, rtol=1e-3, atol=1e-3)
    helper, scope = calls_split_helper.last_report, split_scope.last_report
    assert helper.busy_cycles["cg0.AIV1"] == helper.busy_cycles["cg0.AIV0"]  # both lanes take half
    assert helper.busy_cycles == scope.busy_cycles
