"""Dynamic dimensions (issue #12 item 1): ``M = pl.dynamic("M")`` makes an extent a run-time value.

A dynamic-shape kernel compiles once and runs for several extents; the printed form declares the
extent and reads back equal; tensors that share an extent must agree on it at call time.
"""

import pytest
import torch

import pypto.language as pl
from pypto.ir import PyptoError, SpecializationError, structural_diff
from pypto.runtime import RunConfig, compile_program


def sim() -> RunConfig:
    """The simulator, at the verification level the test runs with (read when it is made)."""
    return RunConfig(platform="a2a3sim")


M = pl.dynamic("M")
N = pl.dynamic("N")
EXTENTS = (128, 100, 7)  # one multiple of the 32-row block, two not


@pl.program
class Doubled:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        m = pl.tensor.dim(x, 0)
        for r in pl.range(0, m, 32):
            rows = pl.min(32, m - r)
            t = pl.load(x, [r, 0], [32, 64], valid_shape=[rows, pl.tensor.dim(x, 1)])
            out = pl.store(pl.add(t, t), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        out = self.double(x, out)
        return out


def test_program_with_dim_and_valid_shapes_runs_at_three_extents_from_one_compile():
    compiled = compile_program(Doubled, sim())
    for m in EXTENTS:
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        compiled.run(x, out, config=sim())
        assert torch.allclose(out, 2 * x), m


def test_printed_form_declares_the_extent_and_reads_back_equal():
    text = Doubled.as_python()
    assert text.startswith('M = pl.dynamic("M")\n')
    assert "x: pl.Tensor[[M, 64], pl.FP32]" in text
    assert "pl.range(0, M, 32)" in text  # pl.tensor.dim of a dynamic axis is the extent itself
    assert structural_diff(Doubled, pl.parse(text)) is None


@pl.jit
def scaled(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows, _ = x.shape
        for r in pl.range(0, rows, 32):
            t = pl.load(x, [r, 0], [32, 64], valid_shape=[pl.min(32, rows - r), 64])
            pl.store(pl.mul(t, 3.0), [r, 0], out)
    return out


def test_jit_kernel_compiles_once_for_three_extents():
    scaled.cache_clear()
    for m in EXTENTS:
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        scaled(x, out, config=sim())
        assert torch.allclose(out, 3 * x), m
    assert scaled.cache_info().misses == 1


def test_tensors_sharing_an_extent_must_agree_on_it():
    with pytest.raises(SpecializationError) as err:
        scaled(torch.randn(64, 64), torch.zeros(32, 64), config=sim())
    message = str(err.value)
    assert "M is 64 in 'x' (dim 0) but 32 in 'out' (dim 0)" in message
    assert "def scaled(" in message  # the span is the parameter in the user's def


def test_compiled_program_checks_the_extents_at_run_time():
    compiled = compile_program(Doubled, sim())
    with pytest.raises(SpecializationError, match=r"M is 16 in 'x' \(dim 0\) but 8 in 'out'"):
        compiled.run(torch.randn(16, 64), torch.zeros(8, 64), config=sim())


def test_static_extents_of_a_dynamic_tensor_are_still_checked():
    with pytest.raises(SpecializationError, match="shape"):
        scaled(torch.randn(64, 32), torch.zeros(64, 32), config=sim())


@pl.jit
def two_extents(
    x: pl.Tensor[[M, 64], pl.FP32],
    y: pl.Tensor[[N, 64], pl.FP32],
    out_x: pl.Out[pl.Tensor[[M, 64], pl.FP32]],
    out_y: pl.Out[pl.Tensor[[N, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, M, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, M - r), 64])
            pl.store(pl.add(t, t), [r, 0], out_x)
        for r in pl.range(0, N, 16):
            t = pl.load(y, [r, 0], [16, 64], valid_shape=[pl.min(16, N - r), 64])
            pl.store(pl.add(t, 1.0), [r, 0], out_y)
    return out_x, out_y


def test_a_different_dynamic_object_is_a_different_extent():
    x, y = torch.randn(20, 64), torch.randn(5, 64)
    out_x, out_y = torch.zeros(20, 64), torch.zeros(5, 64)
    two_extents(x, y, out_x, out_y, config=sim())
    assert torch.allclose(out_x, 2 * x)
    assert torch.allclose(out_y, y + 1)


def test_two_objects_of_one_name_are_two_independent_extents():
    other_m = pl.dynamic("M")  # the manual: two pl.dynamic("M") calls are two dimensions

    @pl.jit
    def copies(
        x: pl.Tensor[[M, 64], pl.FP32],
        y: pl.Tensor[[other_m, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[M, 64], pl.FP32]],
        out_y: pl.Out[pl.Tensor[[other_m, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        with pl.at(level=pl.Level.CORE_GROUP):
            out_y[:] = pl.neg(y)
        return out, out_y

    x, y = torch.randn(24, 64), torch.randn(9, 64)
    out, out_y = torch.zeros(24, 64), torch.zeros(9, 64)
    copies(x, y, out, out_y, config=sim())
    assert torch.allclose(out, x.exp(), atol=1e-5)
    assert torch.allclose(out_y, -y)
    text = copies.parse(x, y, out, out_y).as_python()
    assert text.startswith('M = pl.dynamic("M")\nM_2 = pl.dynamic("M")\n')
    assert "y: pl.Tensor[[M_2, 64], pl.FP32]" in text
    assert structural_diff(copies.parse(x, y, out, out_y), pl.parse(text)) is None


def test_tensors_of_two_objects_of_one_name_are_not_one_shape():
    other_m = pl.dynamic("M")

    @pl.jit
    def summed(
        x: pl.Tensor[[M, 64], pl.FP32],
        y: pl.Tensor[[other_m, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[M, 64], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(x, y)
        return out

    with pytest.raises(PyptoError, match=r"two different pl\.dynamic extents of one name") as err:
        summed(torch.randn(8, 64), torch.randn(8, 64), torch.zeros(8, 64), config=sim())
    assert "pl.add(x, y)" in str(err.value)


def test_an_out_of_bounds_region_of_a_dynamic_tensor_is_an_error_at_run_time():
    @pl.jit
    def overrun(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for r in pl.range(0, M, 32):
                pl.store(pl.load(x, [r, 0], [32, 64]), [r, 0], out)  # no valid shape on the tail
        return out

    overrun(torch.randn(64, 64), torch.zeros(64, 64), config=sim())  # a whole number of blocks
    with pytest.raises(PyptoError) as err:
        overrun(torch.randn(40, 64), torch.zeros(40, 64), config=sim())
    assert "pl.load(x, [r, 0], [32, 64])" in str(err.value)


def test_a_tile_shape_cannot_be_dynamic():
    with pytest.raises(PyptoError, match="a tile's shape is static"):
        pl.Tile[[M, 64], pl.FP32]


# ------------------------------------------------------------ tensor ops tiled over a dynamic extent


@pl.jit
def softmax_rows(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


def test_tensor_ops_in_a_scope_are_tiled_over_a_dynamic_row_count():
    softmax_rows.cache_clear()
    for m in (256, 200, 7):  # the block is 128 rows: two multiples, one partial block each
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        softmax_rows(x, out, config=sim())
        assert torch.allclose(out, torch.softmax(x, 1), atol=1e-5), m
    assert softmax_rows.cache_info().misses == 1


def test_the_tiled_loop_runs_to_the_run_time_extent_with_a_partial_last_block():
    text = softmax_rows.lower(torch.randn(200, 64), torch.zeros(200, 64), config=sim()).as_python()
    assert "pl.pipeline(0, M, " in text
    assert "pl.minimum(" in text and "M - r" in text
    assert "pl.tile.load_partial(x, [r, 0], [rows, 64]" in text
    assert "pl.tile.store_partial(" in text


@pl.jit
def column_sums(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.col_sum(x)
    return out


def test_a_column_reduction_over_a_dynamic_row_count_ignores_the_rows_past_the_end():
    for m in (128, 100, 7):
        x, out = torch.randn(m, 64), torch.zeros(1, 64)
        column_sums(x, out, config=sim())
        assert torch.allclose(out, x.sum(0, keepdim=True), atol=1e-4), m


@pl.jit
def projected(
    a: pl.Tensor[[M, 1024], pl.FP16],
    w: pl.Tensor[[1024, 256], pl.FP16],
    out: pl.Out[pl.Tensor[[M, 256], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.matmul(a, w)
    return out


def test_a_k_blocked_matmul_with_dynamic_rows():
    projected.cache_clear()
    for m in (128, 100, 7):
        a, w, out = torch.randn(m, 1024).half(), torch.randn(1024, 256).half(), torch.zeros(m, 256)
        projected(a, w, out, config=sim())
        assert torch.allclose(out, a.float() @ w.float(), atol=5e-2), m
    assert projected.cache_info().misses == 1


@pl.jit
def staged(x: pl.Tensor[[M, 128], pl.FP32], out: pl.Out[pl.Tensor[[M, 128], pl.FP32]]):
    rows, cols = x.shape
    tmp = pl.create_tensor([rows, cols], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        tmp[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(tmp, x)
    return out


def test_create_tensor_takes_a_dynamic_extent():
    for m in (128, 100, 7):
        x, out = torch.randn(m, 128), torch.zeros(m, 128)
        staged(x, out, config=sim())
        assert torch.allclose(out, torch.exp(x) + x, atol=1e-5), m


def test_a_dynamic_column_extent_cannot_be_tiled():
    @pl.jit
    def wide(x: pl.Tensor[[64, N], pl.FP32], out: pl.Out[pl.Tensor[[64, N], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out

    with pytest.raises(PyptoError, match="dynamic extent N in dim 1 cannot be tiled") as err:
        wide(torch.randn(64, 32), torch.zeros(64, 32), config=sim())
    assert "out[:] = pl.exp(x)" in str(err.value) or "pl.exp(x)" in str(err.value)


@pl.jit
def biased(
    a: pl.Tensor[[M, 128], pl.FP16],
    w: pl.Tensor[[128, 128], pl.FP16],
    bias: pl.Tensor[[M, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[M, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        out[:] = pl.add(pl.matmul(a, w), bias)
    return out


def test_a_split_mixed_scope_over_a_dynamic_row_count():
    """Each AIV lane loads and stores its half of the block's real rows (none, past the end)."""
    biased.cache_clear()
    for m in (128, 100, 7):
        a, w = torch.randn(m, 128).half(), torch.randn(128, 128).half()
        bias, out = torch.randn(m, 128), torch.zeros(m, 128)
        biased(a, w, bias, out, config=sim())
        assert torch.allclose(out, a.float() @ w.float() + bias, atol=5e-2), m
    assert biased.cache_info().misses == 1


@pl.jit.incore
def plus_one(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    for r in pl.range(0, M, 16):
        t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, M - r), 64])
        pl.store(pl.add(t, 1.0), [r, 0], out)
    return out


@pl.jit
def calls_incore(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    out = plus_one(x, out)
    return out


def test_an_incore_kernel_binds_the_extent_from_its_call():
    for m in (64, 50, 3):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        calls_incore(x, out, config=sim())
        assert torch.allclose(out, x + 1), m


@pl.program
class InClassBody:
    R = pl.dynamic("R")  # a class-body extent

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]):
        for r in pl.range(0, R, 16):  # noqa: F821 (the parser reads class-body names; Python does not)
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, R - r), 64])  # noqa: F821
            out = pl.store(pl.exp(t), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, 64], pl.FP32], out: pl.Out[pl.Tensor[[R, 64], pl.FP32]]):
        out = self.k(x, out)
        return out


def test_a_class_body_extent():
    compiled = compile_program(InClassBody, sim())
    for m in (32, 20):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        compiled.run(x, out, config=sim())
        assert torch.allclose(out, x.exp()), m
    assert structural_diff(InClassBody, pl.parse(InClassBody.as_python())) is None


@pl.jit
def counted(
    x: pl.Tensor[[M, 64], pl.FP32], y: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP):  # touches no tensor of extent M, but loops over it
        acc = pl.load(y, [0, 0], [16, 64])
        for _ in pl.range(0, M, 16):
            acc = pl.add(acc, acc)
        pl.store(acc, [0, 0], out)
    return out


def test_a_scope_that_names_an_extent_of_no_tensor_it_touches():
    for m, doublings in ((32, 2), (40, 3)):
        y, out = torch.randn(16, 64), torch.zeros(16, 64)
        counted(torch.randn(m, 64), y, out, config=sim())
        assert torch.allclose(out, y * 2**doublings), m


def test_an_extent_no_parameter_has_is_an_error():
    @pl.jit
    def unbound(y: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for _r in pl.range(0, N, 16):
                pl.store(pl.load(y, [0, 0], [16, 64]), [0, 0], out)
        return out

    with pytest.raises(PyptoError, match="dynamic extent N, but no tensor of unbound has it"):
        unbound(torch.randn(16, 64), torch.zeros(16, 64), config=sim())


@pl.jit
def column_blocks(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for j in pl.range(0, 64, 32):
            out[:, j : j + 32] = pl.add(x[:, j : j + 32], x[:, j : j + 32])
    return out


def test_a_whole_dynamic_dim_in_a_subscript_keeps_its_extent():
    """``x[:, j:j + 32]`` with a dynamic first dim: ``:`` is the whole (run-time) extent."""
    for m in (128, 100):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        column_blocks(x, out, config=sim())
        assert torch.allclose(out, 2 * x), m
