"""Print IR as ``pl`` source: a ``@pl.program`` class that ``pl.parse`` reads back into an equal
program (``pypto.ir.equality``). Used for dumps, ``.lower()`` output, ``Program.as_python()`` and
golden tests.

The form, so that every part of a lowered program survives the round trip:

- each call is written under its op's own name (``pl.tile.muls``, ``pl.tpush_to_aiv``,
  ``pl.system.fence``), its operands positionally in the op's order and its attributes by
  keyword; scalar arithmetic is written with Python operators;
- a function's attributes are its first statement, ``pl.func_attr({...})`` (a memory plan as
  ``pl.MemoryPlan.placed(...)``); a kernel call's task attributes are keywords of the
  ``self.f(...)`` call (``access=``, ``deps=``, ...);
- a scope inside ``pl.manual_scope()`` or launched on several blocks is printed inside
  ``with pl.manual_scope():`` / ``with pl.spmd(n):``;
- variable names that Python or the parser would read otherwise (keywords, ``self``, ``pl``,
  a name bound twice by different variables) are printed with a suffix.

Comments carry what is only for the reader: each tile's placement and valid shape.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable
from contextvars import ContextVar
from enum import Enum
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.memory import Allocation, MemoryPlan, Reservation, layout
from pypto.ir.nodes import (
    Assign,
    Break,
    Call,
    Const,
    Continue,
    DimExpr,
    DynDim,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    MemRefSlot,
    ParamRef,
    Program,
    Return,
    ScopeStmt,
    SplitAivRegion,
    Stmt,
    TupleExpr,
    Var,
    While,
    function_bindings,
    register_printer,
)
from pypto.ir.ops import (
    OPS,
    CastMode,
    Elementwise,
    Infix,
    Level,
    NotifyOp,
    ReduceOp,
    Role,
    WaitCmp,
    debug,
    dist,
    op,
    system,
)
from pypto.ir.tasks import AccessMode, Predicate
from pypto.ir.types import (
    Direction,
    DistributedTensorType,
    HandleType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    Type,
)

_INDENT = "    "
# Names a variable may not print as: the parser reads them as the program (`self`) or the DSL (`pl`).
_RESERVED = frozenset({"self", "pl"})

Namer = Callable[[Var], str]
# The modules of the values printed that ``pl`` does not name (a plugin's enum): the program's
# text imports them first, so it parses back (pl.parse does imports).
_imports: ContextVar[set[str] | None] = ContextVar("pypto_printer_imports", default=None)
# Printing without the annotations of intermediate values (as_python(concise=True)).
_concise: ContextVar[bool] = ContextVar("pypto_printer_concise", default=False)
# Whether each statement's first line ends with ``# loc: file:line:col``, the source it came from.
_locations: ContextVar[bool] = ContextVar("pypto_printer_locations", default=False)
# The dynamic extents printed, each with the name it prints as: the program's text declares each
# (``M = pl.dynamic("M")``) first; a second extent of one name prints as ``M_2 = pl.dynamic("M")``.
_dyn_dims: ContextVar[dict[DynDim, str] | None] = ContextVar("pypto_printer_dyn_dims", default=None)
# The names the program's variables print as: a declared extent takes none of them, or a function
# with such a variable would read its annotations' extent as the variable.
_var_names: ContextVar[frozenset[str]] = ContextVar("pypto_printer_var_names", default=frozenset())


def _dyn_dim(dim: DynDim) -> str:
    """A dynamic extent by the name it prints as, noted so that the program's text declares it."""
    declared = _dyn_dims.get()
    if declared is None:
        return dim.name
    if dim not in declared:
        taken = set(declared.values()) | _var_names.get()
        name, n = dim.name, 1
        while name in taken:
            n += 1
            name = f"{dim.name}_{n}"
        declared[dim] = name
    return declared[dim]


def _extent(dim: object) -> str:
    """One entry of a tensor's shape: a number, or a dynamic extent's expression."""
    return format_expr(dim) if isinstance(dim, (DynDim, DimExpr)) else str(dim)


def _plain(var: Var) -> str:
    return var.name


