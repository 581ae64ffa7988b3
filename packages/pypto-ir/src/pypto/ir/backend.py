"""The backend contract: what a plugin implements and what a run returns."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pypto.ir.nodes import Program
from pypto.ir.target import Target


@dataclass
class TaskRecord:
    """One kernel launch on one core group, in modeled cycles.

    ``task_id`` numbers the tasks in submission order (from 1); an ``pl.spmd`` task has one record
    per block, ``block`` = its ``pl.get_block_idx()``. ``source`` is the user's line of the scope or
    call, e.g. ``"kernel.py:12"``.
    """

    kernel: str
    core_group: int
    start_cycle: int
    end_cycle: int
    task_id: int = 0
    block: int = 0
    source: str | None = None


@dataclass(frozen=True)
class TaskEdge:
    """A dependency: task ``dst`` waited for task ``src`` to finish.

    ``tensor`` names the tensor that implied the edge, or is None for one declared with ``deps=``.
    """

    src: int
    dst: int
    tensor: str | None = None

    @property
    def declared(self) -> bool:
        return self.tensor is None


@dataclass
class SubmittedTask:
    """One task the orchestration submitted, from submission to retirement, in modeled cycles: in
    between it holds a place in the orchestration's task window (submitted, not yet retired).

    ``SubmittedTask(task_id=2, kernel="mixed", submit_cycle=200, retire_cycle=9120, blocks=4)``.
    A join (``pl.system.task_dummy``) has ``blocks=0``; a task whose ``predicate=`` was false at
    dispatch is ``skipped``: retired without running (it has no :class:`TaskRecord`).
    """

    task_id: int
    kernel: str
    submit_cycle: int
    retire_cycle: int | None = None  # None: the run ended before the scheduler retired it
    blocks: int = 1
    ring: int = 0  # the runtime ring its resources come from: min(scope depth, 3)
    skipped: bool = False


@dataclass(frozen=True)
class RuntimeRing:
    """One of the runtime's four rings (``index`` 0..3: the tasks of scopes at depth
    ``min(depth, 3)``): what it holds (``task_window`` task slots, ``heap`` bytes of the tensors
    its tasks are the first to write, ``dep_pool`` dependency-edge entries) and the most of each
    it held at once.

    ``RuntimeRing(1, task_window=64, heap=1 << 20, dep_pool=256, peak_tasks=64, peak_heap=8192,
    peak_deps=12)``
    """

    index: int
    task_window: int
    heap: int
    dep_pool: int
    peak_tasks: int = 0
    peak_heap: int = 0
    peak_deps: int = 0


@dataclass(frozen=True)
class HeapUse:
    """One core's on-chip memory while it ran one kernel of one task block, per memory space
    (``"Vec"``, ``"Mat"``, ``"Left"``, ...): the top of the heap the kernel's memory plan lays out
    (``planned``: its tiles above the pipe rings at the bottom) and the highest byte the run put a
    tile or a ring slot at (``touched``), both in bytes from the bottom of the space.

    ``HeapUse("cg0.AIV0", "mixed_aiv", 1, 0, 520, 162100, {"Vec": 98304}, {"Vec": 98304})``
    """

    core: str
    kernel: str
    task_id: int
    block: int
    start_cycle: int
    end_cycle: int
    planned: dict[str, int] = field(default_factory=dict)
    touched: dict[str, int] = field(default_factory=dict)


# The roofs a kernel's work is measured against.
ROOF_CUBE, ROOF_VECTOR, ROOF_MEMORY = "cube", "vector", "memory"
STALL = "STALL"  # the unit of a slice a core spent blocked on a pipe, a barrier or a task


@dataclass(frozen=True)
class Slice:
    """One stretch of one core's modeled time: an op it executed, or a wait it was blocked in.

    ``Slice("cg0.AIC", start=2090, cycles=1360, name="tile.matmul", unit="CUBE", task="mixed")``.
    ``peak_cycles`` is what the op's work needs at peak on ``roof`` (cube, vector or memory).
    """

    core: str
    start: int
    cycles: int
    name: str
    unit: str
    task: str = ""
    source: str | None = None  # the user's line, e.g. "kernel.py:31"
    peak_cycles: float = 0.0
    roof: str | None = None
    # The pipe inside the core the slice sits on (``"MTE2"``, ``"CUBE"``, ...; None: the core as a
    # whole, e.g. the host's threads), and for an op that waited for another pipe of its core, that
    # pipe (its flag: the trace draws the wait as a flow).
    pipe: str | None = None
    flag_from: str | None = None
    flag_at: int | None = None  # when the awaited op of ``flag_from`` had its result ready

    @property
    def end(self) -> int:
        return self.start + self.cycles

    @property
    def stalled(self) -> bool:
        return self.unit == STALL


@dataclass
class RingTrack:
    """One pipe ring's slots in use over time: ``samples`` of (modeled cycle, slots in use).

    ``RingTrack("mixed_c2v", "cg0.AIV0", slots=2, samples=[(1200, 1), (2100, 2), (2500, 1)])``
    """

    pipe: str
    owner: str  # the consuming core, in whose memory the ring lives
    slots: int
    samples: list[tuple[int, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.pipe} {self.owner}"

    def steps(self, until: int) -> list[tuple[int, int, int]]:
        """(start, end, slots in use) for each stretch of constant occupancy up to ``until``."""
        ends = [cycle for cycle, _ in self.samples[1:]] + [until]
        return [(c, max(c, e), used) for (c, used), e in zip(self.samples, ends, strict=True)]

    def mean_in_use(self, until: int) -> float:
        """Time-weighted mean of the slots in use from cycle 0 to ``until``."""
        return sum((e - s) * used for s, e, used in self.steps(until)) / until if until else 0.0

    def full_cycles(self, until: int) -> int:
        """Cycles up to ``until`` during which every slot was in use."""
        return sum(e - s for s, e, used in self.steps(until) if used >= self.slots)


@dataclass(frozen=True)
class Transfer:
    """One tile (or a lane's share of it) crossing a pipe, as (start, end) cycles of both ends."""

    pipe: str
    producer: str
    consumer: str
    push: tuple[int, int]
    pop: tuple[int, int]


@dataclass(frozen=True)
class OpStats:
    """How often an op ran and the modeled cycles it kept its cores busy."""

    count: int
    cycles: int


@dataclass(frozen=True)
class Roofline:
    """A kernel's modeled cycles against what its work needs at peak on each roof.

    ``cube``: its MAC cycles at one block per cycle; ``vector``: its vector cycles spread over all
    the vector lanes of a core group; ``memory``: the busiest transfer pipe's bytes (of any core)
    at its rate, without fixed latencies (a core's MTE2, MTE1, FIXPIPE and MTE3 run at once). The
    largest is the bound; ``ratio`` = cycles / bound.
    """

    kernel: str
    cycles: int
    cube: float
    vector: float
    memory: float

    @property
    def bound(self) -> str:
        roofs = {ROOF_CUBE: self.cube, ROOF_VECTOR: self.vector, ROOF_MEMORY: self.memory}
        return max(roofs, key=lambda roof: roofs[roof])

    @property
    def bound_cycles(self) -> float:
        return max(self.cube, self.vector, self.memory)

    @property
    def ratio(self) -> float:
        return self.cycles / self.bound_cycles if self.bound_cycles else float("inf")


@dataclass
class RunReport:
    """What a backend returns after running a program.

    Times are modeled by the backend's cost model (``modeled=True``), never measured. Per-core
    figures are keyed by core name: ``"cg0.AIC"``, ``"cg0.AIV0"``, ``"cg0.AIV1"``. A core is
    *busy* while it executes ops and *stalled* while it waits on a pipe, a barrier or a peer.
    ``tasks`` holds one :class:`TaskRecord` per task block (which core group, when), ``edges`` the
    dependencies between tasks (:class:`TaskEdge`).
    ``timeline`` holds every busy and stalled :class:`Slice` (a backend may leave it to be made
    when first read: :meth:`make_timeline_when_read`), ``rings`` the occupancy of every pipe ring,
    ``transfers`` every tile that crossed a pipe; the methods below summarise them.
    ``submitted`` holds each task from submission to retirement (:class:`SubmittedTask`: the task
    window), ``runtime_rings`` the runtime's four rings with their sizes and peaks
    (:class:`RuntimeRing`), ``heaps`` each core's on-chip memory per kernel it ran (:class:`HeapUse`) and
    ``usable_bytes`` what the allocator may use of each space; a backend that does not know them
    leaves them empty.

    >>> report.overlap, report.roofline()[0].ratio, print(report.summary())  # doctest: +SKIP
    """

    platform: str
    clock_mhz: float
    total_cycles: int = 0
    tasks: list[TaskRecord] = field(default_factory=list)
    edges: list[TaskEdge] = field(default_factory=list)
    busy_cycles: dict[str, int] = field(default_factory=dict)
    stall_cycles: dict[str, int] = field(default_factory=dict)
    outputs: tuple[Any, ...] = ()  # the values the entry function returned, in order
    modeled: bool = True
    timeline: list[Slice] = field(default_factory=list)
    rings: list[RingTrack] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)
    aiv_per_group: int = 1  # vector lanes per core group: the vector roof spreads work over them
    submitted: list[SubmittedTask] = field(default_factory=list)
    heaps: list[HeapUse] = field(default_factory=list)
    usable_bytes: dict[str, int] = field(default_factory=dict)  # per memory space, e.g. {"Vec": 188416}
    # The compiler's performance hints about the program (e.g. fewer pipeline stages fit than asked).
    hints: list[str] = field(default_factory=list)
    device_id: int = 0  # the device the run was on (RunConfig.device_id)
    # The runtime's four rings, sized and used (a backend that models none leaves it empty).
    runtime_rings: list[RuntimeRing] = field(default_factory=list)
    # The directory the run's argument dump went to (RunConfig(enable_dump_args=1|2)), set by the
    # runtime; None when nothing was dumped. Read it with pypto.tools.dump_viewer.
    args_dump: str | None = None
    # A timing-only run (RunConfig(timing_only=True)): the modeled time of a full run, no tile
    # values computed (the outputs hold what they held before).
    timing_only: bool = False

    @property
    def total_us(self) -> float:
        return self.total_cycles / self.clock_mhz

    def make_timeline_when_read(self, make: Callable[[], list[Slice]]) -> None:
        """Leave :attr:`timeline` to ``make()``, called when something first reads it (a summary, a
        profile, equality, pickling); setting it drops ``make``. For a backend whose timeline is
        long and is often not read: the a2a3 simulator's replayed blocks make tens of thousands
        of slices that a plain call never looks at."""
        self.__dict__[_MAKE_TIMELINE] = make

    def __getstate__(self) -> dict[str, Any]:
        """The report's fields for pickling (a Dask worker's report travels home): the timeline
        made, not the function that would make it."""
        _timeline(self)
        return dict(self.__dict__)

    def idle_cycles(self, core: str) -> int:
        return max(0, self.total_cycles - self.busy_cycles.get(core, 0) - self.stall_cycles.get(core, 0))

    def dominant_side(self, margin: float = 1.2) -> str | None:
        """``"cube"`` or ``"vector"`` when the compute unit of one side (the cube pipe of an AIC,
        the vector pipe of an AIV: the busiest core's) runs ``margin`` times longer than the
        other's; None when they are balanced or one side is unused. A core's transfers, which
        its pipes overlap with its compute, do not count; without a timeline, its busy cycles."""
        computing: dict[str, int] = {}
        for s in self.timeline:
            if s.cycles and not s.stalled and s.pipe in ("CUBE", "VECTOR"):
                computing[s.core] = computing.get(s.core, 0) + s.cycles
        busy = computing if computing else self.busy_cycles
        cube = max((v for k, v in busy.items() if k.endswith(".AIC")), default=0)
        vector = max((v for k, v in busy.items() if ".AIV" in k), default=0)
        if not cube or not vector:
            return None
        if cube > margin * vector:
            return "cube"
        if vector > margin * cube:
            return "vector"
        return None

    # ------------------------------------------------------------ overlap

    def overlap_by_group(self, kernels: Collection[str] | None = None) -> dict[str, Spans]:
        """Per core group (``"cg0"``), the stretches in which its AIC and at least one of its AIV
        lanes are busy at once; with ``kernels``, counting only those kernels' work."""
        slices = self.timeline if kernels is None else [s for s in self.timeline if s.task in kernels]
        busy = _busy_intervals(slices)
        stretches: dict[str, Spans] = {}
        for group in sorted({core.split(".")[0] for core in busy}):
            cube = busy.get(f"{group}.AIC", [])
            lanes = [spans for core, spans in busy.items() if core.startswith(f"{group}.AIV")]
            stretches[group] = _intersection(cube, _union(lanes))
        return stretches

    def overlap_cycles(self, kernels: Collection[str] | None = None, per_group: bool = False) -> int:
        """Modeled cycles of the run in which some core group's AIC and at least one of its AIV
        lanes are busy at once: a cycle in which several groups overlap counts once, or once per
        group with ``per_group`` (to set against cycles summed over cores). With ``kernels``,
        only those kernels' work counts (``report.overlap_cycles({"o_proj"}, per_group=True)``:
        how much a mixed kernel overlaps its cube and vector work, on all its core groups)."""
        stretches = self.overlap_by_group(kernels).values()
        if per_group:
            return sum(end - start for spans in stretches for start, end in spans)
        return sum(end - start for start, end in _union(list(stretches)))

    @property
    def overlap(self) -> float:
        """The fraction of the modeled run in which cube and vector are busy together."""
        return self.overlap_cycles() / self.total_cycles if self.total_cycles else 0.0

    # ------------------------------------------------------------ breakdowns

    def kernel_cycles(self) -> dict[str, int]:
        """Modeled cycles of each kernel's launches (first launch first), start to end."""
        cycles: dict[str, int] = {}
        for task in self.tasks:
            cycles[task.kernel] = cycles.get(task.kernel, 0) + task.end_cycle - task.start_cycle
        return cycles

    def op_breakdown(self, kernel: str | None = None) -> dict[str, OpStats]:
        """Busy modeled cycles and counts per op name (of one kernel, or of every kernel)."""
        stats: dict[str, OpStats] = {}
        for s in self.timeline:
            if s.stalled or not s.task or (kernel is not None and s.task != kernel):
                continue
            seen = stats.get(s.name, OpStats(0, 0))
            stats[s.name] = OpStats(seen.count + 1, seen.cycles + s.cycles)
        return dict(sorted(stats.items(), key=lambda item: -item[1].cycles))

    def roofline(self) -> list[Roofline]:
        """One :class:`Roofline` per kernel, in the order the kernels were first launched."""
        lanes = max(1, self.aiv_per_group)
        lines = []
        for kernel, cycles in self.kernel_cycles().items():
            mine = [s for s in self.timeline if s.task == kernel and not s.stalled]
            # A core's transfer pipes (MTE2, MTE1, FIXPIPE, MTE3) run at once: its bound is its
            # busiest pipe's transfers at peak.
            memory: dict[tuple[str, str], float] = {}
            for s in mine:
                if s.roof == ROOF_MEMORY:
                    key = (s.core, s.pipe or s.unit)
                    memory[key] = memory.get(key, 0.0) + s.peak_cycles
            cube = sum(s.peak_cycles for s in mine if s.roof == ROOF_CUBE)
            vector = sum(s.peak_cycles for s in mine if s.roof == ROOF_VECTOR) / lanes
            lines.append(Roofline(kernel, cycles, cube, vector, max(memory.values(), default=0.0)))
        return lines

    # ------------------------------------------------------------ text

    def summary(self) -> str:
        """A few lines: total modeled time, each core's busy/stall/idle, the cube-vector overlap,
        each kernel's roofline, each ring's occupancy, and the bottleneck."""
        only = ", timing only (no tile values computed)" if self.timing_only else ""
        lines = [
            f"{self.platform}: {self.total_cycles} modeled cycles "
            f"({self.total_us:.2f} modeled us at {self.clock_mhz:g} MHz), {len(self.tasks)} task(s){only}"
        ]
        for core in sorted(self.busy_cycles):
            busy, stall = self.busy_cycles[core], self.stall_cycles.get(core, 0)
            if busy or stall:
                lines.append(
                    f"  {core:<10} busy {busy:>9}  stall {stall:>9}  idle {self.idle_cycles(core):>9}"
                    "  (modeled cycles)"
                )
        if len(self.tasks) > 1:
            lines.append(f"  {self._task_line()}")
        if self.timeline:
            lines.append(f"  cube-vector overlap {self.overlap:.1%} of the modeled time")
        lines += [f"  {_roofline_line(line)}" for line in self.roofline() if line.bound_cycles]
        lines += [f"  {_ring_line(ring, self.total_cycles)}" for ring in self.rings]
        lines += self._advice()
        lines += [f"  performance hint: {hint}" for hint in self.hints]
        return "\n".join(lines)

    def __repr__(self) -> str:
        """The head of :meth:`summary` with the records counted, not listed: a report holds tens of
        thousands of slices, which a printed report would otherwise spill onto the terminal."""
        lines = self.summary().splitlines()
        if len(lines) > _REPR_LINES:
            more = len(lines) - _REPR_LINES + 1
            lines = [*lines[: _REPR_LINES - 1], f"  ... {more} more line(s): print(report.summary())"]
        return f"RunReport({chr(10).join(lines)}\n  {self._counts()})"

    def _counts(self) -> str:
        """How many records of each kind the report holds (``12 task(s), 40 slice(s), ...``)."""
        counted: dict[str, Sized] = {
            "task": self.tasks,
            "edge": self.edges,
            "slice": self.timeline,
            "ring": self.rings,
            "transfer": self.transfers,
            "submitted task": self.submitted,
            "heap": self.heaps,
            "runtime ring": self.runtime_rings,
            "output": self.outputs,
            "hint": self.hints,
        }
        held = ", ".join(f"{len(items)} {kind}(s)" for kind, items in counted.items())
        return f"holds {held}; device {self.device_id}, modeled={self.modeled}"

    def _task_line(self) -> str:
        """How many tasks ran on how many core groups, with how many edges, and how much of their
        summed time the concurrency hid."""
        ids = {task.task_id for task in self.tasks}
        groups = {task.core_group for task in self.tasks}
        summed = sum(task.end_cycle - task.start_cycle for task in self.tasks)
        ratio = summed / self.total_cycles if self.total_cycles else 0.0
        return (
            f"{len(ids)} task(s) on {len(groups)} core group(s), {len(self.edges)} dependency edge(s); "
            f"the tasks' modeled cycles add up to {ratio:.2f}x the run"
        )

    def _advice(self) -> list[str]:
        side = self.dominant_side()
        if self.timeline and self.overlap_cycles() == 0 and _both_sides_busy(self.busy_cycles):
            return [
                "  cube and vector never ran at once: put both in one pl.at scope with pl.split "
                "so that they overlap"
            ]
        if side is None:
            return []
        others = "the vector lanes wait" if side == "cube" else "the cube waits"
        return [
            f"  the {side} side dominates: {others} on it, so overlap cannot hide it; "
            f"shorten the {side} work to go faster"
        ]

    def breakdown_table(self) -> str:
        """Per kernel, per op: count, busy modeled cycles and share of the kernel's busy cycles."""
        lines = [f"{'kernel':<20} {'op':<24} {'count':>7} {'modeled cycles':>15} {'share':>7}"]
        for kernel in self.kernel_cycles():
            ops = self.op_breakdown(kernel)
            busy = sum(stats.cycles for stats in ops.values()) or 1
            for op, stats in ops.items():
                lines.append(
                    f"{kernel:<20} {op:<24} {stats.count:>7} {stats.cycles:>15} {stats.cycles / busy:>7.1%}"
                )
        return "\n".join(lines)


