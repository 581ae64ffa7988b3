"""Activations built from elementwise ops: relu(a + b), silu, gelu, swiglu and geglu.

There is no sigmoid instruction; it is ``recip(1 + exp(-x))``. gelu uses the sigmoid
approximation ``x * sigmoid(1.702 * x)``; swiglu and geglu gate ``up`` with silu and gelu.

    python examples/beginner/04_activation.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

SHAPE = [64, 128]


@pl.jit
def relu_of_sum(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="relu_of_sum"):
        ta = pl.load(a, [0, 0], SHAPE)
        tb = pl.load(b, [0, 0], SHAPE)
        pl.store(pl.relu(pl.add(ta, tb)), [0, 0], out)
    return out


@pl.jit
def gated(
    gate: pl.Tensor,
    up: pl.Tensor,
    silu: pl.Out[pl.Tensor],
    gelu: pl.Out[pl.Tensor],
    swiglu: pl.Out[pl.Tensor],
    geglu: pl.Out[pl.Tensor],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gated"):
        x = pl.load(gate, [0, 0], SHAPE)
        u = pl.load(up, [0, 0], SHAPE)
        sig = pl.recip(pl.add(pl.exp(pl.neg(x)), 1.0))
        silu_x = pl.mul(x, sig)
        sig_scaled = pl.recip(pl.add(pl.exp(pl.mul(x, -1.702)), 1.0))
        gelu_x = pl.mul(x, sig_scaled)
        pl.store(silu_x, [0, 0], silu)
        pl.store(gelu_x, [0, 0], gelu)
        pl.store(pl.mul(silu_x, u), [0, 0], swiglu)
        pl.store(pl.mul(gelu_x, u), [0, 0], geglu)
    return silu, gelu, swiglu, geglu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    a, b, out = torch.randn(*SHAPE), torch.randn(*SHAPE), torch.zeros(*SHAPE)
    relu_of_sum(a, b, out, config=config)
    torch.testing.assert_close(out, torch.relu(a + b))

    gate, up = torch.randn(*SHAPE), torch.randn(*SHAPE)
    outs = [torch.zeros(*SHAPE) for _ in range(4)]
    gated(gate, up, *outs, config=config)
    silu = gate * torch.sigmoid(gate)
    gelu = gate * torch.sigmoid(1.702 * gate)
    for got, want in zip(outs, (silu, gelu, silu * up, gelu * up), strict=True):
        torch.testing.assert_close(got, want)
    print("OK")


if __name__ == "__main__":
    main()
