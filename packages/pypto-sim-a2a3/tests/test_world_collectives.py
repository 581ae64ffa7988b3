"""The collectives of a world (as HOST builtin tasks and inside kernels), put / get, remote stores,
deferred waits and the interconnect's timing: every rank's numbers equal torch's."""

import pytest
import torch
from sim_lowered import FunctionBuilder, expr, launcher, tensor_t
from sim_world import FP32, INT32, Mem, assign, do, host, row_of, run_world, window_t, world_program

from pypto.ir import (
    UNIT,
    AtomicType,
    CommError,
    DeadlockError,
    Direction,
    Eval,
    FunctionKind,
    NotifyOp,
    OutOfBoundsError,
    RaceError,
    ReduceOp,
    WaitCmp,
    make_call,
)
from pypto_sim_a2a3 import A2A3SimBackend
from pypto_sim_a2a3.target import A2A3_INTERCONNECT, A2A3_TARGET

S = 32


def copy_kernel(name, src_t, dst_t, rows):
    b = FunctionBuilder(name, FunctionKind.AIV)
    src = b.param("src", src_t)
    dst = b.param("dst", dst_t, Direction.Out)
    tile = b.op("tile", "tile.load", src, [0, 0], shape=(rows, S), target_memory=Mem.Vec)
    b.do("tile.store", tile, [0, 0], dst)
    return b.build()


def dispatch(b, chip, r, *args):
    span = b.span()
    call = make_call("dist.dispatch", [expr(a) for a in (r, *args)], {"callee": chip.name}, span, type=UNIT)
    b._emit(Eval(call, span))


def collective_program(n, op, attrs, windows, stage_in, args, stage_out, dtype=FP32):
    """HOST: allocate ``windows`` (name -> shape), copy host rows into windows (``stage_in``: host
    param, window, rows), run the HOST collective ``op`` on the named ``args``, copy windows back
    out (``stage_out``: window, host param, rows)."""
    functions = []
    b = FunctionBuilder("orchestrator", FunctionKind.Orchestration)
    host_rows = {}
    for param, _, rows in stage_in:
        host_rows[param] = b.param(param, tensor_t((n * rows, S), dtype))
    for _, param, rows in stage_out:
        host_rows[param] = b.param(param, tensor_t((n * rows, S), dtype), Direction.Out)
    buffers, views = {}, {}
    for name, (shape, wdtype) in windows.items():
        nbytes = wdtype.nbytes
        for extent in shape:
            nbytes *= extent
        buffers[name] = assign(b, f"{name}_buf", "dist.alloc_window_buffer", nbytes, name=f"{name}_buf")
        views[name] = b.op(name, "dist.window", buffers[name], list(shape), dtype=wdtype)
    for param, window, rows in stage_in:
        kernel = copy_kernel(f"in_{window}", tensor_t((rows, S), dtype), window_t((rows, S), dtype), rows)
        chip = launcher(kernel)
        functions += [chip, kernel]
        with b.loop("r", 0, n) as r:
            start = b.scalar("scalar.mul", r, rows)
            part = b.op("part", "tensor.slice", host_rows[param], [start, 0], shape=[rows, S])
            dispatch(b, chip, r, part, views[window])
    assign(b, "result", op, *[views[a] for a in args], **attrs)
    for window, param, rows in stage_out:
        kernel = copy_kernel(f"out_{window}", window_t((rows, S), dtype), tensor_t((rows, S), dtype), rows)
        chip = launcher(kernel)
        functions += [chip, kernel]
        with b.loop("r", 0, n) as r:
            start = b.scalar("scalar.mul", r, rows)
            part = b.op("part", "tensor.slice", host_rows[param], [start, 0], shape=[rows, S])
            dispatch(b, chip, r, views[window], part)
    return world_program(host(b), *functions)


