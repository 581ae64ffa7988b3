"""Passes for runtime tests that must not depend on the real lowering passes, and a plugin that
registers one of them (``pypto_register_passes``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, ClassVar

from pypto.ir import Program
from pypto.passes import PassContext, option
from pypto.runtime import hookimpl


@dataclass(frozen=True)
class KeepProgram:
    """Returns the program unchanged."""

    name: ClassVar[str] = "KeepProgram"

    def run(self, program: Program, ctx: PassContext) -> Program:
        return program


class Tone(Enum):
    QUIET = "quiet"
    LOUD = "loud"


@dataclass(frozen=True)
class StampEntry:
    """Writes its options into the entry function's attrs (``stamp``), so a test sees that it ran
    and with which values, typed."""

    name: ClassVar[str] = "StampEntry"
    pipeline_name: ClassVar[str] = "stamp-entry"
    label: str = option("plain", help="what to write")
    times: int = option(1, minimum=1)
    loud: bool = False
    tone: Tone = Tone.QUIET

    def run(self, program: Program, ctx: PassContext) -> Program:
        entry = program.entry_function
        stamped = (*entry.attrs.get("stamp", ()), (self.label, self.times, self.loud, self.tone))
        return program.replace_function(replace(entry, attrs={**entry.attrs, "stamp": stamped}))


class PassPlugin:
    """Registers :class:`StampEntry` (and whatever else it is given)."""

    def __init__(self, *passes: Any) -> None:
        self.passes = passes or (StampEntry,)

    @hookimpl
    def pypto_register_passes(self, register: Any) -> None:
        for cls in self.passes:
            register(cls)
