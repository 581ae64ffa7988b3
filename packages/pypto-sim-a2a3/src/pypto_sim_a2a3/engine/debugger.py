"""The kernel debugger of the simulator: ``pl.debug.print``, breakpoints and an interactive prompt.

A :class:`DebugSession` lives for one run. Every core's kernel frame asks it before each op
(:meth:`DebugSession.before_op`) whether to stop there: at a ``pl.debug.breakpoint()``, at the
first op of a ``break_at`` line, or at the next op of a core being stepped. A stop opens a prompt
on stdin/stdout with pdb's commands (``p``, ``n``, ``c``, ``w``, ``q``, ...), where values are
named by the user's *source* names (``acc``, not ``acc_2``). ``debug.print`` shows labels and
values, each line prefixed by ``[core lane block cycle]``.

Neither a print nor a stop yields to the scheduler: the modeled time, timelines and reports of a
run are the same with and without them. Output goes to ``sys.stdout`` as it is when the line is
written (so ``contextlib.redirect_stdout`` redirects it); the prompt reads ``sys.stdin``.
"""

from __future__ import annotations

import keyword
import linecache
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch._tensor_str import get_printoptions

from pypto.ir import Assign, Call, For, Function, Program, PyptoError, SourceSpan, TileType, Var, While
from pypto.ir.breakpoints import (
    BreakLocation,
    BreakpointError,
    kernel_calls,
    missing_break_line,
    parse_break_at,
)
from pypto.ir.nodes import walk_stmts
from pypto.ir.ops import Observes, debug, get_op, user_name
from pypto.ir.printer import format_expr
from pypto.ir.semantics import PrefetchEvent
from pypto_sim_a2a3.hw.ring import Token

if TYPE_CHECKING:
    from pypto_sim_a2a3.engine.interpreter import KernelFrame
    from pypto_sim_a2a3.engine.scheduler import Scheduler

__all__ = ["BreakLocation", "BreakpointError", "DebugSession", "DebuggerQuit", "debugs", "parse_break_at"]

# torch's own summarisation (threshold 1000 elements, 3 edge items), without a shared scale factor.
_PRINT_OPTIONS = {"threshold": 1000, "edgeitems": 3, "linewidth": 100, "precision": 4, "sci_mode": False}
# Suffixes the compiler adds to a source name (a tile's memory space, a split half, a home).
_DERIVED = re.compile(r"_(?:\d+|vec|mat|left|right|acc|bias|home|first\d*|ahead\d*|next|last\d*)$")


class DebuggerQuit(PyptoError):
    """The user quit the kernel debugger (``q``): the run stopped there, its outputs unfinished."""

    kind = "stopped"


def source_name(var: Var) -> str:
    """The name the user wrote for ``var``: the identifier its span points at, else its name
    without the suffixes the compiler adds (``acc_2`` -> ``acc``, ``acc_vec`` -> ``acc``)."""
    span = var.span
    if span is not None and span.end_col is not None:
        text = span.source_line()[span.col : span.end_col]
        if text.isidentifier() and not keyword.iskeyword(text):
            return text
    name = var.name
    while True:
        stripped = _DERIVED.sub("", name)
        if stripped == name or not stripped:
            return name
        name = stripped


def _function_vars(fn: Function) -> dict[str, Var]:
    """Every variable ``fn`` binds, by its IR name."""
    found = {p.var.name: p.var for p in fn.params}
    for stmt in walk_stmts(fn.body):
        if isinstance(stmt, Assign):
            found[stmt.target.name] = stmt.target
        if isinstance(stmt, For):
            found[stmt.var.name] = stmt.var
        if isinstance(stmt, (For, While)):
            for v in (*stmt.iter_args, *stmt.results):
                found[v.name] = v
    return found


# ---------------------------------------------------------------- showing values


def describe_value(value: Any, var: Any = None) -> str:
    """A value as the debugger shows it: a scalar plainly, a tile or tensor as its shape, dtype,
    memory space and valid shape, then its elements summarised the way torch prints a tensor."""
    if isinstance(value, Token):
        return "(no data: a token, lane 1 of a split=NONE pop)"
    if isinstance(value, PrefetchEvent):
        return repr(value)
    if isinstance(value, torch.Tensor):
        t = getattr(var, "type", None)
        head = _tile_head(value, t)
        shown = _valid_part(value, t)
        with torch.no_grad(), _torch_printoptions():
            body = _torch_body(shown)
        return f"{head}\n{body}" if "\n" in body or len(head) + len(body) > 90 else f"{head} {body}"
    if isinstance(value, tuple):
        return "(" + ", ".join(describe_value(v) for v in value) + ")"
    return repr(value)


