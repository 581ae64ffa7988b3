from pypto.ir import DataType, dtype_from_torch_name, supported_torch_dtypes


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
