"""Type rules of the gather, scatter and sort ops."""

import pytest

from pypto.ir import OPS, DataType, MemorySpace, TensorType, TileType, TypeCheckError, Var, make_call
from pypto.ir.ops import Effect, GmAccess

FP32, FP16, I32, U32 = DataType.FP32, DataType.FP16, DataType.INT32, DataType.UINT32
Vec = MemorySpace.Vec


def tile(shape, dtype=FP32, space=Vec):
    return Var("t", TileType(tuple(shape), dtype, space))


def tensor(shape, dtype=FP32):
    return Var("x", TensorType(tuple(shape), dtype))


def test_gather_takes_the_index_shape_and_the_source_dtype_along_the_last_dim():
    assert make_call("tile.gather", (tile([8, 64]), tile([8, 16], I32))).type == TileType((8, 16), FP32, Vec)
    assert make_call(
        "tensor.gather", (tensor([8, 64], FP16), tensor([8, 4], DataType.UINT16))
    ).type == TensorType((8, 4), FP16)
    with pytest.raises(
        TypeCheckError, match=r"indexes along dim -1 \(dim=1 counted from the front\), got dim=0"
    ):
        make_call("tile.gather", (tile([8, 64]), tile([8, 16], I32)), {"dim": 0})
    with pytest.raises(TypeCheckError, match=r"the index must hold integers"):
        make_call("tile.gather", (tile([8, 64]), tile([8, 16], FP32)))
    with pytest.raises(TypeCheckError, match=r"the index must be 2-D with the source's 8 rows"):
        make_call("tile.gather", (tile([8, 64]), tile([4, 16], I32)))


def test_scatter_keeps_the_input_and_updates_a_tile_in_place():
    assert make_call(
        "tensor.scatter", (tensor([8, 64]), tensor([8, 4], I32), tensor([8, 4]))
    ).type == TensorType((8, 64), FP32)
    assert OPS["tile.scatter"].operands[0].effect is Effect.UPDATE
    with pytest.raises(TypeCheckError, match=r"must have one shape"):
        make_call("tile.scatter", (tile([8, 64]), tile([8, 4], I32), tile([8, 5])))
    with pytest.raises(TypeCheckError, match=r"dtype mismatch"):
        make_call("tile.scatter", (tile([8, 64]), tile([8, 4], I32), tile([8, 4], FP16)))


def test_scatter_update_writes_whole_rows_of_a_tensor_at_an_index_per_row():
    call = make_call("tensor.scatter_update", (tensor([16, 64]), tensor([4], I32), tensor([4, 64])))
    assert call.type == TensorType((16, 64), FP32)
    assert OPS["tensor.scatter_update"].trait(GmAccess) == GmAccess(0, None, write=True, indexed=1)
    with pytest.raises(TypeCheckError, match=r"one row index per row of the source \(4\)"):
        make_call("tensor.scatter_update", (tensor([16, 64]), tensor([5], I32), tensor([4, 64])))
    with pytest.raises(TypeCheckError, match=r"the column count and dtype must match"):
        make_call("tile.scatter_update", (tile([16, 64]), tile([1, 4], I32), tile([4, 32])))
    with pytest.raises(TypeCheckError, match=r"got dim=-1"):
        make_call("tile.scatter_update", (tile([16, 64]), tile([1, 4], I32), tile([4, 64])), {"dim": -1})


def test_mgather_reads_rows_or_elements_of_a_tensor_into_a_vec_tile():
    rows = make_call("tile.mgather", (tensor([256, 64], FP16), tile([1, 16], I32)))
    assert rows.type == TileType((16, 64), FP16, Vec)
    elems = make_call(
        "tile.mgather", (tensor([256, 64]), tile([4, 8], I32)), {"coalesce": "elem", "gather_oob": "wrap"}
    )
    assert elems.type == TileType((4, 8), FP32, Vec)
    with pytest.raises(
        TypeCheckError, match=r"gather_oob must be one of 'undefined', 'clamp', 'wrap', 'zero'"
    ):
        make_call("tile.mgather", (tensor([256, 64]), tile([1, 16], I32)), {"gather_oob": "skip"})
    with pytest.raises(TypeCheckError, match=r"the index is a tile"):
        make_call("tile.mgather", (tensor([256, 64]), tensor([1, 16], I32)))


