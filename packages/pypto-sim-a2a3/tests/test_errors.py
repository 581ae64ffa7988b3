"""Errors a user can cause at run time, and invalid lowered programs: PyptoErrors with spans and hints."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from sim_lowered import (
    FunctionBuilder,
    Mem,
    matmul_kernel,
    program,
    rand,
    run,
    single,
    tensor_t,
    vector_binary_kernel,
)

from pypto.ir import (
    INDEX,
    Allocation,
    Direction,
    FunctionKind,
    MemoryPlan,
    PyptoError,
    SpecializationError,
    UnsupportedDtypeError,
    VerificationError,
)
from pypto_sim_a2a3 import OutOfBoundsError


def _assert_user_facing(err: PyptoError) -> None:
    assert err.span is not None
    assert err.hint


def _chunk_kernel(chunks: int):
    k = FunctionBuilder("chunks", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((128, 64)))
    out = k.param("out", tensor_t((128, 64)), Direction.Out)
    with k.loop("i", 0, chunks) as i:
        row = k.scalar("scalar.mul", i, 32)
        x = k.op("x_t", "tile.load", x_gm, [row, 0], shape=(32, 64), target_memory=Mem.Vec)
        k.do("tile.store", x, [row, 0], out)
    return k.build()


def test_load_past_the_tensor_with_a_loop_offset_raises_out_of_bounds_at_the_load():
    kernel = _chunk_kernel(chunks=5)
    with pytest.raises(OutOfBoundsError) as info:
        run(single(kernel), rand(128, 64), torch.zeros(128, 64))
    err = info.value
    _assert_user_facing(err)
    assert "pl.load: region [128:160] is outside dim 0 of size 128" in err.message
    load_span = kernel.body[0].body[0].span
    assert err.span == load_span


def test_out_of_bounds_error_is_also_an_index_error_but_a_pypto_error_first():
    with pytest.raises(PyptoError):
        run(single(_chunk_kernel(chunks=5)), rand(128, 64), torch.zeros(128, 64))


def test_wrong_argument_count_is_a_specialization_error_listing_the_params():
    with pytest.raises(SpecializationError, match=r"takes 3 argument\(s\) \(a, b, out\) but got 2") as info:
        run(single(vector_binary_kernel("tile.add")), rand(64, 128), rand(64, 128))
    _assert_user_facing(info.value)


def test_tensor_of_the_wrong_dtype_is_a_specialization_error_naming_the_param():
    a16 = rand(64, 128, dtype=torch.float16)
    with pytest.raises(SpecializationError, match="parameter a expects Tensor") as info:
        run(single(vector_binary_kernel("tile.add")), a16, rand(64, 128), torch.zeros(64, 128))
    assert "torch.float16" in info.value.message
    _assert_user_facing(info.value)


def test_tensor_of_the_wrong_shape_is_a_specialization_error():
    with pytest.raises(SpecializationError, match=r"got shape \[64, 64\]") as info:
        run(single(vector_binary_kernel("tile.add")), rand(64, 128), rand(64, 64), torch.zeros(64, 128))
    _assert_user_facing(info.value)


def test_tensor_of_a_dtype_pypto_cannot_hold_is_an_unsupported_dtype_error():
    z = torch.zeros(64, 128, dtype=torch.complex64)
    with pytest.raises(UnsupportedDtypeError, match="complex64") as info:
        run(single(vector_binary_kernel("tile.add")), z, rand(64, 128), torch.zeros(64, 128))
    _assert_user_facing(info.value)


def test_python_number_for_a_tensor_param_is_a_specialization_error():
    with pytest.raises(SpecializationError, match="expects a torch tensor"):
        run(single(vector_binary_kernel("tile.add")), 1.0, rand(64, 128), torch.zeros(64, 128))


def test_tile_without_an_allocation_names_the_kernel_and_the_tile():
    kernel = vector_binary_kernel("tile.add")
    plan = kernel.attrs["memory_plan"]
    without_y = MemoryPlan({k: v for k, v in plan.allocations.items() if k != "y"}, plan.peak)
    with pytest.raises(VerificationError, match="in kernel vec_add: tile y has no allocation") as info:
        run(single(replace(kernel, attrs={"memory_plan": without_y})), *_add_args())
    _assert_user_facing(info.value)


def test_allocation_past_the_space_capacity_names_the_kernel_and_the_tile():
    kernel = vector_binary_kernel("tile.add")
    plan = kernel.attrs["memory_plan"]
    allocations = dict(plan.allocations, z=Allocation("z", Mem.Vec, 196608 - 1024, 32768))
    bad = replace(kernel, attrs={"memory_plan": MemoryPlan(allocations, plan.peak)})
    with pytest.raises(
        VerificationError, match=r"tile z at Vec\[195584:228352\] lies outside the 196608-byte Vec"
    ):
        run(single(bad), *_add_args())


def test_allocation_in_a_space_of_the_other_core_kind_is_a_verification_error():
    kernel = vector_binary_kernel("tile.add")
    plan = kernel.attrs["memory_plan"]
    bad = replace(
        kernel, attrs={"memory_plan": MemoryPlan(dict(plan.allocations), plan.peak)}, kind=FunctionKind.AIC
    )
    with pytest.raises(VerificationError, match=r"the cg0\.AIC core does not have"):
        run(single(bad), *_add_args())


def test_illegal_data_path_names_the_legal_ones():
    k = FunctionBuilder("bad_path", FunctionKind.AIC)
    a_gm = k.param("a", tensor_t((16, 16)))
    c_gm = k.param("c", tensor_t((16, 16)), Direction.Out)
    a = k.op("a_l1", "tile.load", a_gm, [0, 0], shape=(16, 16), target_memory=Mem.Mat)
    acc = k.op("a_acc", "tile.move", a, target_memory=Mem.Acc)
    k.do("tile.store", acc, [0, 0], c_gm)
    with pytest.raises(VerificationError, match="moves data Mat->Acc") as info:
        run(single(k.build()), rand(16, 16), torch.zeros(16, 16))
    assert "Acc->Mat" in info.value.hint


def test_group_kernel_whose_body_is_not_its_two_kernel_calls_is_a_verification_error():
    group = replace(matmul_kernel(16, 16, 16), kind=FunctionKind.Group)
    with pytest.raises(VerificationError, match="Group kernel mm may only call its AIC and AIV kernels"):
        run(single(group), rand(16, 16), rand(16, 16), torch.zeros(16, 16))


def test_incore_function_that_was_not_split_is_a_verification_error():
    incore = replace(matmul_kernel(16, 16, 16), kind=FunctionKind.InCore)
    with pytest.raises(VerificationError, match="splits InCore functions"):
        run(single(incore), rand(16, 16), rand(16, 16), torch.zeros(16, 16))


def test_tensor_op_inside_a_kernel_is_rejected():
    k = FunctionBuilder("bad", FunctionKind.AIV)
    a = k.param("a", tensor_t((16, 16)))
    k.op("b", "tensor.exp", a)
    with pytest.raises(VerificationError, match=r"tensor\.exp cannot run inside a kernel"):
        run(single(k.build()), rand(16, 16))


def test_tile_op_in_the_orchestration_is_rejected():
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    a = host.param("a", tensor_t((16, 16)))
    host.op("t", "tile.load", a, [0, 0], shape=(16, 16), target_memory=Mem.Vec)
    with pytest.raises(VerificationError, match="runs on a core but sits in the orchestration"):
        run(program(host.build()), rand(16, 16))


def _add_args():
    return rand(64, 128), rand(64, 128), torch.zeros(64, 128)


def test_scalar_param_given_a_float_for_an_index_is_a_specialization_error():
    k = FunctionBuilder("k", FunctionKind.AIV)
    k.param("n", INDEX)
    with pytest.raises(SpecializationError, match="expects a Python scalar of INDEX, got float"):
        run(single(k.build()), 2.5)
