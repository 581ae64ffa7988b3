"""pypto.passes — the pass manager and the lowering pipeline (needs only pypto.ir)."""

from pypto.ir.errors import CompileWarning
from pypto.passes.manager import (
    DEFAULT_PIPELINE,
    PASS_REGISTRY,
    Pass,
    PassContext,
    PassManager,
    build_pass,
    default_pipeline,
    dump_to,
    lower,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PIPELINE",
    "PASS_REGISTRY",
    "CompileWarning",
    "Pass",
    "PassContext",
    "PassManager",
    "build_pass",
    "default_pipeline",
    "dump_to",
    "lower",
]
