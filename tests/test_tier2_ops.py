"""Tier-2 ops end to end on a2a3sim: each kernel's numbers against torch."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
TALL = pl.Tensor[[512, 64], pl.FP32]
COLS = pl.Tensor[[1, 64], pl.FP32]
ROWS = pl.Tensor[[512, 1], pl.FP32]


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- reductions on tensors (tiled)


@pl.jit
def row_stats(x: TALL, mx: pl.Out[ROWS], total: pl.Out[ROWS], mn: pl.Out[ROWS]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="row_stats"):
        mx[:] = pl.row_max(x)
        total[:] = pl.row_sum(x)
        mn[:] = pl.row_min(x)
    return mx, total, mn


@pl.jit
def col_stats(x: TALL, total: pl.Out[COLS], mx: pl.Out[COLS]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="col_stats"):
        total[:] = pl.col_sum(x)
        mx[:] = pl.col_max(x)
    return total, mx


def test_row_reductions_of_a_tall_tensor_match_torch():
    x = rand(512, 64)
    mx, total, mn = torch.zeros(512, 1), torch.zeros(512, 1), torch.zeros(512, 1)
    row_stats(x, mx, total, mn, config=SIM)
    torch.testing.assert_close(mx, x.amax(1, keepdim=True), rtol=0, atol=0)
    torch.testing.assert_close(total, x.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mn, x.amin(1, keepdim=True), rtol=0, atol=0)


def test_column_reductions_of_a_tall_tensor_match_torch():
    x = rand(512, 64, seed=1)
    total, mx = torch.zeros(1, 64), torch.zeros(1, 64)
    col_stats(x, total, mx, config=SIM)
    torch.testing.assert_close(total, x.sum(0, keepdim=True), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(mx, x.amax(0, keepdim=True), rtol=0, atol=0)


# ---------------------------------------------------------------- broadcasts


@pl.jit
def row_broadcasts(
    x: TALL, v: ROWS, add: pl.Out[TALL], sub: pl.Out[TALL], mul: pl.Out[TALL], div: pl.Out[TALL]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="row_broadcasts"):
        add[:] = pl.row_expand_add(x, v)
        sub[:] = pl.row_expand_sub(x, v)
        mul[:] = pl.row_expand_mul(x, v)
        div[:] = pl.row_expand_div(x, v)
    return add, sub, mul, div


@pl.jit
def col_broadcasts(x: TALL, g: COLS, scaled: pl.Out[TALL], repeated: pl.Out[TALL]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="col_broadcasts"):
        scaled[:] = pl.col_expand_mul(x, g)
        repeated[:] = pl.col_expand(x, g)
    return scaled, repeated


def test_row_broadcasts_match_torch():
    x, v = rand(512, 64, seed=2), rand(512, 1, seed=3).abs() + 0.5
    outs = [torch.zeros(512, 64) for _ in range(4)]
    row_broadcasts(x, v, *outs, config=SIM)
    torch.testing.assert_close(torch.stack(outs), torch.stack([x + v, x - v, x * v, x / v]))


def test_column_broadcasts_of_a_tall_tensor_match_torch():
    x, g = rand(512, 64, seed=4), rand(1, 64, seed=5)
    scaled, repeated = torch.zeros(512, 64), torch.zeros(512, 64)
    col_broadcasts(x, g, scaled, repeated, config=SIM)
    torch.testing.assert_close(scaled, x * g, rtol=0, atol=0)
    torch.testing.assert_close(repeated, g.expand(512, 64), rtol=0, atol=0)


# ---------------------------------------------------------------- views, fills, casts


@pl.jit
def views(a: pl.Tensor[[64, 256], pl.FP32], out: pl.Out[pl.Tensor[[64, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="views"):
        for k in pl.range(2):
            k0 = k * 128
            k1 = 128 - k0
            out[:, k0 : k0 + 128] = pl.neg(a[:, k1 : k1 + 128])
        t = pl.load(a, [0, 0], [64, 256])
        pl.store(pl.slice(t, [16, 32], [8, 64]), [0, 0], out)
    return out


def test_slices_at_run_time_offsets_and_sub_tiles_match_torch():
    a = rand(64, 256, seed=6)
    out = torch.zeros(64, 256)
    views(a, out, config=SIM)
    want = torch.cat([-a[:, 128:], -a[:, :128]], dim=1)
    want[:16, :32] = a[8:24, 64:96]
    torch.testing.assert_close(out, want, rtol=0, atol=0)


@pl.jit
def fills(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[3, 16, 16], pl.FP32]], value: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="fills"):
        t = pl.load(x, [0, 0], [16, 16], valid_shape=[5, 9])
        lowest = pl.fillpad(t, pad_value=pl.PadValue.min)
        highest = pl.fillpad(t, pad_value=pl.PadValue.max)
        top = pl.row_max(lowest, pl.create_tile([16, 16], pl.FP32))
        pl.store(pl.reshape(pl.fillpad(t), [1, 16, 16]), [0, 0, 0], out)
        pl.store(
            pl.reshape(pl.row_expand_add(pl.full([16, 16], pl.FP32, value), top), [1, 16, 16]), [1, 0, 0], out
        )
        pl.store(
            pl.reshape(pl.minimum(highest, pl.full([16, 16], pl.FP32, 100.0)), [1, 16, 16]), [2, 0, 0], out
        )
    return out


def test_fillpad_and_full_match_torch():
    x = rand(16, 16, seed=7)
    out = torch.zeros(3, 16, 16)
    fills(x, out, 0.5, config=SIM)
    zero_padded = torch.zeros(16, 16)
    zero_padded[:5, :9] = x[:5, :9]
    torch.testing.assert_close(out[0], zero_padded, rtol=0, atol=0)
    top = torch.full((16, 1), -torch.inf)
    top[:5] = x[:5, :9].amax(1, keepdim=True)
    torch.testing.assert_close(out[1], 0.5 + top.expand(16, 16), rtol=0, atol=0)
    capped = torch.full((16, 16), 100.0)
    capped[:5, :9] = x[:5, :9]
    torch.testing.assert_close(out[2], capped, rtol=0, atol=0)


@pl.jit
def to_bf16(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="to_bf16"):
        out[:] = pl.cast(x, pl.BF16, mode="rint")
    return out


def test_cast_to_bf16_rounds_to_nearest_even_like_torch():
    x = rand(64, 64, seed=8) * 1000
    out = torch.zeros(64, 64, dtype=torch.bfloat16)
    to_bf16(x, out, config=SIM)
    assert torch.equal(out, x.to(torch.bfloat16))


# ---------------------------------------------------------------- matmul_acc, assembly, atomics


@pl.jit
def k_split(
    a: pl.Tensor[[128, 128], pl.FP16],
    b: pl.Tensor[[128, 64], pl.FP16],
    c: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_split"):
        acc = pl.matmul(a[:, 0:64], b[0:64, :])
        acc = pl.matmul_acc(acc, a[:, 64:128], b[64:128, :])
        c[:] = acc
    return c


def test_matmul_acc_on_tensors_matches_torch():
    a, b = rand(128, 128, seed=9).half(), rand(128, 64, seed=10).half()
    c = torch.zeros(128, 64)
    k_split(a, b, c, config=SIM)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-4, atol=1e-3)


@pl.jit
def accumulate(x: pl.Tensor[[64, 64], pl.FP32], out: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    for _ in pl.range(3):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_in"):
            pl.assemble(out, pl.mul(x, 2.0), [0, 0], atomic=pl.AtomicType.Add)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add_tile"):
        pl.assemble(out, pl.load(x, [0, 0], [32, 64]), [32, 0], atomic=pl.AtomicType.Add)
    return out


def test_atomic_assembles_add_into_global_memory_across_tasks():
    x = rand(64, 64, seed=11)
    out = torch.ones(64, 64)
    accumulate(x, out, config=SIM)
    want = 1 + 6 * x
    want[32:] += x[:32]
    torch.testing.assert_close(out, want)
    assert [t.kernel for t in accumulate.last_report.tasks] == ["add_in"] * 3 + ["add_tile"]


@pl.jit
def interleave(
    a: pl.Tensor[[8, 64], pl.FP32], b: pl.Tensor[[8, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="interleave"):
        rows = pl.create_tile([16, 64], pl.FP32)
        for i in pl.range(8):
            rows = pl.tile.assemble(rows, pl.load(a, [i, 0], [1, 64]), [2 * i, 0])
            pl.tile.assemble(rows, pl.load(b, [i, 0], [1, 64]), [2 * i + 1, 0])
        pl.store(rows, [0, 0], out)
    return out


def test_tile_assembly_interleaves_rows():
    a, b = rand(8, 64, seed=12), rand(8, 64, seed=13)
    out = torch.zeros(16, 64)
    interleave(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.stack([a, b], dim=1).reshape(16, 64), rtol=0, atol=0)


# ---------------------------------------------------------------- run-time valid shapes and if


@pl.jit
def tail_blocks(x: pl.Tensor[[100, 64], pl.FP32], out: pl.Out[pl.Tensor[[100, 64], pl.FP32]], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="tail_blocks"):
        for r0 in pl.range(0, n, 32):
            rows = pl.minimum(32, n - r0)
            t = pl.load(x, [r0, 0], [32, 64], valid_shape=[rows, 64])
            pl.store(pl.exp(t), [r0, 0], out)
    return out


@pytest.mark.parametrize("n", [100, 64, 7])
def test_a_loop_with_a_partial_last_block_reads_and_writes_only_valid_rows(n):
    x = rand(100, 64, seed=14)
    out = torch.full((100, 64), -1.0)
    tail_blocks(x, out, n, config=SIM)
    torch.testing.assert_close(out[:n], x[:n].exp())
    assert bool((out[n:] == -1).all())


@pl.jit
def blockwise(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="blockwise"):
        for i in pl.range(4):
            t = pl.load(x, [i * 16, 0], [16, 64])
            if i % 2 == 0:
                pl.store(pl.exp(t), [i * 16, 0], out)
            else:
                pl.store(pl.neg(t), [i * 16, 0], out)
    return out


@pl.jit
def dispatch(
    x: pl.Tensor[[64, 64], pl.FP32],
    flags: pl.Tensor[[1], pl.INT32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    if pl.read(flags, [0]) > 0:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="on_exp"):
            out[:] = pl.exp(x)
    else:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="on_neg"):
            out[:] = pl.neg(x)
    return out


def test_a_run_time_if_in_a_kernel_picks_an_arm_per_iteration():
    x = rand(64, 64, seed=15)
    out = torch.zeros(64, 64)
    blockwise(x, out, config=SIM)
    want = torch.cat([x[0:16].exp(), -x[16:32], x[32:48].exp(), -x[48:]])
    torch.testing.assert_close(out, want)


@pytest.mark.parametrize(("flag", "kernel"), [(1, "on_exp"), (0, "on_neg")])
def test_a_run_time_if_in_the_entry_launches_one_scope(flag, kernel):
    x = rand(64, 64, seed=16)
    out = torch.zeros(64, 64)
    dispatch(x, torch.tensor([flag], dtype=torch.int32), out, config=SIM)
    torch.testing.assert_close(out, x.exp() if flag else -x)
    assert [t.kernel for t in dispatch.last_report.tasks] == [kernel]


# ---------------------------------------------------------------- a mixed kernel


@pl.jit
def matmul_row_softmax(
    a: pl.Tensor[[128, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="attn", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        s = pl.matmul(a, b, out_dtype=pl.FP32)
        e = pl.exp(pl.row_expand_sub(s, pl.row_max(s)))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


def test_row_reductions_in_a_mixed_kernel_split_up_down_across_the_lanes():
    a, b = rand(128, 64, seed=17).half(), rand(64, 64, seed=18).half()
    out = torch.zeros(128, 64)
    matmul_row_softmax(a, b, out, config=SIM)
    torch.testing.assert_close(out, torch.softmax(a.float() @ b.float(), dim=1), rtol=1e-4, atol=1e-5)
