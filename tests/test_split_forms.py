"""pl.split through views and valid shapes: reshapes, slices, fillpad and partial tiles in a
split scope are halved per lane (lane 0 the first ceil(L/2) of the axis, lane 1 the rest), and
give exactly the numbers of the unsplit (NONE) program."""

import runpy

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError, print_ir
from pypto.runtime import RunConfig, run

SIM = RunConfig(platform="a2a3sim")
MODES = [pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT]


def _operands(m: int = 64, k: int = 64, n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return (torch.randn(m, k, dtype=torch.float16) * 0.1, torch.randn(k, n, dtype=torch.float16) * 0.1)


def _product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.float() @ b.float()


# ---------------------------------------------------------------- reshape


def reshape_kernel(mode: pl.SplitMode):
    @pl.jit
    def rs(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[128, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="rs"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.exp(pl.reshape(acc, [128, 32]))
        return out

    return rs


def _run_reshape(mode: pl.SplitMode) -> torch.Tensor:
    a, b = _operands()
    out = torch.full((128, 32), float("nan"))
    reshape_kernel(mode)(a, b, out, config=SIM)
    return out


def test_up_down_halves_rows_before_and_after_a_reshape_with_the_unsplit_numbers():
    a, b = _operands()
    out = _run_reshape(pl.SplitMode.UP_DOWN)
    assert torch.allclose(out, torch.exp(_product(a, b).reshape(128, 32)), rtol=1e-5, atol=1e-5)
    assert torch.equal(out, _run_reshape(pl.SplitMode.NONE))


def test_left_right_through_a_reshape_is_an_error_naming_the_reshape_and_the_mode_that_works():
    with pytest.raises(ParseError) as info:
        reshape_kernel(pl.SplitMode.LEFT_RIGHT).lower(*_operands(), torch.zeros(128, 32), config=SIM)
    err = info.value
    assert "pl.split(pl.SplitMode.LEFT_RIGHT) cannot halve the view (pl.reshape at line" in err.message
    assert err.span.line == reshape_kernel.__code__.co_firstlineno + 9
    assert "pl.reshape(acc, [128, 32])" in str(err) and "^" in str(err)
    assert "pl.split(pl.SplitMode.UP_DOWN), which splits this scope" in err.hint


@pl.jit
def odd_rows_reshape(
    a: pl.Tensor[[64, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[4, 1024], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="rs"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.exp(pl.reshape(acc, [4, 1024]))
    return out


def test_a_reshape_that_does_not_keep_rows_splittable_is_an_error_naming_it():
    """[64, 64] -> [4, 1024] has even row extents and halves; [64, 64] -> [1, 4096] does not."""
    a, b = _operands()
    out = torch.zeros(4, 1024)
    odd_rows_reshape(a, b, out, config=SIM)
    assert torch.allclose(out, torch.exp(_product(a, b).reshape(4, 1024)), rtol=1e-5, atol=1e-5)

    @pl.jit
    def flat(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[1, 4096], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="f"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.exp(pl.reshape(acc, [1, 4096]))
        return out

    with pytest.raises(ParseError) as info:
        flat.lower(a, b, torch.zeros(1, 4096), config=SIM)
    assert "cannot halve the view (pl.reshape at line" in info.value.message
    assert "reshapes [64, 64] to [1, 4096]" in info.value.message
    assert "even number of rows" in info.value.hint


# ---------------------------------------------------------------- slice


def slice_kernel(mode: pl.SplitMode):
    @pl.jit
    def sl(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="sl"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.exp(pl.slice(acc, [64, 32], [0, 16]))
        return out

    return sl


def test_a_slice_keeping_the_split_rows_whole_is_halved_with_the_unsplit_numbers():
    a, b = _operands()
    outs = {}
    for mode in (pl.SplitMode.NONE, pl.SplitMode.UP_DOWN):
        outs[mode] = torch.full((64, 32), float("nan"))
        slice_kernel(mode)(a, b, outs[mode], config=SIM)
    assert torch.allclose(
        outs[pl.SplitMode.UP_DOWN], torch.exp(_product(a, b)[:, 16:48]), rtol=1e-5, atol=1e-5
    )
    assert torch.equal(outs[pl.SplitMode.UP_DOWN], outs[pl.SplitMode.NONE])


def test_a_slice_cutting_the_split_axis_is_an_error_naming_the_slice():
    with pytest.raises(ParseError) as info:
        slice_kernel(pl.SplitMode.LEFT_RIGHT).lower(*_operands(), torch.zeros(64, 32), config=SIM)
    err = info.value
    assert "cannot halve the view (pl.slice at line" in err.message
    assert "cuts dim 1 (columns): extent 32 of 64" in err.message
    assert "pl.split(pl.SplitMode.UP_DOWN), which splits this scope" in err.hint


# ---------------------------------------------------------------- valid shapes


def partial_bias_kernel(mode: pl.SplitMode):
    """``out[:rows] = a @ b + bias[:rows]`` with the bias loaded as a partial tile."""

    @pl.jit
    def pb(
        a: pl.Tensor[[64, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        bias: pl.Tensor[[64, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
        rows: pl.INDEX,
        cols: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="pb"):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.move(pl.matmul(a_l, b_r), target_memory=pl.Mem.Vec)
            t = pl.load(bias, [0, 0], [64, 64], valid_shape=[rows, cols])
            pl.store(pl.add(t, acc), [0, 0], out)
        return out

    return pb


def _run_partial_bias(mode: pl.SplitMode, rows: int, cols: int) -> torch.Tensor:
    a, b = _operands()
    bias = torch.randn(64, 64)
    out = torch.full((64, 64), -1.0)
    partial_bias_kernel(mode)(a, b, bias, out, rows, cols, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:rows, :cols] = (_product(a, b) + bias)[:rows, :cols]
    assert torch.allclose(out, want, rtol=1e-5, atol=1e-5)
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("rows", "cols"), [(40, 64), (20, 64), (64, 40), (64, 20), (33, 17)])
def test_a_partial_tile_is_halved_per_lane_and_stores_only_its_valid_region(mode, rows, cols):
    """Lane 0 holds min(valid, half) of the axis, lane 1 the rest (nothing when valid <= half)."""
    out = _run_partial_bias(mode, rows, cols)
    assert torch.equal(out, _run_partial_bias(pl.SplitMode.NONE, rows, cols))


def tail_kernel(mode: pl.SplitMode):
    """Row sums over blocks of 32 rows; the last block's valid rows are a run-time value."""

    @pl.jit
    def tail(
        a: pl.Tensor[[128, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
        n: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="tail"):
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            for r0 in pl.range(0, n, 32):
                a_l = pl.move(
                    pl.load(a, [r0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                prod = pl.matmul(a_l, b_r)
                part = pl.set_validshape(pl.move(prod, target_memory=pl.Mem.Vec), pl.minimum(32, n - r0), 64)
                pl.store(pl.fillpad(part, pad_value=pl.PadValue.zero), [r0, 0], out)
        return out

    return tail


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [100, 70])
def test_run_time_valid_shapes_and_fillpad_in_a_split_kernel_match_the_unsplit_program(mode, n):
    """set_validshape(pl.minimum(32, n - r0)) then fillpad: the last block of 100 rows has 4 valid
    rows (lane 1 none under UP_DOWN), of 70 rows 6; fillpad zeroes the rest of the block."""
    torch.manual_seed(1)
    a, b = torch.randn(128, 64, dtype=torch.float16) * 0.1, torch.randn(64, 64, dtype=torch.float16) * 0.1
    outs = {}
    for m in (pl.SplitMode.NONE, mode):
        outs[m] = torch.full((128, 64), -1.0)
        tail_kernel(m)(a, b, outs[m], n, config=SIM)
    blocks = -(-n // 32) * 32
    want = torch.full((128, 64), -1.0)
    want[:blocks] = 0.0
    want[:n] = _product(a, b)[:n]
    assert torch.allclose(outs[mode], want, rtol=1e-5, atol=1e-5)
    assert torch.equal(outs[mode], outs[pl.SplitMode.NONE])


# ---------------------------------------------------------------- odd extents back to the cube


def scale_then_matmul(mode: pl.SplitMode):
    """``(2 * x) @ w``: the lanes scale their shares of x, the cube multiplies the gathered x."""

    @pl.jit
    def sm(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="sm"):
            scaled = pl.mul(x, 2.0)
            out[:] = pl.matmul(scaled, w, out_dtype=pl.FP32)
        return out

    return sm


@pytest.mark.parametrize(("m", "k"), [(127, 64), (64, 63), (33, 31)])
@pytest.mark.parametrize("mode", MODES)
def test_an_odd_extent_gathered_back_to_the_cube_gives_the_unsplit_numbers(mode, m, k):
    """Lane 0 pushes ceil(L/2) rows (columns), lane 1 the rest in a tile of that size; the cube
    receives L + 1 and keeps the leading L."""
    torch.manual_seed(2)
    x, w = torch.randn(m, k, dtype=torch.float16), torch.randn(k, 48, dtype=torch.float16)
    outs = {}
    for each in (pl.SplitMode.NONE, mode):
        outs[each] = torch.full((m, 48), float("nan"))
        scale_then_matmul(each)(x, w, outs[each], config=SIM)
    assert torch.allclose(outs[mode], (x * 2).float() @ w.float(), rtol=1e-3, atol=1e-3)
    assert torch.equal(outs[mode], outs[pl.SplitMode.NONE])


def test_the_cube_keeps_the_leading_rows_of_an_odd_gather_in_the_printed_program():
    x, w = torch.zeros(127, 64, dtype=torch.float16), torch.zeros(64, 48, dtype=torch.float16)
    text = print_ir(scale_then_matmul(pl.SplitMode.UP_DOWN).lower(x, w, torch.zeros(127, 48), config=SIM))
    assert "pl.tile.tpop_from_aiv(shape=[128, 64]" in text
    assert "pl.tile.slice(" in text and "shape=[127, 64]" in text


# ---------------------------------------------------------------- valid shapes through the pipes


def partial_product_kernel(mode: pl.SplitMode):
    """The cube multiplies a partial [64, 64] tile (valid rows ``rows``); the lanes sum its rows."""

    @pl.jit
    def pp(
        x: pl.Tensor[[64, 64], pl.FP16],
        w: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 1], pl.FP32]],
        rows: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="pp"):
            x_mat = pl.load(x, [0, 0], [64, 64], target_memory=pl.Mem.Mat, valid_shape=[rows, 64])
            x_l = pl.move(x_mat, target_memory=pl.Mem.Left)
            w_r = pl.move(pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            v = pl.move(pl.matmul(x_l, w_r), target_memory=pl.Mem.Vec)
            pl.store(pl.row_sum(v, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
        return out

    return pp


@pytest.mark.parametrize("mode", [pl.SplitMode.NONE, pl.SplitMode.UP_DOWN])
@pytest.mark.parametrize("rows", [40, 20])
def test_a_partial_cube_tile_pops_with_its_valid_shape_so_reductions_and_stores_see_only_it(mode, rows):
    torch.manual_seed(3)
    x, w = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((64, 1), -1.0)
    partial_product_kernel(mode)(x, w, out, rows, config=SIM)
    want = (x.float() @ w.float()).sum(1, keepdim=True)
    assert torch.allclose(out[:rows], want[:rows], rtol=1e-3, atol=1e-2)
    assert bool((out[rows:] == -1).all())  # rows past the valid shape are never written


def test_pl_move_on_the_cube_keeps_a_partial_tiles_valid_shape_and_the_product_inherits_it():
    x, w = torch.zeros(64, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16)
    program = partial_product_kernel(pl.SplitMode.NONE).lower(x, w, torch.zeros(64, 1), 40, config=SIM)
    cube = next(f for f in program.functions.values() if f.name == "pp_aic")
    types = {s.target.name: s.target.type for s in cube.body if hasattr(s, "target")}
    assert types["x_l"].valid_shape == (40, 64)  # Mat -> Left keeps it
    product = next(t for t in types.values() if getattr(t, "memory_space", None) is pl.Mem.Acc)
    assert product.valid_shape == (40, 64)


def partial_left_right_kernel(mode: pl.SplitMode):
    """A partial tile made by the lanes (valid ``rows`` x ``cols``) crosses to the cube and back."""

    @pl.jit
    def plr(
        x: pl.Tensor[[64, 64], pl.FP32],
        w: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
        rows: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="plr"):
            t = pl.cast(pl.load(x, [0, 0], [64, 64], valid_shape=[rows, 64]), pl.FP16)
            t_l = pl.move(t, target_memory=pl.Mem.Left)
            w_r = pl.move(pl.load(w, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            v = pl.move(pl.matmul(t_l, w_r), target_memory=pl.Mem.Vec)
            pl.store(pl.exp(pl.mul(v, 0.01)), [0, 0], out)
        return out

    return plr


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows", [40, 33])
def test_a_partial_vector_tile_gathered_to_the_cube_keeps_its_valid_shape_there_and_back(mode, rows):
    torch.manual_seed(4)
    x, w = torch.randn(64, 64), torch.randn(64, 64, dtype=torch.float16)
    outs = {}
    for each in (pl.SplitMode.NONE, mode):
        outs[each] = torch.full((64, 64), -1.0)
        partial_left_right_kernel(each)(x, w, outs[each], rows, config=SIM)
    want = torch.exp((x.half().float() @ w.float()) * 0.01)
    assert torch.allclose(outs[mode][:rows], want[:rows], rtol=1e-3, atol=1e-3)
    assert bool((outs[mode][rows:] == -1).all())
    assert torch.equal(outs[mode], outs[pl.SplitMode.NONE])


def run_time_partial_kernel(mode: pl.SplitMode):
    """A run-time valid shape set on the cube's product flows through the pipe to the store."""

    @pl.jit
    def rtp(
        a: pl.Tensor[[128, 64], pl.FP16],
        b: pl.Tensor[[64, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
        n: pl.INDEX,
    ):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="rtp"):
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            for r0 in pl.range(0, n, 32):
                a_l = pl.move(
                    pl.load(a, [r0, 0], [32, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left
                )
                prod = pl.set_validshape(pl.matmul(a_l, b_r), pl.minimum(32, n - r0), 64)
                pl.store(pl.relu(pl.move(prod, target_memory=pl.Mem.Vec)), [r0, 0], out)
        return out

    return rtp


@pytest.mark.parametrize("mode", MODES)
def test_a_run_time_valid_shape_set_on_the_cube_reaches_the_lanes_store(mode):
    torch.manual_seed(5)
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((128, 64), -1.0)
    run_time_partial_kernel(mode)(a, b, out, 100, config=SIM)
    assert torch.allclose(out[:100], torch.relu(a[:100].float() @ b.float()), rtol=1e-3, atol=1e-3)
    assert bool((out[100:] == -1).all())


# ---------------------------------------------------------------- pl.TileView


@pl.jit
def viewed(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[40, 64], stride=[64, 1])] = (
            pl.load(x, [0, 0], [64, 64], valid_shape=[40, 64])
        )
        pl.store(pl.row_sum(t, pl.create_tile([64, 64], pl.FP32)), [0, 0], out)
    return out


def test_a_tile_view_annotation_describes_the_valid_shape_the_value_has():
    x, out = torch.randn(64, 64), torch.full((64, 1), -1.0)
    viewed(x, out, config=SIM)
    assert torch.allclose(out[:40], x[:40].sum(1, keepdim=True), atol=1e-4)
    assert bool((out[40:] == -1).all())


def test_a_tile_view_that_disagrees_with_the_value_is_an_error_at_the_annotation():
    @pl.jit
    def wrong(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 64], pl.FP32, pl.TileView(valid_shape=[32, 64])] = pl.load(
                x, [0, 0], [64, 64], valid_shape=[40, 64]
            )
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        wrong.lower(torch.zeros(64, 64), torch.zeros(64, 64))
    err = info.value
    assert err.message == "'t' is annotated with valid shape [32, 64] but the value's valid shape is [40, 64]"
    with open(__file__) as source:
        line = next(n for n, text in enumerate(source, 1) if "valid_shape=[32, 64])] = pl.load(" in text)
    assert err.span.line == line and "^" in str(err)
    assert "pl.set_validshape(value, 32, 64)" in err.hint


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ("pl.TileView(stride=[1, 64])", "pl.TileView stride [1, 64]: tiles are row-major"),
        ("pl.TileView(valid_shape=[65, 64])", "pl.TileView valid_shape [65, 64] does not lie inside"),
    ],
)
def test_a_tile_view_the_tile_cannot_have_is_a_parse_error(tmp_path, view, message):
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


# ---------------------------------------------------------------- pl.split_aiv in AIV functions

HALF_A = pl.Tensor[[64, 64], pl.FP16]
HALF_C = pl.Tensor[[64, 64], pl.FP32]


def hand_mixed(mode: pl.SplitMode):
    """relu(a @ b) written as AIC / AIV / Group functions, the AIV body a pl.split_aiv region."""
    share = (
        [64, 64] if mode is pl.SplitMode.NONE else ([32, 64] if mode is pl.SplitMode.UP_DOWN else [64, 32])
    )
    rows, cols = (32, 0) if mode is pl.SplitMode.UP_DOWN else (0, 32)
    storing = 1 if mode is pl.SplitMode.NONE else 2  # under NONE lane 1 pops a data-less token

    @pl.program
    class HandMixed:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: HALF_A, b: HALF_A, out: pl.Out[HALF_C]):
            pl.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            pl.tpush_to_aiv(pl.matmul(a_l, b_r), split=mode)

        @pl.function(type=pl.FunctionType.AIV)
        def vector(self, a: HALF_A, b: HALF_A, out: pl.Out[HALF_C]):
            for lane in pl.split_aiv(2, mode=mode):
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
                part = pl.tpop_from_aic(shape=share, dtype=pl.FP32, split=mode)
                if lane < storing:
                    pl.store(pl.relu(part), [lane * rows, lane * cols], out)
                pl.tfree_to_aic(part)

        @pl.function(type=pl.FunctionType.Group)
        def mixed(self, a: HALF_A, b: HALF_A, out: pl.Out[HALF_C]):
            self.cube(a, b, out)
            self.vector(a, b, out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: HALF_A, b: HALF_A, out: pl.Out[HALF_C]):
            self.mixed(a, b, out)
            return out

    return HandMixed


@pytest.mark.parametrize("mode", MODES)
def test_a_split_aiv_region_in_a_hand_written_aiv_function_runs_on_both_lanes(mode):
    torch.manual_seed(6)
    a, b = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((64, 64), float("nan"))
    run(hand_mixed(mode), a, b, out)
    assert torch.allclose(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)


def test_a_split_aiv_region_in_an_aic_function_is_an_error_at_the_region(tmp_path):
    source = """\
import pypto.language as pl


@pl.program
class Bad:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            pl.store(pl.load(x, [lane * 32, 0], [32, 64]), [lane * 32, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        self.cube(x, out)
        return out
"""
    path = tmp_path / "bad_region.py"
    path.write_text(source)
    with pytest.raises(ParseError) as info:
        run(runpy.run_path(str(path))["Bad"], torch.zeros(64, 64), torch.zeros(64, 64))
    err = info.value
    assert "a pl.split_aiv region in the AIC function 'cube'" in err.message
    assert err.span is not None and err.span.line == 8
    assert "AIV function" in err.hint


@pytest.mark.parametrize("mode", MODES)
def test_split_aiv_regions_in_a_core_group_scope_take_every_mode(mode):
    """The same kernel as a pl.at scope with aiv_shard: each lane stores its share (lane 0 the
    whole tile under NONE)."""
    rows, cols = (32, 0) if mode is pl.SplitMode.UP_DOWN else (0, 32)
    storing = 1 if mode is pl.SplitMode.NONE else 2

    @pl.jit
    def scoped(a: HALF_A, b: HALF_A, out: pl.Out[HALF_C]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scoped"):
            a_l = pl.move(pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul(a_l, b_r)
            for lane in pl.split_aiv(2, mode=mode):
                part = pl.aiv_shard(acc)
                if lane < storing:
                    pl.store(pl.relu(part), [lane * rows, lane * cols], out)
        return out

    torch.manual_seed(7)
    a, b = torch.randn(64, 64, dtype=torch.float16), torch.randn(64, 64, dtype=torch.float16)
    out = torch.full((64, 64), float("nan"))
    scoped(a, b, out, config=SIM)
    assert torch.allclose(out, torch.relu(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
