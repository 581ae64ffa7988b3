"""Cross-core leftovers of issue #12: tile views in printed IR and ``pl.create_tile(tile_view=)``,
valid shapes through hand-written pipes, ``pl.aiv_shard`` of a tensor region, and manual ring
buffers inside a ``pl.at`` scope. Numbers against torch, errors by their exact text."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, structural_diff
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


@pl.jit
def viewed_rows(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 64], pl.FP32, tile_view=pl.TileView(valid_shape=[40, 64]))
        t = pl.tile.assemble(t, pl.load(x, [0, 0], [64, 64]), [0, 0])
        pl.store(pl.row_sum(pl.add(t, t), pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


def test_create_tile_with_a_tile_view_makes_a_partial_tile():
    x = torch.randn(64, 64)
    out = torch.full((64, 1), -1.0)
    viewed_rows(x, out, config=SIM)
    assert torch.allclose(out[:40], 2 * x[:40].sum(1, keepdim=True), atol=1e-4)
    assert bool((out[40:] == -1).all())  # rows past the view's 40 are not real: never stored


def test_the_printer_writes_a_valid_shape_as_a_tile_view_that_reads_back_equal():
    x, out = torch.randn(64, 64), torch.zeros(64, 1)
    program = viewed_rows.lower(x, out, config=SIM)
    text = program.as_python()
    assert "pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[40, 64])] = " in text
    assert "valid [40, 64]" not in text  # no longer a comment
    assert structural_diff(program, pl.parse(text)) is None


def test_a_tile_view_outside_the_created_tile_is_a_parse_error_at_the_call():
    def bad(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.create_tile([64, 64], pl.FP32, tile_view=pl.TileView(valid_shape=[80, 64]))
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError) as err:
        pl.jit(bad)(torch.zeros(64, 64), torch.zeros(64, 64), config=SIM)
    assert err.value.message == (
        "pl.create_tile: pl.TileView valid_shape [80, 64] does not lie inside the tile's [64, 64]"
    )
    assert err.value.hint == "give one extent per dim, each between 1 and the tile's extent"
    assert "tile_view=pl.TileView(valid_shape=[80, 64])" in str(err.value)
