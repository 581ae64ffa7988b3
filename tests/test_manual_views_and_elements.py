"""Element access and views of PyPTO's manual end to end on a2a3sim, against torch: ``pl.dim``,
``pl.write``, ``pl.array.get_element`` / ``update_element``, ``pl.reinterpret_view`` (tensors and
tiles), ``pl.fillpad_expand`` and ``pl.create_l1`` with ``pl.gather_row`` into L1; and the errors
bad uses get at the user's line."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import RunConfig
from pypto_sim_a2a3 import OutOfBoundsError

SIM = RunConfig(platform="a2a3sim")
N = pl.dynamic("N")


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- pl.dim, pl.write


@pl.jit
def mark_columns(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[N, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, pl.dim(x, 0), 16):
            pl.store(pl.mul(pl.load(x, [r, 0], [16, 64]), 2.0), [r, 0], out)
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(pl.dim(out, -2)):
            pl.write(out, [i, 5], pl.read(x, [i, 5]) - 1.0)
    return out


@pytest.mark.parametrize("rows", [32, 48])
def test_pl_dim_bounds_a_loop_and_pl_write_overwrites_one_element_per_row(rows):
    x, out = rand(rows, 64, seed=rows), torch.zeros(rows, 64)
    mark_columns(x, out, config=SIM)
    want = x * 2
    want[:, 5] = x[:, 5] - 1
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def test_pl_write_into_a_tile_by_offsets_and_by_flat_index_and_pl_tensor_write():
    @pl.jit
    def k(x: pl.Tensor[[4, 32], pl.INT32], out: pl.Out[pl.Tensor[[4, 32], pl.INT32]], n: pl.Scalar[pl.INT32]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [4, 32])
            t = pl.write(t, [1, 2], n)
            pl.write(t, 32 * 3 + 31, -1)
            pl.store(t, [0, 0], out)
            pl.tensor.write(out, [0, 0], 7)
        return out

    x = torch.arange(128, dtype=torch.int32).reshape(4, 32)
    out = torch.zeros(4, 32, dtype=torch.int32)
    k(x, out, 99, config=SIM)
    want = x.clone()
    want[1, 2], want[3, 31], want[0, 0] = 99, -1, 7
    assert torch.equal(out, want)


def test_a_write_outside_the_tensor_stops_the_run_at_the_line():
    @pl.jit
    def k(out: pl.Out[pl.Tensor[[4, 32], pl.FP32]], i: pl.Scalar[pl.INDEX]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(out, [i, 0], 1.0)
        return out

    with pytest.raises(OutOfBoundsError) as info:
        k(torch.zeros(4, 32), 4, config=SIM)
    assert "pl.write: region [4:5] is outside dim 0 of size 4" in info.value.message
    assert "pl.write(out, [i, 0], 1.0)" in str(info.value)


def test_a_write_of_a_tile_or_a_float_into_integers_is_a_type_error_at_the_line():
    @pl.jit
    def tile_value(x: pl.Tensor[[4, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(out, [0, 0], pl.load(x, [0, 0], [4, 32]))
        return out

    with pytest.raises(ParseError, match="the written value must be a scalar, got Tile"):
        tile_value(torch.zeros(4, 32), torch.zeros(4, 32), config=SIM)

    @pl.jit
    def float_into_int(out: pl.Out[pl.Tensor[[4, 32], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.write(out, [0, 0], 2.5)
        return out

    with pytest.raises(TypeCheckError) as info:
        float_into_int(torch.zeros(4, 32, dtype=torch.int32), config=SIM)
    assert "pl.write: the written value is a FP32 scalar 2.5" in info.value.message
    assert "pl.write(out, [0, 0], 2.5)" in str(info.value)


def test_array_get_element_and_update_element_are_the_subscript_forms():
    @pl.jit
    def k(x: pl.Tensor[[4, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            order = pl.array.create(4, pl.INDEX)
            for i in pl.range(4):
                order = pl.array.update_element(order, i, 3 - i)
            for i in pl.range(4):
                pl.store(pl.load(x, [pl.array.get_element(order, i), 0], [1, 32]), [i, 0], out)
        return out

    x, out = rand(4, 32, seed=4), torch.zeros(4, 32)
    k(x, out, config=SIM)
    assert torch.equal(out, x.flip(0))


# ---------------------------------------------------------------- pl.reinterpret_view


def test_a_tensor_view_of_a_tall_tensor_runs_in_row_blocks_and_keeps_the_bytes():
    @pl.jit
    def bits(x: pl.Tensor[[1024, 128], pl.FP32], out: pl.Out[pl.Tensor[[1024, 256], pl.INT16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.reinterpret_view(pl.mul(x, 3.0), pl.INT16)
        return out

    x, out = rand(1024, 128, seed=5), torch.zeros(1024, 256, dtype=torch.int16)
    bits(x, out, config=SIM)
    assert torch.equal(out, (x * 3).view(torch.int16))


def test_a_tile_view_with_an_explicit_shape_and_a_view_that_moves_rows():
    @pl.jit
    def k(
        x: pl.Tensor[[16, 64], pl.INT32],
        halves: pl.Out[pl.Tensor[[32, 64], pl.INT16]],
        flat: pl.Out[pl.Tensor[[8, 512], pl.UINT8]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64])
            pl.store(pl.reinterpret_view(t, pl.INT16, shape=[32, 64]), [0, 0], halves)
            flat[:] = pl.reinterpret_view(x, pl.UINT8, shape=[8, 512])
        return halves, flat

    x = torch.randint(-(2**31), 2**31 - 1, (16, 64), dtype=torch.int32)
    halves, flat = torch.zeros(32, 64, dtype=torch.int16), torch.zeros(8, 512, dtype=torch.uint8)
    k(x, halves, flat, config=SIM)
    assert torch.equal(halves, x.view(torch.int16).reshape(32, 64))
    assert torch.equal(flat, x.view(torch.uint8).reshape(8, 512))


def test_a_view_called_with_the_manuals_parameter_names():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.INT16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64])
            pl.store(pl.reinterpret_view(data=t, dtype=pl.INT16, shape=[64, 32]), [0, 0], out)
        return out

    x, out = rand(16, 64, seed=7), torch.zeros(64, 32, dtype=torch.int16)
    k(x, out, config=SIM)
    assert torch.equal(out, x.view(torch.int16).reshape(64, 32))


def test_a_views_shape_is_given_by_keyword_only():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.INT16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.reinterpret_view(x, pl.INT16, [64, 32])
        return out

    with pytest.raises(ParseError) as info:
        k.parse()
    assert "too many positional arguments" in info.value.message
    assert "pl.reinterpret_view(data, dtype, *, shape=None)" in str(info.value)


def test_a_view_of_a_partial_tile_scales_its_run_time_valid_columns():
    @pl.jit
    def k(
        x: pl.Tensor[[16, 64], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 128], pl.INT16]],
        cols: pl.Scalar[pl.INDEX],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64], valid_shape=[16, cols])
            pl.store(pl.reinterpret_view(t, pl.INT16), [0, 0], out)
        return out

    x, out = rand(16, 64, seed=6), torch.full((16, 128), 5, dtype=torch.int16)
    k(x, out, 24, config=SIM)
    want = torch.full((16, 128), 5, dtype=torch.int16)
    want[:, :48] = x.view(torch.int16)[:, :48]
    assert torch.equal(out, want)


def test_a_view_as_its_own_dtype_is_a_type_error_at_the_line():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.reinterpret_view(x, pl.FP32)
        return out

    with pytest.raises(TypeCheckError) as info:
        k(torch.zeros(16, 64), torch.zeros(16, 64), config=SIM)
    assert "as its own dtype pl.FP32" in info.value.message and "pl.reinterpret_view(x, pl.FP32)" in str(
        info.value
    )


# ---------------------------------------------------------------- pl.fillpad_expand


def test_fillpad_expand_of_a_partial_tile_and_of_a_tensor():
    @pl.jit
    def k(
        x: pl.Tensor[[16, 64], pl.FP32],
        grown: pl.Out[pl.Tensor[[32, 128], pl.FP32]],
        whole: pl.Out[pl.Tensor[[24, 64], pl.FP32]],
        rows: pl.Scalar[pl.INDEX],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 64], valid_shape=[rows, 64])
            pl.store(pl.fillpad_expand(t, [32, 128], pad_value=pl.PadValue.min), [0, 0], grown)
            whole[:] = pl.fillpad_expand(x, shape=[24, 64], pad_value=pl.PadValue.max)
        return grown, whole

    x = rand(16, 64, seed=8)
    grown, whole = torch.zeros(32, 128), torch.zeros(24, 64)
    k(x, grown, whole, 11, config=SIM)
    want = torch.full((32, 128), -torch.inf)
    want[:11, :64] = x[:11]
    assert torch.equal(grown, want)
    want = torch.full((24, 64), torch.inf)
    want[:16] = x
    assert torch.equal(whole, want)


def test_fillpad_expand_to_a_smaller_shape_is_a_type_error_at_the_line():
    @pl.jit
    def k(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.fillpad_expand(pl.load(x, [0, 0], [16, 64]), [8, 64]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="to \\[8, 64\\], which is smaller in some dim"):
        k(torch.zeros(16, 64), torch.zeros(8, 64), config=SIM)


# ---------------------------------------------------------------- pl.create_l1 + pl.gather_row


def test_rows_gathered_into_l1_feed_a_b_trans_matmul():
    @pl.jit
    def attend(
        pool: pl.Tensor[[256, 64], pl.FP16],
        idx: pl.Tensor[[32], pl.INT32],
        q: pl.Tensor[[16, 64], pl.FP16],
        out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            kv = pl.create_l1([32, 64], pl.FP16, transpose=True)
            for r in pl.range(32):
                src = pl.cast(pl.read(idx, [r]), pl.INDEX)
                kv = pl.gather_row(kv, pool, [r, 0], [src, 0], [1, 64], transpose=True)
            qm = pl.load(q, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
            pl.store(pl.matmul(qm, kv, b_trans=True), [0, 0], out)
        return out

    pool, q = rand(256, 64, seed=9).half(), rand(16, 64, seed=10).half()
    idx = torch.randperm(256, generator=torch.Generator().manual_seed(11))[:32].to(torch.int32)
    out = torch.zeros(16, 32)
    attend(pool, idx, q, out, config=SIM)
    torch.testing.assert_close(out, q.float() @ pool[idx.long()].float().T, rtol=1e-3, atol=1e-3)
