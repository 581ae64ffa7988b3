"""``scope_stats.jsonl`` and ``scope_stats.png``: how full the run's windows got. Three kinds of
window bound how far ahead a program can run on the chip, and each has a high-water mark:

- the **task window**: tasks the orchestration submitted and the scheduler has not retired yet
  (in all, and per core group: blocks started on the group whose task has not retired); and the
  runtime's four rings (``task_window_max``, ``heap_max``, ``dep_pool_max``: the sizes the run got,
  indexed by ring 0..3, and ``*_peak``: the most each held), see :mod:`pypto.runtime.running.rings`;
- each **pipe ring**: slots in use (being filled, ready, or popped and not yet freed);
- each core's **heaps**: per on-chip memory space, the top of the bytes in use (the pipe rings at
  the bottom, the tiles above them), as the kernel's memory plan lays it out and as the run
  touched it.

``scope_stats.jsonl`` holds one JSON object per line: a ``run`` record (the high-water marks of the
whole run), one ``kernel`` record per kernel (launches, modeled cycles, share of the run) and one
``launch`` record per task block (its modeled start and end, the task window when it started, the
peaks of its rings and its cores' heaps). ``scope_stats.png`` draws the three over modeled time.

>>> lines = scope_stats_lines(kernel.last_report)  # doctest: +SKIP
>>> lines[0]["task_window"]["peak"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import RunReport
from pypto.ir.backend import HeapUse, RingTrack, TaskRecord
from pypto.runtime.reports.timeline import core_order

Steps = list[tuple[int, int]]  # (modeled cycle, value from then on), in cycle order
Interval = tuple[int, int, int]  # (start, end, value) of a piecewise-constant quantity
RUN, KERNEL, LAUNCH = "run", "kernel", "launch"


# ---------------------------------------------------------------- the windows over time


def task_window(report: RunReport) -> Steps:
    """Tasks submitted and not yet retired, from each change on: the orchestration's task window."""
    events = [(task.submit_cycle, +1) for task in report.submitted]
    events += [(task.retire_cycle, -1) for task in report.submitted if task.retire_cycle is not None]
    return _count_steps(events)


def group_windows(report: RunReport) -> dict[int, Steps]:
    """Per core group: blocks started on it whose task has not retired yet. A group takes its next
    block as soon as its cores are free, so a task retired late (the scheduler busy, an spmd task
    waiting for its last block) keeps more than one there."""
    retired = {task.task_id: task.retire_cycle for task in report.submitted}
    events: dict[int, list[tuple[int, int]]] = {}
    for block in report.tasks:
        mine = events.setdefault(block.core_group, [])
        mine.append((block.start_cycle, +1))
        end = retired.get(block.task_id)
        if end is not None:
            mine.append((end, -1))
    return {group: _count_steps(mine) for group, mine in sorted(events.items())}


def peak(steps: Steps) -> tuple[int, int | None]:
    """The highest value of ``steps`` and the first cycle it was reached (0, None for no steps)."""
    best, at = 0, None
    for cycle, value in steps:
        if value > best:
            best, at = value, cycle
    return best, at


def value_at(steps: Steps, cycle: int) -> int:
    """The value of ``steps`` at ``cycle`` (0 before the first step)."""
    index = bisect_right(steps, (cycle, math.inf)) - 1
    return steps[index][1] if index >= 0 else 0


def max_steps(intervals: Iterable[Interval]) -> Steps:
    """The highest value of the intervals in force at each moment (0 where none is)."""
    events: dict[int, list[tuple[int, int]]] = {}
    for start, end, value in intervals:
        if end > start:
            events.setdefault(start, []).append((value, +1))
            events.setdefault(end, []).append((value, -1))
    live: Counter[int] = Counter()
    steps: Steps = []
    for cycle in sorted(events):
        for value, change in events[cycle]:
            live[value] += change
            if not live[value]:
                del live[value]
        _append_step(steps, cycle, max(live, default=0))
    return steps


