"""The reference model the tests compare with: transformers' ``Qwen3ForCausalLM`` at a named
configuration, built with a fixed seed (its norm weights moved off one, so that they matter)."""

import torch
from transformers import Qwen3Config as HfQwen3Config
from transformers import Qwen3ForCausalLM

from pypto.models.qwen3 import get_config


def hf_model(name: str = "tiny", seed: int = 0, dtype: torch.dtype = torch.float32) -> Qwen3ForCausalLM:
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(HfQwen3Config(**get_config(name).hf_kwargs(), attn_implementation="eager"))
    with torch.no_grad():
        for key, param in model.named_parameters():
            if "norm" in key:
                param.copy_(1.0 + 0.1 * torch.randn_like(param))
    return model.to(dtype).eval()
