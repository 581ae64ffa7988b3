"""Valid shapes across control flow: a tile leaving an ``if``, or carried by a loop, keeps its own.

A tile's valid shape is constant (in its type) or known at run time (extents followed beside the
tile, see :mod:`pypto.ir.valid`). After an ``if`` a tile's valid shape is, per dim, the
extent every arm that reaches its end agrees on; where the arms differ, the extent leaves the if
beside the tile as one more scalar the arms yield, and the result's valid shape names it. A loop
carries a tile's extents the same way: per dim, the extent it enters with, when every iteration
ends with it (and every ``break`` / ``continue`` leaves with it); else one more carried scalar.
Whether an iteration changes an extent is known only once the body is built, so the body is
built again when it does (:class:`CarriedValid`): the parser parses it again, a pass that changes
valid shapes (:func:`pypto.ir.valid.build_as_parsed`) walks it again.

Such a scalar is first looked for among the values already leaving the if (carried by the loop):
one with the same value in every arm (the same initial value, and the same value at the end of
every iteration) is the extent. Printed IR writes the extents out as such values, so it reads back
to the same program.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.nodes import Assign, Call, Const, DynDim, Expr, Stmt, TupleExpr, Var, used_vars, walk_stmts
from pypto.ir.ops import CastMode, Level, get_op, make_call
from pypto.ir.ops import scalar as scalar_ops
from pypto.ir.rewrite import defined_vars
from pypto.ir.types import INDEX, ScalarType, TileType, TupleType

Table = Mapping[Expr, TupleExpr]

# An extent carried beside a tile is named ``<tile>.<axis>``: no Python name can take it.
_AXES = ("rows", "cols")


def extent_name(name: str, dim: int) -> str:
    """The carried name of dim ``dim`` of the valid shape of the tile named ``name``."""
    return f"{name}.{_AXES[dim] if dim < len(_AXES) else f'dim{dim}'}"


def is_extent_name(name: str) -> bool:
    return "." in name


def var_base(name: str) -> str:
    """The base of the variable a carried name gets: ``t.rows`` is ``t_rows``."""
    return name.replace(".", "_")


def extent_of(name: str) -> tuple[str, int]:
    """The tile name and dim of a carried extent's name."""
    tile, axis = name.rsplit(".", 1)
    return tile, _AXES.index(axis) if axis in _AXES else int(axis.removeprefix("dim"))


def extents(value: Any, table: Table) -> tuple[Expr, ...] | None:
    """The valid extents of a tile: its run-time valid shape, else its constant one (its shape when
    all of it is valid); None for a value that is no tile."""
    t = getattr(value, "type", None)
    if not isinstance(value, Expr) or not isinstance(t, TileType):
        return None
    known = table.get(value)
    if known is not None:
        return known.elements
    return tuple(Const(n, INDEX) for n in (t.valid_shape or t.shape))


def same(a: Expr, b: Expr, defs: Mapping[Var, Expr] | None = None) -> bool:
    """Whether ``a`` and ``b`` are one extent: one value, equal constants, one dynamic extent, or
    one scalar computation (``n - r0`` written twice; a scalar ``defs`` defines counts as its
    definition, a conversion between integer dtypes as the value it converts)."""
    a, b = _resolved(a, defs), _resolved(b, defs)
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return a.value == b.value and not isinstance(a.value, float) and not isinstance(b.value, float)
    if isinstance(a, Call) and isinstance(b, Call):
        return (
            a.op == b.op
            and get_op(a.op).level is Level.SCALAR
            and dict(a.attrs) == dict(b.attrs)
            and len(a.args) == len(b.args)
            and all(_same_operand(x, y, defs) for x, y in zip(a.args, b.args, strict=True))
        )
    return isinstance(a, DynDim) and isinstance(b, DynDim) and a == b


def _same_operand(a: Expr, b: Expr, defs: Mapping[Var, Expr] | None) -> bool:
    if isinstance(a, TupleExpr) and isinstance(b, TupleExpr):  # a read's offsets
        return len(a.elements) == len(b.elements) and all(
            same(x, y, defs) for x, y in zip(a.elements, b.elements, strict=True)
        )
    return same(a, b, defs)


