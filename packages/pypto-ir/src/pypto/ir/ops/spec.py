"""What an op is: an :class:`OpSpec` with operand roles, a typed attribute schema and traits.

Every op is declared once, in the family module that owns it (``elementwise``, ``reduction``,
``movement``, ``cube``, ``crosscore``, ``system``, ``scalar``, ``prefetch``, ``debug``). The other
layers never keep their own tables of op names: they ask the registry for the ops that carry a trait
(:func:`ops_with`) or read a call's spec (:func:`get_op`) — the printer its infix syntax, the
passes the split policy and the GM access, a backend the cost class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, TypeCheckError, VerificationError
from pypto.ir.nodes import Call, Expr
from pypto.ir.ops.enums import PadValue
from pypto.ir.types import ArrayType, MemorySpace, ScalarType, TensorType, TileType, Type


class Unit(Enum):
    """The hardware unit an op runs on."""

    CUBE = "CUBE"
    VECTOR = "VECTOR"
    MTE = "MTE"  # data movement engines (loads, stores, moves)
    SCALAR = "SCALAR"
    BOUNDARY = "BOUNDARY"  # cross-core pipe ops
    HOST = "HOST"  # orchestration-level: allocation, kernel calls


class Level(Enum):
    """Where an op is written: on whole tensors (tiled by the compiler), on tiles, on scalars, or
    at the system level (pipes, barriers, block indices, calls)."""

    TENSOR = "tensor"
    TILE = "tile"
    SCALAR = "scalar"
    SYSTEM = "system"


class Side(Enum):
    """The half of a core group an op runs on: the cube core (AIC) or the vector lanes (AIV)."""

    CUBE = "cube"
    VECTOR = "vector"


# ---------------------------------------------------------------- operands and attributes


class Role(Enum):
    """What an operand is."""

    TENSOR = "tensor"  # a global-memory tensor
    TILE = "tile"  # an on-chip tile
    SHAPED = "shaped"  # a tensor or a tile (the op has both levels)
    OFFSETS = "offsets"  # a tuple of indices, one per dimension
    VALID_SHAPE = "valid_shape"  # a run-time valid shape: a tuple of index extents
    SCALAR = "scalar"  # a number or a run-time scalar
    ARRAY = "array"  # a scalar array (pl.array.create), a value like a scalar
    HANDLE = "handle"  # an opaque handle (a prefetch context, event or session): no data


class Effect(Enum):
    """How an op touches an operand's storage."""

    READ = "read"
    WRITE = "write"
    UPDATE = "update"  # read and written (an atomic add into a tensor)
    NONE = "none"  # named, not accessed as data (a scratch tile, a freed slot, a barrier workspace)


# Roles whose operands are storage (the others are index tuples and scalars).
STORAGE = frozenset({Role.TENSOR, Role.TILE, Role.SHAPED})


@dataclass(frozen=True)
class Operand:
    """One positional operand: its name (as the DSL calls it), role, the memory spaces a tile
    operand may be in (``None``: any), whether it may be left out, and its effect."""

    name: str
    role: Role
    spaces: tuple[MemorySpace, ...] | None = None
    optional: bool = False
    effect: Effect = Effect.READ


REQUIRED: Any = object()  # default of an attribute the call must give


@dataclass(frozen=True)
class Attr:
    """One keyword attribute: its name, the Python type (an enum, ``int``, ``bool``, ``tuple`` for
    shapes, ``str`` with ``choices``, or ``object`` for anything), and its default."""

    name: str
    kind: type
    default: Any = None
    choices: tuple[Any, ...] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def accepts(self, value: Any) -> bool:
        if value is None and not self.required:
            return True
        if self.choices is not None:
            return value in self.choices
        if self.kind is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if self.kind is tuple:
            return isinstance(value, (tuple, list))
        return isinstance(value, self.kind)


# ---------------------------------------------------------------- traits


