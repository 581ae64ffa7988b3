"""pl.split on a pure vector scope: the fair staged baseline runs its vector work on both lanes.

Without it a staged kernel's vector scope runs on AIV lane 0 alone while the mixed kernel halves
the same work over both lanes, and a comparison of the two would credit overlap with a 2x that
comes from the second lane.
"""

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind, print_ir


def vector_scope(mode: pl.SplitMode | None):
    """``out = (x + y) * x`` in one vector scope, split by ``mode`` (None: no pl.split at all)."""
    if mode is None:
        return unmarked

    @pl.jit
    def scaled_add(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="vec"):
            out[:] = pl.mul(pl.add(x, y), x)
        return out

    return scaled_add


@pl.jit
def unmarked(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vec"):
        out[:] = pl.mul(pl.add(x, y), x)
    return out


def inputs(m=512, n=128):
    torch.manual_seed(0)
    return torch.randn(m, n), torch.randn(m, n), torch.zeros(m, n)


@pytest.mark.parametrize("mode", [pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT])
def test_a_split_vector_scope_runs_data_parallel_on_both_lanes(mode):
    kernel = vector_scope(mode)
    x, y, out = inputs()
    kernel(x, y, out)
    torch.testing.assert_close(out, (x + y) * x)
    report = kernel.last_report
    assert report.busy_cycles["cg0.AIV0"] == report.busy_cycles["cg0.AIV1"] > 0
    assert [t.kernel for t in report.tasks] == ["vec"]


def test_the_split_halves_every_tile_and_shifts_each_lanes_rows():
    x, y, out = inputs()
    lowered = vector_scope(pl.SplitMode.UP_DOWN).lower(x, y, out)
    (vec,) = [fn for fn in lowered.functions.values() if fn.name == "vec"]
    assert vec.kind is FunctionKind.AIV
    text = print_ir(lowered)
    assert "pl.tile.get_subblock_idx()" in text and "lane * 64" in text
    assert "pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec]" in text and "[128, 128]" not in text


@pytest.mark.parametrize("mode", [None, pl.SplitMode.NONE])
def test_an_unsplit_vector_scope_still_runs_on_lane_0_alone(mode):
    kernel = vector_scope(mode)
    x, y, out = inputs()
    kernel(x, y, out)
    torch.testing.assert_close(out, (x + y) * x)
    assert kernel.last_report.busy_cycles["cg0.AIV1"] == 0


def test_splitting_the_vector_scope_roughly_halves_its_modeled_time():
    x, y, out = inputs()
    alone, split = vector_scope(None), vector_scope(pl.SplitMode.UP_DOWN)
    alone(x, y, out)
    split(x, y, out)
    lone_cycles = alone.last_report.kernel_cycles()["vec"]
    split_cycles = split.last_report.kernel_cycles()["vec"]
    assert 0.4 < split_cycles / lone_cycles < 0.75
