"""Qwen3 weights for the ``pl`` kernels: from a transformers state dict (Hugging Face naming), a
local ``.safetensors`` checkpoint, or random by seed (for benchmarks). Nothing is downloaded.

The kernels read each kind of layer weight as one tensor with the layers stacked along the rows:
the ``[out, in]`` projection weights as ``[layers * out, in]``, the norm weights as ``[layers,
dim]``. :class:`Qwen3Weights` holds them in the model's dtype (FP32 or BF16);
:meth:`Qwen3Weights.state_dict` gives them back in Hugging Face's naming.

>>> weights = Qwen3Weights.from_state_dict(hf_model.state_dict(), get_config("tiny"))  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from pypto.models.errors import ModelConfigError, WeightError
from pypto.models.qwen3.config import Qwen3Config

# Our name -> the key under ``model.layers.{i}.`` in Hugging Face's Qwen3 state dict.
LAYER_KEYS: dict[str, str] = {
    "input_norm": "input_layernorm.weight",
    "q_proj": "self_attn.q_proj.weight",
    "k_proj": "self_attn.k_proj.weight",
    "v_proj": "self_attn.v_proj.weight",
    "q_norm": "self_attn.q_norm.weight",
    "k_norm": "self_attn.k_norm.weight",
    "o_proj": "self_attn.o_proj.weight",
    "post_norm": "post_attention_layernorm.weight",
    "gate_proj": "mlp.gate_proj.weight",
    "up_proj": "mlp.up_proj.weight",
    "down_proj": "mlp.down_proj.weight",
}
EMBED_KEY, NORM_KEY, LM_HEAD_KEY = "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"
DTYPES = (torch.float32, torch.bfloat16)


def layer_shapes(config: Qwen3Config) -> dict[str, tuple[int, ...]]:
    """The shape of each layer weight in Hugging Face's layout (norm weights are 1-D)."""
    hidden, inter, dim = config.hidden_size, config.intermediate_size, config.head_dim
    q_out, kv_out = config.num_heads * dim, config.num_kv_heads * dim
    return {
        "input_norm": (hidden,),
        "q_proj": (q_out, hidden),
        "k_proj": (kv_out, hidden),
        "v_proj": (kv_out, hidden),
        "q_norm": (dim,),
        "k_norm": (dim,),
        "o_proj": (hidden, q_out),
        "post_norm": (hidden,),
        "gate_proj": (inter, hidden),
        "up_proj": (inter, hidden),
        "down_proj": (hidden, inter),
    }


