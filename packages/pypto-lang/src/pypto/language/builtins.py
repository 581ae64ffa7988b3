"""The DSL builtins: ``pl.add``, ``pl.load``, ``pl.at``, ``pl.range``, ``pl.system.syncall``, ...

A builtin is a named marker. The parser recognizes it when it resolves a callee and builds IR
for it; called as plain Python it raises, because a kernel body is parsed, never executed.

The op builtins come from the op registry (:mod:`pypto.language.dslops`): ``pl.<name>`` for each
op written ``pl.<name>(...)``, ``pl.tile.<name>`` / ``pl.tensor.<name>`` for its tile / tensor
form (and under the op's own name, ``pl.tile.create``), ``pl.system.<name>`` for ``system.*``
ops. The others (scopes, loops, ``pl.yield_``) are the statements of the language, listed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from pypto.ir.ops import Elementwise, Level
from pypto.language.device import available_aiv_count, available_cluster_count
from pypto.language.directives import CREATE_L1, TENSOR_DIM
from pypto.language.dslops import DslFunction, dsl_function, dsl_functions
from pypto.language.errors import KernelOnlyError

T = TypeVar("T")

# The statements of the language: name -> (signature, one-line meaning).
STATEMENT_DOCS: dict[str, tuple[str, str]] = {
    "at": (
        "at(level=, optimizations=[...], name_hint=, deps=[...], no_dep_args=[...], dumps=[...], "
        "allow_early_resolve=False) as tid",
        "a scope that becomes one kernel, called as one task",
    ),
    "manual_scope": (
        "manual_scope()",
        "a runtime scope with dependency tracking off: only explicit deps= order the tasks in it",
    ),
    "cluster": (
        "cluster(name_hint=, deps=[...], no_dep_args=[...]) as tid",
        "co-schedules the AIC kernel and the AIV kernel its body calls on one core group, as a Group "
        "(the same as pl.at(level=pl.Level.CLUSTER))",
    ),
    "spmd": (
        "spmd(core_num, name_hint=None, optimizations=[...], sync_start=False, deps=[...], "
        "predicate=(t[i] > 0), allow_early_resolve=False)",
        "`for i in pl.spmd(n):` launches the body (a kernel of its own, or its scopes and kernel calls) "
        "on n core groups; i is the block index; `with pl.spmd(n, deps=[...]) as tid:` names its task",
    ),
    "submit": (
        "submit(self.kernel, *args, deps=[...], dumps=[...], allow_early_resolve=False, "
        "predicate=(t[i] > 0))",
        "launch a kernel of the @pl.program as a task: `out, tid = pl.submit(self.kernel, x, out)` "
        "gives the tensors the kernel returns, then the task id (a pl.TaskId)",
    ),
    "spmd_submit": (
        "spmd_submit(self.kernel, *args, core_num=N, sync_start=False, deps=[...], "
        "allow_early_resolve=False, predicate=(t[i] > 0))",
        "launch a kernel of the @pl.program on core_num blocks as one task; returns like pl.submit",
    ),
    "scope": (
        "scope(mode=pl.ScopeMode.AUTO)",
        "a runtime scope of the orchestration: AUTO tracks dependencies (needs auto_scope=False), "
        "MANUAL is pl.manual_scope()",
    ),
    "range": ("range(stop) / range(start, stop, step=1)", "a sequential loop over an INDEX var"),
    "yield_": (
        "yield_(a, b, ...)",
        "the values of a loop's carried names for the next iteration (`a, b = pl.yield_(a2, b2)`), "
        "or of the names an if arm gives its results (`r = pl.yield_(v)`)",
    ),
    "while_": (
        "while_(init_values=(a0, ...))",
        "a loop that runs while its pl.cond holds: `for (a,) in pl.while_(init_values=(a0,)):`",
    ),
    "cond": ("cond(c)", "the first statement of a pl.while_ body: the loop goes on while c is true"),
    "parallel": ("parallel(stop) / parallel(start, stop, step=1)", "a loop with independent iterations"),
    "unroll": ("unroll(stop) / unroll(start, stop, step=1)", "a loop unrolled at compile time"),
    "pipeline": (
        "pipeline(stop, stage=k) / pipeline(start, stop, step=1, stage=k)",
        "a sequential loop whose iterations may overlap k deep (the stage count is kept in the IR)",
    ),
    "split_aiv": (
        "split_aiv(2, mode=pl.SplitMode.NONE)",
        "an explicit vector region; iterates over the lane",
    ),
}


@dataclass(frozen=True)
class Builtin:
    """A DSL function recognized by the parser; ``level`` pins ``pl.tile.*`` / ``pl.tensor.*`` spellings.

    >>> pl.add(a, b)  # doctest: +SKIP  (only inside a @pl.jit body)
    """

    name: str  # the DSL name: "add", "create_tile", "system.fence", "range"
    level: str | None = None
    # The IR op this spelling names, if it names one (``pl.tile.muls``: "tile.muls"): a call
    # whose arguments are exactly that op's operands and attributes builds it as it is, which is
    # how printed IR reads back (see pypto.language.parser.raw).
    op: str | None = None
    # The name of a scalar form spelled at the top level (``pl.maximums``: "maximums"): the DSL
    # function ``name`` with a scalar right operand, at whichever level its left one is.
    scalar_form: str | None = None

    def __post_init__(self) -> None:
        # What help() and inspect.signature() read: the op's call and doc, from its spec.
        function = self.function
        if function is not None:
            doc, signature = function.doc, function.signature
        else:
            call, meaning = STATEMENT_DOCS[self.name]
            doc, signature = f"pl.{call}: {meaning}.", None
        object.__setattr__(self, "__name__", self.name.rsplit(".", 1)[-1])
        object.__setattr__(self, "__doc__", doc)
        object.__setattr__(self, "__signature__", signature)

    @property
    def function(self) -> DslFunction | None:
        """The registry's ``pl`` function this builtin calls (None for the statements)."""
        return dsl_function(self.name)

    @property
    def dsl_name(self) -> str:
        if self.scalar_form is not None:
            return f"pl.{self.scalar_form}"
        return f"pl.{self.level}.{self.name}" if self.level else f"pl.{self.name}"

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        if self.name in PARSER_CONSTRUCTS:
            where = "a @pl.jit body or " if self.name == "system.task_dummy" else ""
            raise KernelOnlyError(
                f"{self.dsl_name} is a DSL parser construct and cannot be called directly",
                hint=f"write {self.dsl_name}(...) inside {where}the Orchestration function of a "
                "@pl.program class, which the parser reads (it is never run as Python)",
            )
        raise KernelOnlyError(
            f"{self.dsl_name}() can only be used inside a @pl.jit function",
            hint="kernels are parsed, not executed: call the @pl.jit function with torch tensors instead",
        )

    def __repr__(self) -> str:
        return f"<pl builtin {self.dsl_name}>"


