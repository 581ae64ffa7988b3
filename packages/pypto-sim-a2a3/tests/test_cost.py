"""Cost-model invariants: relative answers, never absolute times."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import (
    FP16,
    FP32,
    FunctionBuilder,
    Mem,
    expr,
    matmul_kernel,
    program,
    rand,
    run,
    single,
    tensor_t,
    tile_t,
)

from pypto.ir import INDEX, DataType, Direction, FunctionKind, SplitMode, Var, make_call
from pypto_sim_a2a3 import A2A3_TARGET
from pypto_sim_a2a3.hw.cost import CostModel

COST = CostModel(A2A3_TARGET)


def _matmul_call(m, k, n, dtype=FP32):
    a, b = Var("a", tile_t((m, k), dtype, Mem.Left)), Var("b", tile_t((k, n), dtype, Mem.Right))
    return make_call("tile.matmul", [a, b])


def _vector_call(op, shape=(64, 128)):
    x = Var("x", tile_t(shape))
    return make_call(op, [x, x] if op in ("tile.add", "tile.div") else [x])


def _load_call(rows, cols=256):
    gm = Var("gm", tensor_t((rows, cols)))
    return make_call("tile.load", [gm, expr([0, 0])], {"shape": (rows, cols), "target_memory": Mem.Vec})


def test_bigger_matmul_costs_more_cube_cycles():
    small, big = COST.op_cost(_matmul_call(64, 64, 64)), COST.op_cost(_matmul_call(128, 128, 128))
    assert small.unit == big.unit == "CUBE"
    assert big.cycles > 4 * small.cycles


def test_fp32_matmul_takes_about_twice_the_cycles_of_fp16():
    fp32, fp16 = COST.op_cost(_matmul_call(128, 256, 128)), COST.op_cost(_matmul_call(128, 256, 128, FP16))
    assert 1.5 < fp32.cycles / fp16.cycles <= 2


def test_exp_is_slower_than_add_over_the_same_bytes():
    exp = COST.op_cost(_vector_call("tile.exp"))
    neg = COST.op_cost(_vector_call("tile.neg"))
    assert exp.unit == neg.unit == "VECTOR"
    assert exp.cycles == neg.cycles * A2A3_TARGET.cost["vector_slow_factor"]
    assert exp.cycles > COST.op_cost(_vector_call("tile.add")).cycles


def test_vector_cycles_scale_with_operand_bytes():
    small, big = COST.op_cost(_vector_call("tile.add", (32, 128))), COST.op_cost(_vector_call("tile.add"))
    assert big.cycles == 2 * small.cycles


def test_loads_pay_a_fixed_latency_so_doubling_bytes_costs_less_than_double():
    small, big = COST.op_cost(_load_call(64)), COST.op_cost(_load_call(128))
    assert small.unit == "MTE2"
    assert small.cycles < big.cycles < 2 * small.cycles


def test_l1_to_l0b_moves_are_slower_than_l1_to_l0a():
    tile = Var("t", tile_t((64, 64), FP16, Mem.Mat))
    to_left = COST.op_cost(make_call("tile.move", [tile], {"target_memory": Mem.Left}))
    to_right = COST.op_cost(make_call("tile.move", [tile], {"target_memory": Mem.Right}))
    assert to_left.unit == to_right.unit == "MTE1"
    assert to_right.cycles > to_left.cycles


def test_storing_from_acc_goes_through_fixpipe_and_from_vec_through_mte3():
    gm = Var("gm", tensor_t((64, 64)))
    acc, vec = Var("acc", tile_t((64, 64), FP32, Mem.Acc)), Var("vec", tile_t((64, 64)))
    from_acc = COST.op_cost(make_call("tile.store", [acc, expr([0, 0]), gm]))
    from_vec = COST.op_cost(make_call("tile.store", [vec, expr([0, 0]), gm]))
    assert (from_acc.unit, from_vec.unit) == ("FIXPIPE", "MTE3")
    # Both land in GM at its write rate; the FIXPIPE path also pays its drain.
    assert from_acc.peak_cycles == from_vec.peak_cycles
    assert from_acc.cycles - from_vec.cycles == A2A3_TARGET.cost["fixpipe_drain_cycles"]


def test_roofs_count_work_at_peak_without_latency_or_head():
    matmul = COST.op_cost(_matmul_call(128, 256, 128, FP16))
    assert (matmul.roof, matmul.peak_cycles) == ("cube", 128 * 256 * 128 / 4096)
    assert matmul.cycles > matmul.peak_cycles  # the per-K-block head
    load = COST.op_cost(_load_call(64))
    assert (
        load.roof == "memory" and load.cycles - load.peak_cycles > A2A3_TARGET.cost["mte2_latency_cycles"] - 1
    )
    add = COST.op_cost(_vector_call("tile.add"))
    assert (add.roof, add.peak_cycles) == ("vector", add.cycles)
    index = COST.op_cost(make_call("scalar.mul", [Var("i", INDEX), expr(32)]))
    assert index.roof is None and index.peak_cycles == 0


def test_scalar_index_math_is_cheap_next_to_a_vector_op():
    i = Var("i", INDEX)
    scalar = COST.op_cost(make_call("scalar.mul", [i, expr(32)]))
    assert scalar.unit == "SCALAR"
    assert scalar.cycles * 100 < COST.op_cost(_vector_call("tile.add")).cycles


def test_a_bigger_matmul_kernel_takes_more_modeled_cycles_end_to_end():
    small = run(single(matmul_kernel(32, 32, 32)), rand(32, 32), rand(32, 32), torch.zeros(32, 32))
    big = run(single(matmul_kernel(128, 128, 128)), rand(128, 128), rand(128, 128), torch.zeros(128, 128))
    assert big.total_cycles > small.total_cycles
    assert big.busy_cycles["cg0.AIC"] > small.busy_cycles["cg0.AIC"]


def test_gm_transfer_dominates_a_small_matmul_task():
    report = run(single(matmul_kernel(128, 256, 128, FP16)), *_fp16_mm_args())
    task = report.tasks[0]
    cube = COST.op_cost(_matmul_call(128, 256, 128, FP16)).cycles
    assert cube < (task.end_cycle - task.start_cycle) / 3


def _fp16_mm_args():
    return rand(128, 256, dtype=torch.float16), rand(256, 128, dtype=torch.float16), torch.zeros(128, 128)


def test_report_counts_busy_cycles_per_core_and_the_idle_cores():
    k = FunctionBuilder("add", FunctionKind.AIV)
    a = k.param("a", tensor_t((64, 128)))
    out = k.param("out", tensor_t((64, 128)), Direction.Out)
    x = k.op("x", "tile.load", a, [0, 0], shape=(64, 128), target_memory=Mem.Vec)
    y = k.op("y", "tile.adds", x, 1.0)
    k.do("tile.store", y, [0, 0], out)
    report = run(single(k.build()), rand(64, 128), torch.zeros(64, 128))
    assert set(report.busy_cycles) == {"cg0.AIC", "cg0.AIV0", "cg0.AIV1"}
    assert report.busy_cycles["cg0.AIV0"] > 0
    assert report.busy_cycles["cg0.AIC"] == report.busy_cycles["cg0.AIV1"] == 0
    task = report.tasks[0]
    # A chain of dependent ops on one core: it runs an op or waits for its own data (the load's
    # latency, a flag between its pipes), never for another core.
    assert report.stall_cycles["cg0.AIV0"] == 0
    waits = [s for s in report.timeline if s.core == "cg0.AIV0" and s.stalled]
    ops = [s for s in report.timeline if s.core == "cg0.AIV0" and not s.stalled]
    assert waits and all(s.flag_from is not None for s in waits)
    assert report.busy_cycles["cg0.AIV0"] == sum(s.cycles for s in ops)  # one op at a time here
    assert max(s.end for s in ops) == task.end_cycle
    assert report.total_cycles > task.end_cycle > task.start_cycle > 0
    assert report.modeled and "modeled cycles" in report.summary()


def test_sequential_tasks_each_pay_dispatch_and_do_not_overlap():
    kernel = matmul_kernel(32, 32, 32)
    host = FunctionBuilder("host", FunctionKind.Orchestration)
    args = [host.param(p.var.name, p.var.type, p.direction) for p in kernel.params]
    host.call("mm", *args)
    host.call("mm", *args)
    twice = run(program(host.build(), kernel), rand(32, 32), rand(32, 32), torch.zeros(32, 32))
    once = run(single(kernel), rand(32, 32), rand(32, 32), torch.zeros(32, 32))
    first, second = twice.tasks
    assert first.end_cycle < second.start_cycle
    assert twice.total_cycles > 2 * (once.tasks[0].end_cycle - once.tasks[0].start_cycle)
    assert twice.busy_cycles["cg0.AIC"] == 2 * once.busy_cycles["cg0.AIC"]


def _pipe_call(op, shape=(128, 128), space=Mem.Acc):
    tile = Var("t", tile_t(shape, FP32, space))
    return make_call(op, [tile], {"split": SplitMode.UP_DOWN})


def test_a_push_pays_a_fixed_handshake_plus_its_bytes_at_the_crossing_rate():
    small, big = (
        COST.op_cost(_pipe_call("tile.tpush_to_aiv", (64, 128))),
        COST.op_cost(_pipe_call("tile.tpush_to_aiv")),
    )
    handshake = A2A3_TARGET.cost["pipe_push_handshake_cycles"]
    assert small.unit == "FIXPIPE"
    assert big.cycles - handshake == pytest.approx(2 * (small.cycles - handshake), abs=1)
    assert COST.push_cost(_pipe_call("tile.tpush_to_aiv"), nbytes=0).cycles == handshake


def test_vector_to_cube_pushes_leave_through_mte3_into_l2_like_cube_pushes():
    to_aic = COST.op_cost(_pipe_call("tile.tpush_to_aic", space=Mem.Vec))
    to_aiv = COST.op_cost(_pipe_call("tile.tpush_to_aiv"))
    assert to_aic.unit == "MTE3"
    assert to_aic.cycles == to_aiv.cycles


def test_a_pop_reads_its_share_into_the_ring_faster_than_the_push_wrote_it():
    pop = COST.op_cost(make_call("tile.tpop_from_aic", [], {"shape": (128, 128), "dtype": FP32}))
    push = COST.op_cost(_pipe_call("tile.tpush_to_aiv"))
    flag = A2A3_TARGET.cost["pipe_flag_cycles"]
    assert pop.unit == "MTE2"
    assert flag < pop.cycles < push.cycles
    assert pop.peak_cycles > push.peak_cycles * 0.5


def test_popping_a_data_less_token_is_only_the_flag():
    assert COST.pop_cost(nbytes=0).cycles == A2A3_TARGET.cost["pipe_flag_cycles"]


def test_free_is_a_small_fixed_handshake():
    free = COST.op_cost(make_call("system.tfree_to_aic", [Var("t", tile_t((64, 128)))]))
    assert free.cycles == A2A3_TARGET.cost["pipe_flag_cycles"]
    assert free.roof is None


def test_a_soft_syncall_through_gm_costs_more_than_the_hard_barrier():
    ws = Var("ws", tensor_t((16,), DataType.INT32))
    soft = COST.op_cost(make_call("system.syncall", [ws], {"mode": "soft", "used_cores": 3}))
    hard = COST.op_cost(make_call("system.syncall", [], {"mode": "hard"}))
    fence = COST.op_cost(make_call("system.fence", []))
    assert soft.cycles > hard.cycles > fence.cycles


def test_gathering_one_row_costs_less_than_loading_the_tile_but_pays_the_gm_latency():
    dst, src = Var("dst", tile_t((64, 256))), Var("src", tensor_t((64, 256)))
    row = make_call("tile.gather_row", [dst, src, expr([0, 0]), expr([0, 0])], {"shape": (1, 256)})
    gather, load = COST.op_cost(row), COST.op_cost(_load_call(64))
    assert gather.unit == "MTE2"
    assert A2A3_TARGET.cost["mte2_latency_cycles"] < gather.cycles < load.cycles


def test_a_scalar_read_of_gm_costs_far_more_than_index_math():
    read = COST.op_cost(make_call("scalar.read", [Var("t", tensor_t((4, 4))), expr([0, 0])]))
    math = COST.op_cost(make_call("scalar.mul", [Var("i", INDEX), expr(32)]))
    assert read.unit == "SCALAR"
    assert read.cycles > 10 * math.cycles