@dataclass
class Qwen3Weights:
    """Every weight of a Qwen3 model, stacked per kind as the kernels read them."""

    config: Qwen3Config
    embed: torch.Tensor  # [vocab, hidden]
    input_norm: torch.Tensor  # [layers, hidden]
    q_proj: torch.Tensor  # [layers * heads * head_dim, hidden]
    k_proj: torch.Tensor  # [layers * kv_heads * head_dim, hidden]
    v_proj: torch.Tensor  # [layers * kv_heads * head_dim, hidden]
    q_norm: torch.Tensor  # [layers, head_dim]
    k_norm: torch.Tensor  # [layers, head_dim]
    o_proj: torch.Tensor  # [layers * hidden, heads * head_dim]
    post_norm: torch.Tensor  # [layers, hidden]
    gate_proj: torch.Tensor  # [layers * intermediate, hidden]
    up_proj: torch.Tensor  # [layers * intermediate, hidden]
    down_proj: torch.Tensor  # [layers * hidden, intermediate]
    final_norm: torch.Tensor  # [1, hidden]
    lm_head: torch.Tensor  # [vocab, hidden]; the embedding itself when the model ties them

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    def layer_weights(self) -> tuple[torch.Tensor, ...]:
        """The stacked layer weights in the order the decode kernels take them."""
        return tuple(getattr(self, name) for name in LAYER_KEYS)

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_state_dict(
        cls, state_dict: dict[str, torch.Tensor], config: Qwen3Config, dtype: torch.dtype | None = None
    ) -> Qwen3Weights:
        """From a state dict in Hugging Face's naming (``Qwen3ForCausalLM.state_dict()``, or a
        ``Qwen3Model``'s without the ``model.`` prefix). ``dtype`` (FP32 or BF16) defaults to the
        checkpoint's. A missing, unexpected or misshapen tensor is a :class:`WeightError`."""
        _check_config(config)
        if not isinstance(state_dict, Mapping):
            raise WeightError.here(
                f"a state dict maps names to tensors, got {type(state_dict).__name__}",
                "pass model.state_dict() of a transformers Qwen3, or a dict in its naming",
            )
        sd = {k if k.startswith(("model.", "lm_head.")) else f"model.{k}": v for k, v in state_dict.items()}
        for key, value in sd.items():
            _check_tensor(key, value)
        if dtype is None:
            dtype = sd[EMBED_KEY].dtype if EMBED_KEY in sd else torch.float32
        _check_dtype(dtype)
        used: set[str] = set()

        def take(key: str, shape: tuple[int, ...]) -> torch.Tensor:
            if key not in sd:
                raise WeightError.here(
                    f"the checkpoint has no {key!r} (a {config_name(config)} needs it)",
                    "load a checkpoint of this configuration, or pass the configuration it was saved with",
                )
            tensor = sd[key]
            if tuple(tensor.shape) != shape:
                raise WeightError.here(
                    f"{key!r} has shape {list(tensor.shape)}; the configuration needs {list(shape)}",
                    "load a checkpoint of this configuration, or pass the configuration it was saved with",
                )
            used.add(key)
            return tensor.detach().to(dtype)

        shapes = layer_shapes(config)
        stacked = {}
        for name, suffix in LAYER_KEYS.items():
            parts = [take(f"model.layers.{i}.{suffix}", shapes[name]) for i in range(config.num_layers)]
            stacked[name] = torch.stack(parts) if len(shapes[name]) == 1 else torch.cat(parts)
        vocab_hidden = (config.vocab_size, config.hidden_size)
        embed = take(EMBED_KEY, vocab_hidden)
        final_norm = take(NORM_KEY, (config.hidden_size,)).reshape(1, -1)
        if config.tie_word_embeddings:
            lm_head = embed
            if LM_HEAD_KEY in sd:  # a tied model's state dict lists the shared tensor under both names
                take(LM_HEAD_KEY, vocab_hidden)
        else:
            lm_head = take(LM_HEAD_KEY, vocab_hidden)
        unexpected = sorted(set(sd) - used - {k for k in sd if k.endswith("rotary_emb.inv_freq")})
        if unexpected:
            more = f" and {len(unexpected) - 3} more" if len(unexpected) > 3 else ""
            raise WeightError.here(
                f"the checkpoint has tensors a {config_name(config)} does not use: "
                f"{', '.join(unexpected[:3])}{more} (biases? another architecture?)",
                "load a Qwen3 checkpoint without biases, of the configuration passed",
            )
        return cls(
            config=config,
            embed=embed.contiguous(),
            final_norm=final_norm.contiguous(),
            lm_head=lm_head.contiguous(),
            **{name: t.contiguous() for name, t in stacked.items()},
        )

    @classmethod
    def from_safetensors(
        cls, path: str | Path, config: Qwen3Config | None = None, dtype: torch.dtype | None = None
    ) -> Qwen3Weights:
        """From a local checkpoint: a ``.safetensors`` file, or a directory of them (sharded ones
        too) beside a ``config.json``. ``config`` defaults to that ``config.json``."""
        from safetensors.torch import load_file  # an optional dependency: pypto-models[weights]

        path = Path(path)
        files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
        if not files or not all(f.is_file() for f in files):
            raise WeightError.here(
                f"no .safetensors file at {path}", "pass a .safetensors file or a checkpoint directory"
            )
        if config is None:
            config_json = (path if path.is_dir() else path.parent) / "config.json"
            if not config_json.is_file():
                raise WeightError.here(
                    f"{path} has no config.json beside it", "pass config=get_config(...) or a Qwen3Config"
                )
            try:
                fields_ = json.loads(config_json.read_text())
            except json.JSONDecodeError as err:
                raise ModelConfigError.here(
                    f"{config_json} is not JSON: {err}", "write the config.json save_pretrained writes"
                ) from None
            config = Qwen3Config.from_hf_dict(fields_)
        state: dict[str, torch.Tensor] = {}
        for f in files:
            state.update(load_file(str(f)))
        return cls.from_state_dict(state, config, dtype)

    @classmethod
    def random(
        cls, config: Qwen3Config, seed: int = 0, dtype: torch.dtype = torch.float32, vocab: bool = True
    ) -> Qwen3Weights:
        """Random weights by seed, initialised as transformers initialises a Qwen3 (normal, std
        0.02), the norm weights around one: for benchmarks and tests that need no reference.
        ``vocab=False`` leaves out the embedding and the LM head (``[0, hidden]`` tensors): enough
        for :func:`~pypto.models.qwen3.decoder_layer`, not for a decode step."""
        _check_config(config)
        _check_dtype(dtype)
        generator = torch.Generator().manual_seed(seed)
        shapes = layer_shapes(config)
        stacked = {}
        for name, shape in shapes.items():
            parts = [_random(shape, generator, dtype) for _ in range(config.num_layers)]
            stacked[name] = torch.stack(parts) if len(shape) == 1 else torch.cat(parts)
        rows = config.vocab_size if vocab else 0
        embed = _random((rows, config.hidden_size), generator, dtype)
        tied = config.tie_word_embeddings
        return cls(
            config=config,
            embed=embed,
            final_norm=_random((config.hidden_size,), generator, dtype).reshape(1, -1),
            lm_head=embed if tied else _random((rows, config.hidden_size), generator, dtype),
            **stacked,
        )

    # ------------------------------------------------------------------ saving

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The weights in Hugging Face's naming and layout (what ``Qwen3ForCausalLM`` loads)."""
        config, shapes = self.config, layer_shapes(self.config)
        state: dict[str, torch.Tensor] = {}
        for name, suffix in LAYER_KEYS.items():
            per_layer = getattr(self, name).reshape(config.num_layers, *shapes[name])
            for i in range(config.num_layers):
                state[f"model.layers.{i}.{suffix}"] = per_layer[i].clone()
        state[EMBED_KEY] = self.embed.clone()
        state[NORM_KEY] = self.final_norm.reshape(-1).clone()
        if not config.tie_word_embeddings:
            state[LM_HEAD_KEY] = self.lm_head.clone()
        return state

    def save_safetensors(self, path: str | Path) -> None:
        """Write the weights as one ``.safetensors`` file in Hugging Face's naming."""
        from safetensors.torch import save_file

        save_file(self.state_dict(), str(path))

    def __repr__(self) -> str:
        sizes = ", ".join(
            f"{f.name}={list(getattr(self, f.name).shape)}" for f in fields(self) if f.name != "config"
        )
        return f"Qwen3Weights({config_name(self.config)}, {self.dtype}, {sizes})"


