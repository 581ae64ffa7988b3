"""Every op's semantics against torch, and the dispatch table against the op table."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from sim_lowered import FP16, FP32, Mem, expr, rand

from pypto.ir import (
    INDEX,
    OPS,
    ArrayType,
    AtomicType,
    CastMode,
    CmpType,
    DataType,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    Unit,
    Var,
    make_call,
)
from pypto.ir.extents import WINDOW_ATTR, argument_shape
from pypto_sim_a2a3 import DivisionByZeroError, OutOfBoundsError, ScalarRangeError
from pypto_sim_a2a3.checks.coherence import Region, gm_accesses
from pypto_sim_a2a3.engine.crosscore import LAUNCH_OPS
from pypto_sim_a2a3.engine.semantics import SEMANTICS

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "rem": torch.remainder,
    "fmod": torch.fmod,
}
UNARY = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "recip": torch.reciprocal,
    "neg": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "sin": torch.sin,
    "cos": torch.cos,
}
BITWISE = {
    "and": torch.bitwise_and,
    "or": torch.bitwise_or,
    "xor": torch.bitwise_xor,
    "shl": torch.bitwise_left_shift,
    "shr": torch.bitwise_right_shift,
}
SCALAR = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "truediv": lambda a, b: a / b,
    "mod": lambda a, b: a % b,
    "min": min,
    "max": max,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
}
# Ops tested one by one below (the families above are parametrized).
SINGLE_OPS = {
    "tile.cast",
    "tile.concat",
    "tile.matmul",
    "tile.matmul_acc",
    "tile.matmul_bias",
    "tile.gemv",
    "tile.load",
    "tile.store",
    "tile.gather_row",
    "scalar.read",
    "tile.read",
    "tile.move",
    "tile.create",
    "tensor.create",
    "tensor.slice",
    "scalar.neg",
    "scalar.cast",
    "tile.col_expand",
    "tile.row_expand",
    "tile.not",
    "tile.cmp",
    "tile.cmps",
    "tile.sel",
    "tile.sels",
    "tile.prelu",
    "tile.lrelu",
    "tile.addc",
    "tile.subc",
    "tile.addsc",
    "tile.subsc",
    "tile.part_add",
    "tile.part_mul",
    "tile.part_max",
    "tile.part_min",
    "tile.expand_clone",
    "tile.expands",
    "tile.reshape",
    "tile.transpose",
    "tile.transpose_view",
    "tile.slice",
    "tile.extract",
    "tile.fillpad",
    "tile.set_validshape",
    "tile.full",
    "tile.assemble",
    "tile.load_partial",
    "tile.store_partial",
    "tile.store_atomic",
    "array.create",
    "array.get_element",
    "array.update_element",
    "prefetch.make_context",
    "prefetch.async_prefetch",
    "prefetch.session",
    "prefetch.wait",
    # tested in test_semantics_views.py
    "scalar.write",
    "tile.write",
    "tile.reinterpret_view",
    "tile.fillpad_expand",
    # tested in test_semantics_generators.py
    "tile.ci",
    "tile.random",
    "tile.tri",
    # tested in test_semantics_products.py
    "tile.batch_matmul",
    "tile.gemv_acc",
    "tile.gemv_bias",
    # tested in test_semantics_indexed.py
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
REDUCTIONS = {
    "row_max": lambda x: x.amax(dim=1, keepdim=True),
    "row_sum": lambda x: x.sum(dim=1, keepdim=True),
    "row_min": lambda x: x.amin(dim=1, keepdim=True),
    "row_prod": lambda x: x.prod(dim=1, keepdim=True),
    "row_argmax": lambda x: x.argmax(dim=1, keepdim=True).int(),
    "row_argmin": lambda x: x.argmin(dim=1, keepdim=True).int(),
    "col_sum": lambda x: x.sum(dim=0, keepdim=True),
    "col_max": lambda x: x.amax(dim=0, keepdim=True),
    "col_min": lambda x: x.amin(dim=0, keepdim=True),
    "col_prod": lambda x: x.prod(dim=0, keepdim=True),
    "col_argmax": lambda x: x.argmax(dim=0, keepdim=True).int(),
    "col_argmin": lambda x: x.argmin(dim=0, keepdim=True).int(),
}
EXPANDS = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "max": torch.maximum,
    "min": torch.minimum,
    "expdif": lambda x, v: torch.exp(x - v),
}
TESTED_OPS = (
    {f"tile.{n}" for n in BINARY}
    | {f"tile.{n}" for n in REDUCTIONS}
    | {f"tile.{axis}_expand_{n}" for axis in ("row", "col") for n in EXPANDS}
    | {f"tile.{n}" for n in BITWISE}
    | {f"tile.{n}s" for n in BITWISE}
    | {f"tile.{n}s" for n in BINARY}
    | {f"tile.{n}" for n in UNARY}
    | {f"scalar.{n}" for n in SCALAR}
    | SINGLE_OPS
    | {"debug.print", "debug.breakpoint"}
)


def apply(op: str, operands: list[tuple[Any, Any]], **attrs: Any) -> Any:
    """Run ``op``'s semantics on (type-or-expr, value) operand pairs."""
    exprs = [t if not isinstance(t, (TileType, TensorType, ScalarType)) else Var("v", t) for t, _ in operands]
    call = make_call(op, [expr(e) for e in exprs], attrs)
    return SEMANTICS[op](call, [value for _, value in operands])


def tile_of(x: torch.Tensor, space=Mem.Vec) -> tuple[TileType, torch.Tensor]:
    dtype = {
        torch.float32: FP32,
        torch.float16: FP16,
        torch.int32: DataType.INT32,
        torch.int16: DataType.INT16,
        torch.int8: DataType.INT8,
        torch.bool: DataType.BOOL,
    }
    return TileType(tuple(x.shape), dtype[x.dtype], space), x


# ---------------------------------------------------------------- coverage