def _resolved(e: Expr, defs: Mapping[Var, Expr] | None) -> Expr:
    """``e`` seen through the scalar definitions ``defs`` and conversions between integer dtypes."""
    while True:
        if defs and isinstance(e, Var) and e in defs:
            e = defs[e]
        elif isinstance(e, Call) and e.op == scalar_ops.cast and _integer(e) and _integer(e.args[0]):
            e = e.args[0]
        else:
            return e


def _integer(e: Expr) -> bool:
    return isinstance(e.type, ScalarType) and e.type.dtype.is_integer


def definitions(stmts: Iterable[Stmt]) -> dict[Var, Expr]:
    """The scalars ``stmts`` compute: ``rows = pl.min(32, n - r0)``, ``v = pl.cast(n, pl.INDEX)``."""
    return {
        s.target: s.value
        for s in stmts
        if isinstance(s, Assign) and isinstance(s.value, Call) and get_op(s.value.op).level is Level.SCALAR
    }


def _dtype(values: Sequence[Expr]) -> DataType:
    """The dtype of a scalar holding one of ``values``: theirs when they agree, else INDEX."""
    dtypes = {v.type.dtype for v in values if not isinstance(v, Const) and isinstance(v.type, ScalarType)}
    return dtypes.pop() if len(dtypes) == 1 else DataType.INDEX


def as_scalar(value: Expr, dtype: DataType, out: list[Stmt], name: Callable[[], str]) -> Expr:
    """``value`` as a scalar of ``dtype`` that can be yielded: a constant retyped, a computed one
    (or one of another dtype) assigned in ``out`` to a variable ``name()`` gives."""
    if isinstance(value, Const):
        return Const(value.value, ScalarType(dtype), value.span)
    if isinstance(value.type, ScalarType) and value.type.dtype is dtype and not isinstance(value, Call):
        return value
    if not (isinstance(value.type, ScalarType) and value.type.dtype is dtype):
        value = make_call(scalar_ops.cast, (value,), {"dtype": dtype, "mode": CastMode.round}, value.span)
    var = Var(name(), value.type, value.span)
    out.append(Assign(var, value, value.span))
    return var


def _tuple(elements: Sequence[Expr]) -> TupleExpr:
    return TupleExpr(tuple(elements), TupleType(tuple(e.type for e in elements)))


def result_tile_type(t: TileType, run_time: bool) -> TileType:
    """The type of a tile leaving control flow: its constant valid shape unless it is a run-time one."""
    return replace(t, valid_shape=None) if run_time else t


# ---------------------------------------------------------------- if


class IfValid:
    """The valid shapes of the tiles leaving a run-time if.

    ``leaving`` maps each name leaving the if to its value per arm; ``falling`` are the arms that
    reach their end. :attr:`leaving` adds the extents the arms disagree on (named by
    :func:`extent_name`), and :attr:`arms` the conversions that give such an extent one dtype.
    """

    def __init__(
        self,
        leaving: dict[str, list[Expr]],
        arms: list[tuple[Stmt, ...]],
        falling: list[int],
        table: Table,
        fresh: Callable[[str], str],
    ) -> None:
        self.leaving = dict(leaving)
        self.arms = [list(a) for a in arms]
        self.falling = falling
        self.fresh = fresh
        self.inside = set(defined_vars(tuple(s for a in arms for s in a)))
        self.shapes: dict[str, list[Expr | str]] = {}  # tile -> per dim: its extent, or a leaving name
        self.run_time: set[str] = set()
        for name, values in leaving.items():
            found = [extents(values[k], table) for k in falling]
            if found and all(e is not None for e in found):
                self.shape(name, [values[k] for k in falling], found, table)  # type: ignore[arg-type]

    def shape(self, name: str, values: list[Expr], found: list[tuple[Expr, ...]], table: Table) -> None:
        """The valid shape of tile ``name``, whose value in the falling arms is ``values``."""
        dims: list[Expr | str] = []
        for d in range(len(found[0])):
            per_arm = [e[d] for e in found]
            agreed = all(same(per_arm[0], e) for e in per_arm[1:])
            if agreed and not any(v in self.inside for v in used_vars(per_arm[0])):
                dims.append(per_arm[0])  # the extent of every arm, and known after the if
            else:
                dims.append(self.leaving_extent(name, d, per_arm))
        self.shapes[name] = dims
        constant = all(isinstance(e, Const) for e in dims) and not any(v in table for v in values)
        if not constant or len({_valid_of(v.type) for v in values}) > 1:  # type: ignore[arg-type]
            self.run_time.add(name)

    def leaving_extent(self, name: str, dim: int, per_arm: list[Expr]) -> str:
        """The leaving name whose value is extent ``dim`` of tile ``name`` in every falling arm: one
        already leaving with those values, else a new one."""
        for other, values in self.leaving.items():
            ys = [values[k] for k in self.falling]
            if isinstance(ys[0].type, ScalarType) and all(
                same(e, y, definitions(walk_stmts(tuple(self.arms[k]))))
                for e, y, k in zip(per_arm, ys, self.falling, strict=True)
            ):
                return other
        new = extent_name(name, dim)
        dtype = _dtype(per_arm)
        given = {
            k: as_scalar(e, dtype, self.arms[k], lambda: self.fresh(var_base(new)))
            for k, e in zip(self.falling, per_arm, strict=True)
        }
        first = given[self.falling[0]]
        self.leaving[new] = [given.get(k, first) for k in (0, 1)]
        return new

    def result_type(self, name: str, t: Any) -> Any:
        """The type of the result of ``name`` (``t``: its type in an arm)."""
        return result_tile_type(t, name in self.run_time) if isinstance(t, TileType) else t

    def bind(self, results: Mapping[str, Var], table: dict[Expr, TupleExpr]) -> None:
        """Give the tile results their run-time valid shapes."""
        for name in self.run_time:
            table[results[name]] = _tuple(
                [results[d] if isinstance(d, str) else d for d in self.shapes[name]]
            )


