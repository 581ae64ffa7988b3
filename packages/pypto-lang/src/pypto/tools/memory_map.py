"""Each kernel's on-chip memory as one HTML page: addresses across, lifetimes down.

For every kernel with a memory plan (after ``AllocateMemory``) and every on-chip space it uses,
a chart whose x axis is the byte address from 0 to the space's capacity (the pipe rings reserved
at the bottom marked as such, the usable limit and the peak as lines) and whose y axis is the
kernel's statements in program order, printed alongside. Each buffer is a rectangle at its
address and size, from the statement that defines it to its last use, as the allocator computes
it (:func:`pypto.passes.allocate.tile_lifetimes`): a tile used in a loop it was defined outside
of stays live to the loop's end, a loop-carried tile for the whole loop.

    python -m pypto.tools.memory_map build_output/mixed_matmul_bias_0123abcd4567 -o map.html
    python -m pypto.tools.memory_map dumps/08_after_AllocateMemory.py -o map.html

>>> compiled = kernel.compile(config=RunConfig(), a=a, b=b)  # doctest: +SKIP
>>> Path("map.html").write_text(memory_map_html(compiled))  # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pypto.ir import Assign, Function, MemorySpace, Program, PyptoError, Stmt, Target, print_ir
from pypto.ir.memory import layout
from pypto.ir.nodes import nested_bodies
from pypto.ir.printer import format_expr, format_type
from pypto.passes.allocate import tile_lifetimes
from pypto.runtime.compiling.artifacts import PROGRAM_FILE
from pypto.runtime.reports.memory_map import plan_of
from pypto.tools.page import esc, fmt_bytes, page

if TYPE_CHECKING:
    from pypto.runtime import CompiledProgram

ALLOCATE_PASS = "AllocateMemory"
ROW, HEADER, LISTING_W = 20, 76, 440  # pixels
# A kernel's charts share the width a 1400-pixel window leaves beside its listing, within limits.
ROW_WIDTH, CHART_MIN, CHART_MAX, GAP = 1290, 200, 600, 14


class MemoryMapError(PyptoError, ValueError):
    """A program, a pass dump or a directory the memory map cannot be drawn from; the message
    names it and the hint names what to give instead."""


@dataclass(frozen=True)
class Line:
    """One statement of a kernel: a row of the y axis."""

    depth: int  # loops, ifs and regions around it
    text: str  # as shown in the listing
    full: str  # as the printer writes it (the tooltip)


@dataclass(frozen=True)
class Buffer:
    """One allocation of a memory plan and the statements it is live across (``first`` the one
    that defines it, ``last`` its last use; None when the plan names a tile the body does not)."""

    name: str
    space: MemorySpace
    offset: int
    size: int
    first: int | None
    last: float | None  # half past a loop's last statement: live through all of it
    owner: str | None = None  # a loop result names the buffer of this iter_arg
    slots: int = 1  # a slotted tile: ``slots`` buffers of size // slots side by side
    slot_var: str | None = None  # the value that picks the slot (a pipelined loop's variable)

    @property
    def last_row(self) -> int | None:
        return None if self.last is None else math.floor(self.last)

    @property
    def address(self) -> str:
        return f"0x{self.offset:05x}"


@dataclass(frozen=True)
class Ring:
    """A window reserved at the bottom of a space (a pipe ring)."""

    space: MemorySpace
    offset: int
    size: int
    label: str


# ----------------------------------------------------------------------------- what is drawn


def statement_lines(body: tuple[Stmt, ...], depth: int = 0) -> list[Line]:
    """The statements of ``body`` in the order the allocator numbers them: each loop, if or region
    before what it holds (the positions of :func:`tile_lifetimes`): ``statement_lines(fn.body)``."""
    lines: list[Line] = []
    for stmt in body:
        full = print_ir(stmt).splitlines()[0]
        text = full
        if isinstance(stmt, Assign):  # the type is in the tooltip: the row stays readable
            text = f"{stmt.target.name} = {format_expr(stmt.value)}"
            full = f"{stmt.target.name}: {format_type(stmt.target.type)} = {format_expr(stmt.value)}"
        lines.append(Line(depth, text, full))
        for inner in nested_bodies(stmt):
            lines += statement_lines(inner, depth + 1)
    return lines


def kernel_buffers(fn: Function) -> list[Buffer]:
    """Every allocation of ``fn``'s memory plan with its lifetime in statement rows:
    ``[b.name for b in kernel_buffers(aiv)] == ["bias_vec", "add"]``."""
    plan = plan_of(fn)
    if plan is None:
        return []
    ranges, aliases = tile_lifetimes(fn.body, plan)
    by_name = {v.name: (first, last) for v, (first, last) in ranges.items()}
    owner_of = {result.name: iter_arg.name for result, iter_arg in aliases.items()}
    buffers = []
    for a in plan.allocations.values():
        owner = owner_of.get(a.name)
        first, last = by_name.get(owner or a.name, (None, None))
        buffers.append(
            Buffer(
                a.name,
                a.space,
                a.offset,
                a.end - a.offset,
                None if first is None else int(first),
                last,
                owner,
                a.slots,
                a.slot_var,
            )
        )
    order = list(MemorySpace)
    return sorted(buffers, key=lambda b: (order.index(b.space), b.offset, -1 if b.first is None else b.first))


def kernel_rings(fn: Function) -> list[Ring]:
    """The windows reserved at the bottom of ``fn``'s spaces, at their offsets: ``kernel_rings(aiv)``."""
    plan = plan_of(fn)
    if plan is None:
        return []
    rings = []
    for r, offset in zip(plan.reservations, layout(plan.reservations), strict=True):
        how = "automatic" if r.automatic else "requested"
        slots = f", {r.size // r.slot_size} slot(s) of {fmt_bytes(r.slot_size)}" if r.slot_size else ""
        name = f" {r.name}" if r.name else ""
        rings.append(Ring(r.space, offset, r.size, f"[reserved]{name} {r.reason} ({how}{slots})"))
    return rings


