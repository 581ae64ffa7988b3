"""The distributed model's IR: the window-bound tensor type, the communication handles, the HOST
level/role of functions, and the type rules of the ``dist.*`` ops (each error the manual names is a
``TypeCheckError`` at the call, spelled as the user writes the op, with a hint)."""

import pytest

from pypto.ir import (
    COMM_CTX,
    INDEX,
    UNIT,
    WINDOW_BUFFER,
    AtomicType,
    Call,
    CommError,
    Const,
    DataType,
    DistributedTensorType,
    DynDim,
    Eval,
    Function,
    FunctionKind,
    Level,
    NotifyOp,
    Param,
    Program,
    PyptoError,
    ReduceOp,
    Role,
    ScalarType,
    TensorType,
    TileType,
    TupleExpr,
    TupleType,
    TypeCheckError,
    Var,
    VerificationError,
    WaitCmp,
    make_call,
    print_ir,
    verify_function,
)
from pypto.ir.ops import Communicates, OnSide, Side, dist, get_op
from pypto.ir.types import MemorySpace, describe

I32 = ScalarType(DataType.INT32)
FP32, INT32 = DataType.FP32, DataType.INT32


def const(v, t=INDEX):
    return Const(v, t)


def idx(*values):
    return TupleExpr(tuple(const(v) for v in values), TupleType(tuple(INDEX for _ in values)))


def window(name, *shape, dtype=FP32):
    return Var(name, DistributedTensorType(tuple(shape), dtype))


def plain(name, *shape, dtype=FP32):
    return Var(name, TensorType(tuple(shape), dtype))


def refused(op, args, attrs=None, match=""):
    with pytest.raises(TypeCheckError, match=match) as err:
        make_call(op, args, attrs or {})
    assert err.value.hint, "every refusal says how to fix it"
    return err.value


# ---------------------------------------------------------------- types


def test_a_distributed_tensor_is_a_tensor_that_prints_under_pld():
    t = DistributedTensorType((1, 256), FP32)
    assert isinstance(t, TensorType)
    assert str(t) == "pld.DistributedTensor[[1, 256], pl.FP32]"
    assert describe(t) == "DistributedTensor[[1, 256], FP32]"
    assert t != TensorType((1, 256), FP32), "a window is not the plain tensor of its shape"
    assert t.nbytes == 1024


def test_the_communication_handles_print_under_pld():
    assert (str(COMM_CTX), str(WINDOW_BUFFER)) == ("pld.CommCtx", "pld.WindowBuffer")
    assert describe(COMM_CTX) == "CommCtx"


def test_the_enums_and_the_none_alias():
    assert [m.name for m in NotifyOp] == ["AtomicAdd", "Set"]
    assert [m.name for m in WaitCmp] == ["Eq", "Ge"]
    assert [m.name for m in ReduceOp] == ["Sum", "Max", "Min", "Prod"]
    assert AtomicType.None_ is AtomicType.NONE


def test_comm_error_is_a_pypto_error():
    assert issubclass(CommError, PyptoError)


def host_function(role, body=(), **attrs):
    return Function(
        "f", (), tuple(body), FunctionKind.Orchestration, attrs={"level": Level.HOST, "role": role, **attrs}
    )


def test_function_level_role_and_host_ness_come_from_its_attributes():
    fn = host_function(Role.Orchestrator)
    assert (fn.level, fn.role, fn.is_host, fn.requires_runtime_binding) == (
        Level.HOST,
        Role.Orchestrator,
        True,
        False,
    )
    sub = host_function(Role.SubWorker, requires_runtime_binding=True)
    assert sub.requires_runtime_binding and sub.role is Role.SubWorker
    chip = Function("g", (), (), FunctionKind.Orchestration)
    assert (chip.level, chip.role, chip.is_host) == (None, None, False)


def test_a_program_looks_a_function_up_by_name():
    fn = host_function(Role.Orchestrator)
    program = Program("p", [fn], "f")
    assert program.get_function("f") is fn
    assert program.get_function("missing") is None


# ---------------------------------------------------------------- host ops