def test_dispatch_table_covers_every_tile_and_scalar_op_of_the_op_table():
    device_units = (Unit.VECTOR, Unit.CUBE, Unit.MTE, Unit.SCALAR)
    required = {
        name
        for name, op in OPS.items()
        if op.unit in device_units and name.split(".")[0] in ("tile", "scalar", "array")
    } | {"tensor.create"}
    # the lane index is the launch's (crosscore.LAUNCH_OPS), not a pure semantics
    assert required - SEMANTICS.keys() - LAUNCH_OPS.keys() == set()


def test_every_implemented_op_has_a_semantics_test():
    assert set(SEMANTICS) == TESTED_OPS


@pytest.mark.parametrize("op", ["debug.print", "debug.breakpoint"])
def test_a_backend_without_a_kernel_debugger_drops_a_debug_op_with_a_warning(op):
    from pypto.ir.semantics import DebugOpIgnored

    call = make_call(op, [], {})
    with pytest.warns(DebugOpIgnored, match=f"{op}.* is ignored: this backend has no kernel debugger"):
        assert SEMANTICS[op](call, []) is None


# ---------------------------------------------------------------- elementwise


@pytest.mark.parametrize("name", BINARY)
def test_binary_tile_op_matches_torch(name):
    a, b = rand(8, 16, seed=1), rand(8, 16, seed=2).abs() + 0.5
    got = apply(f"tile.{name}", [tile_of(a), tile_of(b)])
    torch.testing.assert_close(got, BINARY[name](a, b), rtol=0, atol=0)


@pytest.mark.parametrize(("name", "expected"), [("rem", [[1, 2, -2, -1]]), ("fmod", [[1, -1, 1, -1]])])
def test_integer_remainders_take_the_divisors_sign_or_the_dividends(name, expected):
    a = torch.tensor([[7, -7, 7, -7]], dtype=torch.int32)
    b = torch.tensor([[3, 3, -3, -3]], dtype=torch.int32)
    assert apply(f"tile.{name}", [tile_of(a), tile_of(b)]).tolist() == expected


@pytest.mark.parametrize("op", ["tile.rem", "tile.fmod", "tile.col_expand_div"])
def test_an_integer_remainder_or_quotient_by_zero_is_a_pypto_error(op):
    a = torch.ones(2, 4, dtype=torch.int32)
    b = torch.zeros(2 if op != "tile.col_expand_div" else 1, 4, dtype=torch.int32)
    with pytest.raises(DivisionByZeroError, match="integer division by zero"):
        apply(op, [tile_of(a), tile_of(b)])


@pytest.mark.parametrize("op", ["tile.rems", "tile.fmods"])
def test_an_integer_remainder_by_a_zero_scalar_is_a_pypto_error(op):
    a = torch.ones(1, 4, dtype=torch.int32)
    with pytest.raises(DivisionByZeroError, match="integer division by zero"):
        apply(op, [tile_of(a), (ScalarType(DataType.INT32), 0)])


def test_rsqrt_with_a_scratch_tile_gives_the_same_numbers():
    x = rand(8, 16, seed=40).abs() + 0.1
    got = apply("tile.rsqrt", [tile_of(x), tile_of(torch.zeros_like(x))])
    torch.testing.assert_close(got, torch.rsqrt(x), rtol=0, atol=0)


# ---------------------------------------------------------------- bitwise logic and shifts


