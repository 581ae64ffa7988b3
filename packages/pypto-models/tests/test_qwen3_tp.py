"""The tensor-parallel Qwen3 decoder layer (pypto.models.qwen3.tp) on a world of simulated chips:
at 2, 4 and 8 ranks it decodes as transformers' ``Qwen3DecoderLayer`` does (within the single-chip
decode's 1e-4 of the largest magnitude, FP32), as the single-chip ``decoder_layer`` does (to
rounding, its caches exactly), each rank holding its own KV heads; the weights' shards are what
the heads and columns say; a rank count the model cannot split is a ModelConfigError."""

import pytest
import torch
from transformers import Qwen3Config as HfQwen3Config
from transformers import Qwen3ForCausalLM
from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

from pypto.models.qwen3 import (
    ModelConfigError,
    ModelError,
    Qwen3Config,
    Qwen3Weights,
    decoder_layer,
    rope_tables,
)
from pypto.models.qwen3.profile import DecodeProfile
from pypto.models.qwen3.tp import (
    TensorParallelLayer,
    gather_kv_cache,
    shard_kv_cache,
    shard_weights,
)

# Small, and 8 divides its heads, KV heads and intermediate size (grouped-query: 2 heads per KV).
CONFIG = Qwen3Config(
    hidden_size=256,
    intermediate_size=512,
    num_layers=2,
    num_heads=16,
    num_kv_heads=8,
    head_dim=64,
    vocab_size=64,
    max_position_embeddings=64,
)
BATCH, STEPS, MAX_SEQ, LAYER = 2, 3, 16, 1


def relative(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours.float() - reference.float()).abs().max() / reference.float().abs().max())


@pytest.fixture(scope="module")
def hf_model():
    """transformers' Qwen3 at CONFIG, its norm weights moved off one (so that they matter)."""
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(HfQwen3Config(**CONFIG.hf_kwargs(), attn_implementation="eager"))
    with torch.no_grad():
        for key, param in model.named_parameters():
            if "norm" in key:
                param.copy_(1.0 + 0.1 * torch.randn_like(param))
    return model.eval()