def test_world_size_and_window_buffers():
    assert make_call(dist.world_size, ()).type == ScalarType(DataType.INT64)
    assert make_call(dist.alloc_window_buffer, (const(256, I32),), {"name": "buf"}).type == WINDOW_BUFFER
    by_shape = make_call(dist.alloc_window_buffer, (), {"shape": (2, 1), "dtype": INT32})
    assert by_shape.type == WINDOW_BUFFER


@pytest.mark.parametrize(
    ("args", "attrs", "match"),
    [
        ((const(0, I32),), {}, "must be positive"),
        ((), {}, "needs a size in bytes"),
        ((const(64, I32),), {"shape": (2, 1), "dtype": INT32}, "not both"),
        ((const(1.5, ScalarType(FP32)),), {}, "integer scalar"),
    ],
)
def test_a_bad_window_buffer_is_refused(args, attrs, match):
    refused(dist.alloc_window_buffer, args, attrs, match)


def test_a_window_views_a_buffer_with_static_and_run_time_extents():
    buf = Var("buf", WINDOW_BUFFER)
    t = make_call(dist.window, (buf, idx(2, 1)), {"dtype": INT32}).type
    assert t == DistributedTensorType((2, 1), INT32)
    nr = DynDim("NR")
    shape = TupleExpr((nr, const(64)), TupleType((INDEX, INDEX)))
    assert make_call(dist.window, (buf, shape), {"dtype": FP32}).type.shape == (nr, 64)
    world = make_call(dist.world_size, ())
    dynamic = make_call(
        dist.window, (buf, TupleExpr((world, const(1)), TupleType((INDEX, INDEX)))), {"dtype": INT32}
    )
    assert isinstance(dynamic.type.shape[0], DynDim)


def test_a_window_of_something_else_than_a_buffer_is_refused():
    err = refused(dist.window, (plain("x", 2, 1), idx(2, 1)), {"dtype": FP32}, "views a window buffer")
    assert err.message.startswith("pld.tensor.window:")


def test_get_comm_ctx_takes_a_window_and_rank_nranks_the_context():
    ctx = make_call(dist.get_comm_ctx, (window("data", 1, 64),))
    assert ctx.type == COMM_CTX
    assert make_call(dist.rank, (ctx,)).type == I32
    assert make_call(dist.nranks, (ctx,)).type == I32


def test_get_comm_ctx_of_a_plain_tensor_is_refused_with_a_hint():
    err = refused(dist.get_comm_ctx, (plain("x", 1, 64),), match="pld.DistributedTensor")
    assert err.message.startswith("pld.system.get_comm_ctx:") and "plain" in err.message
    assert "pld.window" in err.hint


def test_rank_of_something_else_than_a_context_is_refused():
    refused(dist.rank, (window("data", 1, 64),), match="communication context")


# ---------------------------------------------------------------- signals


def test_notify_and_wait_on_an_int32_signal_cell():
    sig = window("signal", 2, 1, dtype=INT32)
    note = make_call(dist.notify, (sig, const(1, I32), idx(0, 0), const(1, I32)), {"op": NotifyOp.AtomicAdd})
    assert note.type == UNIT
    assert make_call(dist.wait, (sig, idx(1, 0), const(1, I32)), {"cmp": WaitCmp.Eq}).type == UNIT
    assert make_call(dist.defer_wait, (sig, idx(1, 0), const(1, I32)), {}).type == UNIT


def test_notify_needs_its_op():
    sig = window("signal", 2, 1, dtype=INT32)
    refused(dist.notify, (sig, const(1, I32), idx(0, 0), const(1, I32)), {}, "pld.NotifyOp")


@pytest.mark.parametrize(
    ("sig", "offsets", "match"),
    [
        (window("signal", 2, 1, dtype=FP32), idx(0, 0), "INT32 signal cells"),
        (plain("signal", 2, 1, dtype=INT32), idx(0, 0), "pld.DistributedTensor"),
        (window("signal", 2, 1, dtype=INT32), idx(0), "list of 2 indices"),
        (window("signal", 2, 1, dtype=INT32), idx(2, 0), "outside dim 0"),
    ],
)
def test_a_bad_signal_is_refused(sig, offsets, match):
    refused(dist.wait, (sig, offsets, const(1, I32)), {}, match)


