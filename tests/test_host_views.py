"""Tensors the orchestration makes: ``pl.create_tensor`` of extents known only at run time, and
``pl.slice`` views of its tensors passed to kernels (In, Out, InOut) and to ``pl.at`` scopes, with
the task graph ordering kernels by the regions of a tensor their views cover."""

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import ExtentError, OutOfBoundsError, ParseError, SpecializationError, structural_diff
from pypto.runtime import RunConfig, compile_program, hookimpl, register_plugin, reset_registry

SIM = RunConfig(platform="a2a3sim")
SOURCE = Path(__file__).read_text().splitlines()


def line_of(text):
    """The line of this file that holds ``text`` (where an error must point)."""
    return next(n for n, line in enumerate(SOURCE, 1) if text in line)


D = pl.dynamic("D")  # a kernel's column extent, bound per call
R = pl.dynamic("R")  # a kernel's row extent


@pl.jit.incore
def scale_rows(x: pl.Tensor[[16, D], pl.FP32], out: pl.Out[pl.Tensor[[16, D], pl.FP32]], k: pl.FP32):
    for c in pl.range(0, D, 64):
        t = pl.load(x, [0, c], [16, 64], valid_shape=[16, pl.min(64, D - c)])
        pl.store(pl.mul(t, k), [0, c], out)
    return out


@pl.jit.incore
def add_into(x: pl.Tensor[[16, D], pl.FP32], acc: pl.InOut[pl.Tensor[[16, D], pl.FP32]]):
    for c in pl.range(0, D, 64):
        cols = pl.min(64, D - c)
        t = pl.add(
            pl.load(acc, [0, c], [16, 64], valid_shape=[16, cols]),
            pl.load(x, [0, c], [16, 64], valid_shape=[16, cols]),
        )
        pl.store(t, [0, c], acc)
    return acc


@pl.jit
def blocks_of_run_time_width(
    x: pl.Tensor[[64, 256], pl.FP32],
    cfg: pl.Tensor[[2], pl.INT64],
    out: pl.Out[pl.Tensor[[64, 256], pl.FP32]],
):
    width = pl.tensor.read(cfg, [0])  # the columns each block covers
    blocks = pl.tensor.read(cfg, [1])
    for b in pl.range(blocks):
        acc = pl.create_tensor([16, width], dtype=pl.FP32)  # zeroed, of this run's width
        xi = pl.slice(x, [16, width], [b * 16, 0])  # In
        acc = add_into(xi, acc)
        acc = add_into(xi, acc)
        oi = pl.slice(out, [16, width], [b * 16, 0])  # Out
        oi = scale_rows(acc, oi, 0.5)
    return out


@pytest.mark.parametrize(("width", "blocks"), [(256, 4), (96, 3), (64, 1)])
def test_run_time_shaped_tensors_and_views_feed_kernels_with_dynamic_extents(width, blocks):
    x, out = torch.randn(64, 256), torch.zeros(64, 256)
    blocks_of_run_time_width(x, torch.tensor([width, blocks]), out, config=SIM)
    want = torch.zeros(64, 256)
    want[: blocks * 16, :width] = x[: blocks * 16, :width]
    torch.testing.assert_close(out, want)
    assert blocks_of_run_time_width.cache_info().misses == 1  # one program for every width


