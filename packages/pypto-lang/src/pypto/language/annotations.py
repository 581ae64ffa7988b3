"""Type annotations: ``pl.Tensor``, ``pl.Tile``, ``pl.Scalar``, ``pl.Out`` and ``pl.InOut``.

Subscripting an annotation class builds a plain spec object, so annotations work both when
Python evaluates a signature at ``def`` time and when the parser evaluates one from the AST.
"""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from math import prod
from typing import Any, ClassVar, cast

from pypto.ir import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    COMM_CTX,
    PREFETCH_CONTEXT,
    WINDOW_BUFFER,
    CompactMode,
    Const,
    DataType,
    Direction,
    DistributedTensorType,
    DynDim,
    Expr,
    HandleType,
    MemorySpace,
    MemRefError,
    MemRefSlot,
    PadValue,
    ParseError,
    PyptoError,
    ScalarType,
    SourceSpan,
    TensorLayout,
    TensorType,
    TileLayout,
    TypeCheckError,
)
from pypto.ir.extents import Extent, is_symbolic, tensor_type
from pypto.ir.tracebacks import frame_span, is_internal, raise_at_user_line


@dataclass(frozen=True)
class TensorSpec:
    """A global-memory tensor annotation; ``shape``/``dtype`` are None for a bare ``pl.Tensor``.

    ``bound_axes`` are the dims of a bare ``pl.Tensor`` that ``x.bind_dynamic(axis, M)`` in the
    body makes dynamic (an annotated shape holds its dynamic extents itself)."""

    shape: tuple[Extent, ...] | None = None
    dtype: DataType | None = None
    direction: Direction = Direction.In
    bound_axes: tuple[tuple[int, DynDim], ...] = ()
    view: TensorView | None = None  # a pl.TensorView item, if written
    distributed: bool = False  # pld.DistributedTensor: bound to a window buffer on every rank

    def type_of(self, shape: Sequence[Extent], dtype: DataType) -> TensorType:
        """The IR type of a parameter so annotated, of ``shape`` and ``dtype``: a window-bound
        ``DistributedTensorType`` for ``pld.DistributedTensor``, else a ``TensorType``."""
        t = tensor_type(shape, dtype)
        return DistributedTensorType(t.shape, t.dtype) if self.distributed else t

    def shape_for(self, actual: Sequence[Extent]) -> tuple[Extent, ...]:
        """The shape a parameter so annotated has when passed a tensor of shape ``actual``: the
        annotated one, or ``actual`` with the dims ``bind_dynamic`` names made dynamic."""
        if self.shape is not None:
            return self.shape
        shape = list(actual)
        for axis, dim in self.bound_axes:
            if not -len(shape) <= axis < len(shape):
                raise ParseError(
                    f"bind_dynamic({axis}, {dim.name}) names dim {axis}, but the tensor passed has "
                    f"{len(shape)} dim(s)",
                    hint=f"name a dim from 0 to {len(shape) - 1}",
                )
            shape[axis] = dim
        return tuple(shape)

    def __str__(self) -> str:
        name = "pld.DistributedTensor" if self.distributed else "pl.Tensor"
        inner = name if self.shape is None else f"{name}[{list(self.shape)}, pl.{self.dtype}]"
        return inner if self.direction is Direction.In else f"pl.{self.direction.value}[{inner}]"


def _at_annotation(getitem: Callable[..., Any]) -> Callable[..., Any]:
    """A bad annotation evaluated by Python at ``def`` time is an error at that annotation in the
    user's file (the parser gives the span itself when it evaluates one)."""

    @functools.wraps(getitem)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return getitem(*args, **kwargs)
        except PyptoError as err:
            failure = err
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") == __name__:
            frame = frame.f_back  # type: ignore[assignment]
        if failure.span is None and frame is not None and not is_internal(frame):
            failure.span = frame_span(frame)
            raise_at_user_line(failure, "<annotation>")
        raise failure

    return wrapper