def host_allreduce(n, rows, op=ReduceOp.Sum, **attrs):
    windows = {"data": ((rows, S), FP32)}
    args = ["data"]
    if attrs.pop("signal", True):
        lanes = attrs.get("core_num", 1)
        windows["sig"] = (((2 * (n - 1) + 1, n) if attrs.get("mode") == "ring" else (n, lanes)), INT32)
        args.append("sig")
    return collective_program(
        n,
        "dist.allreduce",
        {"op": op, **attrs},
        windows,
        [("inputs", "data", rows)],
        args,
        [("data", "outputs", rows)],
    )


REDUCE = {ReduceOp.Sum: "sum", ReduceOp.Max: "amax", ReduceOp.Min: "amin", ReduceOp.Prod: "prod"}


@pytest.mark.parametrize(
    ("n", "rows", "op", "attrs"),
    [
        (2, 1, ReduceOp.Sum, {}),
        (4, 2, ReduceOp.Max, {}),
        (3, 1, ReduceOp.Min, {"signal": False}),
        (2, 1, ReduceOp.Prod, {}),
        (4, 16, ReduceOp.Sum, {"core_num": 3}),
        (4, 3, ReduceOp.Sum, {"mode": "ring"}),
        (3, 2, ReduceOp.Sum, {"mode": "ring"}),
    ],
)
def test_a_host_allreduce_equals_torch_on_every_rank(n, rows, op, attrs):
    inputs = torch.randn(n, rows, S)
    outputs = torch.zeros(n * rows, S)
    report = run_world(host_allreduce(n, rows, op, **attrs), [inputs.reshape(n * rows, S), outputs], ranks=n)
    expected = getattr(inputs, REDUCE[op])(0)
    for r in range(n):
        torch.testing.assert_close(outputs[r * rows : (r + 1) * rows], expected, rtol=1e-5, atol=1e-5)
    assert report.transfers and all(t.src != t.dst for t in report.transfers)


def test_ring_moves_fewer_bytes_per_rank_than_mesh_on_a_large_payload():
    n, rows = 4, 64
    inputs = torch.randn(n * rows, S)
    mesh = run_world(host_allreduce(n, rows), [inputs, torch.zeros(n * rows, S)], ranks=n)
    ring = run_world(host_allreduce(n, rows, mode="ring"), [inputs, torch.zeros(n * rows, S)], ranks=n)
    data = lambda report: sum(t.nbytes for t in report.transfers if t.op == "dist.allreduce")  # noqa: E731
    assert data(ring) < data(mesh)


def test_a_host_barrier_is_self_clearing_and_reusable():
    n = 3
    prog = collective_program(n, "dist.barrier", {}, {"sig": ((n, 1), INT32)}, [], ["sig"], [])
    store = A2A3SimBackend().window_store(n)
    run_world(prog, [], ranks=n, windows=store)
    run_world(prog, [], ranks=n, windows=store)
    (buffer,) = store.buffers.values()
    assert all(int(s.view(torch.int32)[:n].abs().sum()) == 0 for s in buffer.storage), "credits taken back"


def test_broadcast_allgather_reduce_scatter_and_all_to_all_equal_torch():
    n = 3
    x = torch.randn(n, S)
    out = torch.zeros(n, S)
    root = 1
    prog = collective_program(
        n,
        "dist.broadcast",
        {"root": root},
        {"data": ((1, S), FP32), "sig": ((n, 1), INT32)},
        [("inputs", "data", 1)],
        ["data", "sig"],
        [("data", "outputs", 1)],
    )
    run_world(prog, [x, out], ranks=n)
    torch.testing.assert_close(out, x[root].expand(n, S))

    out = torch.zeros(n * n, S)
    prog = collective_program(
        n,
        "dist.allgather",
        {},
        {"local": ((1, S), FP32), "data": ((n, S), FP32), "sig": ((n,), INT32)},
        [("inputs", "local", 1)],
        ["local", "data", "sig"],
        [("data", "outputs", n)],
    )
    run_world(prog, [x, out], ranks=n)
    torch.testing.assert_close(out, x.repeat(n, 1))

    chunks = torch.randn(n, n, S)  # rank r stages chunks[r]: one row per destination
    out = torch.zeros(n * n, S)
    prog = collective_program(
        n,
        "dist.reduce_scatter",
        {"op": ReduceOp.Sum},
        {"data": ((n, S), FP32), "sig": ((n,), INT32)},
        [("inputs", "data", n)],
        ["data", "sig"],
        [("data", "outputs", n)],
    )
    run_world(prog, [chunks.reshape(n * n, S), out], ranks=n)
    for r in range(n):
        torch.testing.assert_close(out.reshape(n, n, S)[r, r], chunks[:, r].sum(0))

    out = torch.zeros(n * n, S)
    prog = collective_program(
        n,
        "dist.all_to_all",
        {},
        {"stage": ((n, S), FP32), "data": ((n, S), FP32), "sig": ((n,), INT32)},
        [("inputs", "stage", n)],
        ["stage", "data", "sig"],
        [("data", "outputs", n)],
    )
    run_world(prog, [chunks.reshape(n * n, S), out], ranks=n)
    torch.testing.assert_close(out.reshape(n, n, S), chunks.transpose(0, 1))


