"""Qwen3 written in ``pl``: named configurations and the decode kernels, one module per part."""

from pypto.models.qwen3.config import CONFIGS, Qwen3Config, get_config

__all__ = ["CONFIGS", "Qwen3Config", "get_config"]
