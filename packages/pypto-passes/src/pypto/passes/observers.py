"""Debug prints through the tensor-to-tile lowering (``pl.debug.print`` of a scope's values).

A print written between the tensor ops of a scope shows values the lowering turns into tiles: it
must neither cut the region in two (which would send the values through global memory and change
the kernel's time) nor keep naming tensors that no longer exist. So the lowering sets the prints
of a region aside, lowers the region, and puts each print back right after the statement that
makes the last tile it shows (inside a row-block loop when the region runs in blocks: each block
shows its rows), its operands now those tiles.
"""

from __future__ import annotations

from dataclasses import replace

from pypto.ir import Assign, Call, Eval, Expr, Stmt, TileType, Var
from pypto.ir.nodes import nested_bodies, with_bodies
from pypto.ir.ops import Observes, get_op


def is_observer(stmt: Stmt) -> bool:
    """A statement of a ``pl.debug`` op: it only looks."""
    return isinstance(stmt, Eval) and isinstance(stmt.value, Call) and get_op(stmt.value.op).has(Observes)


def _tile_named(stmts: list[Stmt] | tuple[Stmt, ...], name: str) -> Var | None:
    """The last tile ``name`` that ``stmts`` (or a body they hold) assign."""
    found = None
    for stmt in stmts:
        if isinstance(stmt, Assign) and stmt.target.name == name and isinstance(stmt.target.type, TileType):
            found = stmt.target
        for body in nested_bodies(stmt):
            inner = _tile_named(body, name)
            found = inner or found
    return found


def _retarget(stmt: Eval, tiles: dict[str, Var], gone: frozenset[Var] = frozenset()) -> Eval:
    """The print with its tensor operands replaced by their tiles; an operand in ``gone`` (a value
    the lowering left no tile of) becomes a label saying so."""
    call = stmt.value
    assert isinstance(call, Call)
    parts = call.attrs.get("parts", tuple(range(len(call.args))))
    args: list[Expr] = []
    new_parts: list[str | int] = []
    for part in parts:
        if isinstance(part, str):
            new_parts.append(part)
            continue
        arg = call.args[part]
        if arg in gone:
            new_parts.append(f"<{getattr(arg, 'name', '?')}: not on chip here>")
            continue
        if isinstance(arg, Var) and not isinstance(arg.type, TileType) and arg.name in tiles:
            arg = tiles[arg.name]
        new_parts.append(len(args))
        args.append(arg)
    return replace(
        stmt, value=replace(call, args=tuple(args), attrs={**call.attrs, "parts": tuple(new_parts)})
    )


def observe_tiles(stmt: Stmt, before: list[Stmt]) -> Stmt:
    """A print outside a region: its operands that an earlier region made tiles of, as those tiles."""
    assert isinstance(stmt, Eval) and isinstance(stmt.value, Call)
    tiles = {}
    for arg in stmt.value.args:
        if isinstance(arg, Var) and not isinstance(arg.type, TileType):
            tile = _top_level_tile(before, arg.name)
            if tile is not None:
                tiles[arg.name] = tile
    return _retarget(stmt, tiles) if tiles else stmt


def _top_level_tile(stmts: list[Stmt], name: str) -> Var | None:
    found = None
    for stmt in stmts:
        if isinstance(stmt, Assign) and stmt.target.name == name and isinstance(stmt.target.type, TileType):
            found = stmt.target
    return found


def anchored(stmt: Stmt, before: Stmt) -> tuple[Stmt, str | None]:
    """An observer with the name the region statement written before it assigns (its anchor)."""
    return stmt, before.target.name if isinstance(before, Assign) else None


def place_observers(
    lowered: list[Stmt], observers: list[tuple[Stmt, str | None]], computed: frozenset[Var] = frozenset()
) -> list[Stmt]:
    """``lowered`` (a region's statements) with each of ``observers`` put back after the
    statement that makes the last tile it shows; one that shows none (a breakpoint, a print of
    scalars) after the tile of the statement written before it, else at the region's end.
    ``computed``: the tensor values the region computed (one left without a tile is named so)."""
    result = list(lowered)
    for stmt, anchor in observers:
        assert isinstance(stmt, Eval) and isinstance(stmt.value, Call)
        names = [a.name for a in stmt.value.args if isinstance(a, Var) and not isinstance(a.type, TileType)]
        tiles = {n: t for n in names if (t := _tile_named(result, n)) is not None}
        gone = frozenset(
            a for a in stmt.value.args if a in computed and getattr(a, "name", None) not in tiles
        )
        printed = _retarget(stmt, tiles, gone) if tiles or gone else stmt
        shown = [tiles[n] for n in names if n in tiles]
        after = shown[-1] if shown else (_tile_named(result, anchor) if anchor else None)
        result = _insert_after(result, after, printed) if after is not None else [*result, printed]
    return result


def _insert_after(stmts: list[Stmt], var: Var, stmt: Stmt) -> list[Stmt]:
    """``stmts`` with ``stmt`` right after the assignment of ``var`` (in the body holding it)."""
    out: list[Stmt] = []
    placed = False
    for s in stmts:
        bodies = nested_bodies(s)
        if not placed and bodies and any(_defines(b, var) for b in bodies):
            s = with_bodies(
                s, tuple(tuple(_insert_after(list(b), var, stmt)) if _defines(b, var) else b for b in bodies)
            )
            placed = True
        out.append(s)
        if not placed and isinstance(s, Assign) and s.target is var:
            out.append(stmt)
            placed = True
    return out if placed else [*out, stmt]


def _defines(body: tuple[Stmt, ...] | list[Stmt], var: Var) -> bool:
    for s in body:
        if isinstance(s, Assign) and s.target is var:
            return True
        if any(_defines(b, var) for b in nested_bodies(s)):
            return True
    return False
