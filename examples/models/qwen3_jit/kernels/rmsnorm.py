"""RMSNorm, statistics in FP32 as Qwen3 has it (``rmsnorm`` on tensors, ``rmsnorm_rows`` on the
per-head tiles of the q/k norm). Written in
``packages/pypto-models/src/pypto/models/qwen3/kernels/rmsnorm.py``.
"""

from pypto.models.qwen3.kernels.rmsnorm import rmsnorm, rmsnorm_rows

__all__ = ["rmsnorm", "rmsnorm_rows"]
