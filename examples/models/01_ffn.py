"""Feed-forward networks with GELU, SwiGLU and ReLU, all built from the same incore kernels.

A transformer FFN is ``down(act(up(x)))`` (SwiGLU: ``down(silu(gate(x)) * up(x))``). The three
``@pl.jit`` entries below share their kernels: one ``@pl.jit.incore`` projection kernel
``project`` (``x @ W^T`` for one block of output columns, the weight in Hugging Face's ``[out,
in]`` layout read transposed by the cube) launched on a core group per column block by the
``@pl.jit.opaque`` ``linear``, and one ``@pl.jit.incore`` kernel per activation. Each helper is
one function per specialization of its shapes: SwiGLU's gate and up projections (the same
shapes) are one ``project`` launched twice, at once, and the down projection a second one.

    python examples/models/01_ffn.py [-p a2a3sim]
"""

import argparse
import functools
import math

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

TOKENS, HIDDEN, INTER = 64, 128, 256
BLOCK = 64  # output columns per core group
GELU_C = math.sqrt(2.0 / math.pi)


@pl.jit.incore
def project(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Block ``i`` of ``out = x @ weight^T`` (FP32): output columns ``i * BLOCK`` on."""
    c0 = pl.get_block_idx() * BLOCK
    out[:, c0 : c0 + BLOCK] = pl.matmul(x, weight[c0 : c0 + BLOCK, :], out_dtype=pl.FP32, b_trans=True)
    return out


@pl.jit.opaque
def linear(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``out = x @ weight^T``, one ``project`` block per core group."""
    pl.static_assert(out.shape[1] % BLOCK == 0, "the output columns must be whole blocks")
    with pl.spmd(out.shape[1] // BLOCK):
        out = project(x, weight, out)
    return out


@pl.jit.incore
def gelu_tanh(h: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``0.5 * h * (1 + tanh(sqrt(2/pi) * (h + 0.044715 * h^3)))``, cast to ``out``'s dtype."""
    inner = pl.mul(pl.add(h, pl.mul(pl.mul(pl.mul(h, h), h), 0.044715)), GELU_C)
    out[:] = pl.cast(pl.mul(pl.mul(h, 0.5), pl.add(pl.tanh(inner), 1.0)), out.dtype)
    return out


@pl.jit.incore
def relu(h: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``max(h, 0)``, cast to ``out``'s dtype."""
    out[:] = pl.cast(pl.relu(h), out.dtype)
    return out


@pl.jit.incore
def swiglu(gate: pl.Tensor, up: pl.Tensor, out: pl.Out[pl.Tensor]):
    """``silu(gate) * up`` with ``silu(g) = g * sigmoid(g)``, cast to ``out``'s dtype."""
    out[:] = pl.cast(pl.mul(pl.mul(gate, pl.sigmoid(gate)), up), out.dtype)
    return out


@pl.jit
def gelu_ffn(x: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, inter = x.shape[0], w_up.shape[0]
    h = pl.create_tensor([rows, inter], pl.FP32)
    h = linear(x, w_up, h)
    act = pl.create_tensor([rows, inter], x.dtype)
    act = gelu_tanh(h, act)
    out = linear(act, w_down, out)
    return out


@pl.jit
def relu_ffn(x: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, inter = x.shape[0], w_up.shape[0]
    h = pl.create_tensor([rows, inter], pl.FP32)
    h = linear(x, w_up, h)
    act = pl.create_tensor([rows, inter], x.dtype)
    act = relu(h, act)
    out = linear(act, w_down, out)
    return out


@pl.jit
def swiglu_ffn(x: pl.Tensor, w_gate: pl.Tensor, w_up: pl.Tensor, w_down: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, inter = x.shape[0], w_up.shape[0]
    gate = pl.create_tensor([rows, inter], pl.FP32)
    up = pl.create_tensor([rows, inter], pl.FP32)
    gate = linear(x, w_gate, gate)  # gate and up run at once: they share only inputs
    up = linear(x, w_up, up)
    act = pl.create_tensor([rows, inter], x.dtype)
    act = swiglu(gate, up, act)
    out = linear(act, w_down, out)
    return out


def reference(x, w_up, w_down, activation, w_gate=None):
    """The same FFN in torch, FP32 products of the FP16 operands, the activation rounded to FP16."""
    up = x.float() @ w_up.float().T
    act = activation(up) if w_gate is None else activation(x.float() @ w_gate.float().T) * up
    return act.to(x.dtype).float() @ w_down.float().T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x = torch.randn(TOKENS, HIDDEN).half()
    w_gate, w_up = ((torch.randn(INTER, HIDDEN) / math.sqrt(HIDDEN)).half() for _ in range(2))
    w_down = (torch.randn(HIDDEN, INTER) / math.sqrt(INTER)).half()
    gelu = functools.partial(torch.nn.functional.gelu, approximate="tanh")

    # the products accumulate in FP32 on both sides; the FP16 rounding of the activation may
    # differ by one unit where the two compute it a hair apart
    tolerance = {"rtol": 1e-3, "atol": 1e-3}
    out = torch.zeros(TOKENS, HIDDEN)
    gelu_ffn(x, w_up, w_down, out, config=config)
    torch.testing.assert_close(out, reference(x, w_up, w_down, gelu), **tolerance)

    out = torch.zeros(TOKENS, HIDDEN)
    relu_ffn(x, w_up, w_down, out, config=config)
    torch.testing.assert_close(out, reference(x, w_up, w_down, torch.relu), **tolerance)

    out = torch.zeros(TOKENS, HIDDEN)
    swiglu_ffn(x, w_gate, w_up, w_down, out, config=config)
    want = reference(x, w_up, w_down, torch.nn.functional.silu, w_gate=w_gate)
    torch.testing.assert_close(out, want, **tolerance)

    report = swiglu_ffn.last_report
    gate, up = ([t for t in report.tasks if t.task_id == i] for i in (1, 2))
    assert {t.kernel for t in gate + up} == {"project"}  # one kernel for both projections
    assert max(t.start_cycle for t in gate + up) < min(t.end_cycle for t in gate + up)
    print(
        f"swiglu_ffn: the gate and up projections run at once on {len(gate + up)} core groups; "
        f"{report.total_cycles} modeled cycles in all"
    )
    print("OK")


if __name__ == "__main__":
    main()
