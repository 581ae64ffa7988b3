"""The dtypes of PyPTO's manual end to end on a2a3sim: unsigned integers compute (and wrap) as the
hardware does, the storage formats (FP8, UINT64) move bit for bit and convert, and what a2a3 cannot
compute with, or hold at all, is an error at the user's line naming the dtype. Also the
``pl.Tuple`` return annotation and ``pl.InlineFunction``."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, SpecializationError, TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def wide(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.int64)


@pytest.mark.parametrize(("dtype", "torch_dtype"), [(pl.UINT16, torch.uint16), (pl.UINT32, torch.uint32)])
def test_unsigned_elementwise_arithmetic_and_a_scalar_operand_wrap_like_torch_on_int64(dtype, torch_dtype):
    T = pl.Tensor[[32, 64], dtype]

    @pl.jit
    def k(a: T, b: T, total: pl.Out[T], biggest: pl.Out[T], shifted: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            total[:] = pl.add(a, b)
            biggest[:] = pl.maximum(a, b)
            shifted[:] = pl.sub(a, 7)
        return total, biggest, shifted

    top = 2**dtype.bits
    a = torch.randint(0, top, (32, 64), dtype=torch.int64, generator=torch.Generator().manual_seed(1))
    b = torch.randint(0, top, (32, 64), dtype=torch.int64, generator=torch.Generator().manual_seed(2))
    outs = [torch.zeros(32, 64, dtype=torch_dtype) for _ in range(3)]
    k(a.to(torch_dtype), b.to(torch_dtype), *outs, config=SIM)
    assert torch.equal(wide(outs[0]), (a + b) % top)
    assert torch.equal(wide(outs[1]), torch.maximum(a, b))
    assert torch.equal(wide(outs[2]), (a - 7) % top)


def test_uint64_and_fp8_tensors_are_loaded_stored_and_cast_bit_for_bit():
    @pl.jit
    def k(
        ids: pl.Tensor[[16, 32], pl.UINT64],
        x8: pl.Tensor[[16, 32], pl.FP8E4M3FN],
        ids_out: pl.Out[pl.Tensor[[16, 32], pl.UINT64]],
        doubled: pl.Out[pl.Tensor[[16, 32], pl.FP8E5M2]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(ids, [0, 0], [16, 32]), [0, 0], ids_out)
            wider = pl.cast(pl.load(x8, [0, 0], [16, 32]), pl.FP32)
            pl.store(pl.cast(pl.add(wider, wider), pl.FP8E5M2), [0, 0], doubled)
        return ids_out, doubled

    ids = torch.tensor([[2**64 - 1 - i for i in range(32)]] * 16, dtype=torch.uint64)
    x8 = torch.randn(16, 32, generator=torch.Generator().manual_seed(3)).to(torch.float8_e4m3fn)
    ids_out, doubled = torch.zeros(16, 32, dtype=torch.uint64), torch.zeros(16, 32, dtype=torch.float8_e5m2)
    k(ids, x8, ids_out, doubled, config=SIM)
    assert torch.equal(ids_out.view(torch.int64), ids.view(torch.int64))
    want = (x8.float() * 2).to(torch.float8_e5m2)
    assert torch.equal(doubled.view(torch.uint8), want.view(torch.uint8))


def test_arithmetic_on_an_fp8_tile_is_an_error_at_the_line_naming_the_dtype():
    @pl.jit
    def k(x: pl.Tensor[[16, 32], pl.FP8E4M3FN], out: pl.Out[pl.Tensor[[16, 32], pl.FP8E4M3FN]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 32])
            pl.store(pl.mul(t, t), [0, 0], out)
        return out

    x = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeCheckError) as info:
        k(x, x.clone(), config=SIM)
    err = info.value
    assert "pl.mul computes with its elements, and pl.FP8E4M3FN elements are only loaded" in err.message
    assert "pl.mul(t, t)" in str(err) and "pl.cast(x, pl.FP32)" in str(err)


def test_a_four_bit_tile_is_an_error_at_the_line_and_a_four_bit_parameter_at_its_annotation():
    @pl.jit
    def tile_of_int4(x: pl.Tensor[[16, 32], pl.INT8], out: pl.Out[pl.Tensor[[16, 32], pl.INT8]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.create_tile([16, 32], pl.FP4)
            pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], out)
        return out

    x = torch.zeros(16, 32, dtype=torch.int8)
    with pytest.raises(TypeCheckError) as info:
        tile_of_int4(x, x.clone(), config=SIM)
    assert "pl.FP4 is a 4-bit format packed two elements to a byte" in info.value.message
    assert "pl.create_tile([16, 32], pl.FP4)" in str(info.value)

    @pl.jit
    def int4_parameter(x: pl.Tensor[[16, 32], pl.UINT4], out: pl.Out[pl.Tensor[[16, 32], pl.INT8]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(out, [0, 0], [16, 32]), [0, 0], out)
        return out

    with pytest.raises(SpecializationError) as info:
        int4_parameter(x, x.clone(), config=SIM)
    assert "no torch tensor holds pl.UINT4 elements" in info.value.message
    assert "x: pl.Tensor[[16, 32], pl.UINT4]" in str(info.value)
    # Parsed from stand-ins (no torch tensor), a 4-bit parameter is declared as annotated.
    program = int4_parameter.parse(pl.Tensor[[16, 32], pl.UINT4], pl.Tensor[[16, 32], pl.INT8])
    (entry,) = [f for f in program.functions.values() if f.name == "int4_parameter"]
    assert str(entry.params[0].var.type) == "pl.Tensor[[16, 32], pl.UINT4]"


def test_every_dtype_of_the_manual_is_a_pl_constant_with_its_byte_size():
    sizes = {
        "INT4": 1, "UINT4": 1, "FP4": 1, "HF4": 1, "INT8": 1, "UINT8": 1, "FP8E4M3FN": 1, "FP8E5M2": 1,
        "FP8E8M0": 1, "HF8": 1, "INT16": 2, "UINT16": 2, "FP16": 2, "BF16": 2, "INT32": 4, "UINT32": 4,
        "FP32": 4, "INT64": 8, "UINT64": 8,
    }  # fmt: skip
    assert {name: getattr(pl, name).get_byte() for name in sizes} == sizes


# ---------------------------------------------------------------- pl.Tuple, pl.InlineFunction

T = pl.Tensor[[16, 64], pl.FP32]


@pl.jit.incore
def copy_and_double(x: T, a: pl.Out[T], b: pl.Out[T]) -> pl.Tuple[T, T]:
    t = pl.load(x, [0, 0], [16, 64])
    a = pl.store(t, [0, 0], a)
    b = pl.store(pl.add(t, t), [0, 0], b)
    return a, b


@pl.jit
def both(x: T, a: pl.Out[T], b: pl.Out[T]) -> pl.Tuple[T, T]:
    a, b = copy_and_double(x, a, b)
    return a, b


def test_a_pl_tuple_return_annotation_names_the_returned_tensors():
    x, a, b = torch.randn(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    both(x, a, b, config=SIM)
    assert torch.equal(a, x) and torch.equal(b, x + x)
    assert str(pl.Tuple[T, pl.FP32]) == "pl.Tuple[pl.Tensor[[16, 64], pl.FP32], pl.Scalar[pl.FP32]]"


def test_a_pl_tuple_of_something_that_is_no_type_is_an_error_at_the_annotation():
    with pytest.raises(ParseError) as info:
        pl.Tuple[T, 3]
    assert "pl.Tuple[...] item 1 is no type annotation" in str(info.value)


def test_pl_inline_makes_a_pl_inline_function_that_the_caller_splices():
    @pl.inline
    def doubled(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        return pl.mul(x, 2.0)

    @pl.jit
    def k(x: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = doubled(x)
        return out

    assert isinstance(doubled, pl.InlineFunction) and not isinstance(k, pl.InlineFunction)
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    k(x, out, config=SIM)
    assert torch.equal(out, x * 2)