def _ints(*shape: int, low: int = -1000, high: int = 1000, dtype: torch.dtype = torch.int32, seed: int = 0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_tile_op_matches_torch(name):
    a = _ints(8, 16, seed=41)
    b = _ints(8, 16, low=0, high=31, seed=42) if name.startswith("sh") else _ints(8, 16, seed=42)
    got = apply(f"tile.{name}", [tile_of(a), tile_of(b)])
    assert torch.equal(got, BITWISE[name](a, b))


@pytest.mark.parametrize("name", BITWISE)
def test_bitwise_tile_op_with_a_scalar_matches_torch(name):
    a = _ints(8, 16, seed=43)
    got = apply(f"tile.{name}s", [tile_of(a), (ScalarType(DataType.INT32), 5)])
    assert torch.equal(got, BITWISE[name](a, torch.tensor(5, dtype=torch.int32)))


def test_and_of_two_integer_widths_computes_in_the_wider_one():
    a = _ints(4, 8, dtype=torch.int8, low=-100, high=100, seed=44)
    b = _ints(4, 8, seed=45)
    got = apply("tile.and", [tile_of(a), tile_of(b)])
    assert got.dtype == torch.int32
    assert torch.equal(got, a.to(torch.int32) & b)


def test_shift_right_of_a_negative_integer_is_arithmetic():
    a = torch.tensor([[-8, 8]], dtype=torch.int32)
    assert apply("tile.shrs", [tile_of(a), (ScalarType(DataType.INT32), 1)]).tolist() == [[-4, 4]]


def test_not_complements_16_bit_integers():
    a = _ints(4, 8, dtype=torch.int16, seed=46)
    got = apply("tile.not", [(TileType((4, 8), DataType.INT16, Mem.Vec), a)])
    assert torch.equal(got, ~a)


@pytest.mark.parametrize("amount", [-1, 32])
def test_a_shift_amount_outside_the_element_width_is_a_pypto_error(amount):
    a = _ints(2, 4, seed=47)
    with pytest.raises(ScalarRangeError, match=rf"shift amount {amount} is outside 0\.\.31"):
        apply("tile.shls", [tile_of(a), (Var("n", ScalarType(DataType.INT32)), amount)])
    amounts = torch.full((2, 4), amount, dtype=torch.int32)
    with pytest.raises(ScalarRangeError, match=r"is outside 0\.\.31"):
        apply("tile.shl", [tile_of(a), tile_of(amounts)])


# ---------------------------------------------------------------- comparisons and selections


@pytest.mark.parametrize(
    ("mode", "fn"),
    [
        ("eq", torch.eq),
        ("ne", torch.ne),
        ("lt", torch.lt),
        ("le", torch.le),
        ("gt", torch.gt),
        ("ge", torch.ge),
    ],
)
def test_cmp_and_cmps_give_a_bool_mask_of_the_test(mode, fn):
    a = torch.tensor([[1.0, 2.0, 3.0, 2.0]])
    b = torch.tensor([[2.0, 2.0, 2.0, 1.0]])
    got = apply("tile.cmp", [tile_of(a), tile_of(b)], cmp_type=CmpType(mode))
    assert got.dtype == torch.bool and torch.equal(got, fn(a, b))
    got = apply("tile.cmps", [tile_of(a), (ScalarType(FP32), 2.0)], cmp_type=CmpType(mode))
    assert torch.equal(got, fn(a, torch.tensor(2.0)))


def test_sel_picks_lhs_where_the_mask_is_true_and_sels_the_scalar_elsewhere():
    a, b = rand(8, 16, seed=48), rand(8, 16, seed=49)
    mask = a > b
    mask_tile = (TileType((8, 16), DataType.BOOL, Mem.Vec), mask)
    torch.testing.assert_close(apply("tile.sel", [mask_tile, tile_of(a), tile_of(b)]), torch.maximum(a, b))
    got = apply("tile.sels", [mask_tile, tile_of(a), (ScalarType(FP32), -1.0)])
    torch.testing.assert_close(got, torch.where(mask, a, torch.tensor(-1.0)))


def test_sel_reads_an_integer_mask_as_true_where_non_zero():
    a, b = rand(2, 4, seed=50), rand(2, 4, seed=51)
    mask = torch.tensor([[0, 1, 2, 0], [-1, 0, 0, 7]], dtype=torch.int32)
    got = apply("tile.sel", [tile_of(mask), tile_of(a), tile_of(b)])
    torch.testing.assert_close(got, torch.where(mask != 0, a, b))


# ---------------------------------------------------------------- activations, carries, partial ops


def test_prelu_scales_the_negative_elements_by_their_slope_and_lrelu_by_one():
    x, slope = rand(8, 16, seed=52), rand(8, 16, seed=53).abs()
    torch.testing.assert_close(
        apply("tile.prelu", [tile_of(x), tile_of(slope)]), torch.where(x > 0, x, x * slope)
    )
    got = apply("tile.lrelu", [tile_of(x), (ScalarType(FP32), 0.1)])
    torch.testing.assert_close(got, torch.nn.functional.leaky_relu(x, 0.1))


@pytest.mark.parametrize(
    ("op", "fn"),
    [("tile.addc", lambda a, b, c: a + b + c), ("tile.subc", lambda a, b, c: a - b + c)],
)
def test_carry_ops_add_the_carry_operand(op, fn):
    a, b, c = rand(8, 16, seed=54), rand(8, 16, seed=55), rand(8, 16, seed=56)
    torch.testing.assert_close(apply(op, [tile_of(a), tile_of(b), tile_of(c)]), fn(a, b, c))
    got = apply(f"{op[:-1]}sc", [tile_of(a), (ScalarType(FP32), 1.5), tile_of(c)])
    torch.testing.assert_close(got, fn(a, torch.tensor(1.5), c))


@pytest.mark.parametrize(
    ("name", "fn"),
    [("add", torch.add), ("mul", torch.mul), ("max", torch.maximum), ("min", torch.minimum)],
)
def test_part_ops_combine_where_both_are_valid_and_copy_where_one_is(name, fn):
    a, b = rand(8, 16, seed=57), rand(8, 16, seed=58)
    small = TileType((8, 16), FP32, Mem.Vec, valid_shape=(4, 16))
    got = apply(f"tile.part_{name}", [tile_of(a), (small, b)])
    torch.testing.assert_close(got[:4], fn(a[:4], b[:4]))
    torch.testing.assert_close(got[4:], a[4:])
    got = apply(f"tile.part_{name}", [(small, a), tile_of(b)])
    torch.testing.assert_close(got[4:], b[4:])


def test_expands_fills_a_tile_like_x_and_expand_clone_repeats_a_row():
    x, row = rand(8, 16, seed=59), rand(1, 16, seed=60)
    got = apply("tile.expands", [tile_of(x), (ScalarType(FP32), 2.5)])
    assert torch.equal(got, torch.full((8, 16), 2.5))
    torch.testing.assert_close(apply("tile.expand_clone", [tile_of(row)], shape=(8, 16)), row.expand(8, 16))


@pytest.mark.parametrize("name", BINARY)
def test_binary_tile_op_with_scalar_right_operand_matches_torch(name):
    a = rand(8, 16, seed=3)
    got = apply(f"tile.{name}s", [tile_of(a), (ScalarType(FP32), 1.5)])
    torch.testing.assert_close(got, BINARY[name](a, torch.tensor(1.5)), rtol=0, atol=0)


@pytest.mark.parametrize("name", UNARY)
def test_unary_tile_op_matches_torch(name):
    x = rand(8, 16, seed=4).abs() + 0.1 if name in ("log", "sqrt", "rsqrt") else rand(8, 16, seed=4)
    got = apply(f"tile.{name}", [tile_of(x)])
    torch.testing.assert_close(got, UNARY[name](x), rtol=0, atol=0)


def test_vector_ops_on_fp16_tiles_compute_and_return_fp16():
    a, b = rand(8, 16, dtype=torch.float16, seed=5), rand(8, 16, dtype=torch.float16, seed=6)
    got = apply("tile.add", [tile_of(a), tile_of(b)])
    assert got.dtype == torch.float16
    torch.testing.assert_close(got, a + b, rtol=0, atol=0)


def test_integer_tile_division_truncates_toward_zero():
    a = torch.tensor([[7, -7, 9, -9]], dtype=torch.int32)
    b = torch.tensor([[2, 2, -4, 4]], dtype=torch.int32)
    got = apply("tile.div", [tile_of(a), tile_of(b)])
    assert got.tolist() == [[3, -3, -2, -2]]


def test_integer_tile_division_by_zero_is_a_pypto_error_at_the_op():
    a = torch.ones(1, 4, dtype=torch.int32)
    with pytest.raises(DivisionByZeroError, match="integer division by zero"):
        apply("tile.divs", [tile_of(a), (ScalarType(DataType.INT32), 0)])


def test_concat_joins_columns():
    a, b = rand(8, 16, seed=7), rand(8, 8, seed=8)
    got = apply("tile.concat", [tile_of(a), tile_of(b)])
    torch.testing.assert_close(got, torch.cat([a, b], dim=1), rtol=0, atol=0)


# ---------------------------------------------------------------- casts

CAST_INPUT = torch.tensor([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -2.7]])
CAST_EXPECTED = {
    "round": [-3, -2, -1, 1, 2, 3, 0, -3],
    "rint": [-2, -2, 0, 0, 2, 2, 0, -3],
    "floor": [-3, -2, -1, 0, 1, 2, 0, -3],
    "ceil": [-2, -1, 0, 1, 2, 3, 1, -2],
    "trunc": [-2, -1, 0, 0, 1, 2, 0, -2],
}


