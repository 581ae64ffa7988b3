"""Named Qwen3 configurations: a ``tiny`` one for tests and the published shapes of Qwen3-0.6B,
Qwen3-8B and Qwen3-32B (their ``config.json`` on the Hugging Face hub).

``get_config("qwen3-8b")`` returns a :class:`Qwen3Config`; ``config.hf_kwargs()`` gives the keyword
arguments of ``transformers.Qwen3Config`` for the same model, which is how the tests build the
reference model.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, replace
from typing import Any

from pypto.models.errors import ModelConfigError, UnknownModelError

# config.json's fields the kernels need, by their Hugging Face names (the others have defaults).
REQUIRED_FIELDS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "vocab_size",
)


@dataclass(frozen=True)
class Qwen3Config:
    """The shape of a Qwen3 decoder: what the kernels are specialised on."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 40960

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelConfigError.here(
                    f"Qwen3Config {name}={value!r}: it must be a whole number of at least 1",
                    "check the configuration's value (a config.json holds it as a JSON integer)",
                )
        for name in ("rms_norm_eps", "rope_theta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ModelConfigError.here(
                    f"Qwen3Config {name}={value!r}: it must be a positive number", "check the configuration"
                )
        if self.num_heads % self.num_kv_heads:
            raise ModelConfigError.here(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads}): "
                "each KV head serves a group of query heads",
                "use a head count the KV head count divides",
            )

    @property
    def group_size(self) -> int:
        """Query heads per KV head (grouped-query attention)."""
        return self.num_heads // self.num_kv_heads

    def with_layers(self, num_layers: int) -> Qwen3Config:
        """The same shapes with another number of layers (a one-layer benchmark of a big model)."""
        return replace(self, num_layers=num_layers)

    def hf_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``transformers.Qwen3Config`` for this model."""
        return {
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_position_embeddings": self.max_position_embeddings,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_hf_dict(cls, hf: dict[str, Any]) -> Qwen3Config:
        """From a Hugging Face ``config.json`` (or ``transformers.Qwen3Config.to_dict()``)."""
        given: object = hf  # a user's value, whatever the annotation says
        if not isinstance(given, dict):
            raise ModelConfigError.here(
                f"a Qwen3 config is a dict of config.json's fields, got {type(given).__name__}",
                "pass json.load(open('config.json')) or transformers' config.to_dict()",
            )
        missing = [name for name in REQUIRED_FIELDS if name not in hf]
        if missing:
            raise ModelConfigError.here(
                f"the Qwen3 config has no {', '.join(map(repr, missing))}",
                f"a Qwen3 config.json holds {', '.join(REQUIRED_FIELDS)} (optional: num_key_value_heads, "
                "head_dim, rms_norm_eps, rope_theta, tie_word_embeddings, max_position_embeddings)",
            )
        rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
        kind = rope.get("rope_type", rope.get("type", "default"))
        if kind != "default":
            raise ModelConfigError.here(
                f"rope_type {kind!r} is not supported: the kernels apply the default RoPE",
                "use a checkpoint with the default rotary embedding",
            )
        heads = hf["num_attention_heads"]
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
            raise ModelConfigError.here(
                f"Qwen3Config num_heads={heads!r}: it must be a whole number of at least 1",
                "check config.json's num_attention_heads",
            )
        theta = rope.get("rope_theta", hf.get("rope_theta", 1_000_000.0))
        return cls(
            hidden_size=hf["hidden_size"],
            intermediate_size=hf["intermediate_size"],
            num_layers=hf["num_hidden_layers"],
            num_heads=hf["num_attention_heads"],
            num_kv_heads=hf.get("num_key_value_heads", hf["num_attention_heads"]),
            head_dim=hf.get("head_dim") or _head_dim(hf["hidden_size"], heads),
            vocab_size=hf["vocab_size"],
            rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
            rope_theta=_number(theta),
            tie_word_embeddings=hf.get("tie_word_embeddings", False),
            max_position_embeddings=hf.get("max_position_embeddings", 40960),
        )


_COUNTS = (
    "hidden_size",
    "intermediate_size",
    "num_layers",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
)


def _number(value: Any) -> Any:
    """A JSON number as a float; anything else as it is, for Qwen3Config to name."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _head_dim(hidden: Any, heads: int) -> Any:
    """hidden_size // heads when config.json gives no head_dim (a wrong hidden_size is left for
    Qwen3Config to name)."""
    return hidden // heads if isinstance(hidden, int) and not isinstance(hidden, bool) else hidden


CONFIGS: dict[str, Qwen3Config] = {
    # For tests: every kernel at a size the simulator runs in well under a second.
    "tiny": Qwen3Config(
        hidden_size=256,
        intermediate_size=512,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=64,
        vocab_size=1024,
        max_position_embeddings=512,
    ),
    "qwen3-0.6b": Qwen3Config(
        hidden_size=1024,
        intermediate_size=3072,
        num_layers=28,
        num_heads=16,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=True,
    ),
    "qwen3-8b": Qwen3Config(
        hidden_size=4096,
        intermediate_size=12288,
        num_layers=36,
        num_heads=32,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
    "qwen3-32b": Qwen3Config(
        hidden_size=5120,
        intermediate_size=25600,
        num_layers=64,
        num_heads=64,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=151936,
    ),
}


def get_config(name: str) -> Qwen3Config:
    """The named configuration (``tiny``, ``qwen3-0.6b``, ``qwen3-8b``, ``qwen3-32b``; any case,
    ``Qwen3-8B`` too); an unknown name is a ``KeyError`` that lists them and the nearest one."""
    key = name.lower()
    if key in CONFIGS:
        return CONFIGS[key]
    close = difflib.get_close_matches(key, list(CONFIGS), n=1)
    nearest = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownModelError.here(
        f"no Qwen3 configuration {name!r}{nearest}", f"the configurations: {', '.join(CONFIGS)}"
    )
