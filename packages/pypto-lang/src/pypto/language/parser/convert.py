"""The arguments of a DSL call as IR operands and attribute values, by operand role and attribute
kind, and how error messages name them.

An operand is converted by its ``Role`` (a tensor, a tile, either, offsets, a valid shape, a
scalar), an attribute by its ``Attr.kind`` (a shape, a dtype, an enum member, a flag, a
compile-time number or string). The words are the front end's: the type rules name ops and
types, the parser names the user's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from pypto.ir import AtomicType, CastMode, CmpType, DataType, Expr, MemorySpace, PadValue, SplitMode
from pypto.ir.ops import Attr, Effect, OpSpec, PipeAction, PipeEnd, Role, tensor, tile
from pypto.language.annotations import dtype_hint
from pypto.language.dslops import DslFunction, operand_params
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import (
    describe_value,
    index_tuple,
    is_number,
    is_scalar,
    number,
    scalar_expr,
    static_shape,
    tile_scalar,
)

# How messages name an operand parameter, by its name ("lhs" -> "left operand").
PARAM_WORDS = {
    "lhs": "left operand",
    "rhs": "right operand",
    "x": "operand",
    "a": "first operand",
    "b": "second operand",
}
# Where a message names one op's parameter otherwise: (op, parameter) -> words.
OPERAND_WORDS = {
    (tile.fillpad, "x"): "the padded value",
    (tile.full, "value"): "the fill value",
    (tensor.full, "value"): "the fill value",
}
# The ops whose dtype= messages read "a pl dtype" without an example (as they always have).
PLAIN_DTYPE = frozenset({tile.create, tile.full, tensor.full, tensor.create})
# The ops whose shape may hold dynamic extents (a tensor's; a tile's shape is static).
DYNAMIC_SHAPE = frozenset({tensor.create, tensor.slice, tensor.full, tensor.reshape})

# The memory spaces a tile can be made in (DDR is global memory, where tensors live).
TILE_SPACES = ", ".join(repr(m) for m in MemorySpace if m is not MemorySpace.DDR)


@dataclass(frozen=True)
class EnumWords:
    """How messages word a bad value of one enum: ``{name}`` is the parameter, ``{value}`` the
    value as described, ``{members}`` the members."""

    message: str
    hint: str


ENUM_WORDS: dict[type, EnumWords] = {
    MemorySpace: EnumWords(
        "{name} must be a pl.Mem member, got {value}", "write {name}= one of " + TILE_SPACES
    ),
    CastMode: EnumWords(
        "unknown rounding mode {value}",
        "use one of {members} (or pl.CastMode.<name>); float -> float casts round to nearest even",
    ),
    PadValue: EnumWords(
        "{name} must be pl.PadValue.zero, min or max, got {value}", "write {name}= one of {members}"
    ),
    SplitMode: EnumWords(
        "{name}= takes a pl.SplitMode, got {value}", "write {name}=pl.SplitMode.UP_DOWN, LEFT_RIGHT or NONE"
    ),
    AtomicType: EnumWords(
        "{name} must be a pl.AtomicType such as pl.AtomicType.Add, got {value}",
        "write atomic=pl.AtomicType.Add to add into the target, or leave it out to overwrite",
    ),
}


def operand_words(function: DslFunction, spec: OpSpec, name: str) -> str:
    """How messages name operand ``name`` of ``spec`` (a form of ``function``): "left operand",
    "source" (what a one-level op reads), "destination" (what it writes), "the pushed value"."""
    if (spec.name, name) in OPERAND_WORDS:
        return OPERAND_WORDS[(spec.name, name)]
    end = spec.trait(PipeEnd)
    if end is not None and end.action is PipeAction.PUSH:
        return "the pushed value"
    if end is not None and end.action is PipeAction.FREE:
        return "the popped tile"
    operand_name = next((o for o, p in operand_params(spec).items() if p == name), None)
    operand = next((o for o in spec.operands if o.name == operand_name), None)
    if operand is not None and function.param_roles.get(name) in (Role.TENSOR, Role.TILE):
        if operand.effect in (Effect.WRITE, Effect.UPDATE):
            return "destination"
        if operand.effect is Effect.READ:
            return "source"
    return PARAM_WORDS.get(name, name)


def operand(ctx: OpContext, role: Role, value: Any, what: str, dtype: DataType | None = None) -> Any:
    """``value`` as an operand of ``role``; a scalar's constant takes ``dtype`` (the elements')."""
    if role is Role.TENSOR:
        return ctx.tensor(value, what)
    if role is Role.TILE:
        return ctx.tile(value, what)
    if role is Role.SHAPED:
        return ctx.shaped(value, what)
    if role in (Role.OFFSETS, Role.VALID_SHAPE):
        return index_tuple(value, ctx.span, what)
    if role is Role.ARRAY:
        return ctx.array(value, what)
    if role is Role.HANDLE:
        return ctx.handle(value, what)
    if not is_scalar(value):
        raise ctx.fail(
            f"{what} must be a scalar, got {describe_value(value)}",
            ctx.operand_hint(what, "a number or a run-time scalar (a loop index, a pl.read(...) result)"),
        )
    return tile_scalar(value, dtype, ctx.span) if dtype is not None else scalar_expr(value, None, ctx.span)


def attribute(ctx: OpContext, spec: OpSpec, attr: Attr, value: Any) -> Any:
    """``value`` of attribute ``attr`` as the op takes it; the type rule checks the rest."""
    if attr.kind is DataType:
        if not isinstance(value, DataType):
            example = "" if spec.name in PLAIN_DTYPE else " such as pl.FP32"
            raise ctx.fail(
                f"{attr.name} must be a pl dtype{example}, got {describe_value(value)}", dtype_hint(value)
            )
        return value
    if attr.kind is CmpType:
        return cmp_type(ctx, value, attr.name)
    if issubclass(attr.kind, Enum):
        return enum_member(ctx, attr.kind, attr.name, value)
    if attr.kind is tuple:
        return static_shape(value, ctx.span, attr.name, dynamic=spec.name in DYNAMIC_SHAPE)
    value = compile_time(ctx, value, f"{attr.name}=")
    if attr.kind is str and hasattr(value, "imported"):  # a pipe buffer handle: its name
        value = value.name
    if attr.kind is bool and not isinstance(value, bool):
        raise ctx.fail(
            f"{attr.name}= must be True or False, got {describe_value(value)}",
            f"write {attr.name}=True, or leave it out for {attr.name}={attr.default!r}",
        )
    return value


def enum_member(ctx: OpContext, kind: type[Enum], name: str, value: Any) -> Any:
    """``value`` as a member of ``kind``; a string enum also takes a member's name (``mode="rint"``)."""
    if isinstance(value, kind):
        return value
    if issubclass(kind, StrEnum) and isinstance(value, str) and value in kind.__members__:
        return kind[value]
    words = ENUM_WORDS.get(kind) or EnumWords(
        f"{{name}} must be a pl.{kind.__name__}, got {{value}}", "write {name}= one of {members}"
    )
    members = ", ".join(
        repr(m.value) if issubclass(kind, StrEnum) else f"pl.{kind.__name__}.{m.name}" for m in kind
    )
    hint = words.hint.format(name=name, members=members)
    if kind is MemorySpace and isinstance(value, str) and value in MemorySpace.__members__:
        hint = f"write {name}=pl.Mem.{value}, not the string {value!r}"
    raise ctx.fail(words.message.format(name=name, value=describe_value(value)), hint)


