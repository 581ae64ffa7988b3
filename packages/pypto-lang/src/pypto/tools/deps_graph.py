"""The task graph a run built (``deps.json``, written with ``RunConfig(enable_dep_gen=True)``) as
text, as an SVG drawing and as one self-contained HTML page; ``pypto deps view`` prints or writes
them.

Each task is a box, laid out by dependency depth from left to right (a task with no predecessor in
the first column, every other one column after its deepest predecessor); each edge an arrow
labelled ``via <tensor>`` for an edge the runtime inferred from a tensor, ``deps=`` for one the
program declared. Times are the simulator's modeled cycles, never measured ones.

>>> graph = load_deps(Path("build_output/task_graph_0123abcd/dfx_outputs/deps.json"))  # doctest: +SKIP
>>> Path("deps.html").write_text(deps_html(graph))  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from pypto.ir import PyptoError, RunReport, TaskEdge, TaskRecord
from pypto.runtime.compiling.artifacts import DEPS_FORMAT, deps_file_data
from pypto.tools.page import esc, page

FORMATS = ("text", "svg", "html")
HINT = (
    "give the deps.json a run writes into its output directory with RunConfig(enable_dep_gen=True) "
    "(RunConfig(save_kernels_dir=DIR) chooses the directory)"
)


class DepsFileError(PyptoError, ValueError):
    """A file given as a ``deps.json`` that is not one: the message names the file and what is
    wrong with it."""


@dataclass(frozen=True)
class DepsGraph:
    """The tasks (one record per block of a ``pl.spmd`` task) and the edges of one run, with the
    run's platform, clock and modeled total when the file gives them."""

    tasks: tuple[TaskRecord, ...]
    edges: tuple[TaskEdge, ...]
    program: str | None = None
    platform: str | None = None
    clock_mhz: float | None = None
    total_cycles: int | None = None
    source: str | None = None  # the file it was read from
    task_ids: tuple[int, ...] = field(init=False)
    _blocks: dict[int, list[TaskRecord]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        blocks: dict[int, list[TaskRecord]] = {}
        for t in self.tasks:
            blocks.setdefault(t.task_id, []).append(t)
        object.__setattr__(self, "_blocks", blocks)
        object.__setattr__(self, "task_ids", tuple(sorted(blocks)))

    @classmethod
    def from_report(cls, report: RunReport, program: str | None = None) -> DepsGraph:
        """The graph of a run, without a file: ``DepsGraph.from_report(kernel.last_report)``."""
        return graph_from_data(deps_file_data(report, program), None)

    def blocks(self, task_id: int) -> list[TaskRecord]:
        """The records of task ``task_id``: one, or one per block of a ``pl.spmd`` task."""
        return self._blocks[task_id]

    def kernel(self, task_id: int) -> str:
        return self.blocks(task_id)[0].kernel


def load_deps(path: Path) -> DepsGraph:
    """Read and check a ``deps.json``; anything else is a :class:`DepsFileError` naming the file:
    ``load_deps(Path("out/deps.json"))``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise DepsFileError(f"cannot read {path}: {reason}", hint=HINT) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DepsFileError(
            f"{path} is not a deps.json: it is not valid JSON ({err.msg} at line {err.lineno}, "
            f"column {err.colno})",
            hint=HINT,
        ) from None
    return graph_from_data(data, str(path))


def graph_from_data(data: Any, source: str | None) -> DepsGraph:
    """The graph the JSON data of a deps.json describes, checked field by field:
    ``graph_from_data(json.loads(text), "out/deps.json")``."""
    where = source or "the deps data"
    if not isinstance(data, dict):
        raise DepsFileError(
            f"{where} is not a deps.json: it holds a JSON {_json_kind(data)}, not an object", hint=HINT
        )
    if data.get("format", DEPS_FORMAT) != DEPS_FORMAT:
        raise DepsFileError(
            f"{where} is not a deps.json: its format is {data['format']!r}, not {DEPS_FORMAT!r}", hint=HINT
        )
    for key in ("tasks", "edges"):
        if not isinstance(data.get(key), list):
            found = "missing" if key not in data else f"a JSON {_json_kind(data[key])}"
            raise DepsFileError(f"{where} is not a deps.json: {key!r} is {found}, not a list", hint=HINT)
    tasks = tuple(_task(item, i, where) for i, item in enumerate(data["tasks"]))
    edges = tuple(_edge(item, i, where) for i, item in enumerate(data["edges"]))
    known = {t.task_id for t in tasks}
    for i, edge in enumerate(edges):
        for end in (edge.src, edge.dst):
            if end not in known:
                raise DepsFileError(
                    f"{where}: edges[{i}] names task {end}, which is not among its tasks", hint=HINT
                )
    clock = data.get("clock_mhz")
    total = data.get("total_cycles")
    graph = DepsGraph(
        tasks,
        edges,
        program=_optional(data, "program", str, where),
        platform=_optional(data, "platform", str, where),
        clock_mhz=float(clock) if _number(clock) else None,
        total_cycles=int(total) if _number(total) else None,
        source=source,
    )
    depths(graph)  # a cycle is an error here, not an endless layout later
    return graph


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _optional(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise DepsFileError(f"{where}: {key!r} is a JSON {_json_kind(value)}, not a string", hint=HINT)
    return value


def _field(
    item: Mapping[str, Any], key: str, kinds: tuple[type, ...], what: str, where: str, label: str
) -> Any:
    if key not in item:
        raise DepsFileError(f"{where}: {label} has no {key!r}", hint=HINT)
    value = item[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise DepsFileError(f"{where}: {label}[{key!r}] is {value!r}, not {what}", hint=HINT)
    return value


def _task(item: Any, i: int, where: str) -> TaskRecord:
    label = f"tasks[{i}]"
    if not isinstance(item, dict):
        raise DepsFileError(f"{where}: {label} is a JSON {_json_kind(item)}, not an object", hint=HINT)
    source = item.get("source")
    return TaskRecord(
        kernel=_field(item, "kernel", (str,), "a kernel name", where, label),
        core_group=_field(item, "core_group", (int,), "a core group number", where, label),
        start_cycle=_field(item, "start_cycle", (int,), "a cycle count", where, label),
        end_cycle=_field(item, "end_cycle", (int,), "a cycle count", where, label),
        task_id=_field(item, "task_id", (int,), "a task id", where, label),
        block=item["block"] if isinstance(item.get("block"), int) else 0,
        source=source if isinstance(source, str) else None,
    )


def _edge(item: Any, i: int, where: str) -> TaskEdge:
    label = f"edges[{i}]"
    if not isinstance(item, dict):
        raise DepsFileError(f"{where}: {label} is a JSON {_json_kind(item)}, not an object", hint=HINT)
    src = _field(item, "src", (int,), "a task id", where, label)
    dst = _field(item, "dst", (int,), "a task id", where, label)
    tensor = item.get("tensor")
    if tensor is not None and not isinstance(tensor, str):
        raise DepsFileError(f"{where}: {label}['tensor'] is {tensor!r}, not a tensor name or null", hint=HINT)
    return TaskEdge(src, dst, tensor)


# ----------------------------------------------------------------------------- layout


def depths(graph: DepsGraph) -> dict[int, int]:
    """Each task's column: 0 without predecessors, else one more than its deepest predecessor
    (``depths(graph)[3] == 1`` when task 3 waits only for tasks without predecessors)."""
    # In topological order (Kahn's), not by recursion: a run may chain thousands of tasks.
    succs: dict[int, list[int]] = {t: [] for t in graph.task_ids}
    waiting = dict.fromkeys(graph.task_ids, 0)
    for edge in graph.edges:
        succs[edge.src].append(edge.dst)
        waiting[edge.dst] += 1
    depth = {t: 0 for t, n in waiting.items() if n == 0}
    ready = list(depth)
    while ready:
        task = ready.pop()
        for nxt in succs[task]:
            depth[nxt] = max(depth.get(nxt, 0), depth[task] + 1)
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    stuck = sorted(t for t, n in waiting.items() if n > 0)
    if stuck:
        raise DepsFileError(
            f"{graph.source or 'the deps data'}: the edges form a cycle through task {stuck[0]}", hint=HINT
        )
    return depth


def columns(graph: DepsGraph) -> list[list[int]]:
    """The tasks of each column, top to bottom: each column ordered by the mean row of the tasks
    it waits for (fewer crossing arrows), then by task id: ``columns(graph) == [[1, 2], [3, 4]]``."""
    depth = depths(graph)
    preds: dict[int, list[int]] = {t: [] for t in graph.task_ids}
    for edge in graph.edges:
        preds[edge.dst].append(edge.src)
    cols: list[list[int]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    row: dict[int, float] = {}
    for task in graph.task_ids:
        cols[depth[task]].append(task)
    for col in cols:
        col.sort(key=lambda t: (sum(row[p] for p in preds[t]) / len(preds[t]) if preds[t] else -1.0, t))
        row.update({t: float(i) for i, t in enumerate(col)})
    return cols


# ----------------------------------------------------------------------------- text


def _cycles(records: Sequence[TaskRecord]) -> tuple[int, int]:
    return min(r.start_cycle for r in records), max(r.end_cycle for r in records)


def _edge_label(edge: TaskEdge) -> str:
    return "deps=" if edge.tensor is None else f"via {edge.tensor}"


def _heading(graph: DepsGraph) -> str:
    name = graph.program or (Path(graph.source).parent.name if graph.source else "task graph")
    parts = [f"{len(graph.task_ids)} task(s)", f"{len(graph.edges)} edge(s)"]
    if graph.platform:
        parts.append(f"on {graph.platform}")
    if graph.total_cycles is not None:
        parts.append(f"{graph.total_cycles} modeled cycles in all")
    return f"{name}: {', '.join(parts)}"


def deps_text(graph: DepsGraph) -> str:
    """The tasks (one line per block) and the edges as plain text: ``print(deps_text(graph))``."""
    from pypto.runtime.reports.memory_map import table

    rows: list[list[object]] = [["TASK", "BLOCK", "KERNEL", "CORE GROUP", "START", "END", "CYCLES", "SOURCE"]]
    for t in sorted(graph.tasks, key=lambda t: (t.task_id, t.block)):
        cycles = t.end_cycle - t.start_cycle
        rows.append(
            [t.task_id, t.block, t.kernel, t.core_group, t.start_cycle, t.end_cycle, cycles, t.source or "-"]
        )
    lines = [_heading(graph), "", "tasks (modeled cycles):", *table(rows, "  "), "", "edges:"]
    width = max((len(f"{e.src} {graph.kernel(e.src)}") for e in graph.edges), default=0)
    for e in graph.edges:
        left = f"{e.src} {graph.kernel(e.src)}".ljust(width)
        lines.append(f"  {left} -> {e.dst} {graph.kernel(e.dst)}  {_edge_label(e)}")
    if not graph.edges:
        lines.append("  (none: no task waited for another)")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- svg

BOX_H, COL_GAP, ROW_GAP, PAD = 64, 150, 26, 24
# Fills by kernel, so the tasks of one kernel (a scope in a loop) share a colour.
PALETTE = ("#ddf4ff", "#fff1e5", "#dafbe1", "#fbefff", "#fff8c5", "#ffebe9", "#e7ecf0", "#d8f3f0")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _box_text(graph: DepsGraph, task: int) -> tuple[str, str, str]:
    blocks = graph.blocks(task)
    start, end = _cycles(blocks)
    groups = sorted({b.core_group for b in blocks})
    where = f"cg {groups[0]}" if len(groups) == 1 else f"{len(blocks)} blocks, cg {groups[0]}–{groups[-1]}"
    return blocks[0].kernel, f"task {task} · {where}", f"cycles {start}–{end}"


Point = tuple[float, float]


def _on_curve(curve: tuple[Point, Point, Point, Point], t: float) -> Point:
    """The point at ``t`` of a cubic Bézier curve."""
    weights = ((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3)
    return (
        sum(w * p[0] for w, p in zip(weights, curve, strict=True)),
        sum(w * p[1] for w, p in zip(weights, curve, strict=True)),
    )


def _label_spot(
    curve: tuple[Point, Point, Point, Point], label: str, taken: list[tuple[float, float, float, float]]
) -> Point:
    """Where on its arrow a label goes: mid-curve, else the nearest point along it whose label
    covers no box and no label placed before (mid-curve when none is free); marks it taken."""
    half_w, half_h = 3.4 * len(label) + 4, 8
    spot = _on_curve(curve, 0.5)
    for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78, 0.15, 0.85):
        x, y = _on_curve(curve, t)
        box = (x - half_w, y - half_h, x + half_w, y + half_h)
        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
            spot = (x, y)
            break
    taken.append((spot[0] - half_w, spot[1] - half_h, spot[0] + half_w, spot[1] + half_h))
    return spot


def deps_svg(graph: DepsGraph) -> str:
    """The graph as one SVG drawing: ``Path("deps.svg").write_text(deps_svg(graph))``."""
    cols = columns(graph)
    texts = {t: _box_text(graph, t) for t in graph.task_ids}
    longest = max((len(line) for lines in texts.values() for line in lines), default=10)
    box_w = max(170, min(300, 7 * longest + 28))
    place: dict[int, tuple[float, float]] = {}
    tallest = max((len(c) for c in cols), default=0)
    height = PAD * 2 + tallest * BOX_H + max(tallest - 1, 0) * ROW_GAP
    for ci, col in enumerate(cols):
        used = len(col) * BOX_H + (len(col) - 1) * ROW_GAP
        top = PAD + (height - 2 * PAD - used) / 2  # each column centred on the tallest
        for ri, task in enumerate(col):
            place[task] = (PAD + ci * (box_w + COL_GAP), top + ri * (BOX_H + ROW_GAP))
    width = PAD * 2 + len(cols) * box_w + max(len(cols) - 1, 0) * COL_GAP
    colours: dict[str, str] = {}
    for t in graph.task_ids:
        colours.setdefault(graph.kernel(t), PALETTE[len(colours) % len(PALETTE)])

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="deps" width="{width}" height="{height}" '
        'style="background:#ffffff" '
        f'viewBox="0 0 {width} {height}" font-family="system-ui, DejaVu Sans, sans-serif" font-size="12">',
        f"<title>{esc(_heading(graph))}</title>",
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#57606a"/></marker>'
        "</defs>",
    ]
    taken = [(x, y, x + box_w, y + BOX_H) for x, y in place.values()]  # what a label must not cover
    labels = []
    for i, e in enumerate(graph.edges):
        sx, sy = place[e.src]
        dx, dy = place[e.dst]
        x1, y1, x2, y2 = sx + box_w, sy + BOX_H / 2, dx - 2, dy + BOX_H / 2
        bend = max((x2 - x1) / 2, 40)
        # An arrow past a column arcs up through the gap above its row instead of under the boxes.
        lift = min(y1, y2) - (BOX_H + ROW_GAP) * 2 / 3 if x2 - x1 > COL_GAP + 4 else None
        curve = ((x1, y1), (x1 + bend, lift or y1), (x2 - bend, lift or y2), (x2, y2))
        path = "M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}".format(
            *(c for p in curve for c in p)
        )
        dash = ' stroke-dasharray="6 4"' if e.tensor is None else ""
        title = (
            f"<title>task {e.src} {esc(graph.kernel(e.src))} → task {e.dst} {esc(graph.kernel(e.dst))}: "
            f"{esc(_edge_label(e))}</title>"
        )
        parts.append(
            f'<g class="edge" data-edge="{i}" data-src="{e.src}" data-dst="{e.dst}">{title}'
            f'<path d="{path}" fill="none" stroke="#57606a" stroke-width="1.6"{dash} '
            'marker-end="url(#arrow)"/></g>'
        )
        lx, ly = _label_spot(curve, _edge_label(e), taken)
        labels.append(
            f'<g class="edge label" data-src="{e.src}" data-dst="{e.dst}">{title}'
            f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="middle" fill="#24292f" stroke="#ffffff" '
            f'stroke-width="4" paint-order="stroke">{esc(_edge_label(e))}</text></g>'
        )
    for task, (x, y) in place.items():
        kernel, line2, line3 = texts[task]
        blocks = graph.blocks(task)
        where = blocks[0].source or "source line unknown"
        parts.append(
            f'<g class="task" data-task="{task}"><title>task {task}: {esc(kernel)} at {esc(where)}</title>'
            f'<rect x="{x}" y="{y:.1f}" width="{box_w}" height="{BOX_H}" rx="6" fill="{colours[kernel]}" '
            f'stroke="#57606a" stroke-width="1.2"/>'
            f'<text x="{x + 10}" y="{y + 20:.1f}" font-weight="600" font-size="13">'
            f"{esc(_short(kernel, 38))}</text>"
            f'<text x="{x + 10}" y="{y + 38:.1f}" fill="#424a53">{esc(line2)}</text>'
            f'<text x="{x + 10}" y="{y + 55:.1f}" fill="#424a53">{esc(line3)}</text></g>'
        )
    parts += labels  # above every arrow and box
    parts.append("</svg>")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- html

HTML_CSS = """
svg.deps g.task, table.grid tr[data-task] { cursor: default; }
svg.deps g.task.hot rect { stroke: var(--hot); stroke-width: 2.5; }
svg.deps g.edge.hot path { stroke: var(--hot); stroke-width: 2.5; }
td.bar { width: 220px; min-width: 220px; }
td.bar div { position: relative; height: 10px; background: var(--wash); border-radius: 2px; }
td.bar span { position: absolute; top: 0; bottom: 0; background: #54aeff; border-radius: 2px; }
"""

# Hovering a task (its box or its row) lights up its box, its rows and the arrows at it.
HTML_SCRIPT = """
(function () {
  function light(task, on) {
    document.querySelectorAll('[data-task="' + task + '"]').forEach(function (el) {
      el.classList.toggle('hot', on);
    });
    document.querySelectorAll('g.edge').forEach(function (el) {
      if (el.dataset.src === task || el.dataset.dst === task) { el.classList.toggle('hot', on); }
    });
  }
  document.querySelectorAll('[data-task]').forEach(function (el) {
    el.addEventListener('mouseenter', function () { light(el.dataset.task, true); });
    el.addEventListener('mouseleave', function () { light(el.dataset.task, false); });
  });
})();
"""


def deps_html(graph: DepsGraph) -> str:
    """One self-contained page: the drawing, a table of the tasks and one of the edges
    (``Path("deps.html").write_text(deps_html(graph))``)."""
    end = graph.total_cycles or max((t.end_cycle for t in graph.tasks), default=0) or 1
    waits: dict[int, list[str]] = {}
    for e in graph.edges:
        waits.setdefault(e.dst, []).append(f"{e.src} {graph.kernel(e.src)} ({_edge_label(e)})")
    rows = []
    for t in sorted(graph.tasks, key=lambda t: (t.task_id, t.block)):
        left, span = 100 * t.start_cycle / end, 100 * max(t.end_cycle - t.start_cycle, 0) / end
        source = t.source or "-"
        rows.append(
            f'<tr data-task="{t.task_id}"><td class="num">{t.task_id}</td><td class="num">{t.block}</td>'
            f"<td><code>{esc(t.kernel)}</code></td><td class='num'>{t.core_group}</td>"
            f"<td class='num'>{t.start_cycle}</td><td class='num'>{t.end_cycle}</td>"
            f"<td class='num'>{t.end_cycle - t.start_cycle}</td>"
            f'<td class="bar"><div><span style="left:{left:.2f}%;width:{max(span, 0.4):.2f}%">'
            "</span></div></td>"
            f"<td>{esc(', '.join(waits.get(t.task_id, [])) or '-')}</td>"
            f'<td><code title="{esc(source)}">{esc(Path(source).name if t.source else source)}</code>'
            "</td></tr>"
        )
    edge_rows = [
        f'<tr data-task="{e.dst}"><td class="num">{e.src}</td>'
        f"<td><code>{esc(graph.kernel(e.src))}</code></td>"
        f'<td class="num">{e.dst}</td><td><code>{esc(graph.kernel(e.dst))}</code></td>'
        f"<td>{esc(_edge_label(e))}</td>"
        f"<td>{'declared with deps=' if e.tensor is None else 'inferred'}</td></tr>"
        for e in graph.edges
    ]
    clock = f" at {graph.clock_mhz:g} MHz" if graph.clock_mhz else ""
    title = graph.program or "task graph"
    body = f"""
<h1>Task graph of <code>{esc(title)}</code></h1>
<p class="lede">{esc(_heading(graph))}. Times are modeled cycles{esc(clock)} from the simulator's cost
model, not measurements. Columns are dependency depth; a solid arrow is an edge inferred from the
tensor it names, a dashed one an edge declared with <code>deps=</code>.</p>
<div class="scroll">{deps_svg(graph)}</div>
<h2>Tasks</h2>
<p class="note">One row per block (a <code>pl.spmd</code> task has one per core group). The bar shows
when the block ran within the whole run.</p>
<table class="grid"><thead><tr><th class="num">task</th><th class="num">block</th><th>kernel</th>
<th class="num">core group</th><th class="num">start</th><th class="num">end</th><th class="num">cycles</th>
<th>timeline</th><th>waits for</th><th>source</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table>
<h2>Edges</h2>
<table class="grid"><thead><tr><th class="num">from</th><th>kernel</th><th class="num">to</th>
<th>kernel</th><th>label</th><th>kind</th></tr></thead>
<tbody>{"".join(edge_rows) or '<tr><td colspan="6">no task waited for another</td></tr>'}</tbody></table>
"""
    return page(f"task graph: {title}", body, HTML_CSS, HTML_SCRIPT)


def render(graph: DepsGraph, fmt: str) -> str:
    """``graph`` in one of :data:`FORMATS`: ``render(graph, "svg")``."""
    return {"text": deps_text, "svg": deps_svg, "html": deps_html}[fmt](graph)
