"""Mixed cube + vector projection: the mixed-kernels page's pattern at model scale. Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/projection.py``.

``o_proj`` (and the MLP's ``down_proj``) compute ``residual + x @ W^T`` in one
``pl.split(pl.SplitMode.LEFT_RIGHT)`` scope per column block — the cube the product, the vector
lanes the residual add — spread over the core groups with ``pl.spmd``; ``q_proj``, ``k_proj``,
``v_proj`` and ``lm_head`` are the cube-only form.

    python examples/models/qwen3_jit/kernels/projection.py [-p a2a3sim]

runs ``q_proj`` and ``o_proj`` on one decode row against torch and prints how many core groups
each used and how long their cube and vector lanes overlapped.
"""

import argparse

import torch
import torch.nn.functional as F

from pypto.models.qwen3.kernels.projection import (
    k_proj,
    lm_head,
    o_proj,
    projection,
    projection_residual,
    q_proj,
    v_proj,
)
from pypto.runtime import RunConfig

__all__ = ["k_proj", "lm_head", "main", "o_proj", "projection", "projection_residual", "q_proj", "v_proj"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)
    torch.manual_seed(0)
    hidden, q_size, layers = 1024, 2048, 2
    x = torch.randn(1, hidden).to(torch.bfloat16)
    wq = (0.02 * torch.randn(layers * q_size, hidden)).to(torch.bfloat16)
    q = torch.zeros(1, q_size)
    q_proj(x, wq, q, 1, config=config)
    torch.testing.assert_close(q, F.linear(x.float(), wq[q_size:].float()), rtol=1e-3, atol=1e-3)
    attended, residual = q.to(torch.bfloat16), torch.randn(1, hidden)
    wo = (0.02 * torch.randn(layers * hidden, q_size)).to(torch.bfloat16)
    out = torch.zeros(1, hidden)
    o_proj(attended, wo, residual, out, 0, config=config)
    want = residual + F.linear(attended.float(), wo[:hidden].float())
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)
    report = o_proj.last_report
    groups = len({t.core_group for t in report.tasks})
    both = report.overlap_cycles({t.kernel for t in report.tasks}, per_group=True)
    blocks = len(report.tasks)
    print(f"o_proj: {blocks} column blocks on {groups} core groups, {report.total_cycles} modeled cycles")
    print(f"  cube and vector lanes busy at once for {both} modeled cycles (summed over core groups)")
    print("OK")


if __name__ == "__main__":
    main()
