"""Profiles of a distributed run, written from its :class:`~pypto.ir.backend.WorldReport`: a
Perfetto trace in which each chip is one process (``rank0``, ``rank1``, ...) and the interconnect
another (one thread per directed link, a slice per transfer), a PNG swimlane of every rank and its
links against the world's modeled clock, and a text summary. Every time in them is modeled.

>>> files = write_world_profile(compiled.last_report, "pypto_profile/allreduce")  # doctest: +SKIP
>>> files.trace, files.swimlane, files.summary  # doctest: +SKIP

A chip's threads keep its own trace's names, prefixed with the rank: ``rank1/cg0.AIC CUBE``,
``rank1/host orchestration``; its counters and flow arrows come along. ``ts``/``dur`` are modeled
microseconds, each event's ``args`` hold the exact cycles, as in a single chip's trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir.backend import LinkTransfer, RunReport, Slice, WorldReport
from pypto.runtime.reports.profiling import HOST_PID, SUMMARY_FILE, SWIMLANE_FILE, TRACE_FILE, chrome_trace
from pypto.runtime.reports.timeline import on_host

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LINKS_PID = 1  # the interconnect's process; ranks take pids 2, 3, ...
GROUP_STRIDE = 10_000  # a chip's thread id: its core group's place * stride + the thread's own id
FLOW_STRIDE = 10_000_000  # flow ids of rank r are offset by r * stride, so ranks never share one


@dataclass(frozen=True)
class WorldProfileFiles:
    """The files :func:`write_world_profile` wrote."""

    directory: Path
    trace: Path
    swimlane: Path
    summary: Path


def write_world_profile(report: WorldReport, directory: str | Path, title: str = "") -> WorldProfileFiles:
    """Write ``trace.json``, ``swimlane.png`` and ``summary.txt`` of a world run into ``directory``."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    files = WorldProfileFiles(root, root / TRACE_FILE, root / SWIMLANE_FILE, root / SUMMARY_FILE)
    files.trace.write_text(json.dumps(world_trace(report, title)))
    draw_world_swimlane(report, files.swimlane, title)
    head = f"{title}: " if title else ""
    files.summary.write_text(
        f"{head}modeled at {report.clock_ghz:g} GHz (modeled cycles, not measurements)\n\n"
        f"{report.summary()}\n\n"
        + "\n\n".join(f"rank{rank}:\n{chip.summary()}" for rank, chip in enumerate(report.chips))
        + "\n"
    )
    return files


# ---------------------------------------------------------------- trace


def rank_pid(rank: int) -> int:
    return LINKS_PID + 1 + rank


def world_trace(report: WorldReport, title: str = "") -> dict[str, Any]:
    """The world run as one trace-event JSON object: a process per chip, one for the links."""
    events: list[dict[str, Any]] = [
        _meta("process_name", LINKS_PID, 0, "interconnect (chip-to-chip links)"),
        _meta("process_sort_index", LINKS_PID, 0, 0, key="sort_index"),
    ]
    for rank, chip in enumerate(report.chips):
        pid = rank_pid(rank)
        events.append(_meta("process_name", pid, 0, f"rank{rank} (device {report.device_of(rank)})"))
        events.append(_meta("process_sort_index", pid, 0, pid, key="sort_index"))
        events += _chip_events(chip, rank, title)
    events += _link_events(report)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "title": title,
            "ranks": report.world_size,
            "device_ids": [report.device_of(rank) for rank in range(report.world_size)],
            "clock_ghz": report.clock_ghz,
            "modeled": report.modeled,
            "total_cycles": report.total_cycles,
        },
    }


def _meta(kind: str, pid: int, tid: int, value: Any, key: str = "name") -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {key: value}}


def _group_name(pid: int) -> str:
    """The core group a chip trace's process stands for: ``host`` or ``cg<n>``."""
    return "host" if pid == HOST_PID else f"cg{pid - 1}"


def _group_place(pid: int) -> int:
    """Where a chip trace's process sorts within its rank: the host first, then the core groups."""
    return 0 if pid == HOST_PID else pid


