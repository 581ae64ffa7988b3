"""The ``pl`` functions of the op registry: ``pl.add`` is every spec whose DSL name is ``add``.

A spec is written as a ``pl`` function when its signature is that call (``pl.add(lhs, rhs)``);
scalar arithmetic is written with Python operators instead (``lhs + rhs``) and a kernel call by
the kernel's name, so they are not ``pl`` functions. The specs of one DSL name over the levels
(``tensor.row_max`` and ``tile.row_max``) make one :class:`DslFunction`: its parameters are the
specs' signature parameters merged (a parameter only some levels take is optional), its
docstring lists each form. The few polymorphic builders of the parser (``pl.load`` picks between
``tile.load`` and ``tile.load_partial``) declare their own parameters with :func:`hand_built`.

The registry is read when first asked and again whenever its ops change, so an op declared
after import (a plugin's, a test's) is a ``pl`` function at once.

>>> dsl_function("row_max").text  # doctest: +SKIP
'pl.row_max(x, tmp=None)'
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pypto.ir import (
    AtomicType,
    CastMode,
    CmpType,
    CompactMode,
    DataType,
    MemorySpace,
    PadValue,
    PipeType,
    SplitMode,
    TensorLayout,
    TileLayout,
)
from pypto.ir.ops import (
    OPS,
    REQUIRED,
    Elementwise,
    Level,
    OpSpec,
    Role,
)

Parameter = inspect.Parameter
EMPTY = Parameter.empty


# What a default in a spec's signature may name: ``pl.Mem.Vec``, ``pl.CastMode.round``, ``pl.FP32``.
_PL_NAMES: dict[str, Any] = {
    "Mem": MemorySpace,
    "MemorySpace": MemorySpace,
    "CastMode": CastMode,
    "CmpType": CmpType,
    "PadValue": PadValue,
    "TileLayout": TileLayout,
    "CompactMode": CompactMode,
    "TensorLayout": TensorLayout,
    "AtomicType": AtomicType,
    "SplitMode": SplitMode,
    "PipeType": PipeType,
    **DataType.__members__,
}

Builder = Callable[..., Any]


@dataclass(frozen=True)
class HandBuilt:
    """A polymorphic builder of the parser: the ops it dispatches between, its DSL parameters."""

    builder: Builder
    signature: inspect.Signature


_HAND_BUILT: dict[str, HandBuilt] = {}


def hand_built(*ops: str) -> Callable[[Builder], Builder]:
    """Mark ``builder(ctx, ...)`` as the one that builds the DSL function of ``ops``; its
    parameters after ``ctx`` are the DSL function's (``pl.load(tensor, offsets, shape, ...)``)."""

    def mark(builder: Builder) -> Builder:
        # The DSL parameters as users see them (help(), inspect): names and defaults, no annotations.
        params = [
            p.replace(annotation=EMPTY) for p in list(inspect.signature(builder).parameters.values())[1:]
        ]
        for name in ops:
            _HAND_BUILT[name] = HandBuilt(builder, inspect.Signature(params))
        _index.seen = ()  # the next lookup rebuilds the functions with this builder
        return builder

    return mark


@dataclass(frozen=True)
class DslFunction:
    """One ``pl`` function: its name (``add``, ``system.fence``), the ops it covers, its parameters."""

    name: str
    ops: tuple[str, ...]
    signature: inspect.Signature
    builder: Builder | None = None
    param_roles: dict[str, Role] = field(default_factory=dict, compare=False)

    @property
    def specs(self) -> tuple[OpSpec, ...]:
        return tuple(OPS[name] for name in self.ops)

    @property
    def text(self) -> str:
        """The call as the user writes it: ``pl.load(tensor, offsets, shape, target_memory=...)``."""
        return f"pl.{self.name}{format_signature(self.signature)}"

    @property
    def levels(self) -> tuple[Level, ...]:
        return tuple(dict.fromkeys(s.level for s in self.specs))

    def at_level(self, level: Level) -> OpSpec | None:
        """The form of this function at ``level`` (its non-scalar-operand form, for a binary op)."""
        return next((s for s in self.forms if s.level is level), None)

    @property
    def forms(self) -> tuple[OpSpec, ...]:
        """The specs the call's parameters are bound to: all but the scalar forms of binary ops,
        which the parser reaches through their ``Elementwise(scalar_form=...)`` trait."""
        specs = self.specs
        scalar_forms = {e.scalar_form for s in specs if (e := s.trait(Elementwise)) is not None}
        return tuple(s for s in specs if s.name not in scalar_forms)

    @property
    def doc(self) -> str:
        lines = [f"{self.text}: {self.forms[0].doc}."]
        specs = self.specs
        if len(specs) > 1:
            shaped = any(role in (Role.TENSOR, Role.TILE, Role.SHAPED) for role in self.param_roles.values())
            picked = "picked by the operands" if shaped else "a tensor, or a tile where a use asks for one"
            lines += ["", f"Forms ({picked}):"]
            lines += [f"  {s.signature}  ->  {s.name}: {s.doc}" for s in specs]
        lines += ["", "Only inside a @pl.jit function: kernels are parsed, not executed."]
        return "\n".join(lines)


def is_dsl_function(spec: OpSpec) -> bool:
    """Whether ``spec`` is written as ``pl.<dsl>(...)`` (not as an operator or a kernel call)."""
    return bool(spec.dsl) and spec.signature.startswith(f"pl.{spec.dsl}(")