@contextmanager
def _torch_printoptions() -> Iterator[None]:
    """torch's print options set to :data:`_PRINT_OPTIONS` inside the block, the user's after it."""
    saved = get_printoptions()
    torch.set_printoptions(**_PRINT_OPTIONS)
    try:
        yield
    finally:
        torch.set_printoptions(**saved)


def _tile_head(value: torch.Tensor, t: Any) -> str:
    dtype = t.dtype.name if t is not None and hasattr(t, "dtype") else str(value.dtype).removeprefix("torch.")
    shape = list(value.shape)
    if isinstance(t, TileType):
        space = t.memory_space.name if t.memory_space is not None else "?"
        valid = list(t.valid_shape) if t.valid_shape is not None else shape
        text = ", ".join(format_expr(d) if not isinstance(d, int) else str(d) for d in valid)
        return f"Tile{shape} {dtype} {space} valid=[{text}]"
    return f"Tensor{shape} {dtype}"


def _valid_part(value: torch.Tensor, t: Any) -> torch.Tensor:
    """The valid region of a tile whose valid shape is static and smaller than its shape."""
    if not isinstance(t, TileType) or t.valid_shape is None:
        return value
    if not all(isinstance(d, int) for d in t.valid_shape) or len(t.valid_shape) != value.dim():
        return value
    return value[tuple(slice(0, d) for d in t.valid_shape)]


def _torch_body(t: torch.Tensor) -> str:
    """torch's printing of ``t`` without the ``tensor(`` wrapper and its dtype suffix."""
    text = repr(t.detach().cpu())
    text = re.sub(r",\s*dtype=[\w.]+\)$", ")", text)
    text = text.removeprefix("tensor(").removesuffix(")")
    return "\n".join(line[7:] if line.startswith(" " * 7) else line for line in text.split("\n"))


# ---------------------------------------------------------------- the session


