"""Dynamic extents: the symbolic entries of a tensor shape, and binding them from argument shapes.

An extent is an ``int``, a :class:`~pypto.ir.nodes.DynDim` (``M = pl.dynamic("M")``) or a
:class:`~pypto.ir.nodes.DimExpr` computed from them (``M * 2``, ``M // 2``, ``M + N``). A tensor
type ``[M, 128]`` fits an argument of shape ``(300, 128)`` and binds ``M = 300``; every tensor of
one call that names ``M`` must agree on it; ``[M * 2, 128]`` binds ``M = 150`` from ``(300, 128)``
when nothing else binds ``M``, and is checked against ``M`` when something does. The runtime, the
specializer, the parser (at calls between kernels) and every backend's walker bind extents
through :class:`ExtentBinding`, so they report a mismatch alike.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan, SpecializationError
from pypto.ir.nodes import Const as _Const
from pypto.ir.nodes import DimExpr, DynDim, Expr
from pypto.ir.types import INDEX, TensorType

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # for the type checker only: no run-time dependency

Extent = int | DynDim | DimExpr

# How each extent operator computes on whole numbers.
_FOLD: dict[str, Callable[[int, int], int]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "min": min,
    "max": max,
}


def is_extent(value: object) -> bool:
    """Whether ``value`` can be an extent (or an operand of one): a whole number or a symbolic
    extent."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, DynDim, DimExpr))


def is_symbolic(value: object) -> TypeIs[DynDim | DimExpr]:
    """Whether ``value`` is an extent known only at run time."""
    return isinstance(value, (DynDim, DimExpr))


def dim_op(name: str, lhs: Extent, rhs: Extent) -> Extent:
    """``lhs <name> rhs`` on extents (``name`` one of add, sub, mul, floordiv, mod, min, max):
    folded on whole numbers, simplified (``M * 1`` is ``M``, ``(M + 1) - 1`` is ``M``, ``2 * M`` is
    ``M * 2``), else a :class:`DimExpr`."""
    if isinstance(lhs, int) and isinstance(rhs, int):
        return _FOLD[name](lhs, rhs)
    if name in ("add", "mul", "min", "max") and isinstance(lhs, int):
        lhs, rhs = rhs, lhs  # the number last: `2 * M` and `M * 2` are one extent
    if isinstance(rhs, int) and not isinstance(lhs, int):
        simpler = _simplified(name, lhs, rhs)
        if simpler is not None:
            return simpler
    return DimExpr(f"scalar.{name}", (_operand(lhs), _operand(rhs)), INDEX)


def _simplified(name: str, lhs: DynDim | DimExpr, rhs: int) -> Extent | None:
    """``lhs <name> rhs`` with a number on the right, when it is simpler than the plain form."""
    if (name in ("add", "sub") and rhs == 0) or (name in ("mul", "floordiv") and rhs == 1):
        return lhs
    if name == "mul" and rhs == 0:
        return 0
    if name == "sub":
        return dim_op("add", lhs, -rhs) if isinstance(lhs, DimExpr) and lhs.op == "scalar.add" else None
    if not (name in ("add", "mul") and isinstance(lhs, DimExpr) and lhs.op == f"scalar.{name}"):
        return None
    inner = lhs.args[1]
    if isinstance(inner, _Const):  # (M + 1) + 2 is M + 3; (M * 2) * 3 is M * 6
        return dim_op(name, _unwrap(lhs.args[0]), _FOLD[name](int(inner.value), rhs))
    return None


def _operand(value: Extent) -> Expr:
    return _Const(value, INDEX) if isinstance(value, int) else value


def _unwrap(e: Expr) -> Extent:
    return int(e.value) if isinstance(e, _Const) else cast(Extent, e)


def tensor_type(shape: Sequence[Extent], dtype: DataType) -> TensorType:
    """The tensor type of an annotated shape whose extents may be symbolic. ``TensorType.shape`` is
    typed as ints for the arithmetic most code does on static shapes; a symbolic entry is what
    :func:`is_dynamic` and :func:`dynamic_extents` find."""
    return TensorType(cast(tuple[int, ...], tuple(shape)), dtype)


def extent_dims(extent: object) -> Iterator[DynDim]:
    """The dynamic extents an extent is made of (``M`` and ``N`` of ``M * N``), in order."""
    if isinstance(extent, DynDim):
        yield extent
    elif isinstance(extent, DimExpr):
        for arg in extent.args:
            yield from extent_dims(arg)


