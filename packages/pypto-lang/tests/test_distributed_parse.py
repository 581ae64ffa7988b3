"""The distributed model in the language (``import pypto.language.distributed as pld``): a
``@pl.jit.host`` orchestrator dispatching ``@pl.jit`` chip orchestrations to the ranks, windows,
the kernel ops, HOST functions of a ``@pl.program``, the errors at the user's line, and the
lowering (HOST functions untouched, the chip side lowered with its communication in order)."""

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import (
    Call,
    DistributedTensorType,
    Eval,
    For,
    FunctionKind,
    Level,
    ParseError,
    Role,
    TypeCheckError,
    structural_diff,
    verify_program,
)
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import dist
from pypto.language.errors import JitOptionError, KernelOnlyError
from pypto.passes import PassManager

N, ROWS, COLS = 2, 8, 8
SIZE = 64
NR = pl.dynamic("NR")


def calls_of(fn):
    """``fn``'s calls, in body order (nested bodies included)."""
    return [
        e
        for s in walk_stmts(fn.body)
        for root in stmt_exprs(s)
        for e in walk_expr(root)
        if isinstance(e, Call)
    ]


def ops_of(fn):
    return [c.op for c in calls_of(fn)]


def lowered(program):
    return PassManager.get_strategy().run_passes(program)


# ---------------------------------------------------------------- a program in three levels


@pl.jit.incore
def add_rank(
    x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]], rank: pl.INT32
):
    tile = pl.load(x, [0, 0], [ROWS, COLS])
    y = pl.store(pl.add(tile, pl.cast(rank, target_type=pl.FP32)), [0, 0], y)
    return y


@pl.jit
def per_rank(
    x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]], rank: pl.INT32
):
    return add_rank(x, y, rank)


@pl.jit.host
def hello(x: pl.Tensor[[N, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[N, ROWS, COLS], pl.FP32]]):
    for r in pl.range(pld.world_size()):
        per_rank(x[r], y[r], r, device=r)


def test_a_host_orchestrator_dispatches_its_chip_orchestration_per_rank():
    program = hello.parse()
    verify_program(program)
    entry = program.entry_function
    assert (entry.name, entry.kind, entry.level, entry.role, entry.is_host) == (
        "hello",
        FunctionKind.Orchestration,
        Level.HOST,
        Role.Orchestrator,
        True,
    )
    assert program.function("per_rank").kind is FunctionKind.Orchestration
    assert not program.function("per_rank").is_host
    assert program.function("add_rank").kind is FunctionKind.InCore
    loop = next(s for s in entry.body if isinstance(s, For))
    dispatch = next(s.value for s in loop.body if isinstance(s, Eval))
    assert dispatch.op == dist.dispatch and dispatch.attrs == {"callee": "per_rank"}
    assert dispatch.args[0] is loop.var  # device=r
    assert [a.type.shape for a in dispatch.args[1:3]] == [(ROWS, COLS), (ROWS, COLS)]  # x[r], y[r]
    assert dist.world_size in ops_of(entry)


def test_the_host_program_prints_under_pld_and_reads_back_equal():
    program = hello.parse()
    text = program.as_python()
    assert "@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)" in text
    assert "pld.system.world_size()" in text and "device=r" in text
    assert structural_diff(program, pl.parse(text)) is None


def test_lowering_leaves_the_host_function_as_parsed_and_lowers_the_chip_side():
    program = hello.parse()
    low = lowered(program)
    assert structural_diff(program.entry_function, low.entry_function) is None
    kinds = {fn.name: fn.kind for fn in low.functions.values()}
    assert kinds["add_rank"] is FunctionKind.AIV  # outlined and split like any kernel
    call = calls_of(low.function("per_rank"))[0]
    assert "access" in call.attrs  # the chip orchestration's tasks got their dependencies


# ---------------------------------------------------------------- windows and kernel ops


