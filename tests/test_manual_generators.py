"""The generators of PyPTO's manual end to end on a2a3sim, against torch: ``pl.arange``
(``tensor.ci``), ``pl.random`` and ``pl.tri``, on tensors (tiled by row blocks, each made from
the position of its first element) and on tiles."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import Assign, For, FunctionKind, ParseError, TypeCheckError
from pypto.ir.nodes import used_vars
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def ramps(
    x: pl.Tensor[[1024, 128], pl.FP32],
    up: pl.Out[pl.Tensor[[1024, 128], pl.INT32]],
    shifted: pl.Out[pl.Tensor[[1024, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        up[:] = pl.arange(-100, [1024, 128], dtype=pl.INT32)
        shifted[:] = pl.add(x, pl.cast(pl.arange(0, [1024, 128], descending=True), pl.FP32))
    return up, shifted


def test_a_tall_arange_is_tiled_into_row_blocks_that_continue_the_count():
    x = rand(1024, 128, seed=1)
    up, shifted = torch.zeros(1024, 128, dtype=torch.int32), torch.zeros(1024, 128)
    ramps(x, up, shifted, config=SIM)
    assert torch.equal(up, torch.arange(-100, 1024 * 128 - 100, dtype=torch.int32).reshape(1024, 128))
    torch.testing.assert_close(
        shifted, x - torch.arange(1024 * 128).reshape(1024, 128).float(), rtol=0, atol=0
    )
    kernel = next(f for f in ramps.lower(x, up, shifted).functions.values() if f.kind is FunctionKind.AIV)
    loops = [s for s in kernel.body if isinstance(s, For)]
    assert loops, "the 1024 rows run as a loop over row blocks"
    starts = [
        s.value.args[0]
        for loop in loops
        for s in loop.body
        if isinstance(s, Assign) and s.value.op == "tile.ci"
    ]
    assert starts and all(
        loops[0].var in used_vars(e) or any(lp.var in used_vars(e) for lp in loops) for e in starts
    )


def test_a_tile_arange_with_a_run_time_start_in_a_kernel():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[4, 64], pl.INT16]], start: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.tile.arange(start, [4, 64], dtype=pl.INT16), [0, 0], out)
        return out

    out = torch.zeros(4, 64, dtype=torch.int16)
    k(out, 1000, config=SIM)
    assert torch.equal(out, torch.arange(1000, 1256, dtype=torch.int16).reshape(4, 64))


def test_an_arange_with_a_unit_innermost_dim_is_a_type_error_at_the_line():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[64, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.arange(0, [64, 1])
        return out

    with pytest.raises(TypeCheckError) as info:
        k(torch.zeros(64, 1, dtype=torch.int32), config=SIM)
    assert "the innermost dim of [64, 1] is 1" in info.value.message
    assert "pl.arange(0, [64, 1])" in str(info.value) and "pl.reshape(pl.arange(start, [1, 64])" in str(
        info.value
    )


# ---------------------------------------------------------------- pl.random


@pl.jit
def draws(
    big: pl.Out[pl.Tensor[[2048, 64], pl.FP32]],
    head: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    seed: pl.Scalar[pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        big[:] = pl.random([2048, 64], seed=seed)
        pl.store(pl.tile.random([32, 64], seed=seed), [0, 0], head)
    return big, head


def test_random_numbers_are_uniform_reproducible_and_the_same_however_the_tensor_is_tiled():
    big, head = torch.zeros(2048, 64), torch.zeros(32, 64)
    draws(big, head, 42, config=SIM)
    assert float(big.min()) >= 0.0 and float(big.max()) < 1.0
    assert abs(float(big.mean()) - 0.5) < 0.01
    assert torch.equal(big[:32], head)  # the tile draws what the tiled tensor drew there
    again, other = torch.zeros(2048, 64), torch.zeros(2048, 64)
    draws(again, torch.zeros(32, 64), 42, config=SIM)
    draws(other, torch.zeros(32, 64), 43, config=SIM)
    assert torch.equal(big, again) and not torch.equal(big, other)


def test_random_of_a_64_bit_dtype_is_a_type_error_at_the_line():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[8, 64], pl.INT64]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.random([8, 64], dtype=pl.INT64)
        return out

    with pytest.raises(TypeCheckError, match=r"draws floats or integers of up to 32 bits, got pl\.INT64"):
        k(torch.zeros(8, 64, dtype=torch.int64), config=SIM)


# ---------------------------------------------------------------- pl.tri


@pl.jit
def causal(
    s: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    upper_part: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    shift: pl.Scalar[pl.INT32],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(s, [0, 0], [64, 64])
        mask = pl.tri([64, 64], pl.FP32, diagonal=shift)
        pl.store(pl.mul(t, mask), [0, 0], out)
        pl.store(pl.tri([64, 64], pl.FP32, upper=True, diagonal=1), [0, 0], upper_part)
    return out, upper_part


@pytest.mark.parametrize("shift", [0, 5, -3])
def test_a_triangular_mask_with_a_run_time_diagonal_masks_scores_as_torch_tril(shift):
    s = rand(64, 64, seed=shift + 10)
    out, upper_part = torch.zeros(64, 64), torch.zeros(64, 64)
    causal(s, out, upper_part, shift, config=SIM)
    torch.testing.assert_close(out, s * torch.tril(torch.ones(64, 64), shift), rtol=0, atol=0)
    assert torch.equal(upper_part, torch.triu(torch.ones(64, 64), 1))


def test_a_partial_triangular_mask_writes_its_valid_region_and_stores_only_it():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[16, 32], pl.FP32]], rows: pl.Scalar[pl.INDEX]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.tri([16, 32], pl.FP32, valid_shape=[rows, 32]), [0, 0], out)
        return out

    out = torch.full((16, 32), -1.0)
    k(out, 10, config=SIM)
    want = torch.full((16, 32), -1.0)
    want[:10] = torch.tril(torch.ones(10, 32))
    assert torch.equal(out, want)


def test_tri_with_a_float_diagonal_is_an_error_at_the_line():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.tri([16, 32], pl.FP32, diagonal=0.5), [0, 0], out)
        return out

    with pytest.raises((TypeCheckError, ParseError), match="diagonal must be an integer scalar"):
        k(torch.zeros(16, 32), config=SIM)