def dynamic_extents(t: object) -> list[DynDim]:
    """The dynamic extents a tensor type's shape names, in axis order, each once (none for other
    types)."""
    if not isinstance(t, TensorType):
        return []
    found: dict[DynDim, None] = {}
    for d in cast(tuple[object, ...], t.shape):
        found.update(dict.fromkeys(extent_dims(d)))
    return list(found)


def is_dynamic(t: object) -> TypeGuard[TensorType]:
    """Whether ``t`` is a tensor type with a symbolic extent."""
    return isinstance(t, TensorType) and any(is_symbolic(d) for d in t.shape)


def evaluate(extent: object, values: Mapping[DynDim, int]) -> int | None:
    """The value of ``extent`` once ``values`` bind its dynamic extents; None while one is unbound."""
    if isinstance(extent, int):
        return extent
    if isinstance(extent, _Const):
        return int(extent.value)
    if isinstance(extent, DynDim):
        return values.get(extent)
    if isinstance(extent, DimExpr):
        lhs, rhs = (evaluate(a, values) for a in extent.args)
        if lhs is None or rhs is None:
            return None
        try:
            return _FOLD[extent.op.removeprefix("scalar.")](lhs, rhs)
        except ZeroDivisionError:
            return None
    return None


# The attribute on a tensor view the orchestration cut at its tensor's end (``pl.slice`` of a window
# that runs past it): the window it declares, which binds the kernels' extents (see argument_shape).
WINDOW_ATTR = "pypto_window"


def argument_shape(value: Any) -> tuple[int, ...] | None:
    """The shape a tensor argument has for the parameters it binds: its own, or for a view the
    orchestration cut at its tensor's end, the window it declares (the part past the end is no
    memory: a kernel reaching there is stopped by the backend). None for a value without one."""
    window = getattr(value, WINDOW_ATTR, None)
    if window is not None:
        return tuple(window)
    shape = getattr(value, "shape", None)
    return None if shape is None else tuple(shape)


def shape_fits(shape: Sequence[int], t: TensorType) -> bool:
    """Whether a concrete ``shape`` has ``t``'s rank and its static extents."""
    if len(shape) != len(t.shape):
        return False
    return all(is_symbolic(want) or want == got for want, got in zip(t.shape, shape, strict=True))


