"""``pl.spmd``: one launch on n blocks (core groups), in its two forms.

- The kernel form: a body that holds ops directly (no ``pl.at`` scope, no kernel call) is itself
  the kernel, launched on n blocks; ``i`` of ``for i in pl.spmd(n):`` is its block index.
- The dispatch form: a body of ``pl.at`` scopes and kernel calls launches each of them on n blocks.

Either way the blocks must differ: every kernel the body launches reads the block index (``i``,
``pl.get_block_idx()``), unless it is a kernel called by name, which reads its own. Options:
``name_hint=`` and ``optimizations=[...]`` of the kernel form's kernel (as ``pl.at`` takes them),
``sync_start=True`` (the blocks start together), ``predicate=(t[i] > 0)`` (the scheduler skips
the launch when it is false at dispatch) and ``allow_early_resolve=True``. ``with pl.spmd(n, ...)
as tid:`` names the launch's task, and only that form takes ``deps=[...]``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pypto.ir import (
    TASK_ID,
    Call,
    Eval,
    Level,
    ParseError,
    Predicate,
    ScopeStmt,
    SplitMode,
    Stmt,
    Var,
)
from pypto.ir.nodes import nested_bodies, stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import op
from pypto.language.builtins import Builtin
from pypto.language.kernel import JitKind, KernelFunction
from pypto.language.parser.exprs import BlockIndex
from pypto.language.parser.regions import ScopeRegions
from pypto.language.parser.resolve import GlobalNames
from pypto.language.parser.tasks import TASK_CONSTRUCTS, TaskParser
from pypto.language.parser.values import unknown_keyword_hint

SPMD_OPTIONS = ("name_hint", "optimizations", "sync_start", "deps", "predicate", "allow_early_resolve")
SPMD_FORM = (
    "pl.spmd(core_num, name_hint=None, optimizations=[...], sync_start=False, deps=[...], "
    "predicate=(t[i] > 0), allow_early_resolve=False)"
)
SAME_WORK_HINT = (
    "offset the block's work by its index: `for i in pl.spmd(n):` and rows i * R : i * R + R "
    "(or pl.get_block_idx() in a pl.at scope), or call a kernel that reads pl.get_block_idx(); "
    "for one block drop pl.spmd"
)


@dataclass
class SpmdOptions:
    """What one ``pl.spmd(...)`` asks for."""

    block_num: int
    name_hint: str | None = None
    split: SplitMode | None = None
    slot_num: int | None = None
    sync_start: bool = False
    deps: tuple[Var, ...] = ()
    predicate: Predicate | None = None
    allow_early_resolve: bool = False
    kernel_only: ast.keyword | None = None  # the first name_hint= / optimizations= given
    deps_given: ast.keyword | None = None


class SpmdParser(TaskParser):
    """The ``pl.spmd`` statements of :class:`~pypto.language.parser.stmts.StmtParser`."""

    nesting: int
    stmts: Callable[[list[ast.stmt]], None]
    optimizations: Callable[[ast.expr], tuple[SplitMode | None, int | None]]
    scope_regions: Callable[[list[ast.stmt], SplitMode | None], ScopeRegions | None]

    def visit_spmd(self, node: ast.For | ast.With, call: ast.Call) -> None:
        """``for i in pl.spmd(n, ...):`` / ``with pl.spmd(n, ...):`` in the ``@pl.jit`` body."""
        if self.body.on_device:
            raise self.error(
                call,
                "pl.spmd launches kernels: write it in the @pl.jit body, around pl.at scopes",
                "move `for i in pl.spmd(n):` out of the kernel code, around the `with pl.at(...)` blocks",
            )
        if self.body.block_num > 1:
            raise self.error(
                call,
                "pl.spmd blocks do not nest",
                "launch on n * m core groups with one pl.spmd(n * m) and derive both indices from its "
                "index i: i // m and i % m",
            )
        target = node.target if isinstance(node, ast.For) else None
        if target is not None and not isinstance(target, ast.Name):
            raise self.error(
                target, "pl.spmd binds one name to the block index", "write `for i in pl.spmd(n):`"
            )
        tid = node.items[0].optional_vars if isinstance(node, ast.With) else None
        if tid is not None and not isinstance(tid, ast.Name):
            raise self.error(
                tid,
                "`with pl.spmd(n) as tid:` binds one name to the launch's task id",
                "write `with pl.spmd(4, deps=[...]) as tid:`; the block index is pl.get_block_idx()",
            )
        options = self.spmd_options(call)
        if self.body.in_cluster:
            self.reject_hints_in_cluster(call, options)
        if options.deps_given is not None and tid is None:
            raise self.error(
                options.deps_given.value,
                "pl.spmd() does not accept 'deps=' here: only `with pl.spmd(n, deps=[...]) as tid:` does",
                "bind the launch's task id with `as tid:` (only that form takes deps=), or give deps= "
                "to the `with pl.at(...)` scopes inside the block",
            )
        kernel = self.spmd_is_kernel(node.body)
        if not kernel and options.kernel_only is not None:
            kw = options.kernel_only
            raise self.error(
                kw.value,
                f"pl.spmd({kw.arg}=...) describes the kernel a pl.spmd body of ops becomes, but this body "
                "launches pl.at scopes or kernels",
                f"give {kw.arg}= to each `with pl.at(...)` inside (or to the kernel), or write the ops "
                "directly in the pl.spmd body",
            )
        self.nesting += 1
        launch = self.body.spmd(options.block_num, options.sync_start, options.deps)
        with self.body.block() as launched, self.env.loop(), launch:
            self.body.spmd_predicate, self.body.spmd_early = options.predicate, options.allow_early_resolve
            if target is not None:
                self.env.bind(target.id, BlockIndex(target.id), self.span(target))
            if kernel:
                self.spmd_kernel(node.body, call, options)
            else:
                self.stmts(node.body)
        self.nesting -= 1
        self.check_blocks_differ(tuple(launched), call, options.block_num)
        if tid is not None:
            self.name_launch(launched, tid, call)
        for stmt in launched:
            self.body.emit(stmt)

    def reject_hints_in_cluster(self, call: ast.Call, options: SpmdOptions) -> None:
        """A ``pl.spmd`` inside ``pl.cluster()`` launches the cluster's kernels as one task, which
        is no task of the launch's own: a scheduling hint has nothing to ride on."""
        given = {
            "predicate": options.predicate is not None,
            "allow_early_resolve": options.allow_early_resolve,
        }
        for kw in call.keywords:
            if kw.arg is not None and given.get(kw.arg):
                raise self.error(
                    kw,
                    f"{kw.arg}= on a pl.spmd inside a pl.cluster(): the cluster's launch carries no "
                    "such hint",
                    f"move {kw.arg}= out of the cluster (onto a launch of its own), or drop it",
                )

    def name_launch(self, launched: list[Stmt], target: ast.Name, call: ast.Call) -> None:
        """``with pl.spmd(n) as tid:``: bind ``tid`` to the task the block launches (one kernel
        scope or kernel call, at the top of its body)."""
        tasks = [k for k, s in enumerate(launched) if _is_task(s)]
        nested = any(_is_task(s) for s in _nested_stmts(launched))
        if len(tasks) != 1 or nested:
            count = "tasks in a loop or an if" if nested else f"{len(tasks)} tasks"
            raise self.error(
                target,
                f"`pl.spmd(...) as {target.id}` names the launch's one task, but its body launches {count}",
                "launch one pl.at scope or one kernel call in the block, or bind each scope's own task "
                "id with `with pl.at(...) as t:` (and collect several in a pl.array.create(n, pl.TASK_ID))",
            )
        k = tasks[0]
        stmt = launched[k]
        if isinstance(stmt, ScopeStmt):
            if stmt.task is None:
                stmt = launched[k] = replace(
                    stmt, task=Var(self.body.namer.fresh(target.id), TASK_ID, self.span(target))
                )
            task = stmt.task
        else:
            assert isinstance(stmt, Eval) and isinstance(stmt.value, Call)
            name = stmt.value.attrs.get("task")
            if name is None:
                name = self.body.namer.fresh(target.id)
                launched[k] = replace(
                    stmt, value=replace(stmt.value, attrs={**stmt.value.attrs, "task": name})
                )
            task = Var(name, TASK_ID, self.span(target))
        assert task is not None
        self.env.bind(target.id, task, self.span(target))

    def spmd_options(self, call: ast.Call) -> SpmdOptions:
        """The core count and the keyword options of ``pl.spmd(...)``."""
        count_nodes = list(call.args) + [kw.value for kw in call.keywords if kw.arg == "core_num"]
        if len(count_nodes) != 1:
            raise self.error(
                call,
                "pl.spmd() takes one argument: pl.spmd(core_num), then keyword options "
                "(name_hint=, optimizations=, sync_start=, deps=, predicate=)",
                "write `for i in pl.spmd(4):` (or pl.spmd(core_num=4, sync_start=True))",
            )
        options = SpmdOptions(self.spmd_count(count_nodes[0]))
        for kw in call.keywords:
            if kw.arg == "core_num":
                continue
            if kw.arg == "name_hint":
                options.name_hint = self.name_hint(kw.value)
            elif kw.arg == "optimizations":
                options.split, options.slot_num = self.optimizations(kw.value)
            elif kw.arg == "sync_start":
                options.sync_start = self.flag(kw.value, "sync_start=")
            elif kw.arg == "deps":
                options.deps, options.deps_given = self.task_list(kw.value), kw
            elif kw.arg == "predicate":
                options.predicate = self.predicate_spec(kw.value)
            elif kw.arg == "allow_early_resolve":
                options.allow_early_resolve = self.flag(kw.value, "allow_early_resolve=")
            else:
                raise self.error(
                    kw.value if kw.arg else call,
                    f"pl.spmd() got an unexpected keyword argument {kw.arg!r}",
                    unknown_keyword_hint(kw.arg, SPMD_OPTIONS, f"it takes {SPMD_FORM}"),
                )
            if kw.arg in ("name_hint", "optimizations") and options.kernel_only is None:
                options.kernel_only = kw
        return options

    def spmd_count(self, node: ast.expr) -> int:
        count = self.constant(node, "the core count of pl.spmd()")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise self.error(
                node,
                f"pl.spmd() takes a positive int core count, got {count!r}",
                "launch on at least one core group, e.g. pl.spmd(4)",
            )
        return count

    def name_hint(self, node: ast.expr) -> str:
        name = self.constant(node, "name_hint=")
        if not (isinstance(name, str) and name.isidentifier()):
            raise self.error(
                node,
                f"name_hint= must be an identifier string, got {name!r}",
                'write a name made of letters, digits and _, e.g. name_hint="rows"',
            )
        return name

    def spmd_is_kernel(self, body: list[ast.stmt]) -> bool:
        """A body is a kernel of its own unless it opens a scope or calls a kernel."""
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if isinstance(node, ast.With):
                return False
            if isinstance(node, ast.Call) and _dispatches(self.callee(node.func)):
                return False
        return True

    def spmd_kernel(self, body: list[ast.stmt], call: ast.Call, options: SpmdOptions) -> None:
        """The kernel form: the body is one core-group scope, launched on every block."""
        regions = self.scope_regions(body, options.split)
        with self.body.scope() as stmts, self.body.tracking(regions):
            self.stmts(body)
        self.body.emit(
            ScopeStmt(
                tuple(stmts),
                Level.CORE_GROUP,
                options.name_hint,
                options.split,
                options.slot_num,
                deps=options.deps,
                manual=self.body.manual,
                block_num=options.block_num,
                sync_start=options.sync_start,
                span=self.span(call),
                allow_early_resolve=options.allow_early_resolve,
                predicate=options.predicate,
                dumps=self.body.tagged(scope_vars(tuple(stmts))),
            )
        )

    def check_blocks_differ(self, launched: tuple[Stmt, ...], call: ast.Call, blocks: int) -> None:
        """Each scope launched reads its block index, else every block would do the same work; a
        body that launches nothing is an error too."""
        # A cluster dispatches kernels, which are trusted to read their own block index.
        scopes = [
            s for s in walk_stmts(launched) if isinstance(s, ScopeStmt) and s.level is not Level.CLUSTER
        ]
        kernels = [c for s in walk_stmts(launched) for c in _calls(s) if c.op == op.call]
        if not (scopes or kernels):
            raise self.error(
                call,
                f"pl.spmd({blocks}) launches nothing: its body holds no op, no pl.at scope and no "
                "kernel call",
                SAME_WORK_HINT,
            )
        same = next((s for s in scopes if not _reads_block_index(s.body)), None)
        if same is not None and blocks > 1:
            kernel = "its body" if same.span == self.span(call) else "the pl.at scope at this line"
            raise ParseError(
                f"pl.spmd({blocks}) launches {kernel} on {blocks} blocks, but it never reads the block index "
                "(the pl.spmd variable or pl.get_block_idx()): every block would do the same work",
                same.span,
                SAME_WORK_HINT,
            )


