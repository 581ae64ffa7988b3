"""Type rules of the asynchronous prefetch (pl.prefetch.*): three opaque handle types, a flat
logically one-dimensional GM source, and the handles each op takes; the family runs on the vector
side only, so a hand-written AIC kernel holding it does not verify."""

import pytest

from pypto.ir import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    PREFETCH_CONTEXT,
    DataType,
    Direction,
    DynDim,
    Eval,
    Function,
    FunctionKind,
    MemorySpace,
    Param,
    ScalarType,
    TensorType,
    TileType,
    TypeCheckError,
    Var,
    VerificationError,
    make_call,
    verify_function,
)
from pypto.ir.ops import OnSide, Side, get_op, prefetch
from pypto.ir.types import describe


def tensor(*shape, dtype=DataType.FP32):
    return Var("x", TensorType(tuple(shape), dtype))


def handles():
    ctx = Var("ctx", PREFETCH_CONTEXT)
    return ctx, Var("evt", ASYNC_EVENT), Var("session", ASYNC_SESSION)


def test_the_handles_print_as_their_pl_names_and_have_no_shape():
    assert [str(t) for t in (PREFETCH_CONTEXT, ASYNC_EVENT, ASYNC_SESSION)] == [
        "pl.PrefetchAsyncContext",
        "pl.AsyncEvent",
        "pl.AsyncSession",
    ]
    assert describe(ASYNC_EVENT) == "AsyncEvent"
    assert not hasattr(PREFETCH_CONTEXT, "shape") and not hasattr(ASYNC_EVENT, "dtype")


def test_each_op_gives_its_handle_and_the_wait_a_bool():
    ctx, evt, session = handles()
    assert make_call(prefetch.make_context, ()).type == PREFETCH_CONTEXT
    assert make_call(prefetch.session, (ctx,)).type == ASYNC_SESSION
    assert make_call(prefetch.wait, (evt, session)).type == ScalarType(DataType.BOOL)


@pytest.mark.parametrize("shape", [(4096,), (1, 128), (1, 1, 64), (1,)])
def test_a_flat_source_of_any_rank_prefetches(shape):
    ctx, _, _ = handles()
    assert make_call(prefetch.async_prefetch, (tensor(*shape), ctx)).type == ASYNC_EVENT


def test_a_storage_format_source_prefetches_too():
    ctx, _, _ = handles()
    source = tensor(1, 256, dtype=DataType.FP8E4M3FN)
    assert make_call(prefetch.async_prefetch, (source, ctx)).type == ASYNC_EVENT


@pytest.mark.parametrize(
    ("shape", "why"),
    [((4, 256), "more than one row"), ((2, 1, 8), "more than one row"), ((1, DynDim("N")), "dynamic")],
)
def test_a_source_that_is_not_one_flat_static_run_is_refused(shape, why):
    ctx, _, _ = handles()
    with pytest.raises(
        TypeCheckError, match=r"pl\.prefetch\.async_prefetch: the source must be a flat"
    ) as err:
        make_call(prefetch.async_prefetch, (tensor(*shape), ctx))
    assert why in err.value.message and "x[r : r + 1, :]" in (err.value.hint or "")


def test_a_tile_source_is_refused():
    ctx, _, _ = handles()
    tile = Var("t", TileType((1, 64), DataType.FP32, MemorySpace.Vec))
    with pytest.raises(TypeCheckError, match="prefetches a global-memory tensor, got Tile"):
        make_call(prefetch.async_prefetch, (tile, ctx))


def test_each_handle_operand_must_be_the_right_handle():
    ctx, evt, session = handles()
    with pytest.raises(
        TypeCheckError, match="ctx must be the handle of type PrefetchAsyncContext, got AsyncEvent"
    ):
        make_call(prefetch.async_prefetch, (tensor(1, 64), evt))
    with pytest.raises(
        TypeCheckError, match="ctx must be the handle of type PrefetchAsyncContext, got Tensor"
    ):
        make_call(prefetch.session, (tensor(1, 64),))
    with pytest.raises(
        TypeCheckError, match="the event must be the handle of type AsyncEvent, got AsyncSession"
    ) as err:
        make_call(prefetch.wait, (session, evt))
    assert err.value.hint == "pass the handle made by evt = pl.prefetch.async_prefetch(src, ctx)"
    with pytest.raises(TypeCheckError, match="the session must be the handle of type AsyncSession"):
        make_call(prefetch.wait, (evt, ctx))


def test_the_family_runs_on_the_vector_side_only_and_the_prefetch_reads_its_source():
    for name in (prefetch.make_context, prefetch.async_prefetch, prefetch.session, prefetch.wait):
        assert get_op(name).trait(OnSide) == OnSide(Side.VECTOR, only=True)
    spec = get_op(prefetch.async_prefetch)
    assert spec.reads == (0,) and spec.writes == () and spec.cost == "prefetch"


def _kernel(kind: FunctionKind) -> Function:
    x = Var("x", TensorType((1, 64), DataType.FP32))
    ctx = make_call(prefetch.make_context, ())
    body = (Eval(make_call(prefetch.async_prefetch, (x, ctx)), None),)
    return Function("k", (Param(x, Direction.In),), body, kind)


def test_an_aic_kernel_holding_a_prefetch_does_not_verify_and_an_aiv_kernel_does():
    verify_function(_kernel(FunctionKind.AIV))
    with pytest.raises(
        VerificationError, match=r"runs on the vector core \(AIV\) only, and k is an AIC kernel"
    ):
        verify_function(_kernel(FunctionKind.AIC))
