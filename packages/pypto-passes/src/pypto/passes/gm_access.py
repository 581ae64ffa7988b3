"""Which global tensors a kernel body writes (so that its reads of the others may move)."""

from __future__ import annotations

from pypto.ir import Call, Stmt, Var
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import GmAccess, op, trait_of


def written_tensors(body: tuple[Stmt, ...]) -> set[Var]:
    """The global tensors a statement of ``body`` writes (every tensor it passes, if it calls a
    function): ``written_tensors(kernel.body) == {out}`` for a kernel that stores to ``out``."""
    written: set[Var] = set()
    for stmt in walk_stmts(body):
        for expr in stmt_exprs(stmt):
            for e in walk_expr(expr):
                if not isinstance(e, Call):
                    continue
                access = trait_of(e, GmAccess)
                tensor = e.args[access.tensor] if access is not None and access.write else None
                if isinstance(tensor, Var):
                    written.add(tensor)
                elif e.op == op.call:
                    written.update(v for v in e.args if isinstance(v, Var))
    return written
