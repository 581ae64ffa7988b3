"""Shapes and dtypes the kernels are specialised on: the named Qwen3 configurations (``tiny`` for
tests, the published shapes of Qwen3-0.6B, 8B and 32B).

Written in ``packages/pypto-models/src/pypto/models/qwen3/config.py``.
"""

from pypto.models.qwen3.config import CONFIGS, Qwen3Config, get_config

__all__ = ["CONFIGS", "Qwen3Config", "get_config"]
