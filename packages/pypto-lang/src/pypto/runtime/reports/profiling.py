"""Profiles of a run, written from its :class:`~pypto.ir.RunReport`: a Chrome/Perfetto trace, a
PNG swimlane, the swimlane's records as JSON (:mod:`pypto.runtime.reports.swimlane`) and a text summary.
Every time in them is modeled by the backend's cost model.

>>> files = write_profile(kernel.last_report, "pypto_profile/mixed", title="mixed")  # doctest: +SKIP
>>> files.trace, files.swimlane, files.records, files.summary  # doctest: +SKIP

The trace follows the trace-event format: one process per active core group, with a ``tasks``
thread (one slice per task it ran), one thread per pipe of each core (``AIC MTE2``, ``AIC CUBE``,
..., ``AIV0 VECTOR``) and per cross-core pipe (``pipe <name>``), counter tracks for ring
occupancy, flow arrows from each push to its pop, from each task to the tasks that waited for it
and (category ``flag``) from each op to an op of another pipe that waited for it; a host process
with the ``orchestration`` (submitting tasks) and ``scheduler`` (dispatching and retiring them)
threads. ``ts``/``dur`` are
modeled microseconds (cycles / clock MHz) at whole nanoseconds: a slice's start and end are each
rounded to the nanosecond and ``dur`` is their difference, so slices on a thread nest or are disjoint
at the nanosecond resolution Perfetto imports; each event's ``args`` hold the exact cycles.
"""

from __future__ import annotations

import json
import os
import tempfile
from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from pypto.ir import RunReport
from pypto.ir.backend import RingTrack, Slice
from pypto.runtime.reports.swimlane import draw_swimlane, swimlane_records
from pypto.runtime.reports.timeline import (
    HOST,
    HOST_THREAD_NAMES,
    SCHEDULER,
    edge_ends,
    edge_name,
    group_index,
    group_of,
    lane_order,
    on_host,
)
from pypto.runtime.settings import DEFAULT, PROFILE_ENV, ConfigError, Origin

TRACE_FILE = "trace.json"
SWIMLANE_FILE = "swimlane.png"
RECORDS_FILE = "chip_swimlane_records.json"
SUMMARY_FILE = "summary.txt"
HINTS_FILE = "hints.txt"  # the compiler's performance hints, when it has any
HOST_PID = 1000  # core groups take pids 1, 2, ...; pid 0 means "no process" to some trace viewers
# The host's threads (the backend's core names for them) -> (tid, thread name).
HOST_THREADS = {HOST: (1, HOST_THREAD_NAMES[HOST]), SCHEDULER: (2, HOST_THREAD_NAMES[SCHEDULER])}
TASKS_TID = 0  # a core group's tasks thread sorts before its cores
TASKS = "tasks"
PIPE_TID_BASE = 1000  # the cross-core pipes' threads sort after the cores of their group
# The pipes inside a core, in dataflow order: each a thread of its core (tid = core's order * 16 + index).
PIPE_ORDER = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")
PIPES_PER_CORE = 16
CORE_LANE = "core"  # the thread of a core's slices that sit on no pipe
POP_PIPE = "MTE2"  # a pop reads its share into the ring


@dataclass(frozen=True)
class ProfileFiles:
    """The files :func:`write_profile` wrote."""

    directory: Path
    trace: Path
    swimlane: Path
    summary: Path
    records: Path  # chip_swimlane_records.json


def check_profile_dir(directory: str | Path, origin: Origin | str = DEFAULT) -> None:
    """Check, before anything runs, that profiles can be written to ``directory`` (it exists as a
    directory that takes files, or can be created): else a ``ConfigError`` naming it, why not (a
    file in the way, a file system that takes no directories such as ``/proc``) and ``origin``,
    the setting that chose it.

    >>> check_profile_dir("prof/mixed", Origin("-o/--output"))  # doctest: +SKIP
    """
    check_output_dir(directory, origin, "profiles", "pypto_profile")