def spaces_of(fn: Function) -> list[MemorySpace]:
    """The spaces ``fn``'s plan uses, in the target's order: ``spaces_of(aiv) == [MemorySpace.Vec]``."""
    plan = plan_of(fn)
    if plan is None:
        return []
    used = (
        set(plan.peak) | {r.space for r in plan.reservations} | {a.space for a in plan.allocations.values()}
    )
    return [s for s in MemorySpace if s in used]


# ----------------------------------------------------------------------------- drawing


def _capacity(target: Target, space: MemorySpace, peak: int) -> tuple[int, int]:
    """The space's bytes present and usable on ``target`` (the peak, for a space it lacks)."""
    if space in target.memory:
        spec = target.spec(space)
        return max(spec.capacity, peak), spec.usable
    return max(peak, 1), max(peak, 1)


def _chart(fn: Function, space: MemorySpace, lines: list[Line], target: Target, key: str, width: int) -> str:
    plan = plan_of(fn)
    assert plan is not None
    peak = plan.peak.get(space, 0)
    capacity, usable = _capacity(target, space, peak)
    height = HEADER + max(len(lines), 1) * ROW

    def x(addr: int) -> float:
        return width * addr / capacity

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="space" width="{width + 1}" height="{height}" '
        f'data-space="{space.name}">',
        f'<defs><pattern id="hatch-{key}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eaeef2"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#afb8c1" stroke-width="2"/></pattern></defs>',
        f'<text x="0" y="15" class="title">{esc(space.name)}</text>',
        f'<text x="0" y="29" class="sub">peak {fmt_bytes(peak)} of '
        f"{fmt_bytes(usable)} usable ({peak / usable:.0%})</text>",
    ]
    for i in range(len(lines)):
        if i % 2:
            out.append(f'<rect x="0" y="{HEADER + i * ROW}" width="{width}" height="{ROW}" class="stripe"/>')
    for k in range(5):  # the address axis: 0, a quarter, ..., the capacity
        addr = capacity * k // 4
        anchor = "start" if k == 0 else "end" if k == 4 else "middle"
        out.append(
            f'<line x1="{x(addr):.1f}" y1="{HEADER - 8}" x2="{x(addr):.1f}" y2="{height}" class="tick"/>'
        )
        if k % 2 == 0 or width >= 300:  # a narrow chart labels every other tick: the labels fit
            out.append(
                f'<text x="{x(addr):.1f}" y="{HEADER - 12}" class="axis" text-anchor="{anchor}">'
                f"{fmt_bytes(addr) if addr else '0'}</text>"
            )
    for ring in (r for r in kernel_rings(fn) if r.space is space):
        w = x(ring.size)
        out.append(
            f'<g class="ring" data-ring="{esc(ring.label)}"><title>{esc(ring.label)}: {ring.size} bytes at '
            f"0x{ring.offset:05x}</title>"
            f'<rect x="{x(ring.offset):.1f}" y="{HEADER}" width="{w:.1f}" height="{height - HEADER}" '
            f'fill="url(#hatch-{key})" stroke="#8c959f"/>'
            f'<svg x="{x(ring.offset):.1f}" y="{HEADER}" width="{w:.1f}" height="{height - HEADER}">'
            f'<text x="5" y="14" class="ringlabel">reserved: pipe ring</text>'
            f'<text x="5" y="28" class="ringlabel">{fmt_bytes(ring.size)}</text></svg></g>'
        )
    buffers = [b for b in kernel_buffers(fn) if b.space is space]
    for b in buffers:
        if b.owner is not None or b.first is None or b.last is None or b.last_row is None:
            continue  # a loop's result is drawn as its iter_arg, whose buffer it names
        # Written during its first statement, read during its last: mid-row to mid-row, so an op's
        # result that takes the buffer of an operand dying at that op sits just below it.
        bx, bw = x(b.offset), max(x(b.size), 3.0)
        by, bh = HEADER + (b.first + 0.5) * ROW, max((b.last - b.first) * ROW, ROW / 2)
        also = [o.name for o in buffers if o.owner == b.name]
        named = f" (also {', '.join(also)}, the loop's result)" if also else ""
        if b.slots > 1:
            named += f" ({b.slots} slots of {b.size // b.slots}, picked by {b.slot_var})"
        out.append(
            f'<g class="buffer" data-buffer="{esc(b.name)}" data-address="{b.address}" '
            f'data-first="{b.first}" data-last="{b.last_row}" data-kernel="{esc(fn.name)}">'
            f"<title>{esc(b.name)}{esc(named)}: {space.name}[{b.address}, +{b.size}], statements "
            f"{b.first + 1}–{b.last_row + 1}</title>"
            f'<rect x="{bx:.1f}" y="{by:.1f}" width="{bw:.1f}" height="{bh:.1f}" rx="2"/>'
            f'<svg x="{bx:.1f}" y="{by:.1f}" width="{bw:.1f}" height="{bh:.1f}">'
            f'<text x="4" y="12">{esc(b.name)}</text></svg></g>'
        )
    # The peak and the limit, each labelled on its own line above the axis (they may be a few pixels
    # apart), on the side of its line that has room.
    marks = [(peak, "peak", HEADER - 33)] + ([(usable, "usable", HEADER - 22)] if usable < capacity else [])
    for addr, label, y in marks:
        at = x(addr)
        side = (at + 3, "start") if at < width / 2 else (at - 3, "end")
        out.append(
            f'<line x1="{at:.1f}" y1="{y + 3}" x2="{at:.1f}" y2="{height}" class="{label}"/>'
            f'<text x="{side[0]:.1f}" y="{y}" class="{label}label" text-anchor="{side[1]}">{label}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _listing(fn: Function, lines: list[Line]) -> str:
    rows = [
        f'<div class="stmt" data-row="{i}" title="{esc(line.full)}" '
        f'style="padding-left:{8 + 16 * line.depth}px">'
        f'<span class="no">{i + 1}</span><code>{esc(line.text)}</code></div>'
        for i, line in enumerate(lines)
    ]
    return (
        f'<div class="listing" style="width:{LISTING_W}px"><div class="head" style="height:{HEADER}px">'
        f'<span class="title">statements of <code>{esc(fn.name)}</code></span>'
        f'<span class="sub">program order, down</span></div>{"".join(rows)}</div>'
    )


def _table(fn: Function, lines: list[Line]) -> str:
    rows = []
    for b in kernel_buffers(fn):
        if b.first is None or b.last is None:
            lives, defined = "not in the body", "-"
        else:
            lives, defined = f"{b.first + 1}–{(b.last_row or 0) + 1}", lines[b.first].text
        note = f" (the buffer of {b.owner}, the loop's result)" if b.owner else ""
        if b.slots > 1:
            note += f" ({b.slots} slots, picked by {b.slot_var})"
        rows.append(
            f'<tr data-buffer="{esc(b.name)}" data-kernel="{esc(fn.name)}" data-address="{b.address}">'
            f"<td><code>{esc(b.name)}</code>{esc(note)}</td><td>{b.space.name}</td>"
            f'<td class="num"><code>{b.address}</code></td><td class="num">{b.size}</td>'
            f'<td class="num">{lives}</td><td><code class="def">{esc(defined)}</code></td></tr>'
        )
    for ring in kernel_rings(fn):
        rows.append(
            f'<tr class="reserved"><td>{esc(ring.label)}</td><td>{ring.space.name}</td>'
            f'<td class="num"><code>0x{ring.offset:05x}</code></td><td class="num">{ring.size}</td>'
            f'<td class="num">all</td><td>-</td></tr>'
        )
    return (
        '<table class="grid buffers"><thead><tr><th>buffer</th><th>space</th><th class="num">address</th>'
        '<th class="num">bytes</th><th class="num">statements</th><th>defined by</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _kernel(fn: Function, target: Target, index: int) -> str:
    lines = statement_lines(fn.body)
    plan = plan_of(fn)
    assert plan is not None
    spaces = spaces_of(fn)
    width = max(CHART_MIN, min(CHART_MAX, (ROW_WIDTH - LISTING_W) // len(spaces) - GAP))
    charts = "".join(_chart(fn, space, lines, target, f"{index}-{space.name}", width) for space in spaces)
    usable = {space: target.usable(space) if space in target.memory else "?" for space in spaces_of(fn)}
    peaks = ", ".join(f"{space.name} {plan.peak.get(space, 0)} of {usable[space]} bytes" for space in usable)
    return (
        f'<section class="kernel" id="{esc(fn.name)}" data-kernel="{esc(fn.name)}">'
        f"<h2><code>{esc(fn.name)}</code> "
        f"<span class='note'>({fn.kind.value} kernel; peak {esc(peaks)})</span></h2>"
        f'<div class="chart-row">{_listing(fn, lines)}{charts}</div>{_table(fn, lines)}</section>'
    )


MAP_CSS = f"""
.chart-row {{ display: flex; gap: {GAP}px; overflow-x: auto; padding-bottom: 6px; align-items: flex-start; }}
.listing {{ flex: none; position: sticky; left: 0; z-index: 1; background: var(--paper); }}
.listing .head {{ display: flex; flex-direction: column; justify-content: flex-end; padding-bottom: 8px; }}
.listing .stmt {{ height: {ROW}px; line-height: {ROW}px; white-space: pre; overflow: hidden;
                  text-overflow: ellipsis; border-radius: 3px; }}
.listing .stmt:nth-child(odd) {{ background: var(--wash); }}
.listing .stmt .no {{ display: inline-block; width: 26px; margin-left: -4px; color: var(--muted);
                      font-size: 11px; text-align: right; padding-right: 8px; }}
.listing .stmt.live {{ background: #ddf4ff; }}
.listing .stmt.def {{ background: #b6e3ff; font-weight: 600; }}
.title {{ font-weight: 600; font-size: 14px; }}
.sub, .axis {{ fill: var(--muted); color: var(--muted); font-size: 11px; }}
svg.space {{ flex: none; font-family: system-ui, "DejaVu Sans", sans-serif; overflow: visible; }}
svg.space text.title {{ font-size: 14px; fill: var(--ink); }}
svg.space .stripe {{ fill: var(--wash); }}
svg.space .tick {{ stroke: #d0d7de; stroke-width: 1; }}
svg.space .usable {{ stroke: var(--hot); stroke-width: 1.5; stroke-dasharray: 4 3; }}
svg.space .usablelabel {{ fill: var(--hot); font-size: 11px; }}
svg.space .peak {{ stroke: #8250df; stroke-width: 1.5; stroke-dasharray: 2 3; }}
svg.space .peaklabel {{ fill: #8250df; font-size: 11px; }}
svg.space .ringlabel {{ fill: #424a53; font-size: 11px; }}
svg.space g.buffer rect {{ fill: #54aeff; fill-opacity: 0.55; stroke: #0969da; stroke-width: 1; }}
svg.space g.buffer text {{ font-size: 11px; fill: #0a3069; }}
svg.space g.buffer.hot rect {{ fill: #fb8f44; fill-opacity: 0.85; stroke: #bc4c00; stroke-width: 2; }}
svg.space g.buffer, .listing .stmt {{ cursor: pointer; }}
table.buffers tr.reserved td {{ color: var(--muted); }}
code.def {{ color: var(--muted); }}
"""

# Hovering (or clicking, to keep it) a buffer lights its statements; a statement, the buffers live
# at it. Everything is found through data- attributes, per kernel section.
MAP_SCRIPT = """
(function () {
  var pinned = null;
  function clear(section) {
    section.querySelectorAll('.hot, .live, .def').forEach(function (el) {
      el.classList.remove('hot', 'live', 'def');
    });
  }
  function showBuffer(section, name) {
    clear(section);
    section.querySelectorAll('[data-buffer="' + name + '"]').forEach(function (el) {
      el.classList.add('hot');
      if (el.dataset.first === undefined) { return; }
      var first = +el.dataset.first, last = +el.dataset.last;
      section.querySelectorAll('.stmt').forEach(function (row) {
        var i = +row.dataset.row;
        if (i >= first && i <= last) { row.classList.add(i === first ? 'def' : 'live'); }
      });
    });
  }
  function showRow(section, row) {
    clear(section);
    section.querySelector('.stmt[data-row="' + row + '"]').classList.add('def');
    section.querySelectorAll('g.buffer').forEach(function (el) {
      if (+el.dataset.first <= row && row <= +el.dataset.last) { el.classList.add('hot'); }
    });
  }
  document.querySelectorAll('section.kernel').forEach(function (section) {
    section.querySelectorAll('g.buffer, tr[data-buffer]').forEach(function (el) {
      el.addEventListener('mouseenter', function () {
        if (!pinned) { showBuffer(section, el.dataset.buffer); }
      });
      el.addEventListener('mouseleave', function () { if (!pinned) { clear(section); } });
      el.addEventListener('click', function () {
        pinned = pinned === el ? null : el;
        if (pinned) { showBuffer(section, el.dataset.buffer); } else { clear(section); }
      });
    });
    section.querySelectorAll('.stmt').forEach(function (el) {
      el.addEventListener('mouseenter', function () { if (!pinned) { showRow(section, +el.dataset.row); } });
      el.addEventListener('mouseleave', function () { if (!pinned) { clear(section); } });
    });
  });
})();
"""


def memory_map_html(program: Program | CompiledProgram, target: Target | None = None) -> str:
    """The page for a lowered program (or a compiled one), drawn against ``target`` (default: the
    compiled program's platform's, else the session's platform's).

    >>> Path("map.html").write_text(memory_map_html(compiled))  # doctest: +SKIP
    """
    from pypto.runtime import CompiledProgram, RunConfig, get_target

    config = program.config if isinstance(program, CompiledProgram) else RunConfig()
    lowered = program.lowered if isinstance(program, CompiledProgram) else program
    if target is None:
        target = get_target(config.platform_name, config.platform_origin)
    kernels = [fn for fn in lowered.functions.values() if plan_of(fn) is not None]
    if not kernels:
        raise MemoryMapError(
            f"program {lowered.name} has no memory plan: no kernel of it went through {ALLOCATE_PASS}",
            hint=f"give the program as lowered by the whole pipeline, or a pass dump after {ALLOCATE_PASS}",
        )
    index = "".join(
        f'<li><a href="#{esc(fn.name)}"><code>{esc(fn.name)}</code></a> ({fn.kind.value})</li>'
        for fn in kernels
    )
    body = (
        f"<h1>Memory map of <code>{esc(lowered.name)}</code></h1>"
        f'<p class="lede">On-chip memory of each kernel on target <code>{esc(target.name)}</code>: byte '
        "addresses across, from 0 to the space's capacity; the kernel's statements down, in program "
        "order. Each buffer is a rectangle at its address and size, from the statement that defines it "
        "to its last use, as AllocateMemory computes it (a tile used in a loop it was defined outside "
        "of stays live to the loop's end); buffers share an address when one is dead before the other "
        "is born. Hatched: the pipe rings reserved at the bottom of a space (popped tiles live in their "
        "slots, not in buffers of their own). Hover a buffer or a statement; click a buffer to keep it "
        "lit.</p>"
        f'<ul class="kernels">{index}</ul>' + "".join(_kernel(fn, target, i) for i, fn in enumerate(kernels))
    )
    return page(f"memory map: {lowered.name}", body, MAP_CSS, MAP_SCRIPT)


# ----------------------------------------------------------------------------- reading a dump


def _dumps_after_allocate(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*_after_{ALLOCATE_PASS}.py")) + sorted(
        directory.glob(f"passes_dump/*_after_{ALLOCATE_PASS}.py")
    )


def _which_dump(directory: Path) -> str:
    found = _dumps_after_allocate(directory)
    if found:
        return f"give {found[0]} (or a later pass's dump)"
    return (
        f"give the dump NN_after_{ALLOCATE_PASS}.py (or a later pass's) that RunConfig(dump_passes=DIR) "
        "writes"
    )


def load_program(path: Path) -> Program:
    """The program of a pass dump (a ``.py`` file) or of a compiled program's output directory
    (its ``program.py``), checked to hold memory plans: ``load_program(Path("out"))``."""
    from pypto.language import parse_program

    if path.is_dir():
        if not (path / PROGRAM_FILE).is_file():
            raise MemoryMapError(
                f"{path} is a directory without {PROGRAM_FILE}: "
                "it is not a compiled program's output directory",
                hint=f"give the output directory (RunConfig(save_kernels_dir=DIR)), or {_which_dump(path)}",
            )
        path = path / PROGRAM_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise MemoryMapError(
            f"cannot read {path}: {reason}", hint="give a pass dump (.py) or an output directory"
        ) from None
    program = parse_program(text, str(path))
    if not any(plan_of(fn) is not None for fn in program.functions.values()):
        raise MemoryMapError(
            f"{path} holds no memory plan: it was written before {ALLOCATE_PASS} placed the tiles",
            hint=_which_dump(path.parent),
        )
    return program


@click.command(
    name="python -m pypto.tools.memory_map", context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("dump", type=click.Path(exists=True, path_type=Path), metavar="DUMP")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("memory_map.html"),
    show_default=True,
    metavar="OUT",
    help="The HTML file to write.",
)
@click.option(
    "-p",
    "--platform",
    metavar="PLATFORM",
    help="The platform whose target gives each space's capacity (see `pypto platforms`).",
    show_default="PYPTO_PLATFORM, [tool.pypto] platform, else a2a3sim",
)
def main(dump: Path, output: Path, platform: str | None) -> None:
    """Draw each kernel's on-chip memory as an HTML page: buffers by address and lifetime.

    DUMP is a pass dump written by RunConfig(dump_passes=DIR) or `pypto compile --dump-passes DIR`
    at or after NN_after_AllocateMemory.py, or a compiled program's output directory (it holds
    program.py). The page needs no network: open it in any browser.

    \b
    Examples:
      python -m pypto.tools.memory_map dumps/08_after_AllocateMemory.py -o map.html
      python -m pypto.tools.memory_map build_output/mixed_matmul_bias_0123abcd4567
    """
    from pypto.runtime import RunConfig, get_target

    try:
        program = load_program(dump)  # a dump without a memory plan is named before the platform
        config = RunConfig(platform=platform)
        target = get_target(config.platform_name, config.platform_origin)
        html = memory_map_html(program, target)
    except PyptoError as err:
        raise click.ClickException(err.render()) from None
    try:
        output.write_text(html, encoding="utf-8")
    except OSError as err:
        raise click.FileError(str(output), err.strerror or str(err)) from None
    click.echo(f"memory map written to {output}", err=True)


if __name__ == "__main__":
    main()
