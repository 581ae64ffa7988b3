"""Shapes, offsets and valid shapes of loads and stores must agree in rank and fit: each mismatch is a
TypeCheckError at the call with a caret and a hint (never Python's ``zip()`` error at compile time,
nor torch's at run time)."""

import pytest
from lang_diagnostics import rendered

import pypto.language as pl
from pypto.ir import TypeCheckError

T = pl.Tensor[[64, 64], pl.FP32]


@pl.jit
def load_rank(a: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64])
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def offsets_rank(a: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0], [64, 64])
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def valid_too_large(a: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64], valid_shape=[48, 64])
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def valid_rank(a: T, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 64], valid_shape=[16])
        pl.store(t, [0, 0], out)
    return out


@pl.jit
def store_rank(a: T, flat: pl.Out[pl.Tensor[[4096], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64, 64])
        pl.store(t, [0], flat)
    return flat


@pl.jit
def run_time_valid_rank(a: T, n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [64], valid_shape=[n])
        pl.store(t, [0], out)
    return out


CASES = [
    (load_rank, "pl.load(a, [0, 0], [64])", "shape [64] has 1 dim(s), but Tensor[[64, 64], FP32] has 2"),
    (offsets_rank, "pl.load(a, [0], [64, 64])", "offsets must be a list of 2 indices, got 1"),
    (valid_too_large, "pl.load(a, [0, 0], [32, 64], valid_shape=[48, 64])", "is larger than the tile shape"),
    (valid_rank, "pl.load(a, [0, 0], [32, 64], valid_shape=[16])", "valid_shape [16] has 1 dim(s)"),
    (
        store_rank,
        "pl.store(t, [0], flat)",
        "the tile's shape [64, 64] has 2 dim(s), but Tensor[[4096], FP32] has 1",
    ),
    (run_time_valid_rank, "pl.load(a, [0, 0], [64], valid_shape=[n])", "shape [64] has 1 dim(s)"),
]


@pytest.mark.parametrize(("kernel", "call", "message"), CASES, ids=[c[0].name for c in CASES])
def test_mismatched_ranks_and_sizes_are_type_errors_at_the_call(kernel, call, message):
    with pytest.raises(TypeCheckError) as info:
        kernel.compile() if kernel is run_time_valid_rank else kernel.parse()
    err = rendered(info.value)
    assert message in info.value.message
    assert err.underlined == call
    assert err.hint