@pytest.mark.parametrize("mode", CAST_EXPECTED)
def test_float_to_int_cast_rounds_per_mode(mode):
    got = apply("tile.cast", [tile_of(CAST_INPUT)], dtype=DataType.INT32, mode=CastMode(mode))
    assert got.dtype == torch.int32
    assert got.tolist() == [CAST_EXPECTED[mode]]


def test_float_to_int_cast_saturates_at_the_integer_range():
    x = torch.tensor([[1e12, -1e12, 300.0]])
    got = apply("tile.cast", [tile_of(x)], dtype=DataType.INT8, mode=CastMode.round)
    assert got.tolist() == [[127, -128, 127]]


def test_float_to_float_cast_is_a_plain_torch_cast():
    x = rand(8, 16, seed=9)
    got = apply("tile.cast", [tile_of(x)], dtype=DataType.BF16, mode=CastMode.floor)
    torch.testing.assert_close(got, x.to(torch.bfloat16), rtol=0, atol=0)


def test_unknown_cast_mode_names_the_modes():
    with pytest.raises(Exception, match="unknown rounding mode 'nearest'") as info:
        apply("tile.cast", [tile_of(CAST_INPUT)], dtype=DataType.INT32, mode="nearest")
    assert "'rint'" in info.value.hint


@pytest.mark.parametrize(
    ("value", "dtype", "mode", "expected"),
    [
        (2.5, DataType.INT32, "round", 3),
        (2.5, DataType.INT32, "rint", 2),
        (-2.5, DataType.INDEX, "trunc", -2),
        (7, DataType.FP32, "round", 7.0),
        (0.1, DataType.FP16, "round", float(torch.tensor(0.1, dtype=torch.float16))),
    ],
)
def test_scalar_cast_converts_with_the_same_rounding_as_tiles(value, dtype, mode, expected):
    assert (
        apply(
            "scalar.cast",
            [(ScalarType(FP32 if isinstance(value, float) else INDEX.dtype), value)],
            dtype=dtype,
            mode=CastMode(mode),
        )
        == expected
    )


# ---------------------------------------------------------------- cube


def test_matmul_matches_torch():
    a, b = rand(32, 48, seed=10), rand(48, 16, seed=11)
    got = apply("tile.matmul", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)])
    torch.testing.assert_close(got, a @ b)


def test_matmul_transposes_operands_per_attrs():
    a, b = rand(48, 32, seed=12), rand(16, 48, seed=13)
    got = apply("tile.matmul", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)], a_trans=True, b_trans=True)
    torch.testing.assert_close(got, a.T @ b.T)


def test_fp16_matmul_keeps_fp32_precision_in_the_accumulator():
    # 1 + 2**-11 needs fp32: an fp16 accumulator would round it to 1.
    a = torch.tensor([[1.0, 1.0]], dtype=torch.float16)
    b = torch.tensor([[1.0], [2.0**-11]], dtype=torch.float16)
    got = apply("tile.matmul", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)])
    assert got.dtype == torch.float32
    assert got.item() == 1.0 + 2.0**-11


def test_fp16_matmul_with_fp16_out_dtype_rounds_once_at_the_end():
    a = torch.tensor([[1.0, 1.0]], dtype=torch.float16)
    b = torch.tensor([[1.0], [2.0**-11]], dtype=torch.float16)
    got = apply("tile.matmul", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)], out_dtype=FP16)
    assert got.dtype == torch.float16
    assert got.item() == 1.0


def test_int8_matmul_accumulates_in_int32():
    a = torch.full((4, 64), 100, dtype=torch.int8)
    b = torch.full((64, 4), 100, dtype=torch.int8)
    got = apply("tile.matmul", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)])
    assert got.dtype == torch.int32
    assert got[0, 0].item() == 64 * 100 * 100


def test_matmul_acc_adds_the_product_to_the_accumulator():
    acc, a, b = rand(16, 16, seed=14), rand(16, 32, seed=15), rand(32, 16, seed=16)
    got = apply("tile.matmul_acc", [tile_of(acc, Mem.Acc), tile_of(a, Mem.Left), tile_of(b, Mem.Right)])
    torch.testing.assert_close(got, acc + a @ b)


def test_matmul_bias_adds_the_bias_row_to_every_row_of_the_product():
    a, b, bias = rand(16, 32, seed=17), rand(32, 16, seed=18), rand(1, 16, seed=19)
    got = apply("tile.matmul_bias", [tile_of(a, Mem.Left), tile_of(b, Mem.Right), tile_of(bias, Mem.Bias)])
    torch.testing.assert_close(got, a @ b + bias)


