"""The hand-written cross-core API with PyPTO's signatures (issue #35 item 2), on a2a3sim against
torch: the ring buffers of a pipe setup passed positionally (a buffer handle, 0, or an address),
``split`` as a ``pl.SplitMode`` or its integer code, a pop typed by the annotation of the name it
is assigned to, and an AIV function marked ``split`` written at full size (the compiler halves it
across the two lanes). A Group may return what its AIC kernel returns."""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, PipeSetupError, TypeCheckError
from pypto.ir.targets import get_target
from pypto.passes import lower
from pypto.runtime import run

A2A3 = get_target("a2a3")
M, K, N = 128, 64, 128
SLOT = M * N * 4
A, B, C = pl.Tensor[[M, K], pl.FP16], pl.Tensor[[K, N], pl.FP16], pl.Tensor[[M, N], pl.FP32]


def operands(seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(M, K, generator=g).half()
    b = torch.randn(K, N, generator=g).half()
    return a, b, torch.randn(M, N, generator=g), torch.zeros(M, N)


def expected(a, b, bias):
    return a.float() @ b.float() + bias


with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # attrs= on @pl.function: PyPTO's old spelling

    @pl.program
    class FullSize:
        """The AIV function is written for the whole [M, N] tile; split=1 halves it by rows."""

        @pl.function(type=pl.FunctionType.AIC, attrs={"split": pl.SplitMode.UP_DOWN})
        def cube(self, a: A, b: B, bias: C, out: pl.Out[C]) -> C:
            pl.aic_initialize_pipe(0, 0, dir_mask=1, slot_size=SLOT, slot_num=2)
            a_l = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            b_r = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            pl.tpush_to_aiv(pl.matmul(a_l, b_r), split=1)
            return out

        @pl.function(type=pl.FunctionType.AIV, attrs={"split": pl.SplitMode.UP_DOWN})
        def vector(self, a: A, b: B, bias: C, out: pl.Out[C]) -> C:
            pl.aiv_initialize_pipe(0, 0, dir_mask=1, slot_size=SLOT, slot_num=2)
            t: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=1)  # typed by the annotation
            result = pl.store(pl.add(t, pl.load(bias, [0, 0], [M, N])), [0, 0], out)  # offset [0, 0]
            pl.tfree_to_aic(t)
            return result

        @pl.function(type=pl.FunctionType.Group)
        def group(self, a: A, b: B, bias: C, out: pl.Out[C]) -> C:
            r = self.cube(a, b, bias, out)
            self.vector(a, b, bias, out)
            return r

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: A, b: B, bias: C, out: pl.Out[C]) -> C:
            out = self.group(a, b, bias, out)
            return out


def test_an_aiv_function_marked_split_is_written_at_full_size_and_halved_per_lane():
    a, b, bias, out = operands()
    run(FullSize, a, b, bias, out)
    torch.testing.assert_close(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)


def test_the_halved_aiv_function_pops_and_stores_each_lanes_rows():
    text = str(lower(FullSize, A2A3))
    aiv = text.split("def vector(")[1].split("@pl.function")[0]
    assert "pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(" in aiv
    assert "[lane * 64, 0]" in aiv