def compile_time(ctx: OpContext, value: Any, what: str) -> Any:
    """``value`` as a plain Python value; a run-time IR value is an error."""
    if isinstance(value, Expr) and not is_number(value):
        raise ctx.fail(
            f"{what} must be known at compile time, got {describe_value(value)}",
            f"write {what} as a constant (a literal, a module global or a value folded from a.shape); "
            "a scalar parameter is a constant when the kernel is called with a Python number",
        )
    return number(value) if is_number(value) else value


def cmp_type(ctx: OpContext, value: Any, name: str = "cmp_type") -> CmpType:
    """What a comparison tests: a ``pl.CmpType``, its name in either case (``"gt"``, ``"GT"``), or
    the code of its place in the order eq, ne, lt, le, gt, ge (0 to 5)."""
    plain = number(value) if is_number(value) else value
    members = list(CmpType)
    if isinstance(plain, int) and not isinstance(plain, bool) and 0 <= plain < len(members):
        return members[plain]
    if isinstance(plain, str) and plain.lower() in CmpType.__members__:
        return CmpType[plain.lower()]
    if isinstance(plain, CmpType):
        return plain
    raise ctx.fail(
        f"{name}= must be a comparison, got {describe_value(value)}",
        f'write {name}= one of "eq", "ne", "lt", "le", "gt", "ge" (or pl.CmpType.gt, or the codes 0-5 in '
        "that order)",
    )


# PyPTO's integer split codes: 0 none, 1 up-down, 2 left-right, 3 / 4 the same over an odd extent
# (lane 0 holds one row or column more than lane 1, which every split here gives it anyway).
SPLIT_CODES = {
    0: SplitMode.NONE,
    1: SplitMode.UP_DOWN,
    2: SplitMode.LEFT_RIGHT,
    3: SplitMode.UP_DOWN,
    4: SplitMode.LEFT_RIGHT,
}


def split_mode(ctx: OpContext, value: Any, name: str = "split") -> SplitMode:
    """A split mode: a ``pl.SplitMode``, or PyPTO's integer code (0 none, 1 up-down, 2 left-right,
    3 / 4 up-down / left-right over an odd extent)."""
    plain = number(value) if is_number(value) else value
    if isinstance(plain, int) and not isinstance(plain, bool):
        if plain in SPLIT_CODES:
            return SPLIT_CODES[plain]
        raise ctx.fail(
            f"{name}= takes a pl.SplitMode or the codes 0-4, got {plain}",
            f"write {name}=pl.SplitMode.UP_DOWN (or 1), LEFT_RIGHT (2) or NONE (0); 3 and 4 are up-down "
            "and left-right over an odd extent",
        )
    return enum_member(ctx, SplitMode, name, value)