def format_value(value: Any) -> str:
    """An attribute value as DSL text (what ``pl.func_attr`` and keyword arguments read back)."""
    if isinstance(value, DataType):
        return f"pl.{value.name}"
    if isinstance(value, MemorySpace):
        return f"pl.Mem.{value.name}"
    if isinstance(value, CastMode):
        return repr(value.value)  # as users write it: mode="rint"
    if isinstance(value, AccessMode):
        return repr(value.name)
    if isinstance(value, (NotifyOp, WaitCmp, ReduceOp)):
        _need_pld()
        return repr(value)
    if isinstance(value, Enum):
        kind = type(value)
        module = kind.__module__.split(".")
        if module[:2] == ["pypto", "ir"] or not all(part.isidentifier() for part in module):
            # pl re-exports the IR's enums; one of a module no import can name reads as pl's too
            return f"pl.{kind.__name__}.{value.name}"
        needed = _imports.get()
        if needed is not None:
            needed.add(kind.__module__)
        return f"{kind.__module__}.{kind.__qualname__}.{value.name}"  # a plugin's own, imported
    if isinstance(value, Predicate):
        return f"({value})"  # as the user writes it: predicate=(row_count[e] > 0)
    if isinstance(value, ParamRef):
        return value.name
    if isinstance(value, (DynDim, DimExpr)):
        return format_expr(value)
    if isinstance(value, MemoryPlan):
        return _memory_plan(value)
    if isinstance(value, Reservation):
        return _reservation(value)
    if isinstance(value, Allocation):
        return f"pl.Allocation({value.name!r}, {_placement(value)[1:-1]})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


PLD_IMPORT = "pypto.language.distributed as pld"


def _need_pld() -> None:
    """The printed program names ``pld``: its header imports it."""
    needed = _imports.get()
    if needed is not None:
        needed.add(PLD_IMPORT)


def _memory_plan(plan: MemoryPlan) -> str:
    placed = ", ".join(f"{name!r}: {_placement(a)}" for name, a in plan.allocations.items())
    args = ["{" + placed + "}", format_value(dict(plan.peak))]
    if plan.reservations:
        args.append(format_value(list(plan.reservations)))
    return f"pl.MemoryPlan.placed({', '.join(args)})"


def _placement(a: Allocation) -> str:
    where = f"{format_value(a.space)}, {a.offset:#x}, {a.size}"
    if a.slots > 1:
        where += f", {a.slots}, {a.slot_var!r}, {a.slot_start}, {a.slot_step}"
        if a.slot_scale != 1 or a.slot_shift:
            where += f", {a.slot_scale}, {a.slot_shift}"
    return f"({where})"


def _reservation(r: Reservation) -> str:
    args = [format_value(r.space), f"size={r.size}", f"reason={r.reason!r}"]
    if r.automatic:
        args.append("automatic=True")
    if r.slot_size is not None:
        args.append(f"slot_size={r.slot_size}")
    if r.base is not None:
        args.append(f"base={r.base}")
    if r.name is not None:
        args.append(f"name={r.name!r}")
    return f"pl.Reservation({', '.join(args)})"


def _carried_names(exprs: tuple[Expr, ...], name_of: Namer) -> str:
    """``a, b`` for two values, ``a,`` for one (a Python tuple of one)."""
    text = ", ".join(format_expr(e, name_of) for e in exprs)
    return text + "," if len(exprs) == 1 else text


def format_type(t: Type, memref: MemRefSlot | None = None, name_of: Namer = _plain) -> str:
    """A type as an annotation; ``memref`` is the ``pl.MemRef`` slot of a tile's assignment."""
    if isinstance(t, TensorType):
        shape = ", ".join(_extent(d) for d in t.shape)
        if isinstance(t, DistributedTensorType):
            _need_pld()
            return f"pld.DistributedTensor[[{shape}], pl.{t.dtype.name}]"
        return f"pl.Tensor[[{shape}], pl.{t.dtype.name}]"
    if isinstance(t, HandleType) and t.namespace == "pld":
        _need_pld()
    if isinstance(t, TileType):
        parts = [str(list(t.shape)), f"pl.{t.dtype.name}"]
        if memref is not None:
            slots = f", slots={memref.slots}" if memref.slots != 1 else ""
            parts.append(f"pl.MemRef({memref.name!r}{slots})[{memref.index_text(name_of)}]")
        if t.memory_space is not None:
            parts.append(f"pl.Mem.{t.memory_space.name}")
        if t.valid_shape is not None and tuple(t.valid_shape) != tuple(t.shape):
            parts.append(f"pl.TileView(valid_shape={list(t.valid_shape)})")  # the parser checks it
        return f"pl.Tile[{', '.join(parts)}]"
    return str(t)