# ---------------------------------------------------------------- kernels


def kernel_program(n, kernel, host_params, windows, args):
    """HOST: one window per ``windows`` (name -> shape, dtype), then dispatch ``kernel`` to each rank
    with ``args`` (host rows ``("row", param)`` or window names)."""
    chip = launcher(kernel)
    b = FunctionBuilder("orchestrator", FunctionKind.Orchestration)
    params = {name: b.param(name, t, d) for name, t, d in host_params}
    views = {}
    for name, (shape, wdtype) in windows.items():
        nbytes = wdtype.nbytes
        for extent in shape:
            nbytes *= extent
        buf = assign(b, f"{name}_buf", "dist.alloc_window_buffer", nbytes, name=f"{name}_buf")
        views[name] = b.op(name, "dist.window", buf, list(shape), dtype=wdtype)
    with b.loop("r", 0, n) as r:
        values = [
            row_of(b, params[a[1]], r, S, a[1] + "_row") if isinstance(a, tuple) else views[a] for a in args
        ]
        dispatch(b, chip, r, *values)
    return world_program(host(b), chip, kernel)


def kernel_allreduce(mode, n):
    b = FunctionBuilder("k", FunctionKind.AIV)
    inp = b.param("inp", tensor_t((1, S)))
    out = b.param("out", tensor_t((1, S)), Direction.Out)
    data = b.param("data", window_t((1, S)), Direction.InOut)
    rows = 2 * (n - 1) if mode == "ring" else n
    sig = b.param("sig", window_t((rows, n if mode == "ring" else 1), INT32), Direction.InOut)
    tile = b.op("tile", "tile.load", inp, [0, 0], shape=(1, S), target_memory=Mem.Vec)
    b.do("tile.store", tile, [0, 0], data)
    reduced = assign(b, "reduced", "dist.allreduce", data, sig, op=ReduceOp.Sum, mode=mode)
    back = b.op("back", "tile.load", reduced, [0, 0], shape=(1, S), target_memory=Mem.Vec)
    b.do("tile.store", back, [0, 0], out)
    return b.build()


@pytest.mark.parametrize("mode", ["mesh", "ring"])
def test_an_allreduce_inside_a_kernel_equals_torch(mode):
    n = 3
    rows = 2 * (n - 1) if mode == "ring" else n
    prog = kernel_program(
        n,
        kernel_allreduce(mode, n),
        [("inputs", tensor_t((n, S)), Direction.In), ("outputs", tensor_t((n, S)), Direction.Out)],
        {"data": ((1, S), FP32), "sig": ((rows, n if mode == "ring" else 1), INT32)},
        [("row", "inputs"), ("row", "outputs"), "data", "sig"],
    )
    x, out = torch.randn(n, S), torch.zeros(n, S)
    run_world(prog, [x, out], ranks=n)
    torch.testing.assert_close(out, x.sum(0).expand(n, S), rtol=1e-5, atol=1e-5)


