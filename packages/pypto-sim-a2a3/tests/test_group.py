"""Group kernels: the AIC and both AIV lanes run concurrently and exchange tiles through pipe rings."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import FP32, FunctionBuilder, Mem, rand, run, single, tensor_t, vector_binary_kernel
from sim_mixed import MatmulBias, group_program, round_trip, scale_then_matmul

from pypto.ir import Direction, FunctionKind, MemorySpace, SplitMode
from pypto.ir import launch as launch_plans
from pypto_sim_a2a3 import A2A3_TARGET, A2A3SimBackend, PipeError
from pypto_sim_a2a3.engine.chip import Chip
from pypto_sim_a2a3.hw.pipe import lane_share

MODES = list(SplitMode)


@pytest.mark.parametrize("mode", MODES)
def test_seed_kernel_computes_a_at_b_plus_bias_in_every_split_mode(mode):
    kernel = MatmulBias(mode=mode)
    a, b, bias, out = kernel.args()
    report = run(kernel.program(), a, b, bias, out)
    torch.testing.assert_close(out, kernel.expected(a, b, bias))
    assert [t.kernel for t in report.tasks] == ["mixed"]


def test_split_modes_give_bit_identical_numbers():
    results = []
    for mode in MODES:
        kernel = MatmulBias(mode=mode)
        a, b, bias, out = kernel.args(seed=5)
        run(kernel.program(), a, b, bias, out)
        results.append(out)
    assert all(torch.equal(results[0], other) for other in results[1:])


@pytest.mark.parametrize("slot_num", [1, 2, 4])
@pytest.mark.parametrize("mode", [SplitMode.UP_DOWN, SplitMode.NONE])
def test_a_stream_of_four_tiles_is_correct_for_every_ring_depth(slot_num, mode):
    kernel = MatmulBias(mode=mode, blocks=4, rows=64, k=128, slot_num=slot_num)
    a, b, bias, out = kernel.args(seed=slot_num)
    run(kernel.program(), a, b, bias, out)
    torch.testing.assert_close(out, kernel.expected(a, b, bias))


def test_a_deeper_ring_lets_the_cube_run_ahead_of_slow_vector_lanes():
    stalls, spans = [], []
    for slot_num in (1, 2, 4):
        kernel = MatmulBias(blocks=4, rows=64, k=128, slot_num=slot_num, consumer_work=8)
        a, b, bias, out = kernel.args()
        report = run(kernel.program(), a, b, bias, out)
        torch.testing.assert_close(out, kernel.expected(a, b, bias))
        stalls.append(report.stall_cycles["cg0.AIC"])
        spans.append(report.tasks[0].end_cycle - report.tasks[0].start_cycle)
    assert stalls[0] > stalls[1] > stalls[2] == 0
    assert spans[0] > spans[2]


def _run_on_chip(prog, *args) -> Chip:
    chip = Chip(prog, A2A3_TARGET, "a2a3sim")
    chip.run(prog.entry_function, args)
    return chip


def test_each_lanes_ring_holds_its_share_at_the_slot_offsets_of_its_vec():
    kernel = MatmulBias(blocks=2, rows=64, k=128)
    a, b, bias, out = kernel.args()
    chip = _run_on_chip(kernel.program(), a, b, bias, out)
    product = a.float() @ b.float()
    for lane, core in enumerate(chip.groups[0].aiv):
        vec = core.memory.buffers[MemorySpace.Vec]
        for block in range(2):
            slot = vec[block * kernel.slot_size :][: 32 * 128 * 4].view(torch.float32).view(32, 128)
            rows = slice(block * 64 + lane * 32, block * 64 + lane * 32 + 32)
            torch.testing.assert_close(slot, product[rows])


def test_a_tile_allocated_over_the_ring_corrupts_the_popped_tile():
    # bias_vec (and the sum after it) sits on slot 0: loading bias overwrites the popped half of acc.
    kernel = MatmulBias(vec_at={"bias_vec": 0})
    a, b, bias, out = kernel.args()
    run(kernel.program(), a, b, bias, out)
    torch.testing.assert_close(out, bias + bias, rtol=0, atol=0)


def test_odd_extents_give_lane_0_the_ceiling_half_and_lane_1_the_rest():
    tile = torch.arange(5 * 3).view(5, 3)
    assert lane_share(tile, SplitMode.UP_DOWN, 0).tolist() == tile[:3].tolist()
    assert lane_share(tile, SplitMode.UP_DOWN, 1).tolist() == tile[3:].tolist()
    assert lane_share(tile, SplitMode.LEFT_RIGHT, 1).tolist() == tile[:, 2:].tolist()
    assert lane_share(tile, SplitMode.NONE, 0) is tile
    assert lane_share(tile, SplitMode.NONE, 1) is None


@pytest.mark.parametrize("mode", MODES)
def test_dir_mask_2_lanes_push_their_shares_and_the_cube_pops_the_gathered_tile(mode):
    x, w, out = rand(64, 64, seed=1), rand(64, 64, seed=2), torch.zeros(64, 64)
    run(scale_then_matmul(mode), x, w, out)
    torch.testing.assert_close(out, (2 * x) @ w)


def test_the_gathered_tile_lives_in_the_cubes_mat_ring():
    x, w, out = rand(64, 64, seed=3), rand(64, 64, seed=4), torch.zeros(64, 64)
    chip = _run_on_chip(scale_then_matmul(SplitMode.LEFT_RIGHT), x, w, out)
    mat = chip.groups[0].aic.memory.buffers[MemorySpace.Mat]
    torch.testing.assert_close(mat[: 64 * 64 * 4].view(torch.float32).view(64, 64), 2 * x)


@pytest.mark.parametrize("mode", [SplitMode.UP_DOWN, SplitMode.LEFT_RIGHT])
def test_dir_mask_3_sends_a_tile_to_the_lanes_and_their_sum_back(mode):
    a, b, bias, c = (rand(64, 64, seed=s) for s in range(4))
    out = torch.zeros(64, 64)
    run(round_trip(mode), a, b, bias, c, out)
    torch.testing.assert_close(out, (a @ b + bias) @ c)


def _index_program():
    """Each lane writes lane + 10 * block_idx + 100 * block_num into its row; the AIC stores a
    matmul at row get_subblock_idx() * 16."""
    aic = FunctionBuilder("ids_aic", FunctionKind.AIC)
    lanes_gm = aic.param("lanes", tensor_t((2, 8)), Direction.Out)
    eye_gm = aic.param("eye", tensor_t((16, 16)))
    cube_gm = aic.param("cube", tensor_t((32, 16)), Direction.Out)
    eye = aic.op("eye_l1", "tile.load", eye_gm, [0, 0], shape=(16, 16), target_memory=Mem.Mat)
    left = aic.op("eye_l0a", "tile.move", eye, target_memory=Mem.Left)
    right = aic.op("eye_l0b", "tile.move", eye, target_memory=Mem.Right)
    acc = aic.op("acc", "tile.matmul", left, right, out_dtype=FP32)
    row = aic.scalar("scalar.mul", aic.op("lane", "tile.get_subblock_idx"), 16)
    aic.do("tile.store", acc, [row, 0], cube_gm)

    aiv = FunctionBuilder("ids_aiv", FunctionKind.AIV)
    lanes_gm = aiv.param("lanes", tensor_t((2, 8)), Direction.Out)
    aiv.param("eye", tensor_t((16, 16)))
    aiv.param("cube", tensor_t((32, 16)), Direction.Out)
    lane = aiv.op("lane", "tile.get_subblock_idx")
    block = aiv.scalar("scalar.mul", aiv.op("block", "get_block_idx"), 10)
    count = aiv.scalar("scalar.mul", aiv.op("count", "get_block_num"), 100)
    value = aiv.scalar("scalar.add", aiv.scalar("scalar.add", lane, block), count)
    zeros = aiv.op("zeros", "tile.create", shape=(1, 8), dtype=FP32, target_memory=Mem.Vec)
    filled = aiv.op("filled", "tile.adds", zeros, aiv.scalar("scalar.truediv", value, 1))
    aiv.do("tile.store", filled, [lane, 0], lanes_gm)
    return group_program("ids", aic.build(), aiv.build())


def test_lane_block_index_and_block_count_seen_by_each_core():
    lanes, eye, cube = torch.zeros(2, 8), torch.eye(16), torch.full((32, 16), -1.0)
    run(_index_program(), lanes, eye, cube)
    assert lanes[:, 0].tolist() == [100.0, 101.0]
    torch.testing.assert_close(cube[:16], eye)
    assert bool((cube[16:] == -1).all())


def test_under_split_none_lane_1_only_mirrors_the_pipe_handshakes():
    kernel = MatmulBias(mode=SplitMode.NONE)
    report = run(kernel.program(), *kernel.args())
    cost = A2A3_TARGET.cost
    handshakes = cost["pipe_init_cycles"] + 2 * cost["pipe_flag_cycles"]  # init, tpop, tfree
    index_math = 4 * cost["scalar_op_cycles"]  # the row offsets of the skipped load and store
    lane1 = [s for s in report.timeline if s.core == "cg0.AIV1" and not s.stalled]
    assert {s.unit for s in lane1} <= {"SCALAR", "MTE2"}  # no load, vector op or store
    assert sum(s.cycles for s in lane1) == handshakes + index_math
    assert report.busy_cycles["cg0.AIV0"] > 10 * handshakes


def test_a_split_none_kernel_that_asks_for_its_lane_runs_both_lanes_and_lane_1_has_no_data():
    aic = MatmulBias(mode=SplitMode.NONE).aic()
    b = FunctionBuilder("mixed_aiv", FunctionKind.AIV)
    _, _, bias_gm, out_gm = MatmulBias().params(b)
    b.do("system.aiv_initialize_pipe", dir_mask=1, slot_size=65536, slot_num=2)
    b.op("lane", "tile.get_subblock_idx")
    acc = b.op("acc_vec", "tile.tpop_from_aic", shape=(128, 128), dtype=FP32, split=SplitMode.NONE)
    bias = b.op("bias_vec", "tile.load", bias_gm, [0, 0], shape=(128, 128), target_memory=Mem.Vec)
    t = b.op("t", "tile.add", acc, bias)
    b.do("system.tfree_to_aic", acc)
    b.do("tile.store", t, [0, 0], out_gm)
    aiv = b.build(at={"t": 131072}, reserve={Mem.Vec: 131072})
    with pytest.raises(PipeError, match=r"tile\.add on AIV1 uses acc_vec, which holds no data") as info:
        run(group_program("mixed", aic, aiv), *MatmulBias().args())
    assert "get_subblock_idx()" in info.value.hint


def test_the_lanes_stall_waiting_for_the_cube_and_stalls_are_not_busy_time():
    kernel = MatmulBias()
    report = run(kernel.program(), *kernel.args())
    task = report.tasks[0]
    elapsed = {core: report.busy_cycles[core] + report.stall_cycles[core] for core in report.busy_cycles}
    assert report.stall_cycles["cg0.AIC"] == 0
    assert report.stall_cycles["cg0.AIV0"] > report.busy_cycles["cg0.AIV0"]
    waits = {s.name for s in report.timeline if s.core == "cg0.AIV0" and s.stalled and s.flag_from is None}
    assert waits == {"wait for a ready slot of pipe mixed_c2v"}
    # every core starts with the task; the task lasts as long as its slowest core (whose loads'
    # latency is neither busy nor stalled time)
    assert task.end_cycle - task.start_cycle >= max(elapsed.values())


def test_a_kernel_running_alone_never_stalls():
    report = run(single(vector_binary_kernel("tile.add")), rand(64, 128), rand(64, 128), torch.zeros(64, 128))
    assert report.stall_cycles == {"cg0.AIC": 0, "cg0.AIV0": 0, "cg0.AIV1": 0}


def test_the_launch_plan_is_made_once_per_program_not_at_every_launch(monkeypatch):
    planned = []
    group_members = launch_plans.group_members
    monkeypatch.setattr(launch_plans, "group_members", lambda *a: planned.append(a) or group_members(*a))
    kernel = MatmulBias(blocks=2, rows=64, k=128)
    prog, backend = kernel.program(), A2A3SimBackend()
    for seed in (0, 1):
        a, b, bias, out = kernel.args(seed=seed)
        backend.run(prog, [a, b, bias, out], {})
        torch.testing.assert_close(out, kernel.expected(a, b, bias))
    assert len(planned) == 1