@pl.jit.incore
def exp_block(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    pl.store(pl.exp(pl.load(x, [0, 0], [32, 64])), [0, 0], out)
    return out


@pl.jit.incore
def neg_block(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    pl.store(pl.neg(pl.load(x, [0, 0], [32, 64])), [0, 0], out)
    return out


@pl.jit
def bands_then_across(
    x: pl.Tensor[[64, 64], pl.FP32],
    s: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
):
    for i in pl.range(2):  # two writers of disjoint bands of s
        exp_block(pl.slice(x, [32, 64], [i * 32, 0]), pl.slice(s, [32, 64], [i * 32, 0]))
    out = neg_block(pl.slice(s, [32, 64], [16, 0]), out)  # reads rows 16:48: half of each band
    return out


def test_kernels_on_disjoint_views_run_at_once_and_a_reader_of_both_waits_for_both():
    x, s, out = torch.randn(64, 64), torch.zeros(64, 64), torch.zeros(32, 64)
    bands_then_across(x, s, out, config=SIM)
    torch.testing.assert_close(s, x.exp())
    torch.testing.assert_close(out, -x[16:48].exp())
    report = bands_then_across.last_report
    assert {(e.src, e.dst) for e in report.edges} == {(1, 3), (2, 3)}
    first, second, _ = sorted(report.tasks, key=lambda t: t.task_id)
    assert second.start_cycle < first.end_cycle  # the two writers overlap in time


@pl.jit
def rewrite_overlapping(x: pl.Tensor[[64, 64], pl.FP32], s: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]):
    exp_block(pl.slice(s, [32, 64], [0, 0]), pl.slice(x, [32, 64], [0, 0]))  # reads s[0:32] into x
    neg_block(pl.slice(x, [32, 64], [32, 0]), pl.slice(s, [32, 64], [16, 0]))  # then overwrites s[16:48]
    neg_block(pl.slice(x, [32, 64], [32, 0]), pl.slice(s, [32, 64], [32, 0]))  # and s[32:64]: after that
    return s


def test_a_writer_waits_for_earlier_readers_and_writers_of_the_region_it_overlaps():
    x, s = torch.randn(64, 64), torch.randn(64, 64)
    s0, x0 = s.clone(), x.clone()
    rewrite_overlapping(x, s, config=SIM)
    torch.testing.assert_close(x[:32], s0[:32].exp())
    want = s0.clone()
    want[16:48] = -x0[32:64]
    want[32:64] = -x0[32:64]
    torch.testing.assert_close(s, want)
    assert {(e.src, e.dst) for e in rewrite_overlapping.last_report.edges} == {(1, 2), (2, 3)}


N, TILE, COLS = 4, 64, 128


@pl.jit
def banded_scopes(a: pl.Tensor[[N * TILE, COLS], pl.FP32], out: pl.Out[pl.Tensor[[N * TILE, COLS], pl.FP32]]):
    for i in pl.range(N):
        part = pl.slice(out, [TILE, COLS], [i * TILE, 0])  # a region of out per iteration
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="band"):
            part[:] = pl.mul(pl.slice(a, [TILE, COLS], [i * TILE, 0]), 2.0)
    return out


def test_scopes_writing_views_of_one_tensor_take_no_edge_from_each_other():
    a, out = torch.randn(N * TILE, COLS), torch.zeros(N * TILE, COLS)
    banded_scopes(a, out, config=SIM)
    torch.testing.assert_close(out, 2 * a)
    report = banded_scopes.last_report
    assert report.edges == [] and len({t.core_group for t in report.tasks}) == N


@pl.jit
def valid_part(
    a: pl.Tensor[[128, 64], pl.FP32], cfg: pl.Tensor[[2], pl.INT32], sums: pl.Out[pl.Tensor[[64, 1], pl.FP32]]
):
    rows = pl.tensor.read(cfg, [0])
    start = pl.tensor.read(cfg, [1])
    v = pl.slice(a, [64, 64], [start, 0], valid_shape=[rows, 64])
    with pl.at(level=pl.Level.CORE_GROUP):
        sums[:] = pl.row_sum(v)  # the scope reads the view's valid rows only
    return sums


def test_a_scope_reads_only_the_valid_part_of_a_view_the_orchestration_made():
    a, sums = torch.randn(128, 64), torch.full((64, 1), -1.0)
    valid_part(a, torch.tensor([20, 40], dtype=torch.int32), sums, config=SIM)
    torch.testing.assert_close(sums[:20], a[40:60].sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    assert bool((sums[20:] == -1).all())


@pl.program
class ViewsProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def double(
        self, x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]
    ) -> pl.Tensor[[R, 64], pl.FP32]:
        for r in pl.range(0, R, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, R - r), 64])
            out = pl.store(pl.mul(t, 2.0), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[128, 64], pl.FP32],
        lens: pl.Tensor[[4], pl.INT32],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
    ) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(4):
            n = pl.tensor.read(lens, [i])  # the rows of block i, known at run time
            tmp = pl.create_tensor([n, 64], dtype=pl.FP32)
            tmp = self.double(pl.slice(x, [n, 64], [i * 32, 0]), tmp)
            dst = pl.slice(out, [n, 64], [i * 32, 0])
            dst = self.double(tmp, dst)
        return out


def test_a_program_of_run_time_views_prints_parses_back_and_runs():
    text = ViewsProgram.as_python()
    assert "pl.tensor.create([n, 64], dtype=pl.FP32)" in text
    again = pl.parse(text)
    assert structural_diff(ViewsProgram, again) is None
    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    lens = torch.tensor([32, 5, 17, 1], dtype=torch.int32)
    compile_program(again, SIM).run(x, lens, out)
    want = torch.zeros(128, 64)
    for i, n in enumerate(lens.tolist()):
        want[i * 32 : i * 32 + n] = 4 * x[i * 32 : i * 32 + n]
    torch.testing.assert_close(out, want)