def exchange_kernel(n, how, peer_offset=1, row=0, wrap=True, handshake=True):
    """Each rank puts its input row to rank (me + peer_offset) % n's window ``data`` by ``how``
    (remote_store, atomic remote_store, put, or get from the peer), handshakes, and copies it out."""
    b = FunctionBuilder("x", FunctionKind.AIV)
    inp = b.param("inp", tensor_t((1, S)))
    out = b.param("out", tensor_t((1, S)), Direction.Out)
    stage = b.param("stage", window_t((1, S)), Direction.InOut)
    data = b.param("data", window_t((2, S)), Direction.InOut)
    sig = b.param("sig", window_t((1, 1), INT32), Direction.InOut)
    ctx = b.op("ctx", "dist.get_comm_ctx", data)
    me = b.op("me", "dist.rank", ctx)
    nr = b.op("nr", "dist.nranks", ctx)
    total = b.op("total", "scalar.add", me, peer_offset)
    peer = b.op("peer", "scalar.mod", total, nr) if wrap else total
    if row == "rank":  # a run-time row: rank 1 writes outside a window of 2 rows
        row = b.op("row", "scalar.add", me, 1)
    back = b.op("back", "scalar.add", me, n - 1)
    left = b.op("left", "scalar.mod", back, nr)
    tile = b.op("tile", "tile.load", inp, [0, 0], shape=(1, S), target_memory=Mem.Vec)
    if how in ("store", "atomic"):
        atomic = {"atomic": AtomicType.Add} if how == "atomic" else {}
        for _ in range(2 if how == "atomic" else 1):  # two atomic adds accumulate
            b.do("dist.remote_store", tile, data, peer, [row, 0], **atomic)
    elif how == "put":
        b.do("tile.store", tile, [0, 0], stage)
        b.do("dist.put", data, peer, stage, [row, 0], [0, 0], shape=(1, S), chunk_rows=1, chunk_cols=8)
    if how != "get":
        if handshake:
            do(b, "dist.notify", sig, peer, [0, 0], 1, op=NotifyOp.Set)
            do(b, "dist.wait", sig, [0, 0], 1, cmp=WaitCmp.Eq)
        got = b.op("got", "tile.load", data, [row, 0], shape=(1, S), target_memory=Mem.Vec)
        b.do("tile.store", got, [0, 0], out)
    else:
        b.do("tile.store", tile, [0, 0], stage)
        do(b, "dist.notify", sig, peer, [0, 0], 1, op=NotifyOp.Set)
        do(b, "dist.wait", sig, [0, 0], 1, cmp=WaitCmp.Eq)
        b.do("dist.get", out, left, stage)
    return b.build()


def exchange(n, how, **kernel):
    return kernel_program(
        n,
        exchange_kernel(n, how, **kernel),
        [("inputs", tensor_t((n, S)), Direction.In), ("outputs", tensor_t((n, S)), Direction.Out)],
        {"stage": ((1, S), FP32), "data": ((2, S), FP32), "sig": ((1, 1), INT32)},
        [("row", "inputs"), ("row", "outputs"), "stage", "data", "sig"],
    )


@pytest.mark.parametrize("how", ["store", "put", "get"])
def test_remote_store_put_and_get_move_a_row_to_the_next_rank(how):
    n = 3
    x, out = torch.randn(n, S), torch.zeros(n, S)
    run_world(exchange(n, how), [x, out], ranks=n)
    torch.testing.assert_close(out, x.roll(1, 0))


def test_an_atomic_remote_store_adds_into_the_peer_window():
    n = 2
    x, out = torch.randn(n, S), torch.zeros(n, S)
    run_world(exchange(n, "atomic"), [x, out], ranks=n)
    torch.testing.assert_close(out, 2 * x.roll(1, 0))


