"""Asynchronous GM -> L2 prefetch: warm the L2 cache with a global-memory region while the kernel
computes on, then wait for it to land.

``prefetch.make_context`` gives a context (``pl.PrefetchAsyncContext``); ``prefetch.async_prefetch``
starts pulling a tensor into L2 through it and gives the prefetch's event (``pl.AsyncEvent``) at
once; ``prefetch.session`` gives the context's session (``pl.AsyncSession``); ``prefetch.wait``
blocks until the event's prefetch is done and gives a ``BOOL`` (True). A prefetch changes no value:
a kernel computes the same numbers with or without it, only its time differs.

The source is a flat, contiguous, logically one-dimensional region: a static shape whose
dimensions are all 1 but the last (``[N]``, ``[1, N]``, ``[1, 1, N]``). The family runs on the
vector side of a core group (the prefetch engine is driven from the vector core's memory), inside
kernels only; the DSL writes it ``pl.prefetch.make_context()`` and so on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType
from pypto.ir.errors import SourceSpan
from pypto.ir.nodes import Expr
from pypto.ir.ops.rules import fail
from pypto.ir.ops.spec import (
    Cost,
    Effect,
    FormatFree,
    Level,
    OnSide,
    Operand,
    OpSpec,
    Role,
    Side,
    Unit,
    declare,
)
from pypto.ir.types import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    PREFETCH_CONTEXT,
    HandleType,
    ScalarType,
    TensorType,
    Type,
    describe,
)

# Where each handle comes from, for hints.
_MADE_BY = {
    PREFETCH_CONTEXT: "ctx = pl.prefetch.make_context()",
    ASYNC_EVENT: "evt = pl.prefetch.async_prefetch(src, ctx)",
    ASYNC_SESSION: "session = pl.prefetch.session(ctx)",
}


def handle(op: str, e: Expr, kind: HandleType, what: str, span: SourceSpan | None) -> None:
    """``e`` must be a handle of ``kind``."""
    if e.type != kind:
        raise fail(
            op,
            f"{what} must be the handle of type {kind.name}, got {describe(e.type)}",
            span,
            f"pass the handle made by {_MADE_BY[kind]}",
        )


def _flat_source(op: str, e: Expr, span: SourceSpan | None) -> None:
    """A tensor of a static shape whose dims are all 1 but the last: one contiguous run of GM."""
    t = e.type
    if not isinstance(t, TensorType):
        raise fail(
            op,
            f"prefetches a global-memory tensor, got {describe(t)}",
            span,
            "pass a global-memory tensor (a kernel's tensor parameter): a tile is on chip already",
        )
    static = all(isinstance(d, int) for d in t.shape)
    if not static or any(d != 1 for d in t.shape[:-1]):
        shape = [d if isinstance(d, int) else str(d) for d in t.shape]
        why = "a dynamic extent" if not static else "more than one row"
        raise fail(
            op,
            f"the source must be a flat contiguous region of static shape [N], [1, N], [1, 1, N], ...; "
            f"{describe(t)} has {why} (shape {shape})",
            span,
            "prefetch one row at a time: take the view row = x[r : r + 1, :] before the pl.at scope and "
            "prefetch row inside it",
        )


def make_context(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    return PREFETCH_CONTEXT


def async_prefetch(
    spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None
) -> Type:
    _flat_source(spec.name, args[0], span)
    handle(spec.name, args[1], PREFETCH_CONTEXT, "ctx", span)
    return ASYNC_EVENT


def session(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    handle(spec.name, args[0], PREFETCH_CONTEXT, "ctx", span)
    return ASYNC_SESSION


def wait(spec: OpSpec, args: Sequence[Expr], attrs: Mapping[str, Any], span: SourceSpan | None) -> Type:
    handle(spec.name, args[0], ASYNC_EVENT, "the event", span)
    handle(spec.name, args[1], ASYNC_SESSION, "the session", span)
    return ScalarType(DataType.BOOL)


def _declare() -> None:
    # The prefetch engine is driven from the vector core's memory: the cube core has none of it.
    s, vector = Level.SYSTEM, OnSide(Side.VECTOR, only=True)
    ctx = Operand("ctx", Role.HANDLE)
    declare(
        OpSpec(
            "prefetch.make_context",
            s,
            Unit.SCALAR,
            make_context,
            traits=(vector,),
            dsl="prefetch.make_context",
            signature="pl.prefetch.make_context()",
            doc="a context that issues asynchronous GM -> L2 prefetches (a pl.PrefetchAsyncContext)",
        )
    )
    declare(
        OpSpec(
            "prefetch.async_prefetch",
            s,
            Unit.MTE,
            async_prefetch,
            # The source's bytes are read from GM (into L2), no value of the kernel changes.
            (Operand("src", Role.TENSOR, effect=Effect.READ), ctx),
            traits=(vector, Cost("prefetch"), FormatFree()),
            dsl="prefetch.async_prefetch",
            signature="pl.prefetch.async_prefetch(src, ctx)",
            doc="start pulling a flat GM tensor into L2 without waiting; its event (a pl.AsyncEvent)",
        )
    )
    declare(
        OpSpec(
            "prefetch.session",
            s,
            Unit.SCALAR,
            session,
            (ctx,),
            traits=(vector,),
            dsl="prefetch.session",
            signature="pl.prefetch.session(ctx)",
            doc="the session a context's prefetch events are waited in (a pl.AsyncSession)",
        )
    )
    declare(
        OpSpec(
            "prefetch.wait",
            s,
            Unit.SCALAR,
            wait,
            (Operand("evt", Role.HANDLE), Operand("session", Role.HANDLE)),
            traits=(vector, Cost("sync")),
            dsl="prefetch.wait",
            signature="pl.prefetch.wait(evt, session)",
            doc="block until the event's prefetch has landed in L2; True",
        )
    )


_declare()
