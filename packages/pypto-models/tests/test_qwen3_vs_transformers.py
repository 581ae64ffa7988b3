"""The reference check: the ``pl`` Qwen3 decode path on a2a3sim against transformers'
``Qwen3ForCausalLM`` at the ``tiny`` configuration, with the same weights.

- FP32: one decode step's final hidden states and logits within 1e-4 relative (of the largest
  magnitude), the prompt prefilled one decode step per token while transformers runs it at once.
- BF16: the logits within 2% of the largest logit of transformers' BF16 model, and no further from
  transformers' FP32 logits than 1.5x transformers' own BF16 model is (the two round differently:
  our residual stream and softmax stay FP32, transformers rounds to BF16 after every op).
- Greedy generation of 16 tokens, token for token, with the KV cache carried across the steps.
"""

import pytest
import torch
from models_reference import hf_model

from pypto.models.qwen3 import Qwen3Decoder, Qwen3Weights, get_config, reference, rope_tables

TINY = get_config("tiny")
PROMPT = torch.tensor([[1, 2, 3, 700, 5, 9, 10, 11]])


def relative(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours.float() - reference.float()).abs().max() / reference.float().abs().max())


def prefill(decoder: Qwen3Decoder, prompt: torch.Tensor) -> torch.Tensor:
    for t in range(prompt.shape[1]):
        logits = decoder.step(prompt[:, t])
    return logits


def test_one_decode_step_matches_transformers_in_fp32(tiny_hf):
    decoder = Qwen3Decoder(Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY), max_seq=32)
    logits = prefill(decoder, PROMPT)
    with torch.no_grad():
        reference = tiny_hf(PROMPT, output_hidden_states=True)
    assert relative(logits, reference.logits[:, -1]) < 1e-4
    assert relative(decoder.hidden, reference.hidden_states[-1][:, -1]) < 1e-4
    assert decoder.positions.tolist() == [PROMPT.shape[1]]


def test_a_batch_of_prompts_decodes_each_row_as_transformers_does(tiny_hf):
    prompts = torch.tensor([[4, 8, 15, 16], [23, 42, 108, 999], [1, 1, 1, 1]])
    decoder = Qwen3Decoder(Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY), batch=3, max_seq=16)
    logits = prefill(decoder, prompts)
    with torch.no_grad():
        reference = tiny_hf(prompts).logits[:, -1]
    assert relative(logits, reference) < 1e-4


def test_one_decode_step_in_bf16_is_as_close_as_transformers_own_bf16(tiny_hf):
    decoder = Qwen3Decoder(
        Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY, dtype=torch.bfloat16), max_seq=32
    )
    logits = prefill(decoder, PROMPT)
    bf16 = hf_model(dtype=torch.bfloat16)
    with torch.no_grad():
        reference32 = tiny_hf(PROMPT).logits[:, -1]
        reference16 = bf16(PROMPT).logits[:, -1]
    assert relative(logits, reference16) < 0.02
    assert relative(logits, reference32) <= 1.5 * relative(reference16, reference32)
    assert decoder.hidden.dtype is torch.bfloat16


def test_greedy_generation_of_16_tokens_matches_transformers_token_for_token(tiny_hf):
    decoder = Qwen3Decoder(Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY), max_seq=32)
    prompt = PROMPT[:, :5]
    ours = decoder.generate(prompt, max_new_tokens=16)
    with torch.no_grad():
        theirs = tiny_hf.generate(
            prompt, max_new_tokens=16, do_sample=False, eos_token_id=None, pad_token_id=0
        )
    assert ours.shape == (1, 5 + 16)
    assert ours.tolist() == theirs.tolist()
    assert len(decoder.reports) == 5 + 15  # a step per prompt token, then one per new token but the last


@pytest.mark.parametrize("bad", [[-1], [TINY.vocab_size], [1, 2]])
def test_a_token_outside_the_vocabulary_or_batch_is_refused_before_running(bad):
    decoder = Qwen3Decoder(Qwen3Weights.random(TINY, seed=1), max_seq=8)
    with pytest.raises(ValueError, match=r"token|batch"):
        decoder.step(bad)


def test_a_full_cache_is_refused_with_the_size_to_ask_for():
    decoder = Qwen3Decoder(Qwen3Weights.random(TINY, seed=1), max_seq=2)
    decoder.step([1])
    decoder.step([2])
    with pytest.raises(ValueError, match="holds 2 positions"):
        decoder.step([3])
    with pytest.raises(ValueError, match="cache of 5 positions"):
        decoder.generate([[1, 2, 3]], max_new_tokens=3)


def test_the_exact_reference_step_is_transformers_in_fp64_over_the_same_bf16_weights():
    model = hf_model()
    with torch.no_grad():  # BF16 weights; RoPE's frequencies stay FP32, as in the kernels
        for param in model.parameters():
            param.copy_(param.bfloat16())
    weights = Qwen3Weights.from_state_dict(model.state_dict(), TINY, dtype=torch.bfloat16)
    max_seq = 16
    cos, sin = rope_tables(TINY, max_seq)
    rows = TINY.num_layers * max_seq
    k_cache = torch.zeros(rows, TINY.num_kv_heads * TINY.head_dim, dtype=torch.float64)
    v_cache = torch.zeros_like(k_cache)
    for t in range(PROMPT.shape[1]):
        positions = torch.tensor([t], dtype=torch.int32)
        hidden, logits = reference.decode_step(
            weights, PROMPT[:, t], positions, cos, sin, k_cache, v_cache, exact=True
        )
    with torch.no_grad():
        want = model.double()(PROMPT, output_hidden_states=True)
    assert logits.dtype == hidden.dtype == torch.float64
    # transformers' eager attention takes its softmax in FP32: FP32's rounding, not BF16's.
    assert relative(logits, want.logits[:, -1]) < 1e-6
    assert relative(hidden, want.hidden_states[-1][:, -1]) < 1e-6
    rounded, _ = reference.decode_step(
        weights, PROMPT[:, -1], positions, cos, sin, k_cache.bfloat16(), v_cache.bfloat16()
    )
    assert rounded.dtype == torch.bfloat16 and relative(rounded, hidden) > 1e-4
