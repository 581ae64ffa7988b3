"""Pipe misuse: deadlocks and imbalances named with the pipe, slot states and lines; setup errors."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import torch
from sim_lowered import FP32, FunctionBuilder, Mem, matmul_kernel, rand, run, single, tensor_t
from sim_mixed import MatmulBias, at, group_program, span_of

from pypto.ir import DeadlockError, FunctionKind, SplitMode
from pypto_sim_a2a3 import PipeError

STREAM = MatmulBias(blocks=4, rows=64, k=128)


def _fail(kernel: MatmulBias, error: type[Exception] = DeadlockError):
    program = kernel.program()
    with pytest.raises(error) as info:
        run(program, *kernel.args())
    return info.value, program.function("mixed_aic"), program.function("mixed_aiv")


def test_missing_tfree_deadlocks_promptly_naming_the_pipe_the_slots_and_the_pop():
    started = time.perf_counter()
    err, aic, aiv = _fail(replace(STREAM, free=False))
    assert time.perf_counter() - started < 1.0
    push, pop = at(span_of(aic, "tile.tpush_to_aiv")), at(span_of(aiv, "tile.tpop_from_aic"))
    assert (
        f"  cg0.AIC: tpush_to_aiv on pipe mixed_c2v blocks at {push}: AIV0's ring is full — "
        f"slot 0 popped by AIV0 at {pop} and never freed, slot 1 popped by AIV0 at {pop} and never freed "
        "(missing tfree_to_aic)"
    ) in err.message.splitlines()
    assert (
        f"  cg0.AIV1: tpop_from_aic on pipe mixed_c2v blocks at {pop}: the next slot is not ready — "
        f"slot 0 popped by AIV1 at {pop} and never freed, slot 1 popped by AIV1 at {pop} and never freed "
        "(missing tfree_to_aic)"
    ) in err.message.splitlines()
    assert err.span == span_of(aiv, "tile.tpop_from_aic")
    assert err.hint == "match every tpop with a tfree"
    assert err.render().startswith(f"{err.span}: error: every live core is blocked:")


def test_more_pushes_than_pops_leaves_tiles_in_the_ring_when_the_launch_ends():
    err, aic, _ = _fail(replace(STREAM, blocks=2, pushes=3))
    push = at(span_of(aic, "tile.tpush_to_aiv"))
    ring = f"(AIC pushed 3, 2 popped, 2 freed): slot 0 ready (pushed by AIC at {push}) and never popped, slot 1 free"
    assert err.message == (
        f"pipe mixed_c2v is not drained when the launch of mixed ends — AIV0's ring {ring}; AIV1's ring {ring}"
    )
    assert err.span == span_of(aic, "tile.tpush_to_aiv")
    assert "every tpush needs a matching tpop" in err.hint


def test_more_pushes_than_the_ring_holds_blocks_the_cube_once_the_lanes_are_done():
    err, aic, _ = _fail(replace(STREAM, blocks=2, pushes=4, pops=1))
    push = at(span_of(aic, "tile.tpush_to_aiv"))
    ready = f"ready (pushed by AIC at {push}) and never popped"
    assert (
        f"  cg0.AIC: tpush_to_aiv on pipe mixed_c2v blocks at {push}: AIV0's ring is full — slot 0 {ready}, "
        f"slot 1 {ready} (AIV0 finished after 1 pop(s) of 3 push(es): more pushes than pops)"
    ) in err.message.splitlines()
    assert err.span == span_of(aic, "tile.tpush_to_aiv")


def test_more_pops_than_pushes_names_the_producer_that_finished():
    err, _, aiv = _fail(replace(STREAM, blocks=2, pops=3))
    pop = at(span_of(aiv, "tile.tpop_from_aic"))
    assert (
        f"  cg0.AIV0: tpop_from_aic on pipe mixed_c2v blocks at {pop}: the next slot is not ready — "
        "slot 0 free, slot 1 free (AIC finished after 2 push(es) and AIV0 popped 2: more pops than pushes)"
    ) in err.message.splitlines()
    assert err.span == span_of(aiv, "tile.tpop_from_aic")
    assert err.hint == "every tpop needs a matching tpush"


def test_mismatched_pipe_setup_names_both_lines():
    err, aic, aiv = _fail(MatmulBias(aiv_slot_size=32768), PipeError)
    aic_init, aiv_init = (
        span_of(aic, "system.aic_initialize_pipe"),
        span_of(aiv, "system.aiv_initialize_pipe"),
    )
    assert err.message == (
        f"pipe setup of Group mixed differs between its sides: AIC at {at(aic_init)} sets dir_mask=1, "
        f"slot_size=65536, slot_num=2, AIV0 at {at(aiv_init)} sets dir_mask=1, slot_size=32768, slot_num=2"
    )
    assert err.span == aiv_init


def test_a_ring_that_does_not_fit_the_consumers_memory_is_a_pipe_error():
    err, _, _ = _fail(MatmulBias(slot_num=4), PipeError)
    assert (
        err.message
        == "pipe mixed_c2v needs 4 x 65536 = 262144 bytes of Vec on AIV0 and AIV1, which holds 196608"
    )


def test_more_slots_than_the_hardware_has_is_a_pipe_error():
    err, _, _ = _fail(MatmulBias(rows=8, slot_num=9), PipeError)
    assert "slot_num=9 is more than the 8 slots per direction of a2a3" in err.message


def test_both_directions_halve_the_slots_each_may_use():
    aic = FunctionBuilder("both_aic", FunctionKind.AIC)
    aic.param("x", tensor_t((8, 8)))
    aic.do("system.aic_initialize_pipe", dir_mask=3, slot_size=1024, slot_num=5)
    aiv = FunctionBuilder("both_aiv", FunctionKind.AIV)
    aiv.param("x", tensor_t((8, 8)))
    with pytest.raises(
        PipeError, match="slot_num=5 is more than the 4 slots per direction of a2a3 when both"
    ):
        run(group_program("both", aic.build(), aiv.build()), rand(8, 8))


def test_popping_with_another_split_than_the_push_is_a_pipe_error():
    err, aic, _ = _fail(MatmulBias(pop_split=SplitMode.LEFT_RIGHT), PipeError)
    assert err.message == (
        "tpop_from_aic pops Tile[[64, 128], FP32, Vec] with split=LEFT_RIGHT from pipe mixed_c2v, but slot 0 "
        f"holds Tile[[64, 128], FP32, Vec] (split=UP_DOWN) pushed at {at(span_of(aic, 'tile.tpush_to_aiv'))}"
    )


def _aiv_kernel(*ops: str):
    """The mixed program's AIV side doing only ``ops``: "init", "pop", "free" or "push" (of a loaded tile)."""
    b = FunctionBuilder("mixed_aiv", FunctionKind.AIV)
    _, _, bias_gm, _ = MatmulBias().params(b)
    for op in ops:
        if op == "init":
            b.do("system.aiv_initialize_pipe", dir_mask=1, slot_size=65536, slot_num=2)
        elif op == "pop":
            b.op("acc_vec", "tile.tpop_from_aic", shape=(64, 128), dtype=FP32, split=SplitMode.UP_DOWN)
        else:
            x = b.op("x", "tile.load", bias_gm, [0, 0], shape=(64, 128), target_memory=Mem.Vec)
            if op == "free":
                b.do("system.tfree_to_aic", x)
            else:
                b.do("tile.tpush_to_aic", x, split=SplitMode.UP_DOWN)
    return b.build(reserve={Mem.Vec: 131072})


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (("pop",), "tpop_from_aic on pipe mixed_c2v before AIV0 initialized that direction"),
        (("init", "pop", "free"), "tfree_to_aic(x) on AIV0: x is not a popped tile that is still unfreed"),
        (("init", "push"), "tpush_to_aic on pipe mixed_v2c before AIV0 initialized that direction"),
    ],
)
def test_pipe_handshakes_out_of_protocol_are_pipe_errors(ops, message):
    kernel = MatmulBias()
    with pytest.raises(PipeError) as info:
        run(group_program("mixed", kernel.aic(), _aiv_kernel(*ops)), *kernel.args())
    assert message in info.value.message


