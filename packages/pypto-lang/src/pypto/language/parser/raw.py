"""IR ops written as they are: ``pl.tile.muls(x, 2.0)``, ``pl.tile.load(t, [0, 0], shape=[64, 64],
target_memory=pl.Mem.Vec)`` — the op's own name, its operands positionally in the op's order, its
attributes by keyword.

This is the form the printer writes, so printed IR parses back into the same calls. A call is
read this way when its spelling names an IR op and its arguments fit that op's operands and
attributes exactly (count, roles, keywords); any other call goes through the DSL function of
the name (``pl.tile.load(t, [0, 0], [64, 64])``: shape positionally, the DSL's order).
"""

from __future__ import annotations

from typing import Any

from pypto.ir import UNIT, ArrayType, Eval, Expr, HandleType, ScalarType, TensorType, TileType, get_op
from pypto.ir.ops import OpSpec, Role
from pypto.ir.ops.spec import STORAGE
from pypto.language.parser.convert import attribute, operand
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.ops import build_op
from pypto.language.parser.values import element_dtype, is_number, is_scalar, is_shaped

_KIND = {Role.TENSOR: TensorType, Role.TILE: TileType, Role.ARRAY: ArrayType, Role.HANDLE: HandleType}


def _fits(role: Role, value: Any) -> bool:
    """Whether ``value`` is what an operand of ``role`` is, before any conversion."""
    if role in _KIND:
        return isinstance(value, Expr) and isinstance(value.type, _KIND[role])
    if role is Role.SHAPED:
        return is_shaped(value)
    if role in (Role.OFFSETS, Role.VALID_SHAPE):
        return isinstance(value, (list, tuple))
    return is_scalar(value) or is_number(value)


def raw_spec(op: str | None, args: list[Any], kwargs: dict[str, Any], only: bool) -> OpSpec | None:
    """The op ``op`` if the call's arguments are exactly its operands and attributes (``only``:
    the spelling names nothing else, so the op is built and its rule reports any mismatch)."""
    if op is None:
        return None
    spec = get_op(op)
    if spec.open:
        return None
    args, kwargs = positional(spec, args, kwargs)
    if only:
        return spec
    required = sum(1 for o in spec.operands if not o.optional)
    if not required <= len(args) <= len(spec.operands):
        return None
    names = {a.name for a in spec.attrs}
    if not set(kwargs) <= names or any(a.required and a.name not in kwargs for a in spec.attrs):
        return None
    if not all(_fits(o.role, v) for o, v in zip(spec.operands, args, strict=False)):
        return None
    return spec


def positional(spec: OpSpec, args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Operands given by name (``gm_workspace=ws``) moved to their places after the positional ones."""
    named = [o.name for o in spec.operands[len(args) :]]
    if not any(n in kwargs for n in named):
        return args, kwargs
    rest = dict(kwargs)
    moved = list(args)
    for name in named:
        if name not in rest:
            break
        moved.append(rest.pop(name))
    return moved, rest


def build_raw(ctx: OpContext, spec: OpSpec, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Build ``spec`` from operands in its order and attributes by name; an op that writes an
    operand or gives nothing is a statement, as the DSL builds it."""
    args, kwargs = positional(spec, args, kwargs)
    given = {o.name: value for o, value in zip(spec.operands, args, strict=False)}
    if spec.dsl and any(a.required and a.name not in kwargs and a.name in given for a in spec.attrs):
        # The operand stands for the attribute of its name (a host tensor's run-time shape): the
        # DSL function builds both from it, as it did when the program was written.
        return build_op(ctx, spec.dsl, [], {**given, **kwargs})
    if len(args) > len(spec.operands):
        names = ", ".join(o.name for o in spec.operands)
        attributes = ", ".join(a.name for a in spec.attrs)
        raise ctx.fail(
            f"takes {len(spec.operands)} operand(s) ({names}), got {len(args)}",
            f"write the operands in this order, the attributes ({attributes}) by keyword",
        )
    known = {a.name: a for a in spec.attrs}
    unknown = [k for k in kwargs if k not in known]
    if unknown:
        raise ctx.fail(
            f"has no attribute {unknown[0]!r}",
            f"its attributes: {', '.join(known) or 'none'}; its operands: "
            f"{', '.join(o.name for o in spec.operands) or 'none'}",
        )
    attrs = {k: attribute(ctx, spec, known[k], v) for k, v in kwargs.items()}
    shaped = next((a for a in args if is_shaped(a)), None)
    dtype = element_dtype(shaped) if shaped is not None else attrs.get("dtype")
    operands: list[Any] = []
    for o, value in zip(spec.operands, args, strict=False):
        scalar_dtype = dtype if o.role is Role.SCALAR and not isinstance(value, Expr) else None
        if o.role is Role.SCALAR and isinstance(value, Expr) and isinstance(value.type, ScalarType):
            scalar_dtype = None
        converted = operand(ctx, o.role, value, o.name, scalar_dtype)
        operands.append(ctx.body.atom(converted) if o.role in STORAGE else converted)
    call = ctx.call(spec.name, operands, attrs)
    written = spec.writes
    if written:
        ctx.body.emit(Eval(call, ctx.span))
        return operands[written[0]]
    if call.type == UNIT:
        ctx.body.emit(Eval(call, ctx.span))
        return None
    return call
