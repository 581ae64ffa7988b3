"""The Qwen3 decode kernels, one module per part of the layer: ``rmsnorm``, ``projection``,
``attention``, ``mlp`` (and the token ``embedding``)."""