_MAKE_TIMELINE, _TIMELINE = "_make_timeline", "_timeline"
_REPR_LINES = 12  # lines of the summary a report's repr shows (a chip-wide run has a line per core)


def _timeline(report: RunReport) -> list[Slice]:
    state = report.__dict__
    make = state.pop(_MAKE_TIMELINE, None)
    if make is not None:
        state[_TIMELINE] = make()
    timeline: list[Slice] = state[_TIMELINE]
    return timeline


def _set_timeline(report: RunReport, slices: list[Slice]) -> None:
    report.__dict__.pop(_MAKE_TIMELINE, None)
    report.__dict__[_TIMELINE] = slices


# ``timeline`` stays a field of the dataclass (its __init__, equality, repr, dataclasses.replace and
# asdict all go through the attribute), held in the instance as ``_timeline`` and made when first
# read if a backend left it to a function (RunReport.make_timeline_when_read).
# (Set after the dataclass is made, which would take a property in the class body for the field's
# default.)
RunReport.timeline = property(  # type: ignore[assignment]
    _timeline, _set_timeline, doc="Every busy and stalled :class:`Slice` of the run, by start."
)


def _both_sides_busy(busy: dict[str, int]) -> bool:
    cube = any(v for k, v in busy.items() if k.endswith(".AIC"))
    return cube and any(v for k, v in busy.items() if ".AIV" in k)


