"""Call-time checks of what a kernel is called with: each bad argument is a PyptoError that points at
the parameter in the ``def`` (or, for ``config=``, at the call) with a caret and a hint, before
anything is compiled or run."""

import numpy as np
import pytest
import torch
from lang_diagnostics import header, rendered

import pypto.language as pl
from pypto.ir import PyptoError, SpecializationError, UnsupportedDtypeError
from pypto.language.errors import RunConfigError

FILE = __file__


@pl.jit
def scaled(
    a: pl.Tensor,
    n: pl.Scalar[pl.INT32],
    out: pl.Out[pl.Tensor],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, 2.0)
    return out


A = torch.randn(64, 64)


def out64():
    return torch.zeros(64, 64)


def failure(kind, *args, **kwargs):
    with pytest.raises(kind) as info:
        scaled(*args, **kwargs)
    err = rendered(info.value)
    assert err.hint
    return info.value, err


def points_at(err, param):
    """The caret is under the parameter (its name and annotation) in the def."""
    assert err.header.startswith(header(FILE, f"{param}:", param, "")), err.header
    assert err.underlined.split(":")[0] == param


@pytest.mark.parametrize(
    ("args", "param", "message"),
    [
        ((A, 3), "out", "scaled(): missing a required argument: 'out'"),
        ((A, 3, out64(), out64()), "out", "scaled(): too many positional arguments"),
        ((np.zeros((64, 64)), 3, out64()), "a", "argument 'a' must be a torch.Tensor, got a numpy.ndarray"),
        (
            (A, A, out64()),
            "n",
            "argument 'n' must be a Python number for pl.Scalar[pl.INT32], got a torch.Tensor",
        ),
        ((A, 2.5, out64()), "n", "argument 'n' must be an integer for pl.INT32, got 2.5"),
        ((A, 2**40, out64()), "n", "argument 'n' is 1099511627776, outside the range"),
        ((A, True, out64()), "n", "argument 'n' is the bool True"),
        ((torch.tensor(1.0), 3, out64()), "a", "argument 'a' is a 0-dimensional tensor"),
        (
            (torch.zeros(0, 64), 3, torch.zeros(0, 64)),
            "a",
            "argument 'a' is an empty tensor of shape [0, 64]",
        ),
    ],
)
def test_a_wrong_argument_points_at_its_parameter(args, param, message, backend, config):
    err, shown = failure(SpecializationError, *args, config=config)
    assert err.message.startswith(message)
    points_at(shown, param)


def test_an_unsupported_dtype_points_at_the_parameter(backend, config):
    err, shown = failure(UnsupportedDtypeError, A.to(torch.complex64), 3, out64(), config=config)
    assert "torch.complex64" in err.message and "torch.float32" in err.message
    points_at(shown, "a")


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (
            torch.zeros(1, 64).expand(64, 64),
            "argument 'out' is not contiguous (strides [0, 1]) (a stride-0 expand()",
        ),
        (torch.zeros(64, 64).t(), "argument 'out' is not contiguous (strides [1, 64])"),
        (
            torch.zeros(64, 64, requires_grad=True),
            "argument 'out' requires grad, but the kernel writes it in place",
        ),
        (
            torch.zeros(64, 64, device="meta"),
            "argument 'out' is a meta tensor, which holds no data to run on",
        ),
    ],
    ids=["expanded", "transposed", "requires_grad", "meta"],
)
def test_an_output_the_kernel_cannot_write_in_place_is_refused(out, message, backend, config):
    err, shown = failure(SpecializationError, A, 3, out, config=config)
    assert err.message.startswith(message)
    points_at(shown, "out")
    assert not backend.calls  # nothing ran


def test_an_input_may_be_a_strided_view_or_require_grad(backend, config):
    scaled(torch.randn(64, 64).t(), 3, out64(), config=config)
    scaled(torch.randn(64, 64, requires_grad=True), 3, out64(), config=config)
    assert len(backend.calls) == 2


def test_a_meta_tensor_compiles_but_does_not_run(backend, config):
    meta = torch.zeros(64, 64, device="meta")
    assert scaled.compile(meta, 3, meta, config=config).lowered is not None
    _, shown = failure(SpecializationError, meta, 3, out64(), config=config)
    points_at(shown, "a")


def test_an_annotation_stands_in_for_a_tensor_when_compiling(backend, config):
    stand_in = pl.Tensor[[64, 64], pl.FP16]
    program = scaled.lower(stand_in, 3, stand_in, config=config)
    assert str(program.entry_function.params[0].var.type) == "pl.Tensor[[64, 64], pl.FP16]"
    err, shown = failure(SpecializationError, stand_in, 3, out64(), config=config)
    assert "is a stand-in" in err.message
    points_at(shown, "a")


def test_config_must_be_a_run_config(backend):
    with pytest.raises(RunConfigError) as info:
        scaled(A, 3, out64(), config="a2a3sim")  # the call the error points at
    err = rendered(info.value)
    assert isinstance(info.value, PyptoError) and isinstance(info.value, TypeError)
    assert info.value.message == "config= takes a RunConfig, got str 'a2a3sim'"
    assert err.header.startswith(header(FILE, 'scaled(A, 3, out64(), config="a2a3sim")', "scaled(A", ""))
    assert 'config=RunConfig(platform="a2a3sim")' in err.hint


def test_an_unknown_keyword_points_at_the_call_that_passed_it(backend, config):
    """No parameter is to blame: the caret is under the user's call."""
    with pytest.raises(SpecializationError) as info:
        scaled(A, 3, out64(), scale=2.0, config=config)  # the call with the unknown keyword
    err = rendered(info.value)
    assert info.value.message == "scaled(): got an unexpected keyword argument 'scale'"
    assert err.header.startswith(header(FILE, "scaled(A, 3, out64(), scale=2.0", "scaled(A", ""))
    assert err.underlined == "scaled(A, 3, out64(), scale=2.0, config=config)"
    assert err.hint == "scaled takes (a, n, out)"