def test_defer_wait_accepts_ge_only_and_a_negative_expectation_is_refused():
    sig = window("signal", 2, 1, dtype=INT32)
    refused(dist.defer_wait, (sig, idx(0, 0), const(1, I32)), {"cmp": WaitCmp.Eq}, "only cmp=pld.WaitCmp.Ge")
    refused(dist.wait, (sig, idx(0, 0), const(-1, I32)), {}, "expected must be >= 0")


# ---------------------------------------------------------------- remote access


def test_remote_load_gives_a_vec_tile_of_the_window_dtype():
    data = window("data", 1, 64)
    t = make_call(dist.remote_load, (data, const(1, I32), idx(0, 0)), {"shape": (1, 64)}).type
    assert t == TileType((1, 64), FP32, MemorySpace.Vec)


def test_remote_load_outside_the_window_or_from_a_plain_tensor_is_refused():
    refused(
        dist.remote_load, (window("d", 1, 64), const(1, I32), idx(0, 32)), {"shape": (1, 64)}, "outside dim 1"
    )
    refused(
        dist.remote_load,
        (plain("d", 1, 64), const(1, I32), idx(0, 0)),
        {"shape": (1, 64)},
        "DistributedTensor",
    )


def test_remote_store_of_a_tile_and_of_a_tensor():
    data = window("data", 1, 64)
    tile = Var("t", TileType((1, 64), FP32, MemorySpace.Vec))
    assert make_call(dist.remote_store, (tile, data, const(1, I32), idx(0, 0)), {}).type == UNIT
    src = plain("src", 1, 64)
    assert make_call(dist.tensor_remote_store, (src, data, const(0, I32), idx(0, 0)), {}).type == UNIT
    refused(dist.remote_store, (src, data, const(1, I32), idx(0, 0)), {}, "stores a tile")
    refused(dist.tensor_remote_store, (tile, data, const(1, I32), idx(0, 0)), {}, "pushes a tensor")


def test_an_atomic_add_into_an_unsupported_dtype_is_refused():
    data = window("data", 1, 64, dtype=DataType.INT64)
    tile = Var("t", TileType((1, 64), DataType.INT64, MemorySpace.Vec))
    refused(dist.remote_store, (tile, data, const(1, I32), idx(0, 0)), {"atomic": AtomicType.Add}, "atomic")


def test_put_and_get_need_the_window_on_the_remote_side():
    win, local = window("w", 1, 64), plain("x", 1, 64)
    assert make_call(dist.put, (win, const(1, I32), local), {}).type == UNIT
    assert make_call(dist.get, (local, const(1, I32), win), {}).type == UNIT
    refused(dist.put, (local, const(1, I32), local), {}, "dst must be a pld.DistributedTensor")
    refused(dist.get, (local, const(1, I32), local), {}, "src must be a pld.DistributedTensor")


def test_pipeline_without_both_chunks_is_refused():
    win, local = window("w", 64, 64), plain("x", 64, 64)
    refused(dist.put, (win, const(1, I32), local), {"pipeline": True, "chunk_rows": 16}, "chunk_cols > 0")
    ok = {"pipeline": True, "chunk_rows": 16, "chunk_cols": 32}
    assert make_call(dist.get, (local, const(1, I32), win), ok).type == UNIT


def test_a_dynamic_transfer_extent_needs_a_static_chunk():
    nr = DynDim("N")
    win, local = window("w", 4, nr), plain("x", 4, nr)
    refused(dist.put, (win, const(1, I32), local), {}, "innermost extent is dynamic")
    assert make_call(dist.put, (win, const(1, I32), local), {"chunk_cols": 64}).type == UNIT


# ---------------------------------------------------------------- collectives


