"""A "fused" linear layer that is fused in name only: three kernels run one after another.

The ``@pl.jit`` entry calls ``@pl.jit.incore`` helpers — a matmul, an add-bias and an
add-bias-relu — and passes intermediates through tensors it allocates with
``pl.create_tensor``. Each helper is its own task: the cube works, then the vector units do.
``examples/advanced/03_mixed_kernel.py`` shows the form that lets them overlap.

    python examples/intermediate/01_fused_linear.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

N = 64


@pl.jit.incore
def matmul(
    x: pl.Tensor[[N, N], pl.FP32], w: pl.Tensor[[N, N], pl.FP32], y: pl.Out[pl.Tensor[[N, N], pl.FP32]]
):
    x_l1 = pl.load(x, [0, 0], [N, N], target_memory=pl.Mem.Mat)
    w_l1 = pl.load(w, [0, 0], [N, N], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(x_l1, target_memory=pl.Mem.Left), pl.move(w_l1, target_memory=pl.Mem.Right))
    pl.store(acc, [0, 0], y)
    return y


@pl.jit.incore
def add_bias(
    x: pl.Tensor[[N, N], pl.FP32], bias: pl.Tensor[[N, N], pl.FP32], y: pl.Out[pl.Tensor[[N, N], pl.FP32]]
):
    y[:] = pl.add(x, bias)
    return y


@pl.jit.incore
def add_bias_relu(
    x: pl.Tensor[[N, N], pl.FP32], bias: pl.Tensor[[N, N], pl.FP32], y: pl.Out[pl.Tensor[[N, N], pl.FP32]]
):
    tx = pl.load(x, [0, 0], [N, N])
    tb = pl.load(bias, [0, 0], [N, N])
    pl.store(pl.relu(pl.add(tx, tb)), [0, 0], y)
    return y


@pl.jit
def fused_linear(
    x: pl.Tensor[[N, N], pl.FP32],
    w1: pl.Tensor[[N, N], pl.FP32],
    b1: pl.Tensor[[N, N], pl.FP32],
    w2: pl.Tensor[[N, N], pl.FP32],
    b2: pl.Tensor[[N, N], pl.FP32],
    out: pl.Out[pl.Tensor[[N, N], pl.FP32]],
):
    h = pl.create_tensor([N, N], pl.FP32)
    h = matmul(x, w1, h)
    hidden = pl.create_tensor([N, N], pl.FP32)
    hidden = add_bias_relu(h, b1, hidden)
    z = pl.create_tensor([N, N], pl.FP32)
    z = matmul(hidden, w2, z)
    out = add_bias(z, b2, out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x, w1, b1, w2, b2 = (torch.randn(N, N) * 0.5 for _ in range(5))
    out = torch.zeros(N, N)
    fused_linear(x, w1, b1, w2, b2, out, config=config)
    want = torch.relu(x @ w1 + b1) @ w2 + b2
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    print("OK", flush=True)
    kernels = [t.kernel for t in fused_linear.last_report.tasks]
    assert kernels == ["matmul", "add_bias_relu", "matmul", "add_bias"], kernels


if __name__ == "__main__":
    main()