def test_gemv_multiplies_a_row_by_a_matrix_transposed_if_asked():
    a, b = rand(1, 32, seed=20), rand(16, 32, seed=21)
    got = apply("tile.gemv", [tile_of(a, Mem.Left), tile_of(b, Mem.Right)], b_trans=True)
    torch.testing.assert_close(got, a @ b.T)


# ---------------------------------------------------------------- data movement


def _gm(x: torch.Tensor) -> tuple[TensorType, torch.Tensor]:
    return TensorType(tuple(x.shape), tile_of(x)[0].dtype), x


def test_load_copies_the_region_at_the_offsets():
    gm = rand(64, 32, seed=17)
    got = apply("tile.load", [_gm(gm), ([16, 8], (16, 8))], shape=(16, 16), target_memory=Mem.Vec)
    torch.testing.assert_close(got, gm[16:32, 8:24], rtol=0, atol=0)


def test_load_with_valid_shape_copies_only_the_valid_part_and_zeroes_the_rest():
    gm = rand(20, 16, seed=18)
    row = Var("row", INDEX)  # a run-time offset: the type rule cannot check it statically
    got = apply(
        "tile.load", [_gm(gm), ([row, 0], (16, 0))], shape=(8, 16), target_memory=Mem.Vec, valid_shape=(4, 16)
    )
    torch.testing.assert_close(got[:4], gm[16:20], rtol=0, atol=0)
    assert bool((got[4:] == 0).all())


def test_load_outside_the_tensor_raises_out_of_bounds_at_the_op():
    gm = rand(64, 32)
    row = Var("row", INDEX)
    with pytest.raises(OutOfBoundsError, match=r"region \[56:72\] is outside dim 0 of size 64") as info:
        apply("tile.load", [_gm(gm), ([row, 0], (56, 0))], shape=(16, 32), target_memory=Mem.Vec)
    assert isinstance(info.value, IndexError)
    assert "valid_shape" in info.value.hint


def test_store_writes_the_tile_into_the_region():
    gm, tile = torch.zeros(32, 32), rand(8, 16, seed=19)
    returned = apply("tile.store", [tile_of(tile), ([8, 16], (8, 16)), _gm(gm)])
    assert returned is gm
    torch.testing.assert_close(gm[8:16, 16:32], tile, rtol=0, atol=0)
    assert float(gm.sum() - tile.sum()) == pytest.approx(0.0, abs=1e-4)


def test_store_of_a_tile_with_valid_shape_writes_only_the_valid_part():
    gm, tile = torch.zeros(10, 16), rand(8, 16, seed=20)
    tile_type = TileType((8, 16), FP32, Mem.Vec, valid_shape=(2, 16))
    apply("tile.store", [(tile_type, tile), ([Var("row", INDEX), 0], (8, 0)), _gm(gm)])
    torch.testing.assert_close(gm[8:], tile[:2], rtol=0, atol=0)
    assert bool((gm[:8] == 0).all())


def test_gather_row_writes_one_row_of_the_tensor_into_the_destination_tiles_own_buffer():
    src, dst = rand(8, 16, seed=22), rand(4, 16, seed=23)
    before = dst.clone()
    got = apply(
        "tile.gather_row",
        [tile_of(dst), _gm(src), ([2, 0], (2, 0)), ([Var("row", INDEX), 0], (5, 0))],
        shape=(1, 16),
    )
    torch.testing.assert_close(got[2], src[5], rtol=0, atol=0)
    torch.testing.assert_close(got[[0, 1, 3]], before[[0, 1, 3]], rtol=0, atol=0)
    assert got.data_ptr() == dst.data_ptr()  # in place: the destination tile's bytes changed


def test_gather_row_from_past_the_tensor_raises_out_of_bounds():
    src, dst = rand(8, 16), torch.zeros(4, 16)
    with pytest.raises(OutOfBoundsError, match=r"pl\.gather_row: region \[8:9\] is outside dim 0 of size 8"):
        apply(
            "tile.gather_row",
            [tile_of(dst), _gm(src), ([0, 0], (0, 0)), ([Var("row", INDEX), 0], (8, 0))],
            shape=(1, 16),
        )


def _gather_rows(dst, src, dst_at, src_at, window, valid):
    """``tile.gather_row`` of a ``window`` with a run-time ``valid`` shape (offsets and extents
    given as run-time index values, as a kernel computes them)."""
    n = [Var(f"n{i}", INDEX) for i in range(6)]
    return apply(
        "tile.gather_row",
        [tile_of(dst), _gm(src), ([n[0], n[1]], dst_at), ([n[2], n[3]], src_at), ([n[4], n[5]], valid)],
        shape=window,
    )


def test_gather_row_with_a_valid_shape_copies_only_that_part_of_the_window():
    src, dst = rand(32, 16, seed=24), rand(8, 16, seed=25)
    before = dst.clone()
    # The window [3:11] hangs past the 8-row tile; only the 5 valid rows are written.
    got = _gather_rows(dst, src, (3, 0), (20, 0), (8, 16), (5, 16))
    torch.testing.assert_close(got[3:8], src[20:25], rtol=0, atol=0)
    torch.testing.assert_close(got[:3], before[:3], rtol=0, atol=0)
    assert got.data_ptr() == dst.data_ptr()
    unchanged = _gather_rows(dst, src, (8, 0), (0, 0), (8, 16), (0, 16))  # an empty run: nothing
    torch.testing.assert_close(unchanged[3:8], src[20:25], rtol=0, atol=0)


def test_gather_row_valid_shape_outside_the_window_raises_out_of_bounds():
    src, dst = rand(32, 16), torch.zeros(8, 16)
    with pytest.raises(
        OutOfBoundsError, match=r"valid_shape \[9, 16\] leaves the window's \[8, 16\] in dim 0"
    ):
        _gather_rows(dst, src, (0, 0), (0, 0), (8, 16), (9, 16))
    with pytest.raises(OutOfBoundsError, match=r"valid_shape \[-1, 16\] leaves the window's"):
        _gather_rows(dst, src, (0, 0), (0, 0), (8, 16), (-1, 16))