class DebugSession:
    """The debugger of one run: prints, breakpoints, the prompt (see the module docstring)."""

    def __init__(
        self, program: Program, breaks: tuple[BreakLocation, ...] = (), scheduler: Scheduler | None = None
    ):
        self.program = program
        self.breaks = breaks
        self.scheduler = scheduler
        self.stepping: set[str] = set()  # the cores `n` steps on (each stops at its next op)
        self.frame_vars: dict[int, dict[str, Var]] = {}
        self._check_breaks()

    # ------------------------------------------------------------ checks when the run starts

    def _check_breaks(self) -> None:
        """Each ``break_at`` line holds an op of a kernel of the program, or it is an error now."""
        for where in self.breaks:
            problem = missing_break_line(self.program, where)
            if problem is not None:
                raise problem

    # ------------------------------------------------------------ print

    def show(self, frame: KernelFrame, call: Call, args: tuple[Any, ...]) -> None:
        """``pl.debug.print``: its labels and values on one line (a tile's elements below it)."""
        pieces: list[str] = []
        parts = call.attrs.get("parts", tuple(range(len(args))))
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
            else:
                pieces.append(describe_value(args[part], call.args[part]))
        self.write(f"{self.prefix(frame)} " + " ".join(pieces))

    def prefix(self, frame: KernelFrame) -> str:
        """``[cg0.AIV1 lane=1 block=0 cycle=812]``: the core, its lane, the block, the modeled cycle."""
        role = frame.role
        lane = f"lane={role.lane}" if role.kind.value == "AIV" else "lane=-"
        return f"[{role.core.name} {lane} block={frame.block} cycle={role.core.clock}]"

    def write(self, text: str) -> None:
        out = sys.stdout
        out.write(text + "\n")
        out.flush()

    # ------------------------------------------------------------ stopping

    def before_op(self, frame: KernelFrame, call: Call) -> None:
        """Stop at ``call`` if a breakpoint, a ``break_at`` line or a step says so."""
        span = call.span
        core = frame.role.core.name
        if call.op == debug.breakpoint:
            reason = "breakpoint"
        elif core in self.stepping:
            if get_op(call.op).has(Observes) or span is None:  # index math the compiler made: no line
                return
            reason = "step"
        elif span is not None and span.line not in frame.debug_hits and self._breaks_here(span, core):
            # Once per pass over the line: the compiler interleaves the ops of neighbouring lines.
            frame.debug_hits.add(span.line)
            reason = f"break_at {span.file}:{span.line}"
        else:
            return
        self.stepping.discard(core)
        self.prompt(frame, call, reason)

    def _breaks_here(self, span: SourceSpan, core: str) -> bool:
        return any(
            b.line == span.line and b.matches_file(span.file) and b.matches_core(core) for b in self.breaks
        )

    def prompt(self, frame: KernelFrame, call: Call, reason: str) -> None:
        """The interactive prompt at a stop: read commands until one goes on."""
        self.write(f"{self.prefix(frame)} stopped ({reason}) in {frame.fn.name}")
        self.write(self._op_line(call))
        while True:
            sys.stdout.write("(pypto-dbg) ")
            sys.stdout.flush()
            line = sys.stdin.readline()
            if not line:  # end of input: go on as `c` would
                self.write("")
                return
            command, _, rest = line.strip().partition(" ")
            rest = rest.strip()
            if command in ("c", "cont", "continue"):
                return
            if command in ("n", "next", "s", "step"):
                self.stepping.add(frame.role.core.name)
                return
            if command in ("q", "quit", "exit"):
                core = frame.role.core
                raise DebuggerQuit(
                    f"the kernel debugger quit on {core.name} at modeled cycle {core.clock}",
                    call.span,
                    "the run stopped there and its outputs are unfinished; run again to debug again",
                )
            self.command(frame, call, command, rest)

    def command(self, frame: KernelFrame, call: Call, command: str, rest: str) -> None:
        """A command that looks and stays at the stop."""
        try:
            if command in ("p", "print"):
                self.write(self.evaluate(frame, rest))
            elif command in ("w", "where", "bt"):
                self.write(self.where(frame, call))
            elif command in ("l", "list"):
                self.write(_neighbours(call.span, 5))
            elif command in ("locals", "a", "args"):
                self.write(self.locals_text(frame))
            elif command in ("pipes", "rings"):
                self.write(self.pipes_text(frame))
            elif command in ("cycle", "time"):
                self.write(self.cycle_text(frame))
            elif command in ("h", "help", "?"):
                self.write(HELP)
            elif command == "":
                pass
            else:
                self.write(f"*** unknown command {command!r}: h lists the commands")
        except Exception as exc:  # a bad expression must not end the session
            self.write(f"*** {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------ what the commands show

    def names(self, frame: KernelFrame) -> dict[str, tuple[Var | None, Any]]:
        """The core's live values by source name (the latest bound one of each)."""
        known = self.frame_vars.get(id(frame.fn))
        if known is None:
            known = self.frame_vars[id(frame.fn)] = _function_vars(frame.fn)
        found: dict[str, tuple[int, Var | None, Any]] = {}
        for name, value in frame.env.items():
            var = known.get(name)
            shown = source_name(var) if var is not None else name
            order = frame.bound_order.get(name, -1)
            if shown not in found or order >= found[shown][0]:
                found[shown] = (order, var, value)
        return {name: (var, value) for name, (_, var, value) in found.items()}

    def evaluate(self, frame: KernelFrame, expr: str) -> str:
        if not expr:
            return "*** p takes a name or an expression: p acc, p acc[0, :4]"
        names = self.names(frame)
        if expr in names:
            var, value = names[expr]
            return f"{expr} = {describe_value(value, var)}"
        if expr.isidentifier():
            return self._not_live(frame, expr)
        scope = {name: value for name, (_, value) in names.items()}
        value = eval(expr, {"torch": torch, "__builtins__": {}}, scope)
        return describe_value(value)

    def _not_live(self, frame: KernelFrame, name: str) -> str:
        """Why ``name`` has no value here: not bound yet (or no longer) on this core, or a
        variable of another kernel of the program (the other side of a mixed kernel)."""
        core = frame.role.core.name
        elsewhere = [
            f"{fn.name} ({fn.kind.value})"
            for fn in self.program.functions.values()
            if fn is not frame.fn and any(source_name(v) == name for v in _function_vars(fn).values())
        ]
        here = any(source_name(v) == name for v in _function_vars(frame.fn).values())
        if here:
            also = f" ({name} is also a variable of {', '.join(elsewhere)})" if elsewhere else ""
            when = f"{frame.fn.name} binds it later or no longer holds it"
            return f"*** {name} is not live on {core} here: {when}{also}"
        if elsewhere:
            owners = ", ".join(elsewhere)
            return f"*** {name} is not live on {core}: it belongs to {owners}, which runs on other cores"
        return f"*** no variable {name!r} in {frame.fn.name}"

    def locals_text(self, frame: KernelFrame) -> str:
        lines = []
        for name, (var, value) in sorted(self.names(frame).items()):
            if isinstance(value, torch.Tensor):
                head = _tile_head(value, getattr(var, "type", None))
                lines.append(f"  {name}: {head}")
            else:
                lines.append(f"  {name} = {describe_value(value, var)}")
        return "\n".join(lines) or "  (no values yet)"

    def where(self, frame: KernelFrame, call: Call) -> str:
        role = frame.role
        chain = [self.program.entry, role.launch.name, frame.fn.name]
        seen: list[str] = []
        for name in chain:
            if name not in seen:
                seen.append(name)
        return "\n".join(
            [
                f"core {role.core.name}  lane {role.lane if role.kind.value == 'AIV' else '-'}  "
                f"block {frame.block} of {frame.block_num}  cycle {role.core.clock}",
                "call chain: " + " -> ".join(seen),
                _neighbours(call.span, 2),
            ]
        )

    def cycle_text(self, frame: KernelFrame) -> str:
        now = self.scheduler.now if self.scheduler is not None else frame.role.core.clock
        core = frame.role.core
        busy = f"busy {core.busy}, stalled {core.stalled}"
        return f"{core.name}: modeled cycle {core.clock} ({busy}); chip at {now}"

    def pipes_text(self, frame: KernelFrame) -> str:
        launch = frame.role.launch
        lines = []
        for pipe in launch.pipes.values():
            for consumer, ring in pipe.rings.items():
                states = ", ".join(slot.describe(ring.producers) for slot in ring.slots)
                lines.append(f"  {pipe.name} -> {consumer}: {states}")
        for proc in self._blocked():
            lines.append(f"  waiting: {proc}")
        return "\n".join(lines) or f"  {launch.name} has no open pipes"

    def _blocked(self) -> Iterator[str]:
        if self.scheduler is None:
            return
        for core, wait in self.scheduler.waiting():
            yield f"{core} {wait.blocked().text}"

    def _op_line(self, call: Call) -> str:
        span = call.span
        text = span.source_line().strip() if span is not None else ""
        where = f"{span.file}:{span.line}" if span is not None else "(no source line)"
        return f"> {where}  {user_name(call.op)}\n-> {text}"


def _neighbours(span: SourceSpan | None, around: int) -> str:
    """The source line of ``span`` with ``around`` lines either side, the line marked ``->``."""
    if span is None:
        return "(no source line)"
    lines = []
    for n in range(max(1, span.line - around), span.line + around + 1):
        text = linecache.getline(span.file, n).rstrip("\n")
        if not text and n > span.line:
            break
        lines.append(f"{n:>5} {'->' if n == span.line else '  '} {text}")
    return "\n".join(lines)


def debugs(program: Program) -> bool:
    """Whether a kernel of ``program`` holds a ``pl.debug`` op."""
    return any(get_op(c.op).has(Observes) for fn in program.functions.values() for c in kernel_calls(fn))


HELP = """\
Commands (pdb's names):
  p EXPR      print a value by its source name (p acc) or an expression of them (p acc[0, :4])
  n           run to the next op of this core and stop there
  c           continue to the next breakpoint (or to the end of the run)
  w           where: core, lane, block, cycle, the source line with its neighbours, the call chain
  l           list the source around the stop
  locals      the core's live tiles and scalars, by source name
  pipes       the cross-core pipes' ring slots (free, pushed, popped) and the cores that wait
  cycle       the core's modeled cycle (busy, stalled) and the chip's
  q           quit: stop the run (DebuggerQuit)
  h           this help"""
