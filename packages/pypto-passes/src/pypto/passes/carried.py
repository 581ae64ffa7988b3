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

A K loop of constant bounds whose carried tensors are matmul accumulators only is unrolled
instead (see ``_on_chip_accumulation``): its matmuls then form one region, and the accumulator
stays in the cube's Acc across the K blocks, as PyPTO's manual says it does.

The same holds for a tensor value one region computes and a later statement reads, past a loop
or a tile op that ends the region (``inv_rms`` computed before a loop over column blocks that
scales each block by it): it is written to a home right after it is computed and read from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pypto.ir import (
    Assign,
    Call,
    Eval,
    Expr,
    For,
    If,
    ParseError,
    ScopeStmt,
    Stmt,
    TensorType,
    Var,
    make_call,
)
from pypto.ir.nodes import JUMP_STMTS, Const, While, nested_bodies, used_vars, walk_stmts, with_bodies
from pypto.ir.ops import tensor
from pypto.ir.rewrite import (
    NameGen,
    defined_vars,
    folded,
    index_add,
    index_tuple,
    substitute_body,
    substitute_expr,
    vars_used_in,
)
from pypto.ir.types import INDEX
from pypto.passes.observers import is_observer
from pypto.passes.tensor_to_tile import HOMES, VIEW_OPS, regions_of

__all__ = ["HOMES", "carry_tensors_in_memory"]


@dataclass
class _Homes:
    """The homes made for one function: their allocations, and carried names -> homes."""

    names: NameGen
    made: set[Var]  # every home made, for the kernels to know them (see carry_tensors_in_memory)
    creates: list[Stmt] = field(default_factory=list)
    mapping: dict[Var, Expr] = field(default_factory=dict)
    of_ifs: set[Var] = field(default_factory=set)  # the homes of values leaving an if

    def home(self, carried: Var) -> Var:
        t = carried.type
        assert isinstance(t, TensorType)
        home = Var(self.names.fresh(f"{carried.name}_home"), t, carried.span)
        self.made.add(home)
        create = make_call(tensor.create, (), {"shape": t.shape, "dtype": t.dtype}, carried.span)
        self.creates.append(Assign(home, create, carried.span))
        return home

    def drop(self, home: Var) -> None:
        """Forget a home nothing uses any more (its allocation too)."""
        self.made.discard(home)
        self.creates = [s for s in self.creates if not (isinstance(s, Assign) and s.target is home)]


def carry_tensors_in_memory(body: tuple[Stmt, ...], names: NameGen, made: set[Var]) -> tuple[Stmt, ...]:
    """``body`` with every tensor a loop inside a scope carries kept in a home tensor allocated
    before the scope (see the module docstring); the homes are added to ``made``. A kernel reads
    and writes its homes on the vector lanes only (ConvertTensorToTileOps), so that no write of
    one lane or core races a read of another."""
    out: list[Stmt] = []
    mapping: dict[Var, Expr] = {}
    for stmt in body:
        if isinstance(stmt, ScopeStmt):
            homes = _Homes(names, made)
            scope_body = _in_scope(stmt.body, homes)
            scope_body = _home_crossings(scope_body, homes, _views(scope_body))
            out.extend(homes.creates)
            mapping.update(homes.mapping)
            stmt = replace(stmt, body=scope_body)
        elif isinstance(stmt, (For, While, If)):
            stmt = with_bodies(
                stmt, tuple(carry_tensors_in_memory(b, names, made) for b in nested_bodies(stmt))
            )
        out.append(stmt)
    # A loop's result used after its scope is the home too.
    carried = substitute_body(tuple(out), mapping) if mapping else tuple(out)
    return _without_unused_allocations(carried)


