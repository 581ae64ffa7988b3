import pytest

from pypto.ir import (
    INDEX,
    OPS,
    Const,
    DataType,
    MemorySpace,
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


def tile(shape, dtype=DataType.FP32, space=MemorySpace.Vec):
    return Var("t", TileType(tuple(shape), dtype, space))


def offsets(*values):
    elements = tuple(Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(INDEX for _ in elements)))


def test_every_elementwise_tensor_op_has_a_tile_twin():
    tensor_ops = {name.split(".", 1)[1] for name in OPS if name.startswith("tensor.")}
    tile_ops = {name.split(".", 1)[1] for name in OPS if name.startswith("tile.")}
    assert tensor_ops - {"create", "assemble", "paged_gather"} <= tile_ops  # paged: gather_row rows


def test_ops_name_their_unit():
    assert OPS["tile.matmul"].unit is Unit.CUBE
    assert OPS["tile.exp"].unit is Unit.VECTOR and OPS["tile.exp"].cost == "vector_slow"
    assert OPS["tile.add"].cost == "vector"
    assert OPS["tile.store"].writes == (2,)


def test_shape_mismatch_names_the_op_and_both_operand_types():
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.add", (tile([128, 64]), tile([64, 64])))
    assert info.value.message == (
        "pl.add: operand shape mismatch: Tile[[128, 64], FP32, Vec] vs Tile[[64, 64], FP32, Vec]"
    )


def test_dtype_mismatch_names_the_problem_for_the_front_ends_advice():
    """The rule names the problem; the front end words the fix (a pl.cast: pypto-lang's
    tests/test_advice.py)."""
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.add", (tile([8, 8]), tile([8, 8], DataType.FP16)))
    assert info.value.advice == ("binary.dtype_mismatch", {})


def test_matmul_of_fp16_tiles_accumulates_in_fp32_in_acc():
    a = tile([64, 32], DataType.FP16, MemorySpace.Left)
    b = tile([32, 16], DataType.FP16, MemorySpace.Right)
    assert make_call("tile.matmul", (a, b)).type == TileType((64, 16), DataType.FP32, MemorySpace.Acc)


def test_matmul_rejects_operands_outside_left_and_right():
    a = tile([64, 32], DataType.FP16, MemorySpace.Mat)
    b = tile([32, 16], DataType.FP16, MemorySpace.Right)
    with pytest.raises(TypeCheckError, match="left operand must be in Left"):
        make_call("tile.matmul", (a, b))


def test_matmul_inner_dimensions_must_agree():
    a, b = Var("a", TensorType((4, 8), DataType.FP16)), Var("b", TensorType((9, 4), DataType.FP16))
    with pytest.raises(TypeCheckError, match=r"inner dimensions differ.*\(8 != 9\)"):
        make_call("tensor.matmul", (a, b))


def test_load_checks_constant_region_bounds():
    src = Var("a", TensorType((128, 128), DataType.FP32))
    ok = make_call("tile.load", (src, offsets(64, 0)), {"shape": (64, 128), "target_memory": MemorySpace.Vec})
    assert ok.type == TileType((64, 128), DataType.FP32, MemorySpace.Vec)
    with pytest.raises(TypeCheckError, match=r"region \[96:160\] is outside dim 0 of size 128"):
        make_call("tile.load", (src, offsets(96, 0)), {"shape": (64, 128), "target_memory": MemorySpace.Vec})


def test_scalar_right_operand_selects_the_scalar_form():
    two = Const(2.0, ScalarType(DataType.FP32))
    assert make_call("tile.muls", (tile([8, 8]), two)).type == TileType(
        (8, 8), DataType.FP32, MemorySpace.Vec
    )
    with pytest.raises(TypeCheckError, match="right operand must be a scalar"):
        make_call("tile.muls", (tile([8, 8]), tile([8, 8])))
