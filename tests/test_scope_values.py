"""Tensor values inside a ``pl.at`` scope across the statements that split its tensor code, on
a2a3sim against torch: a value computed before a loop and read in it, a tensor leaving a run-time
if (the first K block of a matmul accumulation), a matmul accumulated into a tensor a loop
carries, and index arithmetic between tensor statements."""

import torch

import pypto.language as pl
from pypto.ir import Assign
from pypto.ir.nodes import walk_stmts
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


M, K, N, KB, NB = 16, 512, 256, 128, 128


@pl.jit
def projection(
    a: pl.Tensor[[M, K], pl.BF16], w: pl.Tensor[[K, N], pl.BF16], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    for n0 in pl.parallel(0, N, NB):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="projection"):
            acc = pl.create_tensor([M, NB], dtype=pl.FP32)
            for kb in pl.pipeline(0, K // KB, stage=2):
                k0 = kb * KB
                a_k = a[:, k0 : k0 + KB]
                w_k = w[k0 : k0 + KB, n0 : n0 + NB]
                if k0 == 0:  # noqa: SIM108 (PyPTO's idiom: the first K block starts the accumulator)
                    acc = pl.matmul(a_k, w_k, out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, a_k, w_k)
            out = pl.assemble(out, acc, [0, n0])
    return out


def test_a_k_loop_that_starts_its_accumulator_in_an_if_matches_torch():
    a, w = rand(M, K, dtype=torch.bfloat16), rand(K, N, seed=1, dtype=torch.bfloat16)
    out = torch.zeros(M, N)
    projection(a, w, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ w.float(), rtol=1e-3, atol=1e-3)


@pl.jit
def row_normalized(x: pl.Tensor[[32, 256], pl.FP32], out: pl.Out[pl.Tensor[[32, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="row_normalized"):
        total = pl.row_sum(pl.exp(x))
        for c in pl.range(4):
            c0 = c * 64
            out = pl.assemble(out, pl.row_expand_div(pl.exp(x[:, c0 : c0 + 64]), total), [0, c0])
    return out


def test_a_value_computed_before_a_loop_is_read_in_it():
    x, out = rand(32, 256), torch.zeros(32, 256)
    row_normalized(x, out, config=SIM)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


@pl.jit
def halves(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="halves"):
        for i in pl.range(2):
            y = pl.exp(x[i * 32 : i * 32 + 32, :])
            row = i * 32  # index arithmetic between two tensor statements
            out = pl.assemble(out, pl.add(y, 1.0), [row, 0])
    return out


def test_index_arithmetic_between_tensor_statements_keeps_them_together():
    x, out = rand(64, 32), torch.zeros(64, 32)
    halves(x, out, config=SIM)
    torch.testing.assert_close(out, x.exp() + 1)


@pl.jit
def scaled_twice(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scaled_twice"):
        cols = x[:, 0:32]  # a view read again after the loop below
        acc = pl.mul(cols, 0.0)
        for _ in pl.range(3):
            acc = pl.add(acc, cols)
        out = pl.assemble(out, pl.add(acc, cols), [0, 0])
        out = pl.assemble(out, cols, [0, 32])
    return out


def test_a_view_read_past_a_loop_is_made_again_there():
    x, out = rand(16, 64), torch.zeros(16, 64)
    scaled_twice(x, out, config=SIM)
    torch.testing.assert_close(out, torch.cat([x[:, :32] * 4, x[:, :32]], dim=1))


@pl.jit
def projection_of_run_time_depth(
    a: pl.Tensor[[M, K], pl.BF16],
    w: pl.Tensor[[K, N], pl.BF16],
    depth: pl.Tensor[[1], pl.INT32],
    out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
):
    for n0 in pl.parallel(0, N, NB):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="projection"):
            blocks = pl.read(depth, 0)
            acc = pl.create_tensor([M, NB], dtype=pl.FP32)
            for kb in pl.range(0, blocks):  # a run-time trip count: the loop stays a loop
                k0 = kb * KB
                a_k = a[:, k0 : k0 + KB]
                w_k = w[k0 : k0 + KB, n0 : n0 + NB]
                if k0 == 0:  # noqa: SIM108 (PyPTO's idiom: the first K block starts the accumulator)
                    acc = pl.matmul(a_k, w_k, out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, a_k, w_k)
            out = pl.assemble(out, acc, [0, n0])
    return out


def homes_and_allocations(program):
    homes = {name for fn in program.functions.values() for name in fn.attrs.get("homes", ())}
    entry = next(fn for fn in program.functions.values() if fn.name.startswith("projection"))
    allocations = [
        s.target.name
        for s in walk_stmts(entry.body)
        if isinstance(s, Assign) and getattr(s.value, "op", None) == "tensor.create"
    ]
    return homes, allocations


def test_the_arms_of_the_first_k_block_if_write_the_accumulators_home_itself():
    a, w = rand(M, K, dtype=torch.bfloat16), rand(K, N, seed=1, dtype=torch.bfloat16)
    depth = torch.tensor([K // KB], dtype=torch.int32)
    program = projection_of_run_time_depth.lower(a, w, depth, torch.zeros(M, N))
    homes, allocations = homes_and_allocations(program)
    assert len(homes) == 1  # the loop's; the if needs none of its own, and nothing copies between them
    # (the loop may run no iteration, so the initial tensor is allocated too and written there)
    assert set(homes) <= set(allocations)
    out = torch.zeros(M, N)
    projection_of_run_time_depth(a, w, depth, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ w.float(), rtol=1e-3, atol=1e-3)


def test_a_k_loop_of_constant_bounds_keeps_its_accumulator_on_chip():
    # Unrolled, the K blocks form one region: the accumulator stays in the cube's Acc, no home,
    # no allocation, no crossing to the vector lanes.
    a, w = rand(M, K, dtype=torch.bfloat16), rand(K, N, seed=1, dtype=torch.bfloat16)
    program = projection.lower(a, w, torch.zeros(M, N))
    assert homes_and_allocations(program) == (set(), [])
    kinds = {fn.kind.name for fn in program.functions.values()}
    assert kinds == {"Orchestration", "AIC"}


CHUNK = 128


@pl.jit
def k_chunks(
    x: pl.Tensor[[128, 3 * CHUNK], pl.FP16],
    y: pl.Tensor[[3 * CHUNK, 128], pl.FP16],
    z: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="k_chunks"):
        total = pl.matmul(x[:, 0:CHUNK], y[0:CHUNK, :], out_dtype=pl.FP32)
        for j in pl.range(1, 3):
            lo = j * CHUNK
            total = pl.matmul_acc(total, x[:, lo : lo + CHUNK], y[lo : lo + CHUNK, :])
        z[:] = total
    return z


def test_a_first_block_then_a_k_loop_of_matmul_acc_runs_with_the_default_ring():
    # With a home the [128, 128] FP32 partial sum crossed to the vector lanes each block, and the
    # default two-slot ring of such tiles did not fit beside them (a MemoryBudgetError).
    x, y = rand(128, 3 * CHUNK, dtype=torch.float16), rand(3 * CHUNK, 128, seed=2, dtype=torch.float16)
    z = torch.zeros(128, 128)
    k_chunks(x, y, z, config=SIM)
    torch.testing.assert_close(z, x.float() @ y.float(), rtol=1e-2, atol=1e-2)
    kinds = {fn.kind.name for fn in k_chunks.lower(x, y, z).functions.values()}
    assert kinds == {"Orchestration", "AIC"}