def check_output_dir(directory: str | Path, origin: Origin | str, what: str, example: str) -> None:
    """:func:`check_profile_dir` for any files pypto writes (``what``: "profiles", "pass dumps");
    the hint points ``origin`` at ``example``.

    >>> check_output_dir("dumps", Origin("--dump-passes"), "pass dumps", "pypto_passes")  # doctest: +SKIP
    """
    path = Path(directory)
    why = _unwritable(path)
    if why is None:
        return
    origin = origin if isinstance(origin, Origin) else Origin(origin)
    if origin == DEFAULT:
        hint = f"run from a directory you can write, or choose one with {PROFILE_ENV}=DIR or -o DIR"
    else:
        hint = f"point {origin} at a directory that can be created and written, e.g. {example}"
    raise ConfigError(f"cannot write {what} to {path} (from {origin}): {why}", span=origin.span, hint=hint)


def _unwritable(directory: Path) -> str | None:
    """Why files cannot be written in ``directory``, or None when they can. Nothing is left behind:
    the check makes a directory where the profile's would go and removes it again."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing if existing != directory else 'it'} is a file, not a directory"
    try:
        probe = tempfile.mkdtemp(prefix=".pypto-check-", dir=existing)
    except OSError as exc:
        return f"cannot create a directory in {existing}: {exc.strerror or exc}"
    os.rmdir(probe)
    return None


def write_profile(report: RunReport, directory: str | Path, title: str = "") -> ProfileFiles:
    """Write ``trace.json``, ``swimlane.png``, ``chip_swimlane_records.json`` and ``summary.txt``
    for ``report`` into ``directory``."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    files = ProfileFiles(
        root, root / TRACE_FILE, root / SWIMLANE_FILE, root / SUMMARY_FILE, root / RECORDS_FILE
    )
    files.trace.write_text(json.dumps(chrome_trace(report, title)))
    draw_swimlane(report, files.swimlane, title)
    files.records.write_text(json.dumps(swimlane_records(report, title), indent=1) + "\n")
    files.summary.write_text(summary_text(report, title))
    if report.hints:
        (root / HINTS_FILE).write_text("\n".join(report.hints) + "\n")
    return files


# ---------------------------------------------------------------- text


def summary_text(report: RunReport, title: str = "") -> str:
    """The report's summary and its per-kernel, per-op table, headed by what the figures are."""
    head = f"{title}: " if title else ""
    return (
        f"{head}modeled by the {report.platform} cost model at {report.clock_mhz:g} MHz "
        "(modeled cycles, not measurements)\n\n"
        f"{report.summary()}\n\n{report.breakdown_table()}\n"
    )


# ---------------------------------------------------------------- trace


def chrome_trace(report: RunReport, title: str = "") -> dict[str, Any]:
    """The run as a trace-event JSON object (Chrome tracing / Perfetto)."""
    layout = _Layout.of(report)
    events: list[dict[str, Any]] = layout.metadata()
    events += [_slice_event(s, layout, report.clock_mhz) for s in report.timeline if layout.shows(s)]
    for ring in report.rings:
        events += _ring_counter(ring, layout, report.clock_mhz)
    for pipe, rings in _rings_by_pipe(report.rings).items():
        events += _pipe_events(pipe, rings, layout, report)
    events += _flows(report, layout)
    events += _task_events(report, layout)
    events += _edge_flows(report, layout)
    events += _flag_flows(report, layout, len(report.transfers) + len(edge_ends(report)))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "title": title,
            "platform": report.platform,
            "clock_mhz": report.clock_mhz,
            "time_unit": "modeled microseconds at whole nanoseconds: round(cycles * 1000 / clock_mhz) / 1000",
            "modeled": report.modeled,
            "total_cycles": report.total_cycles,
        },
    }


