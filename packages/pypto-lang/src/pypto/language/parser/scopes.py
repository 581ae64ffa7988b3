"""Scopes and regions: ``with pl.at(...)`` and ``for aiv_id in pl.split_aiv(2, mode=...)``.

A core-group scope (or an ``@pl.jit.incore`` body) is read ahead for its ``pl.split_aiv``
regions before it is parsed, so the region rules hold from its first statement on.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    INDEX,
    TASK_ID,
    Level,
    PyptoError,
    ScopeStmt,
    SplitAivRegion,
    SplitMode,
    Stmt,
    Var,
)
from pypto.ir.sides import names_boundary
from pypto.language.builtins import Builtin
from pypto.language.options import AUTO, CrossCoreSlot, ScopeMode, Split
from pypto.language.parser.opcall import SCOPE_HINT
from pypto.language.parser.regions import (
    REGION_FORM,
    RegionMark,
    ScopeRegions,
    check_per_lane,
)
from pypto.language.parser.spmd import SpmdParser, scope_vars
from pypto.language.parser.values import describe_value, unknown_keyword_hint

SCOPE_ARGS = ("level", "optimizations", "name_hint", "deps", "no_dep_args", "dumps", "allow_early_resolve")
SCOPE_ARGS_HINT = (
    "pl.at takes level=, optimizations=[...], name_hint=, deps=[...], no_dep_args=[...], dumps=[...] "
    "and allow_early_resolve="
)
SPLIT_AIV_KWARGS_HINT = "write the arguments out: pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)"
LEVELS = ", ".join(f"pl.Level.{m.name}" for m in Level)
# pl.split_aiv(n, mode=pl.SplitMode.NONE), for binding the AST of its arguments.
SPLIT_AIV_SIGNATURE = inspect.Signature(
    [
        inspect.Parameter("n", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("mode", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
    ]
)


@dataclass
class ScopeOptions:
    """The keyword arguments of one ``pl.at(...)``."""

    level: Level = Level.CORE_GROUP
    name_hint: str | None = None
    split: SplitMode | None = None
    slot_num: int | None = None
    deps: tuple[Var, ...] = ()
    no_dep_args: tuple[Var, ...] = ()
    dumps: tuple[Var, ...] = ()
    dump_nodes: tuple[ast.expr, ...] = ()  # where each of ``dumps`` is written, for errors
    allow_early_resolve: bool = False


class ScopeParser(SpmdParser):
    """The scope and region statements of :class:`~pypto.language.parser.stmts.StmtParser`."""

    nesting: int  # loops, scopes and regions open; kept by StmtParser
    stmts: Callable[[list[ast.stmt]], None]
    kernel: Any  # the function being parsed (its auto_scope= decides who places AUTO scopes)

    def function_body(self, nodes: list[ast.stmt]) -> None:
        """Parse a function's statements; an ``@pl.jit.incore`` body is one core-group scope."""
        regions = self.scope_regions(nodes, None) if self.body.kernel else None
        with self.body.tracking(regions):
            self.stmts(nodes)

    # ------------------------------------------------------------ pl.at

    def visit_With(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise self.error(
                node.items[1].context_expr,
                "one pl.at(...) per with statement",
                "write one with statement per context: pl.at scopes one after another, each inside "
                "`with pl.manual_scope():` or `for i in pl.spmd(n):` if needed",
            )
        item = node.items[0]
        call = item.context_expr
        if self.body.host:
            raise self.error(
                node,
                "a HOST function runs on the host: it opens no scopes and launches no kernels itself",
                "put the scope in a @pl.jit chip orchestration and dispatch that to each rank "
                "(chip(..., device=r))",
            )
        callee = self.expr(call.func) if isinstance(call, ast.Call) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(callee, Builtin)
            and callee.name in ("manual_scope", "scope")
        ):
            self.runtime_scope(node, call, callee.name)
            return
        if isinstance(call, ast.Call) and isinstance(callee, Builtin) and callee.name == "spmd":
            self.visit_spmd(node, call)
            return
        if not (
            isinstance(call, ast.Call) and isinstance(callee, Builtin) and callee.name in ("at", "cluster")
        ):
            raise self.error(
                call,
                "a with statement in a kernel opens a scope: `with pl.at(level=...):` "
                "(or `with pl.manual_scope():` / `with pl.spmd(n):` around scopes)",
                "kernels take no other context managers: write `with pl.at(level=pl.Level.CORE_GROUP):`",
            )
        if self.body.kernel:
            raise self.error(
                call,
                "an @pl.jit.incore body already runs on one core group: drop the pl.at scope",
                "remove the `with pl.at(...):` line and dedent its body; the whole @pl.jit.incore body "
                "is one scope",
            )
        if self.body.in_scope:
            raise self.error(call, "pl.at scopes do not nest", "close the outer scope first")
        options = self.scope_options(call, cluster=callee.name == "cluster")
        task = self.task_var(item.optional_vars)
        if options.level is Level.CLUSTER:
            self.cluster(node, call, options, task)
            return
        regions = self.scope_regions(node.body, options.split) if options.level is Level.CORE_GROUP else None
        self.nesting += 1
        with self.body.scope() as stmts, self.body.tracking(regions):
            self.stmts(node.body)
        self.nesting -= 1
        self.emit_scope(node, call, stmts, options, task)

    def emit_scope(
        self, node: ast.With, call: ast.Call, stmts: list[Stmt], options: ScopeOptions, task: Var | None
    ) -> None:
        """Emit the scope of ``with`` statement ``node`` (inside any manual scope or spmd launch),
        then bind its ``as tid``."""
        used = scope_vars(tuple(stmts))
        tagged = self.body.tagged(used)
        self.check_dumps_used(options, used)
        scope = ScopeStmt(
            tuple(stmts),
            options.level,
            options.name_hint,
            options.split,
            options.slot_num,
            task=task,
            deps=(*self.body.spmd_deps, *options.deps),
            no_dep_args=options.no_dep_args,
            manual=self.body.manual,
            block_num=self.body.block_num,
            sync_start=self.body.sync_start,
            span=self.span(call),
            allow_early_resolve=options.allow_early_resolve or self.body.spmd_early,
            predicate=self.body.spmd_predicate,
            dumps=(*options.dumps, *(t for t in tagged if t not in options.dumps)),
        )
        self.body.emit(scope)
        if task is not None:
            assert isinstance(node.items[0].optional_vars, ast.Name)
            self.env.bind(node.items[0].optional_vars.id, task, task.span)

    def check_dumps_used(self, options: ScopeOptions, used: list[Var]) -> None:
        """Each tensor ``dumps=`` names is one the scope's body uses (its task's argument)."""
        given = {id(v) for v in used}
        for tensor, node in zip(options.dumps, options.dump_nodes, strict=True):
            if id(tensor) not in given:
                raise self.error(
                    node,
                    f"dumps= names {ast.unparse(node)}, which this pl.at scope does not use",
                    "list only tensors the scope's body reads or writes: those are its task's arguments",
                )

    def task_var(self, target: ast.expr | None) -> Var | None:
        """The task id ``as tid`` binds, or None; it is bound after the scope's body."""
        if target is None:
            return None
        if not isinstance(target, ast.Name):
            raise self.error(
                target,
                "`pl.at(...) as tid` binds one name to the task id",
                "write `with pl.at(level=pl.Level.CORE_GROUP) as tid:`",
            )
        return Var(self.body.namer.fresh(target.id), TASK_ID, self.span(target))

    def cluster(self, node: ast.With, call: ast.Call, options: ScopeOptions, task: Var | None) -> None:
        """``with pl.cluster():``: the AIC and AIV kernels its body calls run together on one core
        group, sharing its pipes; OutlineScopes makes the body a ``Group`` function."""
        if options.split is not None or options.slot_num is not None or options.allow_early_resolve:
            raise self.error(
                call,
                "a cluster takes name_hint=, deps= and no_dep_args= only",
                "the kernels it calls set up their own pipes: drop optimizations= / allow_early_resolve=",
            )
        outer, self.body.in_cluster = self.body.in_cluster, True
        try:
            with self.body.block() as stmts:  # control-plane code: the kernel calls
                self.stmts(node.body)
        finally:
            self.body.in_cluster = outer
        self.emit_scope(node, call, stmts, options, task)

    def names_auto(self, node: ast.expr) -> bool:
        """Whether ``node`` is the name ``pl.AUTO`` (read without building anything)."""
        return isinstance(node, (ast.Name, ast.Attribute)) and self.expr(node) is AUTO

    def scope_options(self, call: ast.Call, cluster: bool = False) -> ScopeOptions:

        if call.args:
            raise self.error(
                call.args[0],
                "pl.at() takes keyword arguments: pl.at(level=pl.Level.CORE_GROUP)",
                f"name the argument: level={ast.unparse(call.args[0])}",
            )
        options = ScopeOptions(level=Level.CLUSTER) if cluster else ScopeOptions()
        for kw in call.keywords:
            if kw.arg == "level" and cluster:
                raise self.error(
                    kw.value, "pl.cluster() is a level of its own: it takes no level=", "drop level="
                )
            if kw.arg not in (None, "level") and self.names_auto(kw.value):
                continue  # left to the compiler: as if not given
            if kw.arg == "level":
                options.level = self.constant(kw.value, "level=")
                if not isinstance(options.level, Level):
                    raise self.error(
                        kw.value,
                        f"level= takes a pl.Level member, got {describe_value(options.level)}",
                        f"write level=pl.Level.CORE_GROUP (the levels: {LEVELS})",
                    )
            elif kw.arg == "name_hint":
                name_hint = self.constant(kw.value, "name_hint=")
                if not (isinstance(name_hint, str) and name_hint.isidentifier()):
                    raise self.error(
                        kw.value,
                        f"name_hint= must be an identifier string, got {name_hint!r}",
                        'write a name made of letters, digits and _, e.g. name_hint="attention_1"',
                    )
                options.name_hint = name_hint
            elif kw.arg == "optimizations":
                options.split, options.slot_num = self.optimizations(kw.value)
            elif kw.arg == "deps":
                options.deps = self.task_list(kw.value)
            elif kw.arg == "no_dep_args":
                options.no_dep_args = self.tensor_list(kw.value)
            elif kw.arg == "dumps":
                options.dumps = self.tensor_list(kw.value, "dumps=")
                options.dump_nodes = tuple(self.literal_list(kw.value, "dumps="))
            elif kw.arg == "allow_early_resolve":
                options.allow_early_resolve = self.flag(kw.value, "allow_early_resolve=")
            elif kw.arg == "predicate":
                raise self.error(
                    kw.value,
                    "pl.at() has no predicate=: a pl.at scope always runs",
                    "for a predicated task write `with pl.spmd(1, deps=[...], predicate=(t[i] > 0)) as tid:` "
                    "(or pl.submit(self.kernel, ..., predicate=...) in a @pl.program)",
                )
            else:
                raise self.error(
                    kw.value if kw.arg else call,
                    f"pl.at() got an unexpected keyword argument {kw.arg!r}",
                    unknown_keyword_hint(kw.arg, SCOPE_ARGS, SCOPE_ARGS_HINT),
                )
        return options

    def runtime_scope(self, node: ast.With, call: ast.Call, name: str) -> None:
        """``with pl.scope():`` (an AUTO runtime scope: tracking on) or ``with pl.manual_scope():``
        / ``pl.scope(mode=pl.ScopeMode.MANUAL)`` (tracking off: the tasks inside take only their
        ``deps=`` edges, and later tasks take none from them)."""
        manual = name == "manual_scope" or self.scope_mode(call) is ScopeMode.MANUAL
        spelled = "pl.manual_scope()" if manual else "pl.scope()"
        if name == "manual_scope" and (call.args or call.keywords):
            raise self.error(
                call,
                "pl.manual_scope() takes no arguments",
                "write `with pl.manual_scope():` and give the pl.at scopes inside it their deps=[...]",
            )
        if node.items[0].optional_vars is not None:
            raise self.error(
                node.items[0].optional_vars,
                f"{spelled} binds nothing: drop `as ...`",
                "bind task ids on the scopes inside it instead: "
                "`with pl.at(level=pl.Level.CORE_GROUP) as t0:`",
            )
        if self.body.on_device:
            raise self.error(
                call,
                f"{spelled} is a runtime scope of the orchestration: it cannot stand in kernel code",
                f"move `with {spelled}:` to the Orchestration function (or @pl.jit body), around the "
                "`with pl.at(...)` blocks and kernel calls",
            )
        if manual and any(self.body.runtime_scopes):
            raise self.error(
                call,
                "a manual scope cannot nest inside another manual scope (the runtime forbids it)",
                "flatten them: one `with pl.manual_scope():` around all the tasks",
            )
        if not manual:
            self.check_auto_scope(call)
        with self.body.runtime_scope(manual):
            self.stmts(node.body)

    def scope_mode(self, call: ast.Call) -> ScopeMode:
        """The ``mode=`` of ``pl.scope(mode=pl.ScopeMode.MANUAL)`` (AUTO when left out)."""
        given = list(call.args) + [kw.value for kw in call.keywords if kw.arg == "mode"]
        others = [kw for kw in call.keywords if kw.arg != "mode"]
        if len(given) > 1 or others:
            bad = others[0].value if others else given[1]
            raise self.error(
                bad,
                "pl.scope() takes one argument, mode=",
                "write pl.scope() or pl.scope(mode=pl.ScopeMode.MANUAL)",
            )
        if not given:
            return ScopeMode.AUTO
        mode = self.constant(given[0], "mode=")
        if not isinstance(mode, ScopeMode):
            raise self.error(
                given[0],
                f"pl.scope(mode=...) takes a pl.ScopeMode, got {describe_value(mode)}",
                "write mode=pl.ScopeMode.AUTO or mode=pl.ScopeMode.MANUAL",
            )
        return mode

    def check_auto_scope(self, call: ast.Call) -> None:
        """An AUTO scope written by hand: the function must leave scope placement to its author
        (``auto_scope=False``), and it may not stand inside a manual scope."""
        if self.body.manual:
            raise self.error(
                call,
                "an AUTO scope (pl.scope()) cannot nest inside a manual scope (the runtime forbids it)",
                "close the manual scope first, or leave the tasks in it to their deps=",
            )
        if getattr(self.kernel, "auto_scope", True):
            where = getattr(self.kernel, "kind", None)
            decorator = where.value if where is not None else "@pl.function"
            raise self.error(
                call,
                "pl.scope() (mode=AUTO) needs auto_scope=False: by default the compiler places AUTO scopes",
                f"write {decorator}(auto_scope=False) on the function to place them yourself, or use "
                "pl.scope(mode=pl.ScopeMode.MANUAL)",
            )

    def optimizations(self, node: ast.expr) -> tuple[SplitMode | None, int | None]:
        if not isinstance(node, ast.List):
            raise self.error(
                node,
                "optimizations= must be a literal list",
                "write the list in place: optimizations=[pl.split(pl.SplitMode.UP_DOWN), "
                "pl.cross_core_slot(slot_num=2)]",
            )
        split: SplitMode | None = None
        slot_num: int | None = None
        for elt in node.elts:
            option = self.expr(elt)
            if isinstance(option, Split) and split is None:
                split = option.mode
            elif isinstance(option, CrossCoreSlot) and slot_num is None:
                slot_num = option.slot_num
            elif isinstance(option, (Split, CrossCoreSlot)):
                raise self.error(
                    elt,
                    f"{ast.unparse(elt)} is given twice in optimizations=",
                    "keep one pl.split(...) and at most one pl.cross_core_slot(...)",
                )
            else:
                raise self.error(
                    elt,
                    "optimizations= holds pl.split(...) and pl.cross_core_slot(...), "
                    f"got {describe_value(option)}",
                    "write optimizations=[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=2)]",
                )
        return split, slot_num

    # ------------------------------------------------------------ pl.split_aiv

    def scope_regions(self, nodes: list[ast.stmt], split: SplitMode | None) -> ScopeRegions:
        """The regions of a core-group scope, read ahead; ``split`` is its ``pl.split`` mode."""
        found = sorted(
            (
                (n, call)
                for root in nodes
                for n in ast.walk(root)
                if isinstance(n, ast.For) and (call := self.region_call(n)) is not None
            ),
            key=lambda found: (found[0].lineno, found[0].col_offset),
        )
        if found and split is not None:
            raise self.error(
                found[0][1],
                "pl.split and pl.split_aiv regions are mutually exclusive in one scope",
                "drop pl.split(...) from optimizations= and place the transfers yourself, or drop "
                "the regions and let pl.split insert them",
            )
        marks = tuple(RegionMark((n.lineno, n.col_offset), self.folded_mode(call)) for n, call in found)
        return ScopeRegions(self.source, marks, auto_split=split)

    def region_call(self, node: ast.For) -> ast.Call | None:
        """The ``pl.split_aiv(...)`` call ``node`` iterates over (by name lookup only), or None."""
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))):
            return None
        try:
            callee = self.expr(call.func)
        except PyptoError:
            return None
        return call if isinstance(callee, Builtin) and callee.name == "split_aiv" else None

    def folded_mode(self, call: ast.Call) -> SplitMode | None:
        """A region's mode read ahead, when it is a name such as ``pl.SplitMode.UP_DOWN``."""
        try:
            node = self.split_aiv_args(call).get("mode")
            if node is None:
                return SplitMode.NONE
            # Only names are looked up here: evaluating anything else could emit IR.
            mode = self.expr(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        except PyptoError:
            return None
        return mode if isinstance(mode, SplitMode) else None

    def split_aiv_args(self, call: ast.Call) -> dict[str, Any]:
        """The AST of ``pl.split_aiv``'s arguments by parameter name."""
        if any(kw.arg is None for kw in call.keywords):
            raise self.error(
                call, "unsupported Python construct in a kernel: **kwargs in a call", SPLIT_AIV_KWARGS_HINT
            )
        try:
            keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg is not None}
            bound = SPLIT_AIV_SIGNATURE.bind(*call.args, **keywords)
        except TypeError as exc:
            raise self.error(call, f"pl.split_aiv(): {exc}", f"write `{REGION_FORM}:`") from None
        return dict(bound.arguments)

    def visit_region(self, node: ast.For, call: ast.Call) -> None:
        """``for aiv_id in pl.split_aiv(2, mode=...)``: a ``SplitAivRegion``.

        Like a Python ``for``, names bound in the body stay bound after it; the lane does not.
        """
        assert isinstance(node.target, ast.Name)
        regions = self.body.regions
        if regions is None:
            raise self.error(
                call,
                "pl.split_aiv(...) outside a pl.at(level=pl.Level.CORE_GROUP) scope: a region divides "
                "a core group's vector work between its two AIV lanes",
                SCOPE_HINT,
            )
        if regions.current is not None:
            raise self.error(call, "pl.split_aiv regions do not nest", "close the outer region first")
        mode = self.region_mode(call)
        lane = Var(self.body.namer.fresh(node.target.id), INDEX, self.span(node.target))
        self.nesting += 1
        with self.env.lane(node.target.id, lane, lane.span), regions.region(mode) as region:
            region.lane = lane  # a pl.aiv_shard of a tensor loads the lane's share by it
            with self.body.block() as stmts:
                self.stmts(node.body)
        self.nesting -= 1
        body = tuple(stmts)
        if names_boundary(body):
            check_per_lane(body, mode, lane, regions.names)
        self.body.emit(SplitAivRegion(lane, body, mode, self.span(call)))

    def region_mode(self, call: ast.Call) -> SplitMode:
        args = self.split_aiv_args(call)
        n = self.constant(args["n"], "the lane count of pl.split_aiv()")
        if n != 2 or isinstance(n, bool):
            raise self.error(
                args["n"],
                f"pl.split_aiv({n!r}) requires n == 2: a core group has two AIV lanes",
                f"write `{REGION_FORM}:`",
            )
        mode = SplitMode.NONE if args.get("mode") is None else self.constant(args["mode"], "mode=")
        if not isinstance(mode, SplitMode):
            raise self.error(
                args["mode"],
                f"pl.split_aiv() mode= takes a pl.SplitMode, got {describe_value(mode)}",
                "write mode=pl.SplitMode.UP_DOWN, LEFT_RIGHT or NONE",
            )
        return mode
