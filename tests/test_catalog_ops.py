"""The catalog's remainder, trigonometric, bitwise, comparison, selection, activation, carry,
partial, reduction and broadcast ops end to end on a2a3sim: at tile level and at tensor level (the
compiler tiles them), inside pl.at scopes, numbers against torch; one mixed pl.split kernel uses a
few of them on the vector side of a matmul."""

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

CFG = RunConfig(platform="a2a3sim")
R, C = 64, 32


def close(got, want, tol=1e-5):
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- elementwise additions


@pl.jit
def remainders_and_trig(
    x: pl.Tensor[[R, C], pl.FP32],
    y: pl.Tensor[[R, C], pl.FP32],
    tile_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    tensor_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [R, C])
        ty = pl.load(y, [0, 0], [R, C])
        tmp = pl.create_tile([R, C], pl.FP32)
        a = pl.add(pl.rem(tx, ty), pl.fmods(tx, 0.75))
        b = pl.add(pl.tile.rsqrt(pl.abs(ty), tmp), pl.cos(tx))
        pl.store(pl.add(a, pl.mul(b, pl.maximums(tx, 0.0))), [0, 0], tile_out)
        tensor_out[:] = (
            pl.fmod(x, y)
            + pl.rems(x, 0.75)
            + pl.sin(x)
            + pl.recip(y, high_precision=True)
            + pl.rsqrt(pl.abs(y), high_precision=True)
        )
    return tile_out, tensor_out


def test_remainders_trigonometry_and_precise_paths_match_torch():
    x, y = torch.randn(R, C) * 3, torch.rand(R, C) + 0.5
    tile_out, tensor_out = torch.zeros(R, C), torch.zeros(R, C)
    remainders_and_trig(x, y, tile_out, tensor_out, config=CFG)
    a = torch.remainder(x, y) + torch.fmod(x, 0.75)
    close(tile_out, a + (y.rsqrt() + x.cos()) * x.clamp(min=0))
    close(tensor_out, torch.fmod(x, y) + torch.remainder(x, 0.75) + x.sin() + 1 / y + y.rsqrt())


# ---------------------------------------------------------------- bitwise logic and shifts


