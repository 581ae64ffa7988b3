"""Building a DSL op call: ``pl.<name>(...)`` bound to the parameters of its ``pl`` function and
turned into an IR call by the specs (:mod:`pypto.language.dslops`).

Most ops need nothing else: the operand's kind picks the level (tensors -> ``tensor.X``, tiles
-> ``tile.X``, scalars -> ``scalar.X``), each operand is converted by its role and each
attribute by its kind (:mod:`~pypto.language.parser.convert`), and an op that writes an operand
(``pl.gather_row`` into its destination) or returns nothing (``pl.tpush_to_aiv``) is a
statement. Two families have a rule: binary elementwise ops take a scalar operand through their
``Elementwise(scalar_form=...)`` (and swap a scalar left operand when ``Commutative``), unary
ones fold on numbers. The polymorphic ops have builders of their own (:mod:`.transfers`,
:mod:`.crosscore`).
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

from pypto.ir import UNIT, Eval, Expr, ParseError, ScalarType, TypeCheckError, get_op
from pypto.ir.ops import (
    COL_REDUCTIONS,
    ROW_REDUCTIONS,
    Commutative,
    Elementwise,
    Level,
    OpSpec,
    Reduction,
    Role,
)
from pypto.ir.ops.spec import STORAGE
from pypto.language.dslops import DslFunction, dsl_function, operand_params
from pypto.language.options import AUTO
from pypto.language.parser import crosscore, generators, host_tensors, indexed, masks, transfers  # noqa: F401  (builders register)
from pypto.language.parser.arith import scalar_binary, scalar_unary
from pypto.language.parser.broadcast import broadcast_binary
from pypto.language.parser.convert import attribute, operand, operand_words
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.partial import padded_for_reduction, reduced_valid, with_valid
from pypto.language.parser.values import (
    describe_value,
    element_dtype,
    is_number,
    is_scalar,
    is_shaped,
    is_tile,
    number,
    shaped_type,
    tile_scalar,
)

# How to write ``c - x`` and ``c / x`` with the scalar c on the right.
SCALAR_LEFT = {
    "sub": "write c - x as pl.add(pl.neg(x), c)",
    "div": "write c / x as pl.mul(pl.recip(x), c)",
}


# Keyword spellings PyPTO code uses besides the parameter's own name: DSL name -> alias -> param
# (a reduction's scratch tile was ``tmp=`` here before it took the manual's name, ``tmp_tile=``).
KEYWORD_ALIASES: dict[str, dict[str, str]] = {
    "cast": {"target_type": "dtype"},
    "rsqrt": {"src": "x"},  # the catalog writes pl.tile.rsqrt(src, tmp)
    "gather_row": {"shapes": "shape"},  # the manual names the window shapes=
    **{name: {"tmp": "tmp_tile"} for name in (*ROW_REDUCTIONS, *COL_REDUCTIONS)},
}


def build_op(ctx: OpContext, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Bind ``args``/``kwargs`` to the DSL function ``name`` and build it.

    >>> build_op(ctx, "add", [a, b], {})  # doctest: +SKIP
    """
    function = dsl_function(name)
    if function is None:  # its op left the registry after the name was read
        raise ctx.fail(
            "is no longer declared in the op registry", "declare the op again, or call another one"
        )
    ctx = replace(ctx, builtin=name)
    kwargs = _renamed_keywords(ctx, name, kwargs)
    try:
        bound = function.signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ParseError(f"{ctx.name}(): {exc}", ctx.span, f"signature: {ctx.signature()}") from None
    _drop_auto(ctx, bound)
    bound.apply_defaults()
    if function.builder is not None:
        return function.builder(ctx, *bound.args, **bound.kwargs)
    if any(e.scalar_form for s in function.forms if (e := s.trait(Elementwise)) is not None):
        return build_binary(ctx, function, bound)
    return build_generic(ctx, function, bound)


