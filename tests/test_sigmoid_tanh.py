"""pl.sigmoid and pl.tanh: two ops added by one declaration each in the op registry and one line
of torch semantics, running on every backend with torch's numbers and the slow vector cost."""

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import TypeCheckError
from pypto.ir.ops import FloatOnly, get_op, tensor, tile
from pypto.runtime import RunConfig, hookimpl, register_plugin, reset_registry

T = pl.Tensor[[256, 128], pl.FP32]


@pl.jit
def activations(x: T, s: pl.Out[T], t: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="act"):
        s[:] = pl.sigmoid(x)
        t[:] = pl.tanh(pl.mul(x, 0.5))
    return s, t


@pl.jit
def tiled(x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.load(x, [0, 0], [64, 64])
        pl.store(pl.add(pl.tile.sigmoid(a), pl.tile.tanh(a)), [0, 0], out)
    return out


def test_the_new_ops_are_declared_like_their_family():
    for name in ("sigmoid", "tanh"):
        for level in (tensor, tile):
            spec = get_op(getattr(level, name))
            assert spec.has(FloatOnly) and spec.cost == "vector_slow"


TORCHREF = Path(__file__).resolve().parent.parent / "examples" / "plugins" / "pypto-backend-torchref" / "src"


def torchref_backend():
    sys.path.insert(0, str(TORCHREF))
    try:
        from pypto_backend_torchref import TorchRefBackend
    finally:
        sys.path.remove(str(TORCHREF))
    return TorchRefBackend()


class TorchRefPlugin:
    """The torchref example backend, registered from its source tree for this test."""

    @hookimpl
    def pypto_register_backends(self, register):
        register(torchref_backend())


@pytest.fixture(params=["a2a3sim", "torchref"])
def platform(request):
    if request.param == "torchref":
        reset_registry()
        register_plugin(TorchRefPlugin(), name="torchref-source")
        yield "torchref"
        reset_registry()
    else:
        yield request.param


def test_sigmoid_and_tanh_give_torchs_numbers(platform, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE", "off")
    x = torch.randn(256, 128)
    s, t = torch.empty_like(x), torch.empty_like(x)
    activations(x, s, t, config=RunConfig(platform=platform))
    torch.testing.assert_close(s, torch.sigmoid(x))
    torch.testing.assert_close(t, torch.tanh(x * 0.5))


def test_tile_forms_run_on_the_simulator():
    x = torch.randn(64, 64)
    out = torch.empty_like(x)
    tiled(x, out)
    torch.testing.assert_close(out, torch.sigmoid(x) + torch.tanh(x))


def test_they_fold_on_numbers_and_refuse_integers():
    @pl.jit
    def folded(out: pl.Out[pl.Tensor[[1, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.full([1, 16], pl.FP32, pl.sigmoid(0.0) + pl.tanh(0.0)), [0, 0], out)
        return out

    out = torch.empty(1, 16)
    folded(out)
    assert torch.all(out == 0.5)

    @pl.jit
    def on_ints(a: pl.Tensor[[16, 16], pl.INT32], out: pl.Out[pl.Tensor[[16, 16], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.tanh(a)
        return out

    with pytest.raises(TypeCheckError, match=r"pl\.tanh: is defined on floats"):
        on_ints.parse()
