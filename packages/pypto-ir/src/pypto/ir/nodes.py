"""IR nodes: expressions, statements, functions, programs.

All nodes are frozen dataclasses compared by identity (``eq=False``): two ``Var`` objects with
the same name are different variables. Passes build new nodes with ``dataclasses.replace``.
Every node keeps the ``SourceSpan`` of the user's code it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NoReturn

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, VerificationError
from pypto.ir.tasks import Predicate
from pypto.ir.types import Direction, ScalarType, Type

# ---------------------------------------------------------------- expressions


class Expr:
    """Base of expressions; every expression has a ``type``."""

    type: Type
    span: SourceSpan | None


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str
    type: Type
    span: SourceSpan | None = None

    def __repr__(self) -> str:
        return f"Var({self.name}: {self.type})"


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int | float | bool
    type: ScalarType
    span: SourceSpan | None = None

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


class _ExtentArithmetic:
    """Python arithmetic on extents, as Python evaluates an annotation at ``def`` time:
    ``pl.Tensor[[M * 2, 128], ...]`` with ``M = pl.dynamic("M")`` holds the extent ``M * 2``."""

    def _op(self, name: str, lhs: Any, rhs: Any) -> Any:
        from pypto.ir.extents import dim_op, is_extent  # the builder folds; it needs these nodes

        if is_extent(lhs) and is_extent(rhs):
            return dim_op(name, lhs, rhs)
        if isinstance(lhs, (int, float)) or isinstance(rhs, (int, float)):  # M * 2.5, M + True
            other = rhs if is_extent(lhs) else lhs
            _not_whole(f"{lhs!r} {_SYMBOLS[name]} {rhs!r}", other)
        return NotImplemented

    def __add__(self, other: Any) -> Any:
        return self._op("add", self, other)

    def __radd__(self, other: Any) -> Any:
        return self._op("add", other, self)

    def __sub__(self, other: Any) -> Any:
        return self._op("sub", self, other)

    def __rsub__(self, other: Any) -> Any:
        return self._op("sub", other, self)

    def __mul__(self, other: Any) -> Any:
        return self._op("mul", self, other)

    def __rmul__(self, other: Any) -> Any:
        return self._op("mul", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return self._op("floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._op("floordiv", other, self)

    def __mod__(self, other: Any) -> Any:
        return self._op("mod", self, other)

    def __rmod__(self, other: Any) -> Any:
        return self._op("mod", other, self)

    def __truediv__(self, other: Any) -> Any:
        _not_an_extent(f"{self!r} / {other!r} is no extent", _WHOLE_DIVISION)

    def __rtruediv__(self, other: Any) -> Any:
        _not_an_extent(f"{other!r} / {self!r} is no extent", _WHOLE_DIVISION)

    def __neg__(self) -> Any:
        _not_an_extent(f"-{self!r} is no extent", "an extent is never negative: write M - 1 or 2 * M")


_WHOLE_DIVISION = "an extent divides into whole numbers: write M // 2"
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%"}


def _not_whole(text: str, other: object) -> None:
    """Arithmetic of an extent with a number that is not a whole one."""
    _not_an_extent(
        f"{text}: an extent is a whole number, and {other!r} is not one",
        "combine extents with whole numbers only: M * 2, M // 2, M + 1",
    )


def _not_an_extent(message: str, hint: str) -> NoReturn:
    """Python arithmetic that gives no extent: a ParseError at the user's line (Python evaluates
    annotations at ``def`` time, before any parser sees them)."""
    from pypto.ir.errors import ParseError
    from pypto.ir.tracebacks import call_site, raise_at_user_line

    raise_at_user_line(ParseError(message, call_site(), hint), "<extent>")


@dataclass(frozen=True)
class DynDim(_ExtentArithmetic, Expr):
    """A tensor extent known only at run time: ``M = pl.dynamic("M")`` in ``pl.Tensor[[M, 128], ...]``.

    It stands in a ``TensorType`` shape and, as an INDEX scalar, in expressions (loop bounds,
    offsets, valid shapes). Unlike other nodes it compares by value: by its name and ``ident``,
    which tells apart two ``pl.dynamic`` objects of one name (two extents), so the types of two
    tensors with the same extent are equal. A backend binds its value from the argument tensors.
    Python arithmetic on it (``M * 2``) gives a :class:`DimExpr`.
    """

    name: str
    ident: int = 0
    span: SourceSpan | None = field(default=None, compare=False, repr=False)

    @property
    def type(self) -> ScalarType:  # type: ignore[override]
        return ScalarType(DataType.INDEX)

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class TupleExpr(Expr):
    """A list of expressions written ``[a, b]`` in the DSL (offsets, shapes)."""

    elements: tuple[Expr, ...]
    type: Type
    span: SourceSpan | None = None


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """An op application. ``op`` names an entry of the op table (``pypto.ir.ops``)."""

    op: str
    args: tuple[Expr, ...]
    type: Type
    attrs: Mapping[str, Any] = field(default_factory=dict)
    span: SourceSpan | None = None


# The operators an extent expression may use, with how they print (binding strength, symbol).
DIM_OPS: dict[str, tuple[int, str]] = {
    "scalar.add": (1, "+"),
    "scalar.sub": (1, "-"),
    "scalar.mul": (2, "*"),
    "scalar.floordiv": (2, "//"),
    "scalar.mod": (2, "%"),
    "scalar.min": (3, "pl.min"),
    "scalar.max": (3, "pl.max"),
}


class DimExpr(_ExtentArithmetic, Call):
    """An extent computed from dynamic extents and whole numbers: ``M * 2``, ``M // 2``, ``M + N``.

    It is a ``scalar.*`` call (every walker evaluates it like one) that compares by value, so it
    can stand in a ``TensorType`` shape: two tensors of extent ``M * 2`` have equal types. Build
    it with :func:`pypto.ir.extents.dim_op` (or Python arithmetic on extents), which folds.
    """

    def key(self) -> tuple[Any, ...]:
        """What the expression is, as a value: the op and its operands' keys."""
        return (self.op, tuple(_extent_key(a) for a in self.args))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DimExpr) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        strength, symbol = DIM_OPS[self.op]
        if strength == 3:
            return f"{symbol}({', '.join(_operand_text(a, 0, False) for a in self.args)})"
        lhs, rhs = _operand_text(self.args[0], strength, False), _operand_text(self.args[1], strength, True)
        return f"{lhs} {symbol} {rhs}"


