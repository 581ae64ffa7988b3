"""Attention: q/k RMSNorm, RoPE and the KV-cache write (``rope_cache``), then decode attention
with an online softmax over cache blocks, grouped-query heads and each batch row's length read at
run time (``decode_attention``); ``attention`` launches both.

Written in ``packages/pypto-models/src/pypto/models/qwen3/kernels/attention.py``.
"""

from pypto.models.qwen3.kernels.attention import attention, decode_attention, rope_cache

__all__ = ["attention", "decode_attention", "rope_cache"]