def _chip_events(chip: RunReport, rank: int, title: str) -> list[dict[str, Any]]:
    """Rank ``rank``'s own trace moved into its process: each (process, thread) of the chip's trace
    becomes a thread ``rank<r>/<group>.<thread>``, flow ids offset per rank."""
    pid = rank_pid(rank)
    events = []
    for event in chrome_trace(chip, title)["traceEvents"]:
        old_pid = int(event.get("pid", 0))
        group = _group_name(old_pid)
        tid = _group_place(old_pid) * GROUP_STRIDE + int(event.get("tid", 0))
        moved = dict(event, pid=pid, tid=tid)
        if event["ph"] == "M":
            if event["name"] in ("process_name", "process_sort_index"):
                continue
            if event["name"] == "thread_name":
                name = str(event["args"]["name"])
                label = f"{group} {name}" if group == "host" else f"{group}.{name}"
                moved["args"] = {"name": f"rank{rank}/{label}"}
            else:
                moved["args"] = {"sort_index": tid}
        elif event["ph"] == "C":
            moved["name"] = f"rank{rank}/{group} {event['name']}"
        if "id" in event:
            moved["id"] = rank * FLOW_STRIDE + int(event["id"])
        events.append(moved)
    return events


def _link_name(transfer: LinkTransfer) -> str:
    return f"rank{transfer.src} -> rank{transfer.dst}"


def _link_events(report: WorldReport) -> list[dict[str, Any]]:
    """A thread per directed link, a slice per transfer on it (its op, bytes, the user's line)."""
    links = sorted({(t.src, t.dst) for t in report.transfers})
    tids = {link: k + 1 for k, link in enumerate(links)}
    events = []
    for (src, dst), tid in tids.items():
        events.append(_meta("thread_name", LINKS_PID, tid, f"rank{src} -> rank{dst}"))
        events.append(_meta("thread_sort_index", LINKS_PID, tid, tid, key="sort_index"))
    mhz = report.clock_ghz * 1000.0
    for t in report.transfers:
        start_ns = round(t.start * 1000 / mhz)
        end_ns = round(t.end * 1000 / mhz)
        args: dict[str, Any] = {"start_cycle": t.start, "cycles": t.cycles, "bytes": t.nbytes, "op": t.op}
        if t.span:
            args["source"] = t.span
        events.append(
            {
                "ph": "X",
                "name": f"{t.op} {t.nbytes} B",
                "cat": "link",
                "ts": start_ns / 1000,
                "dur": (end_ns - start_ns) / 1000,
                "pid": LINKS_PID,
                "tid": tids[(t.src, t.dst)],
                "args": args,
            }
        )
    return events


# ---------------------------------------------------------------- swimlane

CORE_ROWS_PER_RANK = 4  # the busiest cores of a rank get a row each; the rest share one row
ROW_PX, LINK_ROW_PX, RANK_GAP_PX = 16, 16, 8
TOP_PX, BOTTOM_PX, LABEL_PX, LEGEND_PX, PLOT_PX = 34, 48, 150, 170, 1100
DPI = 100
BUSY_COLOR, STALL_COLOR, LINK_COLOR, SHADE = "#1f77b4", "#d3d3d3", "#d62728", "#f3f3f3"
UNIT_COLORS = {"CUBE": "#ff7f0e", "VECTOR": "#2ca02c", "MTE2": "#9467bd", "MTE3": "#8c564b"}


@dataclass
class _WorldRow:
    rank: int
    label: str
    slices: list[Slice]
    transfers: list[LinkTransfer]
    top: float = 0.0


def _world_rows(report: WorldReport) -> list[_WorldRow]:
    """Per rank: a row per busiest core, one for the rest of its cores, one for the bytes it sends."""
    rows = []
    for rank, chip in enumerate(report.chips):
        by_core: dict[str, list[Slice]] = {}
        for s in chip.timeline:
            if s.cycles and not on_host(s.core):
                by_core.setdefault(s.core, []).append(s)
        busiest = sorted(by_core, key=lambda core: -sum(s.cycles for s in by_core[core] if not s.stalled))
        shown = sorted(busiest[:CORE_ROWS_PER_RANK])
        rows += [_WorldRow(rank, f"rank{rank}/{core}", by_core[core], []) for core in shown]
        rest = busiest[CORE_ROWS_PER_RANK:]
        if rest:
            merged = [s for core in rest for s in by_core[core]]
            rows.append(_WorldRow(rank, f"rank{rank}/{len(rest)} more cores", merged, []))
        if not by_core:
            rows.append(_WorldRow(rank, f"rank{rank} (idle)", [], []))
        sent = [t for t in report.transfers if t.src == rank]
        rows.append(_WorldRow(rank, f"rank{rank} sends", [], sent))
    return rows