def test_collectives_give_their_targets_type():
    data, sig = window("data", 2, 64), window("sig", 2, 1, dtype=INT32)
    assert make_call(dist.allreduce, (data, sig), {"op": ReduceOp.Max}).type == data.type
    assert make_call(dist.allreduce, (data,), {}).type == data.type
    assert make_call(dist.barrier, (sig,), {}).type == sig.type
    assert make_call(dist.broadcast, (data, sig), {"root": 1}).type == data.type
    stage = window("stage", 1, 64)
    assert make_call(dist.allgather, (stage, data, sig), {}).type == data.type
    assert make_call(dist.reduce_scatter, (data, sig), {}).type == data.type
    other = window("other", 2, 64)
    assert make_call(dist.all_to_all, (other, data, sig), {}).type == data.type


def test_ring_with_several_cores_and_reduce_scatter_with_max_are_refused():
    data, sig = window("data", 2, 64), window("sig", 2, 1, dtype=INT32)
    refused(dist.allreduce, (data, sig), {"mode": "ring", "core_num": 2}, "core_num=2")
    refused(dist.allreduce, (data, sig), {"mode": "tree"}, "mesh")
    refused(dist.reduce_scatter, (data, sig), {"op": ReduceOp.Max}, "Sum only")
    refused(dist.allreduce, (data, sig), {"core_num": 4}, "one signal lane per core")


def test_allgather_and_all_to_all_need_separate_windows():
    data, sig = window("data", 2, 64), window("sig", 2, 1, dtype=INT32)
    refused(dist.allgather, (data, data, sig), {}, "separate windows")
    refused(dist.all_to_all, (data, data, sig), {}, "separate windows")


# ---------------------------------------------------------------- traits, verifier, printer


def test_kernel_ops_run_on_the_vector_side_and_are_ordering_points():
    for name in ("notify", "wait", "remote_load", "remote_store", "put", "get", "allreduce"):
        spec = get_op(getattr(dist, name))
        assert spec.trait(OnSide) == OnSide(Side.VECTOR, only=True)
        assert spec.has(Communicates)
    assert get_op(dist.world_size).trait(Communicates).where == "host"
    assert get_op(dist.notify).trait(Communicates).where == "kernel"
    assert get_op(dist.allreduce).trait(Communicates).where == "both"


def test_the_verifier_keeps_host_ops_in_host_functions_and_kernel_ops_out_of_them():
    world = make_call(dist.world_size, ())
    kernel = Function("k", (), (Eval(world),), FunctionKind.InCore)
    with pytest.raises(VerificationError, match="runs on the host"):
        verify_function(kernel)
    sig = Var("sig", DistributedTensorType((2, 1), INT32))
    note = make_call(dist.notify, (sig, const(1, I32), idx(0, 0), const(1, I32)), {"op": NotifyOp.Set})
    host = Function(
        "h", (Param(sig),), (Eval(note),), FunctionKind.Orchestration, attrs={"level": Level.HOST}
    )
    with pytest.raises(VerificationError, match="runs in a kernel"):
        verify_function(host)
    barrier = make_call(dist.barrier, (sig,), {})
    verify_function(
        Function(
            "h", (Param(sig),), (Eval(barrier),), FunctionKind.Orchestration, attrs={"level": Level.HOST}
        )
    )


def test_the_printer_spells_the_ops_and_types_under_pld():
    sig = window("signal", 2, 1, dtype=INT32)
    note = make_call(dist.notify, (sig, const(1, I32), idx(0, 0), const(1, I32)), {"op": NotifyOp.AtomicAdd})
    text = print_ir(note)
    assert text.startswith("pld.system.notify(signal, 1, [0, 0], 1") and "op=pld.NotifyOp.AtomicAdd" in text
    dispatch = Call(dist.dispatch, (const(1, I32), sig), UNIT, {"callee": "chip"})
    assert print_ir(dispatch) == "self.chip(signal, device=1)"
    fn = Function("k", (Param(sig),), (Eval(note),), FunctionKind.InCore)
    program = Program("p", [fn], "k")
    printed = print_ir(program)
    assert "import pypto.language.distributed as pld" in printed
    assert "signal: pld.DistributedTensor[[2, 1], pl.INT32]" in printed
