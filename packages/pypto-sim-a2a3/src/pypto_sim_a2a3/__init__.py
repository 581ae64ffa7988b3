"""pypto_sim_a2a3 — the a2a3sim backend: a CPU simulator of one Ascend A2/A3 chip for PyPTO."""

from pypto_sim_a2a3.backend import A2A3SimBackend
from pypto_sim_a2a3.errors import (
    BarrierError,
    DivisionByZeroError,
    LoopStepError,
    OutOfBoundsError,
    PipeError,
    ScalarRangeError,
    UnsortedRunError,
)
from pypto_sim_a2a3.target import A2A3_TARGET

__version__ = "0.1.0"

__all__ = [
    "A2A3_TARGET",
    "A2A3SimBackend",
    "BarrierError",
    "DivisionByZeroError",
    "LoopStepError",
    "OutOfBoundsError",
    "PipeError",
    "ScalarRangeError",
    "UnsortedRunError",
    "__version__",
]