@dataclass(frozen=True)
class _Layout:
    """Which process and thread each core and pipe gets."""

    pids: dict[str, int]  # core group ("cg0") or HOST -> pid
    tids: dict[str, int]  # "<core> <pipe>" (a pipe of a core), a host thread or "<group> pipe <name>" -> tid

    @classmethod
    def of(cls, report: RunReport) -> _Layout:
        on_groups = [s for s in report.timeline if not on_host(s.core)]
        group_names = {group_of(s.core) for s in on_groups} | {f"cg{t.core_group}" for t in report.tasks}
        groups = sorted(group_names, key=group_index)
        pids = {HOST: HOST_PID} | {group: group_index(group) + 1 for group in groups}
        tids = {core: tid for core, (tid, _) in HOST_THREADS.items()}
        tids |= {f"{group} {TASKS}": TASKS_TID for group in groups}
        lanes = {(s.core, _pipe(s)) for s in on_groups}
        lanes |= {(t.producer, _push_pipe(t.consumer)) for t in report.transfers}
        lanes |= {(t.consumer, POP_PIPE) for t in report.transfers}
        for core, pipe in sorted(lanes, key=lambda lane: (lane_order(lane[0]), _pipe_order(lane[1]))):
            tids[f"{core} {pipe}"] = lane_order(core) * PIPES_PER_CORE + _pipe_order(pipe)
        pipes = sorted({(group_of(r.owner), r.pipe) for r in report.rings})
        tids |= {f"{group} pipe {pipe}": PIPE_TID_BASE + k for k, (group, pipe) in enumerate(pipes)}
        return cls(pids, tids)

    def shows(self, s: Slice) -> bool:
        """The host's stalls (waiting for tasks or for work) are left out: the tasks show them."""
        return not (on_host(s.core) and s.stalled)

    def where(self, core: str, pipe: str | None = None) -> tuple[int, int]:
        """The thread of ``core`` (a host thread), or of one pipe of a core of a group."""
        if on_host(core):
            return self.pids[HOST], self.tids[core]
        return self.pids[group_of(core)], self.tids[f"{core} {pipe or CORE_LANE}"]

    def metadata(self) -> list[dict[str, Any]]:
        events = [_meta("process_name", pid, 0, _process_name(name)) for name, pid in self.pids.items()]
        # The host first, then the core groups in order.
        for name, pid in self.pids.items():
            events.append(_meta("process_sort_index", pid, 0, 0 if name == HOST else pid, key="sort_index"))
        for name, tid in self.tids.items():
            pid = self.pids[HOST if on_host(name) else group_of(name.split(" ")[0])]
            events.append(_meta("thread_name", pid, tid, _thread_name(name)))
            events.append(_meta("thread_sort_index", pid, tid, tid, key="sort_index"))
        return events


def _meta(kind: str, pid: int, tid: int, value: Any, key: str = "name") -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {key: value}}


def _process_name(name: str) -> str:
    return "host (AICPU dispatch)" if name == HOST else f"core group {group_index(name)}"


def _thread_name(name: str) -> str:
    if on_host(name):
        return HOST_THREADS[name][1]
    if name.endswith(f" {TASKS}"):
        return TASKS
    if " pipe " in name:
        return name.split(" ", 1)[1]  # "pipe mixed_c2v"
    return name.split(".", 1)[1]  # "AIC", "AIV0", or a pipe of a core: "AIC MTE2", ...


def _pipe(s: Slice) -> str:
    """The pipe lane a slice of a core sits on (a wait sits on the pipe that waited)."""
    return s.pipe or CORE_LANE


def _pipe_order(pipe: str) -> int:
    return PIPE_ORDER.index(pipe) if pipe in PIPE_ORDER else len(PIPE_ORDER)


def _push_pipe(consumer: str) -> str:
    """The producer's pipe that writes a crossing tile out: FIXPIPE to the vector lanes, MTE3 to the cube."""
    return "FIXPIPE" if ".AIV" in consumer else "MTE3"


def _ns(cycles: float, clock_mhz: float) -> int:
    """Modeled nanoseconds at ``cycles``, whole: the resolution Perfetto imports a trace at."""
    return round(cycles * 1000 / clock_mhz)


def _us(cycles: float, clock_mhz: float) -> float:
    """A trace timestamp: whole modeled nanoseconds, written as microseconds with three decimals,
    so that a viewer's conversion back to nanoseconds is exact."""
    return _ns(cycles, clock_mhz) / 1000