def _without_unused_allocations(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """``body`` without the tensors it allocates (``tensor.create``) and never uses: the initial
    value of a carried tensor its first iteration replaced (``acc = pl.create_tensor(...)`` before
    a K loop whose first block overwrites it)."""
    used = set(vars_used_in(body))
    kept = [
        s
        for s in body
        if not (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == tensor.create)
        or s.target in used
    ]
    return tuple(
        with_bodies(s, tuple(_without_unused_allocations(b) for b in nested_bodies(s)))
        if isinstance(s, (For, While, If))
        else s
        for s in kept
    )


def _in_scope(body: tuple[Stmt, ...], homes: _Homes) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for original in body:
        # Later statements read an earlier loop's result from its home.
        (stmt,) = substitute_body((original,), homes.mapping)
        unrolled = _on_chip_accumulation(stmt, homes) if isinstance(stmt, For) else None
        if unrolled is not None:
            out.extend(unrolled)
            continue
        if isinstance(stmt, (For, While, If)):
            stmt = with_bodies(stmt, tuple(_in_scope(b, homes) for b in nested_bodies(stmt)))
        if isinstance(stmt, (For, While)):  # a value a nested body moved to a home is read from it
            stmt = replace(stmt, yields=tuple(substitute_expr(y, homes.mapping) for y in stmt.yields))
        if isinstance(stmt, (For, While)) and _carries_tensor(stmt):
            out.extend(_homed(stmt, homes))
        elif isinstance(stmt, If) and any(isinstance(v.type, TensorType) for v in stmt.results):
            out.append(_homed_if(stmt, homes))
        else:
            out.append(stmt)
    return tuple(out)


def _home_crossings(body: tuple[Stmt, ...], homes: _Homes, views: set[Var]) -> tuple[Stmt, ...]:
    """``body`` (and each body nested in it) with a home for every tensor value a region computes
    and a statement after the region reads: the tiler lowers each region on its own, so a value
    does not stay on chip across the statements that end its region (a loop, a tile op). The
    value is written to its home right after it is computed (a statement of its region) and
    read from there after the region. Views of global memory need none: the tiler makes them
    again where they are read."""
    stmts = list(body)
    writes: dict[int, list[Stmt]] = {}
    for region in regions_of(body):
        members = set(region)
        computed: dict[Var, int] = {}
        for k in region:
            stmt = stmts[k]
            if (
                isinstance(stmt, Assign)
                and isinstance(stmt.target.type, TensorType)
                and stmt.target not in views
            ):
                computed[stmt.target] = k
        # A debug print reads a value where it stands and needs no home for it (see observers).
        later = [k for k in range(region[0], len(stmts)) if k not in members and not is_observer(stmts[k])]
        read = set(vars_used_in(tuple(stmts[k] for k in later)))
        mapping: dict[Var, Expr] = {v: homes.home(v) for v in computed if v in read}
        for v, home in mapping.items():
            assert isinstance(home, Var)
            writes.setdefault(computed[v], []).append(_write(home, v, v.span))
        for k in later:
            (stmts[k],) = substitute_body((stmts[k],), dict(mapping))
    out: list[Stmt] = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, (For, While, If)):
            stmt = with_bodies(stmt, tuple(_home_crossings(b, homes, views) for b in nested_bodies(stmt)))
        out.extend([stmt, *writes.get(k, [])])
    return tuple(out)


def _views(body: tuple[Stmt, ...]) -> set[Var]:
    """The tensor views of ``body``: windows of tensors it does not compute (or of such views)."""
    computed: set[Var] = set()
    views: set[Var] = set()
    for stmt in walk_stmts(body):
        if not (isinstance(stmt, Assign) and isinstance(stmt.value, Call)):
            continue
        if not isinstance(stmt.target.type, TensorType):
            continue
        source = stmt.value.args[0] if stmt.value.args else None
        if stmt.value.op in VIEW_OPS and source not in computed:
            views.add(stmt.target)
        else:
            computed.add(stmt.target)
    return views


# The most iterations a K loop of matmul_acc is unrolled over (see _on_chip_accumulation).
MAX_UNROLLED_ACCUMULATION = 64

_MATMULS = frozenset({tensor.matmul, tensor.matmul_acc})


