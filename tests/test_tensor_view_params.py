"""``pl.TensorView`` in tensor annotations: strides (a window into a larger buffer, read and
written through them), a valid shape and a pad a kernel's tensor parameter has, ``layout=``
required with any of them, ``pl.TensorLayout`` and ``pl.ND`` / ``pl.DN`` / ``pl.NZ``, and the
layout-only ``pl.Tensor[..., pl.DN]`` rejected. Numbers against torch."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, SpecializationError, TypeCheckError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
WINDOW = pl.TensorView(stride=[128, 1], layout=pl.TensorLayout.ND)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pl.jit
def windows(
    x: pl.Tensor[[32, 64], pl.FP32, WINDOW],
    out: pl.Out[pl.Tensor[[32, 64], pl.FP32, WINDOW]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)
    return out


def test_a_strided_parameter_is_read_and_written_through_its_strides():
    base, dest = rand(32, 128, seed=1), torch.zeros(32, 128)
    windows(base[:, 32:96], dest[:, 64:], config=SIM)  # torch views with strides [128, 1]
    torch.testing.assert_close(dest[:, 64:], base[:, 32:96].exp())
    assert bool((dest[:, :64] == 0).all())  # nothing outside the window is written
    explicit = torch.as_strided(rand(32 * 128, seed=2), (32, 64), (128, 1))
    out = torch.as_strided(torch.zeros(32 * 128), (32, 64), (128, 1))
    windows(explicit, out, config=SIM)
    torch.testing.assert_close(out, explicit.exp())


def test_an_argument_without_the_declared_strides_is_an_error_at_the_parameter():
    with pytest.raises(SpecializationError) as info:
        windows(rand(32, 64), torch.zeros(32, 64), config=SIM)
    assert info.value.message == (
        "argument 'x' has strides [64, 1], but parameter 'x' is annotated with pl.TensorView(stride=[128, 1])"
    )
    assert "as_strided" in info.value.hint and info.value.span is not None


@pl.jit
def valid_entry(
    x: pl.Tensor[[64, 64], pl.FP32, pl.TensorView(valid_shape=[40, 48], layout=pl.ND, pad=pl.PadValue.zero)],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
    sums: pl.Out[pl.Tensor[[64, 1], pl.FP32]],
    tile_out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
        sums[:] = pl.row_sum(x)
        t = pl.load(x, [0, 0], [64, 64])
        pl.store(pl.set_validshape(t, 64, 64), [0, 0], tile_out)  # the padding reads the pad value
    return out, sums, tile_out


def test_a_valid_shape_in_a_parameters_view_is_what_the_kernel_sees_of_it():
    x = rand(64, 64, seed=3)
    out, sums, tile_out = torch.full((64, 64), -1.0), torch.full((64, 1), -1.0), torch.full((64, 64), -1.0)
    valid_entry(x, out, sums, tile_out, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:40, :48] = x[:40, :48] + 1
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(sums[:40], x[:40, :48].sum(1, keepdim=True), rtol=1e-5, atol=1e-5)
    assert bool((sums[40:] == -1).all())
    want = torch.zeros(64, 64)
    want[:40, :48] = x[:40, :48]
    torch.testing.assert_close(tile_out, want)


ROWS = pl.dynamic("ROWS")


@pl.jit.incore
def tripled(
    x: pl.Tensor[[ROWS, 64], pl.FP32, pl.TensorView(valid_shape=[20, 64], layout=pl.ND)],
    out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]],
):
    t = pl.load(x, [0, 0], [64, 64])
    out = pl.store(pl.mul(t, 3.0), [0, 0], out)
    return out


@pl.jit
def calls_tripled(x: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]):
    out = tripled(x, out)
    return out


def test_a_kernels_parameter_view_holds_in_its_body():
    x, out = rand(64, 64, seed=4), torch.full((64, 64), -1.0)
    calls_tripled(x, out, config=SIM)
    want = torch.full((64, 64), -1.0)
    want[:20] = 3 * x[:20]
    torch.testing.assert_close(out, want)


def test_the_layout_constants_are_the_tensor_layouts():
    assert pl.ND is pl.TensorLayout.ND and pl.DN is pl.TensorLayout.DN and pl.NZ is pl.TensorLayout.NZ
    assert [m.name for m in pl.TensorLayout] == ["ND", "DN", "NZ"]
    spec = pl.Tensor[[64, 64], pl.FP32, pl.ND]
    assert spec.view is None  # ND is what a tensor is anyway


@pytest.mark.parametrize(
    ("annotation", "error", "message", "hint"),
    [
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.DN]",
            TypeCheckError,
            "the layout-only DN shorthand is not supported",
            "pl.transpose(x, -2, -1)",
        ),
        ("pl.Tensor[[64, 64], pl.FP32, pl.NZ]", TypeCheckError, "NZ is a tile layout", "TileView"),
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.TensorView(stride=[128, 1])]",
            ParseError,
            "pl.TensorView with stride= needs layout=",
            "layout=pl.TensorLayout.ND",
        ),
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.TensorView(valid_shape=[8, 8], pad=pl.PadValue.zero)]",
            ParseError,
            "pl.TensorView with valid_shape=, pad= needs layout=",
            "layout=",
        ),
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.TensorView(strides=[64, 1], layout=pl.ND)]",
            ParseError,
            "pl.TensorView has no field strides",
            "stride=",
        ),
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.TensorView(valid_shape=[80, 64], layout=pl.ND)]",
            ParseError,
            "extent 80 of dim 0 is larger than the tensor's 64",
            "at most the tensor's",
        ),
        (
            "pl.Tensor[[64, 64], pl.FP32, pl.TensorView(stride=[1, 64], layout=pl.DN)]",
            TypeCheckError,
            "a tensor parameter is row-major (ND) here",
            "b_trans=True",
        ),
    ],
)
def test_a_bad_tensor_annotation_is_an_error_at_it(tmp_path, annotation, error, message, hint):
    path = tmp_path / "k.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.jit\n"
        f"def k(x: {annotation}, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        out[:] = pl.exp(x)\n"
        "    return out\n"
    )
    with pytest.raises(error) as info:
        exec(compile(path.read_text(), str(path), "exec"), {})
    assert message in info.value.message
    assert info.value.span is not None and info.value.span.line == 5 and "^" in str(info.value)
    assert hint in info.value.hint
