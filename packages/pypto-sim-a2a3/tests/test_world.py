"""A world of simulated chips run by a HOST orchestrator: windows, dispatch, signals between ranks,
remote loads, the interconnect's timing, and the per-rank reports."""

from dataclasses import replace

import pytest
import torch
from sim_links import run_ranks
from sim_lowered import FunctionBuilder, expr, launcher, tensor_t, vector_binary_kernel
from sim_world import (
    FP32,
    INT32,
    Mem,
    assign,
    dispatch_each_rank,
    do,
    host,
    peers,
    row_of,
    run_world,
    window_t,
    world_program,
)

from pypto.ir import (
    UNIT,
    Assign,
    Call,
    CommError,
    DeadlockError,
    Direction,
    Eval,
    FunctionKind,
    NotifyOp,
    OutOfBoundsError,
    RaceError,
    Role,
    Var,
    WaitCmp,
    make_call,
)
from pypto.ir.nodes import stmt_exprs, walk_stmts

SIZE = 64


def line_of(prog, fn, op):
    """The span of the first ``op`` call in function ``fn``."""
    for stmt in walk_stmts(prog.function(fn).body):
        for found in stmt_exprs(stmt):
            if isinstance(found, Call) and found.op == op:
                return found.span
    raise AssertionError(f"no {op} in {fn}")


def allreduce_kernel(notify=True, wait=True, expected=1):
    """The manual's quickstart: stage in, notify every peer, wait for every peer, sum every peer's
    window, stage out."""
    b = FunctionBuilder("reduce_step", FunctionKind.AIV)
    inp = b.param("inp", tensor_t((1, SIZE)))
    out = b.param("out", tensor_t((1, SIZE)), Direction.Out)
    data = b.param("data", window_t((1, SIZE)), Direction.InOut)
    signal = b.param("signal", window_t((4, 1), INT32), Direction.InOut)
    ctx = b.op("ctx", "dist.get_comm_ctx", data)
    me = b.op("me", "dist.rank", ctx)
    n = b.op("n", "dist.nranks", ctx)
    local = b.op("local", "tile.load", inp, [0, 0], shape=(1, SIZE), target_memory=Mem.Vec)
    b.do("tile.store", local, [0, 0], data)
    if notify:
        peers(b, me, n, lambda peer: do(b, "dist.notify", signal, peer, [me, 0], 1, op=NotifyOp.AtomicAdd))
    if wait:
        peers(b, me, n, lambda src: b.do("dist.wait", signal, [src, 0], expected, cmp=WaitCmp.Ge))
    acc = b.op("acc", "tile.load", data, [0, 0], shape=(1, SIZE), target_memory=Mem.Vec)

    with b.carried_loop("k", 1, n, {"acc_in": acc}) as loop:
        total = b.op("total", "scalar.add", me, loop.var)
        peer = b.op("peer", "scalar.mod", total, n)
        theirs = b.op("theirs", "dist.remote_load", data, peer, [0, 0], shape=(1, SIZE))
        summed = b.op("summed", "tile.add", loop.iter_args[0], theirs)
        loop.yields.append(summed)
    b.do("tile.store", loop.results[0], [0, 0], out)
    return b.build()


def allreduce_program(ranks=None, **kernel):
    kernel_fn = allreduce_kernel(**kernel)
    chip = launcher(kernel_fn)
    entry = dispatch_each_rank(
        "orchestrator",
        chip,
        [("inputs", tensor_t((4, SIZE)), Direction.In), ("outputs", tensor_t((4, SIZE)), Direction.Out)],
        [("data", SIZE * 4, (1, SIZE), FP32), ("signal", 4 * 4, (4, 1), INT32)],
        lambda b, v, r: [
            row_of(b, v["inputs"], r, SIZE, "inp"),
            row_of(b, v["outputs"], r, SIZE, "out"),
            v["data"],
            v["signal"],
        ],
        ranks_to_cover=ranks,
    )
    return world_program(entry, chip, kernel_fn)


def test_the_quickstart_allreduce_sums_every_rank_on_every_rank():
    inputs = torch.randn(4, SIZE)
    outputs = torch.zeros(4, SIZE)
    report = run_world(allreduce_program(), [inputs, outputs], ranks=4)
    for r in range(4):
        torch.testing.assert_close(outputs[r], inputs.sum(0))
    assert len(report.chips) == 4
    assert report.total_cycles >= max(chip.total_cycles for chip in report.chips) > 0
    assert report.transfers, "the remote loads and notifies crossed the links"
    assert {(t.src, t.dst) for t in report.transfers if t.op == "dist.remote_load"} == {
        (a, b) for a in range(4) for b in range(4) if a != b
    }


# ---------------------------------------------------------------- diagnostics