def _const(c: Const) -> str:
    if isinstance(c.value, float) and not math.isfinite(c.value):
        return f"float({str(c.value)!r})"
    return repr(c.value)


def format_expr(e: Expr, name_of: Namer = _plain) -> str:
    if isinstance(e, Var):
        return name_of(e)
    if isinstance(e, Const):
        return _const(e)
    if isinstance(e, DynDim):
        return _dyn_dim(e)
    if isinstance(e, TupleExpr):
        return "[" + ", ".join(format_expr(x, name_of) for x in e.elements) + "]"
    if isinstance(e, Call):
        infix = _infix(e)
        if infix is not None and len(e.args) == 2:
            lhs, rhs = (_operand(a, name_of) for a in e.args)
            return f"{lhs} {infix} {rhs}"
        if infix is not None:
            return f"{infix}{_operand(e.args[0], name_of)}"
        args = [_argument(e, i, a, name_of) for i, a in enumerate(e.args)]
        if e.op == system.task_dummy:  # its deps are task ids of the frame, written as names
            return f"pl.system.task_dummy(deps=[{', '.join(e.attrs.get('deps', ()))}])"
        if e.op == debug.print:  # its labels stand between its operands, as written
            return f"pl.debug.print({_debug_print_args(e, args)})"
        if e.op == op.call:
            args += [f"{k}={_task_value(v)}" for k, v in e.attrs.items() if k != "callee"]
            return f"self.{e.attrs['callee']}({', '.join(args)})"
        if e.op == dist.dispatch:  # written as the call it is: chip_orch(..., device=r)
            return f"self.{e.attrs['callee']}({', '.join([*args[1:], f'device={args[0]}'])})"
        if e.op == dist.call_subworker:
            return f"self.{e.attrs['callee']}({', '.join(args)})"
        if e.op == dist.alloc_window_buffer:  # its name is the variable it is assigned to
            size = args[0] if args else format_value(list(e.attrs.get("shape", ())))
            dtype = f", dtype={format_value(e.attrs['dtype'])}" if not args else ""
            _need_pld()
            return f"pld.tensor.alloc_window_buffer({size}{dtype})"
        args = _operands(e, args)
        given = _operand_names(e)  # an operand standing for an attr of its name is printed for it
        args += [f"{k}={format_value(v)}" for k, v in e.attrs.items() if k not in given]
        return f"{_spelling(e.op)}({', '.join(args)})"
    raise TypeError(f"cannot print {e!r}")


def _debug_print_args(call: Call, operands: list[str]) -> str:
    """``"acc", acc, i``: a print's labels (as string literals) and operands in the order written."""
    parts = call.attrs.get("parts", tuple(range(len(operands))))
    return ", ".join(repr(p) if isinstance(p, str) else operands[p] for p in parts)


def _argument(call: Call, index: int, arg: Expr, name_of: Namer) -> str:
    """One operand of a call. A constant scalar operand of a tile or tensor op whose dtype is not
    the one a bare literal there reads back with (the op's element dtype: ``pl.mul(x, 0)`` on FP32
    is ``0.0``) is written ``pl.const(v, pl.DTYPE)``: an INDEX offset, an INT32 seed or diagonal."""
    spec = OPS.get(call.op)
    if isinstance(arg, Const) and isinstance(arg.type, ScalarType) and spec is not None:
        operands = spec.operands
        scalar_operand = index < len(operands) and operands[index].role is Role.SCALAR
        elements = spec.level in (Level.TILE, Level.TENSOR)
        if (
            scalar_operand
            and elements
            and arg.type.dtype is not _bare_literal_dtype(arg.value, _element_dtype(call))
        ):
            return f"pl.const({_const(arg)}, pl.{arg.type.dtype.name})"
    return format_expr(arg, name_of)


def _element_dtype(call: Call) -> DataType | None:
    """The dtype a bare literal operand of ``call`` reads back with: its first tensor or tile
    operand's, else its ``dtype=`` attribute's."""
    shaped = next((a.type for a in call.args if isinstance(a.type, (TileType, TensorType))), None)
    if shaped is not None:
        return shaped.dtype
    dtype = call.attrs.get("dtype")
    return dtype if isinstance(dtype, DataType) else None