class Trait:
    """A fact about an op that another layer reads (frozen dataclasses below)."""


@dataclass(frozen=True)
class Elementwise(Trait):
    """Result element i depends on operand element i only; a row block of the operands gives the
    same row block of the result. ``scalar_form`` names the op taking a scalar right operand,
    ``on_scalars`` the scalar op the DSL function is on two scalars (``pl.div(i, 2)``:
    ``scalar.truediv``)."""

    scalar_form: str | None = None
    on_scalars: str | None = None
    broadcast: bool = True  # a [R, 1] / [1, C] operand repeats to the other's shape (bitwise ops: no)


@dataclass(frozen=True)
class Commutative(Trait):
    """``f(a, b) == f(b, a)``: a scalar left operand may be swapped to the right."""


@dataclass(frozen=True)
class FloatOnly(Trait):
    """Defined on floats only (exp, log, ...): on integers it would truncate."""


@dataclass(frozen=True)
class IntegerOnly(Trait):
    """Defined on integers only (bitwise logic, shifts): on floats the bits mean nothing."""


@dataclass(frozen=True)
class OnlyDtypes(Trait):
    """Defined on these element dtypes only (``pl.sin`` on FP32, ``pl.not_`` on 16-bit integers),
    by dtype name (a dtype this build does not have is simply never met)."""

    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Reduction(Trait):
    """Reduces ``axis`` (1: each row to one value, [R, C] -> [R, 1]; 0: each column, -> [1, C]).
    ``join`` is the elementwise op (DSL name) that combines the results of two blocks of the
    reduced axis (None: no elementwise op does, as for an index of the extremum), and
    ``identity`` the value a running result starts from and a partial operand is padded with."""

    axis: int
    join: str | None
    identity: PadValue = PadValue.zero


@dataclass(frozen=True)
class RowShared(Trait):
    """Operand ``operand`` (and those in ``also``) is the same for every row block of the result
    (a matmul's right operand and bias row, a [1, C] row broadcast down the rows): the tiler
    loads it whole, once."""

    operand: int
    also: tuple[int, ...] = ()

    @property
    def operands(self) -> tuple[int, ...]:
        return (self.operand, *self.also)


@dataclass(frozen=True)
class Broadcast(Trait):
    """Operand ``operand`` is a vector repeated along ``axis`` (1: a [R, 1] column across the
    columns; 0: a [1, C] row down the rows) and combined elementwise with operand 0."""

    axis: int
    operand: int = 1


@dataclass(frozen=True)
class GmAccess(Trait):
    """Touches a region of a global-memory tensor: operand ``tensor`` at offsets operand
    ``offsets``; the region's extents are the tile's (``tile`` operand), the ``shape`` attr, or a
    run-time valid shape operand ``valid``; ``write``: a write (``atomic``: an add into it).

    An indexed access (``indexed``, with no offsets) touches the places operand ``indexed`` holds
    at run time: whole rows of the tensor, or, with the attr ``coalesce="elem"``, single elements
    at those flat (row-major) positions (a gather or scatter by an index tile)."""

    tensor: int
    offsets: int | None
    write: bool = False
    atomic: bool = False
    tile: int | None = None
    valid: int | None = None
    indexed: int | None = None


class PipeAction(Enum):
    INIT = "init"
    PUSH = "push"
    POP = "pop"
    FREE = "free"


class PipeDirection(Enum):
    """A cross-core pipe's direction."""

    C2V = "c2v"  # cube -> vector lanes
    V2C = "v2c"  # vector lanes -> cube

    @property
    def mask_bit(self) -> int:
        """The direction's bit in a pipe init's ``dir_mask`` (1: cube -> vector, 2: vector -> cube)."""
        return 1 if self is PipeDirection.C2V else 2

    @property
    def arrow(self) -> str:
        return "cube->vector" if self is PipeDirection.C2V else "vector->cube"