def _on_chip_accumulation(loop: For, homes: _Homes) -> list[Stmt] | None:
    """``loop`` unrolled, if it is a K loop of constant bounds whose carried tensors are matmul
    accumulators (``acc = pl.matmul_acc(acc, a[...], b[...])``, the first block perhaps in an
    ``if k0 == 0:`` arm that makes it with ``pl.matmul``) in a body of tensor code; else None.
    Unrolled, its matmuls form one region, which the tiler keeps in the cube's accumulator
    across the K blocks (PyPTO's manual: the accumulator stays on chip); a home would send every
    partial sum through global memory and the vector lanes."""
    trips = _static_trips(loop)
    if trips is None or not 1 <= trips <= MAX_UNROLLED_ACCUMULATION or not _carries_tensor(loop):
        return None
    if any(isinstance(s, (For, While, ScopeStmt)) for s in walk_stmts(loop.body)):
        return None
    if not all(
        _accumulated(carried, loop.body) for carried in loop.iter_args if isinstance(carried.type, TensorType)
    ):
        return None  # (checked before unrolling, which takes fresh names)
    unrolled, finals = _unrolled(loop, homes.names)
    if any(isinstance(s, If) for s in unrolled):  # an if the index does not decide
        return None
    producers = {s.target: s.value for s in unrolled if isinstance(s, Assign) and isinstance(s.value, Call)}
    for iteration in finals:
        for carried, value in zip(loop.iter_args, iteration, strict=True):
            if not isinstance(carried.type, TensorType):
                continue
            made = producers.get(value) if isinstance(value, Var) else None
            if made is None or made.op not in _MATMULS:
                return None
    homes.mapping.update(zip(loop.results, finals[-1], strict=True))
    return list(unrolled)


def _accumulated(carried: Var, body: tuple[Stmt, ...]) -> bool:
    """Does ``body`` add onto ``carried`` with a ``tensor.matmul_acc``?"""
    return any(
        isinstance(s, Assign)
        and isinstance(s.value, Call)
        and s.value.op == tensor.matmul_acc
        and s.value.args[0] is carried
        for s in walk_stmts(body)
    )


def _unrolled(loop: For, names: NameGen) -> tuple[tuple[Stmt, ...], list[list[Expr]]]:
    """``loop``'s iterations as straight code, one after another (its values renamed, its index
    a constant in each, ifs on it folded to their taken arm), and the carried values after each
    iteration."""
    assert isinstance(loop.start, Const) and isinstance(loop.step, Const)
    trips = _static_trips(loop)
    assert trips is not None
    out: list[Stmt] = []
    values: list[Expr] = list(loop.init_values)
    after: list[list[Expr]] = []
    for i in range(trips):
        index = Const(int(loop.start.value) + i * int(loop.step.value), INDEX)
        mapping: dict[Var, Expr] = {loop.var: index, **dict(zip(loop.iter_args, values, strict=True))}
        for v in defined_vars(loop.body):
            mapping[v] = Var(names.fresh(v.name), v.type, v.span)
        out.extend(_constants_folded(loop.body, mapping))
        values = [folded(substitute_expr(y, mapping)) for y in loop.yields]
        after.append(values)
    return tuple(out), after


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
    loop = _arms_write_the_homes(loop, inside, homes)
    trips = _static_trips(loop)
    pre: list[Stmt] = []
    starts = list(loop.init_values)
    if isinstance(loop, For) and trips is not None and trips >= 1:
        first, starts = _peeled(loop, homes.names)
        pre.extend(first)
    for k in tensors:
        if starts[k] is not inside[loop.iter_args[k]]:  # (the peeled iteration wrote it there)
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


def _arms_write_the_homes(loop: For | While, inside: dict[Var, Var], homes: _Homes) -> For | While:
    """``loop`` with each carried tensor an if of its body leaves (``if k0 == 0: acc = pl.matmul(...)
    else: acc = pl.matmul_acc(acc, ...)``) written by the if's arms straight into the carried
    tensor's home, not into a home of the if's own that the loop then copies."""
    renames: dict[Var, Expr] = {}
    for iter_arg, home in inside.items():
        value = loop.yields[loop.iter_args.index(iter_arg)]
        if isinstance(value, Var) and value in homes.of_ifs and value not in renames:
            renames[value] = home
    if not renames:
        return loop
    for old in renames:
        homes.drop(old)
    return replace(
        loop,
        body=substitute_body(loop.body, dict(renames)),
        yields=tuple(substitute_expr(y, renames) for y in loop.yields),
    )


