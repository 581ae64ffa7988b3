"""Type rules of the generators: pl.arange (ci), pl.random, pl.tri."""

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
    Var,
    make_call,
)
from pypto.ir.ops import Positional

I32 = ScalarType(DataType.INT32)


def const(value, t=I32):
    return Const(value, t)


def extents(*values):
    elements = tuple(v if not isinstance(v, int) else Const(v, INDEX) for v in values)
    return TupleExpr(elements, TupleType(tuple(e.type for e in elements)))


def test_arange_makes_an_int32_tensor_or_a_vec_tile_and_counts_in_int16_or_int32_only():
    assert make_call("tensor.ci", (const(0),), {"shape": (4, 64)}).type == TensorType((4, 64), DataType.INT32)
    tile = make_call("tile.ci", (const(3),), {"shape": (1, 64), "dtype": DataType.INT16})
    assert tile.type == TileType((1, 64), DataType.INT16, MemorySpace.Vec)
    with pytest.raises(TypeCheckError, match=r"counts in pl\.INT16 or pl\.INT32, got pl\.FP32"):
        make_call("tile.ci", (const(0),), {"shape": (1, 64), "dtype": DataType.FP32})


def test_arange_refuses_a_unit_innermost_dim_a_float_start_and_a_start_out_of_range():
    with pytest.raises(TypeCheckError, match=r"the innermost dim of \[64, 1\] is 1"):
        make_call("tile.ci", (const(0),), {"shape": (64, 1)})
    with pytest.raises(TypeCheckError, match="start must be an integer scalar"):
        make_call("tile.ci", (Const(1.5, ScalarType(DataType.FP32)),), {"shape": (1, 64)})
    with pytest.raises(TypeCheckError, match=r"start 40000 does not fit pl\.INT16"):
        make_call("tile.ci", (const(40000),), {"shape": (1, 64), "dtype": DataType.INT16})


def test_random_draws_floats_or_narrow_integers_from_an_integer_seed():
    made = make_call("tensor.random", (const(7),), {"shape": (32, 64)})
    assert made.type == TensorType((32, 64), DataType.FP32)
    assert make_call(
        "tile.random", (const(7), Var("o", INDEX)), {"shape": (8, 8), "dtype": DataType.UINT8}
    ).type.dtype is (DataType.UINT8)
    with pytest.raises(TypeCheckError, match=r"draws floats or integers of up to 32 bits, got pl\.INT64"):
        make_call("tile.random", (const(7),), {"shape": (8, 8), "dtype": DataType.INT64})
    with pytest.raises(TypeCheckError, match="seed must be an integer scalar"):
        make_call("tile.random", (Const(0.5, ScalarType(DataType.FP32)),), {"shape": (8, 8)})


def test_the_generators_say_where_their_position_operand_is():
    assert OPS["tensor.ci"].trait(Positional) == Positional(0, "descending")
    assert OPS["tensor.random"].trait(Positional) == Positional(1)


def test_tri_is_a_2d_mask_tile_with_a_constant_valid_shape_in_its_type():
    mask = make_call("tile.tri", (const(0), extents(8, 30)), {"shape": (16, 32), "dtype": DataType.FP32})
    assert mask.type == TileType((16, 32), DataType.FP32, MemorySpace.Vec, (8, 30))
    run_time = make_call(
        "tile.tri", (const(1), extents(Var("r", INDEX), 32)), {"shape": (16, 32), "dtype": DataType.FP16}
    )
    assert run_time.type.valid_shape is None
    with pytest.raises(TypeCheckError, match=r"makes a 2-D mask, got shape \[4, 4, 4\]"):
        make_call("tile.tri", (const(0),), {"shape": (4, 4, 4), "dtype": DataType.FP32})
    with pytest.raises(TypeCheckError, match=r"valid extent 40 of dim 1 is outside the mask's 1\.\.32"):
        make_call("tile.tri", (const(0), extents(8, 40)), {"shape": (16, 32), "dtype": DataType.FP32})
