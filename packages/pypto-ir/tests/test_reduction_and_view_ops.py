"""Type rules of the tier-2 ops: reductions, broadcasts, views, fills, tile assembly, partial and
atomic stores. Each mistake is a TypeCheckError that names the op and the operand types."""

import pytest

from pypto.ir import (
    INDEX,
    OPS,
    AtomicType,
    Const,
    DataType,
    MemorySpace,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    TypeCheckError,
    Unit,
    Var,
    make_call,
)

FP32, FP16 = DataType.FP32, DataType.FP16
Mem = MemorySpace


def tile(shape, dtype=FP32, space=Mem.Vec, name="t"):
    return Var(name, TileType(tuple(shape), dtype, space))


def tensor(shape, dtype=FP32, name="a"):
    return Var(name, TensorType(tuple(shape), dtype))


def idx(*values):
    elements = tuple(v if isinstance(v, Var) else Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))


def message(op, *args, **attrs):
    with pytest.raises(TypeCheckError) as info:
        make_call(op, args, attrs)
    return info.value.message


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("name", ["row_max", "row_sum", "row_min"])
def test_a_row_reduction_of_a_tile_with_its_scratch_is_one_column(name):
    x = tile([64, 32])
    assert make_call(f"tile.{name}", (x, tile([64, 32]))).type == TileType((64, 1), FP32, Mem.Vec)


def test_a_row_reduction_of_a_tensor_takes_no_scratch():
    assert make_call("tensor.row_sum", (tensor([64, 32]),)).type == TensorType((64, 1), FP32)


def test_a_row_reduction_without_scratch_names_the_op_and_the_shape_it_needs():
    text = message("tile.row_max", tile([64, 32]))
    assert (
        text == "pl.row_max: needs a scratch tile shaped like Tile[[64, 32], FP32, Vec], got no scratch tile"
    )


def test_a_scratch_of_another_shape_is_rejected():
    assert "got Tile[[64, 16], FP32, Vec]" in message("tile.row_sum", tile([64, 32]), tile([64, 16]))


def test_a_row_reduction_keeps_the_valid_rows():
    x = Var("x", TileType((64, 32), FP32, Mem.Vec, (10, 32)))
    assert make_call("tile.row_max", (x, tile([64, 32]))).type.valid_shape == (10, 1)


@pytest.mark.parametrize("name", ["col_sum", "col_max"])
def test_a_column_reduction_is_one_row(name):
    assert make_call(f"tile.{name}", (tile([64, 32]),)).type.shape == (1, 32)
    assert make_call(f"tensor.{name}", (tensor([64, 32]),)).type == TensorType((1, 32), FP32)


def test_reductions_need_vec_tiles():
    assert "vector op needs its tiles in Vec" in message("tile.col_sum", tile([16, 16], space=Mem.Mat))


# ---------------------------------------------------------------- broadcasts


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_row_expand_broadcasts_a_column_vector_across_columns(name):
    call = make_call(f"tile.row_expand_{name}", (tile([64, 32]), tile([64, 1], name="v")))
    assert call.type == TileType((64, 32), FP32, Mem.Vec)


def test_row_expand_with_a_row_vector_names_both_types():
    text = message("tile.row_expand_sub", tile([64, 32]), tile([1, 32], name="v"))
    assert text == (
        "pl.row_expand_sub: the broadcast operand must be [64, 1] for Tile[[64, 32], FP32, Vec], "
        "got Tile[[1, 32], FP32, Vec]"
    )


def test_col_expand_broadcasts_a_row_vector_down_the_rows():
    assert make_call("tensor.col_expand", (tensor([32, 64]), tensor([1, 64], name="g"))).type.shape == (
        32,
        64,
    )
    assert "must be [1, 64]" in message("tile.col_expand_mul", tile([32, 64]), tile([32, 1], name="g"))


def test_a_broadcast_does_not_mix_a_tensor_and_a_tile():
    assert "operands mix a tensor and a tile" in message("tensor.col_expand", tensor([8, 8]), tile([1, 8]))


def test_a_broadcast_operand_of_another_dtype_is_rejected():
    assert "dtype mismatch" in message("tile.row_expand_add", tile([8, 8]), tile([8, 1], FP16))


# ---------------------------------------------------------------- views and fills


def test_reshape_keeps_the_element_count_and_the_space():
    call = make_call("tile.reshape", (tile([64, 32], space=Mem.Mat),), {"shape": (32, 64)})
    assert call.type == TileType((32, 64), FP32, Mem.Mat)
    text = message("tensor.reshape", tensor([64, 32]), shape=(64, 64))
    assert (
        text
        == "pl.reshape: cannot reshape Tensor[[64, 32], FP32] (2048 elements) to [64, 64] (4096 elements)"
    )


def test_a_slice_at_run_time_offsets_has_the_constant_shape():
    k = Var("k", INDEX)
    call = make_call("tensor.slice", (tensor([64, 256]), idx(0, k)), {"shape": (64, 128)})
    assert call.type == TensorType((64, 128), FP32)


def test_a_slice_outside_its_source_is_rejected():
    text = message("tile.slice", tile([64, 64]), idx(0, 48), shape=(64, 32))
    assert text == "pl.slice: region [48:80] is outside dim 1 of size 64"


