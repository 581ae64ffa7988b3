"""pl.split with a broadcast vector: every AIV lane holds a [1, C] row (UP_DOWN) or an [R, 1]
column (LEFT_RIGHT) whole, and the broadcast works on each lane's share of the other operand.

A layer norm's gamma and beta, or a linear layer's bias, are one row for every row of the
result: under UP_DOWN both lanes need all of it, so it is loaded whole by each lane (not halved,
not offset by the lane). A store of such a tile is made by lane 0 alone. What stays rejected
(a column reduction under UP_DOWN, a row reduction under LEFT_RIGHT) gets a hint naming only the
options that work for the scope.
"""

import re

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, print_ir
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
EPS = 1e-5
UP_DOWN, LEFT_RIGHT, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE


def linear_layer_norm(mode: pl.SplitMode):
    """``layer_norm(a @ w) * gamma + beta`` in one mixed scope: the matmul on the cube, the norm
    on the lanes; gamma and beta are [1, C]."""

    @pl.jit
    def linear_ln(a: pl.Tensor, w: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="linear_ln"):
            h = pl.matmul(a, w, out_dtype=pl.FP32)
            n = h.shape[1]
            centered = pl.row_expand_sub(h, pl.mul(pl.row_sum(h), 1.0 / n))
            var = pl.mul(pl.row_sum(pl.mul(centered, centered)), 1.0 / n)
            normed = pl.row_expand_mul(centered, pl.rsqrt(pl.add(var, EPS)))
            scaled = pl.col_expand_mul(normed, gamma)
            out[:] = pl.add(scaled, pl.col_expand(scaled, beta))
        return out

    return linear_ln


def layer_norm(mode: pl.SplitMode):
    """The same norm as a pure vector scope: split, it runs data-parallel on both lanes."""

    @pl.jit
    def ln(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="ln"):
            n = x.shape[1]
            centered = pl.row_expand_sub(x, pl.mul(pl.row_sum(x), 1.0 / n))
            var = pl.mul(pl.row_sum(pl.mul(centered, centered)), 1.0 / n)
            normed = pl.row_expand_mul(centered, pl.rsqrt(pl.add(var, EPS)))
            scaled = pl.col_expand_mul(normed, gamma)
            out[:] = pl.add(scaled, pl.col_expand(scaled, beta))
        return out

    return ln


def linear_bias(mode: pl.SplitMode):
    """``a @ w + bias`` with a [1, N] bias broadcast down the rows."""

    @pl.jit
    def linear(a: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="linear"):
            acc = pl.matmul(a, w, out_dtype=pl.FP32)
            out[:] = pl.add(acc, pl.col_expand(acc, bias))
        return out

    return linear