def test_gather_row_valid_rows_past_the_destination_or_the_source_raise_out_of_bounds():
    src, dst = rand(32, 16), torch.zeros(8, 16)
    with pytest.raises(OutOfBoundsError, match=r"pl\.gather_row: region \[3:9\] is outside dim 0 of size 8"):
        _gather_rows(dst, src, (3, 0), (0, 0), (8, 16), (6, 16))
    with pytest.raises(
        OutOfBoundsError, match=r"pl\.gather_row: region \[30:34\] is outside dim 0 of size 32"
    ):
        _gather_rows(dst, src, (0, 0), (30, 0), (8, 16), (4, 16))


def test_a_gather_row_with_a_valid_shape_reads_only_its_valid_rows_of_global_memory():
    src, dst = rand(32, 16), torch.zeros(8, 16)
    n = [Var(f"n{i}", INDEX) for i in range(6)]
    operands = [Var("dst", tile_of(dst)[0]), Var("src", _gm(src)[0]), expr(n[:2]), expr(n[2:4]), expr(n[4:])]
    call = make_call("tile.gather_row", operands, {"shape": (8, 16)})
    (read,) = gm_accesses("cg0.AIV0", call, (dst, src, (0, 0), (20, 0), (3, 16)))
    assert read.region == Region((20, 0), (23, 16)) and not read.write


@pytest.mark.parametrize(("dtype", "expected"), [(torch.int32, 7), (torch.float32, 7.0)])
def test_read_gives_one_element_as_a_python_scalar_of_the_tensors_dtype(dtype, expected):
    gm = torch.zeros(4, 4, dtype=dtype)
    gm[1, 2] = 7
    got = apply("scalar.read", [_gm(gm), ([Var("i", INDEX), 2], (1, 2))])
    assert got == expected
    assert type(got) is type(expected)


def test_a_tile_read_gives_one_element_of_the_tile():
    x = rand(8, 16, seed=71)
    got = apply("tile.read", [tile_of(x), ([Var("i", INDEX), 5], (3, 5))])
    assert got == x[3, 5].item()


def test_read_outside_the_tensor_raises_out_of_bounds():
    with pytest.raises(OutOfBoundsError, match=r"pl\.read: region \[4:5\] is outside dim 0"):
        apply("scalar.read", [_gm(torch.zeros(4, 4)), ([Var("i", INDEX), 0], (4, 0))])


@pytest.mark.parametrize(("dtype", "zero"), [(DataType.INT32, 0), (DataType.FP16, 0.0), (INDEX.dtype, 0)])
def test_array_create_gives_zeros_of_the_elements_kind(dtype, zero):
    got = apply("array.create", [], size=3, dtype=dtype)
    assert got == (zero, zero, zero)
    assert all(type(v) is type(zero) for v in got)


def test_array_set_gives_a_new_array_with_the_element_in_the_elements_dtype():
    before = (0.0, 0.0, 0.0)
    halves = Var("a", ArrayType(3, FP16))
    got = apply("array.update_element", [(halves, before), (Var("i", INDEX), 1), (ScalarType(FP32), 0.1)])
    assert before == (0.0, 0.0, 0.0)  # the operand is not written
    assert got == (0.0, torch.tensor(0.1, dtype=torch.float16).item(), 0.0)


def test_array_get_reads_one_element_as_a_scalar_of_the_arrays_dtype():
    ints = Var("a", ArrayType(3, DataType.INT32))
    got = apply("array.get_element", [(ints, (4, 5, 6)), (Var("i", INDEX), 2)])
    assert got == 6 and type(got) is int


@pytest.mark.parametrize("index", [-1, 3])
def test_array_get_and_set_outside_the_array_raise_out_of_bounds(index):
    ints = Var("a", ArrayType(3, DataType.INT32))
    with pytest.raises(OutOfBoundsError, match=f"index {index} is outside the scalar array of 3 elements"):
        apply("array.get_element", [(ints, (0, 0, 0)), (Var("i", INDEX), index)])
    with pytest.raises(OutOfBoundsError, match=f"index {index} is outside the scalar array of 3 elements"):
        apply("array.update_element", [(ints, (0, 0, 0)), (Var("i", INDEX), index), (INDEX, 1)])


def test_array_set_of_a_value_beyond_the_elements_range_raises_scalar_range():
    bytes_ = Var("a", ArrayType(2, DataType.INT8))
    with pytest.raises(ScalarRangeError, match=r"does not fit torch\.int8"):
        apply(
            "array.update_element",
            [(bytes_, (0, 0)), (Var("i", INDEX), 0), (ScalarType(DataType.INT32), 200)],
        )


def test_move_copies_the_tile_without_changing_its_dtype():
    acc = rand(16, 16, seed=21)
    got = apply("tile.move", [tile_of(acc, Mem.Acc)], target_memory=Mem.Mat)
    assert got.dtype == torch.float32
    assert got.data_ptr() != acc.data_ptr()
    torch.testing.assert_close(got, acc, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["tile.create", "tensor.create"])
def test_create_gives_zeros_of_the_shape_and_dtype(op):
    got = apply(op, [], shape=(4, 8), dtype=FP16, target_memory=Mem.Vec)
    assert got.dtype == torch.float16
    assert got.shape == (4, 8)
    assert bool((got == 0).all())


def test_a_view_holds_the_window_of_its_tensor_without_a_copy():
    base = torch.zeros(8, 16)
    call = make_call(
        "tensor.slice", (Var("t", TensorType(tuple(base.shape), FP32)), expr([2, 4])), {"shape": (3, 8)}
    )
    got = SEMANTICS["tensor.slice"](call, [base, (2, 4)])
    got.fill_(1.0)
    assert int(base.sum()) == 24 and bool((base[2:5, 4:12] == 1).all())
    assert argument_shape(got) == (3, 8) and not hasattr(got, WINDOW_ATTR)


