"""Where a Qwen3 decode step's modeled time goes: per module (embedding, norm, projections,
attention, MLP, LM head; on a rank of a tensor-parallel layer, the allreduce), the modeled
tokens per second on the platform, and how much the mixed projection kernels overlap their cube
and vector work.

>>> print(DecodeProfile.of(decoder.reports[-1], batch=1).summary())  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pypto.ir import RunReport

# The kernels of each module, by the names the kernels are launched under.
MODULES: dict[str, tuple[str, ...]] = {
    "embedding": ("embed_tokens",),
    "norm": ("rmsnorm",),
    "projections": ("q_proj", "k_proj", "v_proj", "o_proj", "o_proj_partial"),
    "attention": ("rope_cache", "decode_attention"),
    "mlp": ("gate_up", "down_proj", "down_proj_partial"),
    "allreduce": ("allreduce_residual",),
    "lm_head": ("lm_head",),
}
# The mixed kernels: a projection's product on the cube, its consumer on the vector lanes.
MIXED_PROJECTIONS = ("o_proj", "gate_up", "down_proj")
_SUFFIX = re.compile(r"(_tail)?(_\d+)?$")  # a column block's tail launch; a second specialization


def kernel_family(kernel: str) -> str:
    """``o_proj_tail`` and ``rmsnorm_1`` -> ``o_proj`` and ``rmsnorm``."""
    return _SUFFIX.sub("", kernel)


def module_of(kernel: str) -> str:
    """The module a kernel belongs to (``"other"`` for a kernel of none)."""
    family = kernel_family(kernel)
    return next((module for module, kernels in MODULES.items() if family in kernels), "other")


@dataclass(frozen=True)
class MixedOverlap:
    """A mixed projection's cube-vector overlap: modeled cycles in which its cube and a vector
    lane of the same core group are busy at once, against its cube's busy cycles."""

    kernel: str
    overlap_cycles: int
    cube_cycles: int
    vector_cycles: int

    @property
    def fraction(self) -> float:
        """The overlap as a fraction of the shorter side's busy time (1.0: fully hidden)."""
        shorter = min(self.cube_cycles, self.vector_cycles)
        return self.overlap_cycles / shorter if shorter else 0.0


@dataclass(frozen=True)
class DecodeProfile:
    """The modeled time of one decode step (or the mean of several), split by module."""

    platform: str
    clock_mhz: float
    batch: int
    steps: int
    total_cycles: int  # per step
    modules: dict[str, int]  # per step: modeled cycles in which a task of the module runs
    mixed: tuple[MixedOverlap, ...]

    @classmethod
    def of(cls, reports: RunReport | Sequence[RunReport], batch: int) -> DecodeProfile:
        """The profile of one step's report, or the per-step mean of several steps' reports."""
        runs = [reports] if isinstance(reports, RunReport) else list(reports)
        if not runs:
            raise ValueError("a decode profile needs at least one step's report")
        steps = len(runs)
        modules: dict[str, int] = {}
        for report in runs:
            for module, cycles in _module_spans(report).items():
                modules[module] = modules.get(module, 0) + cycles
        mixed = []
        for family in MIXED_PROJECTIONS:
            overlap = cube = vector = 0
            for report in runs:
                kernels = {t.kernel for t in report.tasks if kernel_family(t.kernel) == family}
                overlap += report.overlap_cycles(kernels, per_group=True)
                for s in report.timeline:
                    if s.task in kernels and not s.stalled:
                        if s.core.endswith(".AIC"):
                            cube += s.cycles
                        else:
                            vector += s.cycles
            if cube or vector:
                mixed.append(MixedOverlap(family, overlap // steps, cube // steps, vector // steps))
        return cls(
            platform=runs[0].platform,
            clock_mhz=runs[0].clock_mhz,
            batch=batch,
            steps=steps,
            total_cycles=sum(r.total_cycles for r in runs) // steps,
            modules={m: c // steps for m, c in modules.items()},
            mixed=tuple(mixed),
        )

    @property
    def step_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    @property
    def tokens_per_second(self) -> float:
        """Modeled tokens per second: one token per batch row each step."""
        return self.batch * self.clock_mhz * 1e6 / self.total_cycles if self.total_cycles else 0.0

    def summary(self) -> str:
        steps = f"mean of {self.steps} steps" if self.steps > 1 else "one step"
        lines = [
            f"qwen3 decode on {self.platform} ({steps}, batch {self.batch}): {self.total_cycles} modeled "
            f"cycles per step ({self.step_us:.1f} modeled us) = "
            f"{self.tokens_per_second:,.0f} modeled tokens/s",
            f"  {'module':<12} {'modeled cycles':>14} {'share':>7}   "
            "(cycles in which a task of the module runs)",
        ]
        for module in [*MODULES, "other"]:
            if module in self.modules:
                cycles = self.modules[module]
                share = cycles / self.total_cycles if self.total_cycles else 0.0
                lines.append(f"  {module:<12} {cycles:>14} {share:>7.1%}")
        if self.mixed:
            lines.append(
                "  mixed projections, cube and vector overlapping (modeled cycles, summed over core groups):"
            )
            for m in self.mixed:
                lines.append(
                    f"    {m.kernel:<10} cube busy {m.cube_cycles:>9}  vector busy {m.vector_cycles:>9}  "
                    f"both at once {m.overlap_cycles:>9} ({m.fraction:.0%} of the shorter side)"
                )
        return "\n".join(lines)


def _module_spans(report: RunReport) -> dict[str, int]:
    """Per module, the modeled cycles covered by its tasks (their union, over core groups)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for task in report.tasks:
        spans.setdefault(module_of(task.kernel), []).append((task.start_cycle, task.end_cycle))
    covered: dict[str, int] = {}
    for module, intervals in spans.items():
        total, end = 0, None
        for start, stop in sorted(intervals):
            if end is None or start > end:
                total += stop - start
                end = stop
            elif stop > end:
                total += stop - end
                end = stop
        covered[module] = total
    return covered
