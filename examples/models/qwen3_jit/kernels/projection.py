"""Mixed cube + vector projection: the mixed-kernels page's pattern at model scale.

``o_proj`` (and the MLP's ``down_proj``) compute ``residual + x @ W^T`` in one ``pl.split`` scope
per column block — the cube the product, the vector lanes the residual add — spread over the core
groups with ``pl.spmd``; ``q_proj``, ``k_proj``, ``v_proj`` and ``lm_head`` are the cube-only
form. Written in ``packages/pypto-models/src/pypto/models/qwen3/kernels/projection.py``.
"""

from pypto.models.qwen3.kernels.projection import (
    k_proj,
    lm_head,
    o_proj,
    projection,
    projection_residual,
    q_proj,
    v_proj,
)

__all__ = ["k_proj", "lm_head", "o_proj", "projection", "projection_residual", "q_proj", "v_proj"]