def test_fillpad_makes_the_whole_tile_valid():
    x = Var("x", TileType((64, 32), FP32, Mem.Vec, (10, 32)))
    call = make_call("tile.fillpad", (x,), {"pad_value": PadValue.min})
    assert call.type == TileType((64, 32), FP32, Mem.Vec)


def test_fillpad_takes_a_run_time_valid_shape_and_needs_a_pad_value():
    n = Var("n", INDEX)
    assert make_call("tile.fillpad", (tile([64, 32]), idx(n, 32)), {"pad_value": PadValue.zero})
    assert "pad_value must be a pl.PadValue" in message("tile.fillpad", tile([8, 8]), pad_value=0.0)
    assert "fills a tile outside its valid shape" in message(
        "tile.fillpad", tensor([8, 8]), pad_value=PadValue.zero
    )


def test_full_is_a_vec_tile_filled_with_a_scalar():
    value = Const(0.0, ScalarType(FP32))
    call = make_call("tile.full", (value,), {"shape": (16, 16), "dtype": FP16})
    assert call.type == TileType((16, 16), FP16, Mem.Vec)


# ---------------------------------------------------------------- matmul_acc


def test_matmul_acc_on_tensors_adds_into_a_tensor_of_the_product_type():
    acc, a, b = tensor([64, 64], name="acc"), tensor([64, 32]), tensor([32, 64], name="b")
    assert make_call("tensor.matmul_acc", (acc, a, b)).type == TensorType((64, 64), FP32)


def test_matmul_acc_with_a_wrong_accumulator_says_how_to_start_the_sum():
    acc = tile([64, 32], space=Mem.Acc, name="acc")
    a, b = tile([64, 32], space=Mem.Left), tile([32, 64], space=Mem.Right)
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.matmul_acc", (acc, a, b))
    assert info.value.message == (
        "pl.matmul_acc: accumulator must be a [64, 64] FP32 Acc tile, got Tile[[64, 32], FP32, Acc]"
    )
    assert info.value.advice == ("matmul.accumulator", {})  # worded by the front end: test_advice.py


# ---------------------------------------------------------------- assembly and stores


def test_tile_assemble_writes_acc_into_mat_or_vec_into_vec_and_returns_the_destination():
    dst = tile([64, 64], space=Mem.Mat, name="dst")
    assert make_call("tile.assemble", (dst, tile([64, 32], space=Mem.Acc), idx(0, 32))).type is dst.type
    vec = tile([8, 64], name="rows")
    assert make_call("tile.assemble", (vec, tile([1, 64]), idx(3, 0))).type is vec.type


def test_tile_assemble_along_another_path_lists_the_legal_ones():
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.assemble", (tile([8, 8], space=Mem.Mat), tile([8, 8]), idx(0, 0)))
    assert info.value.message == (
        "pl.assemble: cannot assemble Tile[[8, 8], FP32, Vec] into Tile[[8, 8], FP32, Mat]"
    )
    assert info.value.hint == "legal: Acc->Mat, Vec->Vec"


def test_tile_assemble_past_the_destination_is_rejected():
    text = message("tile.assemble", tile([8, 8]), tile([4, 8]), idx(6, 0))
    assert text == "pl.assemble: region [6:10] is outside dim 0 of size 8"


def test_a_partial_load_takes_its_valid_shape_as_operands():
    n = Var("n", INDEX)
    attrs = {"shape": (64, 32), "target_memory": Mem.Vec}
    call = make_call("tile.load_partial", (tensor([100, 32]), idx(n, 0), idx(n, 32)), attrs)
    assert call.type == TileType((64, 32), FP32, Mem.Vec)
    text = message("tile.load_partial", tensor([100, 32]), idx(n, 0), idx(n, 40), **attrs)
    assert text == "pl.load: valid_shape 40 of dim 1 is outside the tile's 32"


def test_an_atomic_store_needs_add_and_reads_and_writes_its_tensor():
    t, out = tile([8, 8]), tensor([8, 8], name="out")
    call = make_call("tile.store_atomic", (t, idx(0, 0), out), {"atomic": AtomicType.Add})
    assert call.type is out.type
    assert OPS["tile.store_atomic"].reads == (0, 2) and OPS["tile.store_atomic"].writes == (2,)
    assert "atomic must be pl.AtomicType.Add" in message(
        "tile.store_atomic", t, idx(0, 0), out, atomic=AtomicType.NONE
    )


def test_tensor_assemble_accepts_an_atomic_type_only():
    args = (tensor([8, 8], name="out"), tensor([8, 8]), idx(0, 0))
    assert make_call("tensor.assemble", args, {"atomic": AtomicType.Add})
    assert "atomic must be a pl.AtomicType" in message("tensor.assemble", *args, atomic="add")


def test_views_run_on_the_side_of_their_tile_and_reductions_on_the_vector_unit():
    assert OPS["tile.slice"].unit is Unit.MTE and OPS["tile.reshape"].unit is Unit.MTE
    assert OPS["tile.row_sum"].unit is Unit.VECTOR and OPS["tile.col_expand"].cost == "vector"
    assert OPS["tile.assemble"].writes == (0,)