def _span_us(start: int, cycles: int, clock_mhz: float) -> tuple[float, float]:
    """``ts`` and ``dur`` of a slice, both from whole nanoseconds of its start and its end: rounded
    on their own, a slice could end a nanosecond after the next one on its thread starts, and
    Perfetto drops slices that partly overlap."""
    start_ns = _ns(start, clock_mhz)
    return start_ns / 1000, (_ns(start + cycles, clock_mhz) - start_ns) / 1000


def _complete(
    name: str,
    cat: str,
    start: int,
    cycles: int,
    where: tuple[int, int],
    clock_mhz: float,
    args: dict[str, Any],
) -> dict[str, Any]:
    """A complete ("X") event; ``start`` and ``cycles`` are modeled cycles, kept exact in ``args``."""
    pid, tid = where
    exact = {"start_cycle": start, "cycles": cycles}
    ts, dur = _span_us(start, cycles, clock_mhz)
    return {
        "ph": "X",
        "name": name,
        "cat": cat,
        "ts": ts,
        "dur": dur,
        "pid": pid,
        "tid": tid,
        "args": exact | args,
    }


def _slice_event(s: Slice, layout: _Layout, clock_mhz: float) -> dict[str, Any]:
    optional = {"kernel": s.task, "source": s.source, "roof": s.roof, "waited_for": s.flag_from}
    args: dict[str, Any] = {"unit": s.unit} | {key: value for key, value in optional.items() if value}
    if s.roof:
        args["peak_cycles"] = round(s.peak_cycles, 1)
    cat = "stall" if s.stalled else s.unit.lower()
    where = layout.where(s.core, None if on_host(s.core) else _pipe(s))
    return _complete(s.name, cat, s.start, s.cycles, where, clock_mhz, args)


def _ring_counter(ring: RingTrack, layout: _Layout, clock_mhz: float) -> list[dict[str, Any]]:
    pid = layout.pids[group_of(ring.owner)]
    name = f"ring {ring.pipe} {_thread_name(ring.owner)}"
    return [
        {"ph": "C", "name": name, "pid": pid, "ts": _us(cycle, clock_mhz), "args": {"slots in use": used}}
        for cycle, used in ring.samples
    ]


def _rings_by_pipe(rings: list[RingTrack]) -> dict[tuple[str, str], list[RingTrack]]:
    by_pipe: dict[tuple[str, str], list[RingTrack]] = {}
    for ring in rings:
        by_pipe.setdefault((group_of(ring.owner), ring.pipe), []).append(ring)
    return by_pipe


def _pipe_events(
    pipe: tuple[str, str], rings: list[RingTrack], layout: _Layout, report: RunReport
) -> list[dict[str, Any]]:
    """The pipe's thread: one slice per stretch in which some ring of the pipe holds tiles, named by
    each ring's slots in use (e.g. ``AIV0 2/2, AIV1 1/2``); stretches never overlap."""
    group, name = pipe
    where = (layout.pids[group], layout.tids[f"{group} pipe {name}"])
    lanes = [_thread_name(ring.owner) for ring in rings]
    events = []
    for start, end, used in _pipe_stretches(rings, report.total_cycles):
        label = ", ".join(f"{lane} {n}/{r.slots}" for lane, n, r in zip(lanes, used, rings, strict=True))
        in_use = {"slots in use": dict(zip(lanes, used, strict=True))}
        events.append(_complete(label, "ring", start, end - start, where, report.clock_mhz, in_use))
    return events


def _pipe_stretches(rings: list[RingTrack], until: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, slots in use per ring) wherever the rings' occupancy is constant and not all 0."""
    steps = [ring.steps(until) for ring in rings]
    cuts = sorted({cycle for ring_steps in steps for start, end, _ in ring_steps for cycle in (start, end)})
    stretches = []
    for start, end in pairwise(cuts):
        used = tuple(_in_use_at(ring_steps, start) for ring_steps in steps)
        if end > start and any(used):
            stretches.append((start, end, used))
    return stretches


