"""Scopes and regions: ``with pl.at(...)`` and ``for aiv_id in pl.split_aiv(2, mode=...)``.

A core-group scope (or an ``@pl.jit.incore`` body) is read ahead for its ``pl.split_aiv``
regions before it is parsed, so the region rules hold from its first statement on.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from pypto.ir import INDEX, Level, PyptoError, ScopeStmt, SplitAivRegion, SplitMode, Var
from pypto.language.builtins import Builtin
from pypto.language.options import CrossCoreSlot, Split
from pypto.language.parser.exprs import ExprParser
from pypto.language.parser.opcall import SCOPE_HINT
from pypto.language.parser.regions import REGION_FORM, RegionMark, ScopeRegions
from pypto.language.parser.values import describe_value

UNSUPPORTED_SCOPE_ARGS = ("deps", "no_dep_args", "allow_early_resolve")
# pl.split_aiv(n, mode=pl.SplitMode.NONE), for binding the AST of its arguments.
SPLIT_AIV_SIGNATURE = inspect.Signature(
    [
        inspect.Parameter("n", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("mode", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
    ]
)


class ScopeParser(ExprParser):
    """The scope and region statements of :class:`~pypto.language.parser.stmts.StmtParser`."""

    nesting: int  # loops, scopes and regions open; kept by StmtParser
    stmts: Callable[[list[ast.stmt]], None]

    def function_body(self, nodes: list[ast.stmt]) -> None:
        """Parse a function's statements; an ``@pl.jit.incore`` body is one core-group scope."""
        regions = self.scope_regions(nodes, None) if self.body.kernel else None
        with self.body.tracking(regions):
            self.stmts(nodes)

    # ------------------------------------------------------------ pl.at

    def visit_With(self, node: ast.With) -> None:
        if len(node.items) != 1:
            raise self.error(node, "one pl.at(...) per with statement")
        item = node.items[0]
        call = item.context_expr
        callee = self.expr(call.func) if isinstance(call, ast.Call) else None
        if not (isinstance(call, ast.Call) and isinstance(callee, Builtin) and callee.name == "at"):
            raise self.error(call, "a with statement in a kernel opens a scope: `with pl.at(level=...):`")
        if item.optional_vars is not None:
            raise self.error(item.optional_vars, "`pl.at(...) as tid` (task ids) is not supported yet")
        if self.body.kernel:
            raise self.error(
                call, "an @pl.jit.incore body already runs on one core group: drop the pl.at scope"
            )
        if self.body.in_scope:
            raise self.error(call, "pl.at scopes do not nest", "close the outer scope first")
        level, name_hint, split, slot_num = self.scope_options(call)
        regions = self.scope_regions(node.body, split) if level is Level.CORE_GROUP else None
        self.nesting += 1
        with self.body.scope(), self.body.tracking(regions), self.body.block() as stmts:
            self.stmts(node.body)
        self.nesting -= 1
        self.body.emit(ScopeStmt(tuple(stmts), level, name_hint, split, slot_num, self.span(call)))

    def scope_options(self, call: ast.Call) -> tuple[Level, str | None, SplitMode | None, int | None]:
        if call.args:
            raise self.error(
                call.args[0], "pl.at() takes keyword arguments: pl.at(level=pl.Level.CORE_GROUP)"
            )
        level, name_hint, split, slot_num = Level.CORE_GROUP, None, None, None
        for kw in call.keywords:
            if kw.arg == "level":
                level = self.constant(kw.value, "level=")
                if not isinstance(level, Level):
                    raise self.error(kw.value, f"level= takes a pl.Level member, got {describe_value(level)}")
            elif kw.arg == "name_hint":
                name_hint = self.constant(kw.value, "name_hint=")
                if not (isinstance(name_hint, str) and name_hint.isidentifier()):
                    raise self.error(kw.value, f"name_hint= must be an identifier string, got {name_hint!r}")
            elif kw.arg == "optimizations":
                split, slot_num = self.optimizations(kw.value)
            elif kw.arg in UNSUPPORTED_SCOPE_ARGS:
                raise self.error(kw.value, f"pl.at({kw.arg}=...) is not supported yet")
            else:
                raise self.error(
                    kw.value if kw.arg else call, f"pl.at() got an unexpected keyword argument {kw.arg!r}"
                )
        return level, name_hint, split, slot_num

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
                raise self.error(elt, f"{ast.unparse(elt)} is given twice in optimizations=")
            else:
                raise self.error(
                    elt,
                    "optimizations= holds pl.split(...) and pl.cross_core_slot(...), "
                    f"got {describe_value(option)}",
                )
        return split, slot_num

    # ------------------------------------------------------------ pl.split_aiv

    def scope_regions(self, nodes: list[ast.stmt], split: SplitMode | None) -> ScopeRegions:
        """The regions of a core-group scope, read ahead; ``split`` is its ``pl.split`` mode."""
        found = sorted(
            (n for root in nodes for n in ast.walk(root) if isinstance(n, ast.For) and self.is_region(n)),
            key=lambda n: (n.lineno, n.col_offset),
        )
        if found and split is not None:
            raise self.error(
                found[0].iter,
                "pl.split and pl.split_aiv regions are mutually exclusive in one scope",
                "drop pl.split(...) from optimizations= and place the transfers yourself, or drop "
                "the regions and let pl.split insert them",
            )
        marks = tuple(RegionMark((n.lineno, n.col_offset), self.folded_mode(n.iter)) for n in found)
        return ScopeRegions(self.source, marks)

    def is_region(self, node: ast.For) -> bool:
        """Whether ``node`` iterates over ``pl.split_aiv(...)`` (by name lookup only)."""
        call = node.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))):
            return False
        try:
            callee = self.expr(call.func)
        except PyptoError:
            return False
        return isinstance(callee, Builtin) and callee.name == "split_aiv"

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
            raise self.error(call, "unsupported Python construct in a kernel: **kwargs in a call")
        try:
            bound = SPLIT_AIV_SIGNATURE.bind(*call.args, **{kw.arg: kw.value for kw in call.keywords})
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
        with self.env.lane(node.target.id, lane, lane.span), regions.region(mode), self.body.block() as stmts:
            self.stmts(node.body)
        self.nesting -= 1
        self.body.emit(SplitAivRegion(lane, tuple(stmts), mode, self.span(call)))

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