def test_mscatter_writes_a_tiles_rows_into_a_tensor_and_says_so():
    call = make_call("tile.mscatter", (tile([4, 64]), tile([1, 4], I32), tensor([16, 64])))
    assert call.type == TensorType((16, 64), FP32)
    assert OPS["tile.mscatter"].writes == (2,)
    with pytest.raises(TypeCheckError, match=r"of one row width"):
        make_call("tile.mscatter", (tile([4, 32]), tile([1, 4], I32), tensor([16, 64])))
    with pytest.raises(TypeCheckError, match=r"one position per element"):
        make_call("tile.mscatter", (tile([4, 32]), tile([1, 4], I32), tensor([16, 64])), {"coalesce": "elem"})


def test_gatherb_widens_each_offset_column_into_a_32_byte_block_of_elements():
    got = make_call("tile.gatherb", (tile([8, 64], FP16), tile([8, 16], U32)))
    assert got.type == TileType((8, 256), FP16, Vec)
    as_ints = make_call("tile.gatherb", (tile([8, 64], FP16), tile([8, 8], U32)), {"output_dtype": I32})
    assert as_ints.type.shape == (8, 64) and as_ints.type.dtype is I32
    with pytest.raises(TypeCheckError, match=r"a multiple of 8 byte offsets"):
        make_call("tile.gatherb", (tile([8, 64]), tile([8, 6], U32)))
    with pytest.raises(TypeCheckError, match=r"a 2-D pl\.UINT32 tile"):
        make_call("tile.gatherb", (tile([8, 64]), tile([8, 8], I32)))


def test_paged_gather_makes_max_indices_rows_of_the_pools_width():
    call = make_call(
        "tensor.paged_gather",
        (tensor([64, 128], FP16), tensor([16], I32), tensor([4], I32)),
        {"block_size": 16, "max_indices": 32},
    )
    assert call.type == TensorType((32, 128), FP16)
    args = (tensor([64, 128], FP16), tensor([16], I32), tensor([4], I32))
    with pytest.raises(TypeCheckError, match=r"gathers 16 rows into a buffer of max_indices=8"):
        make_call("tensor.paged_gather", args, {"block_size": 16, "max_indices": 8})
    with pytest.raises(TypeCheckError, match=r"columns \[100:164\] are outside the pool's 128"):
        make_call(
            "tensor.paged_gather", args, {"block_size": 16, "max_indices": 16, "size": 64, "col_offset": 100}
        )
    with pytest.raises(TypeCheckError, match=r"is_trans=True lays rows out as an L1 operand's columns"):
        make_call(
            "tensor.paged_gather",
            args,
            {"block_size": 16, "max_indices": 16, "target_memory": Vec, "is_trans": True},
        )


def test_sort32_makes_pairs_of_8_bytes_and_mrgsort_merges_them():
    assert make_call("tile.sort32", (tile([4, 64]),)).type.shape == (4, 128)
    assert make_call("tile.sort32", (tile([4, 64], FP16), tile([4, 64], U32))).type.shape == (4, 256)
    with pytest.raises(TypeCheckError, match=r"the 48 columns of .* are no whole number of them"):
        make_call("tile.sort32", (tile([4, 48]),))
    with pytest.raises(TypeCheckError, match=r"sorts FP16 or FP32 values"):
        make_call("tensor.sort32", (tensor([4, 64], I32),))
    assert make_call("tile.mrgsort_format1", (tile([4, 128]),), {"block_len": 32}).type.shape == (4, 128)
    with pytest.raises(TypeCheckError, match=r"block_len must be a positive int dividing the 64 pairs"):
        make_call("tile.mrgsort_format1", (tile([4, 128]),), {"block_len": 48})
    merged = make_call("tensor.mrgsort_format2", (tensor([1, 64]), tensor([1, 128]), tensor([1, 64])))
    assert merged.type == TensorType((1, 256), FP32)
    with pytest.raises(TypeCheckError, match=r"merges lists of one dtype and row count"):
        make_call("tile.mrgsort_format2", (tile([1, 64]), tile([2, 64])))