def test_a_pipe_op_in_a_kernel_that_runs_alone_is_a_pipe_error():
    kernel = _aiv_kernel("init")
    with pytest.raises(PipeError, match=r"aiv_initialize_pipe in kernel mixed_aiv, which runs alone on AIV0"):
        run(single(kernel), *MatmulBias().args())


def test_a_tile_bigger_than_a_slot_is_a_pipe_error():
    aic = matmul_kernel(64, 64, 64)
    b = FunctionBuilder("mm_aic", FunctionKind.AIC)
    params = [b.param(p.var.name, p.var.type, p.direction) for p in aic.params]
    b.do("system.aic_initialize_pipe", dir_mask=1, slot_size=1024, slot_num=2)
    a = b.op("a_l1", "tile.load", params[0], [0, 0], shape=(64, 64), target_memory=Mem.Mat)
    b.do("tile.tpush_to_aiv", a, split=SplitMode.UP_DOWN)
    aiv = FunctionBuilder("mm_aiv", FunctionKind.AIV)
    for p in aic.params:
        aiv.param(p.var.name, p.var.type, p.direction)
    aiv.do("system.aiv_initialize_pipe", dir_mask=1, slot_size=1024, slot_num=2)
    with pytest.raises(PipeError) as info:
        run(group_program("mm", b.build(), aiv.build()), rand(64, 64), rand(64, 64), torch.zeros(64, 64))
    assert info.value.message == (
        "tpush_to_aiv puts a Tile[[32, 64], FP32, Vec] (8192 bytes) into pipe mm_c2v, whose slots hold 1024 bytes"
    )


def test_lane_1_pushing_its_split_none_token_as_a_real_share_is_a_pipe_error():
    # The lanes ask for their lane, so lane 1 does not mirror; it pops a token and pushes it back split.
    aic = FunctionBuilder("echo_aic", FunctionKind.AIC)
    aic.param("x", tensor_t((16, 16)))
    aic.do("system.aic_initialize_pipe", dir_mask=3, slot_size=2048, slot_num=2)
    eye = aic.op("eye", "tile.load", aic.params[0].var, [0, 0], shape=(16, 16), target_memory=Mem.Mat)
    aic.do("tile.tpush_to_aiv", eye, split=SplitMode.NONE)
    aic.op("back", "tile.tpop_from_aiv", shape=(32, 16), dtype=FP32, split=SplitMode.UP_DOWN)
    aiv = FunctionBuilder("echo_aiv", FunctionKind.AIV)
    aiv.param("x", tensor_t((16, 16)))
    aiv.do("system.aiv_initialize_pipe", dir_mask=3, slot_size=2048, slot_num=2)
    aiv.op("lane", "tile.get_subblock_idx")
    got = aiv.op("got", "tile.tpop_from_aic", shape=(16, 16), dtype=FP32, split=SplitMode.NONE)
    aiv.do("tile.tpush_to_aic", got, split=SplitMode.UP_DOWN)
    prog = group_program("echo", aic.build(reserve={Mem.Mat: 4096}), aiv.build(reserve={Mem.Vec: 4096}))
    with pytest.raises(
        PipeError, match=r"tpush_to_aic\(split=UP_DOWN\) on AIV1 pushes a share it has no data for"
    ):
        run(prog, rand(16, 16))
