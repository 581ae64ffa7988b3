"""The builders of the ops whose operands the generic binding cannot judge alone: selections by
a mask (``pl.sel`` picks ``pl.sels`` for a scalar third operand; a scalar takes the dtype of the
picked tile, not the mask's) and the partial ops (``pl.part_add``), which combine the valid
regions their operands' types say and so take no operand whose valid shape is known only at run
time."""

from __future__ import annotations

from typing import Any

from pypto.ir import Expr, TensorType, TileType
from pypto.ir.ops import Level, tile
from pypto.language.dslops import dsl_function, hand_built
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, element_dtype, is_scalar, tile_scalar


def _scratch(ctx: OpContext, tmp: Any) -> list[Expr]:
    return [] if tmp is None else [ctx.tile(tmp, "scratch tile")]


@hand_built(tile.sel)
def build_sel(ctx: OpContext, mask: Any, lhs: Any, rhs: Any, tmp: Any = None) -> Any:
    """``pl.sel(mask, lhs, rhs)``: lhs where the mask holds, else rhs (a tile, or a scalar:
    ``pl.sels``)."""
    if is_scalar(rhs):
        return build_sels(ctx, mask, lhs, rhs, tmp)
    operands = [ctx.tile(mask, "mask"), ctx.tile(lhs, "left operand"), ctx.tile(rhs, "right operand")]
    return ctx.call(tile.sel, [*operands, *_scratch(ctx, tmp)])


@hand_built(tile.sels)
def build_sels(ctx: OpContext, mask: Any, lhs: Any, scalar: Any, tmp: Any = None) -> Any:
    """``pl.sels(mask, lhs, scalar)``: lhs where the mask holds, else the scalar (in lhs's dtype)."""
    picked = ctx.tile(lhs, "left operand")
    if not is_scalar(scalar):
        raise ctx.fail(
            f"the third operand must be a scalar, got {describe_value(scalar)}",
            "pick between two tiles with pl.sel(mask, a, b)",
        )
    value = tile_scalar(scalar, element_dtype(picked), ctx.span)
    return ctx.call(tile.sels, [ctx.tile(mask, "mask"), picked, value, *_scratch(ctx, tmp)])


@hand_built(
    *(f"{level}.part_{name}" for level in ("tensor", "tile") for name in ("add", "mul", "max", "min"))
)
def build_part(ctx: OpContext, lhs: Any, rhs: Any) -> Any:
    """``pl.part_add(lhs, rhs)`` on tensors or tiles whose valid shapes are in their types."""
    function = dsl_function(ctx.builtin or "")
    assert function is not None
    x = ctx.shaped(lhs, "left operand")
    y = ctx.shaped(rhs, "right operand")
    for value in (x, y):
        if ctx.valid_of(value) is not None:
            where = (
                "a tile whose valid shape"
                if isinstance(value.type, TileType)
                else "a tensor view whose valid shape"
            )
            raise ctx.fail(
                f"combines the valid regions of its operands' types, and got {where} is set at run time",
                "give the operands constant valid shapes (pl.set_validshape(t, rows, cols) with numbers), or "
                "combine the whole tiles with pl.add / pl.mul / pl.maximum / pl.minimum",
            )
    level = Level.TILE if isinstance(x.type, TileType) else Level.TENSOR
    form = function.at_level(level)
    assert form is not None and isinstance(x.type, (TileType, TensorType))
    return ctx.call(form.name, [x, y])