@pytest.fixture(scope="module")
def inputs():
    """The layer's input hidden states for STEPS decode steps of BATCH rows: [BATCH, STEPS, hidden]."""
    return torch.randn(BATCH, STEPS, CONFIG.hidden_size, generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def hf_outputs(hf_model, inputs):
    """transformers' layer LAYER over the whole sequence at once (causal), [BATCH, STEPS, hidden]."""
    layer = hf_model.model.layers[LAYER]
    positions = torch.arange(STEPS).expand(BATCH, STEPS)
    cos, sin = Qwen3RotaryEmbedding(hf_model.config)(inputs, positions)
    causal = torch.full((STEPS, STEPS), float("-inf")).triu(1).expand(BATCH, 1, STEPS, STEPS)
    with torch.no_grad():
        return layer(inputs, attention_mask=causal, position_embeddings=(cos, sin))


def empty_caches() -> tuple[torch.Tensor, torch.Tensor]:
    rows = CONFIG.num_layers * BATCH * MAX_SEQ
    width = CONFIG.num_kv_heads * CONFIG.head_dim
    return torch.zeros(rows, width), torch.zeros(rows, width)


def decode_tp(tp: TensorParallelLayer, inputs: torch.Tensor):
    """The sequence one decode step at a time on the TP layer: its outputs and the ranks' caches."""
    k_caches, v_caches = (shard_kv_cache(c, tp.ranks) for c in empty_caches())
    cos, sin = rope_tables(CONFIG, MAX_SEQ)
    outputs = []
    for t in range(STEPS):
        x = inputs[:, t].clone()
        tp(x, torch.full((BATCH,), t, dtype=torch.int32), cos, sin, k_caches, v_caches, layer=LAYER)
        outputs.append(x)
    return torch.stack(outputs, dim=1), k_caches, v_caches


def decode_single_chip(weights: Qwen3Weights, inputs: torch.Tensor):
    k_cache, v_cache = empty_caches()
    cos, sin = rope_tables(CONFIG, MAX_SEQ)
    outputs = []
    for t in range(STEPS):
        x = inputs[:, t].clone()
        positions = torch.full((BATCH,), t, dtype=torch.int32)
        decoder_layer(
            x,
            positions,
            *weights.layer_weights(),
            cos,
            sin,
            k_cache,
            v_cache,
            LAYER,
            MAX_SEQ,
            CONFIG.rms_norm_eps,
            CONFIG.head_dim**-0.5,
        )
        outputs.append(x)
    return torch.stack(outputs, dim=1), k_cache, v_cache


@pytest.fixture(scope="module")
def single_chip(hf_model, inputs):
    return decode_single_chip(Qwen3Weights.from_state_dict(hf_model.state_dict(), CONFIG), inputs)


@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_the_tp_layer_decodes_as_transformers_and_as_the_single_chip_layer(
    ranks, hf_model, inputs, hf_outputs, single_chip
):
    weights = Qwen3Weights.from_state_dict(hf_model.state_dict(), CONFIG)
    tp = TensorParallelLayer(weights, device_ids=list(range(10, 10 + ranks)))
    ours, k_caches, v_caches = decode_tp(tp, inputs)

    assert relative(ours, hf_outputs) < 1e-4  # the single-chip decode's tolerance against transformers
    one_chip, k_cache, v_cache = single_chip
    assert relative(one_chip, hf_outputs) < 1e-4
    assert relative(ours, one_chip) < 1e-5  # only the order of the sums differs
    # Each rank's cache holds its own KV heads: together, the single chip's cache.
    width = CONFIG.num_kv_heads // ranks * CONFIG.head_dim
    assert k_caches.shape == (ranks, k_cache.shape[0], width)
    torch.testing.assert_close(gather_kv_cache(k_caches), k_cache)
    torch.testing.assert_close(gather_kv_cache(v_caches), v_cache)

    report = tp.last_report
    assert report.world_size == ranks and report.device_ids == tuple(range(10, 10 + ranks))
    kernels = {t.kernel for chip in report.chips for t in chip.tasks}
    assert {"o_proj_partial", "down_proj_partial", "allreduce_residual"} <= kernels
    assert "o_proj" not in kernels  # the residual is added once, after the sum
    assert DecodeProfile.of(report.chips[0], batch=BATCH).modules["allreduce"] > 0
    # The mesh allreduce: every rank reads from every other rank.
    assert set(report.link_bytes()) == {(s, d) for s in range(ranks) for d in range(ranks) if s != d}


def test_one_rank_is_the_single_chip_layer(hf_model, inputs, single_chip):
    weights = Qwen3Weights.from_state_dict(hf_model.state_dict(), CONFIG)
    ours, k_caches, _ = decode_tp(TensorParallelLayer(weights, ranks=1), inputs)
    one_chip, k_cache, _ = single_chip
    torch.testing.assert_close(ours, one_chip, rtol=0, atol=0)
    torch.testing.assert_close(k_caches[0], k_cache)


def test_the_shards_hold_each_ranks_heads_and_columns():
    weights = Qwen3Weights.random(CONFIG, seed=3, vocab=False)
    shards = shard_weights(weights, 4)
    layers, hidden, dim = CONFIG.num_layers, CONFIG.hidden_size, CONFIG.head_dim
    q = weights.q_proj.view(layers, CONFIG.num_heads, dim, hidden)
    k = weights.k_proj.view(layers, CONFIG.num_kv_heads, dim, hidden)
    gate = weights.gate_proj.view(layers, CONFIG.intermediate_size, hidden)
    o = weights.o_proj.view(layers, hidden, CONFIG.num_heads * dim)
    down = weights.down_proj.view(layers, hidden, CONFIG.intermediate_size)
    for r in range(4):
        # Rank r: query heads 4r..4r+3, KV heads 2r, 2r+1 (the ones those heads read), columns 128r...
        assert torch.equal(shards.q_proj[r].view(layers, 4, dim, hidden), q[:, 4 * r : 4 * r + 4])
        assert torch.equal(shards.k_proj[r].view(layers, 2, dim, hidden), k[:, 2 * r : 2 * r + 2])
        assert torch.equal(shards.gate_proj[r].view(layers, 128, hidden), gate[:, 128 * r : 128 * r + 128])
        assert torch.equal(
            shards.o_proj[r].view(layers, hidden, 4 * dim), o[:, :, 4 * r * dim : (4 * r + 4) * dim]
        )
        assert torch.equal(shards.down_proj[r].view(layers, hidden, 128), down[:, :, 128 * r : 128 * r + 128])
    assert shards.input_norm is weights.input_norm  # the norms are whole on every rank
    cache = torch.randn(10, CONFIG.num_kv_heads * dim)
    assert torch.equal(gather_kv_cache(shard_kv_cache(cache, 4)), cache)
    assert torch.equal(shard_kv_cache(cache, 4)[1], cache[:, 2 * dim : 4 * dim])


@pytest.mark.parametrize(
    ("ranks", "message"),
    [
        (3, "3 ranks cannot split the 16 query heads"),
        (16, "16 ranks cannot split the 8 KV heads"),
        (0, "at least 1"),
    ],
)
def test_a_rank_count_the_model_cannot_split_is_a_config_error_with_the_counts_that_fit(ranks, message):
    weights = Qwen3Weights.random(CONFIG, seed=3, vocab=False)
    with pytest.raises(ModelConfigError, match=message) as err:
        TensorParallelLayer(weights, ranks=ranks)
    assert err.value.span is not None and err.value.span.file == __file__  # at the caller's line
    if ranks:
        assert "[1, 2, 4, 8]" in err.value.hint


def test_intermediate_columns_that_do_not_divide_are_refused():
    config = Qwen3Config(
        hidden_size=256,
        intermediate_size=612,
        num_layers=1,
        num_heads=8,
        num_kv_heads=8,
        head_dim=32,
        vocab_size=8,
    )
    with pytest.raises(ModelConfigError, match="8 ranks cannot split the 612 intermediate size") as err:
        shard_weights(Qwen3Weights.random(config, vocab=False), 8)
    assert "[1, 2, 4]" in err.value.hint


def test_caches_not_cut_for_the_ranks_or_a_stream_not_fp32_are_refused_before_running():
    tp = TensorParallelLayer(Qwen3Weights.random(CONFIG, seed=3, vocab=False), ranks=2)
    k_cache, v_cache = empty_caches()
    cos, sin = rope_tables(CONFIG, MAX_SEQ)
    with pytest.raises(ModelError, match="shard_kv_cache"):
        tp(
            torch.zeros(BATCH, CONFIG.hidden_size),
            torch.zeros(BATCH, dtype=torch.int32),
            cos,
            sin,
            k_cache,
            v_cache,
        )
    k_caches, v_caches = shard_kv_cache(k_cache, 2), shard_kv_cache(v_cache, 2)
    positions = torch.zeros(BATCH, dtype=torch.int32)
    with pytest.raises(ModelError, match="FP32"):
        tp(
            torch.zeros(BATCH, CONFIG.hidden_size, dtype=torch.bfloat16),
            positions,
            cos,
            sin,
            k_caches,
            v_caches,
        )


def test_a_prepared_world_keeps_the_shards_and_caches_resident_across_steps_and_layers():
    weights = Qwen3Weights.random(CONFIG, seed=4, vocab=False)
    tp = TensorParallelLayer(weights, ranks=4)
    k_cache, v_cache = empty_caches()
    cos, sin = rope_tables(CONFIG, MAX_SEQ)
    generator = torch.Generator().manual_seed(5)
    with tp.prepare(BATCH, MAX_SEQ) as resident:
        for t in range(2):
            x = torch.randn(BATCH, CONFIG.hidden_size, generator=generator)
            positions = torch.full((BATCH,), t, dtype=torch.int32)
            for layer in range(CONFIG.num_layers):  # the residual stream through both layers
                want = x.clone()
                decoder_layer(
                    want,
                    positions,
                    *weights.layer_weights(),
                    cos,
                    sin,
                    k_cache,
                    v_cache,
                    layer,
                    MAX_SEQ,
                    CONFIG.rms_norm_eps,
                    CONFIG.head_dim**-0.5,
                )
                resident(x, positions, layer=layer)
                assert relative(x, want) < 1e-5
        k_caches, v_caches = resident.kv_caches()
        assert resident.last_report.world_size == 4
        with pytest.raises(ModelError, match="layer 2 is not one of the model's 2 layers"):
            resident(x, positions, layer=2)
        with pytest.raises(ModelError, match="prepared for"):
            resident(torch.zeros(BATCH + 1, CONFIG.hidden_size), positions)
    # Both steps' keys and values, of both layers, were written into the resident caches.
    torch.testing.assert_close(gather_kv_cache(k_caches), k_cache)
    torch.testing.assert_close(gather_kv_cache(v_caches), v_cache)
    assert torch.count_nonzero(k_caches) > 0


def test_a_bf16_model_splits_as_its_single_chip_layer_computes():
    weights = Qwen3Weights.random(CONFIG, seed=6, dtype=torch.bfloat16, vocab=False)
    generator = torch.Generator().manual_seed(7)
    k_cache = torch.randn(*empty_caches()[0].shape, generator=generator).to(torch.bfloat16)
    v_cache = torch.randn(k_cache.shape, generator=generator).to(torch.bfloat16)
    x = torch.randn(BATCH, CONFIG.hidden_size, generator=generator)
    positions = torch.tensor([5, 11], dtype=torch.int32)  # rows at different lengths
    cos, sin = rope_tables(CONFIG, MAX_SEQ)
    tp = TensorParallelLayer(weights, ranks=4)
    ours, k_caches, v_caches = x.clone(), shard_kv_cache(k_cache, 4), shard_kv_cache(v_cache, 4)
    tp(ours, positions, cos, sin, k_caches, v_caches, layer=0)
    eps, scale = CONFIG.rms_norm_eps, CONFIG.head_dim**-0.5
    decoder_layer(x, positions, *weights.layer_weights(), cos, sin, k_cache, v_cache, 0, MAX_SEQ, eps, scale)
    assert relative(ours, x) < 1e-5  # the partial products are FP32: only the order of the sums differs
    assert k_caches.dtype is torch.bfloat16
    torch.testing.assert_close(gather_kv_cache(k_caches), k_cache)
    torch.testing.assert_close(gather_kv_cache(v_caches), v_cache)