def linear_bias_tiles(mode: pl.SplitMode):
    """The same on tiles: the bias is a row-vector load, ``pl.load(bias, [0, 0], [1, N])``."""

    @pl.jit
    def linear_tiles(a: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="linear_tiles"):
            m, k = a.shape
            n = w.shape[1]
            a_l = pl.move(pl.load(a, [0, 0], [m, k], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            w_r = pl.move(pl.load(w, [0, 0], [k, n], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.move(pl.matmul(a_l, w_r, out_dtype=pl.FP32), target_memory=pl.Mem.Vec)
            b = pl.load(bias, [0, 0], [1, n])
            pl.store(pl.add(acc, pl.col_expand(acc, b)), [0, 0], out)
        return out

    return linear_tiles


def linear_row_scale(mode: pl.SplitMode):
    """``(a @ w) * scale`` with an [R, 1] per-row scale broadcast across the columns."""

    @pl.jit
    def row_scaled(a: pl.Tensor, w: pl.Tensor, scale: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="row_scaled"):
            acc = pl.matmul(a, w, out_dtype=pl.FP32)
            out[:] = pl.row_expand_mul(acc, scale)
        return out

    return row_scaled


def _matmul_inputs(m: int, k: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16) * 0.1


def _rows(*shapes: tuple[int, int]) -> list[torch.Tensor]:
    torch.manual_seed(1)
    return [torch.randn(*shape) for shape in shapes]


def _ln(h: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(h, (h.shape[1],), gamma[0], beta[0], eps=EPS)


def _loads_of(text: str, tensor: str) -> list[str]:
    return re.findall(rf"pl\.tile\.load\({tensor}, \[[^\]]*\], shape=\[[^\]]*\]", text)


# ---------------------------------------------------------------- layer norm, gamma/beta [1, C]


@pytest.mark.parametrize("m", [64, 63])
def test_linear_then_layer_norm_with_a_1xc_gamma_splits_up_down_and_matches_torch(m):
    a, w = _matmul_inputs(m, 64, 128)
    gamma, beta = _rows((1, 128), (1, 128))
    out = torch.full((m, 128), float("nan"))
    linear_layer_norm(UP_DOWN)(a, w, gamma, beta, out, config=SIM)
    torch.testing.assert_close(out, _ln(a.float() @ w.float(), gamma, beta), rtol=1e-4, atol=1e-4)


def test_each_lane_loads_gamma_and_beta_whole_not_halved_nor_offset_by_lane():
    a, w = _matmul_inputs(64, 64, 128)
    gamma, beta = _rows((1, 128), (1, 128))
    text = print_ir(linear_layer_norm(UP_DOWN).lower(a, w, gamma, beta, torch.zeros(64, 128), config=SIM))
    aiv = text[text.index("def linear_ln_aiv") :]
    assert _loads_of(aiv, "gamma") == ["pl.tile.load(gamma, [0, 0], shape=[1, 128]"]
    assert _loads_of(aiv, "beta") == ["pl.tile.load(beta, [0, 0], shape=[1, 128]"]
    assert "pl.tile.col_expand_mul(normed, gamma_vec)" in aiv
    assert "pl.tile.store(add, [lane * 32, 0], out)" in aiv  # the result is still halved by rows


@pytest.mark.parametrize("mode", [UP_DOWN, NONE])
def test_a_pure_vector_layer_norm_under_split_matches_torch(mode):
    x, gamma, beta = _rows((64, 96), (1, 96), (1, 96))
    x = x * 2 + 1
    out = torch.full((64, 96), float("nan"))
    layer_norm(mode)(x, gamma, beta, out, config=SIM)
    torch.testing.assert_close(out, _ln(x, gamma, beta), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- linear + [1, N] bias


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT])
@pytest.mark.parametrize("make", [linear_bias, linear_bias_tiles])
def test_linear_plus_a_1xn_bias_matches_torch_under_either_split(make, mode):
    a, w = _matmul_inputs(64, 64, 128)
    (bias,) = _rows((1, 128))
    out = torch.full((64, 128), float("nan"))
    make(mode)(a, w, bias, out, config=SIM)
    torch.testing.assert_close(out, a.float() @ w.float() + bias, rtol=1e-4, atol=1e-4)


def test_under_left_right_the_1xn_bias_is_halved_by_columns_like_the_result():
    a, w = _matmul_inputs(64, 64, 128)
    (bias,) = _rows((1, 128))
    text = print_ir(linear_bias(LEFT_RIGHT).lower(a, w, bias, torch.zeros(64, 128), config=SIM))
    assert _loads_of(text, "bias") == ["pl.tile.load(bias, [0, lane * 64], shape=[1, 64]"]


@pytest.mark.parametrize("mode", [LEFT_RIGHT, UP_DOWN])
def test_an_rx1_row_scale_is_held_whole_by_each_lane_under_left_right(mode):
    a, w = _matmul_inputs(64, 64, 128)
    (scale,) = _rows((64, 1))
    out = torch.full((64, 128), float("nan"))
    kernel = linear_row_scale(mode)
    kernel(a, w, scale, out, config=SIM)
    torch.testing.assert_close(out, (a.float() @ w.float()) * scale, rtol=1e-4, atol=1e-4)
    if mode is LEFT_RIGHT:
        text = print_ir(kernel.lower(a, w, scale, out, config=SIM))
        assert _loads_of(text, "scale") == ["pl.tile.load(scale, [0, 0], shape=[64, 1]"]


# ---------------------------------------------------------------- writing a replicated tile


@pl.jit
def norm_and_stats(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor], g2: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="stats"):
        out[:] = pl.col_expand_mul(x, gamma)
        g2[:] = pl.mul(gamma, 2.0)
    return out, g2


@pl.jit
def accumulate_row(gamma: pl.Tensor, total: pl.InOut[pl.Tensor]):
    with pl.at(
        level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="acc_row"
    ):
        pl.assemble(total, pl.mul(gamma, 3.0), [0, 0], atomic=pl.AtomicType.Add)
    return total


def test_a_tile_every_lane_holds_whole_is_stored_by_lane_0_alone():
    x, gamma = _rows((64, 32), (1, 32))
    out, g2 = torch.full((64, 32), float("nan")), torch.full((1, 32), float("nan"))
    norm_and_stats(x, gamma, out, g2, config=SIM)
    assert torch.equal(out, x * gamma)
    assert torch.equal(g2, gamma * 2.0)
    text = print_ir(norm_and_stats.lower(x, gamma, out, g2, config=SIM))
    assert "pl.tile.store_partial(muls, [0, 0], g2, [1 - lane, 32])" in text


def test_an_atomic_add_of_a_tile_every_lane_holds_is_made_once():
    (gamma,) = _rows((1, 32))
    total = torch.ones(1, 32)
    accumulate_row(gamma, total, config=SIM)
    assert torch.equal(total, 1.0 + gamma * 3.0)


# ---------------------------------------------------------------- what stays rejected, and its hint


def stats_both_ways(mode: pl.SplitMode):
    """Row-centred, then summed down the columns: a row reduction and a column reduction."""

    @pl.jit
    def centred_col_sum(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="both"):
            h = pl.matmul(a, w, out_dtype=pl.FP32)
            centered = pl.row_expand_sub(h, pl.mul(pl.row_sum(h), 1.0 / h.shape[1]))
            out[:] = pl.col_sum(centered)
        return out

    return centred_col_sum


def col_totals(mode: pl.SplitMode):
    """A column reduction only: it needs every row, so UP_DOWN cannot take it; LEFT_RIGHT can."""

    @pl.jit
    def col_total(a: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="col_total"):
            h = pl.matmul(a, w, out_dtype=pl.FP32)
            out[:] = pl.col_sum(h)
        return out

    return col_total


def _reject(kernel, *args) -> ParseError:
    with pytest.raises(ParseError) as info:
        kernel.lower(*args, config=SIM)
    return info.value


@pytest.mark.parametrize("mode", [UP_DOWN, LEFT_RIGHT])
def test_a_scope_rejected_under_both_modes_gets_a_hint_naming_neither(mode):
    a, w = _matmul_inputs(64, 64, 128)
    err = _reject(stats_both_ways(mode), a, w, torch.zeros(1, 128))
    assert err.message.startswith("split rejected: the body mixes split and plain full-width vector ops")
    assert "UP_DOWN" not in err.hint and "LEFT_RIGHT" not in err.hint
    assert "pl.split_aiv" in err.hint and "pl.SplitMode.NONE" in err.hint


def test_the_option_a_both_ways_hint_names_does_work():
    a, w = _matmul_inputs(64, 64, 128)
    out = torch.full((1, 128), float("nan"))
    stats_both_ways(NONE)(a, w, out, config=SIM)
    h = a.float() @ w.float()
    torch.testing.assert_close(
        out, (h - h.mean(dim=1, keepdim=True)).sum(dim=0, keepdim=True), rtol=1e-3, atol=1e-3
    )


@pytest.mark.parametrize(
    ("make", "mode", "other"),
    [(col_totals, UP_DOWN, LEFT_RIGHT), (linear_layer_norm, LEFT_RIGHT, UP_DOWN)],
)
def test_a_scope_rejected_under_one_mode_names_the_other_which_runs(make, mode, other):
    a, w = _matmul_inputs(64, 64, 128)
    if make is col_totals:
        args, out, want = (), torch.zeros(1, 128), (a.float() @ w.float()).sum(dim=0, keepdim=True)
    else:
        gamma, beta = _rows((1, 128), (1, 128))
        args, out, want = (gamma, beta), torch.zeros(64, 128), _ln(a.float() @ w.float(), gamma, beta)
    err = _reject(make(mode), a, w, *args, out)
    assert f"pl.split(pl.SplitMode.{other.name})" in err.hint
    assert mode.name not in err.hint
    make(other)(a, w, *args, out, config=SIM)
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)


@pl.jit
def gathered_rows(table: pl.Tensor, idx: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="rows"):
        rows = pl.create_tile([16, 64], pl.FP32)
        for i in pl.range(16):
            pl.gather_row(rows, table, [i, 0], [pl.cast(pl.read(idx, [i]), pl.INDEX), 0], [1, 64])
        pl.store(rows, [0, 0], out)
    return out


def test_a_row_gather_into_a_halved_tile_is_rejected_at_compile_time_not_out_of_bounds_at_run_time():
    """gather_row addresses the whole destination: a lane's half cannot take row i >= 8."""
    table, idx = torch.randn(1024, 64), torch.randint(0, 1024, (16,), dtype=torch.int32)
    err = _reject(gathered_rows, table, idx, torch.zeros(16, 64))
    assert "(pl.gather_row at line" in err.message and "needs every row" in err.message
    assert "UP_DOWN" not in err.hint and "LEFT_RIGHT" not in err.hint


@pl.jit
def carried_row(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out[pl.Tensor], g_out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="carry"):
        rows, cols = x.shape
        g = pl.load(gamma, [0, 0], [1, cols])
        t = pl.load(x, [0, 0], [rows, cols])
        for _ in pl.range(3):
            g = pl.mul(g, 2.0)
            t = pl.col_expand_mul(t, g)
        pl.store(t, [0, 0], out)
        pl.store(g, [0, 0], g_out)
    return out, g_out


def test_a_loop_carried_row_stays_whole_on_every_lane():
    x, gamma = _rows((64, 32), (1, 32))
    out, g_out = torch.full((64, 32), float("nan")), torch.full((1, 32), float("nan"))
    carried_row(x, gamma, out, g_out, config=SIM)
    torch.testing.assert_close(out, x * (2 * gamma) * (4 * gamma) * (8 * gamma))
    assert torch.equal(g_out, 8 * gamma)
