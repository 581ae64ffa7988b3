"""Text views of a compiled program: the per-space memory map and the compile report."""

from __future__ import annotations

from pypto.ir import MemoryPlan, MemorySpace, Target
from pypto.runtime import CompiledProgram
from pypto.runtime.compiling.pipelines import pipeline_of
from pypto.runtime.reports.memory_map import memory_map, plan_of, table

__all__ = ["memory_map", "report", "table"]


def _usage(plan: MemoryPlan | None, target: Target) -> str:
    if plan is None:
        return ""
    spaces = [space for space in MemorySpace if space in plan.peak]
    return ", ".join(f"{space.name} {plan.peak[space]}/{target.usable(space)}" for space in spaces)


def report(compiled: CompiledProgram, target: Target) -> str:
    """What was compiled, for which platform, how long it took and how full each kernel's memory is."""
    program, config = compiled.lowered, compiled.config
    pipeline = [step.label for step in pipeline_of(config)]
    lines = [
        f"{program.name}: compiled for {config.platform} (target {target.name}) in "
        f"{compiled.compile_seconds * 1000:.1f} ms (disk cache: {compiled.cache})",
        f"pipeline: {', '.join(pipeline) or '(none)'}",
        "",
    ]
    rows: list[list[object]] = [["KERNEL", "KIND", "PEAK/USABLE BYTES"]]
    rows += [[fn.name, fn.kind.value, _usage(plan_of(fn), target)] for fn in program.functions.values()]
    return "\n".join(lines + table(rows))
