"""Cross-core ordering through GM: publish -> fence -> syncall -> invalidate, races, barriers."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import FunctionBuilder, matmul_kernel, program, rand, run, tensor_t, vector_binary_kernel
from sim_mixed import at, gm_args, group_program, span_of, through_gm

from pypto.ir import DeadlockError, Direction, FunctionKind, RaceError, TypeCheckError
from pypto_sim_a2a3 import A2A3_TARGET, BarrierError

PUBLISH = ("cacheinvalid", "fence", "syncall")
ACQUIRE = ("syncall", "cacheinvalid")


def _race(aic_sync: tuple[str, ...], aiv_sync: tuple[str, ...]):
    prog = through_gm(aic_sync, aiv_sync)
    with pytest.raises(RaceError) as info:
        run(prog, *gm_args())
    aic, aiv = prog.function("gm_aic"), prog.function("gm_aiv")
    return info.value, at(span_of(aic, "tile.store")), span_of(aiv, "tile.load")


def _assert_correct(args) -> None:
    a, b, bias, _, _, out = args
    torch.testing.assert_close(out, a @ b + bias)


def test_publish_fence_syncall_invalidate_orders_the_cube_store_before_the_lane_loads():
    args = gm_args()
    run(through_gm(PUBLISH, ACQUIRE), *args)
    _assert_correct(args)


def test_invalidating_just_the_lanes_rows_is_enough_for_that_lanes_load():
    args = gm_args()
    run(through_gm(PUBLISH, ("syncall", "cacheinvalid_rows")), *args)
    _assert_correct(args)


def test_a_lane_loading_before_the_cube_stores_is_a_race_naming_both_cores_and_lines():
    err, store, load = _race((), ())
    assert err.message == (
        f"cg0.AIC writes tmp[0:32, 0:64] at {store} after cg0.AIV0 read it at {at(load)}, but nothing "
        "orders the two: no pl.system.syncall that both cores passed lies between the read and the write"
    )
    assert "pl.system.syncall" in err.hint


def test_a_barrier_alone_does_not_order_the_store_before_the_load():
    err, store, load = _race(("syncall",), ("syncall",))
    assert err.message == (
        f"cg0.AIV0 reads tmp[0:32, 0:64] at {at(load)} after cg0.AIC wrote it at {store}, but nothing "
        "orders the two: cg0.AIC never published its write (pl.system.cacheinvalid after it)"
    )
    assert err.span == load
    assert err.hint == (
        "order cross-core GM traffic: the writer publishes its write (pl.system.cacheinvalid), fences "
        "(pl.system.fence), both cores pass one pl.system.syncall, then the reader invalidates "
        "(pl.system.cacheinvalid) before it reads; between the AIC and the AIV lanes of a core group, "
        "an event does it too: the writer pl.system.sync_set(e, pipe=pl.PipeType.ALL) after its write, "
        "the reader pl.system.sync_wait(e) before its read"
    )


@pytest.mark.parametrize(
    ("aic_sync", "aiv_sync", "gap"),
    [
        (("cacheinvalid", "syncall"), ACQUIRE, "cg0.AIC did not pl.system.fence after publishing its write"),
        (
            PUBLISH,
            ("syncall",),
            "cg0.AIV0 did not pl.system.cacheinvalid the data after the syncall, before its read",
        ),
        (
            PUBLISH,
            ("cacheinvalid", "syncall"),
            "cg0.AIV0 did not pl.system.cacheinvalid the data after the syncall, before its read",
        ),
    ],
)
def test_each_missing_step_of_the_sequence_is_named(aic_sync, aiv_sync, gap):
    err, _, _ = _race(aic_sync, aiv_sync)
    assert err.message.endswith("but nothing orders the two: " + gap)


def test_a_store_and_a_load_in_different_tasks_are_ordered_by_the_task_boundary():
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    a, b, bias = (host.param(n, tensor_t((64, 64))) for n in ("a", "b", "bias"))
    tmp = host.param("tmp", tensor_t((64, 64)), Direction.InOut)
    out = host.param("out", tensor_t((64, 64)), Direction.Out)
    host.call("mm", a, b, tmp)
    host.call("vec_add", tmp, bias, out)
    prog = program(host.build(), matmul_kernel(64, 64, 64), vector_binary_kernel("tile.add", (64, 64)))
    a_v, b_v, bias_v, out_v = (
        rand(64, 64, seed=1),
        rand(64, 64, seed=2),
        rand(64, 64, seed=3),
        torch.zeros(64, 64),
    )
    run(prog, a_v, b_v, bias_v, torch.zeros(64, 64), out_v)
    torch.testing.assert_close(out_v, a_v @ b_v + bias_v)


def test_soft_syncall_with_a_zeroed_workspace_orders_like_the_hard_one():
    args = gm_args()
    run(through_gm(PUBLISH, ACQUIRE, used_cores=3), *args)
    _assert_correct(args)


def test_soft_syncall_with_a_dirty_workspace_is_a_barrier_error():
    dirty = torch.zeros(16, dtype=torch.int32)
    dirty[5] = 7
    with pytest.raises(BarrierError) as info:
        run(through_gm(PUBLISH, ACQUIRE, used_cores=3), *gm_args(dirty))
    assert info.value.message == (
        'pl.system.syncall(mode="soft") needs a zeroed INT32 gm_workspace, but ws holds 7 at flat index 5'
    )
    assert "torch.zeros(16, dtype=torch.int32)" in info.value.hint


def test_soft_syncall_waiting_for_more_cores_than_the_launch_has_deadlocks():
    prog = through_gm(PUBLISH, ACQUIRE, used_cores=4)
    with pytest.raises(DeadlockError) as info:
        run(prog, *gm_args())
    syncall = at(span_of(prog.function("gm_aic"), "system.syncall"))
    assert (
        f"  cg0.AIC: pl.system.syncall blocks at {syncall}: 3 of 4 core(s) arrived (AIV0, AIV1, AIC); "
        "it needs 4 but only 3 core(s) of this launch take part"
    ) in info.value.message.splitlines()


def test_a_hard_syncall_the_cube_never_reaches_deadlocks_the_lanes():
    prog = through_gm(("cacheinvalid", "fence"), ACQUIRE)
    with pytest.raises(DeadlockError) as info:
        run(prog, *gm_args())
    syncall = span_of(prog.function("gm_aiv"), "system.syncall")
    assert (
        f"  cg0.AIV1: pl.system.syncall blocks at {at(syncall)}: 2 of 3 core(s) arrived (AIV0, AIV1); "
        "AIC finished without reaching it"
    ) in info.value.message.splitlines()
    assert info.value.span == syncall


def _barrier_program(aic_core_type: str | None, aiv_core_type: str | None):
    """Each side calls one syncall with the given core_type (None: no syncall on that side)."""
    kernels = []
    for name, kind, core_type in (
        ("bar_aic", FunctionKind.AIC, aic_core_type),
        ("bar_aiv", FunctionKind.AIV, aiv_core_type),
    ):
        k = FunctionBuilder(name, kind)
        k.param("x", tensor_t((8, 8)))
        if core_type is not None:
            k.do("system.syncall", core_type=core_type)
        kernels.append(k.build())
    return group_program("bar", *kernels)


def test_an_aiv_barrier_counts_only_the_two_lanes():
    report = run(_barrier_program(None, "aiv"), rand(8, 8))
    barrier = A2A3_TARGET.cost["syncall_hard_cycles"]
    assert report.busy_cycles == {"cg0.AIC": 0, "cg0.AIV0": barrier, "cg0.AIV1": barrier}


def test_a_core_outside_the_barriers_core_type_is_a_barrier_error():
    with pytest.raises(
        BarrierError, match=r'core_type="aiv"\) reached on AIC, which that barrier does not count'
    ):
        run(_barrier_program("aiv", "aiv"), rand(8, 8))


def test_an_unknown_core_type_is_rejected_when_the_op_is_built():
    with pytest.raises(TypeCheckError, match='core_type must be "aic", "aiv" or "mix"'):
        run(_barrier_program(None, "vector"), rand(8, 8))


def test_a_scalar_read_of_another_cores_unpublished_write_is_a_race():
    aic = through_gm(("syncall",), ()).function("gm_aic")
    v = FunctionBuilder("gm_aiv", FunctionKind.AIV)
    params = [v.param(p.var.name, p.var.type, p.direction) for p in aic.params]
    v.do("system.syncall")
    v.op("first", "scalar.read", params[3], [0, 0])
    prog = group_program("gm", aic, v.build())
    with pytest.raises(
        RaceError, match=r"cg0\.AIV0 reads tmp\[0:1, 0:1\] at gm_aiv\.py:\d+ after cg0\.AIC wrote it"
    ):
        run(prog, *gm_args())
