"""Scalar operands on a2a3sim: a whole float on an integer tile is that integer, and a run-time
integer that does not fit the tile's dtype stops the run at the user's line instead of wrapping or
leaking torch's overflow error."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import PyptoError
from pypto.runtime import RunConfig
from pypto_sim_a2a3 import ScalarRangeError

SIM = RunConfig(platform="a2a3sim")


@pl.jit
def doubled(x: pl.Tensor[[16, 32], pl.INT32], out: pl.Out[pl.Tensor[[16, 32], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        pl.store(pl.mul(t, 2.0), [0, 0], out)
    return out


@pl.jit
def shifted(
    x: pl.Tensor[[16, 32], pl.INT8], by: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[16, 32], pl.INT8]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        pl.store(pl.add(t, pl.read(by, [0])), [0, 0], out)  # the scalar's value is known at run time
    return out


def test_a_whole_float_scales_an_integer_tile_exactly():
    x = torch.randint(-1000, 1000, (16, 32), dtype=torch.int32)
    out = torch.zeros_like(x)
    doubled(x, out, config=SIM)
    assert torch.equal(out, x * 2)


def test_a_run_time_scalar_in_range_adds_like_torch():
    x = torch.randint(-50, 50, (16, 32), dtype=torch.int8)
    out = torch.zeros_like(x)
    shifted(x, torch.tensor([7], dtype=torch.int32), out, config=SIM)
    assert torch.equal(out, x + 7)


def test_a_run_time_scalar_out_of_range_is_an_error_at_the_users_line():
    x = torch.zeros(16, 32, dtype=torch.int8)
    with pytest.raises(ScalarRangeError) as info:
        shifted(x, torch.tensor([300], dtype=torch.int32), torch.zeros_like(x), config=SIM)
    err = info.value
    assert isinstance(err, PyptoError)
    assert "the scalar 300 does not fit torch.int8 elements, whose range is [-128, 127]" in err.message
    assert err.span is not None and "pl.add(t, pl.read(by, [0]))" in err.span.source_line()
    assert err.hint