def _count_steps(events: list[tuple[int, int]]) -> Steps:
    """How many are in at each change, from (cycle, +1 in / -1 out) events; an exit and an entry at
    one cycle are not at once."""
    steps: Steps = []
    now = 0
    for cycle, change in sorted(events):
        now += change
        _append_step(steps, cycle, now)
    return steps


def _append_step(steps: Steps, cycle: int, value: int) -> None:
    if steps and steps[-1][0] == cycle:
        steps.pop()  # several changes at one cycle: keep where it ends up
    if not steps or steps[-1][1] != value:
        steps.append((cycle, value))


# ---------------------------------------------------------------- the records


def scope_stats_lines(report: RunReport) -> list[dict[str, Any]]:
    """The records of ``scope_stats.jsonl``: the ``run``, then each ``kernel``, then each ``launch``
    in the order the blocks started."""
    lines = [_run_record(report)]
    launches: dict[str, int] = Counter(task.kernel for task in report.tasks)
    total = report.total_cycles or 1
    for kernel, cycles in report.kernel_cycles().items():
        share = cycles / total
        lines.append(
            {
                "record": KERNEL,
                "kernel": kernel,
                "launches": launches[kernel],
                "cycles": cycles,
                "share_of_run": share,
            }
        )
    window = task_window(report)
    ring_of = {task.task_id: task.ring for task in report.submitted}
    rings = _rings_by_launch(report)
    heaps: dict[tuple[int, int], list[HeapUse]] = {}
    for heap in report.heaps:
        heaps.setdefault((heap.task_id, heap.block), []).append(heap)
    for block in report.tasks:
        key = (block.task_id, block.block)
        record = _launch_record(
            block, value_at(window, block.start_cycle), rings.get(key, []), heaps.get(key, [])
        )
        record["runtime_ring"] = ring_of.get(block.task_id, 0)
        lines.append(record)
    return lines


def write_scope_stats(report: RunReport, directory: Path, title: str = "") -> list[Path]:
    """``scope_stats.jsonl`` and ``scope_stats.png`` in ``directory``; returns their paths."""
    records = directory / "scope_stats.jsonl"
    records.write_text("".join(json.dumps(line) + "\n" for line in scope_stats_lines(report)))
    picture = directory / "scope_stats.png"
    draw_scope_stats(report, picture, title)
    return [records, picture]


def _run_record(report: RunReport) -> dict[str, Any]:
    window_peak, window_at = peak(task_window(report))
    per_group = {}
    for group, steps in group_windows(report).items():
        most, at = peak(steps)
        per_group[f"cg{group}"] = {"peak": most, "at_cycle": at}
    return {
        "record": RUN,
        "platform": report.platform,
        "modeled": report.modeled,
        "clock_mhz": report.clock_mhz,
        "total_cycles": report.total_cycles,
        "tasks": len(report.submitted) or len({task.task_id for task in report.tasks}),
        "task_window": {"peak": window_peak, "at_cycle": window_at},
        "task_window_per_core_group": per_group,
        **_runtime_rings(report),
        "rings": _ring_peaks(report.rings),
        "heaps": _heap_peaks(report.heaps, report.usable_bytes),
    }


def _runtime_rings(report: RunReport) -> dict[str, list[int]]:
    """The sizes the run's four runtime rings got (``task_window_max``, ``heap_max``,
    ``dep_pool_max``, indexed by ring 0..3) and the most each held (``*_peak``); none when the
    backend models no runtime rings."""
    rings = sorted(report.runtime_rings, key=lambda ring: ring.index)
    if not rings:
        return {}
    return {
        "task_window_max": [ring.task_window for ring in rings],
        "heap_max": [ring.heap for ring in rings],
        "dep_pool_max": [ring.dep_pool for ring in rings],
        "task_window_peak": [ring.peak_tasks for ring in rings],
        "heap_peak": [ring.peak_heap for ring in rings],
        "dep_pool_peak": [ring.peak_deps for ring in rings],
    }


