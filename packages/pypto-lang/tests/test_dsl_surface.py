"""The pl names users write, and what they do when called as plain Python."""

import re

import pytest

import pypto.language as pl
from pypto.ir import DataType, FunctionKind, Level, MemorySpace, PyptoError, SplitMode
from pypto.language.options import CrossCoreSlot, Split

TIER1_OPS = [
    "load",
    "store",
    "move",
    "create_tile",
    "create_tensor",
    "matmul",
    "add",
    "sub",
    "mul",
    "div",
    "exp",
    "recip",
    "relu",
    "maximum",
    "minimum",
    "neg",
    "abs",
    "log",
    "sqrt",
    "rsqrt",
    "concat",
    "cast",
]


def test_dtypes_and_enums_are_the_ir_ones():
    assert list(DataType) == [
        pl.FP16,
        pl.BF16,
        pl.FP32,
        pl.INT8,
        pl.INT16,
        pl.INT32,
        pl.INT64,
        pl.UINT8,
        pl.UINT16,
        pl.UINT32,
        pl.UINT64,
        pl.INT4,
        pl.UINT4,
        pl.FP4,
        pl.FP8E4M3FN,
        pl.FP8E5M2,
        pl.FP8E8M0,
        pl.HF4,
        pl.HF8,
        pl.BOOL,
        pl.INDEX,
        pl.TASK_ID,
    ]
    assert pl.Mem is pl.MemorySpace is MemorySpace
    assert (pl.Level, pl.SplitMode, pl.FunctionType) == (Level, SplitMode, FunctionKind)


MIXED_FORM = [
    "split_aiv",
    "aic_initialize_pipe",
    "aiv_initialize_pipe",
    "tpush_to_aiv",
    "tpush_to_aic",
    "tpop_from_aic",
    "tpop_from_aiv",
    "tfree_to_aic",
    "tfree_to_aiv",
    "aiv_shard",
    "aic_gather",
    "get_subblock_idx",
    "get_block_idx",
    "get_block_num",
    "read",
    "gather_row",
]


@pytest.mark.parametrize("name", [*TIER1_OPS, *MIXED_FORM, "at", "range", "parallel", "unroll"])
def test_builtins_called_outside_a_kernel_say_where_they_belong(name):
    with pytest.raises(PyptoError) as info:
        getattr(pl, name)()
    assert info.value.message == f"pl.{name}() can only be used inside a @pl.jit function"


def test_tile_and_tensor_spellings_exist_and_behave_alike():
    with pytest.raises(PyptoError, match=r"pl\.tile\.load\(\) can only be used inside a @pl\.jit function"):
        pl.tile.load()
    assert pl.tensor.create.name == "create_tensor"
    assert pl.tile.create.name == "create_tile"


def test_scope_options_evaluate_to_plain_data():
    assert pl.split(pl.SplitMode.LEFT_RIGHT) == Split(SplitMode.LEFT_RIGHT)
    assert pl.cross_core_slot(slot_num=3) == CrossCoreSlot(3)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_cross_core_slot_rejects_anything_but_a_positive_int_naming_the_value(bad):
    with pytest.raises(ValueError) as info:
        pl.cross_core_slot(slot_num=bad)
    assert isinstance(info.value, PyptoError)
    assert info.value.message == f"pl.cross_core_slot(slot_num={bad!r}): slot_num must be a positive int"


def test_split_takes_a_split_mode():
    with pytest.raises(ValueError, match=re.escape("pl.split() takes a pl.SplitMode, got 'UP_DOWN'")):
        pl.split("UP_DOWN")


def test_annotations_build_specs_and_reject_malformed_ones():
    spec = pl.Out[pl.Tensor[[128, 64], pl.FP16]]
    assert (spec.shape, spec.dtype, spec.direction.value) == ((128, 64), pl.FP16, "Out")
    assert pl.Tile[[64, 64], pl.FP16, pl.Mem.Mat].memory_space is MemorySpace.Mat
    assert pl.Scalar[pl.FP32].dtype is pl.FP32
    with pytest.raises(PyptoError, match=re.escape("pl.Tensor[...] takes a shape and a dtype, got 1 item")):
        pl.Tensor[[128, 64]]
    with pytest.raises(PyptoError, match="shape must hold positive ints"):
        pl.Tensor[[0, 64], pl.FP32]


def test_forced_tile_spelling_rejects_tensors():
    @pl.jit
    def wrong_level(a: pl.Tensor[[8, 8], pl.FP32], out: pl.Out[pl.Tensor[[8, 8], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.tile.exp(a)
        return out

    with pytest.raises(PyptoError) as info:
        wrong_level.parse()
    assert info.value.message == "pl.tile.exp: takes tiles, got Tensor[[8, 8], FP32]"


def test_an_inline_function_cannot_be_called_from_python():
    @pl.jit.inline
    def helper(t):
        return t

    with pytest.raises(
        PyptoError, match=re.escape("is @pl.jit.inline: it is spliced into the kernel that calls it")
    ):
        helper(1)
