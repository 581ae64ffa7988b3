"""Loop-carried tensors inside a scope, kept in global memory.

A loop inside a ``pl.at`` scope may carry a tensor, e.g. the accumulator of a K loop::

    acc = pl.matmul(a[:, 0:64], b[0:64, :])
    for k0 in pl.range(64, K, 64):
        acc = pl.add(acc, pl.matmul(a[:, k0 : k0 + 64], b[k0 : k0 + 64, :]))

The tiler tiles tensor values of one region of consecutive tensor statements; a value carried
from one iteration to the next crosses regions. So the carried value gets a home: a tensor the
orchestration allocates before the scope (``tensor.create``, passed to the kernel like any other
tensor). The loop writes its initial value there before the first iteration, reads the home where
it read the carried name, and writes each iteration's new value there at the end of the body; after
the loop its result is the home. The body is then ordinary tensor code (``acc_buf[:] =
pl.add(acc_buf, ...)``), tiled by rows like any other region.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pypto.ir import Assign, Eval, Expr, For, If, ParseError, ScopeStmt, Stmt, TensorType, Var, make_call
from pypto.ir.nodes import JUMP_STMTS, Const, While, nested_bodies, used_vars, walk_stmts, with_bodies
from pypto.ir.ops import tensor
from pypto.ir.rewrite import (
    NameGen,
    defined_vars,
    index_add,
    index_tuple,
    substitute_body,
    substitute_expr,
    vars_used_in,
)
from pypto.ir.types import INDEX


@dataclass
class _Homes:
    """The homes made for one function: their allocations, and carried names -> homes."""

    names: NameGen
    creates: list[Stmt] = field(default_factory=list)
    mapping: dict[Var, Expr] = field(default_factory=dict)

    def home(self, carried: Var) -> Var:
        t = carried.type
        assert isinstance(t, TensorType)
        home = Var(self.names.fresh(f"{carried.name}_home"), t, carried.span)
        create = make_call(tensor.create, (), {"shape": t.shape, "dtype": t.dtype}, carried.span)
        self.creates.append(Assign(home, create, carried.span))
        return home


def carry_tensors_in_memory(body: tuple[Stmt, ...], names: NameGen) -> tuple[Stmt, ...]:
    """``body`` with every tensor a loop inside a scope carries kept in a home tensor allocated
    before the scope (see the module docstring)."""
    out: list[Stmt] = []
    mapping: dict[Var, Expr] = {}
    for stmt in body:
        if isinstance(stmt, ScopeStmt):
            homes = _Homes(names)
            scope_body = _in_scope(stmt.body, homes)
            out.extend(homes.creates)
            mapping.update(homes.mapping)
            stmt = replace(stmt, body=scope_body)
        elif isinstance(stmt, (For, While, If)):
            stmt = with_bodies(stmt, tuple(carry_tensors_in_memory(b, names) for b in nested_bodies(stmt)))
        out.append(stmt)
    # A loop's result used after its scope is the home too.
    return substitute_body(tuple(out), mapping) if mapping else tuple(out)


def _in_scope(body: tuple[Stmt, ...], homes: _Homes) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for original in body:
        # Later statements read an earlier loop's result from its home.
        (stmt,) = substitute_body((original,), homes.mapping)
        if isinstance(stmt, (For, While, If)):
            stmt = with_bodies(stmt, tuple(_in_scope(b, homes) for b in nested_bodies(stmt)))
        if isinstance(stmt, (For, While)) and _carries_tensor(stmt):
            out.extend(_homed(stmt, homes))
        else:
            out.append(stmt)
    return tuple(out)


def _carries_tensor(loop: For | While) -> bool:
    if not any(isinstance(v.type, TensorType) for v in loop.iter_args):
        return False
    # A break or continue names the carried values where it jumps: such a loop keeps its
    # tensors carried, and the tiler says it cannot tile them.
    return not any(isinstance(s, JUMP_STMTS) for s in walk_stmts(loop.body))


def _homed(loop: For | While, homes: _Homes) -> list[Stmt]:
    """The loop with its carried tensors in homes, after what comes first: the first iteration
    peeled off when the loop surely runs one (so the home is written by the unit that writes it
    in every later iteration too, not by the one that made the initial value), else the initial
    values written to the homes."""
    tensors = [k for k, v in enumerate(loop.iter_args) if isinstance(v.type, TensorType)]
    inside = {loop.iter_args[k]: homes.home(loop.iter_args[k]) for k in tensors}
    trips = _static_trips(loop)
    pre: list[Stmt] = []
    starts = list(loop.init_values)
    if isinstance(loop, For) and trips is not None and trips >= 1:
        first, starts = _peeled(loop, homes.names)
        pre.extend(first)
    for k in tensors:
        pre.append(_write(inside[loop.iter_args[k]], starts[k], loop.span))
        homes.mapping[loop.results[k]] = inside[loop.iter_args[k]]
    keep = [k for k in range(len(loop.iter_args)) if k not in tensors]
    if trips == 1:  # the peeled iteration was the only one
        homes.mapping.update({loop.results[k]: starts[k] for k in keep})
        return pre
    body = list(substitute_body(loop.body, dict(inside)))
    for k in tensors:
        home = inside[loop.iter_args[k]]
        value = substitute_expr(loop.yields[k], inside)
        if value is home:
            continue
        if isinstance(value, Var) and value in inside.values():
            raise ParseError(
                f"'{loop.iter_args[k].name}' takes the value another carried tensor had, which the "
                "compiler does not tile",
                loop.span,
                "compute the new value (e.g. pl.add(b, 0.0)) instead of passing the other tensor on",
            )
        body.insert(_write_point(body, home, value), _write(home, value, loop.span))
    changes: dict[str, object] = {}
    if isinstance(loop, While):
        changes["cond"] = substitute_expr(loop.cond, inside)
    elif trips is not None and trips >= 1:
        changes["start"] = index_add(loop.start, loop.step)
    homed = replace(
        loop,
        body=tuple(body),
        iter_args=tuple(loop.iter_args[k] for k in keep),
        init_values=tuple(starts[k] for k in keep),
        yields=tuple(substitute_expr(loop.yields[k], inside) for k in keep),
        results=tuple(loop.results[k] for k in keep),
        **changes,  # type: ignore[arg-type]
    )
    return [*pre, homed]


def _write_point(body: list[Stmt], home: Var, value: Expr) -> int:
    """Where the body writes a carried tensor's new value to its home: right after the statement
    computing it and the last one reading the old value, so the write joins the tensor
    statements before it (one region the tiler tiles together) rather than ending the body after
    scalar work."""
    needed = set(used_vars(value))
    point = 0
    for index, stmt in enumerate(body):
        defines = not needed.isdisjoint(defined_vars((stmt,)))
        if defines or home in set(vars_used_in((stmt,))):
            point = index + 1
    return point


def _static_trips(loop: For | While) -> int | None:
    """How many iterations a loop with constant bounds runs (None for a while loop or run-time
    bounds)."""
    if not isinstance(loop, For):
        return None
    bounds = (loop.start, loop.stop, loop.step)
    if not all(isinstance(b, Const) for b in bounds):
        return None
    start, stop, step = (int(b.value) for b in bounds)  # type: ignore[attr-defined]
    return len(range(start, stop, step))


def _peeled(loop: For, names: NameGen) -> tuple[tuple[Stmt, ...], list[Expr]]:
    """The first iteration of ``loop`` as straight code (its values renamed), and the values the
    carried names have after it."""
    mapping: dict[Var, Expr] = {loop.var: loop.start}
    mapping.update(zip(loop.iter_args, loop.init_values, strict=True))
    for v in defined_vars(loop.body):
        mapping[v] = Var(names.fresh(v.name), v.type, v.span)
    body = substitute_body(loop.body, mapping)
    return body, [substitute_expr(y, mapping) for y in loop.yields]


def _write(home: Var, value: Expr, span: object) -> Stmt:
    """``home[:] = value``."""
    zeros = index_tuple([Const(0, INDEX) for _ in home.type.shape])  # type: ignore[attr-defined]
    return Eval(make_call(tensor.assemble, (home, value, zeros), {}, span), span)  # type: ignore[arg-type]