def _valid_of(t: TileType) -> tuple[int, ...] | None:
    """A tile type's constant valid shape, None when all of it is valid."""
    return None if t.valid_shape is None or tuple(t.valid_shape) == t.shape else tuple(t.valid_shape)


# ---------------------------------------------------------------- loops


@dataclass
class _Dim:
    """How a loop carries one dim of a tile's valid shape: ``fixed``, the extent it enters with and
    every iteration keeps; or ``name``, the carried name that holds it. ``tried`` are the carried
    names found not to hold it."""

    fixed: Expr | None
    name: str | None = None
    tried: frozenset[str] = frozenset()


class CarriedValid:
    """The valid shapes of the tiles a loop carries, and the extents it carries beside them.

    Made from the loop's carried names and their initial values; the body is built under the
    plan, and :meth:`widened` then carries every extent an iteration changed (the body is built
    again). A dim only goes from fixed to a carried name, trying each candidate once, so a few
    builds settle it.
    """

    def __init__(self, names: list[str], inits: list[Expr], table: Table) -> None:
        self.user_names, self.user_inits = list(names), list(inits)
        self.table = table
        self.dims: dict[str, list[_Dim]] = {}
        for name, init in zip(names, inits, strict=True):
            found = extents(init, table)
            if found is not None:
                self.dims[name] = [_Dim(e) for e in found]
        self.added: dict[str, tuple[Expr, DataType]] = {}  # the extents it adds: initial value, dtype

    @property
    def names(self) -> list[str]:
        return [*self.user_names, *self.added]

    @property
    def inits(self) -> list[Expr]:
        added = [
            as_scalar(v, dtype, [], _no_name) if isinstance(v, Const) else v
            for v, dtype in self.added.values()
        ]
        return [*self.user_inits, *added]

    def iter_arg_type(self, name: str, init: Expr) -> Any:
        if name in self.added:
            return ScalarType(self.added[name][1])
        if name in self.dims:
            return result_tile_type(init.type, self.run_time(name))  # type: ignore[arg-type]
        return init.type

    def run_time(self, name: str) -> bool:
        """Does the tile ``name`` enter the body with a run-time valid shape?"""
        init = self.user_inits[self.user_names.index(name)]
        return init in self.table or any(not isinstance(d.fixed, Const) for d in self.dims[name])

    def enter(self, iter_args: Mapping[str, Var], table: dict[Expr, TupleExpr]) -> None:
        """Give the tile iter_args their valid shapes at the top of the body."""
        for name, dims in self.dims.items():
            if self.run_time(name):
                table[iter_args[name]] = _tuple([d.fixed or iter_args[d.name] for d in dims])  # type: ignore[index]

    def widened(
        self, iter_args: Sequence[Var], ends: Sequence[Sequence[Expr]], table: Table, defs: Mapping[Var, Expr]
    ) -> bool:
        """After a parse of the body, whose carried values where it ends (at the end of the body, at
        each ``break`` / ``continue``) are ``ends``: carry each extent some of them disagree on.
        True when the plan changed (the body must be parsed again)."""
        names, inits = self.names, self.inits
        changed = False
        for name, dims in self.dims.items():
            k = names.index(name)
            for d, dim in enumerate(dims):
                found = [extents(end[k], table)[d] for end in ends]  # type: ignore[index]
                if dim.fixed is not None and all(same(dim.fixed, f) for f in found):
                    continue
                if dim.name in self.added:
                    continue  # its values are the tile's extents, by construction
                if dim.name is not None:
                    held = [end[names.index(dim.name)] for end in ends]
                    if all(same(f, h, defs) for f, h in zip(found, held, strict=True)):
                        continue
                dims[d] = self.carrier(name, d, dim, found, names, inits, iter_args, ends, defs)
                changed = True
        return changed

    def carrier(
        self,
        name: str,
        d: int,
        dim: _Dim,
        found: list[Expr],
        names: list[str],
        inits: list[Expr],
        iter_args: Sequence[Var],
        ends: Sequence[Sequence[Expr]],
        defs: Mapping[Var, Expr],
    ) -> _Dim:
        """The carried name to try for extent ``d`` of tile ``name``: a scalar the loop carries
        already that enters with the tile's extent (first one whose values where the body ends are
        the tile's, or its own where the tile keeps the extent it entered with); else a new one.
        The next parse of the body tells whether it holds the extent."""
        start = extents(inits[names.index(name)], self.table)[d]  # type: ignore[index]
        tried = dim.tried | ({dim.name} if dim.name is not None else set())

        def held(f: Expr, value: Expr, k: int) -> bool:
            kept = value is iter_args[k] and dim.fixed is not None and same(f, dim.fixed, defs)
            return kept or same(f, value, defs)

        candidates = [
            k
            for k, other in enumerate(names)
            if other not in self.dims
            and other not in tried
            and isinstance(inits[k].type, ScalarType)
            and same(start, inits[k], defs)
        ]
        candidates.sort(key=lambda k: not all(held(f, end[k], k) for f, end in zip(found, ends, strict=True)))
        if candidates:
            return _Dim(None, names[candidates[0]], frozenset(tried))
        new = extent_name(name, d)
        # The dtype it enters with (a constant enters as INDEX, as printed IR's numbers do).
        self.added[new] = (start, _dtype([start]))
        return _Dim(None, new, frozenset(tried))

    def leave(
        self,
        results: Mapping[str, Var],
        iter_args: Mapping[str, Var],
        dropped: Mapping[Var, Expr],
        table: dict[Expr, TupleExpr],
    ) -> None:
        """Give the tile results (by carried name) their valid shapes after the loop; a carried
        extent the body never changed (``dropped``) is the value it entered with."""
        for name, dims in self.dims.items():
            if name not in results or not self.run_time(name):
                continue
            elements: list[Expr] = []
            for dim in dims:
                if dim.fixed is not None:
                    elements.append(dim.fixed)
                elif dim.name in results:
                    elements.append(results[dim.name])  # type: ignore[index]
                else:
                    carrier = iter_args[dim.name]  # type: ignore[index]
                    elements.append(dropped.get(carrier, carrier))
            table[results[name]] = _tuple(elements)


def _no_name() -> str:
    raise AssertionError("a constant needs no conversion")


def carried_extent(
    name: str, tile: Expr, dtype: DataType, table: Table, out: list[Stmt], fresh: Callable[[str], str]
) -> Expr:
    """The value of the carried extent ``name`` where the body ends, as a scalar of ``dtype``:
    the extent of ``tile``, the value its tile has there."""
    _, dim = extent_of(name)
    found = extents(tile, table)
    assert found is not None
    return as_scalar(found[dim], dtype, out, lambda: fresh(var_base(name)))
