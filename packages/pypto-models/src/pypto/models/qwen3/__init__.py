"""Qwen3 written in ``pl``: named configurations, weights, the decode kernels (one module per part
of the layer) and the decode path with greedy generation."""

from pypto.models.errors import ModelConfigError, ModelError, TokenError, UnknownModelError, WeightError
from pypto.models.qwen3.config import CONFIGS, Qwen3Config, get_config
from pypto.models.qwen3.qwen3_decode import Qwen3Decoder, decode_step, decoder_layer
from pypto.models.qwen3.weights import Qwen3Weights, rope_tables

__all__ = [
    "CONFIGS",
    "ModelConfigError",
    "ModelError",
    "Qwen3Config",
    "Qwen3Decoder",
    "Qwen3Weights",
    "TokenError",
    "UnknownModelError",
    "WeightError",
    "decode_step",
    "decoder_layer",
    "get_config",
    "rope_tables",
]