def _solve(extent: object, target: int, values: Mapping[DynDim, int]) -> tuple[DynDim, int | None] | None:
    """The one unbound dynamic extent of ``extent`` and the value that makes ``extent`` equal
    ``target``, found by undoing ``+``, ``-`` and ``*`` (the value None when no whole number does);
    None when it cannot be found so: ``M // 2``, two unknowns, nothing unknown."""
    if isinstance(extent, DynDim):
        return (extent, target) if extent not in values else None
    if not isinstance(extent, DimExpr) or extent.op not in ("scalar.add", "scalar.sub", "scalar.mul"):
        return None
    lhs, rhs = extent.args
    known_l, known_r = evaluate(lhs, values), evaluate(rhs, values)
    if known_r is not None and known_l is None:
        unknown, known, on_left = lhs, known_r, True
    elif known_l is not None and known_r is None:
        unknown, known, on_left = rhs, known_l, False
    else:
        return None
    if extent.op == "scalar.add":
        return _solve(unknown, target - known, values)
    if extent.op == "scalar.sub":
        return _solve(unknown, target + known if on_left else known - target, values)
    if known != 0 and target % known == 0:
        return _solve(unknown, target // known, values)
    dim = next((d for d in extent_dims(unknown) if d not in values), None)
    return None if dim is None else (dim, None)


@dataclass(frozen=True)
class _Pending:
    """An expression extent to solve or check once the plain ones are bound."""

    param: str
    axis: int
    extent: DimExpr
    value: int
    span: SourceSpan | None


class ExtentBinding:
    """The values of one call's dynamic extents, with the parameter and axis that fixed each.

    :meth:`bind` each tensor, then :meth:`resolve` (which solves and checks the expression extents
    such as ``M * 2``) before reading :attr:`values`.
    """

    def __init__(self) -> None:
        self.values: dict[DynDim, int] = {}
        self._fixed_by: dict[DynDim, tuple[str, int]] = {}
        self._pending: list[_Pending] = []

    def bind(self, param: str, t: TensorType, shape: Sequence[int], span: SourceSpan | None = None) -> None:
        """Bind the extents ``t`` names from the argument ``shape`` of parameter ``param``; an
        extent another parameter bound to a different value is a ``SpecializationError``.
        ``span`` is where an error about an expression extent of ``t`` points."""
        for axis, (want, got) in enumerate(zip(t.shape, shape, strict=True)):
            if not isinstance(got, int):
                continue  # an argument's extent known only at run time (a kernel's call): bound then
            if isinstance(want, DynDim):
                self._fix(want, int(got), param, axis, span)
            elif isinstance(want, DimExpr):
                self._pending.append(_Pending(param, axis, want, int(got), span))

    def _fix(self, dim: DynDim, value: int, param: str, axis: int, span: SourceSpan | None) -> None:
        known = self.values.get(dim)
        if known is None:
            self.values[dim] = value
            self._fixed_by[dim] = (param, axis)
        elif known != value:
            first, first_axis = self._fixed_by[dim]
            raise SpecializationError(
                f"dynamic extent {dim.name} is {known} in '{first}' (dim {first_axis}) but {value} "
                f"in '{param}' (dim {axis}): tensors annotated with the same {dim.name} must agree",
                span,
                f"pass tensors whose dim {axis} of '{param}' equals dim {first_axis} of "
                f"'{first}', or give them different pl.dynamic extents",
            )

    def resolve(self, strict: bool = True) -> dict[DynDim, int]:
        """Solve the expression extents for the dynamic extents they alone name, check the others
        against the values bound; the values. Raises a ``SpecializationError`` naming the parameter
        and dim of an extent that cannot hold (``M * 2`` of an odd extent, ``M`` bound elsewhere
        to another value) or, when ``strict``, cannot be solved (``M // 2`` and nothing else
        naming ``M``: not strict where some extents are bound only at run time)."""
        pending = list(self._pending)
        while pending:
            progress = False
            for item in list(pending):
                solved = _solve(item.extent, item.value, self.values)
                if solved is None and evaluate(item.extent, self.values) is None:
                    continue
                pending.remove(item)
                progress = True
                if solved is not None:
                    self._fix_solved(item, *solved)
                self._check(item)
            if not progress:
                if strict:
                    raise self._unsolvable(pending[0])
                break
        self._pending = []
        return self.values

    def _fix_solved(self, item: _Pending, dim: DynDim, value: int | None) -> None:
        if value is None or value < 0:
            what = "no whole" if value is None else f"only a negative ({value})"
            raise SpecializationError(
                f"dim {item.axis} of '{item.param}' is {item.value}, but its annotation says "
                f"{item.extent!r}: {what} value of {dim.name} gives {item.value}",
                item.span,
                f"pass a tensor whose dim {item.axis} is {item.extent!r} for some extent {dim.name}",
            )
        self._fix(dim, value, item.param, item.axis, item.span)

    def _check(self, item: _Pending) -> None:
        value = evaluate(item.extent, self.values)
        if value == item.value:
            return
        bound = ", ".join(f"{d.name} = {self.values[d]}" for d in dict.fromkeys(extent_dims(item.extent)))
        raise SpecializationError(
            f"dim {item.axis} of '{item.param}' is {item.value}, but its annotation says "
            f"{item.extent!r}, which is {value} with {bound}",
            item.span,
            f"pass a tensor whose dim {item.axis} is {value}, or annotate the extent it has",
        )

    @staticmethod
    def _unsolvable(item: _Pending) -> SpecializationError:
        names = ", ".join(dict.fromkeys(d.name for d in extent_dims(item.extent)))
        return SpecializationError(
            f"dim {item.axis} of '{item.param}' is {item.value}, but {names} cannot be told from "
            f"its annotation {item.extent!r} alone",
            item.span,
            f"annotate another tensor of the call with {names} itself (pl.Tensor[[{names}, ...], ...]), "
            "or write the extent so it can be undone (M * 2, M + 1)",
        )


def describe_extent(extent: Any) -> str:
    """An extent as the user writes it: ``64``, ``M``, ``M * 2``."""
    return repr(extent) if is_symbolic(extent) else str(extent)
