"""Semantics of the gather, scatter and sort ops against torch, their run-time checks, and the GM
boxes an indexed access records."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from sim_lowered import Mem, expr, rand

from pypto.ir import DataType, TensorType, TileType, Var, make_call
from pypto.ir.semantics import from_pairs
from pypto_sim_a2a3 import OutOfBoundsError, UnsortedRunError
from pypto_sim_a2a3.checks.coherence import Region, gm_accesses
from pypto_sim_a2a3.engine.semantics import CHECKS, SEMANTICS

FP32, FP16, I32, U32 = DataType.FP32, DataType.FP16, DataType.INT32, DataType.UINT32
DTYPES = {torch.float32: FP32, torch.float16: FP16, torch.int32: I32, torch.uint32: U32}
TESTED = {
    "tile.gather",
    "tile.scatter",
    "tile.scatter_update",
    "tile.mgather",
    "tile.mscatter",
    "tile.gatherb",
    "tile.sort32",
    "tile.mrgsort_format1",
    "tile.mrgsort_format2",
}


def t(x: torch.Tensor) -> tuple[TileType, torch.Tensor]:
    return TileType(tuple(x.shape), DTYPES[x.dtype], Mem.Vec), x


def gm(x: torch.Tensor) -> tuple[TensorType, torch.Tensor]:
    return TensorType(tuple(x.shape), DTYPES[x.dtype]), x


def call_of(op: str, operands: list[tuple[Any, Any]], **attrs: Any):
    return make_call(op, [expr(Var(f"v{i}", ty)) for i, (ty, _) in enumerate(operands)], attrs)


def run(op: str, operands: list[tuple[Any, Any]], **attrs: Any) -> Any:
    return SEMANTICS[op](call_of(op, operands, **attrs), [v for _, v in operands])


def test_each_indexed_op_has_semantics_and_a_run_time_check_but_sort32():
    assert SEMANTICS.keys() >= TESTED
    assert TESTED - CHECKS.keys() == {"tile.sort32"}  # any values sort; only indices can be wrong


def ints(*rows: list[int], dtype: torch.dtype = torch.int32) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int64).to(dtype)


# ---------------------------------------------------------------- within tiles


def test_gather_is_torch_gather_along_the_last_dim_with_any_integer_index():
    x = rand(4, 16, seed=1)
    index = torch.randint(0, 16, (4, 5), generator=torch.Generator().manual_seed(2))
    for dtype in (torch.int32, torch.uint32):
        got = run("tile.gather", [t(x), t(index.to(dtype))])
        assert torch.equal(got, torch.gather(x, 1, index))


def test_an_index_past_the_columns_is_out_of_bounds_at_the_op():
    with pytest.raises(
        OutOfBoundsError, match=r"pl\.gather: index 16 \(entry 3 of the index\) is outside the 16 columns"
    ):
        run("tile.gather", [t(rand(2, 16)), t(ints([0, 1, 2, 16], [0, 0, 0, 0]))])


def test_scatter_writes_each_rows_elements_into_the_input_tile_the_last_write_winning():
    x, src = rand(2, 8, seed=3), torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    index = ints([1, 5, 1], [0, 7, 2])
    got = run("tile.scatter", [t(x), t(index), t(src)])
    want = x.clone()
    want[0, 5], want[0, 1] = 2.0, 3.0
    want[1, 0], want[1, 7], want[1, 2] = 4.0, 5.0, 6.0
    assert got is x and torch.equal(x, want)


def test_scatter_update_writes_whole_rows_at_row_indices():
    x, src = torch.zeros(6, 4), rand(3, 4, seed=4)
    got = run("tile.scatter_update", [t(x), t(ints([4, 0, 4])), t(src)])
    want = torch.zeros(6, 4)
    want[0], want[4] = src[1], src[2]
    assert got is x and torch.equal(x, want)
    with pytest.raises(OutOfBoundsError, match=r"is outside the 6 rows of the input"):
        run("tile.scatter_update", [t(torch.zeros(6, 4)), t(ints([6])), t(src[:1])])


def test_gatherb_picks_32_byte_blocks_at_byte_offsets_of_the_whole_source():
    x = torch.arange(64, dtype=torch.float32).reshape(4, 16)  # 256 bytes: eight blocks of eight floats
    offsets = ints([224, 0, 32, 96, 64, 128, 160, 192], dtype=torch.uint32)
    got = run("tile.gatherb", [t(x), t(offsets)])
    blocks = x.reshape(8, 8)
    assert torch.equal(got, blocks[[7, 0, 1, 3, 2, 4, 5, 6]].reshape(1, 64))
    as_halves = run("tile.gatherb", [t(x), t(offsets)], output_dtype=FP16)
    assert torch.equal(as_halves.view(torch.float32), got)


def test_a_gatherb_offset_that_is_not_a_whole_block_inside_the_source_stops_the_op():
    x = torch.zeros(4, 16)
    with pytest.raises(
        OutOfBoundsError, match=r"byte offset 40 selects no whole 32-byte block of the 256-byte source"
    ):
        run("tile.gatherb", [t(x), t(ints([0, 40, 0, 0, 0, 0, 0, 0], dtype=torch.uint32))])
    with pytest.raises(OutOfBoundsError, match=r"byte offset 256"):
        run("tile.gatherb", [t(x), t(ints([0, 256, 0, 0, 0, 0, 0, 0], dtype=torch.uint32))])


# ---------------------------------------------------------------- between GM and tiles


def test_mgather_reads_rows_and_elements_by_index_with_each_out_of_range_policy():
    src = rand(8, 4, seed=5)
    index = ints([2, 9, -1])
    rows = run("tile.mgather", [gm(src), t(ints([2, 7, 0]))])
    assert torch.equal(rows, src[[2, 7, 0]])
    clamp = run("tile.mgather", [gm(src), t(index)], gather_oob="clamp")
    assert torch.equal(clamp, src[[2, 7, 0]])
    wrap = run("tile.mgather", [gm(src), t(index)], gather_oob="wrap")
    assert torch.equal(wrap, src[[2, 1, 7]])
    zero = run("tile.mgather", [gm(src), t(index)], gather_oob="zero")
    assert torch.equal(zero[0], src[2]) and not zero[1:].any()
    elems = run("tile.mgather", [gm(src), t(ints([31, 0], [5, 6]))], coalesce="elem")
    assert torch.equal(elems, src.reshape(-1)[torch.tensor([[31, 0], [5, 6]])])
    with pytest.raises(OutOfBoundsError, match=r"index 9 .* is outside the 8 rows of the source"):
        run("tile.mgather", [gm(src), t(index)])


def test_mscatter_writes_rows_or_elements_into_the_tensor():
    out, src = torch.zeros(8, 4), rand(2, 4, seed=6)
    got = run("tile.mscatter", [t(src), t(ints([6, 1])), gm(out)])
    assert got is out and torch.equal(out[[6, 1]], src) and not out[[0, 2, 3, 4, 5, 7]].any()
    flat = torch.zeros(4, 4)
    run("tile.mscatter", [t(src), t(ints([0, 1, 2, 3, 15, 14, 13, 12])), gm(flat)], coalesce="elem")
    assert torch.equal(flat.reshape(-1)[[0, 1, 2, 3, 15, 14, 13, 12]], src.reshape(-1))
    whole = torch.zeros(4, 8)
    window = whole[:, 2:6]  # a strided view: elements at its own row-major positions
    run("tile.mscatter", [t(src), t(ints([0, 1, 2, 3, 15, 14, 13, 12])), gm(window)], coalesce="elem")
    assert torch.equal(whole[:, 2:6], flat) and not whole[:, :2].any() and not whole[:, 6:].any()
    with pytest.raises(OutOfBoundsError, match=r"is outside the 8 rows of the output"):
        run("tile.mscatter", [t(src), t(ints([8, 1])), gm(torch.zeros(8, 4))])


def test_an_indexed_access_records_one_box_per_run_of_neighbouring_rows_or_elements():
    src = rand(16, 4)
    call = call_of("tile.mgather", [gm(src), t(ints([3, 4, 9, 5]))])
    boxes = [a.region for a in gm_accesses("cg0.AIV0", call, (src, ints([3, 4, 9, 5])))]
    assert boxes == [Region((3, 0), (6, 4)), Region((9, 0), (10, 4))]
    elem = call_of("tile.mscatter", [t(rand(1, 4)), t(ints([6, 7, 8, 2])), gm(src)], coalesce="elem")
    written = gm_accesses("cg0.AIV0", elem, (rand(1, 4), ints([6, 7, 8, 2]), src))
    assert [a.region for a in written] == [
        Region((0, 2), (1, 3)),
        Region((1, 2), (2, 4)),
        Region((2, 0), (2 + 1, 1)),
    ]
    assert all(a.write for a in written)


# ---------------------------------------------------------------- sorting


def pairs_of(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    v, index_bytes = from_pairs(values)
    return v, index_bytes.contiguous().view(torch.int32).reshape(v.shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sort32_orders_each_32_group_largest_first_with_its_indices(dtype):
    x = rand(3, 64, seed=7).to(dtype)
    got = run("tile.sort32", [t(x)])
    assert got.dtype == dtype and got.shape == (3, 64 * 8 // x.element_size())
    values, indices = pairs_of(got)
    want = x.reshape(3, 2, 32).sort(dim=-1, descending=True, stable=True)
    assert torch.equal(values, want.values.reshape(3, 64))
    assert torch.equal(
        indices.reshape(3, 2, 32).long(), want.indices + torch.tensor([0, 32]).reshape(1, 2, 1)
    )


def test_sort32_carries_the_given_indices_and_keeps_equal_values_in_order():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0] * 8])
    idx = (torch.arange(32, dtype=torch.int64) * 10).reshape(1, 32).to(torch.uint32)
    values, indices = pairs_of(run("tile.sort32", [t(x), t(idx)]))
    assert values[0, :3].tolist() == [3.0, 3.0, 3.0] and indices[0, :3].tolist() == [10, 20, 50]


def test_mrgsort_merges_runs_four_at_a_time_and_lists_into_one():
    x = rand(2, 128, seed=8)
    runs = run("tile.sort32", [t(x)])
    merged = run("tile.mrgsort_format1", [t(runs)], block_len=32)
    values, indices = pairs_of(merged)
    want = x.sort(dim=1, descending=True, stable=True)
    assert torch.equal(values, want.values) and torch.equal(indices.long(), want.indices)
    a, b = run("tile.sort32", [t(x[:, :32])]), run("tile.sort32", [t(x[:, 32:64])])
    values, _ = pairs_of(run("tile.mrgsort_format2", [t(a), t(b)]))
    assert torch.equal(values, x[:, :64].sort(dim=1, descending=True).values)


def test_merging_runs_that_are_not_sorted_is_an_error_at_the_op():
    unsorted = run("tile.sort32", [t(rand(1, 64, seed=9))])
    with pytest.raises(
        UnsortedRunError, match=r"the run of pairs 0\.\.63 of row 0 is not sorted largest first"
    ):
        run("tile.mrgsort_format1", [t(unsorted)], block_len=64)