def _roofline_line(line: Roofline) -> str:
    return (
        f"{line.kernel}: {line.cycles} modeled cycles = {line.ratio:.2f}x its {line.bound} bound "
        f"({line.bound_cycles:.0f}; cube {line.cube:.0f}, vector {line.vector:.0f}, "
        f"memory {line.memory:.0f} modeled cycles at peak)"
    )


def _ring_line(ring: RingTrack, until: int) -> str:
    full = ring.full_cycles(until) / until if until else 0.0
    return (
        f"ring {ring.name}: {ring.mean_in_use(until):.2f} of {ring.slots} slot(s) in use on average, "
        f"full {full:.1%} of the modeled time"
    )


Spans = list[tuple[int, int]]


def busy_and_stalled(slices: Iterable[Slice]) -> tuple[dict[str, int], dict[str, int]]:
    """Per core, its busy cycles (at least one of its pipes runs an op) and its stalled ones (it
    waits on another core — a ring slot, a barrier, a task — and no pipe runs). Waiting for the
    core's own data (a load in flight, a flag from another of its pipes: a stall slice with
    ``flag_from``) is neither. The figures of :attr:`RunReport.busy_cycles` and ``stall_cycles``."""
    busy, waits = core_spans(slices)
    busy_spans = {core: _union([spans]) for core, spans in busy.items()}
    stalled = {}
    for core, spans in waits.items():
        waited = _union([spans])
        covered = _intersection(waited, busy_spans.get(core, []))
        stalled[core] = _length(waited) - _length(covered)
    return {core: _length(spans) for core, spans in busy_spans.items()}, stalled


