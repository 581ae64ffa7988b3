"""Mixed kernels: split, expansion into AIC + AIV + Group, pipes, rings and their budget."""

import dataclasses
import warnings

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    Assign,
    Call,
    Const,
    Eval,
    For,
    FunctionKind,
    MemoryBudgetError,
    MemorySpace,
    ParseError,
    PlatformError,
    ScalarType,
    ScopeStmt,
    SplitMode,
    print_ir,
)
from pypto.ir.filecheck import filecheck
from pypto.ir.nodes import walk_stmts
from pypto.passes import CompileWarning, lower


def ops(fn):
    return [
        s.value.op for s in walk_stmts(fn.body) if isinstance(s, (Assign, Eval)) and isinstance(s.value, Call)
    ]


# The orchestration calls the group, which calls both kernels; the kernels' attrs name the split.
GROUP_CHECKS = """
CHECK-LABEL: def mixed(
CHECK:       self.mixed_1(a, b, bias, out, access=['In', 'In', 'In', 'Out'])
CHECK-NEXT:  return out
CHECK-LABEL: @pl.function(type=pl.FunctionType.Group)
CHECK:       def mixed_1(
CHECK-NEXT:  pl.func_attr({'split': pl.SplitMode.MODE, 'pipe_name': 'mixed'})
CHECK:       self.mixed_aic(a, b, bias, out)
CHECK-NEXT:  self.mixed_aiv(a, b, bias, out)
CHECK-LABEL: @pl.function(type=pl.FunctionType.AIC)
CHECK:       def mixed_aic(
CHECK-NEXT:  pl.func_attr({'split': pl.SplitMode.MODE, {{.*}}'pipe_setup': 'automatic'{{.*}}
"""
# What each split mode makes of the kernels: the ring, the pushed and popped shares, the lane offsets.
KERNEL_CHECKS = {
    SplitMode.UP_DOWN: """
CHECK:       pl.system.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
CHECK-NEXT:  a_mat: pl.Tile[[128, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x0, +65536]
CHECK-NEXT:  a_left: pl.Tile[[128, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat{{.*}}# Left[0x0, +65536]
CHECK-NEXT:  b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x10000, +65536]
CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
CHECK-NEXT:  acc: pl.Tile[[128, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +65536]
CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
CHECK-EMPTY:
CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
CHECK:       def mixed_aiv(
CHECK-NEXT:  pl.func_attr({'split': pl.SplitMode.UP_DOWN, {{.*}}'pipe_setup': 'automatic'{{.*}}
CHECK-NEXT:  # reserved Vec[0x0, +131072]: cross-core pipe ring
CHECK:       pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
CHECK-NEXT:  lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
CHECK-NEXT:  bias_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [lane * 64, 0]{{.*}}# Vec[0x20000, +32768]
CHECK-NEXT:  acc_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
CHECK-NEXT:  t: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec)  # Vec[0x20000, +32768]
CHECK-NEXT:  pl.system.tfree_to_aic(acc_vec)
CHECK-NEXT:  pl.tile.store(t, [lane * 64, 0], out)
""",
    SplitMode.LEFT_RIGHT: """
CHECK:       pl.system.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
CHECK-NEXT:  a_mat: pl.Tile[[128, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x0, +65536]
CHECK-NEXT:  a_left: pl.Tile[[128, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat{{.*}}# Left[0x0, +65536]
CHECK-NEXT:  b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x10000, +65536]
CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
CHECK-NEXT:  acc: pl.Tile[[128, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +65536]
CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.LEFT_RIGHT)
CHECK-EMPTY:
CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
CHECK:       def mixed_aiv(
CHECK-NEXT:  pl.func_attr({'split': pl.SplitMode.LEFT_RIGHT, {{.*}}'pipe_setup': 'automatic'{{.*}}
CHECK-NEXT:  # reserved Vec[0x0, +131072]: cross-core pipe ring
CHECK:       pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
CHECK-NEXT:  lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
CHECK-NEXT:  bias_vec: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [0, lane * 64]{{.*}}# Vec[0x20000, +32768]
CHECK-NEXT:  acc_vec: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[128, 64], dtype=pl.FP32, split=pl.SplitMode.LEFT_RIGHT)
CHECK-NEXT:  t: pl.Tile[[128, 64], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec)  # Vec[0x20000, +32768]
CHECK-NEXT:  pl.system.tfree_to_aic(acc_vec)
CHECK-NEXT:  pl.tile.store(t, [0, lane * 64], out)
""",
    # Unsplit, one lane works the whole tile: the pipe carries it in two row blocks of 64, each
    # loop with two stages (one per iteration), the cube side loading the second block ahead.
    SplitMode.NONE: """
CHECK:       pl.system.aic_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
CHECK-NEXT:  b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x0, +65536]
CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
CHECK-NEXT:  a_mat_first0: pl.Tile[[64, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x10000, +32768]
CHECK-NEXT:  for r, (a_mat_ahead0,) in pl.pipeline(0, 128, 64, stage=4, init_values=(a_mat_first0,)):
CHECK-NEXT:  a_mat_next: {{.*}} = pl.tile.load(a, [pl.minimum(r + 64, 64), 0]{{.*}}# Mat[0x10000, +32768] x 2 slots by r
CHECK-NEXT:  a_left: pl.Tile[[64, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat_ahead0{{.*}}# Left[0x0, +32768] x 2 slots by r
CHECK-NEXT:  acc: pl.Tile[[64, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +32768] x 2 slots by r
CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.NONE)
CHECK-NEXT:  a_mat_last0 = pl.yield_(a_mat_next)
CHECK-EMPTY:
CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
CHECK:       def mixed_aiv(
CHECK-NEXT:  pl.func_attr({'split': pl.SplitMode.NONE, {{.*}}'pipe_setup': 'automatic'{{.*}}
CHECK-NEXT:  # reserved Vec[0x0, +65536]: cross-core pipe ring
CHECK:       pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
CHECK-NEXT:  for r in pl.pipeline(0, 128, 64, stage=4):
CHECK-NEXT:  bias_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [r, 0]{{.*}}# Vec[0x10000, +32768] x 2 slots by r
CHECK-NEXT:  acc_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.NONE)
CHECK-NEXT:  t: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec)  # Vec[0x10000, +32768] x 2 slots by r
CHECK-NEXT:  pl.system.tfree_to_aic(acc_vec)
CHECK-NEXT:  pl.tile.store(t, [r, 0], out)
""",
}