@dataclass(frozen=True)
class PipeEnd(Trait):
    """One end of a cross-core pipe: runs on ``side``; ``direction`` is None for an init (which
    sets up the directions its ``dir_mask`` names)."""

    side: Side
    action: PipeAction
    direction: PipeDirection | None = None


@dataclass(frozen=True)
class OnSide(Trait):
    """Runs on a fixed side whatever its operands (e.g. the vector lane index); ``only``: the other
    side's cores cannot run it at all (a hand-written kernel of that side holding it is an error)."""

    side: Side
    only: bool = False


@dataclass(frozen=True)
class Boundary(Trait):
    """Sits on the boundary of a mixed region: a value crossing between the cube and the lanes
    (both sides take part)."""


@dataclass(frozen=True)
class Ordering(Trait):
    """Orders memory across the cores of a launch (fence, cache invalidation, barriers): runs on
    whichever core reaches it."""


@dataclass(frozen=True)
class KeepsValid(Trait):
    """The result keeps operand 0's valid shape."""


@dataclass(frozen=True)
class Product(Trait):
    """A matrix product of operands ``lhs`` and ``rhs``: its valid shape is the left operand's
    valid rows by the right operand's valid columns."""

    lhs: int
    rhs: int


@dataclass(frozen=True)
class SetsValid(Trait):
    """The result's valid shape is operand ``operand`` (a tuple of index extents): the tile's
    valid region from then on, whatever it was before (``pl.set_validshape``)."""

    operand: int


@dataclass(frozen=True)
class PlacesTile(Trait):
    """The result is a tile the allocator places in a buffer of its memory space (ops without it
    that return a tile hand out a pipe ring slot, or return a destination operand)."""


@dataclass(frozen=True)
class InPipeSlot(Trait):
    """The result lives in a cross-core pipe's ring slot, not an allocated buffer."""


ALL = None  # SplitPolicy: every operand and the result


@dataclass(frozen=True)
class SplitPolicy(Trait):
    """How a vector op runs when a mixed kernel's vector work is split over the two lanes by rows
    (``rows``) or by columns (``cols``): ``()`` splits freely; a tuple names the operands each
    lane must hold whole; ``ALL`` (None) means the op works on the whole tile."""

    rows: tuple[int, ...] | None = ()
    cols: tuple[int, ...] | None = ()

    def needs_whole(self, axis: int) -> tuple[int, ...] | None:
        return self.rows if axis == 0 else self.cols


SPLIT_FREELY = SplitPolicy()
WHOLE_TILE = SplitPolicy(rows=ALL, cols=ALL)


@dataclass(frozen=True)
class Cost(Trait):
    """The cost class a backend's cost model keys on (``vector``, ``vector_slow``, ``matmul``,
    ``load``, ``store``, ``move``, ``pipe_push``, ...); ops without it cost nothing."""

    cls: str


@dataclass(frozen=True)
class Fold(Trait):
    """Constant folding: ``fn`` computes the result from constant operands."""

    fn: Callable[..., Any]


@dataclass(frozen=True)
class Infix(Trait):
    """Printed as an infix (or prefix, for one operand) Python operator."""

    symbol: str


@dataclass(frozen=True)
class Lowers(Trait):
    """A tensor op the tiler lowers to the tile op ``to`` on each block."""

    to: str


@dataclass(frozen=True)
class WholeRegion(Trait):
    """A tensor op the tiler runs on the whole region at once (its result is not row-blockable)."""


@dataclass(frozen=True)
class OnHost(Trait):
    """A tensor op the orchestration runs too, outside scopes, where it makes a view of a tensor it
    holds (no data moves): ``pl.slice`` of a tensor. Its run-time window extents may come as the
    ``shape`` operand; on a core it is tiled like the other tensor ops."""


@dataclass(frozen=True)
class TaskIds(Trait):
    """The op takes task ids (``pl.TASK_ID`` scalars, arrays or a ``dtype=pl.TASK_ID``); every
    other op refuses them: a task id names a task, it is no number to compute with."""