def _check_config(config: object) -> None:
    if not isinstance(config, Qwen3Config):
        raise ModelConfigError.here(
            f"the configuration is a Qwen3Config, got {type(config).__name__}",
            'pass get_config("tiny") (or another name), or Qwen3Config.from_hf_dict(config_json)',
        )


def _check_dtype(dtype: object) -> None:
    if dtype not in DTYPES:
        raise WeightError.here(
            f"the kernels run FP32 or BF16 models, not {dtype}",
            "pass dtype=torch.float32 or dtype=torch.bfloat16",
        )


def _check_tensor(key: str, value: object) -> None:
    """A state dict's value is a floating-point torch tensor (a numpy array or an integer tensor is
    no weight the kernels can read)."""
    if not isinstance(value, torch.Tensor):
        convert = " (torch.from_numpy(array) makes one)" if type(value).__module__ == "numpy" else ""
        raise WeightError.here(
            f"{key!r} is a {type(value).__module__}.{type(value).__name__}, not a torch tensor",
            f"give every weight as a torch.Tensor{convert}",
        )
    if not value.dtype.is_floating_point:
        raise WeightError.here(
            f"{key!r} is a tensor of {value.dtype}; a weight is floating point",
            "load the checkpoint's floating-point weights (quantized checkpoints are not supported)",
        )


def config_name(config: Qwen3Config) -> str:
    return f"Qwen3 of {config.num_layers} layers, hidden {config.hidden_size}"


def _random(shape: tuple[int, ...], generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    values = torch.randn(shape, generator=generator, dtype=dtype)
    return (1.0 + 0.1 * values if len(shape) == 1 else 0.02 * values).to(dtype)


def rope_tables(config: Qwen3Config, max_seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The RoPE ``cos`` and ``sin`` tables ``[max_seq, head_dim]`` (FP32), one row per position,
    computed as transformers' default rotary embedding computes them."""
    dim = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.outer(torch.arange(max_seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().contiguous(), emb.sin().contiguous()