def _extent_key(e: Expr) -> Any:
    if isinstance(e, Const):
        return e.value
    if isinstance(e, DimExpr):
        return e.key()
    return e  # a DynDim compares by value itself


def _operand_text(e: Expr, strength: int, right: bool) -> str:
    """An operand of an infix extent: in parentheses when it binds looser than its operator
    (or as loosely, on the right: ``M - (N - 1)``)."""
    text = repr(e.value) if isinstance(e, Const) else repr(e)
    inner = DIM_OPS[e.op][0] if isinstance(e, DimExpr) else 4
    return f"({text})" if inner < strength or (right and inner == strength) else text


# ---------------------------------------------------------------- statements


class Stmt:
    span: SourceSpan | None


@dataclass(frozen=True)
class MemRefSlot:
    """Where the user placed a tile with ``pl.MemRef(name, slots=n)[index]``: slot ``index`` of
    the allocation ``name``, ``slots`` equal slots side by side. The index is ``shift`` when
    ``var`` is None, else ``(scale * var + shift) % slots`` with ``var`` a loop variable (kept
    normalized: ``0 <= scale, shift < slots``, ``scale`` not 0)."""

    name: str
    slots: int
    var: Var | None = None
    scale: int = 1
    shift: int = 0

    def index_text(self, name_of: Callable[[Var], str] | None = None) -> str:
        """The index as the DSL writes it: ``1``, ``i % 2``, ``(2 * i + 1) % 4``."""
        if self.var is None:
            return str(self.shift)
        term = (name_of or (lambda v: v.name))(self.var)
        if self.scale != 1:
            term = f"{self.scale} * {term}"
        if self.shift:
            term = f"{term} + {self.shift}"
        return f"({term}) % {self.slots}" if self.scale != 1 or self.shift else f"{term} % {self.slots}"

    def slot(self, value: int) -> int:
        """The slot the tile takes when ``var`` holds ``value``."""
        return self.shift if self.var is None else (self.scale * value + self.shift) % self.slots


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    """``target = value``; ``memref`` is the slot of a ``pl.MemRef`` the user placed the tile in."""

    target: Var
    value: Expr
    span: SourceSpan | None = None
    memref: MemRefSlot | None = None


