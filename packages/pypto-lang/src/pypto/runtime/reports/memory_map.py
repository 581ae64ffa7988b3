"""The memory map of a compiled program, as text: each kernel's on-chip buffers (address, bytes)
and reserved pipe rings, space by space, with each space's peak against the target's budget.
``pypto compile --emit memory-map`` prints it; a compiled program's output directory holds it as
``memory_map.txt``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pypto.ir import Function, MemoryPlan, MemorySpace, Target


def table(rows: Sequence[Sequence[object]], indent: str = "") -> list[str]:
    """Rows as left-aligned columns (the first row is the header)."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]


def plan_of(fn: Function) -> MemoryPlan | None:
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


def memory_map(functions: Iterable[Function], target: Target) -> str:
    """Each kernel's on-chip buffers and reserved rings, space by space, with each space's peak."""
    lines: list[str] = []
    for fn in functions:
        plan = plan_of(fn)
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
