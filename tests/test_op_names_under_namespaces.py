"""An op spelled by its own IR name under its namespace (``pl.tensor.create``, ``pl.tile.create``,
``pl.tile.ci``) is the ``pl`` function it is the one form of (``pl.create_tensor``,
``pl.create_tile``, ``pl.arange``) and takes that function's arguments, positional ones included,
as PyPTO's manual writes ``pl.tensor.create(shape, dtype)``. The printed IR form (operands
positionally, attributes by keyword) still reads back; spellings that name one of several forms
(``pl.tile.mrgsort_format1``) stay the IR op's own call."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, VerificationLevel
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim", verification_level=VerificationLevel.ROUNDTRIP)


def test_tensor_create_takes_the_dtype_positionally_like_create_tensor():
    @pl.jit
    def k(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        scratch = pl.tensor.create([64, 64], pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            scratch[:] = pl.exp(x)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(scratch, 1.0)
        return out

    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    k(x, out, config=SIM)
    torch.testing.assert_close(out, x.exp() + 1)


def test_tile_create_and_tile_ci_take_their_functions_arguments():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            cols = pl.cast(pl.tile.ci(0, [1, 64], pl.INT32), pl.FP32)
            rows = pl.tile.create([16, 64], pl.FP32, pl.Mem.Vec)
            rows = pl.tile.assemble(rows, pl.load(x, [0, 0], [16, 64]), [0, 0])
            pl.store(pl.col_expand_mul(rows, cols), [0, 0], out)
        return out

    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    k(x, out, config=SIM)
    torch.testing.assert_close(out, x * torch.arange(64, dtype=torch.float32))


def test_a_wrong_call_of_tile_create_names_the_functions_signature():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.tile.create([16, 64])
            pl.store(pl.tile.assemble(rows, pl.load(x, [0, 0], [16, 64]), [0, 0]), [0, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        k.parse()
    assert info.value.message.startswith("pl.tile.create(): missing a required argument: 'dtype'")
    assert "pl.create_tile(shape, dtype, target_memory=pl.Mem.Vec, tile_view=None)" in str(info.value)
    assert "rows = pl.tile.create([16, 64])" in str(info.value)