def draw_world_swimlane(report: WorldReport, path: str | Path, title: str = "") -> Figure:
    """The world's swimlane as a PNG: per rank its busiest cores (a colour per unit, stalls grey),
    its other cores in one row and a row of what it sends over the links (each transfer labelled
    with its destination), ranks shaded alternately, against the world's modeled time."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = _world_rows(report)
    top, last_rank = 0.0, None
    for row in rows:
        if last_rank is not None and row.rank != last_rank:
            top += RANK_GAP_PX
        row.top, last_rank = top, row.rank
        top += ROW_PX
    height_px = max(top, ROW_PX)
    width, height = LABEL_PX + PLOT_PX + LEGEND_PX, TOP_PX + height_px + BOTTOM_PX
    figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((LABEL_PX / width, BOTTOM_PX / height, PLOT_PX / width, height_px / height))
    mhz = report.clock_ghz * 1000.0 or 1.0
    until = max(report.total_cycles, 1)
    for row in rows:
        if row.rank % 2:
            axes.axhspan(row.top - RANK_GAP_PX / 2, row.top + ROW_PX + RANK_GAP_PX / 2, color=SHADE, zorder=0)
        _draw_slices(axes, row, mhz)
        _draw_transfers(axes, row, mhz)
    axes.set_yticks([row.top + ROW_PX / 2 for row in rows])
    axes.set_yticklabels([row.label for row in rows], fontsize=7)
    axes.set_ylim(height_px, 0)
    axes.set_xlim(0, until / mhz)
    axes.set_xlabel(f"modeled time (µs at {report.clock_ghz:g} GHz)")
    head = f"{title}: " if title else ""
    axes.set_title(
        f"{head}{report.world_size} chip(s), {report.total_cycles} modeled cycles, "
        f"{len(report.transfers)} link transfer(s)",
        fontsize=10,
    )
    axes.grid(axis="x", alpha=0.3)
    legend = [Patch(color=color, label=unit) for unit, color in UNIT_COLORS.items()]
    legend += [
        Patch(color=BUSY_COLOR, label="other units"),
        Patch(color=STALL_COLOR, label="stalled"),
        Patch(color=LINK_COLOR, label="link transfer"),
    ]
    axes.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7)
    figure.savefig(str(path))
    return figure


def _draw_slices(axes: Any, row: _WorldRow, mhz: float) -> None:
    by_color: dict[str, list[tuple[float, float]]] = {}
    for s in row.slices:
        color = STALL_COLOR if s.stalled else UNIT_COLORS.get(s.unit, BUSY_COLOR)
        by_color.setdefault(color, []).append((s.start / mhz, s.cycles / mhz))
    for color, spans in by_color.items():
        axes.broken_barh(spans, (row.top + 2, ROW_PX - 4), facecolors=color, linewidth=0)


def _draw_transfers(axes: Any, row: _WorldRow, mhz: float) -> None:
    if not row.transfers:
        return
    spans = [(t.start / mhz, max(t.cycles, 1) / mhz) for t in row.transfers]
    axes.broken_barh(
        spans, (row.top + 2, ROW_PX - 4), facecolors=LINK_COLOR, linewidth=0.3, edgecolor="white"
    )
    labelled: set[int] = set()
    for t in row.transfers:
        if t.dst in labelled:
            continue
        labelled.add(t.dst)
        axes.text(t.start / mhz, row.top + ROW_PX / 2, f"→{t.dst}", fontsize=6, va="center", color="black")


__all__ = ["WorldProfileFiles", "draw_world_swimlane", "world_trace", "write_world_profile"]
