"""The DSL wording of the IR type rules' hints (pypto.language.advice): a rule names the
problem, importing pypto.language words the fix."""

import pytest

import pypto.language  # noqa: F401  (registers the advice)
from pypto.ir import TypeCheckError, Var
from pypto.ir.dtypes import DataType
from pypto.ir.ops import make_call, tile
from pypto.ir.types import MemorySpace, TileType


def _tile(shape, dtype=DataType.FP32, space=MemorySpace.Vec, name="t"):
    return Var(name, TileType(tuple(shape), dtype, space))


def test_a_dtype_mismatch_is_advised_to_cast():
    with pytest.raises(TypeCheckError) as info:
        make_call(tile.add, (_tile([8, 8]), _tile([8, 8], DataType.FP16)))
    assert "pl.cast" in info.value.hint


def test_a_wrong_accumulator_is_advised_how_to_start_the_sum():
    acc = _tile([64, 32], space=MemorySpace.Acc, name="acc")
    a, b = _tile([64, 32], space=MemorySpace.Left), _tile([32, 64], space=MemorySpace.Right)
    with pytest.raises(TypeCheckError) as info:
        make_call(tile.matmul_acc, (acc, a, b))
    assert "acc = pl.matmul(a, b)" in info.value.hint


def test_advice_uses_the_facts_of_the_case():
    x = _tile([8, 8], DataType.INT32)
    with pytest.raises(TypeCheckError) as info:
        make_call(tile.exp, (x,))
    assert info.value.advice[0] == "arith.float_only"
    assert (
        info.value.hint
        == "convert it first: pl.cast(x, pl.FP32) (then back with pl.cast(y, pl.INT32) if needed)"
    )


def test_advice_the_front_end_words_wins_over_a_plain_hint_and_a_set_hint_over_both():
    err = TypeCheckError("m", None, "plain", advice=("binary.dtype_mismatch", {}))
    assert err.hint.startswith("PyPTO has no implicit promotion")
    assert TypeCheckError("m", None, "plain", advice=("no.such.key", {})).hint == "plain"
    err.hint = "changed"
    assert err.hint == "changed"