def test_a_window_past_the_end_is_cut_there_and_keeps_the_window_it_declares():
    base = torch.arange(10.0)
    call = make_call(
        "tensor.slice",
        (Var("t", TensorType(tuple(base.shape), FP32)), expr([Var("r", INDEX)])),
        {"shape": (8,)},
    )
    got = SEMANTICS["tensor.slice"](call, [base, (6,)])
    assert got.tolist() == [6.0, 7.0, 8.0, 9.0]
    assert argument_shape(got) == (8,)  # what a kernel's extents bind to


# ---------------------------------------------------------------- reductions and broadcasts


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_matches_torch(name):
    x = rand(16, 32, seed=30) * 0.1 + 1 if "prod" in name else rand(16, 32, seed=30)
    operands = [tile_of(x), tile_of(torch.zeros_like(x))] if name.startswith("row") else [tile_of(x)]
    got = apply(f"tile.{name}", operands)
    torch.testing.assert_close(got, REDUCTIONS[name](x), rtol=1e-6, atol=1e-6)


def test_an_index_reduction_gives_the_first_extremum():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    assert apply("tile.row_argmax", [tile_of(x)]).tolist() == [[1], [0]]
    assert apply("tile.col_argmin", [tile_of(x)]).tolist() == [[0, 1, 1]]


@pytest.mark.parametrize("name", ["col_sum", "col_prod", "col_max", "col_min"])
def test_a_column_reduction_with_a_scratch_tile_reduces_as_a_binary_tree(name):
    x = rand(7, 16, seed=61).half()
    got = apply(f"tile.{name}", [tile_of(x), tile_of(torch.zeros_like(x))])
    rows = list(x.unbind(0))
    fn = {"col_sum": torch.add, "col_prod": torch.mul, "col_max": torch.maximum, "col_min": torch.minimum}[
        name
    ]
    while len(rows) > 1:  # pairs (0, h), (1, h + 1), ... of the first 2h rows; an odd last row waits
        half = len(rows) // 2
        rows = [fn(rows[i], rows[half + i]) for i in range(half)] + rows[2 * half :]
    assert torch.equal(got, rows[0].unsqueeze(0))


@pytest.mark.parametrize("axis", ["row", "col"])
@pytest.mark.parametrize("name", EXPANDS)
def test_a_broadcast_repeats_the_vector_and_combines_it_with_x(axis, name):
    x = rand(16, 32, seed=31)
    v = (rand(16, 1, seed=32) if axis == "row" else rand(1, 32, seed=32)).abs() + 0.5
    got = apply(f"tile.{axis}_expand_{name}", [tile_of(x), tile_of(v)])
    torch.testing.assert_close(got, EXPANDS[name](x, v), rtol=0, atol=0)


def test_row_expand_repeats_the_row_vector_across_the_columns():
    x, v = rand(16, 32, seed=35), rand(16, 1, seed=36)
    torch.testing.assert_close(apply("tile.row_expand", [tile_of(x), tile_of(v)]), v.expand(16, 32))


def test_col_expand_repeats_the_column_vector_down_the_rows():
    x, g = rand(16, 32, seed=33), rand(1, 32, seed=34)
    torch.testing.assert_close(apply("tile.col_expand", [tile_of(x), tile_of(g)]), g.expand(16, 32))


# ---------------------------------------------------------------- views, fills, tile assembly


def test_transpose_swaps_rows_and_columns():
    x = rand(8, 16, seed=21)
    got = apply("tile.transpose", [tile_of(x)], axis1=0, axis2=1)
    torch.testing.assert_close(got, x.transpose(0, 1), rtol=0, atol=0)
    assert got.is_contiguous()


def test_reshape_keeps_the_elements_in_row_major_order():
    x = rand(8, 16, seed=35)
    got = apply("tile.reshape", [tile_of(x)], shape=(16, 8))
    torch.testing.assert_close(got, x.reshape(16, 8), rtol=0, atol=0)


def test_transpose_view_swaps_the_two_dims():
    x = rand(8, 16, seed=72)
    got = apply("tile.transpose_view", [tile_of(x)])
    torch.testing.assert_close(got, x.T, rtol=0, atol=0)


def test_extract_copies_a_block_of_a_mat_tile_into_left():
    x = rand(32, 32, seed=73).half()
    got = apply(
        "tile.extract",
        [tile_of(x, Mem.Mat), ([Var("r", INDEX), 16], (16, 16))],
        shape=(16, 16),
        target_memory=Mem.Left,
    )
    torch.testing.assert_close(got, x[16:, 16:], rtol=0, atol=0)


def test_slice_copies_the_sub_tile_at_run_time_offsets():
    x = rand(16, 32, seed=36)
    got = apply("tile.slice", [tile_of(x), ([Var("k", INDEX), 8], (4, 8))], shape=(8, 16))
    torch.testing.assert_close(got, x[4:12, 8:24], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("pad", "value"), [(PadValue.zero, 0.0), (PadValue.min, -torch.inf), (PadValue.max, torch.inf)]
)
def test_fillpad_fills_outside_the_static_valid_shape(pad, value):
    x = rand(8, 16, seed=37)
    tile_type = TileType((8, 16), FP32, Mem.Vec, valid_shape=(3, 10))
    got = apply("tile.fillpad", [(tile_type, x)], pad_value=pad)
    torch.testing.assert_close(got[:3, :10], x[:3, :10], rtol=0, atol=0)
    assert bool((got[3:] == value).all()) and bool((got[:, 10:] == value).all())