STATEMENTS: dict[str, Builtin] = {name: Builtin(name) for name in STATEMENT_DOCS}
# The task-graph constructs: each is read by the parser from its call; called from Python it raises.
PARSER_CONSTRUCTS = ("submit", "spmd_submit", "system.task_dummy")


def no_dep(tensor: T) -> T:
    """``self.kernel(pl.no_dep(out), ...)``: turn the dependency tracking of this one argument of
    this one kernel call off (no edge through it, whatever the parameter's direction, and none
    from it for later tasks). The parser reads the mark at a call argument; at run time, outside
    a kernel, it returns the tensor unchanged."""
    return tensor


def dump_tag(tensor: Any) -> None:
    """``pl.dump_tag(t)`` in an Orchestration (or inline) body: mark ``t`` for the selective dump of
    every later task that takes it (recorded as the tasks' ``dumps``). Outside a kernel it does
    nothing."""
    return None


@dataclass
class _Made:
    """Builtins made for one state of the registry's ``pl`` functions (rebuilt when it changes)."""

    functions: dict[str, DslFunction] | None = None
    builtins: dict[tuple[str, ...], dict[str, Builtin]] = field(default_factory=dict)


_made = _Made()


def _cached(
    key: tuple[str, ...], make: Callable[[dict[str, DslFunction]], dict[str, Builtin]]
) -> dict[str, Builtin]:
    functions = dsl_functions()
    if _made.functions is not functions:
        _made.functions, _made.builtins = functions, {}
    if key not in _made.builtins:
        _made.builtins[key] = make(functions)
    return _made.builtins[key]


def op_builtins() -> dict[str, Builtin]:
    """``pl.<name>`` of every op written ``pl.<name>(...)``, by name (``add``, ``tpush_to_aiv``),
    and the scalar forms of the binary ops by their own names (``pl.maximums``, ``pl.ands``)."""
    return _cached((), _top_level)


def _top_level(functions: dict[str, DslFunction]) -> dict[str, Builtin]:
    found = {name: Builtin(name, op=_op_named(name)) for name in functions if "." not in name}
    for name, function in functions.items():
        for spec in function.forms:
            elementwise = spec.trait(Elementwise)
            if elementwise is None or elementwise.scalar_form is None or "." in name:
                continue
            own = elementwise.scalar_form.split(".", 1)[1]
            found.setdefault(own, Builtin(name, scalar_form=own))
    return found


def _op_named(name: str) -> str | None:
    from pypto.ir.ops import OPS

    return name if name in OPS else None


