"""The builders of the gather, scatter and sort ops whose calls PyPTO code writes in more than one
order: ``pl.gather(src, index, dim=-1)`` or, as torch writes it, ``pl.gather(src, dim, index)``
(likewise ``pl.scatter`` / ``pl.scatter_update(input, dim, index, src)``); ``pl.mscatter`` with
the output tensor first or last; ``pl.mrgsort(src, block_len)`` (runs of one value) or
``pl.mrgsort(src0, src1, ...)`` (two to four lists)."""

from __future__ import annotations

from typing import Any

from pypto.ir import Call, Eval, Expr, get_op
from pypto.ir.ops import tensor as tensor_ops
from pypto.ir.ops import tile as tile_ops
from pypto.language.dslops import hand_built
from pypto.language.parser.convert import compile_time
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, is_number, is_shaped, is_tile, number


def _is_dim(value: Any) -> bool:
    plain = number(value) if is_number(value) else value
    return isinstance(plain, int) and not isinstance(plain, bool)


def _dim(ctx: OpContext, value: Any) -> int:
    plain = compile_time(ctx, value, "dim=")
    if not isinstance(plain, int) or isinstance(plain, bool):
        raise ctx.fail(f"dim= must be an int, got {describe_value(value)}", "e.g. dim=-1")
    return plain


def _level(ctx: OpContext, x: Any, tile_op: str, tensor_op: str, what: str) -> str:
    value = ctx.shaped(x, what)
    return tile_op if ctx.level_of(value) == "tile" else tensor_op


@hand_built(tile_ops.gather, tensor_ops.gather)
def build_gather(ctx: OpContext, src: Any, index: Any, dim: Any = -1) -> Any:
    """``pl.gather(src, index, dim=-1)`` (or ``pl.gather(src, dim, index)``)."""
    if _is_dim(index) and is_shaped(dim):
        index, dim = dim, index  # torch's order
    ctx.settle(src, index)
    op = _level(ctx, src, tile_ops.gather, tensor_ops.gather, "source")
    return ctx.call(op, [src, ctx.shaped(index, "index")], _dim_attrs(ctx, dim, -1))


def _dim_attrs(ctx: OpContext, dim: Any, default: int) -> dict[str, Any]:
    """The ``dim`` attribute, left out at its default (as the printer leaves it)."""
    given = _dim(ctx, dim)
    return {} if given == default else {"dim": given}


def _scattered(ctx: OpContext, name: str, args: tuple[Any, Any, Any, Any]) -> Any:
    input_, index, src, dim = args
    if _is_dim(index) and is_shaped(dim):
        index, src, dim = src, dim, index  # torch's order: (input, dim, index, src)
    if src is None:
        raise ctx.fail("needs the source values", f"write pl.{name}(input, index, src)")
    ctx.settle(input_, index, src)  # a pl.full input beside tiles is a tile
    op = _level(ctx, input_, getattr(tile_ops, name), getattr(tensor_ops, name), "input")
    default = -1 if name == "scatter" else -2
    value = ctx.call(
        op, [input_, ctx.shaped(index, "index"), ctx.shaped(src, "source")], _dim_attrs(ctx, dim, default)
    )
    if get_op(op).writes and isinstance(value, Call):
        # the input is updated in place (a tensor in global memory, or the tile): the value is it
        ctx.body.emit(Eval(value, ctx.span))
        return value.args[0]
    return value


@hand_built(tile_ops.scatter, tensor_ops.scatter)
def build_scatter(ctx: OpContext, input: Any, index: Any, src: Any = None, dim: Any = -1) -> Any:
    """``pl.scatter(input, index, src, dim=-1)`` (or ``pl.scatter(input, dim, index, src)``)."""
    return _scattered(ctx, "scatter", (input, index, src, dim))


@hand_built(tile_ops.scatter_update, tensor_ops.scatter_update)
def build_scatter_update(ctx: OpContext, input: Any, index: Any, src: Any = None, dim: Any = -2) -> Any:
    """``pl.scatter_update(input, index, src, dim=-2)`` (or ``(input, dim, index, src)``)."""
    return _scattered(ctx, "scatter_update", (input, index, src, dim))


@hand_built(tile_ops.mscatter)
def build_mscatter(ctx: OpContext, src: Any, index: Any, output_tensor: Any, coalesce: Any = "row") -> Any:
    """``pl.mscatter(src, index, output_tensor, coalesce="row")``; the output tensor may come first."""
    if not is_tile(src) and is_tile(output_tensor):
        src, output_tensor = output_tensor, src
    mode = compile_time(ctx, coalesce, "coalesce=")
    attrs = {} if mode == "row" else {"coalesce": mode}
    args = [ctx.tile(src, "source"), ctx.tile(index, "index"), ctx.tensor(output_tensor, "output tensor")]
    return ctx.effect(tile_ops.mscatter, args, attrs, args[2])


@hand_built(
    tile_ops.mrgsort_format1, tensor_ops.mrgsort_format1, tile_ops.mrgsort_format2, tensor_ops.mrgsort_format2
)
def build_mrgsort(
    ctx: OpContext, src: Any, src1: Any = None, src2: Any = None, src3: Any = None, block_len: Any = None
) -> Any:
    """``pl.mrgsort(src, block_len)``: each row's sorted runs merged four at a time;
    ``pl.mrgsort(src0, src1, src2=None, src3=None)``: two to four sorted lists merged into one."""
    tile = ctx.level_of(ctx.shaped(src, "source")) == "tile"
    if block_len is not None or (src1 is not None and not is_shaped(src1)):
        length = compile_time(ctx, block_len if block_len is not None else src1, "block_len=")
        op = tile_ops.mrgsort_format1 if tile else tensor_ops.mrgsort_format1
        return ctx.call(op, [src], {"block_len": length})
    lists: list[Expr] = [
        ctx.shaped(x, f"list {i}") for i, x in enumerate((src, src1, src2, src3)) if x is not None
    ]
    if len(lists) < 2:
        raise ctx.fail(
            "merges two to four sorted lists, or one source's runs of block_len",
            "write pl.mrgsort(a, b) (lists) or pl.mrgsort(src, block_len=32) (runs)",
        )
    op = tile_ops.mrgsort_format2 if tile else tensor_ops.mrgsort_format2
    return ctx.call(op, lists)