TORCHREF = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "pypto-backend-torchref" / "src"


class TorchRefPlugin:
    """The torchref example backend, registered from its source tree for this test."""

    @hookimpl
    def pypto_register_backends(self, register):
        sys.path.insert(0, str(TORCHREF))
        try:
            from pypto_backend_torchref import TorchRefBackend
        finally:
            sys.path.remove(str(TORCHREF))
        register(TorchRefBackend())


def test_the_torchref_backend_gives_the_simulators_numbers_for_views(monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE", "off")
    results = {}
    for platform in ("a2a3sim", "torchref"):
        if platform == "torchref":
            reset_registry()
            register_plugin(TorchRefPlugin(), name="torchref-source")
        try:
            x, out = torch.randn(64, 256, generator=torch.Generator().manual_seed(0)), torch.zeros(64, 256)
            blocks_of_run_time_width(x, torch.tensor([96, 3]), out, config=RunConfig(platform=platform))
            results[platform] = out
        finally:
            if platform == "torchref":
                reset_registry()
    torch.testing.assert_close(results["torchref"], results["a2a3sim"], rtol=0, atol=0)
    assert bool(results["torchref"][:48, :96].ne(0).any())


# ---------------------------------------------------------------- bad inputs


@pl.jit
def offset_view(
    x: pl.Tensor[[64, 64], pl.FP32], cfg: pl.Tensor[[2], pl.INT64], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]
):
    rows = pl.tensor.read(cfg, [0])
    start = pl.tensor.read(cfg, [1])
    block = pl.create_tensor([rows, 64], dtype=pl.FP32)
    block = exp_block(pl.slice(x, [rows, 64], [start, 0]), block)
    out = neg_block(block, out)
    return out


def run_offset_view(rows, start):
    x, out = torch.randn(64, 64), torch.zeros(32, 64)
    offset_view(x, torch.tensor([rows, start]), out, config=SIM)
    return x, out


def test_offset_view_runs_when_the_run_time_shapes_fit():
    x, out = run_offset_view(32, 8)
    torch.testing.assert_close(out, -x[8:40].exp())


def test_a_view_that_starts_past_the_end_of_its_tensor_is_an_error_at_the_slice():
    with pytest.raises(OutOfBoundsError) as info:
        run_offset_view(32, 64)
    assert info.value.span.line == line_of("block = exp_block(pl.slice(x, [rows, 64], [start, 0]), block)")
    assert "starts outside the tensor's 64 elements" in info.value.message and info.value.hint


def test_a_view_that_runs_past_the_end_stops_the_kernel_that_reaches_there():
    with pytest.raises(OutOfBoundsError, match="runs past the end of its tensor: 16 of its 32 exist"):
        run_offset_view(32, 48)


def test_a_zero_run_time_extent_is_an_error_at_the_allocation():
    with pytest.raises(ExtentError, match="extent rows of dim 0 is 0 at run time") as info:
        run_offset_view(0, 0)
    assert info.value.span.line == line_of("block = pl.create_tensor([rows, 64], dtype=pl.FP32)")


def test_a_run_time_shape_that_does_not_fit_the_kernel_is_an_error_at_the_call():
    with pytest.raises(
        SpecializationError, match=r"exp_block\(\): argument 'x' is a tensor of shape \[16, 64\]"
    ):
        run_offset_view(16, 0)


