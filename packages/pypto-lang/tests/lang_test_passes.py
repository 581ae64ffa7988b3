"""A pass for runtime tests that must not depend on the real lowering passes."""

from dataclasses import dataclass

from pypto.ir import Program
from pypto.passes import PassContext


@dataclass(frozen=True)
class KeepProgram:
    """Returns the program unchanged."""

    name: str = "KeepProgram"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return program