@pl.jit
def bitwise(
    a: pl.Tensor[[R, C], pl.INT32],
    b: pl.Tensor[[R, C], pl.INT32],
    h: pl.Tensor[[R, C], pl.INT16],
    tile_out: pl.Out[pl.Tensor[[R, C], pl.INT32]],
    tensor_out: pl.Out[pl.Tensor[[R, C], pl.INT32]],
    not_out: pl.Out[pl.Tensor[[R, C], pl.INT16]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [R, C])
        tb = pl.load(b, [0, 0], [R, C])
        amount = pl.ands(tb, 7)
        pl.store(pl.xor(pl.or_(pl.shl(ta, amount), tb), pl.tile.shrs(ta, 2)), [0, 0], tile_out)
        tensor_out[:] = pl.xors(pl.and_(a, b), 0x5A5A) + pl.shr(a, pl.ands(b, 3)) + pl.ors(pl.shls(b, 1), 1)
        not_out[:] = pl.not_(h)
    return tile_out, tensor_out, not_out


def test_bitwise_ops_and_shifts_match_torch():
    a = torch.randint(-(2**20), 2**20, (R, C), dtype=torch.int32)
    b = torch.randint(-(2**20), 2**20, (R, C), dtype=torch.int32)
    h = torch.randint(-(2**15), 2**15, (R, C), dtype=torch.int16)
    outs = (
        torch.zeros(R, C, dtype=torch.int32),
        torch.zeros(R, C, dtype=torch.int32),
        torch.zeros(R, C, dtype=torch.int16),
    )
    bitwise(a, b, h, *outs, config=CFG)
    assert torch.equal(outs[0], ((a << (b & 7)) | b) ^ (a >> 2))
    assert torch.equal(outs[1], ((a & b) ^ 0x5A5A) + (a >> (b & 3)) + ((b << 1) | 1))
    assert torch.equal(outs[2], ~h)


# ---------------------------------------------------------------- comparisons, selections, activations


@pl.jit
def masks(
    x: pl.Tensor[[R, C], pl.FP32],
    y: pl.Tensor[[R, C], pl.FP32],
    w: pl.Tensor[[R, C], pl.FP32],
    tile_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    tensor_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [R, C])
        ty = pl.load(y, [0, 0], [R, C])
        tw = pl.load(w, [0, 0], [R, C])
        bigger = pl.sel(tx > ty, tx, ty)
        clipped = pl.sels(pl.cmps(tx, 0.5, cmp_type="le"), tx, 0.5)
        leaky = pl.add(pl.prelu(tx, tw), pl.lrelu(ty, 0.1))
        pl.store(pl.add(pl.add(bigger, clipped), leaky), [0, 0], tile_out)
        tensor_out[:] = (
            pl.cast(x == y, pl.FP32)
            + pl.cast(pl.cmp(x, y, cmp_type=pl.CmpType.ge), pl.FP32) * 2.0
            + pl.cast(0.0 < x, pl.FP32) * 4.0  # noqa: SIM300  (a scalar on the left is the form tested)
        )
    return tile_out, tensor_out


def test_comparisons_selections_and_leaky_rectifiers_match_torch():
    x, y, w = torch.randn(R, C), torch.randn(R, C), torch.rand(R, C)
    y[:4] = x[:4]  # some equal elements
    tile_out, tensor_out = torch.zeros(R, C), torch.zeros(R, C)
    masks(x, y, w, tile_out, tensor_out, config=CFG)
    leaky = torch.where(x > 0, x, x * w) + torch.nn.functional.leaky_relu(y, 0.1)
    close(tile_out, torch.maximum(x, y) + x.clamp(max=0.5) + leaky)
    close(tensor_out, (x == y).float() + (x >= y).float() * 2 + (x > 0).float() * 4)


# ---------------------------------------------------------------- carries and partial ops


@pl.jit
def carries_and_parts(
    x: pl.Tensor[[R, C], pl.FP32],
    y: pl.Tensor[[R, C], pl.FP32],
    z: pl.Tensor[[R, C], pl.FP32],
    carry_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    part_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    tensor_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [R, C])
        ty = pl.load(y, [0, 0], [R, C])
        tz = pl.load(z, [0, 0], [R, C])
        pl.store(pl.add(pl.addc(tx, ty, tz), pl.subsc(tx, 1.5, tz)), [0, 0], carry_out)
        head = pl.load(y, [0, 0], [R, C], valid_shape=[R // 2, C])
        pl.store(pl.add(pl.part_add(tx, head), pl.part_max(head, tz)), [0, 0], part_out)
        tensor_out[:] = pl.part_mul(x, y) + pl.part_min(x, z)
    return carry_out, part_out, tensor_out


def test_carry_and_partial_ops_match_torch():
    x, y, z = torch.randn(R, C), torch.randn(R, C), torch.randn(R, C)
    outs = torch.zeros(R, C), torch.zeros(R, C), torch.zeros(R, C)
    carries_and_parts(x, y, z, *outs, config=CFG)
    close(outs[0], (x + y + z) + (x - 1.5 + z))
    half = R // 2
    part_add = torch.cat([x[:half] + y[:half], x[half:]])
    part_max = torch.cat([torch.maximum(y[:half], z[:half]), z[half:]])
    close(outs[1], part_add + part_max)
    close(outs[2], x * y + torch.minimum(x, z))


# ---------------------------------------------------------------- reductions


@pl.jit
def reductions(
    x: pl.Tensor[[R, C], pl.FP32],
    rows: pl.Out[pl.Tensor[[R, 4], pl.FP32]],
    cols: pl.Out[pl.Tensor[[4, C], pl.FP32]],
    args: pl.Out[pl.Tensor[[R, 2], pl.INT32]],
    col_args: pl.Out[pl.Tensor[[2, C], pl.INT32]],
    tensor_cols: pl.Out[pl.Tensor[[3, C], pl.FP32]],
    tensor_args: pl.Out[pl.Tensor[[R, 1], pl.INT32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [R, C])
        tmp = pl.create_tile([R, C], pl.FP32)
        pl.store(pl.row_prod(tx), [0, 0], rows)
        pl.store(pl.row_prod(tx, tmp), [0, 1], rows)
        pl.store(pl.row_min(tx, tmp_tile=tmp), [0, 2], rows)
        pl.store(pl.row_sum(tx, tmp), [0, 3], rows)
        pl.store(pl.col_prod(tx), [0, 0], cols)
        pl.store(pl.col_min(tx, tmp_tile=tmp), [1, 0], cols)
        pl.store(pl.col_sum(tx, tmp_tile=tmp), [2, 0], cols)
        pl.store(pl.col_max(tx), [3, 0], cols)
        pl.store(pl.row_argmax(tx, tmp), [0, 0], args)
        pl.store(pl.row_argmin(tx), [0, 1], args)
        pl.store(pl.col_argmax(tx), [0, 0], col_args)
        pl.store(pl.col_argmin(tx, tmp_tile=tmp), [1, 0], col_args)
        tensor_cols[0:1, :] = pl.col_min(x)
        tensor_cols[1:2, :] = pl.col_prod(x)
        tensor_cols[2:3, :] = pl.col_sum(x)
        tensor_args[:] = pl.row_argmin(x * x)
    return rows, cols, args, col_args, tensor_cols, tensor_args


def test_reductions_match_torch_at_both_levels():
    x = torch.rand(R, C) * 0.2 + 0.9
    x[3, :] = -x[3, :]  # one row of negatives
    outs = (
        torch.zeros(R, 4),
        torch.zeros(4, C),
        torch.zeros(R, 2, dtype=torch.int32),
        torch.zeros(2, C, dtype=torch.int32),
        torch.zeros(3, C),
        torch.zeros(R, 1, dtype=torch.int32),
    )
    reductions(x, *outs, config=CFG)
    rows, cols, args, col_args, tensor_cols, tensor_args = outs
    close(rows, torch.cat([x.prod(1, True), x.prod(1, True), x.amin(1, True), x.sum(1, True)], 1), 1e-4)
    close(cols, torch.cat([x.prod(0, True), x.amin(0, True), x.sum(0, True), x.amax(0, True)]), 1e-4)
    assert torch.equal(args, torch.cat([x.argmax(1, True), x.argmin(1, True)], 1).int())
    assert torch.equal(col_args, torch.cat([x.argmax(0, True), x.argmin(0, True)]).int())
    close(tensor_cols, torch.cat([x.amin(0, True), x.prod(0, True), x.sum(0, True)]), 1e-4)
    assert torch.equal(tensor_args, (x * x).argmin(1, True).int())


@pl.jit
def partial_reductions(
    x: pl.Tensor[[16, 32], pl.FP32],
    n: pl.Scalar[pl.INDEX],
    prods: pl.Out[pl.Tensor[[16, 1], pl.FP32]],
    args: pl.Out[pl.Tensor[[16, 1], pl.INT32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32], valid_shape=[16, n])
        pl.store(pl.row_prod(t), [0, 0], prods)
        pl.store(pl.row_argmax(t), [0, 0], args)
    return prods, args


def test_a_reduction_of_a_partial_tile_sees_only_its_valid_columns():
    x = torch.rand(16, 32) + 0.5
    x[:, 20:] = 100.0  # past the valid columns: would win the argmax and swell the product
    prods, args = torch.zeros(16, 1), torch.zeros(16, 1, dtype=torch.int32)
    partial_reductions(x, 20, prods, args, config=CFG)
    close(prods, x[:, :20].prod(1, True), 1e-4)
    assert torch.equal(args, x[:, :20].argmax(1, True).int())


@pl.jit
def large_column_min(x: pl.Tensor[[1024, 64], pl.FP32], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_min(pl.abs(x))
    return out


def test_a_column_min_of_a_tensor_larger_than_a_block_joins_the_blocks():
    x = torch.randn(1024, 64)
    out = torch.zeros(1, 64)
    large_column_min(x, out, config=CFG)
    close(out, x.abs().amin(0, True))


# ---------------------------------------------------------------- broadcasts


@pl.jit
def broadcasts(
    x: pl.Tensor[[R, C], pl.FP32],
    col: pl.Tensor[[R, 1], pl.FP32],
    row: pl.Tensor[[1, C], pl.FP32],
    tile_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    tensor_out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [R, C])
        tc = pl.load(col, [0, 0], [R, 1])
        tr = pl.load(row, [0, 0], [1, C])
        a = pl.add(pl.row_expand_max(tx, tc), pl.row_expand_min(tx, tc))
        b = pl.add(pl.col_expand_add(tx, tr), pl.col_expand_sub(tx, tr))
        c = pl.add(pl.col_expand_div(tx, tr), pl.col_expand_max(tx, tr))
        d = pl.add(pl.col_expand_min(tx, tr), pl.row_expand_expdif(tx, tc))
        e = pl.add(pl.col_expand_expdif(tx, tr), pl.expand_clone(tr, [R, C]))
        pl.store(pl.add(pl.add(pl.add(a, b), pl.add(c, d)), pl.add(e, pl.expands(tx, 0.5))), [0, 0], tile_out)
        tensor_out[:] = (
            pl.maximum(x, col)
            + pl.minimum(x, row)
            + pl.row_expand_expdif(x, col)
            + pl.expand_clone(row, [R, C])
        )
    return tile_out, tensor_out


def test_broadcasts_match_torch():
    x, col, row = torch.randn(R, C), torch.randn(R, 1), torch.rand(1, C) + 0.5
    tile_out, tensor_out = torch.zeros(R, C), torch.zeros(R, C)
    broadcasts(x, col, row, tile_out, tensor_out, config=CFG)
    a = torch.maximum(x, col) + torch.minimum(x, col)
    b = (x + row) + (x - row)
    c = x / row + torch.maximum(x, row)
    d = torch.minimum(x, row) + torch.exp(x - col)
    e = torch.exp(x - row) + row.expand(R, C)
    close(tile_out, a + b + c + d + e + 0.5, 1e-4)
    close(tensor_out, torch.maximum(x, col) + torch.minimum(x, row) + torch.exp(x - col) + row, 1e-4)


# ---------------------------------------------------------------- a mixed kernel


@pl.jit
def mixed(
    a: pl.Tensor[[128, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    scale: pl.Tensor[[1, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
    best: pl.Out[pl.Tensor[[128, 1], pl.INT32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        scores = pl.col_expand_mul(acc, scale)
        kept = pl.maximum(scores, scores * 0.05)  # leaky: tensor-level (pl.lrelu is a tile op)
        out[:] = pl.row_expand_expdif(kept, pl.row_max(kept)) + pl.cast(scores > 0.0, pl.FP32)
        best[:] = pl.row_argmax(scores)
    return out, best


def test_a_mixed_split_kernel_runs_the_new_ops_on_its_vector_lanes():
    a, b, scale = torch.randn(128, 64).half(), torch.randn(64, 64).half(), torch.rand(1, 64) + 0.5
    out, best = torch.zeros(128, 64), torch.zeros(128, 1, dtype=torch.int32)
    mixed(a, b, scale, out, best, config=CFG)
    scores = (a.float() @ b.float()) * scale
    kept = torch.where(scores > 0, scores, scores * 0.05)
    close(out, torch.exp(kept - kept.amax(1, True)) + (scores > 0).float(), 1e-3)
    assert torch.equal(best, scores.argmax(1, True).int())
