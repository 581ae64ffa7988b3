"""pl.split on an odd extent: lane 0 takes ceil(L/2) rows or columns, lane 1 the rest."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def matmul_bias(mode: pl.SplitMode):
    """``out = a @ b + bias`` in one scope split by ``mode``; shapes come from the arguments."""

    @pl.jit
    def odd(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="odd"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.add(acc, bias)
        return out

    return odd


# [127, 128] results split along the odd rows or the even columns, [128, 63] along either.
rows_up_down = matmul_bias(pl.SplitMode.UP_DOWN)
rows_left_right = matmul_bias(pl.SplitMode.LEFT_RIGHT)
cols_up_down = matmul_bias(pl.SplitMode.UP_DOWN)
cols_left_right = matmul_bias(pl.SplitMode.LEFT_RIGHT)
cols_unsplit = matmul_bias(pl.SplitMode.NONE)
one_row = matmul_bias(pl.SplitMode.UP_DOWN)


def _inputs(m: int, n: int) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    a = torch.randn(m, 256, dtype=torch.float16)
    b = torch.randn(256, n, dtype=torch.float16)
    return a, b, torch.randn(m, n), torch.full((m, n), float("nan"))


def _run(kernel, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    a, b, bias, out = _inputs(m, n)
    kernel(a, b, bias, out, config=SIM)
    return out, a.float() @ b.float() + bias


@pytest.mark.parametrize(
    ("kernel", "m", "n"),
    [
        (rows_up_down, 127, 128),
        (rows_left_right, 127, 128),
        (cols_up_down, 128, 63),
        (cols_left_right, 128, 63),
    ],
)
def test_an_odd_extent_splits_and_gives_exactly_the_unsplit_numbers(kernel, m, n):
    out, expected = _run(kernel, m, n)
    assert torch.equal(out, expected)


@pytest.mark.parametrize("kernel", [cols_up_down, cols_left_right])
def test_the_split_modes_match_the_unsplit_program_bit_for_bit(kernel):
    out, _ = _run(kernel, 128, 63)
    unsplit, _ = _run(cols_unsplit, 128, 63)
    assert torch.equal(out, unsplit)


def test_lane_1_loads_and_stores_only_its_rows_of_an_odd_extent():
    """Lane 0 holds rows 0:64, lane 1 rows 64:127 in a [64, 128] tile: valid 64 - lane rows."""
    text = print_ir(rows_up_down.lower(*_inputs(127, 128), config=SIM))
    assert "pl.tile.load_partial(bias, [lane * 64, 0], [64 - lane, 128], shape=[64, 128]" in text
    assert "pl.tile.store_partial(add, [lane * 64, 0], out, [64 - lane, 128])" in text


def test_an_extent_of_1_along_the_split_axis_is_a_compile_error_naming_the_tile_and_axis():
    with pytest.raises(ParseError, match=r"cannot split tile 'acc' along dim 0 \(rows\): its extent 1"):
        one_row.lower(*_inputs(1, 128), config=SIM)


@pl.jit
def scale_then_matmul(
    x: pl.Tensor[[127, 64], pl.FP16],
    w: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[127, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="odd"):
        scaled = pl.mul(x, 2.0)
        out[:] = pl.matmul(scaled, w, out_dtype=pl.FP32)
    return out


def test_an_odd_extent_gathered_back_to_the_cube_gives_the_unsplit_numbers():
    """Both lanes push a [64, 64] share of the [127, 64] product; the cube keeps 127 rows."""
    torch.manual_seed(0)
    x, w = torch.randn(127, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((127, 64), float("nan"))
    scale_then_matmul(x, w, out, config=SIM)
    assert torch.allclose(out, (x * 2).float() @ w.float(), rtol=1e-3, atol=1e-3)


@pl.jit
def vector_only(
    x: pl.Tensor[[127, 64], pl.FP32],
    y: pl.Tensor[[127, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[127, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="vodd"):
        out[:] = pl.mul(pl.add(x, y), 3.0)
    return out


def test_a_pure_vector_kernel_splits_an_odd_extent_data_parallel():
    torch.manual_seed(0)
    x, y, out = torch.randn(127, 64), torch.randn(127, 64), torch.full((127, 64), float("nan"))
    vector_only(x, y, out, config=SIM)
    assert torch.equal(out, (x + y) * 3.0)
