"""Text views of a compiled program: the per-space memory map and the compile report."""

from __future__ import annotations

from collections.abc import Sequence

from pypto.ir import Function, MemoryPlan, MemorySpace, Target
from pypto.runtime import CompiledProgram
from pypto.runtime.pipelines import pipeline_of


def table(rows: Sequence[Sequence[object]], indent: str = "") -> list[str]:
    """Rows as left-aligned columns (the first row is the header)."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]


def _plan(fn: Function) -> MemoryPlan | None:
    plan = fn.attrs.get("memory_plan")
    return plan if isinstance(plan, MemoryPlan) else None


def _space_rows(plan: MemoryPlan, space: MemorySpace) -> list[list[object]]:
    """The reserved windows at the bottom of ``space``, then its buffers by address."""
    rows: list[list[object]] = []
    bottom = 0
    for reservation in plan.reservations:
        if reservation.space is space:
            how = "automatic" if reservation.automatic else "requested"
            rows.append(
                [space.name, f"0x{bottom:05x}", reservation.size, f"[reserved] {reservation.reason} ({how})"]
            )
            bottom += reservation.size
    buffers = sorted(
        (a for a in plan.allocations.values() if a.space is space), key=lambda a: (a.offset, a.name)
    )
    rows += [[space.name, f"0x{a.offset:05x}", a.size, a.name] for a in buffers]
    return rows


def memory_map(functions: Sequence[Function], target: Target) -> str:
    """Each kernel's on-chip buffers and reserved rings, space by space, with each space's peak."""
    lines: list[str] = []
    for fn in functions:
        plan = _plan(fn)
        if plan is None:
            continue
        spaces = [s for s in MemorySpace if s in plan.peak or any(r.space is s for r in plan.reservations)]
        rows: list[list[object]] = [["SPACE", "ADDRESS", "BYTES", "BUFFER"]]
        for space in spaces:
            rows += _space_rows(plan, space)
        lines.append(f"{fn.name} ({fn.kind.value} kernel)")
        lines += table(rows, "  ")
        for space in spaces:
            peak, usable = plan.peak.get(space, 0), target.usable(space)
            lines.append(f"  {space.name}: peak {peak} of {usable} usable bytes ({peak / usable:.1%})")
        lines.append("")
    if not lines:
        return "no kernel has a memory plan (the pipeline ran no AllocateMemory)"
    return "\n".join(lines).rstrip()


def _usage(plan: MemoryPlan | None, target: Target) -> str:
    if plan is None:
        return ""
    spaces = [space for space in MemorySpace if space in plan.peak]
    return ", ".join(f"{space.name} {plan.peak[space]}/{target.usable(space)}" for space in spaces)


def report(compiled: CompiledProgram, target: Target) -> str:
    """What was compiled, for which platform, how long it took and how full each kernel's memory is."""
    program, config = compiled.program, compiled.config
    pipeline = [step.label for step in pipeline_of(config)]
    lines = [
        f"{program.name}: compiled for {config.platform} (target {target.name}) in "
        f"{compiled.compile_seconds * 1000:.1f} ms (disk cache: {compiled.cache})",
        f"pipeline: {', '.join(pipeline) or '(none)'}",
        "",
    ]
    rows: list[list[object]] = [["KERNEL", "KIND", "PEAK/USABLE BYTES"]]
    rows += [[fn.name, fn.kind.value, _usage(_plan(fn), target)] for fn in program.functions.values()]
    return "\n".join(lines + table(rows))
