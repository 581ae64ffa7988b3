"""The option values of ``pypto.ir.compile`` and ``RunConfig``, as PyPTO code spells them.

Plain data, so that the compiler floor can name them in signatures: ``BackendType`` (which chip
family a program is compiled for), ``OptimizationStrategy`` (which pass pipeline) and
``VerificationLevel`` (how much the pass manager checks between passes). ``pypto.backend``
re-exports ``BackendType`` with what the installed backends make of it.
"""

from __future__ import annotations

from enum import Enum


class BackendType(Enum):
    """A family of Ascend chips. ``Ascend910B`` is A2/A3 (platforms ``a2a3``, ``a2a3sim``);
    ``Ascend950`` is A5. ``chip`` is the name of the :class:`~pypto.ir.Target` a platform of the
    family compiles for."""

    Ascend910B = "a2a3"
    Ascend950 = "a5"

    @property
    def chip(self) -> str:
        return self.value

    @property
    def generation(self) -> str:
        """The generation names users know the family by: ``"A2/A3"``, ``"A5"``."""
        return {"a2a3": "A2/A3", "a5": "A5"}[self.value]


class OptimizationStrategy(Enum):
    """Which pass pipeline ``pypto.ir.compile`` runs. ``Default``: the pipeline the platform's
    backend asks for, else the default pipeline (``pypto passes`` lists it); this compiler has
    one pipeline, so no other strategy exists yet."""

    Default = "default"


class PassDumpLevel(Enum):
    """How much ``dump_passes=`` writes (``ir.compile``, ``RunConfig``): ``NONE`` nothing (as
    ``False``), ``CONCISE`` the program after each pass (as ``True``), ``EXPLICIT`` the same with
    every tile's memory space and layout written out. The printer here always writes them out,
    so ``EXPLICIT`` and ``CONCISE`` dumps are the same files."""

    NONE = "none"
    CONCISE = "concise"
    EXPLICIT = "explicit"

    @property
    def dumps(self) -> bool:
        """Whether this level writes any dump."""
        return self is not PassDumpLevel.NONE


class VerificationLevel(Enum):
    """What the pass manager checks between passes.

    ``NONE``: nothing (the verifier does not run). ``BASIC`` (the default): the IR verifier before
    the first pass and after each pass. ``ROUNDTRIP``: ``BASIC``, and after each pass the program is
    printed, parsed back and compared with the program the pass produced.
    """

    NONE = "none"
    BASIC = "basic"
    ROUNDTRIP = "roundtrip"


class DiagnosticPhase(Enum):
    """Where the compiler's advisory diagnostics (its ``CompileWarning`` s and performance hints)
    are gated (``RunConfig(diagnostic_phase=...)``, ``PYPTO_WARNING_LEVEL``). ``NONE`` turns the
    channel off. ``PRE_PIPELINE`` (the default), ``POST_PASS`` and ``POST_PIPELINE`` leave it on:
    each of this compiler's checks runs where it can (the parser's on the program as written, a
    pass's as it transforms, the hints on the lowered program), so the three gate alike."""

    NONE = "none"
    PRE_PIPELINE = "pre_pipeline"
    POST_PASS = "post_pass"
    POST_PIPELINE = "post_pipeline"

    @property
    def enabled(self) -> bool:
        """Whether diagnostics are given at all."""
        return self is not DiagnosticPhase.NONE
