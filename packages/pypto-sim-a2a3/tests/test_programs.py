"""Whole lowered programs run on the simulator, checked against torch."""

from __future__ import annotations

import torch
from sim_lowered import (
    FP16,
    FP32,
    FunctionBuilder,
    Mem,
    launcher,
    matmul_kernel,
    program,
    rand,
    run,
    single,
    tensor_t,
    vector_binary_kernel,
)

from pypto.ir import INDEX, Direction, FunctionKind, ScalarType
from pypto_sim_a2a3 import A2A3SimBackend


def test_vector_add_kernel_writes_the_sum_into_the_output_tensor():
    a, b, out = rand(64, 128, seed=1), rand(64, 128, seed=2), torch.zeros(64, 128)
    run(single(vector_binary_kernel("tile.add")), a, b, out)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


def test_scalar_mul_kernel_scales_by_a_scalar_passed_from_the_host():
    k = FunctionBuilder("scale", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((32, 64)))
    alpha = k.param("alpha", ScalarType(FP32))
    out = k.param("out", tensor_t((32, 64)), Direction.Out)
    x = k.op("x_t", "tile.load", x_gm, [0, 0], shape=(32, 64), target_memory=Mem.Vec)
    y = k.op("y_t", "tile.muls", x, alpha)
    k.do("tile.store", y, [0, 0], out)
    x_val, out_val = rand(32, 64), torch.zeros(32, 64)
    run(single(k.build()), x_val, 0.5, out_val)
    torch.testing.assert_close(out_val, x_val * 0.5, rtol=0, atol=0)


def test_fp32_cube_matmul_through_mat_left_right_and_acc_matches_torch():
    a, b, c = rand(64, 64, seed=3), rand(64, 64, seed=4), torch.zeros(64, 64)
    run(single(matmul_kernel(64, 64, 64)), a, b, c)
    torch.testing.assert_close(c, a @ b)


def test_fp16_matmul_accumulates_in_fp32():
    a = rand(64, 64, dtype=torch.float16, seed=5)
    b = rand(64, 64, dtype=torch.float16, seed=6)
    c = torch.zeros(64, 64)
    run(single(matmul_kernel(64, 64, 64, dtype=FP16, out_dtype=FP32)), a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float())


def test_loop_over_four_row_chunks_uses_the_loop_variable_in_offsets():
    k = FunctionBuilder("chunks", FunctionKind.AIV)
    x_gm = k.param("x", tensor_t((128, 64)))
    out = k.param("out", tensor_t((128, 64)), Direction.Out)
    with k.loop("i", 0, 4) as i:
        row = k.scalar("scalar.mul", i, 32)
        x = k.op("x_t", "tile.load", x_gm, [row, 0], shape=(32, 64), target_memory=Mem.Vec)
        y = k.op("y_t", "tile.adds", x, k.scalar("scalar.add", i, 0.0))
        k.do("tile.store", y, [row, 0], out)
    x_val, out_val = rand(128, 64), torch.zeros(128, 64)
    run(single(k.build()), x_val, out_val)
    chunk_index = torch.arange(128).div(32, rounding_mode="floor").float().unsqueeze(1)
    torch.testing.assert_close(out_val, x_val + chunk_index, rtol=0, atol=0)


def _double_kernel() -> FunctionBuilder:
    k = FunctionBuilder("double", FunctionKind.AIV)
    a_gm = k.param("a", tensor_t((64, 64)))
    tmp = k.param("tmp", tensor_t((64, 64)), Direction.Out)
    x = k.op("x", "tile.load", a_gm, [0, 0], shape=(64, 64), target_memory=Mem.Vec)
    y = k.op("y", "tile.muls", x, 2.0)
    k.do("tile.store", y, [0, 0], tmp)
    k.ret(tmp)
    return k


def test_orchestration_feeds_a_created_tensor_from_one_kernel_to_the_next():
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    a = host.param("a", tensor_t((64, 64)))
    b = host.param("b", tensor_t((64, 64)))
    out = host.param("out", tensor_t((64, 64)), Direction.Out)
    tmp = host.op("tmp", "tensor.create", shape=(64, 64), dtype=FP32)
    doubled = host.call("double", a, tmp, name="doubled", type=tensor_t((64, 64)))
    host.call("vec_add", doubled, b, out)
    host.ret(out, doubled)
    prog = program(host.build(), _double_kernel().build(), vector_binary_kernel("tile.add", (64, 64)))
    a_val, b_val, out_val = rand(64, 64, seed=7), rand(64, 64, seed=8), torch.zeros(64, 64)
    report = run(prog, a_val, b_val, out_val)
    torch.testing.assert_close(out_val, 2 * a_val + b_val, rtol=0, atol=0)
    assert report.outputs[0] is out_val
    torch.testing.assert_close(report.outputs[1], 2 * a_val, rtol=0, atol=0)
    assert [t.kernel for t in report.tasks] == ["double", "vec_add"]
    assert report.tasks[0].end_cycle <= report.tasks[1].start_cycle


