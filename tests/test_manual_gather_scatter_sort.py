"""Gather, scatter and sort of PyPTO's manual end to end on a2a3sim, against torch: ``pl.gather``,
``pl.scatter``, ``pl.scatter_update`` (tensors, tiled by rows, and tiles), ``pl.mgather`` /
``pl.mscatter`` (global memory by an index tile, with per-row race checks), ``pl.gatherb``,
``pl.paged_gather``, ``pl.sort32`` and ``pl.mrgsort``; and the errors bad indices get."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, RaceError, TypeCheckError
from pypto.runtime import RunConfig
from pypto_sim_a2a3 import OutOfBoundsError, UnsortedRunError

SIM = RunConfig(platform="a2a3sim")


def gen(seed):
    return torch.Generator().manual_seed(seed)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=gen(seed))


# ---------------------------------------------------------------- pl.gather, pl.scatter


@pl.jit
def pick_and_place(
    x: pl.Tensor[[1024, 64], pl.FP32],
    idx: pl.Tensor[[1024, 8], pl.INT32],
    vals: pl.Tensor[[1024, 8], pl.FP32],
    picked: pl.Out[pl.Tensor[[1024, 8], pl.FP32]],
    placed: pl.Out[pl.Tensor[[1024, 64], pl.FP32]],
    kept: pl.Out[pl.Tensor[[1024, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        scaled = pl.mul(x, 2.0)
        picked[:] = pl.gather(scaled, idx)
        placed[:] = pl.scatter(scaled, idx, vals)
        kept[:] = scaled  # the scatter wrote a copy: the input is unchanged
    return picked, placed, kept


def test_gather_and_scatter_of_tall_tensors_run_by_row_blocks_as_torch_computes_them():
    x, vals = rand(1024, 64, seed=1), rand(1024, 8, seed=2)
    idx = torch.stack([torch.randperm(64, generator=gen(i))[:8] for i in range(1024)]).to(torch.int32)
    picked, placed, kept = torch.zeros(1024, 8), torch.zeros(1024, 64), torch.zeros(1024, 64)
    pick_and_place(x, idx, vals, picked, placed, kept, config=SIM)
    assert torch.equal(picked, torch.gather(x * 2, 1, idx.long()))
    assert torch.equal(placed, (x * 2).scatter(1, idx.long(), vals))
    assert torch.equal(kept, x * 2)


def test_gather_and_scatter_on_tiles_in_torchs_argument_order():
    @pl.jit
    def k(
        x: pl.Tensor[[16, 64], pl.FP16],
        idx: pl.Tensor[[16, 4], pl.INT32],
        out: pl.Out[pl.Tensor[[16, 64], pl.FP16]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64])
            where = pl.load(idx, [0, 0], [16, 4])
            picked = pl.gather(t, 1, where)  # torch.gather(input, dim, index)
            t = pl.scatter(t, 1, where, pl.mul(picked, 3.0))  # in place on the tile
            pl.store(t, [0, 0], out)
        return out

    x = rand(16, 64, seed=3).half()
    idx = torch.stack([torch.randperm(64, generator=gen(i))[:4] for i in range(16)]).to(torch.int32)
    out = torch.zeros(16, 64).half()
    k(x, idx, out, config=SIM)
    assert torch.equal(out, x.scatter(1, idx.long(), torch.gather(x, 1, idx.long()) * 3))


def test_a_gather_index_past_the_columns_stops_the_run_at_the_line():
    @pl.jit
    def k(
        x: pl.Tensor[[4, 64], pl.FP32],
        idx: pl.Tensor[[4, 4], pl.INT32],
        out: pl.Out[pl.Tensor[[4, 4], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.gather(x, idx)
        return out

    idx = torch.zeros(4, 4, dtype=torch.int32)
    idx[2, 1] = 64
    with pytest.raises(OutOfBoundsError) as info:
        k(torch.zeros(4, 64), idx, torch.zeros(4, 4), config=SIM)
    assert "pl.gather: index 64" in info.value.message and "is outside the 64 columns" in info.value.message
    assert "pl.gather(x, idx)" in str(info.value)


def test_a_gather_along_another_dim_is_a_type_error_at_the_line():
    @pl.jit
    def k(
        x: pl.Tensor[[4, 64], pl.FP32],
        idx: pl.Tensor[[4, 4], pl.INT32],
        out: pl.Out[pl.Tensor[[4, 4], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.gather(x, idx, dim=0)
        return out

    with pytest.raises(TypeCheckError, match=r"indexes along dim -1"):
        k(torch.zeros(4, 64), torch.zeros(4, 4, dtype=torch.int32), torch.zeros(4, 4), config=SIM)


# ---------------------------------------------------------------- pl.scatter_update


@pl.jit
def update_rows(
    src: pl.Tensor[[256, 64], pl.FP32],
    idx: pl.Tensor[[256], pl.INT32],
    table: pl.InOut[pl.Tensor[[512, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        table = pl.scatter_update(table, idx, pl.add(src, 1.0))
    return table


def test_scatter_update_writes_rows_of_a_tensor_in_global_memory_block_by_block():
    src = rand(256, 64, seed=4)
    idx = torch.randperm(512, generator=gen(5))[:256].to(torch.int32)
    table = rand(512, 64, seed=6)
    want = table.clone()
    want[idx.long()] = src + 1
    update_rows(src, idx, table, config=SIM)
    assert torch.equal(table, want)


def test_scatter_update_in_torchs_order_and_on_tiles():
    @pl.jit
    def k(
        src: pl.Tensor[[4, 64], pl.FP32],
        idx: pl.Tensor[[1, 4], pl.INT32],
        out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]],
        t_out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.scatter_update(out, -2, pl.reshape(idx, [4]), src)
            rows = pl.full([16, 64], dtype=pl.FP32, value=0.0)
            rows = pl.scatter_update(rows, pl.load(idx, [0, 0], [1, 4]), pl.load(src, [0, 0], [4, 64]))
            pl.store(rows, [0, 0], t_out)
        return out, t_out

    src, idx = rand(4, 64, seed=7), torch.tensor([[3, 0, 9, 12]], dtype=torch.int32)
    out, t_out = torch.zeros(16, 64), torch.zeros(16, 64)
    k(src, idx, out, t_out, config=SIM)
    want = torch.zeros(16, 64)
    want[idx.long().flatten()] = src
    assert torch.equal(out, want) and torch.equal(t_out, want)


def test_scatter_update_of_a_computed_tensor_is_an_error_that_names_the_tile_op():
    @pl.jit
    def k(
        x: pl.Tensor[[16, 64], pl.FP32],
        idx: pl.Tensor[[4], pl.INT32],
        src: pl.Tensor[[4, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.mul(x, 2.0)
            y = pl.scatter_update(y, idx, src)
            out[:] = y
        return out

    with pytest.raises(
        ParseError, match=r"pl\.scatter_update writes rows of a tensor in global memory"
    ) as info:
        k(
            torch.zeros(16, 64),
            torch.zeros(4, dtype=torch.int32),
            torch.zeros(4, 64),
            torch.zeros(16, 64),
            config=SIM,
        )
    assert "pl.tile.scatter_update" in str(info.value)


# ---------------------------------------------------------------- pl.mgather, pl.mscatter


@pl.jit
def gather_scatter_rows(
    x: pl.Tensor[[256, 64], pl.FP32],
    idx: pl.Tensor[[4, 8], pl.INT32],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    back: pl.InOut[pl.Tensor[[256, 64], pl.FP32]],
):
    for b in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP):
            places = pl.load(idx, [b, 0], [1, 8])
            rows = pl.mgather(x, places, gather_oob="clamp")
            pl.store(rows, [b * 8, 0], out)
            pl.mscatter(pl.neg(rows), places, back)
    return out, back


def test_blocks_gather_rows_of_gm_by_index_tiles_and_scatter_them_back():
    x = rand(256, 64, seed=8)
    idx = torch.randperm(256, generator=gen(9))[:32].to(torch.int32).reshape(4, 8)
    rows = idx.long().flatten()
    out, back = torch.zeros(32, 64), torch.zeros(256, 64)
    gather_scatter_rows(x, idx, out, back, config=SIM)
    assert torch.equal(out, x[rows])
    want = torch.zeros(256, 64)
    want[rows] = -x[rows]
    assert torch.equal(back, want)


def test_two_blocks_scattering_into_one_row_is_a_race_naming_the_row():
    idx = torch.arange(32, dtype=torch.int32).reshape(4, 8)
    idx[2, 3] = 1  # block 2 writes row 1, which block 0 writes too
    with pytest.raises(RaceError) as info:
        gather_scatter_rows(rand(256, 64), idx, torch.zeros(32, 64), torch.zeros(256, 64), config=SIM)
    assert "back[1:2, 0:64]" in info.value.message


# ---------------------------------------------------------------- pl.gatherb


def test_gatherb_assembles_blocks_of_a_tile_by_byte_offset():
    @pl.jit
    def k(
        x: pl.Tensor[[8, 64], pl.FP32],
        off: pl.Tensor[[8, 8], pl.UINT32],
        out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.gatherb(pl.load(x, [0, 0], [8, 64]), pl.load(off, [0, 0], [8, 8])), [0, 0], out)
        return out

    x = rand(8, 64, seed=10)
    blocks = torch.randperm(64, generator=gen(11)).reshape(8, 8)  # 64 blocks of 8 floats: a shuffle
    out = torch.zeros(8, 64)
    k(x, (blocks * 32).to(torch.uint32), out, config=SIM)
    assert torch.equal(out, x.reshape(64, 8)[blocks].reshape(8, 64))


# ---------------------------------------------------------------- pl.paged_gather


@pl.jit
def paged_scores(
    pool: pl.Tensor[[256, 64], pl.FP16],
    idx: pl.Tensor[[32], pl.INT32],
    table: pl.Tensor[[16], pl.INT32],
    q: pl.Tensor[[16, 64], pl.FP16],
    scores: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    rows: pl.Out[pl.Tensor[[32, 32], pl.FP16]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        kv = pl.paged_gather(pool, idx, table, block_size=16, max_indices=32, is_trans=True)
        scores[:] = pl.matmul(q, kv, b_trans=True)
    with pl.at(level=pl.Level.CORE_GROUP):
        rows[:] = pl.paged_gather(pool, idx, table, 16, 32, size=32, col_offset=16, target_memory=pl.Mem.Vec)
    return scores, rows


def test_paged_gather_reads_pool_rows_through_the_block_table():
    pool, q = rand(256, 64, seed=12).half(), rand(16, 64, seed=13).half()
    table = torch.randperm(16, generator=gen(14)).to(torch.int32)
    idx = torch.randperm(256, generator=gen(15))[:32].to(torch.int32)
    scores, rows = torch.zeros(16, 32), torch.zeros(32, 32).half()
    paged_scores(pool, idx, table, q, scores, rows, config=SIM)
    physical = table.long()[idx.long() // 16] * 16 + idx.long() % 16
    torch.testing.assert_close(scores, q.float() @ pool[physical].float().T, rtol=1e-3, atol=1e-3)
    assert torch.equal(rows, pool[physical, 16:48])


def test_a_paged_gather_index_past_the_block_table_or_the_pool_stops_the_run_at_the_line():
    @pl.jit
    def k(
        pool: pl.Tensor[[64, 32], pl.FP16],
        idx: pl.Tensor[[8], pl.INT32],
        table: pl.Tensor[[4], pl.INT32],
        rows: pl.Out[pl.Tensor[[8, 32], pl.FP16]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows[:] = pl.paged_gather(pool, idx, table, 16, 8, target_memory=pl.Mem.Vec)
        return rows

    pool, table = rand(64, 32).half(), torch.arange(4, dtype=torch.int32)
    past_table = torch.arange(8, dtype=torch.int32) * 10  # 70 // 16 is block 4 of 4
    with pytest.raises(OutOfBoundsError, match=r"outside dim 0 of size 4") as info:
        k(pool, past_table, table, torch.zeros(8, 32).half(), config=SIM)
    assert "pl.paged_gather(pool, idx, table" in str(info.value)
    past_pool = torch.tensor([7, 0, 1, 2], dtype=torch.int32)  # page 7 starts at row 112 of 64
    with pytest.raises(OutOfBoundsError, match=r"region \[112:113\] is outside dim 0 of size 64"):
        k(pool, torch.arange(8, dtype=torch.int32), past_pool, torch.zeros(8, 32).half(), config=SIM)


# ---------------------------------------------------------------- pl.sort32, pl.mrgsort


@pl.jit
def top8(
    x: pl.Tensor[[4, 128], pl.FP32],
    values: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
    where: pl.Out[pl.Tensor[[4, 8], pl.INT32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [4, 128])
        runs = pl.sort32(t)  # runs of 32 (value, index) pairs
        whole = pl.mrgsort(runs, block_len=32)  # one run of 128
        pairs = pl.reshape(whole, [512, 2])
        best = pl.reshape(pl.slice(pairs, [512, 1], [0, 0]), [4, 128])
        ids = pl.reshape(pl.slice(pl.reinterpret_view(pairs, pl.INT32), [512, 1], [0, 1]), [4, 128])
        pl.store(pl.slice(best, [4, 8], [0, 0]), [0, 0], values)
        pl.store(pl.slice(ids, [4, 8], [0, 0]), [0, 0], where)
    return values, where


def test_sort32_then_mrgsort_give_each_rows_top_values_and_their_columns():
    x = rand(4, 128, seed=16)
    values, where = torch.zeros(4, 8), torch.zeros(4, 8, dtype=torch.int32)
    top8(x, values, where, config=SIM)
    want = x.topk(8, dim=1)
    assert torch.equal(values, want.values) and torch.equal(where.long(), want.indices)


@pl.jit
def sorted_rows(x: pl.Tensor[[512, 64], pl.FP16], out: pl.Out[pl.Tensor[[512, 256], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mrgsort(pl.sort32(x), 32)
    return out


def test_sorting_a_tall_fp16_tensor_runs_by_row_blocks():
    x = rand(512, 64, seed=17).half()
    out = torch.zeros(512, 256).half()
    sorted_rows(x, out, config=SIM)
    quads = out.reshape(512, 64, 4)
    assert torch.equal(quads[..., 0], x.sort(dim=1, descending=True, stable=True).values)
    assert torch.equal(
        quads[..., 2:].contiguous().view(torch.int32).reshape(512, 64).long(),
        x.sort(dim=1, descending=True, stable=True).indices,
    )


def test_merging_runs_that_are_not_sorted_stops_the_run_at_the_line():
    @pl.jit
    def k(x: pl.Tensor[[1, 64], pl.FP32], out: pl.Out[pl.Tensor[[1, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mrgsort(pl.sort32(x), 64)
        return out

    with pytest.raises(UnsortedRunError) as info:
        k(rand(1, 64, seed=18), torch.zeros(1, 128), config=SIM)
    assert "is not sorted largest first" in info.value.message and "pl.mrgsort(pl.sort32(x), 64)" in str(
        info.value
    )
