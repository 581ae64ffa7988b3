"""pypto.debug — running the IR's meaning on the host, to find where a wrong number comes from.

:func:`torch_codegen` writes an IR program (or one function), before or after the passes, as an
executable Python/torch program; :func:`validate_pass_ir_codegen_results` runs it for every pass
dump and names the first pass whose result differs from the expected tensors (see
``docs/precision.md``).

>>> from pypto.debug import torch_codegen
>>> ns = {}; exec(torch_codegen(kernel.lower(a, b, out)), ns); ns["kernel"](a, b, out)  # doctest: +SKIP
"""

from pypto.debug.codegen import CodegenError, torch_codegen
from pypto.debug.validate import (
    PassResultMismatch,
    ValidationInputError,
    validate_pass_ir_codegen_results,
    validate_program,
)

__all__ = [
    "CodegenError",
    "PassResultMismatch",
    "ValidationInputError",
    "torch_codegen",
    "validate_pass_ir_codegen_results",
    "validate_program",
]