def test_result_reusing_its_operand_buffer_is_still_correct():
    k = FunctionBuilder("reuse", FunctionKind.AIV)
    a_gm = k.param("a", tensor_t((64, 64)))
    b_gm = k.param("b", tensor_t((64, 64)))
    out = k.param("out", tensor_t((64, 64)), Direction.Out)
    x = k.op("x", "tile.load", a_gm, [0, 0], shape=(64, 64), target_memory=Mem.Vec)
    y = k.op("y", "tile.load", b_gm, [0, 0], shape=(64, 64), target_memory=Mem.Vec)
    z = k.op("z", "tile.add", x, y)  # placed on x's bytes below
    w = k.op("w", "tile.mul", z, z)  # placed on z's (and x's) bytes
    k.do("tile.store", w, [0, 0], out)
    kernel = k.build(at={"x": 0, "y": 16384, "z": 0, "w": 0})
    a, b, out_val = rand(64, 64, seed=9), rand(64, 64, seed=10), torch.zeros(64, 64)
    run(single(kernel), a, b, out_val)
    torch.testing.assert_close(out_val, (a + b) * (a + b), rtol=0, atol=0)


def test_overlapping_live_tiles_produce_wrong_numbers_as_on_chip():
    # y is placed on x's bytes while x is still live: loading y clobbers x.
    kernel = vector_binary_kernel("tile.add", shape=(64, 64))
    clobbered = _replan(kernel, {"x": 0, "y": 0, "z": 32768})
    a, b, out = rand(64, 64, seed=11), rand(64, 64, seed=12), torch.zeros(64, 64)
    run(single(clobbered), a, b, out)
    torch.testing.assert_close(out, b + b, rtol=0, atol=0)
    assert not torch.allclose(out, a + b)


def test_partially_overlapping_tiles_corrupt_only_the_shared_bytes():
    kernel = vector_binary_kernel("tile.add", shape=(64, 64))
    half = 64 * 64 * 4 // 2
    clobbered = _replan(kernel, {"x": 0, "y": half, "z": 65536})
    a, b, out = rand(64, 64, seed=13), rand(64, 64, seed=14), torch.zeros(64, 64)
    run(single(clobbered), a, b, out)
    # y's first rows landed on x's last rows; x's first rows are intact.
    torch.testing.assert_close(out[:32], a[:32] + b[:32], rtol=0, atol=0)
    torch.testing.assert_close(out[32:], b[:32] + b[32:], rtol=0, atol=0)


def _replan(kernel, offsets):
    from dataclasses import replace

    from sim_lowered import bump_plan

    return replace(kernel, attrs={"memory_plan": bump_plan(kernel.body, offsets)})


def test_entry_scalar_params_drive_loop_bounds_on_the_host():
    k = _double_kernel()
    kernel = k.build()
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    a = host.param("a", tensor_t((64, 64)))
    tmp = host.param("tmp", tensor_t((64, 64)), Direction.Out)
    n = host.param("n", INDEX)
    with host.loop("i", 0, n):
        host.call("double", a, tmp)
    report = run(program(host.build(), kernel), rand(64, 64), torch.zeros(64, 64), 3)
    assert len(report.tasks) == 3


def test_launcher_returns_nothing_when_the_entry_has_no_return():
    report = run(program(launcher(matmul_kernel(16, 16, 16)), matmul_kernel(16, 16, 16)), *_mm_args(16))
    assert report.outputs == ()


def _mm_args(n):
    return rand(n, n), rand(n, n, seed=1), torch.zeros(n, n)


def test_the_on_task_option_hears_of_every_finished_task():
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    a = host.param("a", tensor_t((64, 64)))
    b = host.param("b", tensor_t((64, 64)))
    out = host.param("out", tensor_t((64, 64)), Direction.Out)
    tmp = host.op("tmp", "tensor.create", shape=(64, 64), dtype=FP32)
    doubled = host.call("double", a, tmp, name="doubled", type=tensor_t((64, 64)))
    host.call("vec_add", doubled, b, out)
    prog = program(host.build(), _double_kernel().build(), vector_binary_kernel("tile.add", (64, 64)))
    heard: list[str] = []
    args = [rand(64, 64, seed=7), rand(64, 64, seed=8), torch.zeros(64, 64)]
    A2A3SimBackend().run(prog, args, {"on_task": heard.append})
    assert heard == ["double", "vec_add"]
