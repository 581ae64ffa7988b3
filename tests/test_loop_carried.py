"""Loop-carried values end to end on a2a3sim: each kernel's numbers against torch."""

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
X = pl.Tensor[[128, 64], pl.FP32]
BLOCK = pl.Tensor[[32, 64], pl.FP32]


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def blocks(x: torch.Tensor) -> torch.Tensor:
    """``x`` as its four [32, 64] row blocks."""
    return x.view(4, 32, 64)


@pl.jit
def running_sum(x: X, out: pl.Out[BLOCK]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for i in pl.range(4):
            acc = pl.add(acc, pl.load(x, [i * 32, 0], [32, 64]))
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def running_max(x: X, out: pl.Out[BLOCK]):
    with pl.at(level=pl.Level.CORE_GROUP):
        mx = pl.load(x, [0, 0], [32, 64])
        for i in pl.range(1, 4):
            mx = pl.maximum(mx, pl.load(x, [i * 32, 0], [32, 64]))
        pl.store(mx, [0, 0], out)
    return out


@pl.jit
def k_chunks(
    a: pl.Tensor[[32, 128], pl.FP32],
    b: pl.Tensor[[128, 32], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 32], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_left = pl.move(pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_right = pl.move(pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(a_left, b_right)
        for k in pl.range(1, 4):
            a_mat = pl.load(a, [0, k * 32], [32, 32], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [k * 32, 0], [32, 32], target_memory=pl.Mem.Mat)
            a_left_k = pl.move(a_mat, target_memory=pl.Mem.Left)
            b_right_k = pl.move(b_mat, target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, a_left_k, b_right_k)
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def counted(x: X, out: pl.Out[BLOCK]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = 0
        for _i in pl.range(0, 8, 3):
            n = n + 1
        acc = pl.full([32, 64], pl.FP32, 0.0)
        for j in pl.range(n):
            acc = pl.add(acc, pl.load(x, [j * 32, 0], [32, 64]))
        pl.store(acc, [0, 0], out)
    return out


@pl.jit
def explicit(x: X, total: pl.Out[BLOCK], top: pl.Out[BLOCK]):
    with pl.at(level=pl.Level.CORE_GROUP):
        first = pl.load(x, [0, 0], [32, 64])
        for i, (s, m) in pl.range(1, 4, init_values=(first, first)):
            t = pl.load(x, [i * 32, 0], [32, 64])
            s, m = pl.yield_(pl.add(s, t), pl.maximum(m, t))
        pl.store(s, [0, 0], total)
        pl.store(m, [0, 0], top)
    return total, top


@pl.jit
def zero_trip(x: X, out: pl.Out[BLOCK]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [32, 64])
        for _i in pl.range(2, 2):
            acc = pl.add(acc, acc)
        pl.store(acc, [0, 0], out)
    return out


def test_a_running_sum_of_row_blocks_matches_torch():
    x, out = rand(128, 64), torch.zeros(32, 64)
    running_sum(x, out, config=SIM)
    torch.testing.assert_close(out, blocks(x).sum(0))


def test_a_running_max_matches_torch():
    x, out = rand(128, 64, seed=1), torch.zeros(32, 64)
    running_max(x, out, config=SIM)
    torch.testing.assert_close(out, blocks(x).amax(0))


def test_matmul_acc_accumulates_k_chunks_in_a_loop():
    a, b, out = rand(32, 128, seed=2), rand(128, 32, seed=3), torch.zeros(32, 32)
    k_chunks(a, b, out, config=SIM)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)


def test_a_carried_scalar_counter_bounds_a_later_loop():
    x, out = rand(128, 64, seed=4), torch.zeros(32, 64)
    counted(x, out, config=SIM)  # n = 3 (i = 0, 3, 6)
    torch.testing.assert_close(out, blocks(x)[:3].sum(0))


def test_the_explicit_init_values_and_yield_form_carries_two_tiles():
    x, total, top = rand(128, 64, seed=5), torch.zeros(32, 64), torch.zeros(32, 64)
    explicit(x, total, top, config=SIM)
    torch.testing.assert_close(total, blocks(x).sum(0))
    torch.testing.assert_close(top, blocks(x).amax(0))


def test_a_loop_that_runs_no_iteration_leaves_the_init_value():
    x, out = rand(128, 64, seed=6), torch.zeros(32, 64)
    zero_trip(x, out, config=SIM)
    torch.testing.assert_close(out, x[:32])


def test_a_carried_tensor_inside_a_scope_is_tiled_like_any_other_value():
    # Issue #12 item 2: this was a "loop-carried tensor inside a scope" ParseError.
    @pl.jit
    def tensor_sum(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.mul(x, 0.0)
            for _i in pl.range(4):
                acc = pl.add(acc, x)
            out[:] = acc
        return out

    x, out = rand(128, 64, seed=8), torch.zeros(128, 64)
    tensor_sum(x, out, config=SIM)
    torch.testing.assert_close(out, x * 4)


@pl.jit
def host_counter(x: X, out: pl.Out[X]):
    n = 0
    for _i in pl.range(3):
        n = n + 1
    for j in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [j * 32, 0], [32, 64])
            pl.store(pl.exp(t), [j * 32, 0], out)
    return out


def test_an_orchestration_counter_bounds_a_loop_of_tasks():
    x, out = rand(128, 64, seed=7), torch.zeros(128, 64)
    host_counter(x, out, config=SIM)
    torch.testing.assert_close(out[:96], x[:96].exp())
    assert not out[96:].any()


@pl.jit
def mixed_running_sum(
    a: pl.Tensor[[512, 128], pl.FP16],
    b: pl.Tensor[[128, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=1)],
        name_hint="mixed_sum",
    ):
        b_r = pl.move(pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        total = pl.full([128, 128], pl.FP32, 0.0)
        for i in pl.range(4):
            a_l = pl.move(
                pl.load(a, [i * 128, 0], [128, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
            )
            total = pl.add(total, pl.move(pl.matmul(a_l, b_r), target_memory=pl.Mem.Vec))
        pl.store(total, [0, 0], out)
    return out


def test_a_vector_tile_carried_through_a_split_mixed_loop_is_halved_per_lane():
    torch.manual_seed(0)
    a, b = torch.randn(512, 128, dtype=torch.float16), torch.randn(128, 128, dtype=torch.float16)
    out = torch.zeros(128, 128)
    mixed_running_sum(a, b, out)
    want = sum(a[i * 128 : (i + 1) * 128].float() @ b.float() for i in range(4))
    assert torch.allclose(out, want, rtol=1e-3, atol=1e-2)
    aiv = {f.name: f for f in mixed_running_sum.lower().functions.values()}["mixed_sum_aiv"]
    loop = next(s for s in aiv.body if getattr(s, "iter_args", ()))
    assert loop.iter_args[0].type.shape == (64, 128)  # each lane carries its half