def test_a_constant_window_past_the_end_is_a_parse_error_unless_clamped():
    @pl.jit
    def past(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        out = exp_block(pl.slice(x, [32, 64], [48, 0]), out)
        return out

    with pytest.raises(ParseError, match=r"the window \[48:80\] of dim 0 lies outside the tensor's 64"):
        past(torch.randn(64, 64), torch.zeros(32, 64), config=SIM)


def test_run_time_extents_size_tensors_on_the_host_plane_only():
    @pl.jit
    def in_scope(
        x: pl.Tensor[[64, 64], pl.FP32],
        cfg: pl.Tensor[[1], pl.INT64],
        out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    ):
        n = pl.tensor.read(cfg, [0])
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.create_tensor([n, 64], dtype=pl.FP32)
            t[:] = pl.exp(x)
        return out

    with pytest.raises(ParseError, match="holds a run-time value, which only the orchestration") as info:
        in_scope(torch.randn(64, 64), torch.tensor([4]), torch.zeros(64, 64), config=SIM)
    assert "before the `with pl.at(...)` block" in info.value.hint


def test_a_float_extent_is_a_parse_error():
    @pl.jit
    def floats(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        half = pl.tensor.read(x, [0, 0])
        tmp = pl.create_tensor([half, 64], dtype=pl.FP32)
        out = exp_block(tmp, out)
        return out

    with pytest.raises(ParseError, match=r"shape must hold ints or integer scalars, got Scalar\[FP32\]"):
        floats(torch.randn(64, 64), torch.zeros(32, 64), config=SIM)


@pl.jit.incore
def pick_rows(
    x: pl.Tensor[[64, 64], pl.FP32],
    idx: pl.Tensor[[8], pl.INT32],
    n: pl.Scalar[pl.INDEX],
    out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
):
    for i in pl.range(n):
        pl.store(pl.load(x, [pl.read(idx, i), 0], [1, 64]), [i, 0], out)
    return out


@pl.jit
def rows_from_table(
    x: pl.Tensor[[64, 64], pl.FP32],
    table: pl.Tensor[[12], pl.INT32],
    cfg: pl.Tensor[[2], pl.INDEX],
    out: pl.Out[pl.Tensor[[8, 64], pl.FP32]],
):
    start = pl.tensor.read(cfg, [0])
    n = pl.tensor.read(cfg, [1])
    out = pick_rows(x, pl.slice(table, [8], [start]), n, out)  # may run past the table's end
    return out


def test_a_view_past_the_end_serves_a_kernel_that_reads_only_the_part_inside():
    x, table, out = torch.randn(64, 64), torch.randint(0, 64, (12,), dtype=torch.int32), torch.zeros(8, 64)
    rows_from_table(x, table, torch.tensor([8, 4]), out, config=SIM)  # entries 8..11: all there are
    torch.testing.assert_close(out[:4], x[table[8:12].long()])
    with pytest.raises(OutOfBoundsError, match="runs past the end of its tensor: 4 of its 8 exist"):
        rows_from_table(x, table, torch.tensor([8, 5]), out, config=SIM)


@pl.program
class OpaqueEntry:
    @pl.function(type=pl.FunctionType.InCore)
    def double(
        self, x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]
    ) -> pl.Tensor[[R, 64], pl.FP32]:
        for r in pl.range(0, R, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, R - r), 64])
            out = pl.store(pl.mul(t, 2.0), [r, 0], out)
        return out

    @pl.function  # of no plane until used: the entry, so an orchestration
    def main(
        self,
        x: pl.Tensor[[128, 64], pl.FP32],
        lens: pl.Tensor[[1], pl.INDEX],
        out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
    ) -> pl.Tensor[[128, 64], pl.FP32]:
        n = pl.tensor.read(lens, [0])
        top = pl.slice(x, [64, 64], [0, 0])
        rows = pl.slice(top, [n, 64], [8, 0])  # a view of a view
        dst = pl.slice(out, [n, 64], [8, 0])
        dst = self.double(rows, dst)
        return out


@pl.jit.incore
def double_rows(x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]):
    for r in pl.range(0, R, 16):
        t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, R - r), 64])
        pl.store(pl.mul(t, 2.0), [r, 0], out)
    return out


@pl.jit.opaque
def double_first(
    x: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]
):
    dst = pl.slice(out, [n, 64], [0, 0])
    dst = double_rows(pl.slice(x, [n, 64], [0, 0]), dst)
    return out


@pl.jit
def through_opaque(
    x: pl.Tensor[[128, 64], pl.FP32],
    lens: pl.Tensor[[1], pl.INDEX],
    out: pl.Out[pl.Tensor[[128, 64], pl.FP32]],
):
    out = double_first(x, pl.tensor.read(lens, [0]), out)
    return out


def test_views_of_run_time_extents_in_control_functions_of_no_plane_yet():
    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    compile_program(OpaqueEntry, SIM).run(x, torch.tensor([20]), out)
    want = torch.zeros(128, 64)
    want[8:28] = 2 * x[8:28]
    torch.testing.assert_close(out, want)
    out = torch.zeros(128, 64)
    through_opaque(x, torch.tensor([33]), out, config=SIM)
    want = torch.zeros(128, 64)
    want[:33] = 2 * x[:33]
    torch.testing.assert_close(out, want)


def test_a_run_time_valid_shape_outside_the_window_is_an_error_at_the_slice():
    cfg = torch.tensor([80, 0], dtype=torch.int32)  # 80 valid rows of a 64-row view
    with pytest.raises(
        OutOfBoundsError, match=r"valid_shape \[80, 64\] leaves the view's window \[64, 64\]"
    ) as info:
        valid_part(torch.randn(128, 64), cfg, torch.zeros(64, 1), config=SIM)
    assert info.value.span.line == line_of("v = pl.slice(a, [64, 64], [start, 0], valid_shape=[rows, 64])")