def _homed_if(stmt: If, homes: _Homes) -> If:
    """The if with each tensor leaving it written to a home at the end of the arms that reach
    their end (``if k0 == 0: acc = pl.matmul(...) else: acc = pl.matmul_acc(acc, ...)``): after
    the if the value is the home."""
    tensors = [k for k, v in enumerate(stmt.results) if isinstance(v.type, TensorType)]
    bodies = []
    for arm, body in enumerate((stmt.then_body, stmt.else_body)):
        written = list(body)
        yields = stmt.arm_yields(arm)
        for k in tensors if yields else ():
            if stmt.results[k] not in homes.mapping:
                homes.mapping[stmt.results[k]] = homes.home(stmt.results[k])
                homes.of_ifs.add(homes.mapping[stmt.results[k]])  # type: ignore[arg-type]
            home = homes.mapping[stmt.results[k]]
            assert isinstance(home, Var)
            written.insert(_write_point(written, home, yields[k]), _write(home, yields[k], stmt.span))
        bodies.append(tuple(written))
    keep = [k for k in range(len(stmt.results)) if k not in tensors]
    return replace(
        stmt,
        then_body=bodies[0],
        else_body=bodies[1],
        then_yields=tuple(stmt.then_yields[k] for k in keep) if stmt.then_yields else (),
        else_yields=tuple(stmt.else_yields[k] for k in keep) if stmt.else_yields else (),
        results=tuple(stmt.results[k] for k in keep),
    )


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
    body = _constants_folded(loop.body, mapping)
    return body, [folded(substitute_expr(y, mapping)) for y in loop.yields]


def _constants_folded(body: tuple[Stmt, ...], mapping: dict[Var, Expr]) -> tuple[Stmt, ...]:
    """``body`` substituted by ``mapping`` with what became constant folded as the parser folds
    it (so that the code prints and reads back as itself): a scalar that is now a constant
    (``k0 = 0 * 128``) is that constant where it is read, an if on a constant is its taken arm."""
    out: list[Stmt] = []
    for original in body:
        (stmt,) = substitute_body((original,), mapping)
        stmt = _header_folded(stmt)
        if isinstance(stmt, Assign) and isinstance(original, Assign) and isinstance(stmt.value, (Const, Var)):
            mapping[original.target] = stmt.value  # the parser names a constant, it assigns none
            continue
        if isinstance(stmt, If) and isinstance(original, If) and isinstance(stmt.cond, Const):
            arm = 0 if stmt.cond.value else 1  # the parser parses the taken arm only
            out.extend(_constants_folded((original.then_body, original.else_body)[arm], mapping))
            for result, value in zip(original.results, original.arm_yields(arm), strict=True):
                mapping[result] = folded(substitute_expr(value, mapping))
            continue
        if isinstance(original, (If, For, While)):
            stmt = with_bodies(stmt, tuple(_constants_folded(b, mapping) for b in nested_bodies(original)))
            stmt = _yields_again(stmt, original, mapping)
        out.append(stmt)
    return tuple(out)


def _header_folded(stmt: Stmt) -> Stmt:
    """``stmt`` with the expressions it evaluates itself (not its bodies') folded."""
    if isinstance(stmt, (Assign, Eval)):
        return replace(stmt, value=folded(stmt.value))
    if isinstance(stmt, (If, While)):
        return replace(stmt, cond=folded(stmt.cond))
    if isinstance(stmt, For):
        return replace(stmt, start=folded(stmt.start), stop=folded(stmt.stop), step=folded(stmt.step))
    return stmt


def _yields_again(stmt: Stmt, original: If | For | While, mapping: dict[Var, Expr]) -> Stmt:
    """``stmt`` (``original`` substituted) yielding ``original``'s values as its folded bodies
    define them."""

    def again(values: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(folded(substitute_expr(v, mapping)) for v in values)

    if isinstance(stmt, If) and isinstance(original, If):
        return replace(stmt, then_yields=again(original.then_yields), else_yields=again(original.else_yields))
    if isinstance(stmt, (For, While)) and isinstance(original, (For, While)):
        return replace(stmt, yields=again(original.yields))
    return stmt


def _write(home: Var, value: Expr, span: object) -> Stmt:
    """``home[:] = value``."""
    zeros = index_tuple([Const(0, INDEX) for _ in home.type.shape])  # type: ignore[attr-defined]
    return Eval(make_call(tensor.assemble, (home, value, zeros), {}, span), span)  # type: ignore[arg-type]
