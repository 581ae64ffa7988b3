"""First-contact bad input to the Qwen3 API — a fractional or out-of-range token id, a numpy array
or an integer tensor in a state dict, a config.json missing a field, a generation request that
makes no sense — is a ModelError (a PyptoError and a ValueError) of the right kind, at the
caller's line, naming the input and saying how to fix it; never a bare TypeError or KeyError."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pypto.ir import PyptoError
from pypto.models.qwen3 import (
    ModelConfigError,
    ModelError,
    Qwen3Config,
    Qwen3Decoder,
    Qwen3Weights,
    TokenError,
    UnknownModelError,
    WeightError,
    get_config,
)

TINY = get_config("tiny")
HF_CONFIG = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1024,
}


@pytest.fixture(scope="module")
def weights() -> Qwen3Weights:
    return Qwen3Weights.random(TINY, seed=0)


@pytest.fixture
def decoder(weights) -> Qwen3Decoder:
    return Qwen3Decoder(weights, batch=1, max_seq=8)


def _raised(kind: type[ModelError], call, *snippets: str) -> ModelError:
    with pytest.raises(kind) as info:
        call()
    err = info.value
    assert isinstance(err, PyptoError) and isinstance(err, ValueError)
    assert err.span is not None and err.span.file == __file__  # the caller's line
    assert err.hint
    for snippet in snippets:
        assert snippet in err.message
    return err


@pytest.mark.parametrize(
    ("tokens", "snippet"),
    [
        ([1.5], "got torch.float32 values [1.5]"),
        (torch.tensor([3.0]), "got torch.float32 values [3.0]"),
        ([True], "got torch.bool values [True]"),
        (["a"], "got ['a']"),
        (None, "got None"),
        ([10**30], "got [1000000000000000000000000000000]"),
        ([-1], "must lie in [0, 1024), got [-1]"),
        ([1024], "must lie in [0, 1024), got [1024]"),
    ],
)
def test_a_token_id_that_is_no_id_of_the_vocabulary_is_a_token_error(decoder, tokens, snippet):
    _raised(TokenError, lambda: decoder.step(tokens), snippet)


@pytest.mark.parametrize(
    ("prompt", "new", "snippet"),
    [
        ([[1, 2.5]], 2, "prompt_ids must be integer token ids"),
        ([[]], 2, "prompt_ids must be [1, length >= 1], got [1, 0]"),
        ([[1, 2], [3]], 2, "prompt_ids must be integer token ids"),
        ([[1, 2]], -1, "max_new_tokens must be a whole number of at least 0, got -1"),
        ([[1, 2]], 1.5, "got 1.5"),
        ([[1, 2]], 20, "need a cache of 21 positions; this one holds 8"),
    ],
)
def test_a_generation_request_that_does_not_fit_is_a_token_error(decoder, prompt, new, snippet):
    _raised(TokenError, lambda: decoder.generate(prompt, max_new_tokens=new), snippet)
    assert int(decoder.positions.max()) == 0  # refused before anything ran


def test_no_new_tokens_gives_the_prompt_back(decoder):
    assert decoder.generate([[1, 2]], max_new_tokens=0).tolist() == [[1, 2]]


def test_a_numpy_array_in_a_state_dict_is_a_weight_error_naming_its_key(weights):
    state = weights.state_dict()
    state["model.norm.weight"] = state["model.norm.weight"].numpy()
    err = _raised(
        WeightError,
        lambda: Qwen3Weights.from_state_dict(state, TINY),
        "'model.norm.weight' is a numpy.ndarray, not a torch tensor",
    )
    assert "torch.from_numpy" in err.hint
    assert isinstance(state["model.norm.weight"], np.ndarray)


def test_an_integer_weight_is_a_weight_error(weights):
    state = weights.state_dict()
    state["model.layers.1.mlp.up_proj.weight"] = state["model.layers.1.mlp.up_proj.weight"].to(torch.int32)
    _raised(
        WeightError,
        lambda: Qwen3Weights.from_state_dict(state, TINY),
        "'model.layers.1.mlp.up_proj.weight' is a tensor of torch.int32",
    )


@pytest.mark.parametrize(
    ("call", "snippet"),
    [
        (
            lambda w: Qwen3Weights.from_state_dict([1, 2], TINY),
            "a state dict maps names to tensors, got list",
        ),
        (lambda w: Qwen3Weights.from_state_dict(w.state_dict(), TINY, dtype="bf16"), "not bf16"),
        (lambda w: Qwen3Weights.from_state_dict(w.state_dict(), "tiny"), "Qwen3Config, got str"),
        (lambda w: Qwen3Weights.random(TINY, dtype=torch.float16), "not torch.float16"),
        (lambda w: Qwen3Decoder(w.state_dict()), "Qwen3Decoder takes Qwen3Weights, got dict"),
        (lambda w: Qwen3Decoder(w, batch=0), "batch must be a whole number of at least 1, got 0"),
        (lambda w: Qwen3Decoder(w, max_seq=0), "got 0"),
    ],
)
def test_other_misfits_of_the_weights_api_are_model_errors(weights, call, snippet):
    _raised(ModelError, lambda: call(weights), snippet)


@pytest.mark.parametrize("field", ["hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size"])
def test_a_config_json_missing_a_field_is_a_config_error_naming_it(field):
    fields = {k: v for k, v in HF_CONFIG.items() if k != field}
    err = _raised(ModelConfigError, lambda: Qwen3Config.from_hf_dict(fields), f"has no '{field}'")
    assert "num_attention_heads" in err.hint  # the fields a config.json holds


@pytest.mark.parametrize(
    ("change", "snippet"),
    [
        ({"hidden_size": "256"}, "hidden_size='256'"),
        ({"num_attention_heads": 0}, "num_heads=0"),
        ({"num_key_value_heads": 3}, "must be a multiple of num_kv_heads (3)"),
        ({"rms_norm_eps": -1.0}, "rms_norm_eps=-1.0"),
    ],
)
def test_a_config_json_value_of_the_wrong_kind_is_a_config_error(change, snippet):
    _raised(ModelConfigError, lambda: Qwen3Config.from_hf_dict({**HF_CONFIG, **change}), snippet)


def test_a_config_json_that_is_not_json_is_a_config_error(tmp_path, weights):
    weights.save_safetensors(tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text("{not json")
    _raised(ModelConfigError, lambda: Qwen3Weights.from_safetensors(tmp_path), "is not JSON")


def test_a_config_json_missing_a_field_beside_a_checkpoint_is_a_config_error(tmp_path, weights):
    weights.save_safetensors(tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(
        json.dumps({k: v for k, v in HF_CONFIG.items() if k != "vocab_size"})
    )
    _raised(ModelConfigError, lambda: Qwen3Weights.from_safetensors(tmp_path), "has no 'vocab_size'")


def test_an_unknown_configuration_name_is_still_a_key_error():
    err = _raised(UnknownModelError, lambda: get_config("qwen9"), "no Qwen3 configuration 'qwen9'")
    assert isinstance(err, KeyError) and "qwen3-8b" in err.hint