def _bare_literal_dtype(value: Any, element: DataType | None) -> DataType:
    """The dtype the parser gives the literal ``value`` where elements of ``element`` are read."""
    if isinstance(value, bool):
        return DataType.BOOL
    if isinstance(value, float):
        return element if element is not None and element.is_float else DataType.FP32
    return element if element is not None else DataType.INDEX


def _operands(call: Call, printed: list[str]) -> list[str]:
    """The operands of a call: positionally while they stand where the op's DSL function takes
    them (so the DSL reads them the same), by name from the first one that does not."""
    spec = OPS.get(call.op)
    if spec is None or len(printed) > len(spec.operands) or not spec.dsl:
        return printed
    if spec.dsl.rsplit(".", 1)[-1] != spec.name.rsplit(".", 1)[-1]:
        return printed  # its own name is no DSL function (pl.tile.muls): read as the op, in its order
    order = _dsl_positional(spec.signature)
    args: list[str] = []
    by_name = False  # once one is written by name, so are the rest
    for i, (operand, text) in enumerate(zip(spec.operands[: len(printed)], printed, strict=True)):
        by_name = by_name or i >= len(order) or order[i] != operand.name
        args.append(f"{operand.name}={text}" if by_name else text)
    return args


def _operand_names(call: Call) -> frozenset[str]:
    """The names of the operands ``call`` gives (optional ones it leaves out are not among them)."""
    spec = OPS.get(call.op)
    if spec is None:
        return frozenset()
    return frozenset(o.name for o in spec.operands[: len(call.args)])


def _dsl_positional(signature: str) -> list[str]:
    """The positional parameter names of a DSL signature: ``pl.load(tensor, offsets, shape, ...)``."""
    start, end = signature.find("("), signature.rfind(")")
    if start < 0 or end < start:
        return []
    names = []
    for part in signature[start + 1 : end].split(","):
        name = part.split("=", 1)[0].strip()
        if name == "*" or not name.isidentifier():
            break
        names.append(name)
    return names


def _spelling(name: str) -> str:
    """How an op is written: ``pl.tile.muls``, ``pl.tpush_to_aiv``; a scalar op by its DSL name;
    a distributed op by its full ``pld`` path (``pld.system.notify``)."""
    spec = OPS.get(name)
    if spec is not None and name.startswith("dist.") and spec.dsl:
        _need_pld()
        return f"pld.{spec.dsl}"
    if spec is not None and spec.level is Level.SCALAR:
        # The DSL function that is this op on two scalars (pl.minimum: scalar.min), else its own.
        on_scalars = next(
            (s.dsl for s in OPS.values() if (e := s.trait(Elementwise)) is not None and e.on_scalars == name),
            spec.dsl,
        )
        return f"pl.{on_scalars}"
    if keyword.iskeyword(name.rsplit(".", 1)[-1]):  # tile.and is written pl.tile.and_, as the DSL spells it
        return f"pl.{name}_"
    return f"pl.{name}"


def _infix(call: Call) -> str | None:
    """The Python operator a scalar op prints as (its spec's ``Infix`` trait), if any."""
    spec = OPS.get(call.op)
    trait = spec.trait(Infix) if spec is not None else None
    return trait.symbol if trait is not None else None


def _operand(e: Expr, name_of: Namer) -> str:
    text = format_expr(e, name_of)
    return f"({text})" if isinstance(e, Call) and _infix(e) is not None else text


def _task_value(value: Any) -> str:
    """Access modes by name (``['In', 'Out']``, None for a scalar); other values as DSL text."""
    return format_value(value)


def unique_names(fn: Function) -> dict[int, str]:
    """A printed name per variable of ``fn`` (by ``id``): its own, unless Python or the parser
    would read it otherwise or another variable already printed as it."""
    names: dict[int, str] = {}
    taken: set[str] = set()
    for var in function_bindings(fn):
        if id(var) in names:
            continue
        base = var.name
        name = base if base not in taken and base not in _RESERVED and not keyword.iskeyword(base) else None
        n = 0
        while name is None:
            n += 1
            candidate = f"{base}_{n}"
            if candidate not in taken:
                name = candidate
        taken.add(name)
        names[id(var)] = name
    return names