@dataclass(frozen=True, eq=False)
class Eval(Stmt):
    """An op evaluated for its effect (a store, a kernel call)."""

    value: Expr
    span: SourceSpan | None = None


class LoopKind(Enum):
    range = "range"
    parallel = "parallel"
    unroll = "unroll"
    pipeline = "pipeline"


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """``for var in pl.<kind>(start, stop, step)``; ``var`` is an INDEX scalar.

    Loop-carried values: ``iter_args[k]`` is bound to ``init_values[k]`` before the first
    iteration and to ``yields[k]`` (evaluated at the end of the body) before every later one;
    ``results[k]`` is bound after the loop to the last value (``init_values[k]`` if the loop
    runs no iteration). The four tuples have one entry per carried value, of one type.
    ``stage`` is the depth of a ``pl.pipeline(..., stage=k)`` loop (None for other kinds): the
    loop runs sequentially; the stage count is kept for the scheduling that overlaps iterations.
    """

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    kind: LoopKind = LoopKind.range
    span: SourceSpan | None = None
    iter_args: tuple[Var, ...] = ()
    init_values: tuple[Expr, ...] = ()
    yields: tuple[Expr, ...] = ()
    results: tuple[Var, ...] = ()
    stage: int | None = None


@dataclass(frozen=True, eq=False)
class Return(Stmt):
    values: tuple[Expr, ...]
    span: SourceSpan | None = None


class Level(Enum):
    """Hierarchy levels a ``pl.at`` scope can name."""

    HOST = "HOST"
    CHIP = "CHIP"
    CORE_GROUP = "CORE_GROUP"
    CLUSTER = "CLUSTER"  # a cube and its vector cores running an AIC and an AIV kernel together
    AIC = "AIC"
    AIV = "AIV"


class Role(Enum):
    """What a function does at its level (``pl.Role``): a HOST ``Orchestrator`` drives the ranks
    (dispatches chip orchestrations, allocates windows, runs host collectives); a ``SubWorker`` is
    a host callback the orchestrator calls (its ``...`` body is bound at run time); ``Worker``
    runs what an orchestrator hands it."""

    Orchestrator = "Orchestrator"
    Worker = "Worker"
    SubWorker = "SubWorker"


