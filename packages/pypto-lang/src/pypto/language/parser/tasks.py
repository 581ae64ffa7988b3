"""The task-graph constructs of an orchestration body: ``deps=`` lists (task ids, ``pl.TASK_ID``
arrays and their elements), ``predicate=``, ``dumps=``, ``pl.submit`` / ``pl.spmd_submit``,
``pl.system.task_dummy``, ``pl.no_dep(t)`` at a kernel-call argument and ``pl.dump_tag(t)``.

They are read from the AST, not evaluated: ``predicate=(row_count[e] > 0)`` is a spec the
scheduler evaluates at dispatch, and a ``deps=`` entry must be a task id *name* (or an element of
a task id array), never a value reached by indexing a Python tuple.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any

from pypto.ir import (
    TASK_ID,
    ArrayType,
    Call,
    DataType,
    Expr,
    Predicate,
    PyptoError,
    ScalarType,
    TensorType,
    Var,
    make_call,
)
from pypto.ir.ops import array as array_ops
from pypto.ir.ops import system
from pypto.ir.tasks import PREDICATE_COMPARISONS
from pypto.language.builtins import Builtin, dump_tag, no_dep
from pypto.language.kernel import KernelFunction
from pypto.language.parser.exprs import ExprParser
from pypto.language.parser.values import KWARGS_HINT, describe_value, is_number, number

# The statements a call of these builtins is (each read from its AST, see TaskParser.task_construct).
TASK_CONSTRUCTS = ("submit", "spmd_submit", "system.task_dummy")
# The Python comparison node of each predicate comparison.
_COMPARE_SYMBOLS = {ast.Eq: "==", ast.NotEq: "!=", ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<="}
PREDICATE_FORM = "predicate=(row_count[e] > 0)"
PREDICATE_HINT = (
    f"write one comparison of a tensor element with an int literal, e.g. {PREDICATE_FORM} "
    f"(one of {' '.join(PREDICATE_COMPARISONS)}); reduce a richer condition to one gate value in a "
    "prior kernel and predicate on that"
)
DEPS_HINT = (
    "bind the task id to a name and pass the name: `out, tid = pl.submit(...)` or "
    "`with pl.at(...) as tid:`, then deps=[tid]; collect several in an array: "
    "tids = pl.array.create(n, pl.TASK_ID); tids[i] = tid; deps=[tids]"
)
SUBMIT_FORM = "out, tid = pl.submit(self.kernel, *args, deps=[...])"
SUBMIT_OPTIONS = ("deps", "dumps", "allow_early_resolve", "predicate")
SPMD_SUBMIT_OPTIONS = (*SUBMIT_OPTIONS, "core_num", "sync_start")


class SubmitResult(tuple[Any, ...]):
    """What ``pl.submit`` gives: the kernel's returned tensors, then the task id (a flat tuple)."""

    kernel: str
    results: int


def submit_result(values: tuple[Any, ...], kernel: str) -> SubmitResult:
    result = SubmitResult(values)
    result.kernel, result.results = kernel, len(values) - 1
    return result


@dataclass(frozen=True)
class NoDep:
    """``pl.no_dep(t)`` written as a kernel-call argument: ``t``, whose tracking is off for the call."""

    value: Var


