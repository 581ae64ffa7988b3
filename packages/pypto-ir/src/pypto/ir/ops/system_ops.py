"""System ops: cross-core memory ordering (fence, cache invalidation, barriers), the block
index of a launch, kernel calls, and the dependency join ``pl.system.task_dummy``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.enums import PipeType
from pypto.ir.ops.rules import (
    check_offsets,
    check_static_bounds,
    fail,
    given,
    index_result,
    numel,
    unit_result,
)
from pypto.ir.ops.spec import (
    Attr,
    Cost,
    Effect,
    GmAccess,
    Level,
    Operand,
    OpSpec,
    Ordering,
    Role,
    TaskIds,
    Unit,
    declare,
)
from pypto.ir.types import TASK_ID, UNIT, ScalarType, TensorType, Type, describe


def cacheinvalid(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    op = spec.name
    if not args:
        return UNIT  # the whole of global memory
    t = args[0].type
    if not isinstance(t, TensorType):
        raise fail(
            op,
            f"invalidates a tensor region, got {describe(t)}",
            span,
            advice="cacheinvalid.needs_tensor",
        )
    if len(args) > 1:
        shape = tuple(attrs.get("shape") or ())
        if len(shape) != len(t.shape):
            raise fail(
                op,
                f"a region of {describe(t)} needs a shape of rank {len(t.shape)}",
                span,
                advice="cacheinvalid.rank_mismatch",
                t=t,
            )
        check_offsets(op, args[1], len(t.shape), span)
        check_static_bounds(op, t.shape, args[1], shape, span)
    return UNIT


# The cores a syncall counts: "aiv_only" / "aic_only" are PyPTO's spellings of "aiv" / "aic".
CORE_TYPES = (None, "aic", "aiv", "mix", "aic_only", "aiv_only")


def syncall(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    op = spec.name
    core_type = attrs.get("core_type")
    if core_type not in CORE_TYPES:
        raise fail(
            op,
            f'core_type must be "aic", "aiv" or "mix" (or "aic_only" / "aiv_only"), got {core_type!r}',
            span,
            'leave core_type out to count every core of the launch, like "mix"',
        )
    mode = attrs.get("mode", "hard")
    if mode not in ("hard", "soft"):
        raise fail(
            op,
            f'mode must be "hard" or "soft", got {mode!r}',
            span,
            'write mode="hard" (the default: every core meets), or mode="soft" with gm_workspace= '
            "and used_cores=",
        )
    if mode == "soft":
        if not args:
            raise fail(
                op,
                'mode="soft" needs gm_workspace=, a zeroed INT32 tensor of at least 16 elements',
                span,
                advice="syncall.no_workspace",
            )
        ws = args[0].type
        if not isinstance(ws, TensorType) or ws.dtype is not DataType.INT32 or numel(ws) < 16:
            raise fail(
                op,
                f"gm_workspace must be an INT32 tensor of at least 16 elements, got {describe(ws)}",
                span,
                advice="syncall.bad_workspace",
            )
        used = attrs.get("used_cores")
        if not isinstance(used, int) or isinstance(used, bool) or used <= 0:
            raise fail(
                op,
                f'mode="soft" needs used_cores= a positive int, got {used!r}',
                span,
                "write used_cores= the number of cores that reach this barrier, e.g. used_cores=2",
            )
    return UNIT


# Event ids a program may use for explicit cross-core events (14 and 15 are the runtime's).
EVENT_IDS = range(14)


def sync_event(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """``sync_set`` / ``sync_wait``: an event id 0..13 (or a run-time INDEX scalar operand), the
    pipe the event is tied to, the core type that runs it in a mixed kernel."""
    op = spec.name
    event = attrs.get("event_id")
    if args:
        t = args[0].type
        if not (isinstance(t, ScalarType) and t.dtype.is_integer):
            raise fail(
                op, f"a run-time event id is an integer scalar, got {describe(t)}", span, "pass an INDEX"
            )
    elif not isinstance(event, int) or isinstance(event, bool) or event not in EVENT_IDS:
        raise fail(
            op,
            f"event_id must be an int in 0..13 (14 and 15 are reserved), got {event!r}",
            span,
            "pair each pl.system.sync_set with a pl.system.sync_wait of the same event id in 0..13",
        )
    mode = attrs.get("ffts_mode")
    if mode is not None and mode not in (0, 1, 2):
        raise fail(
            op, f"ffts_mode must be 0, 1 or 2, got {mode!r}", span, "leave ffts_mode out for the default"
        )
    return UNIT


def set_ffts(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    """The FFTS setup explicit events need on A3: a 1-D INT64 workspace of at least 256 elements."""
    t = args[0].type
    if not (isinstance(t, TensorType) and t.dtype is DataType.INT64 and len(t.shape) == 1) or (
        isinstance(t.shape[0], int) and t.shape[0] < 256
    ):
        raise fail(
            spec.name,
            f"takes a 1-D INT64 workspace of at least 256 elements, got {describe(t)}",
            span,
            "pass a torch.zeros(256, dtype=torch.int64) tensor as the workspace",
        )
    return UNIT


# ---------------------------------------------------------------- declarations


def _declare() -> None:
    b, s = Unit.BOUNDARY, Level.SYSTEM
    declare(
        OpSpec(
            "system.fence",
            s,
            b,
            unit_result,
            traits=(
                Cost("sync"),
                Ordering(),
            ),
            dsl="system.fence",
            signature="pl.system.fence()",
            doc="wait until this core's memory writes are done",
        )
    )
    region = (Operand("tensor", Role.TENSOR, optional=True), Operand("offsets", Role.OFFSETS, optional=True))
    declare(
        OpSpec(
            "system.cacheinvalid",
            s,
            b,
            cacheinvalid,
            region,
            (Attr("shape", tuple),),
            (Cost("sync"), Ordering(), GmAccess(0, 1)),
            "system.cacheinvalid",
            "pl.system.cacheinvalid(tensor=None, offsets=None, shape=None)",
            "drop this core's cached copy of a tensor region (or of all global memory)",
        )
    )
    sync_attrs = (
        Attr("core_type", str, choices=CORE_TYPES),
        Attr("mode", str, "hard", choices=("hard", "soft")),
        Attr("used_cores", int),
    )
    declare(
        OpSpec(
            "system.syncall",
            s,
            b,
            syncall,
            (Operand("gm_workspace", Role.TENSOR, optional=True, effect=Effect.NONE),),
            sync_attrs,
            (
                Cost("sync"),
                Ordering(),
            ),
            "system.syncall",
            'pl.system.syncall(core_type=None, mode="hard", gm_workspace=None, used_cores=None)',
            "a barrier every core of the launch meets (all its blocks)",
        )
    )
    event_attrs = (
        Attr("event_id", int),
        Attr("pipe", PipeType, PipeType.ALL),
        Attr("core_type", str, choices=(None, "aic", "aiv")),
    )
    declare(
        OpSpec(
            "system.sync_set",
            s,
            b,
            sync_event,
            (Operand("event_id_dyn", Role.SCALAR, optional=True),),
            (*event_attrs, Attr("ffts_mode", int)),
            (Cost("sync"), Ordering()),
            "system.sync_set",
            "pl.system.sync_set(event_id, pipe=pl.PipeType.ALL, ffts_mode=None, core_type=None)",
            "set a cross-core event once this core's work on the pipe is done: the peer core type's "
            "pl.system.sync_wait of the same id goes on",
        )
    )
    declare(
        OpSpec(
            "system.sync_wait",
            s,
            b,
            sync_event,
            (Operand("event_id_dyn", Role.SCALAR, optional=True),),
            event_attrs,
            (Cost("sync"), Ordering()),
            "system.sync_wait",
            "pl.system.sync_wait(event_id, pipe=pl.PipeType.ALL, core_type=None)",
            "wait until the peer core type set this cross-core event (once per set)",
        )
    )
    declare(
        OpSpec(
            "system.set_ffts",
            s,
            b,
            set_ffts,
            (Operand("workspace", Role.TENSOR, effect=Effect.NONE),),
            (),
            (Cost("sync"),),
            "system.set_ffts",
            "pl.system.set_ffts(workspace)",
            "set up the FFTS unit explicit cross-core events use (A3)",
        )
    )
    for name, doc in (
        ("get_block_idx", "this block's index in the launch"),
        ("get_block_num", "the number of blocks in the launch"),
    ):
        declare(OpSpec(name, s, Unit.SCALAR, index_result, dsl=name, signature=f"pl.{name}()", doc=doc))
    declare(
        OpSpec(
            "call",
            s,
            Unit.HOST,
            given,
            attrs=(Attr("callee", str),),
            dsl="call",
            doc="call a kernel; attrs: callee",
            open=True,
        )
    )
    declare(
        OpSpec(
            "system.task_dummy",
            s,
            Unit.HOST,
            lambda spec, args, attrs, span: TASK_ID,
            attrs=(Attr("deps", tuple, ()),),
            traits=(TaskIds(),),
            dsl="system.task_dummy",
            signature="pl.system.task_dummy(deps=[...])",
            doc="a task with no work that completes once its deps= have: one task id for several",
        )
    )


_declare()