class _Printer:
    def __init__(self, plan: MemoryPlan | None, names: dict[int, str] | None = None) -> None:
        self.plan = plan
        self.names = names or {}
        self.lines: list[str] = []
        self.loops: list[For | While] = []  # the loops around the statement being printed

    def name(self, var: Var) -> str:
        return self.names.get(id(var), var.name)

    def expr(self, e: Expr) -> str:
        return format_expr(e, self.name)

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def body(self, stmts: tuple[Stmt, ...], depth: int) -> None:
        if not stmts:
            self.emit(depth, "pass")
        for stmt in stmts:
            self.stmt(stmt, depth)

    def loop(self, s: For, depth: int) -> None:
        """``for i, (a,) in pl.range(.., init_values=(a0,)):`` ... ``a_1 = pl.yield_(..)``."""
        rng = ", ".join(self.expr(x) for x in (s.start, s.stop, s.step))
        if s.stage is not None:
            rng += f", stage={s.stage}"
        if not s.iter_args:
            self.emit(depth, f"for {self.name(s.var)} in pl.{s.kind.value}({rng}):")
            self.body(s.body, depth + 1)
            return
        carried = _carried_names(s.iter_args, self.name)
        inits = _carried_names(s.init_values, self.name)
        self.emit(
            depth, f"for {self.name(s.var)}, ({carried}) in pl.{s.kind.value}({rng}, init_values=({inits})):"
        )
        self.loop_body(s, (), depth)

    def while_loop(self, s: While, depth: int) -> None:
        """``for (a,) in pl.while_(init_values=(a0,)):`` ``pl.cond(..)`` ... ``a_1 = pl.yield_(..)``."""
        carried = _carried_names(s.iter_args, self.name)
        inits = _carried_names(s.init_values, self.name)
        self.emit(depth, f"for ({carried}) in pl.while_(init_values=({inits})):")
        self.loop_body(s, (f"pl.cond({self.expr(s.cond)})",), depth)

    def loop_body(self, s: For | While, first: tuple[str, ...], depth: int) -> None:
        """The body of a carrying loop, ending with the yields that name its results."""
        for line in first:
            self.emit(depth + 1, line)
        self.loops.append(s)
        self.body(s.body, depth + 1)
        self.loops.pop()
        self.yield_line(s.results, s.yields, depth + 1)

    def yield_line(self, results: tuple[Var, ...], yields: tuple[Expr, ...], depth: int) -> None:
        if results:
            names = ", ".join(self.name(r) for r in results)
            self.emit(depth, f"{names} = pl.yield_({', '.join(self.expr(y) for y in yields)})")

    def if_stmt(self, s: If, depth: int) -> None:
        """``if c:`` ... ``r = pl.yield_(a)`` ``else:`` ... ``r = pl.yield_(b)``; an arm that
        always jumps yields nothing."""
        self.emit(depth, f"if {self.expr(s.cond)}:")
        self.arm(s.then_body, s.then_yields, s.results, depth + 1)
        if s.else_body or s.else_yields:
            self.emit(depth, "else:")
            self.arm(s.else_body, s.else_yields, s.results, depth + 1)

    def arm(
        self, body: tuple[Stmt, ...], yields: tuple[Expr, ...], results: tuple[Var, ...], depth: int
    ) -> None:
        if body or not yields:
            self.body(body, depth)
        if yields:
            self.yield_line(results, yields, depth)

    def jump(self, s: Break | Continue, depth: int) -> None:
        """``break`` / ``continue``, after binding the loop's carried names to the values it
        gives them (what the parser reads them from)."""
        loop = self.loops[-1] if self.loops else None
        if loop is not None and s.values:
            changed = [(a, v) for a, v in zip(loop.iter_args, s.values, strict=True) if v is not a]
            if changed:
                names = ", ".join(self.name(a) for a, _ in changed)
                values = ", ".join(self.expr(v) for _, v in changed)
                self.emit(depth, f"{names} = {values}")
        self.emit(depth, "break" if isinstance(s, Break) else "continue")

    def stmt(self, s: Stmt, depth: int) -> None:
        first = len(self.lines)
        self.statement(s, depth)
        span = getattr(s, "span", None)
        if _locations.get() and span is not None and first < len(self.lines):
            self.lines[first] += f"  # loc: {span}"

    def statement(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            if _concise.get() and s.memref is None:  # the value's type is its op's: no annotation
                self.emit(depth, f"{self.name(s.target)} = {self.expr(s.value)}")
                return
            annotation = format_type(s.target.type, s.memref, self.name)
            text = f"{self.name(s.target)}: {annotation} = {self.expr(s.value)}"
            self.emit(depth, text + self.note(s.target))
        elif isinstance(s, Eval):
            self.emit(depth, self.expr(s.value))
        elif isinstance(s, For):
            self.loop(s, depth)
        elif isinstance(s, While):
            self.while_loop(s, depth)
        elif isinstance(s, If):
            self.if_stmt(s, depth)
        elif isinstance(s, (Break, Continue)):
            self.jump(s, depth)
        elif isinstance(s, Return):
            self.emit(depth, "return " + ", ".join(self.expr(v) for v in s.values))
        elif isinstance(s, SplitAivRegion):
            self.emit(depth, f"for {self.name(s.lane)} in pl.split_aiv(2, mode={format_value(s.mode)}):")
            self.body(s.body, depth + 1)
        elif isinstance(s, ScopeStmt):
            self.scope(s, depth)
        else:
            raise TypeError(f"cannot print {s!r}")

    def scope(self, s: ScopeStmt, depth: int) -> None:
        """``with pl.at(...)``, inside ``with pl.manual_scope():`` / ``with pl.spmd(n):`` if it is so."""
        launch = s.block_num > 1 or s.sync_start or s.predicate is not None
        # A launch's task id is bound by its `with pl.spmd(...) as tid`: names bound inside end there.
        named = f" as {self.name(s.task)}" if launch and s.task is not None else ""
        for flag, text in (
            (s.manual, "with pl.manual_scope():"),
            (launch, f"with pl.spmd({s.block_num}{_spmd_options(s)}){named}:"),
        ):
            if flag:
                self.emit(depth, text)
                depth += 1
        opts = []
        if s.split is not None:
            opts.append(f"pl.split({format_value(s.split)})")
        if s.slot_num is not None:
            opts.append(f"pl.cross_core_slot(slot_num={s.slot_num})")
        args = [f"level=pl.Level.{s.level.name}"]
        if opts:
            args.append(f"optimizations=[{', '.join(opts)}]")
        if s.name_hint:
            args.append(f"name_hint={s.name_hint!r}")
        for key, names in (("deps", s.deps), ("no_dep_args", s.no_dep_args), ("dumps", s.dumps)):
            if names:
                args.append(f"{key}=[{', '.join(self.name(v) for v in names)}]")
        if s.allow_early_resolve:
            args.append("allow_early_resolve=True")
        bound = f" as {self.name(s.task)}" if s.task is not None and not named else ""
        self.emit(depth, f"with pl.at({', '.join(args)}){bound}:")
        self.body(s.body, depth + 1)

    def note(self, var: Var) -> str:
        """The comment after a tile's assignment: where it is placed (its valid shape is in the
        annotation's ``pl.TileView``)."""
        t = var.type
        if not isinstance(t, TileType):
            return ""
        notes = []
        alloc = self.plan.of(var.name) if self.plan is not None else None
        if alloc is not None:
            slots = f" x {alloc.slots} slots by {alloc.slot_var}" if alloc.slots > 1 else ""
            if alloc.slots > 1 and (alloc.slot_scale != 1 or alloc.slot_shift):
                slots += f" (scaled by {alloc.slot_scale}, shifted by {alloc.slot_shift})"
            notes.append(f"{alloc.space.name}[{alloc.offset:#x}, +{alloc.size}]{slots}")
        return f"  # {', '.join(notes)}" if notes else ""


def _spmd_options(s: ScopeStmt) -> str:
    """The keywords of a scope's ``pl.spmd(n, ...)`` line beyond its block count."""
    options = ", sync_start=True" if s.sync_start else ""
    return options + (f", predicate={format_value(s.predicate)}" if s.predicate is not None else "")


def _param(p: Any, name_of: Namer) -> str:
    t = format_type(p.var.type)
    if isinstance(p.var.type, TensorType) and p.direction is not Direction.In:
        t = f"pl.{p.direction.value}[{t}]"
    return f"{name_of(p.var)}: {t}"


# Function attrs written as keywords of the decorator, not in pl.func_attr (the parser reads them
# before the body): auto_scope=False.
DECORATOR_ATTRS = ("auto_scope",)
# A HOST function's level and role are its decorator's; a runtime-bound sub-worker's body is `...`.
HOST_ATTRS = ("level", "role")


def print_function(fn: Function, depth: int = 0, locations: bool = False) -> str:
    """``fn`` as ``pl`` source; ``locations``: each statement's first line ends with
    ``# loc: file:line:col``, the kernel source it came from (when known)."""
    token = _locations.set(locations)
    try:
        return _print_function(fn, depth)
    finally:
        _locations.reset(token)


def _print_function(fn: Function, depth: int) -> str:
    plan = fn.attrs.get("memory_plan")
    printer = _Printer(plan if isinstance(plan, MemoryPlan) else None, unique_names(fn))
    placed = (*HOST_ATTRS, "requires_runtime_binding") if fn.is_host else ()
    attrs = {k: v for k, v in fn.attrs.items() if k not in DECORATOR_ATTRS and k not in placed}
    options = "".join(f", {k}={format_value(fn.attrs[k])}" for k in DECORATOR_ATTRS if k in fn.attrs)
    if fn.is_host:
        decorator = ", ".join(f"{k}={format_value(fn.attrs[k])}" for k in HOST_ATTRS if k in fn.attrs)
        printer.emit(depth, f"@pl.function({decorator})")
    else:
        printer.emit(depth, f"@pl.function(type=pl.FunctionType.{fn.kind.value}{options})")
    params = ", ".join(["self"] + [_param(p, printer.name) for p in fn.params])
    printer.emit(depth, f"def {fn.name}({params}):")
    if attrs:
        printer.emit(depth + 1, f"pl.func_attr({format_value(attrs)})")
    reservations = tuple(fn.attrs.get("reservations", ()))
    for r, offset in zip(reservations, layout(reservations), strict=True):
        named = f" ({r.name})" if r.name is not None else ""
        printer.emit(depth + 1, f"# reserved {r.space.name}[{offset:#x}, +{r.size}]: {r.reason}{named}")
    if fn.requires_runtime_binding:
        printer.emit(depth + 1, "...")
    elif fn.body or not attrs:
        printer.body(fn.body, depth + 1)
    return "\n".join(printer.lines)


def print_program(program: Program) -> str:
    """The whole program as a ``@pl.program`` class: the entry, the other Orchestration functions,
    then the kernels."""
    funcs = sorted(
        program.functions.values(),
        key=lambda f: (f.name != program.entry, f.kind is not FunctionKind.Orchestration),
    )
    token = _imports.set(set())
    dyn_token = _dyn_dims.set({})
    names_token = _var_names.set(frozenset(n for fn in funcs for n in unique_names(fn).values()))
    try:
        parts = [f"@pl.program\nclass {program.name}:"]
        parts += [print_function(fn, depth=1) for fn in funcs]
        needed = sorted(_imports.get() or ())
        dims = sorted(((shown, d.name) for d, shown in (_dyn_dims.get() or {}).items()))
    finally:
        _imports.reset(token)
        _dyn_dims.reset(dyn_token)
        _var_names.reset(names_token)
    header = "".join(f"import {module}\n" for module in needed)
    header += "".join(f'{shown} = pl.dynamic("{name}")\n' for shown, name in dims)
    return (header + "\n\n" if header else "") + "\n\n".join(parts) + "\n"


def print_concise(node: Program | Function) -> str:
    """``node`` printed without the annotations of intermediate values (and the placement notes):
    what ``as_python(concise=True)`` gives. A ``pl.MemRef`` placement keeps its annotation."""
    token = _concise.set(True)
    try:
        return print_ir(node)
    finally:
        _concise.reset(token)


def print_ir(node: Program | Function | Stmt | Expr) -> str:
    if isinstance(node, Program):
        return print_program(node)
    if isinstance(node, Function):
        return print_function(node)
    if isinstance(node, Expr):
        return format_expr(node)
    printer = _Printer(None)
    printer.stmt(node, 0)
    return "\n".join(printer.lines)


register_printer(print_ir, print_concise)