def as_pad_value(value: Any, what: str) -> PadValue:
    """A pad given as a ``pl.PadValue`` or as the number it stands for: ``0`` (or ``0.0``) for
    ``zero``, ``math.inf`` for ``max``, ``-math.inf`` for ``min``."""
    plain = value.value if isinstance(value, Const) else value
    if isinstance(plain, PadValue):
        return plain
    if isinstance(plain, (int, float)) and not isinstance(plain, bool):
        if plain == 0:
            return PadValue.zero
        if plain == math.inf:
            return PadValue.max
        if plain == -math.inf:
            return PadValue.min
    raise ParseError(
        f"{what} must be a pl.PadValue (or 0, math.inf, -math.inf), got the {type(plain).__name__} {plain!r}",
        hint="write pl.PadValue.zero (or 0), pl.PadValue.max (math.inf) or pl.PadValue.min (-math.inf)",
    )


def _extent(value: Any, what: str, least: int) -> int | Expr:
    """One entry of a view's shape or stride: an int of at least ``least``, or a run-time integer
    scalar (a loop index, a ``pl.read`` result, a ``pl.dynamic`` extent)."""
    plain = value.value if isinstance(value, Const) else value
    if isinstance(plain, int) and not isinstance(plain, bool):
        if plain < least:
            raise ParseError(
                f"{what} holds {plain}, below {least}",
                hint=f"every entry is at least {least} (or a run-time integer scalar)",
            )
        return plain
    t = getattr(value, "type", None)
    if isinstance(value, Expr) and isinstance(t, ScalarType) and t.dtype.is_integer:
        return value
    raise ParseError(
        f"{what} must hold ints or integer scalars, got {value!r}",
        hint="write numbers (e.g. [16, 64]) or run-time integer scalars (e.g. [rows, 64])",
    )