# DSL functions of another level PyPTO code also spells under a namespace: ``pl.tensor.read``
# reads one element of a tensor (the scalar op ``pl.read``), ``pl.tensor.write`` writes one;
# ``pl.array.get`` / ``pl.array.set`` are older spellings of the element read and update.
SPELLED_UNDER: dict[str, dict[str, str]] = {
    "tensor": {"read": "read", "write": "write", "gather_row": "gather_row"},
    "array": {"get": "array.get_element", "set": "array.update_element"},
}


class OpNamespace:
    """``pl.tile``, ``pl.tensor``, ``pl.system``: the ops of one level or prefix, read from the
    registry on each lookup (``pl.tile.load``, ``pl.system.fence``); a name no op has is an
    ``AttributeError``."""

    def __init__(self, prefix: str, level: Level | None, extra: dict[str, Any] | None = None) -> None:
        self._prefix = prefix
        self._level = level
        self._extra = dict(extra or {})  # members that are no op of this level (see below)

    def _members(self) -> dict[str, Any]:
        return {**self._extra, **_cached((self._prefix,), self._make)}

    def _make(self, functions: dict[str, DslFunction]) -> dict[str, Builtin]:
        members: dict[str, Builtin] = {}
        aliases: dict[str, Builtin] = {}
        for name, function in functions.items():
            if self._level is None and name.startswith(f"{self._prefix}."):
                members[name.split(".", 1)[1]] = Builtin(name, op=_op_named(name))
                continue
            named = [s for s in function.specs if s.name.startswith(f"{self._prefix}.")]
            if self._level is None:
                # An op of another level named under this prefix: pl.system.aic_initialize_pipe.
                for form in named:
                    aliases[form.name.split(".", 1)[1]] = Builtin(name, op=form.name)
                continue
            forms = [s for s in function.specs if s.level is self._level]
            if forms:
                members[name] = Builtin(name, self._prefix, op=_op_named(f"{self._prefix}.{name}"))
            for form in {*forms, *named}:  # each op under its own name too: pl.tile.create, pl.tile.muls
                own = form.name.split(".", 1)[1]
                if own != name or not forms:
                    aliases[own] = Builtin(name, self._prefix, op=form.name)
        for name, dsl in SPELLED_UNDER.get(self._prefix, {}).items():  # pl.tensor.read
            if dsl in functions:
                aliases.setdefault(name, Builtin(dsl, op=_op_named(dsl)))
        return {**aliases, **members}

    def __getattr__(self, name: str) -> Any:
        member = self._members().get(name)
        if member is None:
            raise AttributeError(f"pl.{self._prefix} has no op {name!r}")
        return member

    def __dir__(self) -> list[str]:
        return sorted(self._members())

    def __repr__(self) -> str:
        return f"<pl.{self._prefix}: {', '.join(sorted(self._members()))}>"


# PyPTO also spells a launch's indices in the tile namespace: pl.tile.get_block_idx() (the lane's,
# pl.tile.get_subblock_idx(), is an op of that namespace).
_INDEX_SPELLINGS = ("get_block_idx", "get_block_num")
tile = OpNamespace("tile", Level.TILE, {name: Builtin(name, op=name) for name in _INDEX_SPELLINGS})
tensor = OpNamespace("tensor", Level.TENSOR, {"dim": TENSOR_DIM, "create_l1": CREATE_L1})
# The scalar array ops: pl.array.create(n, dtype) (elements are read arr[i] and written arr[i] = v).
array = OpNamespace("array", None)
# The asynchronous GM -> L2 prefetch: pl.prefetch.make_context(), .async_prefetch, .session, .wait.
prefetch = OpNamespace("prefetch", None)
# The chip's counts are compile-time numbers, folded where the parser meets them.
system = OpNamespace(
    "system",
    None,
    {"available_cluster_count": available_cluster_count, "available_aiv_count": available_aiv_count},
)


@dataclass(frozen=True)
class DistBuiltin:
    """A function of the distributed model, ``pld.<path>`` (``pld.system.notify``,
    ``pld.tensor.allreduce``, the short ``pld.rank``): the parser builds it
    (:mod:`pypto.language.parser.distributed`); called as plain Python it raises.

    >>> pld.system.notify(sig, peer=p, offsets=[r, 0], value=1, op=pld.NotifyOp.Set)  # doctest: +SKIP
    """

    path: str  # "system.notify", "tensor.remote_store", "remote_store" (the short form)
    doc: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "__name__", self.path.rsplit(".", 1)[-1])
        object.__setattr__(self, "__doc__", self.doc)

    @property
    def dsl_name(self) -> str:
        return f"pld.{self.path}"

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise KernelOnlyError(
            f"{self.dsl_name}() can only be used inside a function the parser reads "
            "(@pl.jit.host, @pl.jit, @pl.jit.incore, or a @pl.program's function)",
            hint="kernels are parsed, not executed: call the @pl.jit.host function with torch tensors",
        )

    def __repr__(self) -> str:
        return f"<pld builtin {self.dsl_name}>"
