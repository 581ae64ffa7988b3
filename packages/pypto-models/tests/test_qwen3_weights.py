"""Qwen3 weights: from a transformers state dict (Hugging Face naming), from local safetensors
checkpoints (a file, or a directory written by ``save_pretrained`` with its ``config.json``),
random by seed; back to Hugging Face's naming; and every checkpoint that does not fit refused
with the key and the reason."""

import dataclasses

import pytest
import torch
from models_reference import hf_model
from transformers import Qwen3Config as HfQwen3Config
from transformers import Qwen3ForCausalLM

from pypto.models.qwen3 import Qwen3Config, Qwen3Weights, WeightError, get_config

TINY = get_config("tiny")
TIED = dataclasses.replace(TINY, tie_word_embeddings=True)


def test_a_transformers_state_dict_stacks_the_layers_and_reads_back_the_same(tiny_hf):
    weights = Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY)
    dim, layers = TINY.head_dim, TINY.num_layers
    assert weights.q_proj.shape == (layers * TINY.num_heads * dim, TINY.hidden_size)
    assert weights.q_norm.shape == (layers, dim) and weights.final_norm.shape == (1, TINY.hidden_size)
    second_q = tiny_hf.state_dict()["model.layers.1.self_attn.q_proj.weight"]
    assert torch.equal(weights.q_proj[TINY.num_heads * dim :], second_q)
    back = weights.state_dict()
    reference = tiny_hf.state_dict()
    assert set(back) == set(reference)
    assert all(torch.equal(back[k], reference[k]) for k in back)


def test_random_weights_load_into_transformers_by_seed():
    a, b = Qwen3Weights.random(TINY, seed=3), Qwen3Weights.random(TINY, seed=3)
    assert torch.equal(a.down_proj, b.down_proj)
    assert not torch.equal(a.down_proj, Qwen3Weights.random(TINY, seed=4).down_proj)
    model = Qwen3ForCausalLM(HfQwen3Config(**TINY.hf_kwargs()))
    model.load_state_dict(a.state_dict(), strict=True)


def test_tied_embeddings_share_the_table_with_the_lm_head():
    weights = Qwen3Weights.random(TIED, seed=0)
    assert weights.lm_head is weights.embed
    model = Qwen3ForCausalLM(HfQwen3Config(**TIED.hf_kwargs()))
    state = model.state_dict()  # lists the shared table under both names
    assert "lm_head.weight" in state
    assert Qwen3Weights.from_state_dict(state, TIED).lm_head is not None
    assert "lm_head.weight" not in weights.state_dict()


def test_bf16_weights_from_an_fp32_checkpoint(tiny_hf):
    weights = Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY, dtype=torch.bfloat16)
    assert weights.dtype is torch.bfloat16 and weights.gate_proj.dtype is torch.bfloat16


def test_a_safetensors_file_and_a_save_pretrained_directory(tmp_path, tiny_hf):
    weights = Qwen3Weights.from_state_dict(tiny_hf.state_dict(), TINY)
    weights.save_safetensors(tmp_path / "tiny.safetensors")
    from_file = Qwen3Weights.from_safetensors(tmp_path / "tiny.safetensors", TINY)
    assert torch.equal(from_file.o_proj, weights.o_proj)
    hf_model(seed=5).save_pretrained(tmp_path / "saved")  # model.safetensors and config.json
    from_dir = Qwen3Weights.from_safetensors(tmp_path / "saved")
    assert from_dir.config == TINY
    assert torch.equal(
        from_dir.up_proj[: TINY.intermediate_size],
        hf_model(seed=5).state_dict()["model.layers.0.mlp.up_proj.weight"],
    )


def test_the_configuration_reads_a_transformers_config_json():
    assert Qwen3Config.from_hf_dict(HfQwen3Config(**TINY.hf_kwargs()).to_dict()) == TINY
    with pytest.raises(ValueError, match="rope_type 'yarn'"):
        Qwen3Config.from_hf_dict(
            {
                **HfQwen3Config(**TINY.hf_kwargs()).to_dict(),
                "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6},
            }
        )


def test_checkpoints_that_do_not_fit_are_refused_with_the_key(tmp_path, tiny_hf):
    state = dict(tiny_hf.state_dict())
    with pytest.raises(WeightError, match=r"has no 'model.layers.1.mlp.up_proj.weight'"):
        Qwen3Weights.from_state_dict({k: v for k, v in state.items() if "1.mlp.up_proj" not in k}, TINY)
    wrong = {**state, "model.norm.weight": torch.zeros(7)}
    with pytest.raises(
        WeightError, match=r"'model.norm.weight' has shape \[7\]; the configuration needs \[256\]"
    ):
        Qwen3Weights.from_state_dict(wrong, TINY)
    biased = {**state, "model.layers.0.self_attn.q_proj.bias": torch.zeros(256)}
    with pytest.raises(WeightError, match=r"does not use: model.layers.0.self_attn.q_proj.bias"):
        Qwen3Weights.from_state_dict(biased, TINY)
    with pytest.raises(WeightError, match="FP32 or BF16"):
        Qwen3Weights.from_state_dict(state, TINY, dtype=torch.float16)
    with pytest.raises(WeightError, match=r"no .safetensors file"):
        Qwen3Weights.from_safetensors(tmp_path / "nothing.safetensors", TINY)
    (tmp_path / "lonely").mkdir()
    Qwen3Weights.random(TINY).save_safetensors(tmp_path / "lonely" / "model.safetensors")
    with pytest.raises(WeightError, match=r"no config.json"):
        Qwen3Weights.from_safetensors(tmp_path / "lonely")