def core_spans(slices: Iterable[Slice]) -> tuple[dict[str, Spans], dict[str, Spans]]:
    """Per core, the (start, end) of each slice in which it is busy, and of each in which it waits
    on another core (see :func:`busy_and_stalled`), unmerged: the cores without any are left out."""
    busy: dict[str, Spans] = {}
    waits: dict[str, Spans] = {}
    for s in slices:  # (a run has tens of thousands: the fields, not the properties, are read)
        cycles = s.cycles
        if not cycles:
            continue
        if s.unit == STALL:
            if s.flag_from is not None:
                continue
            kind = waits
        else:
            kind = busy
        spans = kind.get(s.core)
        if spans is None:
            spans = kind[s.core] = []
        spans.append((s.start, s.start + cycles))
    return busy, waits


def busy_and_stalled_of(busy: Spans, waits: Spans) -> tuple[int, int]:
    """One core's (busy, stalled) cycles from its spans as :func:`core_spans` gives them (in any
    order): what :func:`busy_and_stalled` gives for it."""
    busy = _union([busy])
    waited = _union([waits])
    return _length(busy), _length(waited) - _length(_intersection(waited, busy))


def stretches(busy: Spans, waits: Spans) -> list[tuple[int, int, int]]:
    """One core's time as :func:`core_spans` gives it (``busy`` and ``waits`` spans, in any order)
    in connected stretches, each ``(start, end, busy cycles)``: in time order, apart from one
    another. Its busy cycles are the stretches' sums, its stalled cycles the stretches' lengths
    less them (what :func:`busy_and_stalled_of` gives)."""
    merged = _union([busy])
    covered = _union([busy, waits]) if waits else merged
    found = []
    i = 0
    for start, end in covered:
        cycles = 0
        while i < len(merged) and merged[i][0] < end:  # (each busy span lies in one stretch)
            cycles += merged[i][1] - merged[i][0]
            i += 1
        found.append((start, end, cycles))
    return found


