"""Type rules of the catalog's remainder, trigonometric, bitwise, comparison, selection, activation,
carry, partial, reduction and broadcast ops: each result type, and each mistake a TypeCheckError
that names the op and the operand types."""

import pytest

from pypto.ir import (
    INDEX,
    CmpType,
    Const,
    DataType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TypeCheckError,
    Var,
    make_call,
)
from pypto.ir.ops import get_op, tile
from pypto.ir.printer import print_ir

FP32, FP16, INT32, INT16, INT8, BOOL = (
    DataType.FP32,
    DataType.FP16,
    DataType.INT32,
    DataType.INT16,
    DataType.INT8,
    DataType.BOOL,
)


def t(shape=(16, 32), dtype=FP32, valid=None, name="t"):
    return Var(name, TileType(tuple(shape), dtype, MemorySpace.Vec, valid_shape=valid))


def g(shape=(16, 32), dtype=FP32, name="a"):
    return Var(name, TensorType(tuple(shape), dtype))


def c(value, dtype=FP32):
    return Const(value, ScalarType(dtype))


def rejected(op, args, attrs=None, match=""):
    with pytest.raises(TypeCheckError, match=match) as info:
        make_call(op, args, attrs)
    return info.value


# ---------------------------------------------------------------- remainders, trigonometry, precision


@pytest.mark.parametrize("op", ["tile.rem", "tile.fmod", "tensor.rem", "tensor.fmod"])
def test_remainders_keep_the_operand_type_and_need_one_dtype(op):
    make = t if op.startswith("tile") else g
    assert make_call(op, (make(dtype=INT32), make(dtype=INT32))).type == make(dtype=INT32).type
    rejected(op, (make(), make(dtype=FP16)), match="operand dtype mismatch")


def test_a_remainder_by_a_float_scalar_of_an_integer_tile_is_rejected():
    rejected("tile.rems", (t(dtype=INT32), c(0.5)), match="cannot hold exactly")


@pytest.mark.parametrize("op", ["tile.sin", "tensor.cos"])
def test_sin_and_cos_are_defined_on_fp32_only(op):
    make = t if op.startswith("tile") else g
    assert make_call(op, (make(),)).type == make().type
    err = rejected(op, (make(dtype=FP16),), match=r"is defined on pl\.FP32 elements, got")
    assert "pl.cast(x, pl.FP32)" in err.hint


def test_high_precision_is_a_path_for_fp16_and_fp32():
    assert make_call("tensor.recip", (g(dtype=FP16),), {"high_precision": True}).type == g(dtype=FP16).type
    rejected("tile.recip", (t(dtype=DataType.BF16),), {"high_precision": True}, match="FP16 and FP32")


def test_a_tile_rsqrt_takes_a_scratch_tile_at_least_as_large_and_a_tensor_rsqrt_none():
    assert make_call("tile.rsqrt", (t(), t(shape=(16, 64)))).type == t().type
    rejected("tile.rsqrt", (t(), t(shape=(8, 32))), match="needs a scratch tile of FP32 at least as large")
    assert get_op("tile.rsqrt").operands[1].optional
    assert get_op("tile.rsqrt").attr("high_precision") is None
    assert get_op("tensor.rsqrt").attr("high_precision").default is False


# ---------------------------------------------------------------- bitwise logic and shifts


def test_bitwise_ops_need_integers_and_name_the_problem_for_the_advice():
    err = rejected(
        "tile.and", (t(), t()), match=r"pl\.and_: is defined on integers, got Tile\[\[16, 32\], FP32"
    )
    assert err.advice[0] == "arith.integer_only"
    rejected("tensor.ors", (g(dtype=BOOL), Const(1, INDEX)), match="is defined on integers")


def test_and_or_xor_of_two_widths_compute_in_the_wider_and_a_shift_keeps_its_left_dtype():
    assert make_call("tile.and", (t(dtype=INT16), t(dtype=INT32))).type.dtype is INT32
    assert make_call("tile.xor", (t(dtype=INT8), t(dtype=DataType.UINT8))).type.dtype is INT8
    assert make_call("tile.shl", (t(dtype=INT16), t(dtype=INT32))).type.dtype is INT16


def test_bitwise_operands_of_two_shapes_do_not_broadcast():
    err = rejected("tile.or", (t(dtype=INT32), t(shape=(16, 1), dtype=INT32)), match="operand shape mismatch")
    assert "do not broadcast" in err.hint


@pytest.mark.parametrize("amount", [-1, 32])
def test_a_constant_shift_amount_outside_the_width_is_rejected(amount):
    rejected(
        "tile.shls", (t(dtype=INT32), Const(amount, INDEX)), match=f"shift amount {amount} is outside 0..31"
    )
    assert make_call("tile.shrs", (t(dtype=INT32), Const(31, INDEX))).type.dtype is INT32


def test_not_is_defined_on_16_bit_integers():
    assert make_call("tile.not", (t(dtype=INT16),)).type.dtype is INT16
    rejected("tensor.not", (g(dtype=INT32),), match=r"pl\.not_: is defined on pl\.INT16")


def test_the_xor_scratch_is_a_tile_ops_and_its_keyword_names_print_as_the_dsl_spells_them():
    assert make_call("tile.xor", (t(dtype=INT32), t(dtype=INT32), t(dtype=INT32))).type.dtype is INT32
    rejected("tile.xors", (t(dtype=INT32), Const(3, INDEX), t(dtype=INT16)), match="needs a scratch tile")
    a, b = t(dtype=INT32, name="a"), t(dtype=INT32, name="b")
    assert print_ir(make_call(getattr(tile, "and"), (a, b))) == "pl.tile.and_(a, b)"
    assert print_ir(make_call(getattr(tile, "not"), (t(dtype=INT16, name="a"),))) == "pl.tile.not_(a)"