@pl.jit.incore
def ring_step(
    x: pl.Tensor[[1, SIZE], pl.FP32],
    y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
    signal: pld.DistributedTensor,
):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    data = pl.store(pl.load(x, [0, 0], [1, SIZE]), [0, 0], data)
    peer = (me + 1) % n
    pld.system.notify(signal, peer=peer, offsets=[me, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(signal, offsets=[peer, 0], expected=1, cmp=pld.WaitCmp.Ge)
    got = pld.remote_load(data, peer=peer, offsets=[0, 0], shape=[1, SIZE])
    first = pl.read(signal, [0, 0])
    pl.write(signal, [1, 0], first)
    y = pl.store(got, [0, 0], y)
    return y


@pl.jit
def ring_chip(
    x: pl.Tensor[[1, SIZE], pl.FP32],
    y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    data: pld.DistributedTensor,
    signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    return ring_step(x, y, data, signal)


@pl.jit.host
def ring(x: pl.Tensor[[NR, 1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, SIZE], pl.FP32]]):
    data_buf = pld.alloc_window_buffer(SIZE * pl.FP32.get_byte())
    signal_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        data = pld.window(data_buf, [1, SIZE], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
        ring_chip(x[r], y[r], data, signal, device=r)
    return y


def ring_program():
    return ring.parse(torch.zeros(N, 1, SIZE), torch.zeros(N, 1, SIZE))


def test_windows_are_distributed_tensors_down_to_the_kernel():
    program = ring_program()
    verify_program(program)
    host = program.entry_function
    allocs = [c for c in calls_of(host) if c.op == dist.alloc_window_buffer]
    assert [a.attrs["name"] for a in allocs] == ["data_buf", "signal_buf"]  # named after the variable
    assert allocs[0].args[0].value == SIZE * 4 and allocs[1].attrs["shape"] == (NR, 1)
    kernel = program.function("ring_step")
    types = {p.var.name: p.var.type for p in kernel.params}
    assert types["data"] == DistributedTensorType((1, SIZE), pl.FP32)
    assert types["signal"] == DistributedTensorType((NR, 1), pl.INT32)  # bare: from the window passed
    assert isinstance(program.function("ring_chip").params[2].var.type, DistributedTensorType)


def test_kernel_ops_build_their_dist_ops_in_order_and_keep_it_through_lowering():
    program = ring_program()
    comm = [dist.notify, dist.wait, dist.remote_load]
    assert [o for o in ops_of(program.function("ring_step")) if o in comm] == comm
    low = lowered(program)
    kernel = low.function("ring_step")
    order = [o for o in ops_of(kernel) if o in (*comm, "tile.load", "tile.store", "tensor.read", "tile.read")]
    # the store into the window stays before the notify, the remote load after the wait
    assert order.index("tile.store") < order.index(dist.notify) < order.index(dist.wait)
    assert order.index(dist.wait) < order.index(dist.remote_load)


def test_the_short_remote_store_picks_the_tile_or_the_tensor_form():
    @pl.jit.incore
    def push(
        x: pl.Tensor[[1, SIZE], pl.FP32],
        data: pld.DistributedTensor[[1, SIZE], pl.FP32],
    ):
        ctx = pld.get_comm_ctx(data)
        peer = (pld.rank(ctx) + 1) % pld.nranks(ctx)
        pld.remote_store(pl.load(x, [0, 0], [1, SIZE]), data, peer, [0, 0])
        pld.remote_store(x, data, peer, [0, 0], atomic=pld.AtomicType.Add)
        pld.tile.remote_store(pl.load(x, [0, 0], [1, SIZE]), data, peer, [0, 0], atomic=pld.AtomicType.None_)

    ops = ops_of(push.parse().function("push_kernel"))
    assert [o for o in ops if o.startswith("dist.") and "store" in o] == [
        dist.remote_store,
        dist.tensor_remote_store,
        dist.remote_store,
    ]


def test_collectives_in_a_kernel_and_in_the_host():
    @pl.jit.incore
    def reduce(
        data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[NR, 1], pl.INT32]
    ):
        data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max, mode="ring")
        sig = pld.tensor.barrier(sig)

    @pl.jit
    def chip(data: pld.DistributedTensor[[1, SIZE], pl.FP32], sig: pld.DistributedTensor[[NR, 1], pl.INT32]):
        reduce(data, sig)

    @pl.jit.host
    def world(x: pl.Tensor[[NR, 1, SIZE], pl.FP32]):
        buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
        sig_buf = pld.alloc_window_buffer([NR, 4], dtype=pl.INT32)
        data = pld.window(buf, [1, SIZE], dtype=pl.FP32)
        sig = pld.window(sig_buf, [NR, 4], dtype=pl.INT32)
        data = pld.tensor.allreduce(data, op=pld.ReduceOp.Sum, core_num=4)
        for r in pl.range(pld.world_size()):
            chip(data, pld.window(sig_buf, [NR, 1], dtype=pl.INT32), device=r)
        sig = pld.tensor.barrier(sig)

    program = world.parse(torch.zeros(N, 1, SIZE))
    verify_program(program)
    assert ops_of(program.function("reduce")) == [dist.allreduce, dist.barrier]
    host_ops = ops_of(program.entry_function)
    assert dist.allreduce in host_ops and dist.barrier in host_ops
    assert structural_diff(program.entry_function, lowered(program).entry_function) is None


def test_defer_wait_in_its_own_scope_of_a_chip_orchestration():
    @pl.jit
    def chip(sig: pld.DistributedTensor[[NR, 1], pl.INT32], out: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="waiter") as wait_tid:
            pld.system.defer_wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[wait_tid]):
            out[:] = pl.full([1, SIZE], pl.FP32, 1.0)
        return out

    @pl.jit.host
    def world(out: pl.Out[pl.Tensor[[NR, 1, SIZE], pl.FP32]]):
        sig_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            chip(pld.window(sig_buf, [NR, 1], dtype=pl.INT32), out[r], device=r)

    program = world.parse(torch.zeros(N, 1, SIZE))
    low = lowered(program)
    assert any(dist.defer_wait in ops_of(fn) for fn in low.functions.values() if fn.kind is FunctionKind.AIV)


