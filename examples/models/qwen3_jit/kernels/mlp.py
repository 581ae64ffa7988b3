"""MLP (SwiGLU): the mixed gate/up projection with ``silu(gate) * up`` on the vector lanes, and the
mixed down projection with the residual. Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/mlp.py``.
"""

from pypto.models.qwen3.kernels.mlp import down_proj, mlp, project_gate_up

__all__ = ["down_proj", "mlp", "project_gate_up"]