def _length(spans: Spans) -> int:
    return sum(end - start for start, end in spans)


def _busy_intervals(timeline: list[Slice]) -> dict[str, Spans]:
    """Each core's busy (start, end) stretches, merged."""
    spans: dict[str, Spans] = {}
    for s in timeline:
        if not s.stalled and s.cycles:
            spans.setdefault(s.core, []).append((s.start, s.end))
    return {core: _union([mine]) for core, mine in spans.items()}


def _union(lists: list[Spans]) -> Spans:
    merged: Spans = []
    spans = sorted(lists[0]) if len(lists) == 1 else sorted(span for spans in lists for span in spans)
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _intersection(a: Spans, b: Spans) -> Spans:
    """The overlap of two merged, sorted span lists, as merged, sorted spans."""
    common: Spans = []
    i, j = 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            common.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return common


# ------------------------------------------------------------ a world of chips


@dataclass(frozen=True)
class LinkTransfer:
    """Bytes that crossed the chip-to-chip interconnect: from rank ``src`` to rank ``dst``,
    ``nbytes`` of them, on the link from modeled cycle ``start`` to ``end`` (the world's clock).
    ``op`` names what moved them (``"dist.put"``, ``"dist.notify"``, ``"dist.allreduce"``, ...);
    ``span`` is the user's line that did, as ``"kernel.py:31"`` (None when unknown)."""

    src: int
    dst: int
    nbytes: int
    start: int
    end: int
    op: str
    span: str | None = None

    @property
    def cycles(self) -> int:
        return self.end - self.start


