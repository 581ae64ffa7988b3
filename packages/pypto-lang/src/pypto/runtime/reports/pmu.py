"""``pmu.csv``: what a core's performance-monitor counters would show, per hardware pipe, as far as
the backend's cost model knows it. Nothing is read from a chip: every figure is modeled cycles
from the run's timeline (:attr:`pypto.ir.RunReport.timeline`).

Level 1 (``RunConfig(enable_pmu=1)``): per core, per pipe, the ops run, their busy cycles and the
stall cycles the pipe spent waiting before them (for another pipe's flag or another core).
Level 2 adds, under each pipe, one row per op (with its op class, the op table's cost class).

>>> print(pmu_csv(kernel.last_report, level=2))  # doctest: +SKIP
core,pipe,op_class,op,count,busy_cycles,stall_cycles
cg0.AIC,MTE2,,,34,48410,0
cg0.AIC,MTE2,load,tile.load,34,48410,0
...

Slices are summed per core and pipe, never assumed disjoint: a core whose pipes overlap in time
(each pipe its own queue, as on the chip) counts each pipe's own cycles, so the busy cycles of a
core's pipes add up to the cycles of the ops it ran, not to its wall time.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from pypto.ir import PyptoError, RunReport
from pypto.ir.backend import Slice
from pypto.ir.ops.spec import get_op
from pypto.runtime.reports.timeline import core_order, on_host

# The hardware pipes of an AI core, in dataflow order (platform docs, "Pipes inside a core").
PIPES = ("MTE2", "MTE1", "M", "V", "FIX", "MTE3", "S")
NO_PIPE = "-"  # stall time no pipe can be named for (nothing ran after it on that core)
# The cost model's unit of a slice -> the pipe it runs on. A unit already named as a pipe maps to
# itself, so a simulator that names its units after the pipes needs no change here.
UNIT_PIPES = {
    "MTE2": "MTE2",
    "MTE1": "MTE1",
    "CUBE": "M",
    "VECTOR": "V",
    "FIXPIPE": "FIX",
    "MTE3": "MTE3",
    "SCALAR": "S",
}
LEVELS = (0, 1, 2)
COLUMNS = ("core", "pipe", "op_class", "op", "count", "busy_cycles", "stall_cycles")


def pipe_of(unit: str) -> str:
    """The pipe a slice of ``unit`` runs on: ``pipe_of("CUBE") == "M"``; ``-`` for none."""
    return UNIT_PIPES.get(unit, unit if unit in PIPES else NO_PIPE)


def stalled_ops(timeline: list[Slice]) -> dict[int, Slice | None]:
    """For each stall slice (by its index in ``timeline``), the op it held up: the op that starts
    when the stall ends on the pipe the stall names (a ``wait for ...`` slice sits on the pipe that
    waited), else on the same core, preferring the one at the stall's source line (the blocked
    op's); None when nothing starts then."""
    starts: dict[tuple[str, int], list[Slice]] = {}
    for s in timeline:
        if not s.stalled:
            starts.setdefault((s.core, s.start), []).append(s)
    held: dict[int, Slice | None] = {}
    for index, s in enumerate(timeline):
        if s.stalled:
            after = starts.get((s.core, s.end), [])
            on_pipe = [op for op in after if s.pipe is not None and op.pipe == s.pipe]
            after = on_pipe or after
            held[index] = next((op for op in after if op.source == s.source), after[0] if after else None)
    return held


@dataclass
class Counter:
    """One row's counts: ops run, their busy cycles, stall cycles before them."""

    count: int = 0
    busy_cycles: int = 0
    stall_cycles: int = 0


def pmu_counters(report: RunReport) -> dict[str, dict[tuple[str, str], Counter]]:
    """Per core (``cg0.AIC``): per ``(pipe, op)`` its counter; stalls no op follows count under
    ``(NO_PIPE, "")``."""
    held = stalled_ops(report.timeline)
    counters: dict[str, dict[tuple[str, str], Counter]] = {}
    for index, s in enumerate(report.timeline):
        if on_host(s.core):
            continue  # the AICPU threads have no AI-core pipes
        mine = counters.setdefault(s.core, {})
        if s.stalled:
            op = held[index]
            if op is not None:
                key = (pipe_of(op.pipe or op.unit), op.name)
            else:
                key = (pipe_of(s.pipe) if s.pipe else NO_PIPE, "")
            mine.setdefault(key, Counter()).stall_cycles += s.cycles
        else:
            counter = mine.setdefault((pipe_of(s.pipe or s.unit), s.name), Counter())
            counter.count += 1
            counter.busy_cycles += s.cycles
    return counters


def pmu_rows(report: RunReport, level: int = 1) -> list[dict[str, str | int]]:
    """The rows of ``pmu.csv`` (keys: :data:`COLUMNS`): per core that ran, one row per pipe (every
    pipe, zeros included; ``-`` only when it has stall cycles), at level 2 each followed by one
    row per op run on that pipe, busiest first."""
    rows: list[dict[str, str | int]] = []
    counters = pmu_counters(report)
    for core in sorted(counters, key=core_order):
        by_pipe: dict[str, dict[str, Counter]] = {}
        for (pipe, op), counter in counters[core].items():
            by_pipe.setdefault(pipe, {})[op] = counter
        pipes = list(PIPES) + sorted(p for p in by_pipe if p not in PIPES)
        for pipe in pipes:
            ops = by_pipe.get(pipe, {})
            if pipe == NO_PIPE and not ops:
                continue
            total = Counter(
                sum(c.count for c in ops.values()),
                sum(c.busy_cycles for c in ops.values()),
                sum(c.stall_cycles for c in ops.values()),
            )
            rows.append(_row(core, pipe, "", "", total))
            if level >= 2:
                ranked = sorted(ops.items(), key=lambda item: (-item[1].busy_cycles, item[0]))
                rows += [_row(core, pipe, _op_class(op), op, counter) for op, counter in ranked if op]
    return rows


def pmu_csv(report: RunReport, level: int = 1) -> str:
    """``pmu.csv`` as text: a header of :data:`COLUMNS`, then :func:`pmu_rows`."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(pmu_rows(report, level))
    return text.getvalue()


def _row(core: str, pipe: str, op_class: str, op: str, counter: Counter) -> dict[str, str | int]:
    return {
        "core": core,
        "pipe": pipe,
        "op_class": op_class,
        "op": op,
        "count": counter.count,
        "busy_cycles": counter.busy_cycles,
        "stall_cycles": counter.stall_cycles,
    }


def _op_class(op: str) -> str:
    """The op table's cost class of ``op`` (``matmul``, ``vector``, ``load``, ``none`` for one the
    cost model charges as scalar work); ``-`` for a name the op table does not know."""
    try:
        return get_op(op).cost
    except PyptoError:
        return "-"