def test_a_wait_no_rank_satisfies_is_a_deadlock_naming_the_rank_the_cell_and_its_value():
    with pytest.raises(DeadlockError) as err:
        run_world(allreduce_program(notify=False), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    text = str(err.value)
    assert "rank0/cg0.AIV0" in text and "rank1/cg0.AIV0" in text
    assert "signal[1, 0] of rank 0's window 'signal_buf': == 0, expects >= 1" in text
    assert "signal[0, 0] of rank 1's window 'signal_buf'" in text
    assert "notifies that reached it: none" in text
    assert err.value.span is not None and err.value.span.file == "reduce_step.py"


def test_the_deadlock_report_lists_the_notifies_that_did_happen():
    with pytest.raises(DeadlockError) as err:
        run_world(allreduce_program(expected=2), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    text = str(err.value)
    assert "== 1, expects >= 2" in text
    assert "rank 1 at reduce_step.py:" in text and "added 1 to signal[0, 0]" in text


def test_a_rank_the_host_never_dispatched_to_is_named_in_the_deadlock():
    with pytest.raises(DeadlockError) as err:
        run_world(allreduce_program(ranks=1), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    assert "rank1/host: waits for a dispatch from the HOST" in str(err.value)
    assert "rank(s) 1 got no dispatch" in (err.value.hint or "")


def test_a_remote_load_of_bytes_written_without_notify_wait_is_a_race_naming_both_ranks():
    prog = allreduce_program(wait=False)
    with pytest.raises(RaceError) as err:
        run_world(prog, [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    text = str(err.value)
    assert "rank 0" in text and "rank 1" in text
    assert "pld.tile.remote_load reads" in text
    assert "reduce_step.py:9" in text, "the peer's store is named"
    assert err.value.span == line_of(prog, "reduce_step", "dist.remote_load"), "at the remote load"


def test_a_device_outside_the_world_is_a_comm_error_at_the_dispatch():
    with pytest.raises(CommError, match=r"device 2 is outside the world's ranks \[0, 2\)") as err:
        run_world(allreduce_program(ranks=3), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    assert err.value.span.file == "orchestrator.py"


# ---------------------------------------------------------------- SubWorker callbacks


def callback_program():
    """HOST: dispatch ``f = a + b`` to rank 0, hand the result to the SubWorker ``inspect``."""
    kernel = vector_binary_kernel("tile.add", shape=(8, 16), name="tile_add")
    b = FunctionBuilder("chip_orch", FunctionKind.Orchestration)
    a_ = b.param("a", tensor_t((8, 16)))
    b_ = b.param("b", tensor_t((8, 16)))
    f_ = b.param("f", tensor_t((8, 16)), Direction.Out)
    b.call("tile_add", a_, b_, f_)
    b.ret(f_)
    chip = b.build()
    sub = FunctionBuilder("inspect", FunctionKind.Orchestration)
    sub.param("f", tensor_t((8, 16)))
    inspect = replace(
        host(sub, Role.SubWorker),
        body=(),
        attrs={**host(sub, Role.SubWorker).attrs, "requires_runtime_binding": True},
    )
    b = FunctionBuilder("host_orch", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((8, 16)))
    bb = b.param("b", tensor_t((8, 16)))
    f = b.param("f", tensor_t((8, 16)), Direction.Out)
    span = b.span()
    out = Var("out_f", tensor_t((8, 16)), span)
    call = make_call("dist.dispatch", [expr(0), a, bb, f], {"callee": "chip_orch"}, span, type=out.type)
    b._emit(Assign(out, call, span))
    span = b.span()
    b._emit(Eval(make_call("dist.call_subworker", [out], {"callee": "inspect"}, span, type=UNIT), span))
    b.ret(out)
    return world_program(host(b), chip, kernel, inspect)


def test_a_subworker_callback_gets_the_dispatch_result_after_it_is_computed():
    seen = []
    a, b, f = torch.full((8, 16), 2.0), torch.full((8, 16), 3.0), torch.zeros(8, 16)
    report = run_world(
        callback_program(),
        [a, b, f],
        ranks=1,
        callbacks={"inspect": lambda args: seen.append(args[0].clone())},
    )
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], torch.full((8, 16), 5.0))
    torch.testing.assert_close(report.outputs[0], torch.full((8, 16), 5.0))


def test_an_unbound_subworker_is_a_comm_error_at_its_call():
    with pytest.raises(CommError, match="the SubWorker inspect has no implementation bound") as err:
        run_world(callback_program(), [torch.ones(8, 16), torch.ones(8, 16), torch.zeros(8, 16)], ranks=1)
    assert "callbacks=" in err.value.hint and err.value.span.file == "host_orch.py"


def test_a_window_larger_than_its_buffer_is_out_of_bounds_at_the_window():
    b = FunctionBuilder("orchestrator", FunctionKind.Orchestration)
    buf = assign(b, "buf", "dist.alloc_window_buffer", 64, name="buf")
    b.op("w", "dist.window", buf, [1, 32], dtype=FP32)
    with pytest.raises(OutOfBoundsError, match="leaves the window buffer 'buf' of 64 bytes") as err:
        run_world(world_program(host(b)), [], ranks=2)
    assert err.value.span.line == 2


# ---------------------------------------------------------------- ranks in processes of their own


def test_ranks_simulated_apart_give_the_numbers_and_cycles_of_one_world():
    inputs = torch.randn(4, SIZE)
    together = torch.zeros(4, SIZE)
    world = run_world(allreduce_program(), [inputs, together], ranks=3)
    apart = torch.zeros(4, SIZE)
    reports, transfers = run_ranks(allreduce_program(), [inputs, apart], ranks=3)
    torch.testing.assert_close(apart, together)
    assert [r.total_cycles for r in reports] == [c.total_cycles for c in world.chips]
    assert sorted((t.src, t.dst, t.start, t.end, t.op) for t in transfers) == sorted(
        (t.src, t.dst, t.start, t.end, t.op) for t in world.transfers
    )


def test_ranks_simulated_apart_report_a_deadlock_naming_every_rank():
    with pytest.raises(DeadlockError) as err:
        run_ranks(allreduce_program(notify=False), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
    text = str(err.value)
    assert "rank0/cg0.AIV0" in text and "rank1/cg0.AIV0" in text
    assert "== 0, expects >= 1" in text


def test_ranks_simulated_apart_report_a_race():
    with pytest.raises(RaceError, match=r"pld\.tile\.remote_load reads"):
        run_ranks(allreduce_program(wait=False), [torch.randn(4, SIZE), torch.zeros(4, SIZE)], ranks=2)