def _ring_peaks(rings: list[RingTrack]) -> dict[str, dict[str, int]]:
    """Per ring (``<pipe> <core>``, over every launch that had it): its slots and most in use."""
    peaks: dict[str, dict[str, int]] = {}
    for ring in rings:
        seen = peaks.setdefault(ring.name, {"slots": ring.slots, "peak": 0})
        seen["slots"] = max(seen["slots"], ring.slots)
        seen["peak"] = max(seen["peak"], max((used for _, used in ring.samples), default=0))
    return peaks


def _heap_peaks(heaps: list[HeapUse], usable: dict[str, int]) -> dict[str, dict[str, dict[str, int]]]:
    """Per core, per memory space: the highest planned and touched top over its kernels, and the
    bytes the allocator may use there."""
    peaks: dict[str, dict[str, dict[str, int]]] = {}
    for heap in sorted(heaps, key=lambda heap: core_order(heap.core)):
        mine = peaks.setdefault(heap.core, {})
        for space in sorted(set(heap.planned) | set(heap.touched), key=_space_order):
            seen = mine.setdefault(space, {"planned": 0, "touched": 0})
            seen["planned"] = max(seen["planned"], heap.planned.get(space, 0))
            seen["touched"] = max(seen["touched"], heap.touched.get(space, 0))
            if space in usable:
                seen["usable"] = usable[space]
    return peaks


def _launch_record(
    block: TaskRecord, in_window: int, rings: list[RingTrack], heaps: list[HeapUse]
) -> dict[str, Any]:
    return {
        "record": LAUNCH,
        "task_id": block.task_id,
        "block": block.block,
        "kernel": block.kernel,
        "core_group": block.core_group,
        "start_cycle": block.start_cycle,
        "end_cycle": block.end_cycle,
        "source": block.source,
        "task_window": in_window,
        "rings": _ring_peaks(rings),
        "heaps": {
            heap.core: {
                "kernel": heap.kernel,
                "planned": _by_space(heap.planned),
                "touched": _by_space(heap.touched),
            }
            for heap in sorted(heaps, key=lambda heap: core_order(heap.core))
        },
    }


def _by_space(tops: dict[str, int]) -> dict[str, int]:
    """``tops`` in the order of the memory spaces (Vec, Mat, Left, Right, Acc, Bias)."""
    return {space: tops[space] for space in sorted(tops, key=_space_order)}


def _rings_by_launch(report: RunReport) -> dict[tuple[int, int], list[RingTrack]]:
    """Each launch's rings: a ring belongs to the block that ran on its core's group when it was
    first used (a group runs one block at a time). A ring never used belongs to none."""
    blocks: dict[int, list[TaskRecord]] = {}
    for block in report.tasks:
        blocks.setdefault(block.core_group, []).append(block)
    found: dict[tuple[int, int], list[RingTrack]] = {}
    for ring in report.rings:
        if not ring.samples:
            continue
        first = ring.samples[0][0]
        group = int(ring.owner.split(".", 1)[0].removeprefix("cg"))
        for block in blocks.get(group, []):
            if block.start_cycle <= first <= block.end_cycle:
                found.setdefault((block.task_id, block.block), []).append(ring)
                break
    return found


_SPACES = ("Vec", "Mat", "Left", "Right", "Acc", "Bias")


def _space_order(space: str) -> tuple[int, str]:
    return (_SPACES.index(space) if space in _SPACES else len(_SPACES), space)


# ---------------------------------------------------------------- the picture


