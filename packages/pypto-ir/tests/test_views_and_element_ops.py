"""Type rules of pl.write, pl.reinterpret_view, pl.fillpad_expand and pl.gather_row (into L1, and
with a valid shape)."""

import pytest

from pypto.ir import (
    INDEX,
    Const,
    DataType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    TypeCheckError,
    Var,
    make_call,
)
from pypto.ir.ops import PadValue

FP32, FP16, INT32, INT8 = DataType.FP32, DataType.FP16, DataType.INT32, DataType.INT8


def tile(shape, dtype=FP32, space=MemorySpace.Vec, valid=None):
    return Var("t", TileType(tuple(shape), dtype, space, valid))


def tensor(shape, dtype=FP32):
    return Var("x", TensorType(tuple(shape), dtype))


def offsets(*values):
    elements = tuple(Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(INDEX for _ in elements)))


def test_a_write_returns_the_written_tensor_or_tile_and_writes_its_first_operand():
    x = tensor([4, 8], INT32)
    call = make_call("scalar.write", (x, offsets(1, 2), Const(5, ScalarType(INT32))))
    assert call.type == x.type
    assert make_call(
        "tile.write", (tile([4, 8]), offsets(0, 0), Const(1.0, ScalarType(FP32)))
    ).type.shape == (4, 8)


def test_a_write_of_a_float_into_integers_or_of_a_constant_out_of_range_names_the_problem():
    with pytest.raises(TypeCheckError, match="the written value is a FP32 scalar"):
        make_call("scalar.write", (tensor([4, 8], INT32), offsets(0, 0), Const(1.5, ScalarType(FP32))))
    with pytest.raises(TypeCheckError, match=r"the written value 300 does not fit pl\.INT8"):
        make_call("scalar.write", (tensor([4, 8], INT8), offsets(0, 0), Const(300, ScalarType(INT32))))
    with pytest.raises(TypeCheckError, match="offsets must be a list of 2 indices, got 1"):
        make_call("scalar.write", (tensor([4, 8]), offsets(0), Const(1.0, ScalarType(FP32))))


def test_a_view_scales_the_last_axis_by_the_byte_width_ratio():
    assert make_call("tile.reinterpret_view", (tile([16, 64]),), {"dtype": DataType.INT16}).type.shape == (
        16,
        128,
    )
    assert make_call(
        "tensor.reinterpret_view", (tensor([16, 64], FP16),), {"dtype": FP32}
    ).type == TensorType((16, 32), FP32)
    valid = make_call("tile.reinterpret_view", (tile([16, 64], valid=(10, 30)),), {"dtype": DataType.UINT8})
    assert valid.type.valid_shape == (10, 120)


def test_a_view_refuses_its_own_dtype_a_ragged_last_axis_other_bytes_and_bool():
    with pytest.raises(TypeCheckError, match=r"views Tile.* as its own dtype pl\.FP32"):
        make_call("tile.reinterpret_view", (tile([16, 64]),), {"dtype": FP32})
    with pytest.raises(TypeCheckError, match=r"holds no whole number of pl\.FP32 elements"):
        make_call("tile.reinterpret_view", (tile([16, 3], FP16),), {"dtype": FP32})
    with pytest.raises(TypeCheckError, match=r"shape \[16, 16\] of pl\.INT32 is 1024 bytes, but"):
        make_call("tile.reinterpret_view", (tile([16, 64]),), {"dtype": INT32, "shape": (16, 16)})
    with pytest.raises(
        TypeCheckError, match=r"the source dtype must be an integer or float dtype, got pl\.BOOL"
    ):
        make_call("tile.reinterpret_view", (tile([16, 64], DataType.BOOL),), {"dtype": INT8})


def test_a_view_with_another_shape_of_a_partly_valid_tile_is_refused():
    with pytest.raises(TypeCheckError, match=r"is no whole region of pl\.INT32 elements"):
        make_call(
            "tile.reinterpret_view", (tile([16, 64], valid=(10, 64)),), {"dtype": INT32, "shape": (32, 32)}
        )


