"""MLP (SwiGLU): the mixed gate/up projection with ``silu(gate) * up`` on the vector lanes
(``project_gate_up``), and the mixed down projection with the residual (``down_proj``); ``mlp``
composes them after the post-attention RMSNorm. Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/mlp.py``.

    python examples/models/qwen3_jit/kernels/mlp.py [-p a2a3sim]

runs ``mlp`` on a batch of two rows against torch.
"""

import argparse

import torch
import torch.nn.functional as F

from pypto.models.qwen3.kernels.mlp import down_proj, mlp, project_gate_up
from pypto.runtime import RunConfig

__all__ = ["down_proj", "main", "mlp", "project_gate_up"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)
    torch.manual_seed(0)
    hidden, inter = 256, 768
    x, norm = torch.randn(2, hidden), 1 + 0.1 * torch.randn(1, hidden)
    gate, up, down = (
        0.05 * torch.randn(*shape) for shape in ((inter, hidden), (inter, hidden), (hidden, inter))
    )
    out = torch.zeros(2, hidden)
    mlp(x, norm, gate, up, down, out, 0, 1e-6, config=config)
    normed = norm * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    want = x + F.linear(F.silu(F.linear(normed, gate)) * F.linear(normed, up), down)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    kernels = sorted({t.kernel for t in mlp.last_report.tasks})
    print(f"mlp: kernels {', '.join(kernels)}; {mlp.last_report.total_cycles} modeled cycles")
    print("OK")


if __name__ == "__main__":
    main()