@pl.program
class Buffers:
    """Ring buffers passed positionally: the consumer reserves, the producer imports; the pops
    name their type by annotation, the splits by integer code."""

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: A, b: B, bias: C, out: pl.Out[C]):
        peer = pl.import_peer_buffer(name="c2v", peer_func="vector")
        pl.aic_initialize_pipe(peer, 0, dir_mask=1, slot_size=SLOT // 2)
        a_l = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.tpush_to_aiv(pl.matmul(a_l, b_r), split=2)  # LEFT_RIGHT: each lane takes 64 columns

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, a: A, b: B, bias: C, out: pl.Out[C]):
        ring = pl.reserve_buffer(name="c2v", size=2 * (SLOT // 2))
        pl.aiv_initialize_pipe(ring, 0, dir_mask=1, slot_size=SLOT // 2)
        lane = pl.get_subblock_idx()
        half: pl.Tile[[M, N // 2], pl.FP32] = pl.tpop_from_aic(split=2)
        col = lane * (N // 2)
        pl.store(pl.add(half, pl.load(bias, [0, col], [M, N // 2])), [0, col], out)
        pl.tfree_to_aic(half, split=2)

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: A, b: B, bias: C, out: pl.Out[C]):
        self.cube(a, b, bias, out)
        self.vector(a, b, bias, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: A, b: B, bias: C, out: pl.Out[C]):
        self.group(a, b, bias, out)
        return out


def test_positional_ring_buffers_integer_splits_and_annotated_pops():
    a, b, bias, out = operands(1)
    run(Buffers, a, b, bias, out)
    torch.testing.assert_close(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)


@pl.program
class DefaultDepth:
    """A setup with no slot_num and no buffer: the consumer holds the target's default depth."""

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT // 2)
        a_l = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_r = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        pl.tpush_to_aiv(pl.matmul(a_l, b_r), split=pl.SplitMode.UP_DOWN)

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT // 2)
        row = pl.get_subblock_idx() * (M // 2)
        half: pl.Tile[[M // 2, N], pl.FP32] = pl.tpop_from_aic(split=1)
        pl.store(pl.add(half, pl.load(bias, [row, 0], [M // 2, N])), [row, 0], out)
        pl.tfree_to_aic(half)

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: A, b: B, bias: C, out: pl.Out[C]):
        self.cube(a, b, bias, out)
        self.vector(a, b, bias, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: A, b: B, bias: C, out: pl.Out[C]):
        self.group(a, b, bias, out)
        return out


def test_a_setup_without_slot_num_takes_the_targets_default_depth():
    a, b, bias, out = operands(2)
    run(DefaultDepth, a, b, bias, out)
    torch.testing.assert_close(out, expected(a, b, bias), rtol=1e-2, atol=1e-2)
    vector = lower(DefaultDepth, A2A3).function("vector")
    (ring,) = vector.attrs["reservations"]
    assert ring.size == 2 * (SLOT // 2)  # a2a3's default depth of 2 slots


# ---------------------------------------------------------------- bad input, at the user's line


def _parse_error(source_fn):
    with pytest.raises((ParseError, TypeCheckError, PipeSetupError)) as info:
        source_fn()
    return info.value


def test_a_pop_with_neither_shape_nor_an_annotation_says_how_to_type_it():
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, out: pl.Out[C]):
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, slot_num=2)
                t = pl.tpop_from_aic(split=1)
                pl.store(t, [0, 0], out)

    err = _parse_error(build)
    assert "needs shape= and dtype= of the tile it pops" in err.message
    assert "t: pl.Tile[[64, 128], pl.FP32] = pl.tpop_from_aic(split=...)" in err.hint


def test_an_unknown_split_code_is_an_error():
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, out: pl.Out[C]):
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, slot_num=2)
                t: pl.Tile[[M, N], pl.FP32] = pl.tpop_from_aic(split=7)
                pl.store(t, [0, 0], out)

    err = _parse_error(build)
    assert "split= takes a pl.SplitMode or the codes 0-4, got 7" in err.message


def test_a_ring_buffer_that_is_neither_a_handle_nor_an_address_is_an_error():
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, out: pl.Out[C]):
                pl.aiv_initialize_pipe(1.5, 0, dir_mask=1, slot_size=SLOT, slot_num=2)

    err = _parse_error(build)
    assert (
        "c2v_consumer_buf takes a pl.reserve_buffer / pl.import_peer_buffer result, 0, or a byte"
        in err.message
    )


def test_local_slot_num_above_slot_num_is_an_error():
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def vector(self, out: pl.Out[C]):
                pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, slot_num=2, local_slot_num=4)

    err = _parse_error(build)
    assert "local_slot_num=4 exceeds slot_num=2" in err.message