def test_fillpad_expand_makes_a_vec_tile_of_the_larger_shape_and_refuses_a_smaller_one():
    grown = make_call("tile.fillpad_expand", (tile([16, 64], valid=(9, 60)),), {"shape": (32, 64)})
    assert grown.type == TileType((32, 64), FP32, MemorySpace.Vec)
    same = make_call("tile.fillpad_expand", (tile([16, 64]),), {"pad_value": PadValue.min})
    assert same.type.shape == (16, 64)
    with pytest.raises(TypeCheckError, match="which is smaller in some dim"):
        make_call("tile.fillpad_expand", (tile([16, 64]),), {"shape": (8, 64)})
    with pytest.raises(TypeCheckError, match="shape \\[32\\] has 1 dim"):
        make_call("tile.fillpad_expand", (tile([16, 64]),), {"shape": (32,)})


def test_gather_row_writes_a_row_into_a_vec_or_an_l1_tile_only():
    pool = tensor([256, 64], FP16)
    for space in (MemorySpace.Vec, MemorySpace.Mat):
        dst = tile([32, 64], FP16, space)
        got = make_call("tile.gather_row", (dst, pool, offsets(3, 0), offsets(17, 0)), {"shape": (1, 64)})
        assert got.type == dst.type
    with pytest.raises(TypeCheckError, match=r"gathers into a Vec or Mat tile, got Tile.*Left"):
        dst = tile([32, 64], FP16, MemorySpace.Left)
        make_call("tile.gather_row", (dst, pool, offsets(3, 0), offsets(17, 0)), {"shape": (1, 64)})


def extents(*values):
    """Index values, each a constant or (a string) a run-time scalar of that name."""
    elements = tuple(Var(v, INDEX) if isinstance(v, str) else Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(INDEX for _ in elements)))


def gather(dst, src, dst_at, src_at, valid, window=(128, 64), **attrs):
    return make_call("tile.gather_row", (dst, src, dst_at, src_at, valid), {"shape": window, **attrs})


def test_a_gather_window_of_many_rows_with_a_run_time_valid_shape_may_hang_past_the_tile():
    kv, pool = tile([128, 64], FP16, MemorySpace.Mat), tensor([512, 64], FP16)
    call = gather(kv, pool, extents("r1", 0), extents("b1", 0), extents("rest", 64))
    assert call.type == kv.type and len(call.args) == 5
    # A window of many rows copies whole without a valid shape; with one, only its valid part must fit.
    whole = make_call("tile.gather_row", (kv, pool, offsets(0, 0), offsets(9, 0)), {"shape": (128, 64)})
    assert whole.type == kv.type
    assert gather(kv, pool, offsets(100, 0), offsets(0, 0), offsets(28, 64)).type == kv.type


@pytest.mark.parametrize(
    ("dst_at", "src_at", "valid", "message"),
    [
        (
            offsets(0, 0),
            offsets(0, 0),
            extents(129, 64),
            "valid_shape 129 of dim 0 is outside the window shape",
        ),
        (
            offsets(0, 0),
            offsets(0, 0),
            extents(-1, "c"),
            "valid_shape -1 of dim 0 is outside the window shape",
        ),
        (
            offsets(100, 0),
            extents("b", 0),
            extents(29, 64),
            "region \\[100:129\\] is outside dim 0 of size 128",
        ),
        (
            extents("r", 0),
            offsets(500, 0),
            extents(13, 64),
            "region \\[500:513\\] is outside dim 0 of size 512",
        ),
        (offsets(0, 0), offsets(0, 0), extents(8), "valid_shape must be a list of 2 indices"),
    ],
)
def test_a_provably_wrong_gather_valid_shape_is_a_type_error(dst_at, src_at, valid, message):
    kv, pool = tile([128, 64], FP16), tensor([512, 64], FP16)
    with pytest.raises(TypeCheckError, match=message):
        gather(kv, pool, dst_at, src_at, valid)


def test_a_gather_valid_shape_with_transpose_is_rejected():
    kv, pool = tile([128, 64], FP16, MemorySpace.Mat), tensor([512, 64], FP16)
    with pytest.raises(TypeCheckError, match="valid_shape= cannot be combined with transpose=True") as info:
        gather(kv, pool, offsets(0, 0), offsets(0, 0), extents("r", 64), transpose=True)
    assert info.value.hint
