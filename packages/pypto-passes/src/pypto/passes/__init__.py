"""pypto.passes — the pass manager, the pass registry and the lowering pipeline (needs only pypto.ir).

>>> lower(program, target, pipeline="outline-scopes,tile-matmul{k_block=128}")  # doctest: +SKIP
"""

from pypto.ir.compile_options import DiagnosticPhase
from pypto.ir.errors import CompileWarning
from pypto.passes.manager import Pass, PassContext, PassManager, dump_to, roundtrip_check
from pypto.passes.options import PassOption, option
from pypto.passes.pipeline import (
    PassSpec,
    Pipeline,
    PipelineError,
    PipelineStep,
    build_pass,
    default_pipeline,
    lower,
    parse_pipeline,
    parse_text,
    resolve,
)
from pypto.passes.registry import (
    BUILT_IN_PASSES,
    DEFAULT_PIPELINE,
    PASS_REGISTRY,
    PassEntry,
    PassRegistrationError,
    PassRegistry,
)

__version__ = "0.1.0"

__all__ = [
    "BUILT_IN_PASSES",
    "DEFAULT_PIPELINE",
    "PASS_REGISTRY",
    "CompileWarning",
    "DiagnosticPhase",
    "Pass",
    "PassContext",
    "PassEntry",
    "PassManager",
    "PassOption",
    "PassRegistrationError",
    "PassRegistry",
    "PassSpec",
    "Pipeline",
    "PipelineError",
    "PipelineStep",
    "build_pass",
    "default_pipeline",
    "dump_to",
    "lower",
    "option",
    "parse_pipeline",
    "parse_text",
    "resolve",
    "roundtrip_check",
]