# ---------------------------------------------------------------- comparisons and selections


def test_a_comparison_gives_a_bool_mask_of_the_operands_shape():
    mask = make_call("tile.cmp", (t(), t()), {"cmp_type": CmpType.gt}).type
    assert mask == TileType((16, 32), BOOL, MemorySpace.Vec)
    assert (
        make_call("tensor.cmps", (g(dtype=INT32), Const(3, INDEX)), {"cmp_type": CmpType.le}).type
        == g(dtype=BOOL).type
    )
    rejected("tile.cmp", (t(), t(dtype=FP16)), match="operand dtype mismatch")
    rejected("tile.cmp", (t(), t()), {"cmp_type": "bigger"}, match="unknown cmp_type 'bigger'")


def test_sel_needs_a_mask_like_its_operands_and_sels_a_scalar_that_fits():
    mask = t(dtype=BOOL, name="m")
    assert make_call("tile.sel", (mask, t(), t())).type == t().type
    assert make_call("tile.sel", (t(dtype=INT32), t(), t())).type == t().type  # non-zero is true
    rejected("tile.sel", (t(dtype=FP16), t(), t()), match="the mask must be BOOL")
    rejected("tile.sel", (mask, t(), t(shape=(16, 16))), match="operand shape mismatch")
    assert make_call("tile.sels", (mask, t(dtype=INT32), Const(5, INDEX))).type.dtype is INT32
    rejected("tile.sels", (mask, t(dtype=INT32), c(0.5)), match="cannot hold exactly")


# ---------------------------------------------------------------- activations, carries, partial ops


def test_prelu_takes_a_slope_per_element_and_lrelu_one_scalar_on_floats():
    assert make_call("tile.prelu", (t(), t(), t())).type == t().type
    err = rejected("tile.prelu", (t(), t(shape=(16, 1))), match="the slope must be shaped and typed like")
    assert "pl.lrelu" in err.hint
    rejected("tile.lrelu", (t(dtype=INT32), Const(1, INDEX)), match="is defined on floats")
    rejected("tile.lrelu", (t(), t()), match="the slope must be a scalar")


def test_carry_ops_take_three_tiles_of_one_shape_or_a_scalar_second():
    assert make_call("tile.subc", (t(), t(), t())).type == t().type
    assert make_call("tile.addsc", (t(), c(1.5), t())).type == t().type
    rejected("tile.addc", (t(), t(), t(shape=(16, 16))), match="one shape and dtype")


def test_a_partial_op_is_valid_over_the_larger_of_two_nested_regions():
    got = make_call("tile.part_add", (t(valid=(8, 32)), t(valid=(8, 16)))).type
    assert got.valid_shape == (8, 32)
    assert make_call("tile.part_max", (t(valid=(8, 16)), t())).type.valid_shape is None
    rejected("tile.part_mul", (t(valid=(8, 32)), t(valid=(16, 16))), match="union is no rectangle")
    assert make_call("tensor.part_min", (g(), g())).type == g().type


# ---------------------------------------------------------------- reductions and broadcasts


@pytest.mark.parametrize(("op", "shape"), [("tile.row_argmax", (16, 1)), ("tile.col_argmin", (1, 32))])
def test_an_index_reduction_is_int32(op, shape):
    got = make_call(op, (t(),)).type
    assert got == TileType(shape, INT32, MemorySpace.Vec)


def test_a_scratch_tile_is_optional_for_the_new_reductions_and_at_least_as_large_as_x():
    assert make_call("tile.col_sum", (t(), t(shape=(32, 32)))).type.shape == (1, 32)
    assert make_call("tile.row_prod", (t(),)).type.shape == (16, 1)
    rejected("tile.row_max", (t(),), match="needs a scratch tile shaped like")
    rejected("tile.col_min", (t(), t(shape=(8, 32))), match="needs a scratch tile shaped like")
    rejected("tensor.col_prod", (g(), t()), match="takes no scratch operand")


@pytest.mark.parametrize(
    ("op", "vec"),
    [("tile.row_expand_max", (16, 1)), ("tile.col_expand_sub", (1, 32)), ("tile.col_expand_expdif", (1, 32))],
)
def test_the_new_broadcasts_take_a_vector_along_their_axis(op, vec):
    assert make_call(op, (t(), t(shape=vec))).type == t().type
    rejected(op, (t(), t(shape=(vec[1], vec[0]))), match="the broadcast operand must be")


def test_expdif_is_defined_on_floats():
    rejected(
        "tile.row_expand_expdif",
        (t(dtype=INT32), t(shape=(16, 1), dtype=INT32)),
        match="is defined on floats",
    )


def test_expand_clone_repeats_ones_to_the_shape_and_expands_fills_like_x():
    assert make_call("tile.expand_clone", (t(shape=(1, 32)),), {"shape": (16, 32)}).type == t().type
    assert (
        make_call("tensor.expand_clone", (g(shape=(32,)),), {"shape": (4, 8, 32)}).type
        == g(shape=(4, 8, 32)).type
    )
    rejected("tile.expand_clone", (t(shape=(2, 32)),), {"shape": (16, 32)}, match="each dim must be 1 or the")
    assert make_call("tile.expands", (t(dtype=INT32), Const(7, INDEX))).type.dtype is INT32
    rejected("tile.expands", (t(dtype=FP16), c(1e6)), match="does not fit")
