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


class MemoryPlanner(Enum):
    """Who places the on-chip buffers (``memory_planner=``, ``ir.compile`` and ``RunConfig``).

    ``PYPTO`` (the default): the compiler's ``AllocateMemory`` pass, inside the pass pipeline, so
    every pass dump after it carries the addresses. ``DSA_RP``: the same placement here: the
    planner already places each buffer on the bytes freed longest ago (the reuse penalty a
    dynamic-storage solver minimizes) and packs first-fit when that runs over a space. ``PTOAS``:
    the addresses are left to the code-emission step after the pipeline (the role of PTO's
    assembler), so ``AllocateMemory`` is not in the pipeline and no pass dump carries addresses;
    ``program.py``, the ``.pto`` files and the memory map of the artifacts still do."""

    PYPTO = "pypto"
    DSA_RP = "dsa_rp"
    PTOAS = "ptoas"


class DiagnosticPhase(Enum):
    """When the compiler's advisory checks (warnings and performance hints) run
    (``diagnostic_phase=``): ``NONE`` turns the channel off; any other phase leaves it on, each
    check running at the phase it is declared for (:class:`DiagnosticCheck`): ``PrePipeline``
    before the first pass, ``PostPass`` after the pass that can tell, ``PostPipeline`` on the
    lowered program. None (the default) is ``PostPipeline``."""

    NONE = "none"
    PrePipeline = "pre_pipeline"
    PostPass = "post_pass"
    PostPipeline = "post_pipeline"

    @property
    def enabled(self) -> bool:
        """Whether diagnostics are given at all."""
        return self is not DiagnosticPhase.NONE


class DiagnosticCheck(Enum):
    """An advisory check of the compiler, silenced one by one with ``disabled_diagnostics=``.

    ``UnfreedPipeTile`` (a warning, after ``StampTfree``): a tile popped from a cross-core pipe is
    not freed on every path. ``PipelineStagesCut`` (a performance hint, on the lowered program):
    a ``pl.pipeline`` loop got fewer stages than it asked for, because its buffers do not fit."""

    UnfreedPipeTile = "unfreed_pipe_tile"
    PipelineStagesCut = "pipeline_stages_cut"

    @property
    def phase(self) -> DiagnosticPhase:
        return _CHECK_PHASES[self]

    @property
    def severity(self) -> str:
        """``"Warning"`` or ``"PerfHint"``."""
        return "Warning" if self is DiagnosticCheck.UnfreedPipeTile else "PerfHint"


_CHECK_PHASES = {
    DiagnosticCheck.UnfreedPipeTile: DiagnosticPhase.PostPass,
    DiagnosticCheck.PipelineStagesCut: DiagnosticPhase.PostPipeline,
}
