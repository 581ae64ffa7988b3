"""The projection kernels against torch's ``F.linear`` (what transformers' ``nn.Linear`` computes),
with Hugging Face's ``[out, in]`` weight layout, at the tiny model's shapes and one decode row."""

import pytest
import torch
import torch.nn.functional as F

import pypto.language as pl
from pypto.models.qwen3 import get_config
from pypto.models.qwen3.kernels.projection import linear, linear_residual

TINY = get_config("tiny")


@pl.jit
def project(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = linear(x, weight, out)
    return out


SHAPES = [
    (4, TINY.hidden_size, TINY.num_heads * TINY.head_dim),  # q_proj
    (16, TINY.intermediate_size, TINY.hidden_size),  # down_proj: a K longer than L0 holds
    (1, TINY.hidden_size, TINY.intermediate_size),  # one decode row, gate/up width
]


@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_linear_matches_f_linear_with_the_hf_weight_layout(rows, k, n, dtype):
    torch.manual_seed(0)
    x, weight = torch.randn(rows, k).to(dtype), torch.randn(n, k).to(dtype)
    out = torch.zeros(rows, n)
    project(x, weight, out)
    torch.testing.assert_close(out, F.linear(x.float(), weight.float()), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
def test_linear_with_the_residual_in_one_mixed_scope(rows, k, n):
    torch.manual_seed(1)
    x, weight, residual = torch.randn(rows, k), torch.randn(n, k), torch.randn(rows, n)
    out = torch.zeros(rows, n)
    linear_residual(x, weight, residual, out)
    torch.testing.assert_close(out, residual + F.linear(x, weight), rtol=1e-4, atol=1e-4)
    kernels = {t.kernel for t in linear_residual.last_report.tasks}
    assert kernels == {"projection_residual"}  # one mixed task: the cube and both vector lanes