def format_default(value: Any) -> str:
    """A default as the user writes it: ``pl.Mem.Vec``, ``pl.CastMode.round``, ``"hard"``."""
    if isinstance(value, MemorySpace):
        return f"pl.Mem.{value.name}"
    if isinstance(value, DataType):
        return f"pl.{value.name}"
    if isinstance(value, Enum):
        return f"pl.{type(value).__name__}.{value.name}"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def format_signature(signature: inspect.Signature) -> str:
    parts: list[str] = []
    starred = False
    for p in signature.parameters.values():
        if p.kind is Parameter.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        parts.append(p.name if p.default is EMPTY else f"{p.name}={format_default(p.default)}")
    return f"({', '.join(parts)})"


def _default(node: ast.expr | None) -> Any:
    """A default written in a spec's signature; ``EMPTY`` for an example (``shape=[1, C]``, ``...``)."""
    if node is None:
        return EMPTY
    if isinstance(node, ast.Constant):
        return EMPTY if node.value is Ellipsis else node.value
    path: list[str] = []
    while isinstance(node, ast.Attribute):
        path.insert(0, node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id == "pl" and path and path[0] in _PL_NAMES):
        return EMPTY
    value = _PL_NAMES[path[0]]
    for name in path[1:]:
        value = getattr(value, name, EMPTY)
    return value


def spec_parameters(spec: OpSpec) -> list[Parameter]:
    """The DSL parameters of one spec: its signature's, then its other attributes by keyword."""
    text = spec.signature
    parsed = ast.parse(f"def f{text[text.index('(') :]}: pass").body[0]
    assert isinstance(parsed, ast.FunctionDef)
    args = parsed.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params: list[Parameter] = []
    keyword_only = False
    for arg, node in (
        *zip(positional, defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ):
        default = _default(node)
        keyword_only = keyword_only or arg in args.kwonlyargs or (default is EMPTY and _has_default(params))
        kind = Parameter.KEYWORD_ONLY if keyword_only else Parameter.POSITIONAL_OR_KEYWORD
        params.append(Parameter(arg.arg, kind, default=default))
    named = {p.name for p in params}
    for attr in spec.attrs:
        if attr.name not in named:
            default = EMPTY if attr.default is REQUIRED else attr.default
            params.append(Parameter(attr.name, Parameter.KEYWORD_ONLY, default=default))
    return params


def operand_params(spec: OpSpec) -> dict[str, str]:
    """The DSL parameter each operand of ``spec`` is passed as: the one of its name, else the next
    parameter its signature names otherwise (``pl.gather_row(dst, src, ...)`` passes the operand
    ``tensor`` as ``src``). An operand the signature leaves out is not a parameter."""
    params = [p.name for p in spec_parameters(spec)]
    taken = {o.name for o in spec.operands} | {a.name for a in spec.attrs}
    spare = [p for p in params if p not in taken]
    found: dict[str, str] = {}
    for o in spec.operands:
        if o.name in params:
            found[o.name] = o.name
        elif spare and not o.optional:
            found[o.name] = spare.pop(0)
    return found


def _has_default(params: list[Parameter]) -> bool:
    return any(p.default is not EMPTY for p in params)


def merge_parameters(forms: tuple[OpSpec, ...]) -> inspect.Signature:
    """One parameter list for several forms: in the order they name them; a parameter that not
    every form takes defaults to None (``pl.row_max(x, tmp=None)``: tiles take a scratch tile)."""
    merged: list[Parameter] = []
    counts: dict[str, int] = {}
    for spec in forms:
        at = 0
        for p in spec_parameters(spec):
            names = [m.name for m in merged]
            if p.name in names:
                at = names.index(p.name) + 1
            else:
                merged.insert(at, p)
                at += 1
            counts[p.name] = counts.get(p.name, 0) + 1
    params = [
        p if counts[p.name] == len(forms) or p.default is not EMPTY else p.replace(default=None)
        for p in merged
    ]
    return inspect.Signature(params)


def _roles(forms: tuple[OpSpec, ...]) -> dict[str, Role]:
    """The role of each operand parameter over the forms: a tile at one level and a tensor at the
    other is ``SHAPED``."""
    roles: dict[str, Role] = {}
    for spec in forms:
        params = operand_params(spec)
        for operand in spec.operands:
            name = params.get(operand.name)
            if name is None:
                continue
            before = roles.get(name)
            if before is None or before is operand.role:
                roles[name] = operand.role
            elif {before, operand.role} <= {Role.TILE, Role.TENSOR, Role.SHAPED}:
                roles[name] = Role.SHAPED
    return roles


def _function(name: str, ops: tuple[str, ...]) -> DslFunction:
    built = next((_HAND_BUILT[o] for o in ops if o in _HAND_BUILT), None)
    draft = DslFunction(name, ops, inspect.Signature())
    forms = draft.forms
    signature = built.signature if built is not None else merge_parameters(forms)
    return DslFunction(name, ops, signature, built.builder if built else None, _roles(forms))


@dataclass
class _Index:
    """The registry's ``pl`` functions, as of the registry's op names ``seen``."""

    seen: tuple[str, ...] = ()
    functions: dict[str, DslFunction] = field(default_factory=dict)


_index = _Index()


def dsl_functions() -> dict[str, DslFunction]:
    """Every ``pl`` function by DSL name (``add``, ``system.syncall``), rebuilt when the registry
    has changed since the last call."""
    names = tuple(OPS)
    if names != _index.seen:
        grouped: dict[str, list[str]] = {}
        for spec in OPS.values():
            if spec.dsl and is_dsl_function(spec):
                grouped.setdefault(spec.dsl, []).append(spec.name)
        _index.functions = {name: _function(name, tuple(ops)) for name, ops in grouped.items()}
        _index.seen = names
    return _index.functions


def dsl_function(name: str) -> DslFunction | None:
    return dsl_functions().get(name)