def test_a_remote_load_costs_the_link_latency_plus_its_bytes_over_the_bandwidth():
    n = 2
    x, out = torch.randn(n, S), torch.zeros(n, S)
    report = run_world(exchange(n, "get"), [x, out], ranks=n)
    (read,) = [t for t in report.transfers if t.op == "dist.get" and t.src == 1]
    clock = A2A3_TARGET.clock_mhz
    assert read.nbytes == S * 4
    assert read.end - read.start == A2A3_INTERCONNECT.latency_cycles(clock) + A2A3_INTERCONNECT.link_cycles(
        S * 4, clock
    )


def test_chunking_a_put_changes_its_time_not_its_bytes():
    n = 2
    x = torch.randn(n, S)
    report = run_world(exchange(n, "put"), [x, torch.zeros(n, S)], ranks=n)
    puts = [t for t in report.transfers if t.op == "dist.put" and t.src == 0]
    assert len(puts) == 4 and sum(t.nbytes for t in puts) == S * 4, "four 8-column chunks"


def test_a_peer_outside_the_world_is_a_comm_error_at_the_op():
    with pytest.raises(CommError, match=r"peer 2 is outside the world's ranks \[0, 2\)") as err:
        run_world(exchange(2, "store", wrap=False), [torch.randn(2, S), torch.zeros(2, S)], ranks=2)
    assert err.value.span.file == "x.py"


def test_a_remote_store_outside_the_window_is_out_of_bounds_at_the_op():
    with pytest.raises(OutOfBoundsError, match="leaves the window") as err:
        run_world(exchange(2, "store", row="rank"), [torch.randn(2, S), torch.zeros(2, S)], ranks=2)
    assert err.value.span.file == "x.py"


def test_a_comm_op_on_one_chip_is_a_comm_error():
    kernel = exchange_kernel(2, "store")
    prog = world_program(launcher(kernel), kernel)
    args = [
        torch.randn(1, S),
        torch.zeros(1, S),
        torch.zeros(1, S),
        torch.zeros(2, S),
        torch.zeros(1, 1, dtype=torch.int32),
    ]
    with pytest.raises(CommError, match="this program runs on one chip"):
        A2A3SimBackend().run(prog, args, {})


def defer_program(n, publish=True, negative=False):
    """Each rank: a waiter task that defer_waits on its signal cell and a publisher task (no edge
    between them) that notifies the next rank's cell."""
    b = FunctionBuilder("waiter", FunctionKind.AIV)
    sig = b.param("sig", window_t((1, 1), INT32))
    expected = 1
    if negative:  # a run-time expected value below 0 on rank 0
        ctx = b.op("ctx", "dist.get_comm_ctx", sig)
        me = b.op("me", "dist.rank", ctx)
        expected = b.op("expected", "scalar.sub", me, 1)
    b.do("dist.defer_wait", sig, [0, 0], expected)
    waiter = b.build()
    b = FunctionBuilder("publisher", FunctionKind.AIV)
    sig2 = b.param("sig", window_t((1, 1), INT32))
    ctx = b.op("ctx", "dist.get_comm_ctx", sig2)
    me = b.op("me", "dist.rank", ctx)
    nr = b.op("nr", "dist.nranks", ctx)
    total = b.op("total", "scalar.add", me, 1)
    peer = b.op("peer", "scalar.mod", total, nr)
    do(b, "dist.notify", sig2, peer, [0, 0], 1, op=NotifyOp.Set)
    publisher = b.build()
    b = FunctionBuilder("chip", FunctionKind.Orchestration)
    s = b.param("sig", window_t((1, 1), INT32))
    b.call("waiter", s)
    if publish:
        b.call("publisher", s)
    chip = b.build()
    b = FunctionBuilder("orchestrator", FunctionKind.Orchestration)
    buf = assign(b, "sig_buf", "dist.alloc_window_buffer", 4, name="sig_buf")
    with b.loop("r", 0, n) as r:
        view = b.op("sig", "dist.window", buf, [1, 1], dtype=INT32)
        dispatch(b, chip, r, view)
    return world_program(host(b), chip, waiter, publisher)


