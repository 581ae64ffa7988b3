"""The builders of the generators, which have no operand to pick a level by: ``pl.arange`` and
``pl.random`` make a tensor (tiled by the compiler like any tensor op of a scope), their
``pl.tile.*`` spellings a Vec tile; ``pl.tri`` makes a mask tile."""

from __future__ import annotations

from typing import Any

from pypto.ir import DataType, Expr, get_op
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.ops import tile as tile_ops
from pypto.language.dslops import hand_built
from pypto.language.parser.convert import attribute
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, index_tuple, is_scalar, scalar_expr, static_shape


def _level_op(ctx: OpContext, tensor_op: str, tile_op: str) -> str:
    """The tile form for a ``pl.tile.*`` spelling, the tensor form otherwise."""
    return tile_op if ctx.level == "tile" else tensor_op


def _scalar(ctx: OpContext, value: Any, what: str, dtype: DataType | None) -> Expr:
    if not is_scalar(value):
        raise ctx.fail(
            f"{what} must be a scalar, got {describe_value(value)}",
            f"pass an int or an integer run-time scalar as {what}; signature: {ctx.signature()}",
        )
    return scalar_expr(value, dtype, ctx.span)


def _attrs(ctx: OpContext, op: str, **values: Any) -> dict[str, Any]:
    """The given attribute values, each converted by its kind (shapes static)."""
    spec = get_op(op)
    attrs: dict[str, Any] = {}
    for name, value in values.items():
        attr = spec.attr(name)
        assert attr is not None
        if name == "shape":
            attrs[name] = static_shape(value, ctx.span)
            continue
        converted = attribute(ctx, spec, attr, value)
        if converted is not False:  # a flag that is off is left out, as the printer leaves it
            attrs[name] = converted
    return attrs


@hand_built(tensor_ops.ci, tile_ops.ci)
def build_arange(
    ctx: OpContext, start: Any, shape: Any, dtype: Any = DataType.INT32, descending: Any = False
) -> Any:
    """``pl.arange(start, shape, dtype=pl.INT32, descending=False)``: ``start + k`` (``start - k``)
    at row-major position ``k``."""
    op = _level_op(ctx, tensor_ops.ci, tile_ops.ci)
    attrs = _attrs(ctx, op, shape=shape, dtype=dtype, descending=descending)
    return ctx.call(op, [_scalar(ctx, start, "start", None)], attrs)


@hand_built(tensor_ops.random, tile_ops.random)
def build_random(ctx: OpContext, shape: Any, dtype: Any = DataType.FP32, seed: Any = 0) -> Any:
    """``pl.random(shape, dtype=pl.FP32, seed=0)``: the numbers of ``seed`` at each position."""
    op = _level_op(ctx, tensor_ops.random, tile_ops.random)
    attrs = _attrs(ctx, op, shape=shape, dtype=dtype)
    return ctx.call(op, [_scalar(ctx, seed, "seed", None)], attrs)


@hand_built(tile_ops.tri)
def build_tri(
    ctx: OpContext, shape: Any, dtype: Any, upper: Any = False, diagonal: Any = 0, valid_shape: Any = None
) -> Any:
    """``pl.tri(shape, dtype, upper=False, diagonal=0, valid_shape=None)``: a triangular mask."""
    attrs = _attrs(ctx, tile_ops.tri, shape=shape, dtype=dtype, upper=upper)
    args: list[Any] = [_scalar(ctx, diagonal, "diagonal", None)]
    if valid_shape is not None:
        args.append(index_tuple(valid_shape, ctx.span, "valid_shape"))
    return ctx.call(tile_ops.tri, args, attrs)
