"""Parse-time ``pl`` functions: ``pl.static_print``, ``pl.static_assert``, ``pl.const``, and the
scalar ``pl.min`` / ``pl.max``.

A directive runs while the parser reads the kernel, on the values it has there (constants, and
IR values it only describes); it leaves no IR of its own (``pl.const`` is a typed constant,
``pl.min`` the scalar op ``pl.minimum`` builds). Called as plain Python it raises, like every
``pl`` builtin: a kernel body is parsed, never executed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NoReturn

from pypto.ir import (
    INDEX,
    Const,
    DataType,
    DimExpr,
    DynDim,
    Expr,
    MemorySpace,
    ScalarType,
    SourceSpan,
    TensorType,
)
from pypto.language.errors import KernelOnlyError
from pypto.language.parser.values import describe_value, is_number, is_scalar, number

if TYPE_CHECKING:
    from pypto.language.parser.opcall import OpContext

# run(ctx, args, kwargs) -> the call's value
Run = Callable[["OpContext", list[Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class Directive:
    """A ``pl`` function the parser runs at parse time: ``pl.static_assert(cond, msg)``."""

    name: str
    signature: str
    doc: str
    run: Run

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise KernelOnlyError(
            f"pl.{self.name}() can only be used inside a @pl.jit function",
            hint="kernels are parsed, not executed: call the @pl.jit function with torch tensors instead",
        )

    def __repr__(self) -> str:
        return f"<pl directive {self.signature}>"


def _bind(
    ctx: OpContext,
    directive: str,
    names: tuple[str, ...],
    args: list[Any],
    kwargs: dict[str, Any],
    required: int,
) -> list[Any]:
    """The arguments of ``names`` by position or keyword (the first ``required`` must be given)."""
    values = list(args)
    if len(values) > len(names):
        raise ctx.fail(f"takes at most {len(names)} arguments, got {len(values)}", f"signature: {directive}")
    for name in names[len(values) :]:
        values.append(kwargs.pop(name, _UNSET))
    if kwargs:
        raise ctx.fail(
            f"got an unexpected keyword argument {next(iter(kwargs))!r}", f"signature: {directive}"
        )
    if any(v is _UNSET for v in values[:required]):
        raise ctx.fail(f"needs {', '.join(names[:required])}", f"signature: {directive}")
    return [None if v is _UNSET else v for v in values]


_UNSET = object()


def _text(value: Any) -> str:
    """A value as static_print shows it: constants as Python prints them, IR values by type."""
    if isinstance(value, Expr) and not is_number(value):
        return describe_value(value)
    return str(number(value) if is_number(value) else value)


def _static_print(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise ctx.fail("takes positional arguments only", "write pl.static_print(a, b, ...)")
    where = _where(ctx.span)
    print(f"{where}static_print: {' '.join(_text(a) for a in args)}", file=sys.stdout)


def _where(span: SourceSpan | None) -> str:
    return f"{span.file}:{span.line}: " if span is not None else ""


def _static_assert(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> None:
    cond, msg = _bind(ctx, "pl.static_assert(cond, msg=None)", ("cond", "msg"), args, kwargs, 1)
    if isinstance(cond, Expr) and not is_number(cond):
        raise ctx.fail(
            f"the condition must be known at compile time, got {describe_value(cond)}",
            "assert on shapes, constants and scalar arguments; a run-time value is checked with an if",
        )
    if not (number(cond) if is_number(cond) else cond):
        said = f": {_text(msg)}" if msg is not None else ""
        raise ctx.fail(
            f"static assertion failed{said}",
            "the assertion checks the kernel's compile-time values: call it with arguments that satisfy it",
        )


def _const(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> Const:
    value, dtype = _bind(ctx, "pl.const(value, dtype)", ("value", "dtype"), args, kwargs, 2)
    if not is_number(value):
        raise ctx.fail(
            f"the value must be a number known at compile time, got {describe_value(value)}",
            "write a literal or a constant, e.g. pl.const(1.0, pl.FP16); convert a run-time scalar "
            "with pl.cast(x, dtype)",
        )
    if not isinstance(dtype, DataType):
        raise ctx.fail(
            f"the dtype must be a pl dtype, got {describe_value(dtype)}", "e.g. pl.const(0, pl.INT32)"
        )
    plain = number(value)
    if dtype.is_integer and not (isinstance(plain, int) or float(plain).is_integer()):
        raise ctx.fail(
            f"{plain!r} is not a whole number, so it is no pl.{dtype.name}",
            f"round it first, or pick a float dtype: pl.const({plain!r}, pl.FP32)",
        )
    typed: int | float | bool = (
        bool(plain) if dtype.is_bool else int(plain) if dtype.is_integer else float(plain)
    )
    return Const(typed, ScalarType(dtype), ctx.span)


def _scalar_extremum(elementwise: str) -> Run:
    """``pl.min(a, b)`` on scalars: the scalar form of ``pl.minimum``."""

    def run(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> Any:
        from pypto.language.parser.ops import build_op

        lhs, rhs = _bind(ctx, f"{ctx.name}(lhs, rhs)", ("lhs", "rhs"), args, kwargs, 2)
        for value in (lhs, rhs):
            if not is_scalar(value):
                reduce = "row_min" if elementwise == "minimum" else "row_max"
                raise ctx.fail(
                    f"takes scalars, got {describe_value(value)}",
                    f"on tensors and tiles use pl.{elementwise}(a, b) (elementwise) or pl.{reduce}(x) "
                    "(a reduction)",
                )
        return build_op(ctx, elementwise, [lhs, rhs], {})

    return run


def _tensor_dim(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> Expr:
    """``pl.dim(t, axis)`` (also ``pl.tensor.dim``): a static extent as a constant, a dynamic one
    as itself (a :class:`~pypto.ir.DynDim` or an expression of them: the value it has at run time)."""
    tensor, axis = _bind(ctx, f"{ctx.name}(tensor, axis)", ("tensor", "axis"), args, kwargs, 2)
    t = getattr(tensor, "type", None)
    if not isinstance(t, TensorType):
        raise ctx.fail(
            f"takes a tensor, got {describe_value(tensor)}",
            "pass a tensor parameter (or a tensor made with pl.create_tensor); a tile's shape is static",
        )
    rank = len(t.shape)
    if not is_number(axis) or isinstance(number(axis), bool) or not isinstance(number(axis), int):
        raise ctx.fail(f"the axis must be an int known at compile time, got {describe_value(axis)}", "e.g. 0")
    index = int(number(axis))
    if not -rank <= index < rank:
        raise ctx.fail(
            f"axis {index} is out of range for a tensor of rank {rank}", f"pass an axis in 0..{rank - 1}"
        )
    extent = t.shape[index]
    if isinstance(extent, DynDim):
        return replace(extent, span=ctx.span)
    if isinstance(extent, DimExpr):
        return extent
    return Const(extent, INDEX, ctx.span)


TENSOR_DIM = Directive(
    "tensor.dim", "pl.tensor.dim(tensor, axis)", "the extent of one axis of a tensor", _tensor_dim
)


def _create_l1(ctx: OpContext, args: list[Any], kwargs: dict[str, Any]) -> Expr:
    """``pl.create_l1(shape, dtype, transpose=False)``: a tile in L1 (``pl.Mem.Mat``), as
    ``pl.create_tile(shape, dtype, target_memory=pl.Mem.Mat)`` makes one. ``transpose=True`` asks
    for the transposed box layout a ``b_trans`` matmul operand has on chip; the simulator holds
    tiles in their logical layout, so it changes no number."""
    from pypto.language.parser.partial import build_create_tile

    shape, dtype, transpose = _bind(
        ctx, "pl.create_l1(shape, dtype, transpose=False)", ("shape", "dtype", "transpose"), args, kwargs, 2
    )
    plain = number(transpose) if is_number(transpose) else transpose
    if plain is not None and not isinstance(plain, bool):
        raise ctx.fail(
            f"transpose= must be True or False, got {describe_value(transpose)}",
            "write transpose=True for the layout of a b_trans matmul operand, or leave it out",
        )
    result: Expr = build_create_tile(ctx, shape, dtype, MemorySpace.Mat)
    return result


CREATE_L1 = Directive(
    "create_l1", "pl.create_l1(shape, dtype, transpose=False)", "a tile in L1 (pl.Mem.Mat)", _create_l1
)


DIRECTIVES: dict[str, Directive] = {
    d.name: d
    for d in (
        Directive(
            "static_print", "pl.static_print(*args)", "print values while the kernel compiles", _static_print
        ),
        Directive(
            "static_assert",
            "pl.static_assert(cond, msg=None)",
            "fail the compile when a compile-time condition is false",
            _static_assert,
        ),
        Directive("const", "pl.const(value, dtype)", "a constant of the given dtype", _const),
        Directive("min", "pl.min(lhs, rhs)", "the smaller of two scalars", _scalar_extremum("minimum")),
        Directive("max", "pl.max(lhs, rhs)", "the larger of two scalars", _scalar_extremum("maximum")),
        Directive("dim", "pl.dim(tensor, axis)", "the extent of one axis of a tensor", _tensor_dim),
        CREATE_L1,
    )
}