def test_fillpad_of_an_int_tile_pads_with_the_dtype_limits_at_a_run_time_valid_shape():
    x = torch.ones(4, 4, dtype=torch.int32)
    got = apply("tile.fillpad", [tile_of(x), ([Var("n", INDEX), 4], (2, 4))], pad_value=PadValue.min)
    assert got[2:].unique().tolist() == [torch.iinfo(torch.int32).min]
    assert bool((got[:2] == 1).all())


def test_set_validshape_keeps_every_element_and_only_retypes_the_tile():
    x = rand(8, 16, seed=38)
    got = apply("tile.set_validshape", [tile_of(x), ([Var("n", INDEX), 16], (3, 16))])
    torch.testing.assert_close(got, x, rtol=0, atol=0)


def test_full_fills_the_tile_with_the_value_in_its_dtype():
    got = apply("tile.full", [(ScalarType(FP32), 1.5)], shape=(4, 8), dtype=FP16)
    assert got.dtype == torch.float16 and bool((got == 1.5).all())


def test_tile_assemble_writes_the_source_into_the_destinations_own_buffer():
    dst, src = torch.zeros(8, 16), rand(2, 8, seed=38)
    got = apply("tile.assemble", [tile_of(dst), tile_of(src), ([Var("r", INDEX), 8], (3, 8))])
    assert got.data_ptr() == dst.data_ptr()
    torch.testing.assert_close(dst[3:5, 8:], src, rtol=0, atol=0)
    assert float(dst.abs().sum() - src.abs().sum()) == pytest.approx(0.0, abs=1e-5)


def test_partial_load_reads_the_run_time_valid_region_and_zeroes_the_rest():
    gm = rand(10, 16, seed=39)
    n = Var("n", INDEX)
    operands = [_gm(gm), ([n, 0], (8, 0)), ([n, n], (2, 12))]
    got = apply("tile.load_partial", operands, shape=(8, 16), target_memory=Mem.Vec)
    torch.testing.assert_close(got[:2, :12], gm[8:, :12], rtol=0, atol=0)
    assert float(got.abs().sum() - gm[8:, :12].abs().sum()) == pytest.approx(0.0, abs=1e-5)


def test_partial_load_with_a_valid_shape_beyond_the_tile_is_out_of_bounds():
    n = Var("n", INDEX)
    with pytest.raises(OutOfBoundsError, match=r"valid_shape \[9, 16\] leaves the tile's \[8, 16\]"):
        apply(
            "tile.load_partial",
            [_gm(rand(20, 16)), ([0, 0], (0, 0)), ([n, 16], (9, 16))],
            shape=(8, 16),
            target_memory=Mem.Vec,
        )


def test_partial_store_writes_only_the_run_time_valid_region():
    gm, tile = torch.zeros(10, 16), rand(8, 16, seed=40)
    n = Var("n", INDEX)
    apply("tile.store_partial", [tile_of(tile), ([n, 0], (8, 0)), _gm(gm), ([n, 16], (2, 16))])
    torch.testing.assert_close(gm[8:], tile[:2], rtol=0, atol=0)
    assert bool((gm[:8] == 0).all())


def test_atomic_store_adds_into_global_memory():
    gm, tile = torch.ones(8, 8), rand(4, 8, seed=41)
    apply("tile.store_atomic", [tile_of(tile), ([4, 0], (4, 0)), _gm(gm)], atomic=AtomicType.Add)
    apply("tile.store_atomic", [tile_of(tile), ([4, 0], (4, 0)), _gm(gm)], atomic=AtomicType.Add)
    torch.testing.assert_close(gm[4:], 1 + 2 * tile)
    assert bool((gm[:4] == 1).all())


def test_atomic_store_of_a_partial_tile_adds_only_the_valid_rows():
    gm, tile = torch.zeros(6, 8), rand(4, 8, seed=42)
    n = Var("n", INDEX)
    operands = [tile_of(tile), ([n, 0], (4, 0)), _gm(gm), ([n, 8], (2, 8))]
    apply("tile.store_atomic", operands, atomic=AtomicType.Add)
    torch.testing.assert_close(gm[4:], tile[:2], rtol=0, atol=0)


# ---------------------------------------------------------------- scalar math


@pytest.mark.parametrize("name", SCALAR)
@pytest.mark.parametrize(("a", "b"), [(7, 2), (-7, 2), (3, 3)])
def test_scalar_op_matches_python(name, a, b):
    got = apply(f"scalar.{name}", [(INDEX, a), (INDEX, b)])
    assert got == SCALAR[name](a, b)
    assert type(got) is type(SCALAR[name](a, b))


def test_scalar_neg_negates():
    assert apply("scalar.neg", [(INDEX, 5)]) == -5


def test_scalar_division_by_zero_is_a_pypto_error():
    with pytest.raises(DivisionByZeroError, match="division by zero"):
        apply("scalar.floordiv", [(INDEX, 1), (INDEX, 0)])


def test_a_prefetch_computes_nothing_its_handles_know_their_context():
    from pypto.ir import ASYNC_EVENT, ASYNC_SESSION, PREFETCH_CONTEXT
    from pypto.ir.semantics import PrefetchContext, PrefetchEvent, PrefetchSession

    ctx = apply("prefetch.make_context", [])
    assert isinstance(ctx, PrefetchContext) and ctx is not apply("prefetch.make_context", [])
    source = torch.randn(1, 256)
    kept = source.clone()
    evt = apply("prefetch.async_prefetch", [_gm(source), (Var("ctx", PREFETCH_CONTEXT), ctx)])
    assert isinstance(evt, PrefetchEvent) and evt.context is ctx and evt.nbytes == 256 * 4
    assert torch.equal(source, kept)  # a prefetch changes no value
    session = apply("prefetch.session", [(Var("ctx", PREFETCH_CONTEXT), ctx)])
    assert isinstance(session, PrefetchSession) and session.context is ctx
    assert apply("prefetch.wait", [(Var("e", ASYNC_EVENT), evt), (Var("s", ASYNC_SESSION), session)]) is True