def _drop_auto(ctx: OpContext, bound: inspect.BoundArguments) -> None:
    """``pl.AUTO`` for an optional argument leaves it to the compiler: as if it were not given."""
    for name, value in list(bound.arguments.items()):
        if value is not AUTO:
            continue
        if bound.signature.parameters[name].default is inspect.Parameter.empty:
            raise ctx.fail(
                f"{name}= has no automatic value: pl.AUTO stands for an optional argument only",
                f"pass {name} itself; signature: {ctx.signature()}",
            )
        del bound.arguments[name]


def _renamed_keywords(ctx: OpContext, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with PyPTO's other keyword spellings (``pl.cast(x, target_type=pl.FP16)``)
    under the parameter names of the DSL function."""
    renamed = dict(kwargs)
    for alias, param in KEYWORD_ALIASES.get(name, {}).items():
        if alias not in renamed:
            continue
        if param in renamed:
            raise ctx.fail(
                f"got both {alias}= and {param}=, which name the same parameter", f"pass only {param}="
            )
        renamed[param] = renamed.pop(alias)
    return renamed


def build_binary(ctx: OpContext, function: DslFunction, bound: inspect.BoundArguments) -> Any:
    """``pl.add(a, b)`` on tensors or tiles, its scalar form for a scalar operand (swapped to the
    right when the op is commutative), scalar arithmetic on two scalars; a ``[R, 1]`` or
    ``[1, C]`` operand broadcasts against a ``[R, C]`` one (:mod:`.broadcast`) unless the op
    says it does not. Further parameters are the form's attributes (``cmp_type=``) and trailing
    operands (a tile op's scratch ``tmp``)."""
    name = function.name
    values = bound.arguments
    first, second = list(function.signature.parameters)[:2]
    lhs, rhs = values[first], values[second]
    if is_scalar(lhs) and is_scalar(rhs):
        return scalar_binary(ctx, name, lhs, rhs)
    spec = function.forms[0]
    if is_scalar(lhs):
        if not spec.has(Commutative):
            raise ctx.fail(
                "the scalar form takes the scalar as the right operand",
                SCALAR_LEFT.get(name, f"write the tensor or tile first: pl.{name}(x, c)"),
            )
        lhs, rhs = rhs, lhs
    x = ctx.shaped(lhs, operand_words(function, spec, "lhs"))
    ctx.settle(x, rhs)
    form = function.at_level(Level(ctx.level_of(x)))
    assert form is not None
    reject_foreign_attributes(ctx, function, form, values)
    elementwise = form.trait(Elementwise)
    attrs = _attributes(ctx, function, form, values)
    if is_scalar(rhs) and elementwise is not None and elementwise.scalar_form is not None:
        target = get_op(elementwise.scalar_form)
        args = [x, tile_scalar(rhs, element_dtype(x), ctx.span)]
    else:
        y = ctx.shaped(rhs, operand_words(function, spec, "rhs"))
        broadcasts = elementwise is None or elementwise.broadcast
        if broadcasts and ctx.level_of(x) == ctx.level_of(y) and not _trailing(function, values, 2):
            broadcast = broadcast_binary(ctx, name, x, y, attrs)
            if broadcast is not None:
                return broadcast
        target, args = form, [x, y]
    return ctx.call(target.name, [*args, *_trailing_operands(ctx, function, target, values)], attrs)


def _trailing(function: DslFunction, values: dict[str, Any], start: int) -> list[str]:
    """The operand parameters after the first ``start`` that the call gives (not left at None)."""
    names = list(function.signature.parameters)[start:]
    return [n for n in names if n in function.param_roles and values.get(n) is not None]


def _trailing_operands(
    ctx: OpContext, function: DslFunction, form: OpSpec, values: dict[str, Any]
) -> list[Any]:
    """The operands a binary op's form takes after its two (``tmp``), as the call gives them."""
    taken = [o for o in form.operands[2:]]
    given = _trailing(function, values, 2)
    extra = [n for n in given if n not in {o.name for o in taken}]
    if extra:
        raise TypeCheckError(
            f"{ctx.name}: {extra[0]}= is not taken on {_kind(form)}",
            ctx.span,
            f"drop it: {form.signature}",
        )
    args: list[Any] = []
    for o in taken:
        value = values.get(o.name)
        if value is None:
            if o.optional:
                break
            raise ctx.fail(f"needs {o.name}", f"signature: {form.signature}")
        converted = operand(ctx, o.role, value, operand_words(function, form, o.name))
        args.append(ctx.body.atom(converted) if o.role in STORAGE else converted)
    return args


def _kind(form: OpSpec) -> str:
    return "tiles" if form.level is Level.TILE else "tensors" if form.level is Level.TENSOR else "scalars"


def reject_foreign_attributes(
    ctx: OpContext, function: DslFunction, form: OpSpec, values: dict[str, Any]
) -> None:
    """A keyword only another level of the op takes (``high_precision=True`` of ``pl.rsqrt`` on a
    tile) is a ``TypeCheckError`` naming it, never dropped; its default value is accepted."""
    own = {a.name for a in form.attrs}
    for spec in function.specs:
        for attr in spec.attrs:
            if attr.name in own or attr.name not in values:
                continue
            given = values[attr.name]
            default = function.signature.parameters[attr.name].default
            if given is None or given is default or given == default:
                continue
            others = " or ".join(f"{_kind(s)}" for s in function.forms if s.attr(attr.name) is not None)
            raise TypeCheckError(
                f"{ctx.name}: {attr.name}= applies to {others}, not to {_kind(form)}",
                ctx.span,
                f"on {_kind(form)} the call is {form.signature}",
            )


def build_generic(ctx: OpContext, function: DslFunction, bound: inspect.BoundArguments) -> Any:
    """An op whose parameters bind to its spec's operands and attributes by name."""
    values = bound.arguments
    form = _form(ctx, function, values)
    if not isinstance(form, OpSpec):
        return form  # a unary op on a scalar: the folded number, or its scalar op
    if _is_generator(function) and ctx.pinned is None:
        return _fill(ctx, function, form, values)
    reject_foreign_attributes(ctx, function, form, values)
    attrs = _attributes(ctx, function, form, values)
    args = _operands(ctx, function, form, values, attrs)
    reduction = form.trait(Reduction)
    reduced = None
    if reduction is not None and args and is_tile(args[0]):  # it sees only the valid region
        reduced = reduced_valid(ctx, args[0], reduction.axis)
        args[0] = padded_for_reduction(ctx, args[0], reduction.identity)
    written = form.writes
    call = ctx.call(form.name, args, attrs)
    if reduced is not None:
        return with_valid(ctx, call, reduced)
    if written:
        ctx.body.emit(Eval(call, ctx.span))
        return args[written[0]]  # destination-passing: the expression is the written operand
    if call.type == UNIT:
        ctx.body.emit(Eval(call, ctx.span))
        return None
    return call


def _form(ctx: OpContext, function: DslFunction, values: dict[str, Any]) -> Any:
    """The spec the call builds: the only one, or the one of the level of the first operand."""
    forms = function.forms
    if len(forms) == 1:
        return forms[0]
    if _is_generator(function):  # no operand to take the level from: the call's own
        level = ctx.pinned or ctx.body.fill_levels.level(ctx.span)
        return function.at_level(level) or forms[0]
    ctx.settle(*(values[p] for p, role in function.param_roles.items() if role in STORAGE))
    params = function.signature.parameters
    first = next((p for p in params if function.param_roles.get(p) in STORAGE), next(iter(params)))
    value = values[first]
    if is_scalar(value):
        scalar = function.at_level(Level.SCALAR)
        if scalar is not None:
            return scalar
        if all(s.has(Elementwise) and len(s.operands) == 1 for s in forms):
            return scalar_unary(ctx, function.name, value)
    x = ctx.shaped(value, operand_words(function, forms[0], first))
    form = function.at_level(Level(ctx.level_of(x)))
    if form is None:
        levels = " or ".join(f"{level.value}s" for level in function.levels)
        raise ctx.fail(f"takes {levels}, got {describe_value(x)}", f"signature: {ctx.signature()}")
    return form


def _is_generator(function: DslFunction) -> bool:
    """An op of several levels that takes no tensor or tile (``pl.full``): it makes one."""
    return len(function.forms) > 1 and not any(r in STORAGE for r in function.param_roles.values())


def _fill(ctx: OpContext, function: DslFunction, form: OpSpec, values: dict[str, Any]) -> Any:
    """A generator written ``pl.full(...)``: of the level its site has now, a free value whose
    uses may ask for the other level (:mod:`~pypto.language.parser.fills`)."""
    attrs = _attributes(ctx, function, form, values)
    call = ctx.call(form.name, _operands(ctx, function, form, values, attrs), attrs)
    if ctx.span is not None:
        ctx.body.fills[call] = frozenset({ctx.span})
    return call


def _attributes(
    ctx: OpContext, function: DslFunction, form: OpSpec, values: dict[str, Any]
) -> dict[str, Any]:
    """The call's attributes, in the spec's order; one left at None, or a flag that is off, is
    left out."""
    attrs: dict[str, Any] = {}
    for attr in form.attrs:
        if attr.name not in values:
            continue
        value = values[attr.name]
        if value is None and function.signature.parameters[attr.name].default is None:
            continue
        value = attribute(ctx, form, attr, value)
        if value is not None and value is not False:
            attrs[attr.name] = value
    return attrs


def _operands(
    ctx: OpContext, function: DslFunction, form: OpSpec, values: dict[str, Any], attrs: dict[str, Any]
) -> list[Any]:
    """The call's operands: the form's, in its order, then those only other levels take (the type
    rule says which form applies); a valid-shape operand the call does not name is the run-time
    valid shape of the form's tile operand."""
    args: list[Any] = []
    params = operand_params(form)
    for o in form.operands:
        param = params.get(o.name)
        if param is None:  # not a DSL parameter: a valid shape comes with the tile operand
            if o.role is Role.VALID_SHAPE and args and is_tile(args[0]) and ctx.valid_of(args[0]) is not None:
                args.append(ctx.valid_of(args[0]))
            continue
        value = values[param]
        if value is None and (o.optional or function.signature.parameters[param].default is None):
            continue  # left out: the type rule says whether this form needs it
        dtype = _element_dtype(form, args, attrs) if o.role is Role.SCALAR else None
        if o.role is Role.OFFSETS and _one_index(value, args):
            value = [value]  # pl.read(table, i): the offsets of a 1-D tensor may be its index alone
        converted = operand(ctx, o.role, value, operand_words(function, form, param), dtype)
        args.append(ctx.body.atom(converted) if o.role in STORAGE else converted)
    named = set(params.values())
    for name, role in function.param_roles.items():
        if name not in named and values.get(name) is not None:
            what = operand_words(function, form, name)
            args.append(operand(ctx, Role.SHAPED if role in STORAGE else role, values[name], what))
    return args


def _element_dtype(form: OpSpec, args: list[Any], attrs: dict[str, Any]) -> Any:
    """The dtype a scalar operand's constant takes: the shaped operand's, else the op's dtype= (a
    tile op making a tile of it); a scalar op keeps the constant's own kind."""
    shaped = next((a for a in args if is_shaped(a)), None)
    if shaped is not None:
        return element_dtype(shaped)
    return attrs.get("dtype") if form.level is not Level.SCALAR else None


def _one_index(value: Any, converted: list[Any]) -> bool:
    """Whether ``value`` is a bare integer index where offsets are taken, after a 1-D tensor."""
    tensor = next((a for a in converted if is_shaped(a)), None)
    if tensor is None or len(shaped_type(tensor).shape) != 1 or not is_scalar(value):
        return False
    plain = number(value) if is_number(value) else value
    return not isinstance(plain, (bool, float)) and not (
        isinstance(plain, Expr) and isinstance(plain.type, ScalarType) and not plain.type.dtype.is_integer
    )
