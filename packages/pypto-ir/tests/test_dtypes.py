import pytest

from pypto.ir import (
    DataType,
    MemorySpace,
    TensorType,
    TileType,
    TypeCheckError,
    Var,
    dtype_from_torch_name,
    make_call,
    supported_torch_dtypes,
)


def test_each_dtype_has_bits_bytes_and_a_torch_name():
    assert (DataType.FP16.bits, DataType.FP16.nbytes, DataType.FP16.torch_name) == (16, 2, "float16")
    assert (DataType.BF16.torch_name, DataType.FP32.nbytes, DataType.INT8.nbytes) == ("bfloat16", 4, 1)
    assert DataType.BOOL.torch_name == "bool"


def test_torch_names_map_back_to_dtypes_with_or_without_prefix():
    assert dtype_from_torch_name("torch.float16") is DataType.FP16
    assert dtype_from_torch_name("int32") is DataType.INT32
    assert dtype_from_torch_name("torch.complex64") is None


def test_index_is_never_inferred_from_a_torch_dtype():
    assert DataType.INDEX not in [dtype_from_torch_name(n) for n in supported_torch_dtypes()]
    assert "torch.float64" not in supported_torch_dtypes()


# ---------------------------------------------------------------- the manual's other dtypes


def test_unsigned_integers_have_their_widths_ranges_and_torch_dtypes():
    for dtype, bits in ((DataType.UINT16, 16), (DataType.UINT32, 32), (DataType.UINT64, 64)):
        assert (dtype.bits, dtype.nbytes, dtype.is_integer, dtype.is_unsigned) == (
            bits,
            bits // 8,
            True,
            True,
        )
        assert dtype.int_range == (0, 2**bits - 1)
        assert dtype_from_torch_name(f"torch.uint{bits}") is dtype
    assert DataType.INT16.int_range == (-(2**15), 2**15 - 1) and not DataType.INT16.is_unsigned


def test_four_bit_formats_round_up_to_one_byte_and_pack_two_to_a_byte():
    for dtype in (DataType.INT4, DataType.UINT4, DataType.FP4, DataType.HF4):
        assert (dtype.bits, dtype.get_byte(), dtype.packed, dtype.has_torch_dtype) == (4, 1, True, False)
        assert TensorType((3, 5), dtype).nbytes == 8  # 15 nibbles take 8 bytes
    with pytest.raises(ValueError, match="INT4 has no torch dtype"):
        _ = DataType.INT4.torch_name


def test_fp8_formats_map_to_torchs_float8_dtypes_and_compute_with_nothing():
    assert dtype_from_torch_name("torch.float8_e4m3fn") is DataType.FP8E4M3FN
    assert dtype_from_torch_name("float8_e5m2") is DataType.FP8E5M2
    assert dtype_from_torch_name("float8_e8m0fnu") is DataType.FP8E8M0
    assert DataType.FP8E4M3FN.float_max == 448.0
    assert not any(
        d.computes for d in (DataType.FP8E4M3FN, DataType.FP8E5M2, DataType.FP8E8M0, DataType.UINT64)
    )
    assert all(d.computes for d in (DataType.UINT16, DataType.UINT32, DataType.INT64, DataType.BF16))
    assert not DataType.HF8.has_torch_dtype and DataType.HF8.nbytes == 1


def tile(shape, dtype):
    return Var("t", TileType(tuple(shape), dtype, MemorySpace.Vec))


def test_an_op_that_computes_refuses_a_storage_format_naming_it():
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.add", (tile([8, 32], DataType.FP8E5M2), tile([8, 32], DataType.FP8E5M2)))
    assert "pl.add computes with its elements, and pl.FP8E5M2 elements are only loaded" in info.value.message
    assert "pl.cast(x, pl.FP32)" in info.value.hint
    with pytest.raises(TypeCheckError, match=r"pl\.UINT64"):
        make_call("tile.exp", (tile([8, 32], DataType.UINT64),))


def test_moves_views_and_casts_take_a_storage_format():
    x = tile([8, 32], DataType.FP8E4M3FN)
    assert make_call("tile.cast", (x,), {"dtype": DataType.FP32}).type.dtype is DataType.FP32
    assert make_call("tile.move", (x,), {"target_memory": MemorySpace.Vec}).type.dtype is DataType.FP8E4M3FN
    assert make_call("tile.reshape", (x,), {"shape": (16, 16)}).type.shape == (16, 16)
    made = make_call("tile.create", (), {"shape": (8, 32), "dtype": DataType.UINT64})
    assert made.type.dtype is DataType.UINT64


def test_a_four_bit_or_ascend950_format_is_refused_by_every_op():
    with pytest.raises(TypeCheckError) as info:
        make_call("tile.create", (), {"shape": (8, 32), "dtype": DataType.INT4})
    assert info.value.message == (
        "pl.create_tile: pl.INT4 is a 4-bit format packed two elements to a byte, and a2a3 kernels hold "
        "no tile or tensor of it"
    )
    with pytest.raises(TypeCheckError, match=r"pl\.HF8 is a format of Ascend950"):
        make_call("tensor.create", (), {"shape": (8, 32), "dtype": DataType.HF8})