def loop_ops(fn):
    """The ops in the body of ``fn``'s one loop."""
    (loop,) = [s for s in fn.body if isinstance(s, For)]
    return [s.value.op for s in loop.body if isinstance(s, (Assign, Eval))]


@pytest.mark.parametrize("mode", list(SplitMode))
def test_the_seed_kernel_lowers_to_group_aic_and_aiv(mode):
    lowered = lower(irbuild.mixed_program(split=mode), irbuild.TARGET)
    kinds = {fn.name: fn.kind for fn in lowered.functions.values()}
    assert kinds == {
        "mixed": FunctionKind.Orchestration,
        "mixed_1": FunctionKind.Group,
        "mixed_aic": FunctionKind.AIC,
        "mixed_aiv": FunctionKind.AIV,
    }
    filecheck(print_ir(lowered), GROUP_CHECKS.replace("MODE", mode.name) + KERNEL_CHECKS[mode])


def test_unsplit_kernels_stream_the_tile_through_the_pipe_in_a_loop():
    lowered = lower(irbuild.mixed_program(split=SplitMode.NONE), irbuild.TARGET)
    assert loop_ops(lowered.function("mixed_aic")) == [
        "tile.load",
        "tile.move",
        "tile.matmul",
        "tile.tpush_to_aiv",
    ]
    assert loop_ops(lowered.function("mixed_aiv")) == [
        "tile.load",  # a read-only operand's load goes ahead of the pop (its latency overlaps the wait)
        "tile.tpop_from_aic",
        "tile.add",
        "system.tfree_to_aic",
        "tile.store",
    ]


def test_pipe_setup_pairs_every_push_with_a_pop_and_every_pop_with_a_free():
    lowered = lower(irbuild.mixed_program(), irbuild.TARGET)
    aic, aiv = lowered.function("mixed_aic"), lowered.function("mixed_aiv")
    assert ops(aic)[0] == "system.aic_initialize_pipe" and ops(aiv)[0] == "system.aiv_initialize_pipe"
    setup = next(s.value for s in aic.body if isinstance(s, Eval))
    assert dict(setup.attrs) == {"dir_mask": 1, "slot_size": 65536, "slot_num": 2}
    assert ops(aic).count("tile.tpush_to_aiv") == 1
    assert ops(aiv).count("tile.tpop_from_aic") == ops(aiv).count("system.tfree_to_aic") == 1
    free_at, add_at = ops(aiv).index("system.tfree_to_aic"), ops(aiv).index("tile.add")
    assert free_at == add_at + 1  # right after the popped tile's last use


def test_the_ring_sits_at_the_bottom_of_vec_and_tiles_above_it():
    aiv = lower(irbuild.mixed_program(), irbuild.TARGET).function("mixed_aiv")
    plan = aiv.attrs["memory_plan"]
    assert [(r.space, r.size) for r in plan.reservations] == [(MemorySpace.Vec, 131072)]
    assert min(a.offset for a in plan.allocations.values()) == 131072
    assert plan.peak[MemorySpace.Vec] == 131072 + 32768  # the add reuses the bias buffer


