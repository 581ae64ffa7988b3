"""Kernels in the explicit mixed form: every operator of the seed page's Step 3 table."""

import pypto.language as pl

UP_DOWN = pl.SplitMode.UP_DOWN


@pl.jit
def explicit(
    a: pl.Tensor[[64, 128], pl.FP16],
    b: pl.Tensor[[128, 64], pl.FP16],
    bias: pl.Tensor[[64, 64], pl.FP32],
    w: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    back: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="explicit"):
        pl.aic_initialize_pipe(dir_mask=3, slot_size=16384, slot_num=2)
        a_l = pl.move(pl.load(a, [0, 0], [64, 128], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [128, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(a_l, b_r)
        # Hand-written pipe: push the cube's tile, each lane pops its half, frees it, pushes back.
        pl.tpush_to_aiv(acc, split=UP_DOWN)
        for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
            pl.aiv_initialize_pipe(dir_mask=3, slot_size=16384, slot_num=2)
            half = pl.tpop_from_aic(shape=[32, 64], dtype=pl.FP32, split=UP_DOWN)
            y = pl.add(half, pl.load(bias, [aiv_id * 32, 0], [32, 64]))
            pl.tfree_to_aic(half)
            pl.tpush_to_aic(y, split=UP_DOWN)
        whole = pl.tpop_from_aiv(shape=[64, 64], dtype=pl.FP32, split=UP_DOWN)
        w_r = pl.move(pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        again = pl.matmul(pl.move(whole, target_memory=pl.Mem.Left), w_r)
        pl.tfree_to_aiv(whole)
        pl.store(again, [0, 0], back)
        # Boundary form, named inside the region: the split is the region's mode.
        for aiv_id in pl.split_aiv(2, mode=UP_DOWN):
            acc_v = pl.aiv_shard(acc)
            z = pl.exp(acc_v)
            pl.store(z, [aiv_id * 32, 0], out)
            gathered = pl.aic_gather(z)
        pl.store(pl.matmul(pl.move(gathered, target_memory=pl.Mem.Left), w_r), [0, 0], back)
    return out, back