class SplitMode(Enum):
    """Axis along which the vector sub-region of a mixed scope is halved."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"

    def __repr__(self) -> str:
        return f"pl.SplitMode.{self.name}"


@dataclass(frozen=True, eq=False)
class ScopeStmt(Stmt):
    """``with pl.at(level=..., optimizations=[...], name_hint=..., deps=[...], no_dep_args=[...], ...) as
    task``: becomes one kernel, called as one task.

    ``task`` (a ``pl.TaskId`` var) names the task for later ``deps=``; ``deps`` are the task ids it
    waits for besides the edges its tensors imply (a ``pl.TASK_ID`` array stands for every id it
    holds); ``no_dep_args`` are tensors through which it takes no such edge; ``manual`` marks a
    scope inside ``pl.manual_scope()`` (tracking is off: it takes no tensor edge, and later tasks
    take none from it); ``block_num`` is the number of core groups an ``pl.spmd`` launch runs it
    on, and ``sync_start`` that its blocks start together (``pl.spmd(n, sync_start=True)``);
    ``allow_early_resolve`` lets its dependents start once its outputs are final, before it
    retires; ``predicate`` (of ``pl.spmd(..., predicate=...)``) lets the scheduler skip it;
    ``dumps`` are tensors marked for the selective dump (``dumps=``, ``pl.dump_tag``).
    """

    body: tuple[Stmt, ...]
    level: Level = Level.CORE_GROUP
    name_hint: str | None = None
    split: SplitMode | None = None
    slot_num: int | None = None
    task: Var | None = None
    deps: tuple[Var, ...] = ()
    no_dep_args: tuple[Var, ...] = ()
    manual: bool = False
    block_num: int = 1
    sync_start: bool = False
    span: SourceSpan | None = None
    allow_early_resolve: bool = False
    predicate: Predicate | None = None
    dumps: tuple[Var, ...] = ()


@dataclass(frozen=True, eq=False)
class SplitAivRegion(Stmt):
    """``for lane in pl.split_aiv(2, mode=...)``: an explicit vector region of a mixed scope.

    Both AIV lanes run ``body`` with ``lane`` = 0 / 1; the author divides the work by lane.
    """

    lane: Var
    body: tuple[Stmt, ...]
    mode: SplitMode = SplitMode.NONE
    span: SourceSpan | None = None


@dataclass(frozen=True, eq=False)
class If(Stmt):
    """``if cond: ... else: ...`` on a run-time scalar.

    Values leave the arms through ``results``: after the arm that ran, ``results[k]`` is bound to
    ``then_yields[k]`` or ``else_yields[k]`` (evaluated at the end of that arm). An arm that
    always leaves its loop (see :func:`always_jumps`) yields nothing: its yields are ``()``.
    Other names bound in an arm end with it.
    """

    cond: Expr
    then_body: tuple[Stmt, ...]
    else_body: tuple[Stmt, ...] = ()
    span: SourceSpan | None = None
    then_yields: tuple[Expr, ...] = ()
    else_yields: tuple[Expr, ...] = ()
    results: tuple[Var, ...] = ()

    def arm_yields(self, arm: int) -> tuple[Expr, ...]:
        """The yields of arm 0 (then) or 1 (else)."""
        return self.else_yields if arm else self.then_yields


@dataclass(frozen=True, eq=False)
class While(Stmt):
    """``for (a, b) in pl.while_(init_values=(a0, b0)):`` with ``pl.cond(c)`` first in the body.

    Carries values like :class:`For`: ``iter_args`` start as ``init_values``; before every
    iteration ``cond`` (over the iter_args and earlier values) is evaluated and the loop ends
    when it is false; ``yields`` are the next iteration's values; ``results`` the last ones.
    """

    cond: Expr
    body: tuple[Stmt, ...]
    span: SourceSpan | None = None
    iter_args: tuple[Var, ...] = ()
    init_values: tuple[Expr, ...] = ()
    yields: tuple[Expr, ...] = ()
    results: tuple[Var, ...] = ()


@dataclass(frozen=True, eq=False)
class Break(Stmt):
    """``break``: leave the innermost loop; ``values`` are its results (one per carried value,
    the values the carried names have here)."""

    values: tuple[Expr, ...] = ()
    span: SourceSpan | None = None


@dataclass(frozen=True, eq=False)
class Continue(Stmt):
    """``continue``: start the innermost loop's next iteration; ``values`` are its next iter_args
    (one per carried value, the values the carried names have here)."""

    values: tuple[Expr, ...] = ()
    span: SourceSpan | None = None


# The loops: both carry values through iter_args / init_values / yields / results.
LOOP_STMTS = (For, While)
JUMP_STMTS = (Break, Continue)


def pick_carried(stmt: Stmt, keep: list[int]) -> Stmt:
    """A loop (or an if) carrying only the values ``keep`` indexes: its iter_args, init values,
    yields and results (an if's yields and results), and the values of its loop's ``break`` /
    ``continue`` statements, picked alike."""
    from dataclasses import replace

    def pick(values: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(values[k] for k in keep) if values else values

    if isinstance(stmt, If):
        return replace(
            stmt,
            then_yields=pick(stmt.then_yields),
            else_yields=pick(stmt.else_yields),
            results=pick(stmt.results),
        )
    assert isinstance(stmt, LOOP_STMTS)
    return replace(
        stmt,
        body=pick_jump_values(stmt.body, keep),
        iter_args=pick(stmt.iter_args),
        init_values=pick(stmt.init_values),
        yields=pick(stmt.yields),
        results=pick(stmt.results),
    )


def pick_jump_values(body: tuple[Stmt, ...], keep: list[int]) -> tuple[Stmt, ...]:
    """``body`` with the ``break`` / ``continue`` of its loop (not of loops inside it) giving the
    values ``keep`` indexes only."""
    return map_jumps(body, lambda values, _: tuple(values[k] for k in keep))


def map_jumps(
    body: tuple[Stmt, ...], values: Callable[[tuple[Expr, ...], Break | Continue], tuple[Expr, ...]]
) -> tuple[Stmt, ...]:
    """``body`` with each ``break`` / ``continue`` of its loop (not of loops inside it) giving
    ``values(its values, the statement)`` instead of its own values."""
    from dataclasses import replace

    out: list[Stmt] = []
    for stmt in body:
        if isinstance(stmt, JUMP_STMTS):
            stmt = replace(stmt, values=values(stmt.values, stmt))
        elif not isinstance(stmt, LOOP_STMTS) and nested_bodies(stmt):
            stmt = with_bodies(stmt, tuple(map_jumps(b, values) for b in nested_bodies(stmt)))
        out.append(stmt)
    return tuple(out)


def always_jumps(body: tuple[Stmt, ...]) -> bool:
    """Whether ``body`` never reaches its end: it holds a ``break`` / ``continue`` (or an ``If``
    both arms of which always jump) at its own level; what follows it never runs."""
    return any(
        isinstance(s, JUMP_STMTS)
        or (isinstance(s, If) and always_jumps(s.then_body) and always_jumps(s.else_body))
        for s in body
    )


# Statements that hold one nested ``body``; ``If`` holds two (see :func:`nested_bodies`).
BLOCK_STMTS = (For, While, ScopeStmt, SplitAivRegion)


def nested_bodies(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    """The bodies nested in ``stmt``: a loop's, scope's or region's body, an ``If``'s two arms."""
    if isinstance(stmt, If):
        return (stmt.then_body, stmt.else_body)
    if isinstance(stmt, BLOCK_STMTS):
        return (stmt.body,)
    return ()


def with_bodies(stmt: Stmt, bodies: tuple[tuple[Stmt, ...], ...]) -> Stmt:
    """``stmt`` with its nested bodies replaced, in the order :func:`nested_bodies` gives them."""
    from dataclasses import replace

    if isinstance(stmt, If):
        return replace(stmt, then_body=bodies[0], else_body=bodies[1])
    if isinstance(stmt, BLOCK_STMTS):
        return replace(stmt, body=bodies[0])
    raise TypeError(f"{type(stmt).__name__} has no nested body")


# ---------------------------------------------------------------- functions


class FunctionKind(Enum):
    """What a function is (``pl.FunctionType`` in the DSL).

    ``Opaque``: no plane yet; it takes one from where it is used (a ``@pl.function`` without
    ``type=``). ``Orchestration``: the control plane (creates tensors, dispatches kernels).
    ``InCore``: a kernel on one core group. ``AIC`` / ``AIV`` / ``Group``: the cube half, the
    vector half and the pair a mixed kernel lowers to. ``Inline``: spliced into each caller;
    no function of this kind is left in a parsed program.
    """

    Opaque = "Opaque"
    Orchestration = "Orchestration"
    InCore = "InCore"
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"
    Inline = "Inline"


@dataclass(frozen=True)
class ParamRef:
    """A function attribute that names one of the function's parameters (``pl.func_attr({"k": a})``)."""

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class Param:
    var: Var
    direction: Direction = Direction.In


@dataclass(frozen=True, eq=False)
class Function:
    """One function of a program: its ``name``, ``params``, ``body`` and ``kind``
    (``func_type`` is the name PyPTO code reads it by)."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    kind: FunctionKind
    span: SourceSpan | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def func_type(self) -> FunctionKind:
        """The function's kind, under the name PyPTO code uses (``fn.func_type``)."""
        return self.kind

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.var.name == name), None)

    @property
    def return_types(self) -> tuple[Type, ...]:
        """The types of the values the function's ``return`` gives (none without one)."""
        ret = next((s for s in reversed(self.body) if isinstance(s, Return)), None)
        return tuple(v.type for v in ret.values) if ret is not None else ()

    @property
    def level(self) -> Level | None:
        """The hierarchy level the function runs at (``@pl.function(level=...)``), if declared."""
        level = self.attrs.get("level")
        return level if isinstance(level, Level) else None

    @property
    def role(self) -> Role | None:
        """The function's role at its level (``@pl.function(role=...)``), if declared."""
        role = self.attrs.get("role")
        return role if isinstance(role, Role) else None

    @property
    def is_host(self) -> bool:
        """A HOST function (``@pl.jit.host``, a HOST orchestrator or sub-worker): it drives the
        ranks, and the passes leave it as parsed."""
        return self.level is Level.HOST

    @property
    def requires_runtime_binding(self) -> bool:
        """A sub-worker declared with an ``...`` body: the runtime binds a Python callable to it."""
        return bool(self.attrs.get("requires_runtime_binding"))

    def as_python(self, concise: bool = False) -> str:
        """The function as ``pl`` source (a ``@pl.function``); ``concise=True`` leaves out the
        type annotations of intermediate values."""
        return _PRINTERS[1 if concise else 0](self)