def _aligned(**alignments: int):
    """The test target with the alignment of some spaces changed, e.g. ``Vec=128``."""
    memory = dict(irbuild.TARGET.memory)
    for name, alignment in alignments.items():
        memory[MemorySpace[name]] = dataclasses.replace(memory[MemorySpace[name]], alignment=alignment)
    return dataclasses.replace(irbuild.TARGET, memory=memory)


def _small_mixed(scale_first: bool):
    """relu(a @ b) on a [2, 5] result (40 bytes of FP32); ``scale_first`` also sends 2 * a to the cube."""
    a, b = irbuild.tensor("a", [2, 16], irbuild.FP16), irbuild.tensor("b", [16, 5], irbuild.FP16)
    out = irbuild.tensor("out", [2, 5])
    body = []
    left = a
    if scale_first:
        body.append(irbuild.assign("scaled", "tensor.muls", a, Const(2.0, ScalarType(irbuild.FP32))))
        left = body[-1].target
    body.append(irbuild.assign("acc", "tensor.matmul", left, b, out_dtype=irbuild.FP32))
    body.append(irbuild.assign("act", "tensor.relu", body[-1].target))
    body.append(irbuild.write(out, body[-1].target))
    scope = ScopeStmt(tuple(body), name_hint="small", split=SplitMode.NONE)
    params = [irbuild.Param(a), irbuild.Param(b), irbuild.Param(out, irbuild.Direction.Out)]
    return irbuild.program("main", params, [scope])


def _pipe_setup(fn):
    return next(dict(s.value.attrs) for s in fn.body if isinstance(s, Eval))


@pytest.mark.parametrize(
    ("scale_first", "alignments", "slot_size"),
    [
        (False, {}, 64),  # 40 bytes, the a2a3 alignment of 32
        (False, {"Vec": 128}, 128),  # the consumer's alignment comes from the target
        (False, {"Mat": 128}, 64),  # Mat holds no ring of a cube->vector pipe
        (True, {"Vec": 64, "Mat": 96}, 192),  # both directions share one slot_size: both rings align
    ],
)
def test_the_automatic_slot_size_is_the_largest_crossing_tile_rounded_to_the_ring_alignment(
    scale_first, alignments, slot_size
):
    lowered = lower(_small_mixed(scale_first), _aligned(**alignments))
    aic, aiv = lowered.function("small_aic"), lowered.function("small_aiv")
    assert _pipe_setup(aic)["slot_size"] == _pipe_setup(aiv)["slot_size"] == slot_size
    reserved = [(r.space, r.size) for fn in (aic, aiv) for r in fn.attrs["memory_plan"].reservations]
    rings = [(MemorySpace.Vec, 2 * slot_size)]
    if scale_first:
        rings.insert(0, (MemorySpace.Mat, 2 * slot_size))
    assert reserved == rings


def test_slot_num_4_overruns_vec_with_the_exact_seed_message():
    with pytest.raises(MemoryBudgetError) as info:
        lower(irbuild.mixed_program(slot_num=4), irbuild.TARGET)
    assert info.value.message == (
        "Function 'mixed_aiv': Vec buffer usage (294912 bytes) exceeds platform limit (188416 bytes)."
        " The first 262144 bytes of that space are reserved by system.reserve_buffer, so tiles are"
        " allocated above them — this is the cross-core pipe ring. Lower its depth with"
        " optimizations=[pl.cross_core_slot(slot_num=N)] on the enclosing pl.at(...), or shrink the"
        " tile that crosses the cube/vector boundary"
    )


@pytest.mark.parametrize(("slot_num", "fits"), [(1, True), (2, True), (3, False), (4, False)])
def test_two_slots_is_the_deepest_ring_that_fits_the_seed_kernel(slot_num, fits):
    if fits:
        lower(irbuild.mixed_program(slot_num=slot_num), irbuild.TARGET)
    else:
        with pytest.raises(MemoryBudgetError):
            lower(irbuild.mixed_program(slot_num=slot_num), irbuild.TARGET)


def test_slot_num_beyond_the_hardware_is_an_error_not_a_silent_cap():
    with pytest.raises(
        PlatformError,
        match=r"slot_num=9\) asks for more ring slots than test-a2a3 pipes have \(8 per direction\)",
    ):
        lower(irbuild.mixed_program(slot_num=9), irbuild.TARGET)