@dataclass(frozen=True)
class Communicates(Trait):
    """Talks to other ranks (``pld.*``: a notify, a wait, a remote read or write, a collective, a
    dispatch): an ordering point no pass moves a memory access across, nor removes. ``where``
    says the functions it may stand in: ``"host"`` (a HOST function), ``"kernel"`` (a kernel or a
    ``pl.at`` scope) or ``"both"``."""

    where: str = "kernel"


@dataclass(frozen=True)
class Observes(Trait):
    """The op only looks at its operands (``pl.debug.print``, ``pl.debug.breakpoint``): it writes
    nothing, takes no modeled time, and is kept by every pass where its operands are live (on the
    side, and on each lane, that holds them)."""


@dataclass(frozen=True)
class Positional(Trait):
    """A generator whose elements depend on their flat (row-major) position: operand ``operand``
    is the position of the first element, so a block of the result that starts ``n`` elements in
    is made with it advanced by ``n`` (moved back instead when the flag attribute ``backward``
    names is set: a descending arange)."""

    operand: int
    backward: str | None = None


@dataclass(frozen=True)
class Reinterprets(Trait):
    """The result holds operand 0's bytes as elements of another dtype: a valid shape's last axis
    scales by the byte-width ratio."""


@dataclass(frozen=True)
class FormatFree(Trait):
    """The op moves, views or converts elements without computing with them (a load, a store, a
    reshape, a cast): it takes the storage formats (``pl.FP8E4M3FN``, ``pl.UINT64``, ...) that
    every other op refuses (:attr:`DataType.computes`)."""


# ---------------------------------------------------------------- the spec

Rule = Callable[["OpSpec", Sequence[Expr], Mapping[str, Any], "SourceSpan | None"], Type]
T = TypeVar("T", bound=Trait)