class FunctionMap(Mapping[str, Function]):
    """The functions of a program by name, in program order, immutable.

    ``program.functions["k"]``, ``"k" in program.functions``, ``.items()``, ``.values()``;
    iterating gives the names, as for any mapping.
    """

    __slots__ = ("_by_name",)

    def __init__(self, functions: Iterable[Function] = ()) -> None:
        by_name: dict[str, Function] = {}
        for fn in functions:
            if fn.name in by_name:
                # A front end names each function once (the parser reports a user's duplicate at
                # its line); reaching here means a pass or a hand-built program broke the rule.
                raise VerificationError(
                    f"a program has two functions named {fn.name!r}",
                    fn.span,
                    "give each function of a program its own name",
                )
            by_name[fn.name] = fn
        self._by_name = by_name

    def __getitem__(self, name: str) -> Function:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"FunctionMap({list(self._by_name)})"

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by the disk cache
        return (FunctionMap, (tuple(self._by_name.values()),))


@dataclass(frozen=True, eq=False, init=False)
class Program:
    """A whole compiled unit: the entry (Orchestration) function and its kernels.

    ``functions`` may be given as any sequence of functions (or a name -> function mapping); it
    is kept as a :class:`FunctionMap`, in the order given. Two functions of one name are an error.
    """

    name: str
    functions: FunctionMap
    entry: str
    attrs: Mapping[str, Any]

    def __init__(
        self,
        name: str,
        functions: Iterable[Function] | Mapping[str, Function],
        entry: str,
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(functions, FunctionMap):
            functions = FunctionMap(functions.values() if isinstance(functions, Mapping) else functions)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "functions", functions)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "attrs", {} if attrs is None else attrs)

    def function(self, name: str) -> Function:
        return self.functions[name]

    def get_function(self, name: str) -> Function | None:
        """The function called ``name``, or None if the program has none of that name."""
        return self.functions.get(name)

    @property
    def entry_function(self) -> Function:
        return self.function(self.entry)

    def as_python(self, concise: bool = False) -> str:
        """The program as ``pl`` source: a ``@pl.program`` class that ``pl.parse`` reads back;
        ``concise=True`` leaves out the type annotations of intermediate values."""
        return _PRINTERS[1 if concise else 0](self)

    def __str__(self) -> str:
        return self.as_python()

    def with_functions(self, functions: Iterable[Function]) -> Program:
        """This program with ``functions`` in place of its own (name, entry and attrs kept)."""
        return Program(self.name, functions, self.entry, self.attrs)

    def replace_function(self, fn: Function) -> Program:
        return self.with_functions(fn if f.name == fn.name else f for f in self.functions.values())


