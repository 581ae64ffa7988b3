import sys
from pathlib import Path

import pytest

# Test helper modules (models_reference) sit beside the tests.
sys.path.insert(0, str(Path(__file__).parent))

from models_reference import hf_model


@pytest.fixture(scope="session")
def tiny_hf():
    """transformers' tiny Qwen3 in FP32 (see models_reference.hf_model)."""
    return hf_model()