@dataclass
class WorldReport:
    """What a run of a distributed program returns (``backend.run_world``): one
    :class:`RunReport` per rank, on one modeled clock.

    ``chips[r]`` is rank ``r``'s report (its cores named as on one chip: ``cg0.AIC``);
    ``total_cycles`` is the world's end (the last rank's); ``clock_ghz`` the clock the cycles are
    counted at; ``transfers`` every :class:`LinkTransfer` between ranks. ``device_ids[r]`` is the
    physical device rank ``r`` ran on (the runtime fills it in from ``DistributedConfig``);
    ``outputs`` what the HOST entry returned. Times are modeled, never measured.

    >>> print(world.summary())  # doctest: +SKIP
    """

    chips: tuple[RunReport, ...]
    total_cycles: int
    clock_ghz: float
    transfers: tuple[LinkTransfer, ...] = ()
    device_ids: tuple[int, ...] = ()
    outputs: tuple[Any, ...] = ()
    modeled: bool = True

    @property
    def world_size(self) -> int:
        return len(self.chips)

    @property
    def total_us(self) -> float:
        return self.total_cycles / (self.clock_ghz * 1000.0) if self.clock_ghz else 0.0

    def device_of(self, rank: int) -> int:
        """The physical device of ``rank`` (the rank itself when the ids are not known)."""
        return self.device_ids[rank] if rank < len(self.device_ids) else rank

    def link_bytes(self) -> dict[tuple[int, int], int]:
        """Bytes sent over each directed link ``(src, dst)``, in order of the links."""
        sent: dict[tuple[int, int], int] = {}
        for t in self.transfers:
            sent[(t.src, t.dst)] = sent.get((t.src, t.dst), 0) + t.nbytes
        return dict(sorted(sent.items()))

    def summary(self) -> str:
        """A few lines: the world's modeled time, each rank's cycles, busy cores and tasks, and
        each link's bytes and transfers."""
        lines = [
            f"world of {self.world_size} chip(s): {self.total_cycles} modeled cycles "
            f"({self.total_us:.2f} modeled us at {self.clock_ghz:g} GHz), "
            f"{len(self.transfers)} link transfer(s)"
        ]
        for rank, chip in enumerate(self.chips):
            busy = sum(1 for cycles in chip.busy_cycles.values() if cycles)
            lines.append(
                f"  rank{rank} (device {self.device_of(rank)}): {chip.total_cycles} modeled cycles, "
                f"{len(chip.tasks)} task(s), {busy} busy core(s)"
            )
        counts: dict[tuple[int, int], int] = {}
        for t in self.transfers:
            counts[(t.src, t.dst)] = counts.get((t.src, t.dst), 0) + 1
        for (src, dst), nbytes in self.link_bytes().items():
            lines.append(f"  link rank{src} -> rank{dst}: {nbytes} bytes in {counts[(src, dst)]} transfer(s)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        """One line: ranks, modeled cycles and transfers (``print(world.summary())`` for more)."""
        return (
            f"WorldReport({self.world_size} rank(s), {self.total_cycles} modeled cycles at "
            f"{self.clock_ghz:g} GHz, {len(self.transfers)} link transfer(s), "
            f"devices {list(self.device_ids) or list(range(self.world_size))})"
        )


@runtime_checkable
class WorldBackend(Protocol):
    """A backend that runs distributed programs: several chips on one modeled clock.

    ``run_world(program, args, options, ranks=N)``: ``program`` is lowered, its entry the HOST
    orchestrator; ``args`` the entry's arguments (tensors written in place); ``options`` as for
    :meth:`Backend.run`, plus ``"device_ids"`` (the physical ids, for reports), ``"windows"`` (None,
    or the backend's window store kept across dispatches by a persistent worker) and
    ``"callbacks"`` (SubWorker name -> a Python callable given the list of the call's arguments).
    A backend may also offer ``window_store(ranks)``, making the store ``"windows"`` takes, whose
    ``reset()`` zeroes it."""

    name: str
    target: Target

    def run_world(
        self, program: Program, args: Sequence[Any], options: Mapping[str, Any], ranks: int
    ) -> WorldReport: ...


@runtime_checkable
class Backend(Protocol):
    """A platform that can run lowered programs. Registered through the ``pypto`` plugin hooks.

    A backend may also have a ``pipeline`` attribute: the pipeline string of the passes its
    programs are lowered with when ``RunConfig(pipeline=...)`` names none (e.g.
    ``"outline-scopes,tile-matmul{k_block=128},tensor-to-tile,..."``); without it (or with None)
    they get the default pipeline. It is optional, so it is no member of this protocol.

    A backend may also declare ``ops``, the op names it has semantics for, for
    ``pypto.ir.walker.missing_semantics(backend.ops)`` to check (see docs/plugins.md),
    ``device_count``, how many devices ``RunConfig(device_id=...)`` may name (1 when absent), and
    ``simulator``: True for a backend that simulates its target's chip on the host. A simulator
    runs the programs of its chip's platform when no device backend for it is installed (a run on
    ``"a2a3"`` runs on ``a2a3sim``), and takes any ``device_id``: every device is its one chip.
    """

    name: str
    target: Target

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry with ``args`` (backend-native tensors, written in place).

        ``options`` holds the user's run options; under a progress bar also ``"on_task"``, to call
        with the kernel name as each task finishes, and, for a run of one task (or an unknown
        task count), ``"on_progress"``, to call as ``on_progress(kernel, done, total, unit)`` while
        a task runs (e.g. ``("mixed", 3, 8, "iterations")``, or ``"blocks"`` of an spmd launch).
        Both are optional to call."""
        ...