# How programs and functions print as pl source (in full, concise): pypto.ir.printer registers
# its printers when it is imported (pypto.ir imports it), so the nodes need not import the printer
# that imports them.
_PRINTERS: list[Callable[[Any], str]] = []


def register_printer(printer: Callable[[Any], str], concise: Callable[[Any], str]) -> None:
    _PRINTERS[:] = [printer, concise]


# ---------------------------------------------------------------- traversal


def stmt_bindings(stmt: Stmt) -> tuple[Var, ...]:
    """The variables ``stmt`` itself binds (not those of its nested bodies), in field order: a
    loop's variable, its carried names, its results; an if's results; a region's lane; a scope's
    task id."""
    if isinstance(stmt, Assign):
        return (stmt.target,)
    if isinstance(stmt, For):
        return (stmt.var, *stmt.iter_args, *stmt.results)
    if isinstance(stmt, (While, If)):
        return (*getattr(stmt, "iter_args", ()), *stmt.results)
    if isinstance(stmt, SplitAivRegion):
        return (stmt.lane,)
    if isinstance(stmt, ScopeStmt) and stmt.task is not None:
        return (stmt.task,)
    return ()


def function_bindings(fn: Function) -> Iterator[Var]:
    """Every variable ``fn`` binds, parameters first, then in statement order."""
    for p in fn.params:
        yield p.var
    for stmt in walk_stmts(fn.body):
        yield from stmt_bindings(stmt)


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement in ``body``, depth first, loop, scope and ``If`` bodies included."""
    for stmt in body:
        yield stmt
        for inner in nested_bodies(stmt):
            yield from walk_stmts(inner)


def stmt_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates directly (not those of nested bodies)."""
    if isinstance(stmt, (Assign, Eval)):
        return (stmt.value,)
    if isinstance(stmt, For):
        return (stmt.start, stmt.stop, stmt.step, *stmt.init_values)
    if isinstance(stmt, While):
        return stmt.init_values
    if isinstance(stmt, If):
        return (stmt.cond,)
    if isinstance(stmt, (Return, Break, Continue)):
        return stmt.values
    return ()


def stmt_end_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates inside or after its nested bodies, over the values
    bound there: a loop's yields (and a while loop's condition), an if's yields."""
    if isinstance(stmt, While):
        return (stmt.cond, *stmt.yields)
    if isinstance(stmt, For):
        return stmt.yields
    if isinstance(stmt, If):
        return (*stmt.then_yields, *stmt.else_yields)
    return ()


def walk_expr(expr: Expr) -> Iterator[Expr]:
    """``expr`` and every sub-expression."""
    yield expr
    if isinstance(expr, Call):
        for arg in expr.args:
            yield from walk_expr(arg)
    elif isinstance(expr, TupleExpr):
        for el in expr.elements:
            yield from walk_expr(el)


def used_vars(expr: Expr) -> Iterator[Var]:
    for e in walk_expr(expr):
        if isinstance(e, Var):
            yield e