# ---------------------------------------------------------------- HOST functions of a @pl.program


@pl.program
class WithCallback:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: pl.Tensor[[64, 64], pl.FP32], f: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        t = pl.load(a, [0, 0], [64, 64])
        return pl.store(pl.add(t, t), [0, 0], f)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[64, 64], pl.FP32], f: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        return self.add(a, f)

    @pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)
    def inspect(f: pl.Tensor[[64, 64], pl.FP32]): ...

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[64, 64], pl.FP32], f: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        out = self.chip(a, f)
        self.inspect(out)
        return out


def test_a_program_host_orchestrator_and_a_runtime_bound_sub_worker():
    program = WithCallback
    verify_program(program)
    assert program.entry == "host"
    sub = program.get_function("inspect")
    assert sub is not None and sub.requires_runtime_binding and sub.body == ()
    assert (sub.level, sub.role) == (Level.HOST, Role.SubWorker)
    assert program.get_function("nothing") is None
    assert ops_of(program.entry_function) == [dist.dispatch, dist.call_subworker]
    assert structural_diff(program, pl.parse(program.as_python())) is None
    low = lowered(program)
    assert low.entry == "host" and structural_diff(program.entry_function, low.entry_function) is None


@pl.program
class RebindsInALoop:
    @pl.function(type=pl.FunctionType.InCore)
    def stage(self, x: pl.Tensor[[1, 64], pl.FP32], w: pl.InOut[pld.DistributedTensor[[1, 64], pl.FP32]]):
        return pl.store(pl.load(x, [0, 0], [1, 64]), [0, 0], w)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, 64], pl.FP32], w: pl.InOut[pld.DistributedTensor[[1, 64], pl.FP32]]):
        return self.stage(x, w)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[2, 1, 64], pl.FP32]):
        buf = pld.alloc_window_buffer([1, 64], dtype=pl.FP32)
        w = pld.window(buf, [1, 64], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            w = self.chip(x[r], w, device=r)
        w = pld.tensor.allreduce(w, op=pld.ReduceOp.Sum)
        return x


def test_a_dispatch_result_rebound_in_the_host_loop_keeps_the_callees_type():
    host = RebindsInALoop.entry_function
    (dispatch,) = [c for c in calls_of(host) if c.op == dist.dispatch]
    (allreduce,) = [c for c in calls_of(host) if c.op == dist.allreduce]
    assert dispatch.type == allreduce.args[0].type == DistributedTensorType((1, 64), pl.FP32)


# ---------------------------------------------------------------- the namespace


def test_the_short_forms_are_the_manuals_and_the_rest_need_their_namespace():
    for name in ("world_size", "rank", "nranks", "get_comm_ctx", "alloc_window_buffer", "window"):
        assert getattr(pld, name) is not None
    assert pld.remote_load.dsl_name == "pld.tile.remote_load"
    for name in ("notify", "wait", "defer_wait", "put", "get", "allreduce", "barrier", "all_to_all"):
        with pytest.raises(AttributeError, match=f"pld.{name} has no short form"):
            getattr(pld, name)
    assert pld.system.notify.dsl_name == "pld.system.notify"
    assert pld.tensor.put.dsl_name == "pld.tensor.put"
    with pytest.raises(AttributeError, match=r"pld\.tile has no function 'put'"):
        pld.tile.put  # noqa: B018
    assert pld.AtomicType.None_ is pld.AtomicType.NONE
    assert [m.name for m in pld.ReduceOp] == ["Sum", "Max", "Min", "Prod"]
    assert pl.FP32.get_byte() == 4 and pl.Role.SubWorker is Role.SubWorker


def test_a_pld_function_called_as_python_says_it_is_parsed():
    with pytest.raises(KernelOnlyError, match=r"pld.system.world_size\(\) can only be used inside"):
        pld.world_size()


def test_host_takes_no_level():
    with pytest.raises(JitOptionError, match="takes no level="):

        @pl.jit.host(level=pl.Level.HOST)
        def f(x: pl.Tensor[[2, 4], pl.FP32]):
            pass


# ---------------------------------------------------------------- errors at the user's line


def _error(fn, *args, kind=ParseError):
    with pytest.raises(kind) as err:
        fn.parse(*args)
    rendered = str(err.value)
    assert err.value.span is not None and "^" in rendered and "hint:" in rendered, rendered
    assert err.value.span.file == __file__
    return err.value


def test_world_size_outside_a_host_function():
    @pl.jit
    def chip(x: pl.Tensor[[4, 4], pl.FP32]):
        return pld.world_size()

    err = _error(chip)
    assert "pld.system.world_size: runs on the host" in err.message and "@pl.jit.host" in err.hint


def test_kernel_ops_outside_a_kernel():
    @pl.jit.host
    def world(x: pl.Tensor[[N, 4, 4], pl.FP32]):
        buf = pld.alloc_window_buffer([N, 1], dtype=pl.INT32)
        sig = pld.window(buf, [N, 1], dtype=pl.INT32)
        pld.system.notify(sig, peer=0, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)

    err = _error(world)
    assert "runs in a kernel" in err.message and "HOST function" in err.message

    @pl.jit
    def chip(sig: pld.DistributedTensor[[N, 1], pl.INT32]):
        return pld.rank(pld.get_comm_ctx(sig))

    err = _error(chip)
    assert "pld.system.get_comm_ctx" in err.message or "pld.system.rank" in err.message


def test_device_outside_a_host_function():
    @pl.jit
    def chip(x: pl.Tensor[[ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
        per_rank(x, y, 0, device=1)

    err = _error(chip)
    assert "device=" in err.message and "HOST function" in err.message


def test_a_host_function_dispatching_an_incore_kernel_directly():
    @pl.jit.host
    def world(x: pl.Tensor[[N, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[N, ROWS, COLS], pl.FP32]]):
        for r in pl.range(pld.world_size()):
            add_rank(x[r], y[r], r, device=r)

    err = _error(world)
    assert "@pl.jit.incore kernel" in err.message and "wrap it" in err.hint


def test_get_comm_ctx_of_a_plain_tensor():
    @pl.jit.incore
    def kernel(x: pl.Tensor[[1, SIZE], pl.FP32]):
        return pld.get_comm_ctx(x)

    err = _error(kernel, kind=TypeCheckError)
    assert "pld.DistributedTensor" in err.message and "plain" in err.message


def test_a_plain_tensor_passed_for_a_window_parameter():
    @pl.jit
    def chip(x: pl.Tensor[[1, SIZE], pl.FP32]):
        ring_step(x, x, x, x)

    err = _error(chip, kind=TypeCheckError)
    assert "must be a pld.DistributedTensor" in err.message


def test_defer_wait_in_a_plain_incore_kernel():
    @pl.jit.incore
    def kernel(sig: pld.DistributedTensor[[N, 1], pl.INT32]):
        pld.system.defer_wait(sig, offsets=[0, 0], expected=1)

    err = _error(kernel)
    assert "pl.at" in err.hint


def test_an_allreduce_in_a_kernel_needs_its_signal():
    @pl.jit.incore
    def kernel(data: pld.DistributedTensor[[1, SIZE], pl.FP32]):
        data = pld.tensor.allreduce(data)

    err = _error(kernel)
    assert "signal" in err.message


def test_alloc_window_buffer_takes_no_name():
    @pl.jit.host
    def world(x: pl.Tensor[[N, 4], pl.FP32]):
        return pld.alloc_window_buffer(64, name="mine")

    err = _error(world)
    assert "name=" in err.message


def test_type_rule_errors_point_at_the_call():
    @pl.jit.incore
    def kernel(sig: pld.DistributedTensor[[N, 1], pl.FP32]):
        pld.system.wait(sig, offsets=[0, 0], expected=1)

    err = _error(kernel, kind=TypeCheckError)
    assert "INT32 signal cells" in err.message

    @pl.jit.incore
    def puts(data: pld.DistributedTensor[[4, SIZE], pl.FP32], x: pl.Tensor[[4, SIZE], pl.FP32]):
        pld.tensor.put(data, peer=1, src=x, pipeline=True, chunk_rows=2)

    err = _error(puts, kind=TypeCheckError)
    assert "chunk_cols > 0" in err.message
    assert isinstance(err, ValueError)  # the manual's ValueError, before anything runs


def test_a_host_function_is_called_from_python_only():
    @pl.jit
    def chip(x: pl.Tensor[[N, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[N, ROWS, COLS], pl.FP32]]):
        hello(x, y)

    err = _error(chip)
    assert "@pl.jit.host" in err.message


def test_the_collectives_dtype_rules():
    @pl.jit.incore
    def kernel(
        data: pld.DistributedTensor[[1, SIZE], pl.INT32], sig: pld.DistributedTensor[[NR, 1], pl.INT32]
    ):
        data = pld.tensor.allreduce(data, sig)

    err = _error(kernel)
    assert 'mode="mesh" reduces pl.FP16 or pl.FP32' in err.message

    @pl.jit.host
    def ring_host(x: pl.Tensor[[N, 4], pl.FP32]):
        buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
        data = pld.window(buf, [1, SIZE], dtype=pl.FP32)
        data = pld.tensor.allreduce(data, op=pld.ReduceOp.Max, mode="ring")

    err = _error(ring_host)
    assert "HOST ring allreduce sums pl.FP32" in err.message

    @pl.jit.host
    def gather_host(x: pl.Tensor[[N, 4], pl.FP32]):
        buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP16)
        out_buf = pld.alloc_window_buffer([N, SIZE], dtype=pl.FP16)
        sig_buf = pld.alloc_window_buffer([N], dtype=pl.INT32)
        sig = pld.window(sig_buf, [N], dtype=pl.INT32)
        out = pld.window(out_buf, [N, SIZE], dtype=pl.FP16)
        out = pld.tensor.allgather(pld.window(buf, [1, SIZE], dtype=pl.FP16), out, sig)

    err = _error(gather_host)
    assert "HOST builtin moves pl.FP32 windows only" in err.message


def test_a_host_function_opens_no_scope():
    @pl.jit.host
    def world(x: pl.Tensor[[N, 4], pl.FP32], y: pl.Out[pl.Tensor[[N, 4], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.exp(x)

    err = _error(world)
    assert "HOST function runs on the host" in err.message and "device=r" in err.hint


def test_a_device_index_must_be_a_rank():
    @pl.jit.host
    def world(x: pl.Tensor[[N, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[N, ROWS, COLS], pl.FP32]]):
        per_rank(x[0], y[0], 0, device=-1)

    err = _error(world)
    assert "device= is a rank index >= 0" in err.message


def test_a_host_index_outside_the_tensor():
    @pl.jit.host
    def world(x: pl.Tensor[[N, ROWS, COLS], pl.FP32], y: pl.Out[pl.Tensor[[N, ROWS, COLS], pl.FP32]]):
        per_rank(x[N], y[0], 0, device=0)

    err = _error(world)
    assert "outside a dim of 2" in err.message


def test_a_host_allreduce_without_its_signal_is_refused_in_a_loop():
    @pl.jit.host
    def world(x: pl.Tensor[[N, 4], pl.FP32]):
        buf = pld.alloc_window_buffer([1, SIZE], dtype=pl.FP32)
        for _r in pl.range(pld.world_size()):
            data = pld.window(buf, [1, SIZE], dtype=pl.FP32)
            data = pld.tensor.allreduce(data)

    err = _error(world)
    assert "outside loops" in err.message


def test_a_comm_context_annotation():
    @pl.jit.incore
    def kernel(data: pld.DistributedTensor[[1, SIZE], pl.FP32], y: pl.Out[pl.Tensor[[1, 1], pl.INT32]]):
        ctx: pld.CommCtx = pld.get_comm_ctx(data)
        me: pl.Scalar[pl.INT32] = pld.rank(ctx)
        pl.write(y, [0, 0], me)
        return y

    program = kernel.parse()
    assert dist.rank in ops_of(program.function("kernel_kernel"))


def test_no_load_is_prefetched_across_a_wait():
    @pl.jit.incore
    def kernel(
        data: pld.DistributedTensor[[4, SIZE], pl.FP32],
        sig: pld.DistributedTensor[[4, 1], pl.INT32],
        x: pl.Tensor[[4, SIZE], pl.FP32],
        y: pl.Out[pl.Tensor[[4, SIZE], pl.FP32]],
    ):
        for i in pl.pipeline(4, stage=2):
            pld.system.wait(sig, offsets=[i, 0], expected=1)
            t = pl.load(data, [i, 0], [1, SIZE])
            u = pl.load(x, [i, 0], [1, SIZE])
            y = pl.store(pl.add(t, u), [i, 0], y)
        return y

    low = lowered(kernel.parse())
    fn = next(f for f in low.functions.values() if f.kind is FunctionKind.AIV)
    loop = next(s for s in fn.body if isinstance(s, For))
    before = [
        c.op
        for s in fn.body[: fn.body.index(loop)]
        for r in stmt_exprs(s)
        for c in walk_expr(r)
        if isinstance(c, Call)
    ]
    assert "tile.load" not in before  # nothing loaded ahead of the loop
    inside = [c.op for s in loop.body for r in stmt_exprs(s) for c in walk_expr(r) if isinstance(c, Call)]
    assert inside.index(dist.wait) < inside.index("tile.load")


def test_a_run_time_window_extent_reads_back_from_the_printed_program():
    @pl.jit.incore
    def kernel(x: pl.Tensor[[1, SIZE], pl.FP32], signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]):
        pld.system.notify(signal, peer=0, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
        return signal

    @pl.jit
    def chip(x: pl.Tensor[[1, SIZE], pl.FP32], signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]):
        return kernel(x, signal)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, 1, SIZE], pl.FP32]):
        buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            signal = pld.window(buf, [pld.world_size(), 1], dtype=pl.INT32)
            chip(x[r], signal, device=r)
        return x

    program = host.parse(torch.zeros(2, 1, SIZE))
    assert structural_diff(program, pl.parse(program.as_python())) is None


def test_the_shape_overload_takes_a_run_time_extent_as_a_byte_size():
    @pl.jit.incore
    def kernel(x: pl.Tensor[[1, SIZE], pl.FP32], signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]):
        pld.system.notify(signal, peer=0, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
        return signal

    @pl.jit
    def chip(x: pl.Tensor[[1, SIZE], pl.FP32], signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]):
        return kernel(x, signal)

    @pl.jit.host
    def host(x: pl.Tensor[[NR, 1, SIZE], pl.FP32]):
        buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            signal = pld.window(buf, [pld.world_size(), 1], dtype=pl.INT32)
            chip(x[r], signal, device=r)
        return x

    program = host.parse(torch.zeros(2, 1, SIZE))
    (alloc,) = [c for c in calls_of(program.entry_function) if c.op == dist.alloc_window_buffer]
    assert "shape" not in alloc.attrs and len(alloc.args) == 1  # world_size * 4 bytes, computed at run time
    assert structural_diff(program, pl.parse(program.as_python())) is None


def test_a_collective_rebinding_its_window_draws_no_write_warning(recwarn):
    @pl.jit.incore
    def kernel(
        x: pl.Tensor[[1, SIZE], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[1, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        y: pl.Out[pl.Tensor[[1, SIZE], pl.FP32]],
    ):
        data = pl.store(pl.load(x, [0, 0], [1, SIZE]), [0, 0], data)
        data = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)  # the manual's form: in place
        return pl.store(pl.load(data, [0, 0], [1, SIZE]), [0, 0], y)

    kernel.parse(
        torch.zeros(1, SIZE),
        torch.zeros(1, SIZE),
        torch.zeros(2, 1, dtype=torch.int32),
        torch.zeros(1, SIZE),
    )
    assert not [w for w in recwarn if "rebinds the name" in str(w.message)]
