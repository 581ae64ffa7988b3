"""The swimlane of a run: ``swimlane.png`` (a picture of the timeline against modeled time) and
``chip_swimlane_records.json`` (when each task block ran on each of its cores). Both are written
with the profile (:func:`pypto.runtime.reports.profiling.write_profile`); every time is modeled.

>>> draw_swimlane(kernel.last_report, "swimlane.png", "mixed")  # doctest: +SKIP
>>> swimlane_records(kernel.last_report)["records"][0]["core"]  # doctest: +SKIP
'cg0.AIC'

The picture sizes itself to the run: its width grows with the slices of its busiest lane (a few
pixels each, within bounds), its height with the rows that appear. Each core's row holds one lane
per unit that ran on it (and one for its stalls), so units of one core that overlap in time stay
visible. Slices narrower than a pixel are not drawn one by one: per lane and pixel column, the
share of the column's time the unit was busy sets how strongly the column is coloured.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir import RunReport
from pypto.ir.backend import STALL, RingTrack, Slice, TaskRecord, busy_and_stalled
from pypto.runtime.reports.pmu import pipe_of
from pypto.runtime.reports.timeline import (
    HOST,
    HOST_THREAD_NAMES,
    SCHEDULER,
    core_order,
    edge_ends,
    edge_name,
    group_index,
    on_host,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# ---------------------------------------------------------------- records


def swimlane_records(report: RunReport, title: str = "", level: int = 4) -> dict[str, Any]:
    """``chip_swimlane_records.json`` at collection ``level`` (``RunConfig.enable_chip_swimlane``),
    each level adding to the one below:

    1. per task block, per core it ran on, its start and end (the first and last slice of the
       block on that core) in modeled cycles and µs, its busy and stall cycles there (as
       :attr:`~pypto.ir.RunReport.busy_cycles` and ``stall_cycles`` count them: busy while at least
       one of the core's pipes runs), the kernel, task id, block, core group and source line;
       ordered by start;
    2. each record's ``dispatch`` and ``finish`` (cycles and µs): when the scheduler handed the
       block to its core group and when it saw the block done, so ``start - dispatch`` is the
       pickup gap;
    3. ``scheduler_phases``: the scheduler thread's own slices (what it did, when);
    4. ``orchestrator_phases``: the orchestration thread's slices (task submission).
    """
    clock = report.clock_mhz
    blocks: dict[int, list[TaskRecord]] = {}
    for block in sorted(report.tasks, key=lambda task: task.start_cycle):
        blocks.setdefault(block.core_group, []).append(block)
    starts = {group: [block.start_cycle for block in mine] for group, mine in blocks.items()}
    spans: dict[tuple[int, int, str], list[int]] = {}  # (task, block, core) -> start, end
    slices: dict[tuple[int, int, str], list[Slice]] = {}
    owner: dict[tuple[int, int, str], TaskRecord] = {}
    for s in report.timeline:
        if on_host(s.core):
            continue
        group = group_index(s.core)
        index = bisect_right(starts.get(group, []), s.start) - 1
        if index < 0 or s.start > blocks[group][index].end_cycle:
            continue  # not inside a block of its group (a backend that records no tasks)
        block = blocks[group][index]
        key = (block.task_id, block.block, s.core)
        seen = spans.setdefault(key, [s.start, s.end])
        seen[0], seen[1] = min(seen[0], s.start), max(seen[1], s.end)
        slices.setdefault(key, []).append(s)
        owner[key] = block
    records: list[dict[str, Any]] = []
    for key, (start, end) in spans.items():
        block = owner[key]
        busy_of, stalled_of = busy_and_stalled(slices[key])
        busy, stall = busy_of.get(key[2], 0), stalled_of.get(key[2], 0)
        stamped = {}
        if level >= 2:  # the AICPU's stamps: dispatch to the core group, completion seen
            stamped = {
                "dispatch_cycle": block.start_cycle,
                "finish_cycle": block.end_cycle,
                "dispatch_us": _us(block.start_cycle, clock),
                "finish_us": _us(block.end_cycle, clock),
            }
        records.append(
            {
                "task_id": block.task_id,
                "block": block.block,
                "kernel": block.kernel,
                "core_group": block.core_group,
                "core": key[2],
                "start_cycle": start,
                "end_cycle": end,
                "start_us": _us(start, clock),
                "end_us": _us(end, clock),
                "busy_cycles": busy,
                "stall_cycles": stall,
                "source": block.source,
                **stamped,
            }
        )
    records.sort(key=lambda r: (r["start_cycle"], r["task_id"], r["block"], core_order(r["core"])))
    data = {
        "title": title,
        "platform": report.platform,
        "modeled": report.modeled,
        "level": level,
        "clock_mhz": clock,
        "total_cycles": report.total_cycles,
        "time_unit": "*_us: modeled microseconds, cycles / clock_mhz at whole nanoseconds",
        "records": records,
    }
    if level >= 3:
        data["scheduler_phases"] = _phases(report, SCHEDULER)
    if level >= 4:
        data["orchestrator_phases"] = _phases(report, HOST)
    return data


def _phases(report: RunReport, thread: str) -> list[dict[str, Any]]:
    """The slices of one host thread (the scheduler's or the orchestrator's), in time order."""
    clock = report.clock_mhz
    return [
        {
            "phase": s.name,
            "task": s.task,
            "start_cycle": s.start,
            "end_cycle": s.start + s.cycles,
            "start_us": _us(s.start, clock),
            "end_us": _us(s.start + s.cycles, clock),
            "source": s.source,
        }
        for s in sorted(report.timeline, key=lambda s: s.start)
        if s.core == thread
    ]


def _us(cycles: int, clock_mhz: float) -> float:
    return round(cycles * 1000 / clock_mhz) / 1000


# ---------------------------------------------------------------- the picture

TASK_COLOR = "#c5b0d5"
TASK_EDGE_COLOR = "#6a4c93"
EDGE_COLOR = "#2f2f2f"
RING_COLOR = "#e377c2"
RING_ROOM_COLOR = "#fbe9f4"  # a ring row's background: the height of a full ring
GROUP_SHADE = "#f3f3f3"  # behind every other core group, so that long pictures read by group
# Colours per unit; units not listed are drawn brown.
UNIT_COLORS = {
    "CUBE": "#d62728",
    "VECTOR": "#1f77b4",
    "MTE1": "#bcbd22",
    "MTE2": "#2ca02c",
    "MTE3": "#17becf",
    "FIXPIPE": "#ff7f0e",
    "SCALAR": "#7f7f7f",
    "AICPU": "#9467bd",
    STALL: "#bdbdbd",
}
OTHER_COLOR = "#8c564b"
# A core's lanes top to bottom: the pipes in dataflow order, units the list does not know, stalls.
LANE_ORDER = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")

# Geometry in pixels (the figure is drawn at DPI dots per inch).
DPI = 100
LANE_PX, LANE_GAP_PX, ROW_PAD_PX = 10, 1, 6
HOST_ROW_PX, TASK_ROW_PX, RING_ROW_PX = 18, 22, 18
PX_PER_SLICE = 3  # of plot width per slice of the busiest lane
PLOT_MIN_PX, PLOT_MAX_PX = 900, 4000
MAX_HEIGHT_PX = 30000  # Agg draws at most 2**16 pixels a side; lanes shrink to fit below this
TOP_PX, BOTTOM_PX, LEGEND_PX = 34, 48, 230
LABEL_CHAR_PX = 6.5  # a row label's width per character at its font size
EDGE_ARROWS_MAX = 60  # more edges than this are drawn as plain lines, unlabelled
LEVELS = 4  # shades of a partly busy pixel column: a quarter, half, three quarters, all of it


@dataclass
class _Row:
    """One row of the picture: a core or host thread (``lanes`` of units), a core group's tasks, or
    the rings of one consumer core. ``top`` and ``height`` are in pixels from the plot's top."""

    label: str
    height: float
    lanes: list[str] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    tasks: list[TaskRecord] = field(default_factory=list)
    rings: list[RingTrack] = field(default_factory=list)
    group: int | None = None
    top: float = 0.0

    @property
    def center(self) -> float:
        return self.top + self.height / 2

    def lane_box(self, lane: int, scale: float) -> tuple[float, float]:
        """(top, height) of lane ``lane`` in pixels."""
        if len(self.lanes) == 1:
            return self.top + 2 * scale, self.height - 4 * scale
        return self.top + (ROW_PAD_PX / 2 + lane * (LANE_PX + LANE_GAP_PX)) * scale, LANE_PX * scale


def draw_swimlane(report: RunReport, path: str | Path, title: str = "") -> Figure:
    """A PNG swimlane (matplotlib's Agg canvas, headless): the host's threads, then per core group a
    row of its tasks (arrows from each task to the tasks that waited for it), one row per core with
    a lane per unit that ran on it and one for its stalls, and one row per consumer core's pipe
    rings (their slots in use), against modeled time. Returns the figure it saved."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = _rows(report)
    plot_px = _plot_width(rows)
    scale = _stack(rows)
    height_px = max(sum(row.height for row in rows), HOST_ROW_PX)
    label_px = LABEL_CHAR_PX * max((len(row.label) for row in rows), default=8) + 44
    width, height = label_px + plot_px + LEGEND_PX, TOP_PX + height_px + BOTTOM_PX
    figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((label_px / width, BOTTOM_PX / height, plot_px / width, height_px / height))
    until = max(report.total_cycles, 1)
    canvas = _Canvas(report.clock_mhz, until, plot_px)
    for row in rows:
        _draw_row(canvas, row, scale)
    _shade_groups(axes, rows)
    canvas.draw(axes)
    _draw_task_labels(axes, rows, canvas)
    _draw_edges(axes, report, rows, canvas)
    _label_rows(axes, rows, scale)
    axes.set_ylim(height_px, 0)
    axes.set_xlim(0, until / report.clock_mhz)
    axes.set_xlabel(f"modeled time (µs at {report.clock_mhz:g} MHz)")
    axes.set_title(_title(report, title), fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    axes.legend(handles=_legend(rows, canvas), loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7)
    figure.savefig(str(path))
    return figure


# ------------------------------------------------ rows


def _rows(report: RunReport) -> list[_Row]:
    """The host's threads, then per core group its tasks, its cores and its consumers' rings."""
    by_core: dict[str, list[Slice]] = {}
    for s in report.timeline:
        if s.cycles and not (on_host(s.core) and s.stalled):  # the host's waits: the tasks show them
            by_core.setdefault(s.core, []).append(s)
    rows = [
        _Row(name, HOST_ROW_PX, _lanes(by_core[core]), by_core[core])
        for core, name in HOST_THREAD_NAMES.items()
        if core in by_core
    ]
    tasks: dict[int, list[TaskRecord]] = {}
    for task in report.tasks:
        tasks.setdefault(task.core_group, []).append(task)
    rings: dict[tuple[str, str], list[RingTrack]] = {}
    for ring in report.rings:
        rings.setdefault((ring.owner, _ring_kind(ring.pipe)), []).append(ring)
    cores = sorted((core for core in by_core if not on_host(core)), key=core_order)
    for group in sorted({group_index(core) for core in cores} | set(tasks)):
        if group in tasks:
            rows.append(_Row(f"cg{group} tasks", TASK_ROW_PX, tasks=tasks[group], group=group))
        for core in (c for c in cores if group_index(c) == group):
            lanes = _lanes(by_core[core])
            height = len(lanes) * (LANE_PX + LANE_GAP_PX) + ROW_PAD_PX
            rows.append(_Row(core, height, lanes, by_core[core], group=group))
        for (owner, kind), mine in sorted(rings.items(), key=lambda item: core_order(item[0][0])):
            if group_index(owner) == group:
                rows.append(_Row(_ring_label(owner, kind, mine), RING_ROW_PX, rings=mine, group=group))
    return rows


def _lanes(slices: list[Slice]) -> list[str]:
    units = {s.unit for s in slices}
    known = [unit for unit in LANE_ORDER if unit in units]
    others = sorted(units - set(LANE_ORDER) - {STALL})
    return known + others + ([STALL] if STALL in units else [])


def _ring_kind(pipe: str) -> str:
    """``mixed_c2v`` -> ``c2v``; ``attn_v2c#1`` -> ``v2c#1``: rings of one kind on one core never
    overlap in time (one launch at a time), so they share a row whatever scope they belong to."""
    return pipe.rsplit("_", 1)[-1]


def _ring_label(owner: str, kind: str, rings: list[RingTrack]) -> str:
    """``cg0.AIV0 ring mixed_c2v (2 slots)``; ``cg0.AIV0 rings c2v (1-4 slots)`` for several pipes."""
    pipes = {ring.pipe for ring in rings}
    low, high = min(ring.slots for ring in rings), max(ring.slots for ring in rings)
    slots = f"{low} slot{'s' if high > 1 else ''}" if low == high else f"{low}-{high} slots"
    name = f"ring {pipes.pop()}" if len(pipes) == 1 else f"rings {kind}"
    return f"{owner} {name} ({slots})"


def _plot_width(rows: list[_Row]) -> int:
    """Pixels of plot: a few per slice of the busiest lane (task bars count as a lane), within bounds."""
    densest = 0
    for row in rows:
        per_lane: dict[str, int] = {}
        for s in row.slices:
            per_lane[s.unit] = per_lane.get(s.unit, 0) + 1
        densest = max(densest, len(row.tasks), *per_lane.values(), 0)
    return min(PLOT_MAX_PX, max(PLOT_MIN_PX, PX_PER_SLICE * densest))


def _stack(rows: list[_Row]) -> float:
    """Give each row its top; returns the factor rows were shrunk by to fit :data:`MAX_HEIGHT_PX`."""
    total = sum(row.height for row in rows)
    scale = min(1.0, MAX_HEIGHT_PX / total) if total else 1.0
    top = 0.0
    for row in rows:
        row.height *= scale
        row.top = top
        top += row.height
    return scale


# ------------------------------------------------ drawing


class _Canvas:
    """Rectangles to draw, collected per style and drawn as one collection each: exact bars where a
    slice is a pixel wide or more, and per pixel column a shaded bar for the slices narrower than
    that (the share of the column's time they cover, in :data:`LEVELS` shades). x is modeled µs,
    y pixels from the plot's top."""

    def __init__(self, clock_mhz: float, until: int, plot_px: int):
        self.clock_mhz = clock_mhz
        self.until = until
        self.plot_px = plot_px
        self.us_per_px = until / clock_mhz / plot_px
        self.boxes: dict[tuple[str, bool], list[tuple[float, float, float, float, float]]] = {}
        self.units: set[str] = set()  # drawn, for the legend
        self.shaded = False  # some column was drawn partly busy

    def us(self, cycle: float) -> float:
        return cycle / self.clock_mhz

    def bars(
        self, spans: list[tuple[int, int]], top: float, height: float, color: str, edged: bool = False
    ) -> None:
        """Draw (start, end) cycle spans on a lane at ``top``, outlined if ``edged``."""
        boxes = self.boxes.setdefault((color, edged), [])
        columns: dict[int, float] = {}
        px, until = self.plot_px, self.until
        for start, end in spans:
            if (end - start) * px >= until:  # a pixel wide or more
                boxes.append((self.us(start), self.us(end - start), top, height, 1.0))
            elif end > start:
                # Less than a pixel: its share of the one or two columns it falls in (exact in cycles).
                column = min(start * px // until, px - 1)
                border = (column + 1) * until / px
                columns[column] = columns.get(column, 0.0) + (min(end, border) - start) * px / until
                if end > border and column + 1 < px:
                    columns[column + 1] = columns.get(column + 1, 0.0) + (end - border) * px / until
        for first, last, level in _runs(columns):
            self.shaded = True
            alpha = 0.25 + 0.75 * level
            boxes.append((first * self.us_per_px, (last - first + 1) * self.us_per_px, top, height, alpha))

    def draw(self, axes: Any) -> None:
        """Add the collected rectangles to ``axes``: one collection per style."""
        from matplotlib.collections import PolyCollection
        from matplotlib.colors import to_rgba

        for (color, edged), boxes in self.boxes.items():
            if not boxes:
                continue
            verts = [((x, y), (x + w, y), (x + w, y + h), (x, y + h)) for x, w, y, h, _ in boxes]
            axes.add_collection(
                PolyCollection(
                    verts,
                    facecolors=[to_rgba(color, alpha) for *_, alpha in boxes],
                    edgecolors=TASK_EDGE_COLOR if edged else "none",
                    linewidths=0.6 if edged else 0,
                )
            )


def _runs(columns: dict[int, float]) -> list[tuple[int, int, float]]:
    """Consecutive pixel columns of one shade, as (first, last, share of the time busy)."""
    runs: list[tuple[int, int, float]] = []
    for column in sorted(columns):
        level = max(1, round(min(columns[column], 1.0) * LEVELS)) / LEVELS  # the nearest shade, never none
        if runs and runs[-1][1] == column - 1 and runs[-1][2] == level:
            runs[-1] = (runs[-1][0], column, level)
        else:
            runs.append((column, column, level))
    return runs


def _draw_row(canvas: _Canvas, row: _Row, scale: float) -> None:
    if row.tasks:
        spans = [(t.start_cycle, t.end_cycle) for t in row.tasks]
        canvas.bars(spans, row.top + 2 * scale, row.height - 4 * scale, TASK_COLOR, edged=True)
    elif row.rings:
        _draw_rings(canvas, row)
    for lane, unit in enumerate(row.lanes):
        top, height = row.lane_box(lane, scale)
        spans = [(s.start, s.end) for s in row.slices if s.unit == unit]
        canvas.bars(spans, top, height, UNIT_COLORS.get(unit, OTHER_COLOR))
        canvas.units.add(unit)


def _draw_rings(canvas: _Canvas, row: _Row) -> None:
    """The rings' slots in use as bars rising from the row's bottom: a full row is a full ring."""
    base, room = row.top + row.height * 0.9, row.height * 0.8
    by_level: dict[float, list[tuple[int, int]]] = {}
    for ring in row.rings:
        for start, end, used in ring.steps(canvas.until):
            if used and end > start:
                by_level.setdefault(min(used / ring.slots, 1.0), []).append((start, end))
    for level, spans in sorted(by_level.items()):
        canvas.bars(spans, base - room * level, room * level, RING_COLOR)


def _shade_groups(axes: Any, rows: list[_Row]) -> None:
    """A light band behind every other core group, and behind each ring row the room of a full ring."""
    for group in sorted({row.group for row in rows if row.group is not None and row.group % 2}):
        mine = [row for row in rows if row.group == group]
        axes.axhspan(mine[0].top, mine[-1].top + mine[-1].height, color=GROUP_SHADE, zorder=0, linewidth=0)
    for row in rows:
        if row.rings:
            room = (row.top + row.height * 0.1, row.top + row.height * 0.9)
            axes.axhspan(*room, color=RING_ROOM_COLOR, zorder=0.5, linewidth=0)


def _draw_task_labels(axes: Any, rows: list[_Row], canvas: _Canvas) -> None:
    """Each task's kernel and id on its bar (or its id alone), where the bar is wide enough."""
    for row in rows:
        for task in row.tasks:
            start, end = canvas.us(task.start_cycle), canvas.us(task.end_cycle)
            room = (end - start) / canvas.us_per_px
            # 7-point text takes about 5 pixels a character.
            texts = (f"{task.kernel} #{task.task_id}", f"#{task.task_id}")
            label = next((text for text in texts if room >= 5 * len(text) + 6), None)
            if label is not None:
                axes.text(
                    (start + end) / 2, row.center, label, ha="center", va="center", fontsize=7, clip_on=True
                )


def _draw_edges(axes: Any, report: RunReport, rows: list[_Row], canvas: _Canvas) -> None:
    """An arrow from the end of each task to the start of each task that waited for it, labelled by
    the tensor that implied it (dashed for ``deps=``); past :data:`EDGE_ARROWS_MAX` edges, plain
    thin lines."""
    from matplotlib.collections import LineCollection

    centers = {row.group: row.center for row in rows if row.tasks}
    ends = edge_ends(report)
    lines, styles = [], []
    for src, dst, edge in ends:
        tail = (canvas.us(src.end_cycle), centers[src.core_group])
        head = (canvas.us(dst.start_cycle), centers[dst.core_group])
        style = "dashed" if edge.declared else "solid"
        if len(ends) > EDGE_ARROWS_MAX:
            lines.append((tail, head))
            styles.append(style)
            continue
        arrow = {"arrowstyle": "->", "color": EDGE_COLOR, "lw": 1.2, "linestyle": style}
        axes.annotate("", xy=head, xytext=tail, arrowprops=arrow)
        middle = ((tail[0] + head[0]) / 2, (tail[1] + head[1]) / 2 - 3)
        axes.text(*middle, edge_name(edge), ha="center", va="bottom", fontsize=7, color=EDGE_COLOR)
    if lines:
        axes.add_collection(
            LineCollection(lines, colors=EDGE_COLOR, linewidths=0.4, linestyles=styles, alpha=0.5)
        )


def _label_rows(axes: Any, rows: list[_Row], scale: float) -> None:
    """Each row's name at its middle; a core's lanes by their pipe, in small type beside it."""
    axes.set_yticks([row.center for row in rows], [row.label for row in rows], fontsize=8)
    minor, names = [], []
    for row in rows:
        if len(row.lanes) > 1:
            for lane, unit in enumerate(row.lanes):
                top, height = row.lane_box(lane, scale)
                minor.append(top + height / 2)
                names.append("stall" if unit == STALL else pipe_of(unit) if pipe_of(unit) != "-" else unit)
    axes.set_yticks(minor, names, minor=True, fontsize=max(3.0, 6 * scale))
    axes.tick_params(axis="y", which="minor", length=0, pad=2)
    axes.tick_params(axis="y", which="major", length=0, pad=30 if minor else 4)


def _legend(rows: list[_Row], canvas: _Canvas) -> list[Any]:
    """Only what the picture shows: the units that ran (by pipe), stalls, tasks, ring fill, shading."""
    from matplotlib.patches import Patch

    units = [unit for unit in (*LANE_ORDER, "AICPU") if unit in canvas.units]
    units += sorted(canvas.units - set(units) - {STALL})
    handles = [Patch(facecolor=UNIT_COLORS.get(u, OTHER_COLOR), label=_unit_label(u)) for u in units]
    if STALL in canvas.units:
        handles.append(Patch(facecolor=UNIT_COLORS[STALL], label="stall (blocked)"))
    if any(row.tasks for row in rows):
        handles.append(Patch(facecolor=TASK_COLOR, edgecolor=TASK_EDGE_COLOR, label="task (kernel #id)"))
    if any(row.rings for row in rows):
        handles.append(Patch(facecolor=RING_COLOR, label="ring slots in use\n(to the top: ring full)"))
    if canvas.shaded:
        handles.append(
            Patch(facecolor="white", edgecolor="#555555", label="paler: busy for part\nof a pixel's time")
        )
    return handles


def _unit_label(unit: str) -> str:
    """``M (CUBE)``: the hardware pipe, and the unit as the timeline names it."""
    pipe = pipe_of(unit)
    if pipe == unit:
        return unit
    return unit if pipe == "-" else f"{pipe} ({unit})"


def _title(report: RunReport, title: str) -> str:
    head = f"{title}: " if title else ""
    return (
        f"{head}{report.total_cycles} modeled cycles ({report.total_us:.2f} modeled µs), "
        f"cube-vector overlap {report.overlap:.0%} — modeled by {report.platform}, not measured"
    )
