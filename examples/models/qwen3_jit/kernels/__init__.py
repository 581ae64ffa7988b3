"""The decode kernels, one module per part of the layer (``pypto.models.qwen3.kernels``)."""
