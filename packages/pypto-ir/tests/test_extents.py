"""Extents as values: ``M * 2`` built by Python arithmetic on a ``DynDim``, and binding extents
from argument shapes (solving ``M * 2 = 300`` for ``M``, checking ``M // 2`` against a bound ``M``)."""

import pytest

from pypto.ir import INDEX, DataType, DimExpr, DynDim, SpecializationError, TensorType
from pypto.ir.extents import ExtentBinding, dim_op, dynamic_extents, evaluate, is_dynamic, tensor_type

M, N = DynDim("M"), DynDim("N")


def test_python_arithmetic_on_an_extent_builds_an_extent_that_compares_by_value():
    assert isinstance(M * 2, DimExpr)
    assert M * 2 == 2 * M  # the number goes last
    assert hash(M * 2) == hash(M * 2)
    assert M * 2 != M * 3 and M + 1 != M * 2
    assert repr(M * 2) == "M * 2" and repr(M // 2) == "M // 2" and repr(M - (N - 1)) == "M - (N - 1)"
    assert (M * 2).type == INDEX


def test_extents_fold_and_simplify():
    assert dim_op("mul", 3, 4) == 12
    assert M * 1 == M and M + 0 == M and M * 0 == 0
    assert (M + 1) + 2 == M + 3
    assert (M + 1) - 1 == M
    assert (M * 2) * 3 == M * 6


def test_a_second_extent_of_one_name_is_another_extent():
    assert DynDim("M", 1) != M
    assert TensorType((DynDim("M", 1), 64), DataType.FP32) != TensorType((M, 64), DataType.FP32)  # type: ignore[arg-type]


def test_the_dynamic_extents_of_a_type_include_those_inside_expressions():
    t = tensor_type([M * 2, N + 1, 64], DataType.FP32)
    assert is_dynamic(t)
    assert dynamic_extents(t) == [M, N]
    assert evaluate(M * 2 + N, {M: 3, N: 4}) == 10
    assert evaluate(M * 2, {}) is None


def bound(*pairs: tuple[list[object], list[int]]) -> dict[DynDim, int]:
    binding = ExtentBinding()
    for i, (shape, given) in enumerate(pairs):
        binding.bind(f"t{i}", tensor_type(shape, DataType.FP32), given)  # type: ignore[arg-type]
    return binding.resolve()


def test_an_expression_extent_is_solved_when_nothing_else_binds_its_extent():
    assert bound(([M * 2, 64], [300, 64])) == {M: 150}
    assert bound(([M + 1, 64], [9, 64])) == {M: 8}
    assert bound(([M - 4, 64], [9, 64])) == {M: 13}
    assert bound(([(M + 1) * 4], [12])) == {M: 2}


def test_an_expression_extent_is_checked_against_what_another_tensor_binds():
    assert bound(([M, 64], [21, 64]), ([M // 2, 64], [10, 64])) == {M: 21}
    with pytest.raises(
        SpecializationError, match=r"dim 0 of 't1' is 11, but its annotation says M // 2, which is 10"
    ):
        bound(([M, 64], [21, 64]), ([M // 2, 64], [11, 64]))
    # the order of the tensors does not matter: M // 2 waits for M
    assert bound(([M // 2, 64], [10, 64]), ([M, 64], [20, 64])) == {M: 20}


def test_an_extent_no_whole_value_solves_is_an_error():
    with pytest.raises(
        SpecializationError, match=r"is 7, but its annotation says M \* 2: no whole value of M"
    ):
        bound(([M * 2], [7]))
    with pytest.raises(SpecializationError, match=r"only a negative \(-3\) value of M"):
        bound(([M + 4], [1]))


def test_an_extent_that_cannot_be_undone_alone_is_an_error_unless_not_strict():
    with pytest.raises(SpecializationError, match="M cannot be told from its annotation M // 2 alone"):
        bound(([M // 2], [4]))
    binding = ExtentBinding()
    binding.bind("x", tensor_type([M // 2], DataType.FP32), [4])
    assert binding.resolve(strict=False) == {}


def test_tensors_sharing_an_extent_must_agree():
    with pytest.raises(SpecializationError, match=r"M is 8 in 't0' \(dim 0\) but 9 in 't1' \(dim 1\)"):
        bound(([M], [8]), ([4, M], [4, 9]))


def test_extents_known_only_at_run_time_are_left_to_bind_then():
    binding = ExtentBinding()
    binding.bind("x", tensor_type([M, N], DataType.FP32), [N, 8])  # type: ignore[list-item]
    assert binding.resolve(strict=False) == {N: 8}