def _in_use_at(steps: list[tuple[int, int, int]], cycle: int) -> int:
    return next((used for start, end, used in steps if start <= cycle < end), 0)


def _flows(report: RunReport, layout: _Layout) -> list[dict[str, Any]]:
    """A flow arrow from the middle of each push to the middle of its pop."""
    events = []
    for flow_id, transfer in enumerate(report.transfers, start=1):
        ends = (
            ("s", transfer.producer, _push_pipe(transfer.consumer), transfer.push),
            ("f", transfer.consumer, POP_PIPE, transfer.pop),
        )
        for phase, core, pipe, (start, end) in ends:
            pid, tid = layout.where(core, pipe)
            event = {
                "ph": phase,
                "id": flow_id,
                "name": transfer.pipe,
                "cat": "pipe",
                "ts": _us((start + end) / 2, report.clock_mhz),
                "pid": pid,
                "tid": tid,
            }
            events.append(event | ({"bp": "e"} if phase == "f" else {}))
    return events


def _flag_flows(report: RunReport, layout: _Layout, first_id: int) -> list[dict[str, Any]]:
    """A flow arrow for each op that waited for a flag from another pipe of its core: from the
    producing op (on its pipe's thread, where its result became ready) to the op's start."""
    ops: dict[tuple[str, str], list[Slice]] = {}
    for s in report.timeline:
        if s.pipe is not None and not s.stalled:
            ops.setdefault((s.core, s.pipe), []).append(s)
    starts = {lane: [s.start for s in slices] for lane, slices in ops.items()}
    events = []
    flow_id = first_id
    for s in report.timeline:
        if s.stalled or s.flag_from is None or s.flag_at is None:
            continue
        lane = (s.core, s.flag_from)
        index = bisect_right(starts.get(lane, []), s.flag_at) - 1
        if index < 0:
            continue
        producer = ops[lane][index]
        at = max(producer.start, min(s.flag_at, producer.end) - 1)  # inside the producer's slice
        flow_id += 1
        for phase, core, pipe, cycle in (("s", s.core, s.flag_from, at), ("f", s.core, s.pipe, s.start)):
            pid, tid = layout.where(core, pipe)
            event = {
                "ph": phase,
                "id": flow_id,
                "name": f"flag {s.flag_from} -> {s.pipe}",
                "cat": "flag",
                "ts": _us(cycle, report.clock_mhz),
                "pid": pid,
                "tid": tid,
            }
            events.append(event | ({"bp": "e"} if phase == "f" else {}))
    return events


def _task_events(report: RunReport, layout: _Layout) -> list[dict[str, Any]]:
    """One slice per task block on its core group's tasks thread, named by its kernel."""
    events = []
    for task in report.tasks:
        where = (layout.pids[f"cg{task.core_group}"], TASKS_TID)
        args: dict[str, Any] = {"task": task.task_id, "block": task.block}
        if task.source:
            args["source"] = task.source
        cycles = task.end_cycle - task.start_cycle
        events.append(_complete(task.kernel, "task", task.start_cycle, cycles, where, report.clock_mhz, args))
    return events


def _edge_flows(report: RunReport, layout: _Layout) -> list[dict[str, Any]]:
    """A flow arrow from the end of each task to the start of each task that waited for it, named by
    the tensor that implied the edge (``deps=`` for a declared one)."""
    events = []
    flow_id = len(report.transfers)
    for src, dst, edge in edge_ends(report):
        flow_id += 1
        name = edge_name(edge)
        ends = (("s", src, max(src.start_cycle, src.end_cycle - 1)), ("f", dst, dst.start_cycle))
        for phase, task, cycle in ends:
            event = {
                "ph": phase,
                "id": flow_id,
                "name": name,
                "cat": "dependency",
                "ts": _us(cycle, report.clock_mhz),
                "pid": layout.pids[f"cg{task.core_group}"],
                "tid": TASKS_TID,
            }
            events.append(event | ({"bp": "e"} if phase == "f" else {}))
    return events