@dataclass(frozen=True)
class OpSpec:
    """One op: everything any layer needs to know about it."""

    name: str
    level: Level
    unit: Unit
    rule: Rule
    operands: tuple[Operand, ...] = ()
    attrs: tuple[Attr, ...] = ()
    traits: tuple[Trait, ...] = ()
    dsl: str | None = None  # the DSL function it is written as: "add" for tile.add and tile.adds
    signature: str = ""  # the DSL call, e.g. "pl.add(lhs, rhs)"
    doc: str = ""  # one line
    open: bool = False  # takes any operands and attributes (a kernel call: the callee's)
    _by_kind: dict[type, Trait] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for t in self.traits:
            self._by_kind[type(t)] = t

    def infer(self, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
        """The result type of a call with ``args`` and ``attrs`` (raises ``TypeCheckError``)."""
        if not self.has(TaskIds):
            _refuse_task_ids(self, args, attrs, span)
        _refuse_formats(self, args, attrs, span)
        return self.rule(self, args, attrs, span)

    def trait(self, kind: type[T]) -> T | None:
        found = self._by_kind.get(kind)
        return found  # type: ignore[return-value]

    def has(self, kind: type[Trait]) -> bool:
        return kind in self._by_kind

    @property
    def reads(self) -> tuple[int, ...]:
        return self._touching(Effect.READ, Effect.UPDATE)

    @property
    def writes(self) -> tuple[int, ...]:
        return self._touching(Effect.WRITE, Effect.UPDATE)

    def _touching(self, *effects: Effect) -> tuple[int, ...]:
        """The storage operands (by position) the op accesses with one of ``effects``."""
        return tuple(i for i, o in enumerate(self.operands) if o.role in STORAGE and o.effect in effects)

    @property
    def cost(self) -> str:
        c = self.trait(Cost)
        return c.cls if c else "none"

    @property
    def in_pipe_slot(self) -> bool:
        return self.has(InPipeSlot)

    @property
    def dsl_name(self) -> str:
        """How the user writes the op: ``pl.add``; a distributed op ``pld.system.notify``."""
        module = "pld" if self.name.startswith("dist.") else "pl"
        return f"{module}.{self.dsl or self.name}"

    def attr(self, name: str) -> Attr | None:
        return next((a for a in self.attrs if a.name == name), None)

    def schema_problem(self, call: Call) -> str | None:
        """What is wrong with ``call`` against this spec's operands and attribute schema (an
        operand count outside the declared ones, an attribute not declared, of the wrong kind, or
        missing), or None. An ``open`` op (a kernel call) takes any operands and attributes."""
        if self.open:
            return None
        required = sum(1 for o in self.operands if not o.optional)
        if not required <= len(call.args) <= len(self.operands):
            wanted = ", ".join(o.name for o in self.operands) or "no operands"
            return f"takes ({wanted}), got {len(call.args)} operand(s)"
        for name, value in call.attrs.items():
            attr = self.attr(name)
            if attr is None:
                known = ", ".join(a.name for a in self.attrs) or "none"
                return f"has no attribute {name!r} (its attributes: {known})"
            if not attr.accepts(value):
                return f"attribute {name}={value!r} is not a {attr.kind.__name__}"
        missing = [a.name for a in self.attrs if a.required and a.name not in call.attrs]
        if missing:
            return f"misses attribute(s) {', '.join(missing)}"
        return None


def _refuse_task_ids(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> None:
    """A ``TypeCheckError`` if an op that computes is given a task id (or asked for the dtype)."""
    given = [a.type for a in args if isinstance(a.type, (ScalarType, ArrayType))]
    if any(t.dtype is DataType.TASK_ID for t in given) or DataType.TASK_ID in attrs.values():
        name = spec.dsl_name if spec.dsl else spec.name
        raise TypeCheckError(
            f"{name}: a task id (pl.TASK_ID) names a task; it is no number or element to compute with",
            span,
            "use task ids in deps=[...] only, and keep several in an array: "
            "tids = pl.array.create(n, pl.TASK_ID); tids[i] = tid",
        )


def _dtypes_of(args: Sequence[Expr], attrs: Mapping[str, Any]) -> list[DataType]:
    """The element dtypes a call names: its operands' and its ``dtype=`` attribute."""
    found = [t.dtype for a in args if isinstance(t := a.type, (TileType, TensorType, ScalarType, ArrayType))]
    if isinstance(attrs.get("dtype"), DataType):
        found.append(attrs["dtype"])
    return found


def _refuse_formats(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> None:
    """A ``TypeCheckError`` for a dtype a2a3 kernels hold nothing of (the 4-bit formats, ``HF8``)
    anywhere, and for a storage format (FP8, ``UINT64``) in an op that computes with its elements."""
    name = spec.dsl_name if spec.dsl else spec.name
    for dtype in _dtypes_of(args, attrs):
        if not dtype.has_torch_dtype:
            what = "a 4-bit format packed two elements to a byte" if dtype.packed else "a format of Ascend950"
            raise TypeCheckError(
                f"{name}: pl.{dtype.name} is {what}, and a2a3 kernels hold no tile or tensor of it",
                span,
                "keep the data as bytes (pl.UINT8 / pl.INT8) and unpack it on the host",
            )
        if not dtype.computes and not spec.has(FormatFree):
            raise TypeCheckError(
                f"{name} computes with its elements, and pl.{dtype.name} elements are only loaded, "
                "stored, moved, viewed and converted on a2a3",
                span,
                f"convert first with pl.cast(x, pl.FP32) (pl.INT32 for integers), and back with "
                f"pl.cast(y, pl.{dtype.name}) before storing",
            )


OPS: dict[str, OpSpec] = {}


def declare(spec: OpSpec) -> OpSpec:
    if spec.name in OPS:
        raise ValueError(f"op {spec.name!r} declared twice")
    OPS[spec.name] = spec
    return spec


def declare_op(
    name: str,
    level: Level,
    unit: Unit,
    rule: Any,
    operands: tuple[Operand, ...],
    attrs: tuple[Attr, ...],
    traits: tuple[Trait, ...],
    dsl: str,
    signature: str,
    doc: str,
) -> None:
    """:func:`declare` of an op spec written out field by field, in OpSpec's order."""
    declare(OpSpec(name, level, unit, rule, operands, attrs, traits, dsl, signature, doc))


def undeclare(name: str) -> None:
    """Remove an op (tests that declare throwaway ops); its handle stops resolving."""
    OPS.pop(name, None)
    for names in (tile, tensor, scalar, system, array, prefetch, debug, dist, op):
        names.forget(name)


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise VerificationError(f"unknown op {name!r}") from None


def ops_with(kind: type[Trait], level: Level | None = None) -> Iterator[OpSpec]:
    """The registered ops that carry trait ``kind`` (at ``level``, if given), in declaration order."""
    return (s for s in OPS.values() if s.has(kind) and (level is None or s.level is level))


def pipe_op(action: PipeAction, direction: PipeDirection | None = None, side: Side | None = None) -> str:
    """The pipe op doing ``action`` for ``direction`` (or, for an init, on ``side``)."""
    for spec in OPS.values():
        end = spec.trait(PipeEnd)
        if end is None or end.action is not action:
            continue
        if (direction is None or end.direction is direction) and (side is None or end.side is side):
            return spec.name
    raise LookupError(f"no pipe op {action.value} for {direction} on {side}")  # a compiler bug


def trait_of(call: Call | str, kind: type[T]) -> T | None:
    """Trait ``kind`` of a call's op (or of the op named), None if it has none."""
    return get_op(call if isinstance(call, str) else call.op).trait(kind)


def make_call(
    op: str,
    args: Sequence[Expr],
    attrs: Mapping[str, Any] | None = None,
    span: SourceSpan | None = None,
    type: Type | None = None,
) -> Call:
    """Build a ``Call`` whose type comes from the op's type rule (or ``type`` if given)."""
    attrs = dict(attrs or {})
    args = tuple(args)
    result = type if type is not None else get_op(op).infer(args, attrs, span)
    return Call(op, args, result, attrs, span)


# ---------------------------------------------------------------- handles


class OpNames:
    """Attribute access to registered op names: ``tile.add == "tile.add"``, checked against the
    registry when read, so a misspelled op fails where it is written instead of matching nothing.
    Other layers name ops through these handles, never through string literals."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def __getattr__(self, name: str) -> str:
        op = f"{self._prefix}{name}"
        if op not in OPS:
            raise AttributeError(f"no op {op!r} is declared")
        # Later reads are plain attribute lookups (hot paths read handles per op), until the op
        # leaves the registry (forget()).
        self.__dict__[name] = op
        return op

    def forget(self, name: str) -> None:
        """Drop the cached handle of an op that left the registry (tests declaring throwaway ops)."""
        self.__dict__.pop(name.removeprefix(self._prefix), None)

    def __repr__(self) -> str:
        return f"<ops {self._prefix or '(unprefixed)'}*>"


tile = OpNames("tile.")
tensor = OpNames("tensor.")
scalar = OpNames("scalar.")
system = OpNames("system.")
array = OpNames("array.")  # the scalar array ops (pl.array.create, arr[i], arr[i] = v)
prefetch = OpNames("prefetch.")  # the asynchronous GM -> L2 prefetch (pl.prefetch.async_prefetch, ...)
debug = OpNames("debug.")  # the kernel debugger's ops (pl.debug.print, pl.debug.breakpoint)
dist = OpNames("dist.")  # the distributed model's ops (pld.*): ranks, windows, signals, remote access
op = OpNames("")  # ops without a level prefix: the cross-core pipe ops, block indices, call
