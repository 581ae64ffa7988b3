"""The overlap the seed promises, at model scale: the seed kernel at M=4096 (K=256, N=128).

Every figure is a modeled one, and every assertion is a ratio or an invariant, never a time.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl

M, K, N = 4096, 256, 128
EXAMPLE = Path(__file__).parents[1] / "examples" / "advanced" / "03_mixed_kernel.py"


def _example():
    spec = importlib.util.spec_from_file_location("mixed_kernel_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = _example()


@pytest.fixture(scope="module")
def seed_inputs():
    torch.manual_seed(0)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    bias = torch.randn(M, N, dtype=torch.float32)
    return a, b, bias


def run(kernel, a, b, bias):
    out = torch.zeros(M, N)
    kernel(a, b, bias, out)
    return kernel.last_report, out


@pytest.fixture(scope="module")
def seed_reports(seed_inputs):
    a, b, bias = seed_inputs
    expected = a.float() @ b.float() + bias
    reports = {}
    kernels = {
        "up_down": example.mixed_kernel(pl.SplitMode.UP_DOWN),
        "left_right": example.mixed_kernel(pl.SplitMode.LEFT_RIGHT),
        "staged": example.staged_matmul_bias,
    }
    for name, kernel in kernels.items():
        reports[name], out = run(kernel, a, b, bias)
        torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-2)
    return reports


@pytest.mark.parametrize("mode", ["up_down", "left_right"])
def test_mixed_beats_staged_at_model_scale(seed_reports, mode):
    assert seed_reports[mode].total_cycles < 0.7 * seed_reports["staged"].total_cycles


@pytest.mark.parametrize("mode", ["up_down", "left_right"])
def test_mixed_overlaps_cube_and_vector_and_staged_does_not(seed_reports, mode):
    assert seed_reports[mode].overlap > 0.3
    assert seed_reports["staged"].overlap < 0.01


def test_the_seed_kernel_is_cube_bound_and_its_roofline_says_how_far_from_peak(seed_reports):
    report = seed_reports["up_down"]
    assert report.dominant_side() == "cube"
    (line,) = report.roofline()
    assert line.ratio >= 1
    staged = {line.kernel: line for line in seed_reports["staged"].roofline()}
    assert set(staged) == {"cube_only", "vector_only"}


# A balanced mixed kernel: the lanes hold the popped tile until their last op, so a one-slot ring
# keeps the cube from pushing the next tile while the lanes still work on the last one.
def held_tile_kernel(slot_num: int):
    @pl.jit
    def held(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=slot_num)],
            name_hint="held",
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.mul(acc, pl.mul(pl.abs(acc), pl.relu(acc)))  # as long as the matmuls
        return out

    return held


def test_one_slot_is_slower_than_two_when_cube_and_vector_are_balanced(seed_inputs):
    a, b, bias = seed_inputs
    acc = a.float() @ b.float()
    one, out = run(held_tile_kernel(1), a, b, bias)
    torch.testing.assert_close(out, acc * (acc.abs() * acc.relu()), rtol=1e-2, atol=1e-2)
    two, _ = run(held_tile_kernel(2), a, b, bias)
    assert two.dominant_side() is None  # balanced: neither unit computes 1.2x longer
    assert two.total_cycles < one.total_cycles
    (ring, *_) = one.rings
    assert ring.full_cycles(one.total_cycles) > 0.5 * one.total_cycles


# A vector-dominated mixed kernel: a long chain of transcendental ops after the matmul.
@pl.jit
def vector_heavy_mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="heavy"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        y = pl.add(acc, bias)
        t = pl.exp(pl.neg(pl.abs(y)))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        t = pl.exp(pl.neg(t))
        out[:] = pl.mul(t, y)
    return out


def vector_heavy_staged(mode: pl.SplitMode):
    """The two-scope form; its vector scope is split by ``mode`` (NONE: it runs on lane 0 alone)."""

    @pl.jit
    def staged(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_only"):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(mode)], name_hint="vector_only"):
            y = pl.add(acc, bias)
            t = pl.exp(pl.neg(pl.abs(y)))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            t = pl.exp(pl.neg(t))
            out[:] = pl.mul(t, y)
        return out

    return staged


@pytest.fixture(scope="module")
def vector_heavy_reports(seed_inputs):
    a, b, bias = seed_inputs
    mixed, mixed_out = run(vector_heavy_mixed, a, b, bias)
    fair, fair_out = run(vector_heavy_staged(pl.SplitMode.UP_DOWN), a, b, bias)
    lane0, _ = run(vector_heavy_staged(pl.SplitMode.NONE), a, b, bias)
    torch.testing.assert_close(mixed_out, fair_out)
    return mixed, fair, lane0


def test_a_vector_dominated_mixed_kernel_gains_little_over_a_fair_staged_baseline(vector_heavy_reports):
    mixed, fair, _ = vector_heavy_reports
    assert 1 < fair.total_cycles / mixed.total_cycles < 1.3


def test_the_report_names_the_vector_side_as_the_bottleneck(vector_heavy_reports):
    mixed, _, _ = vector_heavy_reports
    assert mixed.dominant_side() == "vector"
    assert "the vector side dominates" in mixed.summary()
    (line,) = mixed.roofline()
    assert line.bound == "vector"


def test_a_staged_baseline_on_one_lane_would_credit_overlap_with_the_second_lane(vector_heavy_reports):
    mixed, fair, lane0 = vector_heavy_reports
    assert lane0.total_cycles / mixed.total_cycles > 1.5 * (fair.total_cycles / mixed.total_cycles)


def test_the_example_prints_modeled_cycles_and_overlap_with_profile_and_ends_with_ok(tmp_path):
    command = [sys.executable, str(EXAMPLE), "--m", str(M), "--profile", str(tmp_path)]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[-1] == "OK"
    assert lines[0].startswith(f"mixed, M={M}: ") and "modeled cycles" in lines[0] and "overlap" in lines[0]
    assert (tmp_path / "swimlane.png").is_file()
