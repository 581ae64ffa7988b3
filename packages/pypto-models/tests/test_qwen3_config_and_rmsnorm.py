"""The Qwen3 configurations against transformers' ``Qwen3Config``, and the RMSNorm kernel against
transformers' ``Qwen3RMSNorm`` (fp32 exactly, bf16 to its rounding)."""

import pytest
import torch
from transformers import Qwen3Config as HfQwen3Config
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm

import pypto.language as pl
from pypto.models.qwen3 import CONFIGS, get_config
from pypto.models.qwen3.kernels.rmsnorm import rmsnorm


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_each_configuration_builds_the_same_transformers_config(name):
    config = get_config(name)
    hf = HfQwen3Config(**config.hf_kwargs())
    assert (hf.hidden_size, hf.num_hidden_layers, hf.num_attention_heads) == (
        config.hidden_size,
        config.num_layers,
        config.num_heads,
    )
    assert (hf.num_key_value_heads, hf.head_dim, hf.intermediate_size, hf.vocab_size) == (
        config.num_kv_heads,
        config.head_dim,
        config.intermediate_size,
        config.vocab_size,
    )
    assert hf.rope_parameters["rope_theta"] == config.rope_theta
    assert hf.tie_word_embeddings == config.tie_word_embeddings


def test_the_published_shapes():
    big = get_config("Qwen3-32B")
    assert (big.hidden_size, big.num_layers, big.num_heads, big.num_kv_heads, big.intermediate_size) == (
        5120,
        64,
        64,
        8,
        25600,
    )
    assert get_config("qwen3-0.6b").tie_word_embeddings and not get_config("qwen3-8b").tie_word_embeddings
    assert get_config("tiny").group_size == 2


def test_an_unknown_configuration_names_the_nearest():
    with pytest.raises(KeyError, match="did you mean 'qwen3-8b'"):
        get_config("qwen3-8")


@pl.jit
def normed(x: pl.Tensor, weight: pl.Tensor, out: pl.Out[pl.Tensor], eps: pl.FP32):
    out = rmsnorm(x, weight, out, eps)
    return out


@pl.jit
def normed_by_layer(x: pl.Tensor, weights: pl.Tensor, out: pl.Out[pl.Tensor], eps: pl.FP32):
    for layer in pl.range(weights.shape[0]):  # the stacked weights of three layers, one at a time
        out = rmsnorm(x, weights, out, eps, layer)
    return out


@pytest.mark.parametrize(
    ("dtype", "hidden", "rows"),
    [(torch.float32, 256, 4), (torch.float32, 5120, 16), (torch.bfloat16, 1024, 8)],
)
def test_rmsnorm_matches_transformers(dtype, hidden, rows):
    torch.manual_seed(0)
    reference = Qwen3RMSNorm(hidden, eps=1e-6).to(dtype)
    with torch.no_grad():
        reference.weight.copy_(torch.randn(hidden))
    x, out = torch.randn(rows, hidden).to(dtype), torch.zeros(rows, hidden, dtype=dtype)
    normed(x, reference.weight.detach().reshape(1, hidden).clone(), out, 1e-6)
    with torch.no_grad():
        want = reference(x)
    if dtype is torch.float32:
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    else:
        torch.testing.assert_close(out, want)  # bf16: within its rounding


def test_rmsnorm_of_an_fp32_residual_into_bf16_reads_one_layer_of_stacked_weights():
    torch.manual_seed(1)
    x, weights = torch.randn(2, 256), torch.randn(3, 256).to(torch.bfloat16)
    out = torch.zeros(2, 256, dtype=torch.bfloat16)
    normed_by_layer(x, weights, out, 1e-6)
    want = weights[2] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)
    torch.testing.assert_close(out, want)
