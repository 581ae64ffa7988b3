"""Tensor views and their valid shapes (``pl.slice`` of a tensor, ``pl.set_validshape`` of one):
the valid region a view has (the source's, shifted and cut to the window; narrowed by
``valid_shape=``; cut at the tensor's end with ``clamp=True``), its pad value, and what reads it
(loads, tensor-level ops, reductions, matmuls, ``pl.fillpad``, writes of a view). Numbers
against torch."""

import math

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")


def rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def ints(*values):
    return torch.tensor(values, dtype=torch.int32)


@pl.jit
def loaded_view(
    x: pl.Tensor[[128, 64], pl.FP32],
    cfg: pl.Tensor[[2], pl.INT32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    sums: pl.Out[pl.Tensor[[64, 1], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.read(cfg, [0])
        v = pl.slice(x, [64, 64], [32, 0], valid_shape=[rows, 64], pad_value=pl.PadValue.min)
        t = pl.load(v, [0, 0], [64, 64])
        pl.store(pl.set_validshape(t, 64, 64), [0, 0], out)  # the padding too
        pl.store(pl.row_sum(t, pl.create_tile([64, 64], pl.FP32)), [0, 0], sums)
    return out, sums


@pytest.mark.parametrize("rows", [20, 64, 0])
def test_a_load_of_a_view_reads_its_valid_region_and_pads_the_rest(rows):
    x = rand(128, 64, seed=1)
    out, sums = torch.zeros(64, 64), torch.full((64, 1), -1.0)
    loaded_view(x, ints(rows, 0), out, sums, config=SIM)
    want = torch.full((64, 64), -math.inf)
    want[:rows] = x[32 : 32 + rows]
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(sums[:rows], x[32 : 32 + rows].sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    assert bool((sums[rows:] == -1).all())
    assert loaded_view.cache_info().misses == 1


@pl.jit
def view_ops(
    x: pl.Tensor[[128, 64], pl.FP32],
    cfg: pl.Tensor[[2], pl.INT32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    sums: pl.Out[pl.Tensor[[64, 1], pl.FP32]],
    cols: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = x[32:96, :]  # a subscript is a slice
        part = pl.slice(v, [64, 64], [0, 0], valid_shape=[pl.read(cfg, [0]), pl.read(cfg, [1])])
        out[:] = pl.exp(part)
        sums[:] = pl.row_sum(part)
        cols[:] = pl.col_max(part)
    return out, sums, cols


def test_tensor_ops_on_a_view_see_only_its_valid_region():
    x = rand(128, 64, seed=2)
    out, sums, cols = torch.full((64, 64), -1.0), torch.full((64, 1), -1.0), torch.full((1, 64), -1.0)
    view_ops(x, ints(20, 48), out, sums, cols, config=SIM)
    region = x[32:52, :48]
    want = torch.full((64, 64), -1.0)
    want[:20, :48] = region.exp()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(sums[:20], region.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    assert bool((sums[20:] == -1).all())
    torch.testing.assert_close(cols[0, :48], region.amax(0))
    assert bool((cols[0, 48:] == -1).all())


@pl.jit
def view_product(
    a: pl.Tensor[[64, 128], pl.FP16],
    b: pl.Tensor[[128, 64], pl.FP16],
    cfg: pl.Tensor[[2], pl.INT32],
    rows_cut: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    depth_cut: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        k, m = pl.read(cfg, [0]), pl.read(cfg, [1])
        rows_cut[:] = pl.matmul(pl.slice(a, [64, 128], [0, 0], valid_shape=[m, k]), b)
        depth_cut[:] = pl.matmul(a, pl.slice(b, [128, 64], [0, 0], valid_shape=[k, 64]))
    return rows_cut, depth_cut


def test_a_matmul_of_views_contracts_and_writes_only_their_valid_parts():
    a, b = rand(64, 128, seed=3, dtype=torch.float16), rand(128, 64, seed=4, dtype=torch.float16)
    rows_cut, depth_cut = torch.full((64, 64), -1.0), torch.full((64, 64), -1.0)
    view_product(a, b, ints(100, 30), rows_cut, depth_cut, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:30] = a[:30, :100].float() @ b[:100].float()  # a's valid columns meet b's rows
    torch.testing.assert_close(rows_cut, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(depth_cut, a[:, :100].float() @ b[:100].float(), rtol=1e-2, atol=1e-2)


@pl.jit
def tensor_valid(
    x: pl.Tensor[[64, 64], pl.FP32],
    cfg: pl.Tensor[[2], pl.INT32],
    filled: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    copied: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.set_validshape(x, pl.read(cfg, [0]), 40)
        filled[:] = pl.fillpad(v, pad_value=-math.inf)
        copied[:] = v  # only the valid part is written
    return filled, copied


def test_set_validshape_on_a_tensor_is_a_view_fillpad_and_writes_honour():
    x = rand(64, 64, seed=5)
    filled, copied = torch.zeros(64, 64), torch.full((64, 64), -1.0)
    tensor_valid(x, ints(10, 0), filled, copied, config=SIM)
    want = torch.full((64, 64), -math.inf)
    want[:10, :40] = x[:10, :40]
    torch.testing.assert_close(filled, want)
    want = torch.full((64, 64), -1.0)
    want[:10, :40] = x[:10, :40]
    torch.testing.assert_close(copied, want)


@pl.jit
def clamped(
    x: pl.Tensor[[128, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
    whole: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.slice(x, [64, 64], [80, 0], clamp=True, pad_value=math.inf)  # 48 real rows
        out[:] = pl.mul(pl.slice(v, [32, 64], [32, 0]), 2.0)  # the source's valid rows, shifted: 16
        whole[0:64, :] = pl.set_validshape(pl.load(v, [0, 0], [64, 64]), 64, 64)
    return out, whole


def test_a_clamped_view_stops_at_the_tensors_end_and_a_view_of_it_shifts_its_valid_region():
    x = rand(128, 64, seed=6)
    out, whole = torch.full((32, 64), -1.0), torch.zeros(64, 64)
    clamped(x, out, whole, config=SIM)
    want = torch.full((32, 64), -1.0)
    want[:16] = 2 * x[112:]
    torch.testing.assert_close(out, want)
    want = torch.full((64, 64), math.inf)
    want[:48] = x[80:]
    torch.testing.assert_close(whole, want)


@pl.jit
def dropped(x: pl.Tensor[[4, 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.slice(x, [1, 16, 64], [2, 0, 0], drop_dims=[0]), 1.0)
    return out


def test_drop_dims_drops_unit_dims_of_the_view():
    x = rand(4, 16, 64, seed=7)
    out = torch.zeros(16, 64)
    dropped(x, out, config=SIM)
    torch.testing.assert_close(out, x[2] + 1)


@pytest.mark.parametrize(
    ("body", "message", "hint"),
    [
        (
            "v = pl.slice(x, [64, 64], [80, 0])",
            "the window [80:144] of dim 0 lies outside the tensor's 128 elements there",
            "clamp=True",
        ),
        (
            "v = pl.slice(pl.slice(x, [64, 64], [0, 0], valid_shape=[20, 64]), [32, 64], [0, 0], valid_shape=[30, 64])",
            "valid_shape= extent 30 of dim 0 is wider than the view's valid extent 20",
            "never widen it",
        ),
        (
            "v = pl.slice(x, [64, 64], [0, 0], drop_dims=[0])",
            "drop_dims=[0] drops dims of extent [64]",
            "extent 1",
        ),
        (
            "v = pl.slice(x, [64, 64], [0, 0], pad_value=1.5)",
            "pad_value must be a pl.PadValue",
            "pl.PadValue.zero",
        ),
        ("v = x[100:164, :]", "the window [100:164] of dim 0 lies outside", "clamp=True"),
        (
            "v = pl.slice(x, [64, 64], [0, 0], drop_dims=[5])",
            "drop_dims= takes a list of the value's dims",
            "drop_dims=[0]",
        ),
        ("v = pl.slice(x, [64, 64], [0, 0], clamp=1)", "clamp= must be True or False", "clamp=True"),
        (
            "v = pl.slice(pl.load(x, [0, 0], [64, 64]), [32, 64], [0, 0], clamp=True)",
            "clamp= applies to a view of a tensor",
            "valid_shape=",
        ),
    ],
)
def test_a_bad_view_is_an_error_at_the_users_line(tmp_path, body, message, hint):
    path = tmp_path / "k.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.jit\n"
        "def k(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        {body}\n"
        "        out[:] = pl.exp(v)\n"
        "    return out\n"
    )
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(ParseError) as info:
        namespace["k"].lower(torch.zeros(128, 64), torch.zeros(64, 64))
    assert message in info.value.message
    assert info.value.span is not None and info.value.span.line == 7 and "^" in str(info.value)
    assert hint in info.value.hint


def test_printed_views_parse_back_to_themselves():
    for kernel, args in (
        (loaded_view, (rand(128, 64), ints(20, 0), torch.zeros(64, 64), torch.zeros(64, 1))),
        (
            view_ops,
            (rand(128, 64), ints(20, 48), torch.zeros(64, 64), torch.zeros(64, 1), torch.zeros(1, 64)),
        ),
        (tensor_valid, (rand(64, 64), ints(10, 0), torch.zeros(64, 64), torch.zeros(64, 64))),
        (clamped, (rand(128, 64), torch.zeros(32, 64), torch.zeros(64, 64))),
    ):
        text = kernel.parse(*args).as_python()
        assert pl.parse(text).as_python() == text, kernel.name


@pl.jit
def through_views(
    x: pl.Tensor[[64, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    picked: pl.Out[pl.Tensor[[1, 1], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = x[16:48, :]
        top = out[0:32, :]
        top[:, :] = pl.exp(v)  # a write into a view writes into the tensor it views
        pl.assemble(out, pl.mul(v, 2.0), [32, 0])
        pl.store(pl.full([1, 1], pl.FP32, pl.read(v, [1, 2])), [0, 0], picked)
    return out, picked


def test_reads_and_writes_of_views_reach_the_tensors_they_view():
    x = rand(64, 64, seed=8)
    out, picked = torch.zeros(64, 64), torch.zeros(1, 1)
    through_views(x, out, picked, config=SIM)
    torch.testing.assert_close(out[:32], x[16:48].exp())
    torch.testing.assert_close(out[32:], 2 * x[16:48])
    assert picked.item() == x[17, 2].item()


@pl.jit
def read_by_index(table: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[1, 1], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.full([1, 1], pl.INT32, pl.read(table, 3)), [0, 0], out)
    return out


def test_an_element_of_a_1d_tensor_is_read_by_its_index_alone():
    out = torch.zeros(1, 1, dtype=torch.int32)
    read_by_index(torch.arange(8, dtype=torch.int32) * 5, out, config=SIM)
    assert out.item() == 15