def _extents(value: Any, what: str, least: int) -> tuple[int | Expr, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise ParseError(
            f"{what} must be a non-empty list, got {value!r}",
            hint=f"write {what}[16, 64]: one entry per dimension",
        )
    return tuple(_extent(v, what, least) for v in value)


def _member(value: Any, enum: type[Enum], what: str) -> Any:
    if not isinstance(value, enum):
        members = ", ".join(repr(m) for m in enum)
        raise ParseError(
            f"{what} must be a pl.{enum.__name__}, got {value!r}", hint=f"write one of {members}"
        )
    return value


def _unknown_fields(cls: str, unknown: dict[str, Any], fields: tuple[str, ...]) -> None:
    if unknown:
        raise ParseError(
            f"pl.{cls} has no field {', '.join(sorted(unknown))}",
            hint=f"pl.{cls} takes {', '.join(f + '=' for f in fields)}",
        )


@dataclass(frozen=True, init=False)
class TileView:
    """``pl.TileView(valid_shape=[rows, 64], ...)``: the view of a tile an annotation states.

    In ``t: pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[rows, 64])] = ...``
    ``valid_shape`` (ints or run-time integer scalars) is the leading region of the tile that is
    real: a value valid everywhere gets it (as ``pl.set_validshape`` would), a value with a valid
    shape of its own must have this one. ``pad`` is what reads outside it see: a Vec tile is filled
    with it there. ``stride`` (elements per step of each dim) must be the layout's: row-major for
    ``blayout=row_major``, column-major for ``col_major``; a boxed layout (``slayout`` other than
    ``none_box``) takes any. ``start_offset`` (elements from the buffer's start), ``blayout`` /
    ``slayout`` (``pl.TileLayout``), ``fractal`` (box size in bytes, a power of two) and
    ``compact`` (``pl.CompactMode``) describe how the hardware stores the tile; they are checked
    and recorded, and the simulator, whose tiles are plain arrays, computes the same either way.
    """

    FIELDS: ClassVar[tuple[str, ...]] = (
        "valid_shape",
        "stride",
        "start_offset",
        "blayout",
        "slayout",
        "fractal",
        "pad",
        "compact",
    )
    valid_shape: tuple[int | Expr, ...] | None
    stride: tuple[int | Expr, ...] | None
    start_offset: int | Expr | None
    blayout: TileLayout
    slayout: TileLayout
    fractal: int
    pad: PadValue
    compact: CompactMode

    @_at_annotation
    def __init__(
        self,
        valid_shape: Any = None,
        stride: Any = None,
        start_offset: Any = None,
        blayout: Any = TileLayout.row_major,
        slayout: Any = TileLayout.none_box,
        fractal: Any = 512,
        pad: Any = PadValue.null,
        compact: Any = CompactMode.null,
        **unknown: Any,
    ) -> None:
        _unknown_fields("TileView", unknown, self.FIELDS)
        fractal = fractal.value if isinstance(fractal, Const) else fractal
        if (
            isinstance(fractal, bool)
            or not isinstance(fractal, int)
            or fractal < 1
            or fractal & (fractal - 1)
        ):
            raise ParseError(
                f"pl.TileView fractal= is a box size in bytes, a power of two; got {fractal!r}",
                hint="leave it out (512 bytes), or write the size of the hardware box, e.g. fractal=1024",
            )
        offset = None if start_offset is None else _extent(start_offset, "pl.TileView start_offset=", 0)
        values = {
            "valid_shape": _extents(valid_shape, "pl.TileView valid_shape=", 0),
            "stride": _extents(stride, "pl.TileView stride=", 0),
            "start_offset": offset,
            "blayout": _member(blayout, TileLayout, "pl.TileView blayout="),
            "slayout": _member(slayout, TileLayout, "pl.TileView slayout="),
            "fractal": fractal,
            "pad": as_pad_value(pad, "pl.TileView pad="),
            "compact": _member(compact, CompactMode, "pl.TileView compact="),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)


@dataclass(frozen=True, init=False)
class TensorView:
    """``pl.TensorView(stride=[1024, 1], layout=pl.TensorLayout.ND, valid_shape=[16, 64], pad=...)``:
    how a tensor parameter lies in memory, in an annotation ``pl.Tensor[[16, 64], pl.FP32,
    pl.TensorView(...)]``. ``stride`` gives the elements between neighbours of each dim (a window
    into a larger buffer): the argument must be a tensor with those strides, and the kernel reads
    and writes it through them. ``valid_shape`` is the leading region that is real (ints,
    ``pl.dynamic`` extents, or run-time integer scalars): loads from it see only that region, and
    ``pad`` (a ``pl.PadValue``) is what they read outside it. ``layout`` (``pl.TensorLayout``) must
    be given with any of them; only ``ND`` (row-major) describes a tensor parameter here.
    """

    FIELDS: ClassVar[tuple[str, ...]] = ("stride", "layout", "valid_shape", "pad")
    stride: tuple[int | Expr, ...] | None
    layout: TensorLayout | None
    valid_shape: tuple[int | Expr, ...] | None
    pad: PadValue

    @_at_annotation
    def __init__(
        self,
        stride: Any = None,
        layout: Any = None,
        valid_shape: Any = None,
        pad: Any = PadValue.null,
        **unknown: Any,
    ) -> None:
        _unknown_fields("TensorView", unknown, self.FIELDS)
        given = [f"{n}=" for n, v in (("stride", stride), ("valid_shape", valid_shape)) if v is not None]
        if pad is not PadValue.null and pad is not None:
            given.append("pad=")
        if layout is None and given:
            raise ParseError(
                f"pl.TensorView with {', '.join(given)} needs layout=",
                hint="say how the tensor lies in memory: layout=pl.TensorLayout.ND (row-major)",
            )
        values = {
            "stride": _extents(stride, "pl.TensorView stride=", 0),
            "layout": None if layout is None else _member(layout, TensorLayout, "pl.TensorView layout="),
            "valid_shape": _extents(valid_shape, "pl.TensorView valid_shape=", 0),
            "pad": PadValue.null if pad is None else as_pad_value(pad, "pl.TensorView pad="),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class MemRef:
    """``pl.MemRef("ub", slots=2)``: one allocation of ``slots`` equal slots that tiles are placed
    in by hand. Indexed in a tile annotation, ``pl.Tile[[64, 128], pl.FP32,
    pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec]``, it puts the tile in the slot the index picks:
    a constant, or an affine form of one loop variable modulo ``slots`` (``i % 2``,
    ``(i + 1) % 2``, ``(2 * i) % 4``; ``i`` alone is taken modulo ``slots`` too). Every tile
    annotated with the same name shares the allocation; a slot is as large as the largest of them.
    """

    name: str
    slots: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise MemRefError(
                f"pl.MemRef takes the allocation's name as a string, got {self.name!r}",
                hint='write pl.MemRef("ub", slots=2): tiles annotated with one name share its slots',
            )
        if not isinstance(self.slots, int) or isinstance(self.slots, bool) or self.slots < 1:
            raise MemRefError(
                f"pl.MemRef slots must be a positive int, got {self.slots!r}",
                hint=f'write pl.MemRef("{self.name}", slots=2): the number of equal slots of the allocation',
            )

    def __getitem__(self, index: Any) -> MemRefSlot:
        """A constant slot: ``pl.MemRef("ub", slots=2)[1]`` (a loop variable's index is read by
        the kernel parser, which sees the loop)."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise MemRefError(
                f"pl.MemRef({self.name!r}) index must be a constant or a loop variable's affine form, "
                f"got {index!r}",
                hint=f"index it inside a kernel: pl.MemRef({self.name!r}, slots={self.slots})[i % "
                f"{self.slots}], or with a slot number from 0 to {self.slots - 1}",
            )
        return constant_slot(self, index)


def constant_slot(ref: MemRef, index: int) -> MemRefSlot:
    """Slot ``index`` of ``ref``; out of range is a ``MemRefError``."""
    if not 0 <= index < ref.slots:
        raise MemRefError(
            f"pl.MemRef({ref.name!r}, slots={ref.slots}) has no slot {index}",
            hint=f"pick a slot from 0 to {ref.slots - 1}, or give the allocation more slots "
            f"(slots={index + 1})",
        )
    return MemRefSlot(ref.name, ref.slots, None, 1, index)


@dataclass(frozen=True)
class TileSpec:
    """An on-chip tile annotation, used on annotated assignments inside scopes; without a memory
    space it matches a tile in any space. ``view`` is a ``pl.TileView`` item, if written;
    ``memref`` the ``pl.MemRef(...)[index]`` slot the tile is placed in, if written."""

    shape: tuple[int, ...]
    dtype: DataType
    memory_space: MemorySpace | None = None
    view: TileView | None = None
    memref: MemRefSlot | None = None

    def valid_shape(self) -> tuple[int | Expr, ...] | None:
        """The valid shape the annotation states: None when the whole tile is valid."""
        valid = self.view.valid_shape if self.view is not None else None
        return None if valid is None or valid == self.shape else valid


@dataclass(frozen=True)
class ScalarSpec:
    """A scalar annotation: ``pl.Scalar[pl.FP32]`` or a bare dtype such as ``pl.FP32``;
    ``pl.TaskId`` is ``pl.Scalar[pl.TASK_ID]``, a task id."""

    dtype: DataType

    def __str__(self) -> str:
        return "pl.TaskId" if self.dtype is DataType.TASK_ID else f"pl.Scalar[pl.{self.dtype.name}]"


@dataclass(frozen=True)
class ArraySpec:
    """A scalar array annotation: ``arr: pl.Array[8, pl.INT32] = pl.array.create(8, pl.INT32)``."""

    size: int
    dtype: DataType

    def __str__(self) -> str:
        return f"pl.Array[{self.size}, pl.{self.dtype.name}]"


@dataclass(frozen=True)
class HandleSpec:
    """An opaque handle annotation: ``evt: pl.AsyncEvent = pl.prefetch.async_prefetch(x, ctx)``."""

    type: HandleType

    def __str__(self) -> str:
        return str(self.type)


AnnotationSpec = TensorSpec | TileSpec | ScalarSpec | ArraySpec | HandleSpec


@dataclass(frozen=True)
class TupleSpec:
    """A multi-value return annotation, ``-> pl.Tuple[T1, T2]``: the types of the values a
    function returns, in order (the parser reads what a body returns from its return statement)."""

    items: tuple[AnnotationSpec, ...]

    def __str__(self) -> str:
        return f"pl.Tuple[{', '.join(map(str, self.items))}]"


# The element dtypes, for hints: pl.FP16, pl.BF16, ... (pl.TASK_ID names tasks, no elements).
DTYPES = ", ".join(f"pl.{d.name}" for d in DataType if d.is_numeric)


def dtype_hint(value: Any) -> str:
    """How to write the dtype ``value`` meant: ``write pl.FP16, not the string 'fp16'``, or the list."""
    if isinstance(value, str) and value.upper() in DataType.__members__:
        return f"write pl.{value.upper()}, not the string {value!r}"
    return f"write a pl dtype, one of {DTYPES}"


# How many pl.dynamic objects of each name exist: each new one is an extent of its own.
_made: Counter[str] = Counter()


def dynamic(name: str) -> DynDim:
    """A tensor extent fixed only at run time: ``M = pl.dynamic("M")`` at module (or class) level,
    then ``pl.Tensor[[M, 128], pl.FP16]`` (or ``[M * 2, 128]``, ``[M // 2, 128]``). A kernel
    compiles once for every extent ``M`` takes; every tensor of one call annotated with the same
    ``M`` object must have the same extent there. Each call makes a new extent: a second
    ``pl.dynamic("M")`` is independent of the first.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ParseError(
            f"pl.dynamic takes the extent's name as a string, got {name!r}",
            hint='write M = pl.dynamic("M"): the name is the one the printed program declares',
        )
    ident = _made[name]
    _made[name] += 1
    return DynDim(name, ident)


def _shape(value: Any, what: str, dynamic: bool = False) -> tuple[Extent, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ParseError(
            f"{what} shape must be a non-empty list of ints, got {value!r}",
            hint=f"write {what}[[128, 128], pl.FP32]: the shape first, as a list",
        )
    for dim in value:
        if is_symbolic(dim) and not dynamic:
            raise ParseError(
                f"{what} shape cannot hold the dynamic extent {dim!r}: a tile's shape is static",
                hint="give the tile a static shape (the block size) and a run-time valid_shape",
            )
        if is_symbolic(dim) or (dynamic and _run_time_extent(dim)):
            continue  # a run-time extent: of an orchestration tensor, in an annotation in its body
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ParseError(
                f"{what} shape must hold positive ints, got {list(value)!r}",
                hint="every dimension is an int of at least 1, e.g. [128, 128]",
            )
    return tuple(value)


def _run_time_extent(dim: Any) -> bool:
    """An integer run-time scalar (the parser's value of a name in the body)."""
    t = getattr(dim, "type", None)
    return isinstance(dim, Expr) and isinstance(t, ScalarType) and t.dtype.is_integer


def _static_shape(value: Any, what: str) -> tuple[int, ...]:
    """A shape of ints only (a tile's, a view's): a dynamic extent there is a ParseError."""
    return cast(tuple[int, ...], _shape(value, what))


def _dtype(value: Any, what: str, task_ids: bool = False) -> DataType:
    if not isinstance(value, DataType):
        raise ParseError(
            f"{what} dtype must be a pl dtype such as pl.FP32, got {value!r}", hint=dtype_hint(value)
        )
    if value is DataType.TASK_ID and not task_ids:
        raise ParseError(
            f"{what} cannot hold task ids (pl.TASK_ID): a task id names a task in the orchestration",
            hint="keep task ids in pl.TaskId names and pl.array.create(n, pl.TASK_ID) arrays; give the "
            f"{what} a number dtype such as pl.INT32",
        )
    return value


def _items(item: Any, what: str, count: tuple[int, ...]) -> tuple[Any, ...]:
    items = item if isinstance(item, tuple) else (item,)
    if len(items) not in count:
        raise ParseError(
            f"{what}[...] takes a shape and a dtype, got {len(items)} item(s)",
            hint=f"write {what}[[128, 128], pl.FP32]",
        )
    return items


class Tensor:
    """``pl.Tensor[[128, 256], pl.FP16]``: a global-memory array; a third item
    ``pl.TensorView(...)`` says how it lies in memory (its strides, its valid region).

    Bare ``pl.Tensor`` takes shape and dtype from the argument at call time.
    """

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TensorSpec:
        items = _items(item, "pl.Tensor", (2, 3))
        shape = _shape(items[0], "pl.Tensor", dynamic=True)
        view = _tensor_view(items[2], shape) if len(items) == 3 else None
        return TensorSpec(shape, _dtype(items[1], "pl.Tensor"), view=view)


class DistributedTensor:
    """``pld.DistributedTensor[[1, 256], pl.FP32]``: a tensor bound to a window buffer, at the same
    place on every rank, so that the other ranks can read, write and signal it (made by
    ``pld.window`` in the HOST function, passed down to chip orchestrations and kernels).

    Bare ``pld.DistributedTensor`` takes shape and dtype from the window passed at the call.
    """

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TensorSpec:
        items = _items(item, "pld.DistributedTensor", (2,))
        shape = _shape(items[0], "pld.DistributedTensor", dynamic=True)
        return TensorSpec(shape, _dtype(items[1], "pld.DistributedTensor"), distributed=True)


def _tensor_view(item: Any, shape: tuple[Extent, ...]) -> TensorView | None:
    """The third item of ``pl.Tensor[...]``: a ``pl.TensorView`` for a tensor of ``shape``, or
    ``pl.ND`` (what a tensor is anyway); the layout-only ``pl.DN`` / ``pl.NZ`` are errors."""
    if item is TensorLayout.ND:
        return None
    if item is TensorLayout.DN:
        raise TypeCheckError(
            "pl.Tensor[..., pl.DN]: the layout-only DN shorthand is not supported",
            hint="annotate the source shape with no layout marker, and transpose at the use: "
            "pl.matmul(a, b, b_trans=True) (or a_trans=True), or pl.transpose(x, -2, -1)",
        )
    if item is TensorLayout.NZ:
        raise TypeCheckError(
            "pl.Tensor[..., pl.NZ]: NZ is a tile layout, never a tensor's",
            hint="drop the marker: a tensor parameter is row-major (ND); tiles take NZ in a pl.TileView",
        )
    if not isinstance(item, TensorView):
        raise ParseError(
            f"pl.Tensor[...] takes a shape, a dtype and optionally a pl.TensorView, got {item!r}",
            hint="write pl.Tensor[[64, 64], pl.FP32, "
            "pl.TensorView(stride=[1024, 1], layout=pl.TensorLayout.ND)]",
        )
    check_tensor_view(item, shape)
    return item


def check_tensor_view(view: TensorView, shape: tuple[Extent, ...]) -> None:
    """A view of a tensor of ``shape``: ND, one stride and one valid extent per dim, the
    constant valid extents inside the shape."""
    if view.layout is not None and view.layout is not TensorLayout.ND:
        raise TypeCheckError(
            f"pl.TensorView layout={view.layout!r}: a tensor parameter is row-major (ND) here",
            hint="write layout=pl.TensorLayout.ND with the strides of the window, and transpose at the use "
            "(pl.matmul(..., b_trans=True) or pl.transpose(x, -2, -1)) for a column-major operand",
        )
    for name in ("stride", "valid_shape"):
        given = getattr(view, name)
        if given is not None and len(given) != len(shape):
            raise ParseError(
                f"pl.TensorView {name}={list(given)} has {len(given)} entries for a tensor of "
                f"rank {len(shape)}",
                hint=f"give one {name} entry per dimension of {list(shape)}",
            )
    for dim, (v, n) in enumerate(zip(view.valid_shape or (), shape, strict=False)):
        if isinstance(v, int) and isinstance(n, int) and v > n:
            raise ParseError(
                f"pl.TensorView valid_shape={list(view.valid_shape or ())}: extent {v} of dim {dim} is "
                f"larger than the tensor's {n}",
                hint="the valid region is part of the tensor: each extent is at most the tensor's",
            )


class Tile:
    """``pl.Tile[[64, 64], pl.FP32]`` (a tile in any memory space) or
    ``pl.Tile[[64, 64], pl.FP16, pl.Mem.Mat]``: an on-chip buffer."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TileSpec:
        items = _items(item, "pl.Tile", (2, 3, 4, 5))
        view = items[-1] if len(items) > 2 and isinstance(items[-1], TileView) else None
        rest = list(items[2 : len(items) - (view is not None)])
        memref = next((r for r in rest if isinstance(r, (MemRefSlot, MemRef))), None)
        if memref is not None:
            rest.remove(memref)
        if isinstance(memref, MemRef):
            raise MemRefError(
                f"pl.MemRef({memref.name!r}) in a tile annotation needs an index: the slot the tile takes",
                hint=f"write pl.MemRef({memref.name!r}, slots={memref.slots})[i % {memref.slots}] for "
                "a slot per iteration of loop i, or [0] for a fixed one",
            )
        memory = rest[0] if rest else None
        if len(rest) > 1 or (memory is not None and not isinstance(memory, MemorySpace)):
            raise ParseError(
                f"pl.Tile memory space must be a pl.Mem member, got {memory!r}",
                hint="write pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec] (or Mat, Left, Right, Acc, Bias), "
                'optionally with pl.MemRef("ub", slots=2)[i % 2] before the space and '
                "pl.TileView(valid_shape=[...]) last",
            )
        shape = _static_shape(items[0], "pl.Tile")
        if view is not None:
            check_view(view, shape)
        return TileSpec(shape, _dtype(items[1], "pl.Tile"), memory, view, memref)


def check_view(view: TileView, shape: tuple[int, ...]) -> None:
    """A view of a tile of ``shape``: a valid shape inside it (its constant extents), strides of
    its layout."""
    valid = view.valid_shape
    if valid is not None and (
        len(valid) != len(shape)
        or not all(not isinstance(v, int) or 1 <= v <= n for v, n in zip(valid, shape, strict=True))
    ):
        shown = [v if isinstance(v, int) else "..." for v in valid]
        raise ParseError(
            f"pl.TileView valid_shape {shown} does not lie inside the tile's {list(shape)}",
            hint="give one extent per dim, each between 1 and the tile's extent",
        )
    if view.stride is None or view.slayout is not TileLayout.none_box:
        return  # boxed: the strides of the boxes are the hardware's
    if len(view.stride) != len(shape):
        raise ParseError(
            f"pl.TileView stride {list(view.stride)} has {len(view.stride)} entries for a tile of rank "
            f"{len(shape)}",
            hint="give one stride per dimension",
        )
    if view.blayout is TileLayout.col_major:
        dense = tuple(prod(shape[:d]) for d in range(len(shape)))
        kind = "a col_major tile is column-major"
    else:
        dense = tuple(prod(shape[d + 1 :]) for d in range(len(shape)))
        kind = "tiles are row-major"
    if any(isinstance(s, int) and s != d for s, d in zip(view.stride, dense, strict=True)):
        raise ParseError(
            f"pl.TileView stride {list(view.stride)}: {kind}, so a {list(shape)} tile's strides are "
            f"{list(dense)}",
            hint=f"drop stride= or write stride={list(dense)}; view another region with pl.slice",
        )


class Scalar:
    """``pl.Scalar[pl.FP32]``: a scalar parameter."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> ScalarSpec:
        return ScalarSpec(_dtype(item, "pl.Scalar", task_ids=True))


def _directed(item: Any, direction: Direction) -> TensorSpec:
    try:
        spec: AnnotationSpec | None = as_spec(item)
    except ParseError:
        spec = None
    if not isinstance(spec, TensorSpec):
        raise ParseError(
            f"pl.{direction.value}[...] wraps a tensor annotation, got {item!r}",
            hint=f"write pl.{direction.value}[pl.Tensor[[128, 128], pl.FP32]]",
        )
    return replace(spec, direction=direction)


class Out:
    """``pl.Out[pl.Tensor[...]]``: a tensor the kernel writes (and does not read)."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TensorSpec:
        return _directed(item, Direction.Out)


class InOut:
    """``pl.InOut[pl.Tensor[...]]``: a tensor the kernel reads and writes."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TensorSpec:
        return _directed(item, Direction.InOut)


class Array:
    """``pl.Array[8, pl.INT32]``: the type of a scalar array made by ``pl.array.create(8, pl.INT32)``."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> ArraySpec:
        items = item if isinstance(item, tuple) else (item,)
        size = items[0] if items else None
        if len(items) != 2 or not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ParseError(
                f"pl.Array[...] takes a size and a dtype, got {item!r}",
                hint="write pl.Array[8, pl.INT32]: the number of elements, then their dtype",
            )
        return ArraySpec(size, _dtype(items[1], "pl.Array", task_ids=True))


class Tuple:
    """``-> pl.Tuple[pl.Tensor[...], pl.Tensor[...]]``: a function that returns several values."""

    @_at_annotation
    def __class_getitem__(cls, item: Any) -> TupleSpec:
        items = item if isinstance(item, tuple) else (item,)
        if not items:
            raise ParseError(
                "pl.Tuple[...] names the types of the returned values, got none",
                hint="write pl.Tuple[pl.Tensor[[64], pl.FP32], pl.Tensor[[64], pl.FP32]]",
            )
        specs = []
        for position, value in enumerate(items):
            try:
                specs.append(as_spec(value))
            except ParseError as err:
                raise ParseError(
                    f"pl.Tuple[...] item {position} is no type annotation: {err.message}", hint=err.hint
                ) from None
        return TupleSpec(tuple(specs))


# ``pl.TaskId``: the type of a task handle (``with pl.at(...) as tid``, ``pl.submit``), which is
# ``pl.Scalar[pl.TASK_ID]``.
TaskId = ScalarSpec(DataType.TASK_ID)

# The handles of the asynchronous prefetch (pl.prefetch.*): a kernel holds them, it makes them only
# through the prefetch ops.
PrefetchAsyncContext = HandleSpec(PREFETCH_CONTEXT)
# The communication context of a window (pld.get_comm_ctx): pld.rank / pld.nranks read it.
CommCtx = HandleSpec(COMM_CTX)
# A per-rank window buffer (pld.alloc_window_buffer), which pld.window views.
WindowBuffer = HandleSpec(WINDOW_BUFFER)
AsyncEvent = HandleSpec(ASYNC_EVENT)
AsyncSession = HandleSpec(ASYNC_SESSION)


def as_spec(annotation: Any) -> AnnotationSpec:
    """Normalize an evaluated annotation.

    >>> as_spec(pl.Tensor), as_spec(pl.FP32)
    (TensorSpec(shape=None, dtype=None, direction=<Direction.In: 'In'>), ScalarSpec(dtype=pl.FP32))
    """
    if isinstance(annotation, (TensorSpec, TileSpec, ScalarSpec, ArraySpec, HandleSpec)):
        return annotation
    if annotation is Tensor:
        return TensorSpec()
    if annotation is DistributedTensor:
        return TensorSpec(distributed=True)
    if isinstance(annotation, DataType):
        return ScalarSpec(annotation)
    if annotation is int:
        return ScalarSpec(DataType.INDEX)
    if annotation is float:
        return ScalarSpec(DataType.FP32)
    if annotation is bool:
        return ScalarSpec(DataType.BOOL)
    if isinstance(annotation, TupleSpec):
        raise ParseError(
            f"{annotation} annotates what a function returns, not one value",
            hint="annotate each parameter on its own; write -> pl.Tuple[...] after the parameter list",
        )
    raise ParseError(
        f"unsupported annotation {getattr(annotation, '__name__', annotation)!r}",
        hint="use pl.Tensor[[shape], dtype], pl.Out[...], pl.InOut[...], pl.Scalar[dtype], a dtype "
        "or pl.TaskId",
    )


@dataclass(frozen=True)
class ParamSignature:
    """One declared parameter: ``a: pl.Tensor[[128, 256], pl.FP16]``."""

    name: str
    spec: AnnotationSpec
    span: SourceSpan