def _dispatches(callee: Any, seen: frozenset[int] = frozenset()) -> bool:
    """Whether calling ``callee`` launches work of its own: a kernel, an opaque function and a
    task construct (``pl.submit``) do; an inline helper is spliced in, so only when its own body
    opens a scope or dispatches."""
    if isinstance(callee, Builtin) and callee.name in TASK_CONSTRUCTS:
        return True
    if not isinstance(callee, KernelFunction):
        return False
    if callee.kind is not JitKind.inline:
        return True
    if id(callee) in seen:
        return False  # a cycle: the parser reports it at the call
    names = callee.names
    for node in ast.walk(callee.source.tree):
        if isinstance(node, ast.With):
            return True
        if isinstance(node, ast.Call) and _dispatches(_named(names, node.func), seen | {id(callee)}):
            return True
    return False


def _named(names: GlobalNames, func: ast.expr) -> Any:
    """What a call's function names in a helper's module (a name, then attributes), if anything."""
    path: list[str] = []
    while isinstance(func, ast.Attribute):
        path.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    found, value = names.resolve((func.id, *path))
    return value if found else None


def _is_task(stmt: Stmt) -> bool:
    """A statement that submits a task: a kernel scope, or a kernel call."""
    if isinstance(stmt, ScopeStmt):
        return True
    return isinstance(stmt, Eval) and isinstance(stmt.value, Call) and stmt.value.op == op.call


def _nested_stmts(body: list[Stmt]) -> list[Stmt]:
    """The statements inside the control flow of ``body`` (not inside scopes: a scope's body is
    its kernel's)."""
    return [
        inner
        for stmt in body
        if not isinstance(stmt, ScopeStmt)
        for nested in nested_bodies(stmt)
        for inner in walk_stmts(nested)
    ]


def scope_vars(body: tuple[Stmt, ...]) -> list[Var]:
    """The variables a scope's body uses (its kernel's arguments come from these)."""
    return [
        e
        for s in walk_stmts(body)
        for x in (*stmt_exprs(s), *stmt_end_exprs(s))
        for e in walk_expr(x)
        if isinstance(e, Var)
    ]


def _calls(stmt: Stmt) -> list[Call]:
    return [e for x in stmt_exprs(stmt) for e in walk_expr(x) if isinstance(e, Call)]


def _reads_block_index(body: tuple[Stmt, ...]) -> bool:
    return any(c.op == op.get_block_idx for s in walk_stmts(body) for c in _calls(s))