def is_self_method(node: ast.expr) -> bool:
    """``self.<name>``: how a ``@pl.program`` function names another one."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


class TaskParser(ExprParser):
    """The task-graph constructs of :class:`~pypto.language.parser.stmts.StmtParser`."""

    # ------------------------------------------------------------ deps=

    def literal_list(self, node: ast.expr, what: str) -> list[ast.expr]:
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, f"{what} must be a literal list", f"write the list in place: {what}[...]")
        return node.elts

    def task_list(self, node: ast.expr, what: str = "deps=") -> tuple[Var, ...]:
        """``deps=[t0, tids, tids[i]]``: task ids, ``pl.TASK_ID`` arrays (every id they hold) and
        array elements (read here, into a name); a comprehension over a compile-time range
        (``[tids[k] for k in range(4)]``) lists its elements."""
        if isinstance(node, ast.ListComp):
            return self.task_comprehension(node, what)
        return tuple(self.task_entry(elt, what) for elt in self.literal_list(node, what))

    def task_entry(self, elt: ast.expr, what: str) -> Var:
        """One ``deps=`` entry: a name bound to a task id or a task id array, or an array element."""
        if isinstance(elt, ast.Subscript) and isinstance(elt.value, ast.Name):
            array = self.expr(elt.value)
            if _task_array(array):
                ctx = self.op_context(elt, f"{ast.unparse(elt)} in {what}")
                element = ctx.call(array_ops.get_element, [array, self.element_index(elt, ctx)])
                return self.body.assign(f"{elt.value.id}_elem", element, self.span(elt))
        value = self.expr(elt) if isinstance(elt, ast.Name) else None
        if isinstance(value, Var) and (value.type == TASK_ID or _task_array(value)):
            return value
        got = describe_value(value) if isinstance(elt, ast.Name) else f"`{ast.unparse(elt)}`"
        if isinstance(elt, ast.Constant):
            got = describe_value(elt.value)
        if isinstance(value, SubmitResult):
            got = f"'{ast.unparse(elt)}', the whole result of pl.submit (its tensors, then its task id)"
        raise self.error(
            elt,
            f"{what} entries must be a TaskId variable (or a pl.TASK_ID array, or one of its elements), "
            f"got {got}",
            DEPS_HINT,
        )

    def task_comprehension(self, node: ast.ListComp, what: str) -> tuple[Var, ...]:
        """``[tids[k] for k in range(n)]`` with ``n`` known at compile time: one entry per ``k``."""
        gen = node.generators[0] if len(node.generators) == 1 else None
        if gen is None or gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name):
            raise self.error(
                node,
                f"{what} takes a list, or one comprehension `[tids[k] for k in range(n)]` without if",
                f"list the task ids: {what}[t0, t1], or pass the whole array: {what}[tids]",
            )
        values = self.comprehension_range(gen.iter, what)
        if not isinstance(values, (range, list, tuple)):
            raise self.error(
                gen.iter,
                f"a {what} comprehension runs over a compile-time range, got {describe_value(values)}",
                f"write [tids[k] for k in range(n)] with n a number, or pass the array itself: {what}[tids]",
            )
        entries: list[Var] = []
        with self.env.loop():
            for value in values:
                self.env.carry(gen.target.id, value, self.span(gen.target))
                entries.append(self.task_entry(node.elt, what))
        return tuple(entries)

    def comprehension_range(self, node: ast.expr, what: str) -> Any:
        """What a ``deps=`` comprehension runs over: ``range(...)`` of compile-time ints (Python's
        own range, run here), or a compile-time tuple or list."""
        if isinstance(node, ast.Call) and self.callee(node.func) is builtins.range and not node.keywords:
            bounds = [
                self.constant(a, f"a bound of the range a {what} comprehension runs over") for a in node.args
            ]
            if not all(type(b) is int for b in bounds) or not 1 <= len(bounds) <= 3:
                raise self.error(
                    node,
                    f"the range of a {what} comprehension takes 1 to 3 ints",
                    "write [tids[k] for k in range(n)]",
                )
            return range(*bounds)
        return self.constant(node, f"the range a {what} comprehension runs over")

    def tensor_list(self, node: ast.expr, what: str = "no_dep_args=") -> tuple[Var, ...]:
        """``no_dep_args=[x, y]`` / ``dumps=[x]``: tensors of the orchestration body."""
        tensors = []
        for elt in self.literal_list(node, what):
            value = self.expr(elt)
            if not (isinstance(value, Var) and isinstance(value.type, TensorType)):
                raise self.error(
                    elt,
                    f"{what} takes tensors the task uses, got {describe_value(value)}",
                    "name a tensor parameter or a pl.create_tensor(...) result",
                )
            tensors.append(value)
        return tuple(tensors)

    # ------------------------------------------------------------ predicate=

    def predicate_spec(self, node: ast.expr) -> Predicate:
        """``predicate=(tensor[indices] OP int)``, matched as written: the scheduler reads the
        element when it dispatches the task."""
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            raise self.error(
                node, f"predicate= takes one comparison, got `{ast.unparse(node)}`", PREDICATE_HINT
            )
        left, right, op = node.left, node.comparators[0], type(node.ops[0])
        if op not in _COMPARE_SYMBOLS:
            raise self.error(
                node,
                f"predicate= compares with ==, !=, >, <, >= or <=, got `{ast.unparse(node)}`",
                PREDICATE_HINT,
            )
        if not isinstance(left, ast.Subscript):
            raise self.error(
                left, f"predicate= compares one tensor element, got `{ast.unparse(left)}`", PREDICATE_HINT
            )
        tensor = self.expr(left.value)
        if not (isinstance(tensor, Var) and isinstance(tensor.type, TensorType)):
            raise self.error(
                left.value,
                f"predicate= reads an element of a tensor, got {describe_value(tensor)}",
                PREDICATE_HINT,
            )
        t = tensor.type
        if not (t.dtype.is_integer or t.dtype.is_bool):
            raise self.error(
                left.value,
                f"predicate= compares an integer or BOOL element, but {tensor.name} is {t.dtype.name}",
                "write the gate value into an INT32 tensor in a prior kernel and predicate on that",
            )
        dims = left.slice.elts if isinstance(left.slice, ast.Tuple) else [left.slice]
        if len(dims) != len(t.shape):
            raise self.error(
                left,
                f"predicate= reads one element: {tensor.name} has {len(t.shape)} dim(s), not {len(dims)}",
                f"give one index per dimension, e.g. {tensor.name}[{', '.join(['0'] * len(t.shape))}]",
            )
        indices = tuple(self.predicate_index(d) for d in dims)
        return Predicate(tensor.name, indices, _COMPARE_SYMBOLS[op], self.predicate_literal(right))

    def predicate_index(self, node: ast.expr) -> str | int:
        """One index of the predicate's element: an int, or an integer scalar of the orchestration
        (named: the predicate refers to it by name)."""
        if isinstance(node, ast.Slice):
            raise self.error(node, "predicate= reads one element, not a slice", PREDICATE_HINT)
        value = self.expr(node)
        if is_number(value) and type(number(value)) is int:
            return int(number(value))
        t = value.type if isinstance(value, Expr) else None
        if not (isinstance(t, ScalarType) and t.dtype.is_integer):
            raise self.error(
                node, f"a predicate= index is an integer, got {describe_value(value)}", PREDICATE_HINT
            )
        if not isinstance(value, Var):
            value = self.body.assign("pred_index", value, self.span(node))
        return value.name

    def predicate_literal(self, node: ast.expr) -> int:
        """The right side of the comparison: an int literal (a negative one too)."""
        literal = node
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            literal, sign = node.operand, -1 if isinstance(node.op, ast.USub) else 1
        value = literal.value if isinstance(literal, ast.Constant) else None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(
                node, f"predicate= compares with an int literal, got `{ast.unparse(node)}`", PREDICATE_HINT
            )
        return sign * value

    # ------------------------------------------------------------ pl.submit / pl.spmd_submit

    def task_construct(self, callee: Builtin, node: ast.Call) -> Any:
        """A call of ``pl.submit``, ``pl.spmd_submit`` or ``pl.system.task_dummy``."""
        if callee.name == "system.task_dummy":
            return self.task_dummy(node)
        return self.submit(node, spmd=callee.name == "spmd_submit")

    def control_plane(self, node: ast.Call, what: str) -> None:
        """``what`` submits a task: it is written in the orchestration, outside scopes and kernels."""
        if self.body.on_device:
            raise self.error(
                node,
                f"{what} submits a task from the orchestration: it cannot stand in kernel code",
                f"write {what} in the Orchestration function (or @pl.jit body), outside `with pl.at(...)`",
            )

    def submit(self, node: ast.Call, spmd: bool) -> SubmitResult:
        """``out, tid = pl.submit(self.kernel, *args, deps=, dumps=, allow_early_resolve=,
        predicate=)`` (``pl.spmd_submit`` also takes ``core_num=`` and ``sync_start=``): the
        kernel call as a task; the kernel's returned tensors, then the task id."""
        what = "pl.spmd_submit" if spmd else "pl.submit"
        self.control_plane(node, f"{what}(...)")
        if not node.args or not is_self_method(node.args[0]):
            raise self.error(
                node.args[0] if node.args else node,
                f"{what}(...) first argument must be a self.<kernel> method reference",
                f"{what} launches a kernel of the enclosing @pl.program: {SUBMIT_FORM}; in a @pl.jit "
                "function write `with pl.at(..., deps=[...]) as tid:` (or `with pl.spmd(n, deps=[...]) "
                "as tid:` for several blocks)",
            )
        if self.body.block_num > 1:
            raise self.error(
                node,
                f"{what} inside a pl.spmd block: the block already launches each kernel on its blocks",
                "call the kernel plainly inside the pl.spmd block, or write pl.spmd_submit(self.kernel, "
                "..., core_num=n) outside it",
            )
        callee = self.expr(node.args[0])
        if not isinstance(callee, KernelFunction):
            raise self.error(
                node.args[0],
                f"{what}(...) first argument must be a self.<kernel> method reference, got "
                f"{describe_value(callee)}",
                SUBMIT_FORM,
            )
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, f"{what}(...) takes the kernel's arguments one by one", SUBMIT_FORM)
        args = [self.call_argument(a) for a in node.args[1:]]
        known = SPMD_SUBMIT_OPTIONS if spmd else SUBMIT_OPTIONS
        options = {kw.arg: kw for kw in node.keywords if kw.arg is not None and kw.arg in known}
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, f"{what}(...) takes no **kwargs", SUBMIT_FORM)
            if kw.arg not in options:
                kwargs[kw.arg] = self.call_argument(kw.value)
        task = Var(self.body.namer.fresh("tid"), TASK_ID, self.span(node))
        attrs = self.submit_attrs(node, what, options, args, spmd)
        attrs["task"] = task.name
        results = self.calls.call_kernel(self, callee, args, kwargs, node, attrs)
        values = () if results is None else results if isinstance(results, tuple) else (results,)
        return submit_result((*values, task), callee.name)

    def submit_attrs(
        self, node: ast.Call, what: str, options: dict[str, ast.keyword], args: list[Any], spmd: bool
    ) -> dict[str, Any]:
        """The call attrs the keyword options of a submit give."""
        attrs: dict[str, Any] = {}
        if "deps" in options:
            deps = self.task_list(options["deps"].value)
            if deps:
                attrs["deps"] = tuple(v.name for v in deps)
        if "dumps" in options:
            passed = {id(a.value if isinstance(a, NoDep) else a) for a in args}
            dumps = self.tensor_list(options["dumps"].value, "dumps=")
            for tensor, elt in zip(dumps, self.literal_list(options["dumps"].value, "dumps="), strict=True):
                if id(tensor) not in passed:
                    raise self.error(
                        elt,
                        f"dumps= names {ast.unparse(elt)}, which is not a positional argument of this {what}",
                        "list only tensors the submit passes the kernel, in its positional arguments",
                    )
            if dumps:
                attrs["dumps"] = tuple(v.name for v in dumps)
        early = options.get("allow_early_resolve")
        if early is not None and self.flag(early.value, "allow_early_resolve="):
            attrs["allow_early_resolve"] = True
        if "predicate" in options:
            attrs["predicate"] = self.predicate_spec(options["predicate"].value)
        if spmd:
            if "core_num" not in options:
                raise self.error(
                    node,
                    "pl.spmd_submit(...) needs core_num=N: the number of blocks, a required keyword",
                    "pass core_num=N after the kernel's arguments: "
                    "out, tid = pl.spmd_submit(self.kernel, x, out, core_num=8)",
                )
            core_num = self.constant(options["core_num"].value, "core_num=")
            if not isinstance(core_num, int) or isinstance(core_num, bool) or core_num < 1:
                raise self.error(
                    options["core_num"].value,
                    f"core_num= takes a positive int, got {core_num!r}",
                    "launch on at least one block, e.g. core_num=8",
                )
            if core_num > 1:
                attrs["block_num"] = core_num
            if "sync_start" in options and self.flag(options["sync_start"].value, "sync_start="):
                attrs["sync_start"] = True
        return attrs

    def flag(self, node: ast.expr, what: str) -> bool:
        value = self.constant(node, what)
        if not isinstance(value, bool):
            raise self.error(
                node, f"{what} takes True or False, got {describe_value(value)}", f"write {what}True"
            )
        return value

    # ------------------------------------------------------------ pl.system.task_dummy

    def task_dummy(self, node: ast.Call) -> Call:
        """``gate = pl.system.task_dummy(deps=[...])``: a join with no work; its task id."""
        self.control_plane(node, "pl.system.task_dummy(...)")
        others = [kw for kw in node.keywords if kw.arg != "deps"]
        if node.args or others:
            bad = node.args[0] if node.args else others[0]
            raise self.error(
                bad,
                "pl.system.task_dummy() takes only deps=[...]",
                "write gate = pl.system.task_dummy(deps=[tid_a, tid_b]), then deps=[gate] on later tasks",
            )
        given = [kw for kw in node.keywords if kw.arg == "deps"]
        deps = self.task_list(given[0].value) if given else ()
        return make_call(system.task_dummy, (), {"deps": tuple(v.name for v in deps)}, self.span(node))

    # ------------------------------------------------------------ calls

    def call_node(self, callee: Any, node: ast.Call) -> Any:
        """A call: the task constructs are read from their AST; a kernel call's arguments may be
        ``pl.no_dep(t)`` marks, and its task keywords (``deps=``, ``predicate=``, the printed
        form's) are read as such."""
        if isinstance(callee, Builtin) and callee.name in TASK_CONSTRUCTS:
            return self.task_construct(callee, node)
        if callee is no_dep:
            raise self.error(
                node,
                "pl.no_dep(t) marks an argument of a kernel call: it stands in the call itself",
                "write it where the kernel takes the tensor: self.kernel(x, pl.no_dep(out)); in a @pl.jit "
                "body give the pl.at scope no_dep_args=[out]",
            )
        if callee is dump_tag:
            self.dump_tag([self.expr(a) for a in node.args], node.keywords, node)
            return None
        if not isinstance(callee, KernelFunction):
            return super().call_node(callee, node)
        params = set(callee.python_signature.parameters)
        args = [self.call_argument(a) for a in node.args]
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(
                    kw.value, "unsupported Python construct in a kernel: **kwargs in a call", KWARGS_HINT
                )
            if kw.arg in params:
                kwargs[kw.arg] = self.call_argument(kw.value)
            else:
                kwargs[kw.arg] = self.task_keyword(kw)
        return self.call(callee, args, kwargs, node)

    def task_keyword(self, kw: ast.keyword) -> Any:
        """A keyword of a kernel call that is no parameter: a task attribute as printed IR writes
        it (``task='t0'``, ``deps=['t0']``, ``predicate=(t[0] > 0)``), or a user's ``deps=[t0]``."""
        strings = isinstance(kw.value, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in kw.value.elts
        )
        if kw.arg == "predicate":
            return self.predicate_spec(kw.value)
        if kw.arg == "deps" and not strings:
            return tuple(v.name for v in self.task_list(kw.value))
        if kw.arg == "dumps" and not strings:
            raise self.error(
                kw.value,
                "dumps= is not taken by a plain kernel call: the call is fire-and-forget",
                "mark the tensors with pl.dump_tag(t) before the call, or submit it with "
                "pl.submit(self.kernel, ..., dumps=[...])",
            )
        return self.expr(kw.value)

    # ------------------------------------------------------------ pl.no_dep / pl.dump_tag

    def call_argument(self, node: ast.expr) -> Any:
        """A kernel-call argument: ``pl.no_dep(t)`` is a :class:`NoDep` mark here, else the value."""
        if isinstance(node, ast.Call) and self.names_no_dep(node.func):
            if len(node.args) != 1 or node.keywords:
                raise self.error(
                    node, "pl.no_dep takes one tensor: pl.no_dep(t)", "wrap one argument: pl.no_dep(t)"
                )
            value = self.expr(node.args[0])
            if not (isinstance(value, Var) and isinstance(value.type, TensorType)):
                raise self.error(
                    node,
                    f"pl.no_dep marks a tensor argument, got {describe_value(value)}",
                    "wrap a tensor the kernel takes: self.kernel(pl.no_dep(out), ...)",
                )
            return NoDep(value)
        return self.expr(node)

    def names_no_dep(self, func: ast.expr) -> bool:
        return self.callee(func) is no_dep

    def callee(self, func: ast.expr) -> Any:
        """What a call's function names, if it is a name or an attribute known before the body runs."""
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return None
        try:
            return self.expr(func)
        except PyptoError:
            return None  # a name the body binds, or no name at all: not a kernel

    def dump_tag(self, args: list[Any], kwargs: list[ast.keyword], node: ast.Call) -> None:
        """``pl.dump_tag(t)``: mark ``t`` so every later task taking it dumps it."""
        if self.body.on_device:
            raise self.error(
                node,
                "pl.dump_tag(t) marks a tensor where tasks are dispatched: it cannot stand in kernel code",
                "write it in the Orchestration function (or an inline helper of it), outside pl.at scopes",
            )
        if len(args) != 1 or kwargs:
            raise self.error(
                node,
                f"pl.dump_tag takes one tensor, got {len(args)} argument(s)"
                + (f" and the keyword(s) {', '.join(str(k.arg) for k in kwargs)}" if kwargs else ""),
                "mark one tensor per call: pl.dump_tag(q); pl.dump_tag(k)",
            )
        if not isinstance(node.args[0], (ast.Name, ast.Constant)):
            raise self.error(
                node.args[0],
                f"pl.dump_tag marks a tensor by its name, got the expression {ast.unparse(node.args[0])}",
                f"name it first and mark the name: v = {ast.unparse(node.args[0])}; pl.dump_tag(v)",
            )
        if not (isinstance(args[0], Var) and isinstance(args[0].type, TensorType)):
            raise self.error(
                node.args[0],
                f"pl.dump_tag takes a tensor, got {describe_value(args[0])}",
                "mark a tensor the tasks take: a tensor parameter or a pl.create_tensor(...) result",
            )
        if args[0] not in self.body.dump_tags:
            self.body.dump_tags.append(args[0])


def _task_array(value: Any) -> bool:
    return (
        isinstance(value, Var) and isinstance(value.type, ArrayType) and value.type.dtype is DataType.TASK_ID
    )
