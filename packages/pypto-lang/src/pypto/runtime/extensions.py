"""Names that packages above the runtime offer to it (the entry-point group ``pypto.runtime``; see
:mod:`pypto.ir.extensions`): ``CompiledProgram.validate_ir`` runs :mod:`pypto.debug`'s per-pass
check, which reads the dumps back with the language's parser, a floor above the runtime."""

from pypto.ir.extensions import Extensions

RUNTIME = Extensions("pypto.runtime")