def test_a_split_that_cannot_be_honoured_is_rejected_with_the_explicit_form_as_the_fix():
    a, b = irbuild.tensor("a", [64, 64], irbuild.FP16), irbuild.tensor("b", [64, 32], irbuild.FP16)
    c, out = irbuild.tensor("c", [64, 32]), irbuild.tensor("out", [64, 64])
    mm = irbuild.assign("acc", "tensor.matmul", a, b, out_dtype=irbuild.FP32)
    cat = irbuild.assign("joined", "tensor.concat", mm.target, c)
    scope = ScopeStmt((mm, cat, irbuild.write(out, cat.target)), name_hint="k", split=SplitMode.LEFT_RIGHT)
    params = [irbuild.Param(x) for x in (a, b, c)] + [irbuild.Param(out, irbuild.Direction.Out)]
    with pytest.raises(ParseError) as info:
        lower(irbuild.program("main", params, [scope]), irbuild.TARGET)
    assert info.value.message.startswith(
        "split rejected: the body mixes split and plain full-width vector ops"
    )
    assert "pl.split_aiv" in info.value.hint


def test_long_operands_stream_tiles_through_the_pipe():
    lowered = lower(irbuild.mixed_program(m=512), irbuild.TARGET)
    assert loop_ops(lowered.function("mixed_aic")) == [
        "tile.load",
        "tile.move",
        "tile.matmul",
        "tile.tpush_to_aiv",
    ]
    assert loop_ops(lowered.function("mixed_aiv")) == [
        "tile.load",  # a read-only operand's load goes ahead of the pop (its latency overlaps the wait)
        "tile.tpop_from_aic",
        "tile.add",
        "system.tfree_to_aic",
        "tile.store",
    ]
    filecheck(
        print_ir(lowered),
        """
        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIC)
        CHECK:       def mixed_aic(
        CHECK:       pl.system.aic_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
        CHECK-NEXT:  b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x0, +65536]
        CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
        CHECK-NEXT:  a_mat_first0: pl.Tile[[64, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x10000, +32768]
        CHECK-NEXT:  a_mat_first1: {{.*}} = pl.tile.load(a, [64, 0]{{.*}}# Mat[0x18000, +32768]
        CHECK-NEXT:  a_mat_first2: {{.*}} = pl.tile.load(a, [128, 0]{{.*}}# Mat[0x20000, +32768]
        CHECK-NEXT:  for r, (a_mat_ahead0, a_mat_ahead1, a_mat_ahead2) in pl.pipeline(0, 512, 64, stage=4, init_values=(a_mat_first0, a_mat_first1, a_mat_first2)):
        CHECK-NEXT:  a_mat_next: {{.*}} = pl.tile.load(a, [pl.minimum(r + 192, 448), 0]{{.*}}# Mat[0x10000, +32768] x 4 slots by r
        CHECK-NEXT:  a_left: pl.Tile[[64, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat_ahead0{{.*}}# Left[0x0, +32768] x 2 slots by r
        CHECK-NEXT:  acc: pl.Tile[[64, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +32768] x 4 slots by r
        CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  a_mat_last0, a_mat_last1, a_mat_last2 = pl.yield_(a_mat_ahead1, a_mat_ahead2, a_mat_next)
        CHECK-EMPTY:
        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
        CHECK:       def mixed_aiv(
        CHECK:       # reserved Vec[0x0, +65536]: cross-core pipe ring
        CHECK-NEXT:  pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=32768, slot_num=2)
        CHECK-NEXT:  lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        CHECK-NEXT:  bias_vec_first0: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [lane * 32, 0]{{.*}}# Vec[0x10000, +16384]
        CHECK-NEXT:  bias_vec_first1: {{.*}} = pl.tile.load(bias, [64 + (lane * 32), 0]{{.*}}# Vec[0x14000, +16384]
        CHECK-NEXT:  for r, (bias_vec_ahead0, bias_vec_ahead1) in pl.pipeline(0, 512, 64, stage=4, init_values=(bias_vec_first0, bias_vec_first1)):
        CHECK-NEXT:  bias_vec_next: {{.*}} = pl.tile.load(bias, [pl.minimum(r + 128, 448) + (lane * 32), 0]{{.*}}# Vec[0x10000, +16384] x 3 slots by r
        CHECK-NEXT:  acc_vec: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[32, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  t: pl.Tile[[32, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec_ahead0)  # Vec[0x1c000, +16384] x 4 slots by r
        CHECK-NEXT:  pl.system.tfree_to_aic(acc_vec)
        CHECK-NEXT:  pl.tile.store(t, [r + (lane * 32), 0], out)
        CHECK-NEXT:  bias_vec_last0, bias_vec_last1 = pl.yield_(bias_vec_ahead1, bias_vec_next)
        """,
    )


def test_compiler_placed_pops_raise_no_missing_tfree_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        lower(irbuild.mixed_program(), irbuild.TARGET)
