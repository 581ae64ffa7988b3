"""``pl.TileView`` in tile annotations and ``pl.create_tile``: its fields (valid_shape, stride,
start_offset, blayout, slayout, fractal, pad, compact), a run-time valid shape it gives a value
valid everywhere, the padding it fills, and the errors for views a tile cannot have."""

import math

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def annotated_rows(
    x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]], cfg: pl.Tensor[[1], pl.INT32]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.read(cfg, [0])
        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[rows, 48])] = pl.load(
            x, [0, 0], [64, 64]
        )
        pl.store(pl.row_sum(t, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


@pytest.mark.parametrize("n", [40, 7])
def test_a_run_time_valid_shape_in_a_tile_view_sets_the_valid_shape_of_a_whole_value(n):
    x = rand(64, 64, seed=1)
    out = torch.full((64, 1), -1.0)
    annotated_rows(x, out, torch.tensor([n], dtype=torch.int32), config=SIM)
    torch.testing.assert_close(out[:n], x[:n, :48].sum(1, keepdim=True))
    assert bool((out[n:] == -1).all())
    assert annotated_rows.cache_info().misses == 1  # rows is read at run time: one compile


@pl.jit
def padded_view(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[2], pl.INT32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.read(cfg, [0])
        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[rows, 64], pad=-math.inf)] = (
            pl.load(x, [0, 0], [64, 64], valid_shape=[rows, 64])
        )
        pl.store(pl.set_validshape(t, 64, 64), [0, 0], out)  # reads the padding too
    return out


def test_a_tile_view_pad_is_what_the_tile_holds_outside_its_valid_shape():
    x = rand(64, 64, seed=2)
    out = torch.zeros(64, 64)
    padded_view(x, torch.tensor([24, 0], dtype=torch.int32), out, config=SIM)
    torch.testing.assert_close(out[:24], x[:24])
    assert bool((out[24:] == -math.inf).all())


@pl.jit
def all_fields(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        view = pl.TileView(
            valid_shape=[32, 64],
            stride=[64, 1],
            start_offset=0,
            blayout=pl.TileLayout.row_major,
            slayout=pl.TileLayout.none_box,
            fractal=512,
            pad=pl.PadValue.zero,
            compact=pl.CompactMode.null,
        )
        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, view] = pl.load(x, [0, 0], [64, 64])
        pl.store(pl.set_validshape(t, 64, 64), [0, 0], out)
    return out


def test_every_tile_view_field_is_accepted_by_keyword():
    x = rand(64, 64, seed=3)
    out = torch.full((64, 64), -1.0)
    all_fields(x, out, config=SIM)
    torch.testing.assert_close(out[:32], x[:32])
    assert bool((out[32:] == 0).all())  # pad=zero filled the rows past the valid shape


@pl.jit
def created(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]], n: pl.INDEX):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.create_tile([64, 64], pl.FP32, tile_view=pl.TileView(valid_shape=[pl.min(n, 64), 64]))
        t = pl.tile.assemble(t, pl.load(x, [0, 0], [64, 64]), [0, 0])
        pl.store(pl.row_max(t, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


def test_create_tile_takes_a_run_time_valid_shape_in_its_view():
    x = rand(64, 64, seed=4)
    out = torch.full((64, 1), -1.0)
    created(x, out, 20, config=SIM)
    torch.testing.assert_close(out[:20], x[:20].amax(1, keepdim=True))
    assert bool((out[20:] == -1).all())


def test_a_view_of_the_same_run_time_valid_shape_the_value_has_checks():
    @pl.jit
    def same(
        x: pl.Tensor[[64, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
        n: pl.Tensor[[1], pl.INT32],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.read(n, [0])
            t: pl.Tile[[64, 64], pl.FP32, pl.TileView(valid_shape=[rows, 64])] = pl.load(
                x, [0, 0], [64, 64], valid_shape=[rows, 64]
            )
            pl.store(t, [0, 0], out)
        return out

    x, out = rand(64, 64, seed=5), torch.full((64, 64), -1.0)
    same(x, out, torch.tensor([9], dtype=torch.int32), config=SIM)
    torch.testing.assert_close(out[:9], x[:9])
    assert bool((out[9:] == -1).all())


def test_a_view_that_cannot_be_shown_to_match_a_run_time_valid_shape_is_an_error():
    @pl.jit
    def other(
        x: pl.Tensor[[64, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
        n: pl.Tensor[[1], pl.INT32],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.read(n, [0])
            t: pl.Tile[[64, 64], pl.FP32, pl.TileView(valid_shape=[16, 64])] = pl.load(
                x, [0, 0], [64, 64], valid_shape=[rows, 64]
            )
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        other.lower(torch.zeros(64, 64), torch.zeros(64, 64), torch.zeros(1, dtype=torch.int32))
    assert (
        info.value.message
        == "'t' is annotated with valid shape [16, 64] but the value's valid shape is [rows, 64]"
    )
    assert "pl.set_validshape(value, 16, 64)" in info.value.hint


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ("pl.TileView(valid=[32, 64])", "pl.TileView has no field valid"),
        ("pl.TileView(fractal=500)", "fractal= is a box size in bytes, a power of two"),
        ("pl.TileView(blayout='row_major')", "pl.TileView blayout= must be a pl.TileLayout"),
        ("pl.TileView(compact=1)", "pl.TileView compact= must be a pl.CompactMode"),
        ("pl.TileView(start_offset=-1)", "pl.TileView start_offset= holds -1, below 0"),
        ("pl.TileView(pad=1.5)", "pl.TileView pad= must be a pl.PadValue"),
        ("pl.TileView(valid_shape=[8.5, 64])", "valid_shape= must hold ints or integer scalars"),
        ("pl.TileView(stride=[64, 1], blayout=pl.TileLayout.col_major)", "a col_major tile is column-major"),
    ],
)
def test_a_bad_tile_view_field_is_an_error_at_the_users_line(tmp_path, view, message):
    path = tmp_path / "k.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.jit\n"
        "def k(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, {view}] = pl.load(x, [0, 0], [64, 64])\n"
        "        pl.store(t, [0, 0], out)\n"
        "    return out\n"
    )
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(ParseError) as info:
        namespace["k"].lower(torch.zeros(64, 64), torch.zeros(64, 64))
    assert message in info.value.message
    assert info.value.span is not None and info.value.span.line == 7
    assert info.value.hint


def test_column_major_strides_fit_a_column_major_view():
    view = pl.TileView(stride=[1, 64], blayout=pl.TileLayout.col_major)
    spec = pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat, view]
    assert spec.view.blayout is pl.TileLayout.col_major and spec.view.stride == (1, 64)


def test_a_pad_on_a_partial_tile_outside_vec_is_an_error():
    @pl.jit
    def cube_pad(x: pl.Tensor[[64, 64], pl.FP16], out: pl.Out[pl.Tensor[[64, 64], pl.FP16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[
                [64, 64], pl.FP16, pl.Mem.Mat, pl.TileView(valid_shape=[32, 64], pad=pl.PadValue.zero)
            ] = pl.load(x, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            pl.store(pl.move(t, target_memory=pl.Mem.Left), [0, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        cube_pad.lower(torch.zeros(64, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16))
    assert "fills the padding of a Vec tile" in info.value.message
