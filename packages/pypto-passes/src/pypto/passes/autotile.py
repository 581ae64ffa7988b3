"""AutoTileMatmul: whole-tensor matmuls too big for L0 become chains of blocks that fit.

A ``tensor.matmul`` whose right operand does not fit L0B (Right), or whose left operand leaves
no room for a block of rows in L0A (Left), is K-blocked: ``c = a @ b`` becomes
``c = a[:, 0:kb] @ b[0:kb, :]`` followed by ``c = matmul_acc(c, a[:, k:k+kb], b[k:k+kb, :])``
for the remaining blocks, all views of global memory. When even a 16-row block of the result
is too wide for L0C, or a 16-row slice of the right operand too wide for L0B, the columns are
blocked too; that needs the result to be written straight out (``out[...] = pl.matmul(...)``),
since later vector ops would need the same column blocks. Rows are blocked later, by
ConvertTensorToTileOps. Blocks that fit L0 twice are preferred (while at least 64 deep and
wide, and not cutting N where fitting once would not): the moves of the next K block then
overlap this block's matmul, and a column block's matmuls the drain of the one before.

Column blocks run in groups that fill L0C (two 128x128 fp32 accumulators): per K block the
group's matmuls share one left slice, loaded and moved to L0A once for the group. The option
``columns`` (``tile-matmul{columns=1}``) sets the group size.

The option ``k_block`` (``tile-matmul{k_block=128}``) sets the K block of every whole-tensor
matmul with a longer K, whether or not it fits whole; the last block takes the rest of K.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pypto.ir import (
    INDEX,
    Assign,
    Call,
    Const,
    Eval,
    Expr,
    For,
    Function,
    FunctionKind,
    If,
    MemoryBudgetError,
    MemorySpace,
    ParseError,
    Program,
    SplitAivRegion,
    Stmt,
    Target,
    TensorType,
    TileType,
    Var,
    make_call,
)
from pypto.ir.extents import is_symbolic
from pypto.ir.nodes import While, stmt_end_exprs, stmt_exprs, used_vars, walk_stmts
from pypto.ir.ops import tensor, tile
from pypto.ir.ops.cube import staged
from pypto.ir.rewrite import NameGen, index_add, index_tuple, map_functions
from pypto.passes.manager import PassContext
from pypto.passes.options import option

MIN_ROWS = 16  # the cube's block edge: the fewest rows worth a matmul
PREFERRED_ROWS = 128  # the row block the tiler prefers
MIN_DOUBLED_EDGE = 64  # the narrowest K or N block worth taking to fit L0 twice
ACC_BYTES = 4  # L0C accumulates in 32 bits


@dataclass(frozen=True)
class MatmulBlocks:
    kb: int
    nb: int


def _divisors(n: int) -> list[int]:
    return [d for d in range(n, 0, -1) if n % d == 0]


def choose_blocks(m: int, k: int, n: int, in_bytes: int, target: Target) -> MatmulBlocks | None:
    """K and N blocks whose slices fit L0A/L0B and whose result fits L0C, for a full block of
    rows if possible (else the fewest rows worth a matmul); None when the matmul fits whole.

    Blocks that fit twice come first, as long as neither edge drops below ``MIN_DOUBLED_EDGE``:
    with two of each in L0 the next K block's moves overlap this one's matmul, and the next
    column block's matmuls overlap this one's drain."""
    left, right, acc = (target.usable(s) for s in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc))
    single = largest_blocks(m, k, n, in_bytes, target)
    if single is None:
        return None
    doubled = _fitting_blocks(min(m, PREFERRED_ROWS), k, n, in_bytes, left // 2, right // 2, acc // 2)
    if doubled is None or min(doubled.kb, doubled.nb) < min(MIN_DOUBLED_EDGE, k, n):
        return single
    # Column blocks need the product written straight out: only where they are needed anyway.
    return doubled if doubled.nb == single.nb or single.nb < n else single


def largest_blocks(m: int, k: int, n: int, in_bytes: int, target: Target) -> MatmulBlocks | None:
    """The largest K and N blocks that fit L0 once (None: the matmul fits whole)."""
    left, right, acc = (target.usable(s) for s in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc))
    return _single_blocks(m, k, n, in_bytes, left, right, acc)


def _fitting_blocks(
    rows: int, k: int, n: int, in_bytes: int, left: int, right: int, acc: int
) -> MatmulBlocks | None:
    """The widest N block, then the deepest K block, whose tiles fit these byte budgets."""
    for nb in _divisors(n):
        if rows * nb * ACC_BYTES > acc:
            continue
        fitting = [kb for kb in _divisors(k) if kb * nb * in_bytes <= right and rows * kb * in_bytes <= left]
        if fitting:
            return MatmulBlocks(fitting[0], nb)
    return None


def _single_blocks(
    m: int, k: int, n: int, in_bytes: int, left: int, right: int, acc: int
) -> MatmulBlocks | None:
    """Blocks that fit L0 once, for a full block of rows if possible, else for the fewest rows
    worth a matmul; None when the matmul fits whole."""
    for rows in dict.fromkeys((min(m, PREFERRED_ROWS), min(m, MIN_ROWS))):
        if k * n * in_bytes <= right and rows * k * in_bytes <= left and rows * n * ACC_BYTES <= acc:
            return None
        blocks = _fitting_blocks(rows, k, n, in_bytes, left, right, acc)
        if blocks is not None:
            return blocks
    return MatmulBlocks(1, 1)


def column_group(rows: int, nb: int, n: int, target: Target, asked: int | None = None) -> int:
    """How many column blocks of ``nb`` run side by side, sharing each K block's left slice
    (``asked``, else as many as their accumulators of ``rows`` rows fill L0C; at least one, at
    most all of N). Each left slice is then loaded and moved to L0A once per group rather than
    once per column block: for a 128-row block that halves the left operand's traffic, at the
    price of draining the group's accumulators together."""
    fitting = target.usable(MemorySpace.Acc) // (rows * nb * ACC_BYTES)
    return max(1, min(-(-n // nb), asked if asked is not None else fitting))


def chain_order(columns: int, steps: int) -> list[tuple[int, int]]:
    """The order of a group's matmuls, as (column block, K block) pairs: K block by K block,
    each shared by all the columns, except that the first two and the last two K blocks go
    column by column. Then a column's first matmul waits only for the drain of the accumulator
    it takes over, not for every column's of the group before, and a column drains while the
    next columns finish their last two K blocks; each column still accumulates its K blocks in
    order. Two left slices are live at the ends, where one was."""
    head = min(2, steps)
    tail = max(head, steps - 2)
    order = [(c, s) for c in range(columns) for s in range(head)]
    order += [(c, s) for s in range(head, tail) for c in range(columns)]
    order += [(c, s) for c in range(columns) for s in range(tail, steps)]
    return order


def forced_blocks(m: int, k: int, n: int, in_bytes: int, target: Target, k_block: int) -> MatmulBlocks | None:
    """The blocks of a matmul whose K block is ``k_block`` (at most K): the widest N block that
    fits beside it, for a full block of rows if possible; None when that leaves the matmul whole,
    ``MatmulBlocks(kb, 0)`` when no N block fits."""
    kb = min(k_block, k)
    left, right, acc = (target.usable(s) for s in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc))
    for rows in dict.fromkeys((min(m, PREFERRED_ROWS), min(m, MIN_ROWS))):
        if rows * kb * in_bytes > left:
            continue
        for nb in _divisors(n):
            if rows * nb * ACC_BYTES <= acc and kb * nb * in_bytes <= right:
                return None if (kb, nb) == (k, n) else MatmulBlocks(kb, nb)
    return MatmulBlocks(kb, 0)


@dataclass(frozen=True)
class AutoTileMatmul:
    """K- and N-block the whole-tensor matmuls of each InCore kernel that do not fit L0 (or, with
    ``k_block``, whose K is longer than it)."""

    name: ClassVar[str] = "AutoTileMatmul"
    pipeline_name: ClassVar[str] = "tile-matmul"
    k_block: int | None = option(
        None,
        help="the K block of each matmul with a longer K; none: blocks that fit L0 twice, else once",
        minimum=1,
    )
    columns: int | None = option(
        None,
        help="column blocks that share each K block's left slice; none: as many as fill L0C",
        minimum=1,
    )

    def run(self, program: Program, ctx: PassContext) -> Program:
        return map_functions(program, (FunctionKind.InCore,), lambda fn: self.tile(fn, ctx.target))

    def tile(self, fn: Function, target: Target) -> Function:
        blocker = _Blocker(target, NameGen.for_function(fn), self.k_block, self.columns)
        return replace(fn, body=blocker.block(fn.body))


@dataclass
class _Blocker:
    target: Target
    names: NameGen
    k_block: int | None = None
    columns: int | None = None

    def block(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        replaced: set[int] = set()  # writes re-emitted per column block
        for index, stmt in enumerate(body):
            if id(stmt) in replaced:
                continue
            if isinstance(stmt, (For, While, SplitAivRegion)):
                out.append(replace(stmt, body=self.block(stmt.body)))
            elif isinstance(stmt, If):
                then_body, else_body = self.block(stmt.then_body), self.block(stmt.else_body)
                out.append(replace(stmt, then_body=then_body, else_body=else_body))
            elif self.blocks_of(stmt) is not None:
                stmts, writes = self.split(stmt, body[index + 1 :])  # type: ignore[arg-type]
                out.extend(stmts)
                replaced.update(id(w) for w in writes)
            elif _staged(stmt):
                out.extend(self.stage(stmt))  # type: ignore[arg-type]
            else:
                out.append(stmt)
        return tuple(out)

    def stage(self, stmt: Assign) -> list[Stmt]:
        """A tile matmul of Mat operands (the left one may be Vec): the operands go to L0 in K
        blocks that fit L0A / L0B, each block's product added into the accumulator
        (``tile.extract`` of each block, ``tile.matmul`` then ``tile.matmul_acc``); a Vec left
        operand is moved to Mat first. The result must fit L0C whole."""
        call = stmt.value
        assert isinstance(call, Call)
        acc_in = call.args[0] if call.op == tile.matmul_acc else None
        a, b = call.args[-2:]
        a_trans, b_trans = bool(call.attrs.get("a_trans")), bool(call.attrs.get("b_trans"))
        out: list[Stmt] = []
        if a.type.memory_space is MemorySpace.Vec:  # type: ignore[attr-defined]
            staged = make_call(tile.move, (a,), {"target_memory": MemorySpace.Mat}, call.span)
            a_mat = Var(self.names.fresh(f"{getattr(a, 'name', 'a')}_mat"), staged.type, call.span)
            out.append(Assign(a_mat, staged, call.span))
            a = a_mat
        m, k = (a.type.shape[1], a.type.shape[0]) if a_trans else a.type.shape  # type: ignore[attr-defined]
        n = b.type.shape[0] if b_trans else b.type.shape[1]  # type: ignore[attr-defined]
        kb = self.k_block_of(call, m, k, n, a.type.dtype.nbytes)  # type: ignore[attr-defined]
        acc = acc_in
        starts = list(range(0, k, kb))
        for step, k0 in enumerate(starts):
            depth = min(kb, k - k0)
            a_at, a_shape = ((k0, 0), (depth, m)) if a_trans else ((0, k0), (m, depth))
            b_at, b_shape = ((0, k0), (n, depth)) if b_trans else ((k0, 0), (depth, n))
            left = self.extract(a, a_at, a_shape, MemorySpace.Left, call)
            right = self.extract(b, b_at, b_shape, MemorySpace.Right, call)
            out += [left, right]
            operands = (left.target, right.target)
            if acc is None:
                value = make_call(tile.matmul, operands, call.attrs, call.span)
            else:
                value = make_call(tile.matmul_acc, (acc, *operands), _trans_attrs(call), call.span)
            last = step == len(starts) - 1
            target = (
                stmt.target if last else Var(self.names.fresh(f"{stmt.target.name}_k"), value.type, call.span)
            )
            out.append(Assign(target, value, call.span))
            acc = target
        return out

    def k_block_of(self, call: Call, m: int, k: int, n: int, in_bytes: int) -> int:
        """The K block of a staged tile matmul: its blocks fit L0A / L0B (twice where they may,
        so that the next block's moves overlap this block's product); its ``[m, n]`` product
        must fit L0C whole, else a ``MemoryBudgetError`` at the matmul."""
        left, right, acc = (
            self.target.usable(s) for s in (MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc)
        )
        if m * n * ACC_BYTES > acc:
            raise MemoryBudgetError(
                f"pl.matmul: the [{m}, {n}] product of tiles does not fit the cube's L0C "
                f"({m * n * ACC_BYTES} of {acc} bytes)",
                call.span,
                "multiply blocks of rows or columns (slices of the operands) into products that fit, "
                "or multiply tensors and let the compiler block the product",
            )
        if self.k_block is not None:
            return min(self.k_block, k)
        fits = [d for d in _divisors(k) if m * d * in_bytes <= left and d * n * in_bytes <= right]
        twice = [d for d in fits if 2 * m * d * in_bytes <= left and 2 * d * n * in_bytes <= right]
        if fits and fits[0] == k:
            return k
        if twice and twice[0] >= min(MIN_DOUBLED_EDGE, k):
            return twice[0]
        if not fits:
            raise MemoryBudgetError(
                f"pl.matmul: no K block of the [{m}, {k}] @ [{k}, {n}] tile product fits the cube's L0 "
                "buffers",
                call.span,
                "multiply fewer rows or columns at a time (slices of the operands)",
            )
        return fits[0]

    def extract(
        self, x: Expr, offsets: tuple[int, int], shape: tuple[int, int], space: MemorySpace, call: Call
    ) -> Assign:
        """A block of the Mat tile ``x`` moved into ``space`` (Left or Right); all of it, a move."""
        if x.type.shape == shape:  # type: ignore[attr-defined]
            value = make_call(tile.move, (x,), {"target_memory": space}, call.span)
        else:
            starts = index_tuple([Const(o, INDEX) for o in offsets])
            value = make_call(tile.extract, (x, starts), {"shape": shape, "target_memory": space}, call.span)
        base = getattr(x, "name", "operand")
        suffix = "left" if space is MemorySpace.Left else "right"
        var = Var(self.names.fresh(f"{base}_{suffix}"), value.type, call.span)
        return Assign(var, value, call.span)

    def split(self, stmt: Assign, rest: tuple[Stmt, ...]) -> tuple[list[Stmt], list[Eval]]:
        call = stmt.value
        assert isinstance(call, Call)
        a = call.args[0]
        m, k = a.type.shape  # type: ignore[attr-defined]
        n = _columns(call)
        blocks = self.blocks_of(stmt)
        assert blocks is not None
        writes: list[Eval] = []
        if blocks.nb < n:
            found = _only_writes(stmt.target, rest)
            if found is None:
                raise ParseError(
                    f"pl.matmul: the [{m}, {n}] result is too wide for the cube's L0 buffers and "
                    "later ops use it, which would need the same column blocks",
                    call.span,
                    "write the product straight out (out[...] = pl.matmul(a, b)), or split N "
                    "yourself with column slices b[:, j:j + nb]",
                )
            writes = found
        results: dict[int, Var] = {}
        for n0 in range(0, n, blocks.nb):
            result = stmt.target
            if blocks.nb < n:
                t = TensorType((m, blocks.nb), stmt.target.type.dtype)  # type: ignore[attr-defined]
                result = Var(self.names.fresh(f"{stmt.target.name}_n{n0}"), t, stmt.target.span)
            results[n0] = result
        rows = PREFERRED_ROWS if is_symbolic(m) else min(m, PREFERRED_ROWS)
        together = column_group(rows, blocks.nb, n, self.target, self.columns)
        starts = list(results)
        out: list[Stmt] = []
        for first in range(0, len(starts), together):
            group = {n0: results[n0] for n0 in starts[first : first + together]}
            out.extend(self.k_chains(call, group, a, m, k, blocks))
            for n0, result in group.items():
                out.extend(_shifted_writes(writes, result, n0))
        return out, writes

    def k_chains(
        self, call: Call, results: dict[int, Var], a: Expr, m: int, k: int, blocks: MatmulBlocks
    ) -> list[Stmt]:
        """For each column block ``n0`` of the group, ``result = a_0 @ b_0`` (the first K block)
        then ``result = matmul_acc(result, a_i, b_i)``, in the order of :func:`chain_order`. The
        column blocks of a group share each left slice: it is loaded and moved to L0A once for
        all of them."""
        stmts: list[Stmt] = []
        acc: dict[int, Var] = {}
        a_views: dict[int, Assign] = {}
        transposed = bool(call.attrs.get("b_trans"))
        k_starts = list(range(0, k, blocks.kb))
        columns = list(results.items())
        for column, step in chain_order(len(columns), len(k_starts)):
            n0, result = columns[column]
            k0 = k_starts[step]
            depth = min(blocks.kb, k - k0)
            if step not in a_views:  # fresh left slices per group: each group streams its own
                a_views[step] = self.view(a, (0, k0), (m, depth), call)
                stmts.append(a_views[step])
            # A transposed right operand ([N, K], b_trans) is cut along its rows for N.
            at, extent = ((n0, k0), (blocks.nb, depth)) if transposed else ((k0, n0), (depth, blocks.nb))
            b_view = self.view(call.args[1], at, extent, call)
            last = step == len(k_starts) - 1
            name = result if last else Var(self.names.fresh(f"{result.name}_k"), result.type, result.span)
            operands = (a_views[step].target, b_view.target)
            if n0 not in acc:
                value = make_call(tensor.matmul, operands, call.attrs, call.span)
            else:
                value = make_call(tensor.matmul_acc, (acc[n0], *operands), {"b_trans": transposed}, call.span)
            stmts += [b_view, Assign(name, value, call.span)]
            acc[n0] = name
        return stmts

    def blocks_of(self, stmt: Stmt) -> MatmulBlocks | None:
        """How to block ``stmt`` if it is a whole-tensor matmul too big for L0 (or with a K longer
        than ``k_block``), else None."""
        call = stmt.value if isinstance(stmt, Assign) else None
        if not (isinstance(call, Call) and call.op == tensor.matmul):
            return None
        a, b = call.args
        if call.attrs.get("a_trans"):
            return None
        if not isinstance(a.type, TensorType) or not isinstance(b.type, TensorType):
            return None
        rows, k = a.type.shape
        n = _columns(call)
        # A run-time row count is blocked by the tiler in at most PREFERRED_ROWS rows: the bound.
        m = PREFERRED_ROWS if is_symbolic(rows) else rows
        if is_symbolic(k) or is_symbolic(n):
            raise ParseError(
                f"pl.matmul: the product [{rows}, {k}] @ [{k}, {n}] has a dynamic K or N, which the "
                "cube's static tiles cannot block",
                call.span,
                "only the rows of the left operand (and of the result) may be dynamic",
            )
        in_bytes = a.type.dtype.nbytes
        if self.k_block is None:
            return choose_blocks(m, k, n, in_bytes, self.target)
        blocks = forced_blocks(m, k, n, in_bytes, self.target, self.k_block)
        if blocks is not None and blocks.nb == 0:
            fitting = largest_blocks(m, k, n, in_bytes, self.target)
            raise MemoryBudgetError(
                f"pl.matmul: a K block of {blocks.kb} (tile-matmul{{k_block={self.k_block}}}) does not fit "
                f"the cube's L0 buffers for the [{m}, {k}] @ [{k}, {n}] product",
                call.span,
                f"use a smaller k_block, e.g. k_block={fitting.kb if fitting else k}, or leave it unset so "
                "that the pass chooses the largest block that fits",
            )
        return blocks

    def view(self, x: Expr, offsets: tuple[int, ...], shape: tuple[int, ...], call: Call) -> Assign:
        starts = index_tuple([Const(o, INDEX) for o in offsets])
        value = make_call(tensor.slice, (x, starts), {"shape": shape}, call.span)
        base = getattr(x, "name", "view")
        var = Var(self.names.fresh(f"{base}_{offsets[0]}_{offsets[1]}"), value.type, call.span)
        return Assign(var, value, call.span)


def _staged(stmt: Stmt) -> bool:
    """A tile matmul whose operands the compiler stages into L0 (Mat / Vec, not Left / Right)."""
    call = stmt.value if isinstance(stmt, Assign) else None
    if not (isinstance(call, Call) and call.op in (tile.matmul, tile.matmul_acc)):
        return False
    a, b = (x.type for x in call.args[-2:])
    return isinstance(a, TileType) and isinstance(b, TileType) and staged(call.op, a, b)


def _trans_attrs(call: Call) -> dict[str, bool]:
    return {k: True for k in ("a_trans", "b_trans") if call.attrs.get(k)}


def _columns(call: Call) -> int:
    """N of a matmul: the right operand's columns, or its rows when it is transposed (``b_trans``)."""
    shape = call.args[1].type.shape  # type: ignore[attr-defined]
    n: int = shape[0] if call.attrs.get("b_trans") else shape[1]
    return n


def _only_writes(value: Var, rest: tuple[Stmt, ...]) -> list[Eval] | None:
    """The ``tensor.assemble`` writes of ``value`` in ``rest``, if nothing else uses it."""
    writes: list[Eval] = []
    for stmt in walk_stmts(rest):
        if not any(value in used_vars(e) for e in (*stmt_exprs(stmt), *stmt_end_exprs(stmt))):
            continue
        call = stmt.value if isinstance(stmt, Eval) else None
        if not (isinstance(call, Call) and call.op == tensor.assemble and call.args[1] is value):
            return None
        if stmt not in rest:
            return None  # a write nested in a loop would need the column blocks there too
        writes.append(stmt)  # type: ignore[arg-type]
    return writes


def _shifted_writes(writes: list[Eval], block: Var, n0: int) -> list[Stmt]:
    """Each write of the whole product, as a write of one column block at column offset ``n0``."""
    out: list[Stmt] = []
    for write in writes:
        call = write.value
        assert isinstance(call, Call)
        dst, _, offsets = call.args
        elements = list(offsets.elements)  # type: ignore[attr-defined]
        elements[1] = index_add(elements[1], Const(n0, INDEX))
        out.append(
            Eval(make_call(tensor.assemble, (dst, block, index_tuple(elements)), call.attrs, call.span))
        )
    return out
