"""``pl.gather_row(..., valid_shape=[...])``: a window of rows of which only a leading part, its
extents known at run time, is copied. The manual's two-run form fills one 128-row tile from two
runs of a GM pool split at a run-time row ``r1``, into UB (Vec) and into L1 (Mat, then a matmul
operand), against torch; bad valid shapes are errors at the user's line, at compile time when
they are constants and at run time otherwise."""

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import structural_diff
from pypto.runtime import RunConfig, VerificationLevel
from pypto_sim_a2a3 import OutOfBoundsError

SIM = RunConfig(platform="a2a3sim")
D = 64


def meta(r1: int, b0: int, b1: int) -> torch.Tensor:
    """The run-time facts the kernels read: the split row and where each run starts in the pool."""
    return torch.tensor([r1, b0, b1, 0], dtype=torch.int32)


def two_runs(pool: torch.Tensor, r1: int, b0: int, b1: int) -> torch.Tensor:
    return torch.cat([pool[b0 : b0 + r1], pool[b1 : b1 + 128 - r1]])


def line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``marker``."""
    lines = Path(__file__).read_text().splitlines()
    return 1 + next(i for i, line in enumerate(lines) if line.endswith(marker))


@pl.jit
def gather_two_runs_vec(
    pool: pl.Tensor[[512, D], pl.FP32],
    info: pl.Tensor[[4], pl.INT32],
    out: pl.Out[pl.Tensor[[128, D], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        r1 = pl.cast(pl.read(info, [0]), pl.INDEX)
        b0 = pl.cast(pl.read(info, [1]), pl.INDEX)
        b1 = pl.cast(pl.read(info, [2]), pl.INDEX)
        kv = pl.create_tile([128, D], pl.FP32)
        kv = pl.gather_row(kv, pool, [0, 0], [b0, 0], [128, D], valid_shape=[r1, D])  # run 1
        kv = pl.gather_row(kv, pool, [r1, 0], [b1, 0], [128, D], valid_shape=[128 - r1, D])  # run 2
        pl.store(kv, [0, 0], out)
    return out


@pytest.mark.parametrize("r1", [0, 1, 40, 127, 128])
def test_two_runs_split_at_a_run_time_row_fill_a_vec_tile(r1):
    pool = torch.randn(512, D, generator=torch.Generator().manual_seed(r1))
    out = torch.zeros(128, D)
    gather_two_runs_vec(pool, meta(r1, 300, 7), out, config=SIM)
    torch.testing.assert_close(out, two_runs(pool, r1, 300, 7), rtol=0, atol=0)


def test_a_run_may_start_near_the_end_of_the_pool_when_its_valid_rows_fit():
    pool = torch.randn(512, D, generator=torch.Generator().manual_seed(3))
    out = torch.zeros(128, D)
    # Run 2's window [500:628] hangs past the pool's 512 rows; its 28 valid rows do not.
    gather_two_runs_vec(pool, meta(100, 0, 484), out, config=SIM)
    torch.testing.assert_close(out, two_runs(pool, 100, 0, 484), rtol=0, atol=0)


@pl.jit
def attend_two_runs_l1(
    pool: pl.Tensor[[512, D], pl.FP16],
    info: pl.Tensor[[4], pl.INT32],
    q: pl.Tensor[[16, D], pl.FP16],
    out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        r1 = pl.cast(pl.read(info, [0]), pl.INDEX)
        b0 = pl.cast(pl.read(info, [1]), pl.INDEX)
        b1 = pl.cast(pl.read(info, [2]), pl.INDEX)
        kv = pl.create_l1([128, D], pl.FP16)
        kv = pl.gather_row(kv, pool, [0, 0], [b0, 0], [128, D], valid_shape=[r1, D])
        kv = pl.gather_row(kv, pool, [r1, 0], [b1, 0], [128, D], valid_shape=[128 - r1, D])
        qm = pl.load(q, [0, 0], [16, D], target_memory=pl.Mem.Mat)
        pl.store(pl.matmul(qm, kv, b_trans=True), [0, 0], out)
    return out


@pytest.mark.parametrize("r1", [0, 56, 128])
def test_two_runs_into_l1_are_the_b_trans_operand_of_a_matmul(r1):
    gen = torch.Generator().manual_seed(10 + r1)
    pool, q = torch.randn(512, D, generator=gen).half(), torch.randn(16, D, generator=gen).half()
    out = torch.zeros(16, 128)
    attend_two_runs_l1(pool, meta(r1, 200, 380), q, out, config=SIM)
    want = q.float() @ two_runs(pool, r1, 200, 380).float().T
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)


@pl.jit
def gather_spelled_three_ways(
    pool: pl.Tensor[[512, D], pl.FP32],
    info: pl.Tensor[[4], pl.INT32],
    out: pl.Out[pl.Tensor[[128, D], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        r1 = pl.cast(pl.read(info, [0]), pl.INDEX)
        half = r1 // 2
        kv = pl.create_tile([128, D], pl.FP32)
        kv = pl.tile.gather_row(kv, pool, [0, 0], [0, 0], [128, D], valid_shape=[half, D])
        kv = pl.tensor.gather_row(kv, pool, [half, 0], [half, 0], [128, D], valid_shape=[r1 - half, D])
        kv = pl.gather_row(kv, pool, [r1, 0], [r1, 0], shapes=[128, D], valid_shape=[128 - r1, D])
        pl.store(kv, [0, 0], out)
    return out


def test_the_tile_and_tensor_spellings_and_the_shapes_keyword_take_valid_shape_too():
    pool = torch.randn(512, D, generator=torch.Generator().manual_seed(4))
    out = torch.zeros(128, D)
    gather_spelled_three_ways(pool, meta(77, 0, 0), out, config=SIM)
    torch.testing.assert_close(out, pool[:128], rtol=0, atol=0)


def test_the_valid_shape_operand_prints_and_parses_back_through_every_pass():
    pool, info, out = torch.zeros(512, D), meta(40, 0, 0), torch.zeros(128, D)
    text = gather_two_runs_vec.parse(pool, info, out).as_python()
    assert "valid_shape=[r1, 64]" in text and "valid_shape=[128 - r1, 64]" in text
    program = pl.parse(text)
    assert structural_diff(program, pl.parse(program.as_python())) is None
    config = RunConfig(verification_level=VerificationLevel.ROUNDTRIP)
    compiled = attend_two_runs_l1.compile(
        pl.Tensor[[512, D], pl.FP16],
        pl.Tensor[[4], pl.INT32],
        pl.Tensor[[16, D], pl.FP16],
        pl.Out[pl.Tensor[[16, 128], pl.FP32]],
        config=config,
    )
    lowered = compiled.lowered.as_python()
    assert "valid_shape=[r1, 64]" in lowered and "valid_shape=[128 - r1, 64]" in lowered


# ---------------------------------------------------------------- run-time errors


def test_a_run_time_valid_shape_past_the_window_is_out_of_bounds_at_its_line():
    with pytest.raises(
        OutOfBoundsError, match=r"valid_shape \[130, 64\] leaves the window's \[128, 64\]"
    ) as err:
        gather_two_runs_vec(torch.zeros(512, D), meta(130, 0, 0), torch.zeros(128, D), config=SIM)
    assert err.value.span.line == line_of("# run 1")
    assert err.value.hint


@pl.jit
def gather_run_of_given_length(
    pool: pl.Tensor[[512, D], pl.FP32],
    info: pl.Tensor[[4], pl.INT32],
    out: pl.Out[pl.Tensor[[128, D], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        at = pl.cast(pl.read(info, [0]), pl.INDEX)
        rows = pl.cast(pl.read(info, [1]), pl.INDEX)
        kv = pl.create_tile([128, D], pl.FP32)
        kv = pl.gather_row(kv, pool, [at, 0], [0, 0], [128, D], valid_shape=[rows, D])  # the run
        pl.store(kv, [0, 0], out)
    return out


def test_valid_rows_past_the_destination_tile_are_out_of_bounds_at_run_time():
    out = torch.zeros(128, D)
    gather_run_of_given_length(torch.ones(512, D), meta(100, 28, 0), out, config=SIM)  # fits exactly
    assert bool((out[100:] == 1).all()) and bool((out[:100] == 0).all())
    with pytest.raises(
        OutOfBoundsError, match=r"pl\.gather_row: region \[100:129\] is outside dim 0 of size 128"
    ) as err:
        gather_run_of_given_length(torch.ones(512, D), meta(100, 29, 0), out, config=SIM)
    assert err.value.span.line == line_of("# the run")
