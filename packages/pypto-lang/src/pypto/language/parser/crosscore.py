"""Op builders of the explicit mixed-kernel form: pipes, region boundaries, lane indices, system ops.

Each builder takes the ``OpContext`` and the op's DSL signature; the op table's type rules check
what they can (pipe setup values, pop shapes, ``syncall`` modes and workspaces) at the user's line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pypto.ir import DataType, Expr, SplitMode
from pypto.language.annotations import dtype_hint
from pypto.language.parser.opcall import OpContext
from pypto.language.parser.values import describe_value, index_tuple, is_number, number, static_shape

SYNCALL_CORE_TYPES = (None, "aic", "aiv", "mix")

Builder = Callable[..., Any]


def compile_time(ctx: OpContext, value: Any, what: str) -> Any:
    """``value`` as a plain Python value; a run-time IR value is an error."""
    if isinstance(value, Expr) and not is_number(value):
        raise ctx.fail(
            f"{what} must be known at compile time, got {describe_value(value)}",
            f"write {what} as a constant (a literal, a module global or a value folded from a.shape); "
            "a scalar parameter is a constant when the kernel is called with a Python number",
        )
    return number(value) if is_number(value) else value


def split_mode(ctx: OpContext, value: Any) -> SplitMode:
    if not isinstance(value, SplitMode):
        raise ctx.fail(
            f"split= takes a pl.SplitMode, got {describe_value(value)}",
            "write split=pl.SplitMode.UP_DOWN, LEFT_RIGHT or NONE",
        )
    return value


def _initialize_pipe(op: str) -> Builder:
    def build(ctx: OpContext, *, dir_mask: Any, slot_size: Any, slot_num: Any) -> None:
        values = {"dir_mask": dir_mask, "slot_size": slot_size, "slot_num": slot_num}
        attrs = {name: compile_time(ctx, value, f"{name}=") for name, value in values.items()}
        return ctx.effect(op, [], attrs, None)

    return build


def _push(op: str) -> Builder:
    def build(ctx: OpContext, tile: Any, split: Any = SplitMode.NONE) -> None:
        return ctx.effect(op, [ctx.tile(tile, "the pushed value")], {"split": split_mode(ctx, split)}, None)

    return build


def _pop(op: str) -> Builder:
    def build(ctx: OpContext, shape: Any, dtype: Any, split: Any = SplitMode.NONE) -> Any:
        if not isinstance(dtype, DataType):
            raise ctx.fail(
                f"dtype must be a pl dtype such as pl.FP32, got {describe_value(dtype)}",
                f"{dtype_hint(dtype)}: the dtype of the tile the other side pushes",
            )
        attrs = {"shape": static_shape(shape, ctx.span), "dtype": dtype, "split": split_mode(ctx, split)}
        return ctx.call(op, [], attrs)

    return build


def _free(op: str) -> Builder:
    def build(ctx: OpContext, tile: Any) -> None:
        return ctx.effect(op, [ctx.tile(tile, "the popped tile")], None, None)

    return build


def build_aiv_shard(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """Without ``split=``, the mode of the region that follows in the scope (else NONE)."""
    regions = ctx.body.regions
    if split is None:
        split = regions.next_mode() if regions is not None else SplitMode.NONE
    return ctx.call("aiv_shard", [ctx.tile(tile, "the sharded value")], {"split": split_mode(ctx, split)})


def build_aic_gather(ctx: OpContext, tile: Any, split: Any = None) -> Any:
    """Without ``split=``, the mode of the region parsed last in the scope (else NONE)."""
    regions = ctx.body.regions
    if split is None:
        split = regions.previous_mode() if regions is not None else SplitMode.NONE
    return ctx.call("aic_gather", [ctx.tile(tile, "the gathered value")], {"split": split_mode(ctx, split)})


def _lane_index(op: str) -> Builder:
    def build(ctx: OpContext) -> Any:
        return ctx.call(op, [])

    return build


def build_fence(ctx: OpContext) -> None:
    return ctx.effect("system.fence", [], None, None)


def build_cacheinvalid(ctx: OpContext, tensor: Any = None, offsets: Any = None, shape: Any = None) -> None:
    """``cacheinvalid()``: all of global memory; ``cacheinvalid(t, [offsets], [shape])``: one region."""
    if tensor is None and offsets is None and shape is None:
        return ctx.effect("system.cacheinvalid", [], None, None)
    if tensor is None or offsets is None or shape is None:
        raise ctx.fail(
            "the region form takes a tensor, its offsets and the region's shape",
            "write pl.system.cacheinvalid() for all of global memory, or "
            "pl.system.cacheinvalid(t, [0, 0], [1, 64]) for one region",
        )
    t = ctx.tensor(tensor, "the invalidated value")
    starts = index_tuple(offsets, ctx.span)
    extent = static_shape(shape, ctx.span)
    rank = len(t.type.shape)  # type: ignore[attr-defined]
    if len(starts.elements) != rank or len(extent) != rank:
        raise ctx.fail(
            f"offsets and shape must each hold {rank} entries, one per dim of {describe_value(t)}",
            f"e.g. pl.system.cacheinvalid(t, {[0] * rank}, {list(t.type.shape)}) for all of it",  # type: ignore[attr-defined]
        )
    return ctx.effect("system.cacheinvalid", [t, starts], {"shape": extent}, None)


def build_syncall(
    ctx: OpContext,
    core_type: Any = None,
    mode: Any = "hard",
    gm_workspace: Any = None,
    used_cores: Any = None,
) -> None:
    """A barrier; ``mode="soft"`` also needs ``gm_workspace=`` and ``used_cores=`` (the op table checks)."""
    core_type = compile_time(ctx, core_type, "core_type=")
    if core_type not in SYNCALL_CORE_TYPES:
        raise ctx.fail(
            f'core_type must be "aic", "aiv" or "mix", got {describe_value(core_type)}',
            'leave core_type out to count every core of the launch, like "mix"',
        )
    attrs: dict[str, Any] = {} if core_type is None else {"core_type": core_type}
    attrs["mode"] = compile_time(ctx, mode, "mode=")
    if used_cores is not None:
        attrs["used_cores"] = compile_time(ctx, used_cores, "used_cores=")
    args = [] if gm_workspace is None else [ctx.tensor(gm_workspace, "gm_workspace")]
    return ctx.effect("system.syncall", args, attrs, None)


CROSS_CORE_BUILDERS: dict[str, Builder] = {
    "aic_initialize_pipe": _initialize_pipe("aic_initialize_pipe"),
    "aiv_initialize_pipe": _initialize_pipe("aiv_initialize_pipe"),
    "tpush_to_aiv": _push("tpush_to_aiv"),
    "tpush_to_aic": _push("tpush_to_aic"),
    "tpop_from_aic": _pop("tpop_from_aic"),
    "tpop_from_aiv": _pop("tpop_from_aiv"),
    "tfree_to_aic": _free("tfree_to_aic"),
    "tfree_to_aiv": _free("tfree_to_aiv"),
    "aiv_shard": build_aiv_shard,
    "aic_gather": build_aic_gather,
    **{op: _lane_index(op) for op in ("get_subblock_idx", "get_block_idx", "get_block_num")},
    "system.fence": build_fence,
    "system.cacheinvalid": build_cacheinvalid,
    "system.syncall": build_syncall,
}