def draw_scope_stats(report: RunReport, path: str | Path, title: str = "") -> None:
    """A PNG of the three windows over modeled time (matplotlib, headless): the task window (in
    all, and the fullest core group's), the fullest ring of each pipe, and per memory space the
    fullest core's heap top as a share of the bytes the allocator may use."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    panels = [
        panel for panel in (_window_panel(report), _ring_panel(report), _heap_panel(report)) if panel[1]
    ]
    figure = Figure(figsize=(12, 1.0 + 2.3 * max(len(panels), 1)), dpi=100)
    FigureCanvasAgg(figure)
    clock, until = report.clock_mhz, max(report.total_cycles, 1)
    axes_list = figure.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
    for axes, (ylabel, lines, whole) in zip(axes_list, panels, strict=False):
        for line in lines:
            xs, ys = _step_xy(line.steps, until, clock, line.scale)
            drawn = axes.step(xs, ys, where="post", label=line.label, linewidth=1.0, color=line.color)
            # Filled below, so that thousands of short launches read as a band, not as hairlines.
            axes.fill_between(xs, ys, step="post", alpha=line.fill, color=drawn[0].get_color(), linewidth=0)
        axes.set_ylabel(ylabel, fontsize=8)
        axes.set_ylim(bottom=0)
        if whole:
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(alpha=0.3)
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    if not panels:
        axes_list[0].text(
            0.5, 0.5, "no task, ring or heap was recorded", ha="center", transform=axes_list[0].transAxes
        )
    axes_list[-1].set_xlim(0, until / clock)
    axes_list[-1].set_xlabel(f"modeled time (µs at {clock:g} MHz)")
    head = f"{title}: " if title else ""
    axes_list[0].set_title(
        f"{head}task window, rings and heaps over modeled time — modeled by {report.platform}, not measured",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(str(path))


@dataclass(frozen=True)
class _Line:
    """One curve of a panel: ``steps`` times ``scale`` against modeled time."""

    label: str
    steps: Steps
    scale: float = 1.0
    color: str | None = None
    fill: float = 0.2  # the alpha below the curve; lower where curves overlap


_Panel = tuple[str, list[_Line], bool]  # y label, curves, whether its values are whole numbers


def _intervals(steps: Steps, until: int) -> list[Interval]:
    """``steps`` as (start, end, value) intervals, the last one ending at ``until``."""
    ends = [cycle for cycle, _ in steps[1:]] + [max(until, steps[-1][0] if steps else 0)]
    return [(cycle, end, value) for (cycle, value), end in zip(steps, ends, strict=True)]


def _step_xy(steps: Steps, until: int, clock_mhz: float, scale: float) -> tuple[list[float], list[float]]:
    """Points for ``axes.step(where="post")`` from cycle 0 to ``until``, in modeled µs."""
    xs, ys = [0.0], [0.0]
    for cycle, value in steps:
        xs.append(cycle / clock_mhz)
        ys.append(value * scale)
    xs.append(until / clock_mhz)
    ys.append(ys[-1])
    return xs, ys


def _window_panel(report: RunReport) -> _Panel:
    window = task_window(report)
    lines = []
    if window:
        lines.append(
            _Line(f"in the orchestration's window (peak {peak(window)[0]})", window, color="#6a4c93")
        )
        groups = group_windows(report)
        busiest = max_steps(
            interval for steps in groups.values() for interval in _intervals(steps, report.total_cycles)
        )
        lines.append(_Line(f"on the fullest core group (peak {peak(busiest)[0]})", busiest, color="#e377c2"))
    return "tasks submitted,\nnot retired", lines, True


def _ring_panel(report: RunReport) -> _Panel:
    by_pipe: dict[str, list[RingTrack]] = {}
    for ring in report.rings:
        by_pipe.setdefault(ring.pipe, []).append(ring)
    lines = []
    for pipe, rings in by_pipe.items():
        steps = max_steps(step for ring in rings for step in ring.steps(report.total_cycles))
        slots = max(ring.slots for ring in rings)
        lines.append(_Line(f"{pipe} (peak {peak(steps)[0]} of {slots})", steps))
    return "ring slots in use\n(fullest ring)", lines, True


def _heap_panel(report: RunReport) -> _Panel:
    lines = []
    spaces = sorted({space for heap in report.heaps for space in heap.touched}, key=_space_order)
    for space in spaces:
        usable = report.usable_bytes.get(space)
        if not usable:
            continue
        steps = max_steps(
            (heap.start_cycle, heap.end_cycle, heap.touched.get(space, 0)) for heap in report.heaps
        )
        top = peak(steps)[0]
        label = f"{space} (peak {top} B, {top / usable:.0%} of {usable})"
        lines.append(_Line(label, steps, scale=100 / usable, fill=0.1))
    return "heap top, % of usable\n(fullest core)", lines, False