def test_defer_wait_frees_the_core_and_completes_the_task_once_the_peer_notifies():
    report = run_world(defer_program(2), [], ranks=2)
    arrivals = {t.dst: t.end for t in report.transfers if t.op == "dist.notify"}
    for rank, chip in enumerate(report.chips):
        waiter = next(t for t in chip.tasks if t.kernel == "waiter")
        assert waiter.end_cycle < arrivals[rank], "the waiter's core was freed before the notify landed"
        assert chip.total_cycles >= arrivals[rank], "the rank finished only once its waiter completed"


def test_a_defer_wait_no_rank_satisfies_is_a_deadlock_naming_the_waiting_task():
    with pytest.raises(DeadlockError) as err:
        run_world(defer_program(2, publish=False), [], ranks=2)
    text = str(err.value)
    assert "rank0/waiter (deferred): pld.system.defer_wait at waiter.py:2" in text
    assert "sig[0, 0] of rank 0's window 'sig_buf': == 0, expects >= 1" in text


def test_a_negative_deferred_expectation_is_a_comm_error():
    with pytest.raises(CommError, match="expected -1 is negative"):
        run_world(defer_program(2, negative=True), [], ranks=2)


def stage_program(n, direction):
    """HOST: a window ``data`` of [1, S] per rank; copy host rows into it (``"in"``) or out of it."""
    windows_t, rows_t = window_t((1, S)), tensor_t((1, S))
    src_t, dst_t = (rows_t, windows_t) if direction == "in" else (windows_t, rows_t)
    kernel = copy_kernel(f"copy_{direction}", src_t, dst_t, 1)
    chip = launcher(kernel)
    b = FunctionBuilder("orchestrator", FunctionKind.Orchestration)
    rows = b.param("rows", tensor_t((n, S)), Direction.In if direction == "in" else Direction.Out)
    buf = assign(b, "data_buf", "dist.alloc_window_buffer", S * 4, name="data_buf")
    with b.loop("r", 0, n) as r:
        data = b.op("data", "dist.window", buf, [1, S], dtype=FP32)
        row = row_of(b, rows, r, S, "row")
        dispatch(b, chip, r, *((row, data) if direction == "in" else (data, row)))
    return world_program(host(b), chip, kernel)


def test_a_window_store_keeps_windows_across_runs_until_it_is_reset():
    n = 2
    store = A2A3SimBackend().window_store(n)
    x, out = torch.randn(n, S), torch.zeros(n, S)
    run_world(stage_program(n, "in"), [x], ranks=n, windows=store)
    run_world(stage_program(n, "out"), [out], ranks=n, windows=store)
    torch.testing.assert_close(out, x)
    store.reset()
    run_world(stage_program(n, "out"), [out], ranks=n, windows=store)
    assert not out.any()
    fresh = torch.ones(n, S)
    run_world(stage_program(n, "out"), [fresh], ranks=n)  # no store: a fresh zeroed window
    assert not fresh.any()


def test_a_local_load_of_window_bytes_a_peer_stored_without_notify_wait_is_a_race():
    prog = exchange(2, "store", handshake=False)
    with pytest.raises(RaceError) as err:
        run_world(prog, [torch.randn(2, S), torch.zeros(2, S)], ranks=2)
    text = str(err.value)
    assert "rank 0" in text and "rank 1" in text and "x.py:" in text
    assert "with no notify/wait ordering the two" in text


def test_a_window_store_of_another_world_size_is_a_comm_error():
    store = A2A3SimBackend().window_store(3)
    with pytest.raises(CommError, match="holds 3 rank"):
        run_world(stage_program(2, "in"), [torch.randn(2, S)], ranks=2, windows=store)


def test_a_mesh_allreduce_reads_its_peers_at_once():
    n, rows = 4, 8
    report = run_world(host_allreduce(n, rows), [torch.randn(n * rows, S), torch.zeros(n * rows, S)], ranks=n)
    into_rank0 = [t for t in report.transfers if t.dst == 0 and t.nbytes == rows * S * 4]
    assert len(into_rank0) == n - 1
    assert max(t.start for t in into_rank0) < min(t.end for t in into_rank0), "the replies overlap in time"
