"""AllocateMemory: liveness, reuse, alignment, reservations and the budget message."""

from dataclasses import replace

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    INDEX,
    Assign,
    Const,
    DataType,
    Eval,
    For,
    Function,
    FunctionKind,
    MemoryBudgetError,
    MemorySpace,
    Reservation,
    SourceSpan,
    Var,
    make_call,
)
from pypto.passes.allocate import AllocateMemory, plan_memory

VEC = MemorySpace.Vec


def load(name, src, rows, cols, row=0):
    value = make_call("tile.load", (src, irbuild.idx(row, 0)), {"shape": (rows, cols), "target_memory": VEC})
    return Assign(Var(name, value.type), value)


def binary(name, op, lhs, rhs):
    value = make_call(op, (lhs.target, rhs.target))
    return Assign(Var(name, value.type), value)


def store(tile, dst):
    return Eval(make_call("tile.store", (tile.target, irbuild.idx(0, 0), dst)))


def test_a_result_reuses_the_buffer_of_an_operand_that_dies_at_that_op():
    a, b, c = (irbuild.tensor(n, [128, 128]) for n in "abc")
    la, lb = load("ta", a, 128, 128), load("tb", b, 128, 128)
    add = binary("tc", "tile.add", la, lb)
    plan = plan_memory((la, lb, add, store(add, c)), irbuild.TARGET)
    assert plan.of("ta").offset == 0 and plan.of("tb").offset == 65536
    assert plan.of("tc").offset == 0
    assert plan.peak[VEC] == 131072


def test_buffers_are_aligned_to_32_bytes():
    a = irbuild.tensor("a", [3, 5])
    first, second = load("x", a, 3, 5), load("y", a, 3, 5)  # 60 bytes each
    plan = plan_memory((first, second, binary("z", "tile.add", first, second)), irbuild.TARGET)
    assert plan.of("x").size == 64 and plan.of("y").offset == 64


def test_a_tile_defined_before_a_loop_stays_live_through_the_loop():
    a = irbuild.tensor("a", [128, 64])
    outer = load("w", a, 32, 64)
    i = Var("i", INDEX)
    inner_load = load("x", a, 32, 64)
    inner = binary("y", "tile.add", inner_load, outer)
    loop = For(i, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), (inner_load, inner))
    plan = plan_memory((outer, loop), irbuild.TARGET)
    assert plan.of("x").offset != plan.of("w").offset
    assert plan.of("y").offset == plan.of("x").offset  # x dies at the add, w does not


def kernel_over_budget(reservations=()):
    a = irbuild.tensor("a", [128, 128])
    tiles = [load(f"t{i}", a, 128, 128) for i in range(3)]
    total = binary("s", "tile.add", tiles[0], tiles[1])
    total2 = binary("s2", "tile.add", total, tiles[2])
    span = SourceSpan("kernel.py", 7, 4)
    attrs = {"reservations": reservations}
    return Function("add3", (), (*tiles, total, total2), FunctionKind.AIV, span, attrs)


def test_over_budget_kernel_raises_with_the_space_usage_and_limit():
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(kernel_over_budget(), irbuild.TARGET)
    assert info.value.message == (
        "Function 'add3': Vec buffer usage (196608 bytes) exceeds platform limit (188416 bytes)"
    )
    assert info.value.span.line == 7 and "fewer" in info.value.hint
    assert isinstance(info.value, ValueError)


def test_a_reserved_ring_sits_at_the_bottom_and_is_named_in_the_message():
    ring = Reservation(VEC, 262144, "cross-core pipe ring", automatic=True)
    a = irbuild.tensor("a", [64, 128])
    half = load("half", a, 64, 128)
    fn = Function("mixed_aiv", (), (half,), FunctionKind.AIV, None, {"reservations": (ring,)})
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(fn, irbuild.TARGET)
    assert info.value.message == (
        "Function 'mixed_aiv': Vec buffer usage (294912 bytes) exceeds platform limit (188416 bytes)."
        " The first 262144 bytes of that space are reserved by system.reserve_buffer, so tiles are"
        " allocated above them — this is the cross-core pipe ring. Lower its depth with"
        " optimizations=[pl.cross_core_slot(slot_num=N)] on the enclosing pl.at(...), or shrink the"
        " tile that crosses the cube/vector boundary"
    )


def test_a_user_reserved_ring_does_not_suggest_the_automatic_pipe_fix():
    ring = Reservation(VEC, 180000, "cross-core pipe ring")
    fn = kernel_over_budget((ring,))
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(fn, irbuild.TARGET)
    assert info.value.message.endswith("this is the cross-core pipe ring.")


def test_a_ring_too_deep_is_reported_at_the_pipe_setup_that_chose_its_depth():
    setup = SourceSpan("kernel.py", 12, 8, 70)
    ring = Reservation(VEC, 4 * 65536, "cross-core pipe ring", slot_size=65536, span=setup)
    a = irbuild.tensor("a", [64, 128])
    fn = Function(
        "mm_aiv", (), (load("half", a, 64, 128),), FunctionKind.AIV, None, {"reservations": (ring,)}
    )
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(fn, irbuild.TARGET)
    assert info.value.span == setup


def test_the_budget_hint_names_the_deepest_ring_that_fits_beside_the_tiles():
    ring = Reservation(VEC, 4 * 65536, "cross-core pipe ring", automatic=True, slot_size=65536)
    a = irbuild.tensor("a", [64, 128])
    fn = Function(
        "mixed_aiv", (), (load("half", a, 64, 128),), FunctionKind.AIV, None, {"reservations": (ring,)}
    )
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(fn, irbuild.TARGET)
    assert info.value.hint == (
        "the ring holds slot_num whole crossing tiles of 65536 bytes, and 155648 bytes are left for it "
        "beside the tiles: slot_num=2 fits"
    )
    two = Reservation(VEC, 2 * 65536, "cross-core pipe ring", automatic=True, slot_size=65536)
    AllocateMemory().allocate(replace(fn, attrs={"reservations": (two,)}), irbuild.TARGET)


def test_the_budget_hint_says_when_not_one_slot_fits():
    ring = Reservation(VEC, 2 * 180000, "cross-core pipe ring", slot_size=180000)
    with pytest.raises(MemoryBudgetError) as info:
        AllocateMemory().allocate(kernel_over_budget((ring,)), irbuild.TARGET)
    assert info.value.hint.endswith("and not one fits beside the tiles: shrink the tile that crosses")


def test_fitting_kernels_get_a_memory_plan_attached():
    a = irbuild.tensor("a", [64, 64])
    fn = Function("k", (), (load("t", a, 64, 64),), FunctionKind.AIV)
    planned = AllocateMemory().allocate(fn, irbuild.TARGET)
    assert planned.attrs["memory_plan"].of("t").space is VEC
    assert replace(fn).attrs == {}


def test_cube_tiles_are_placed_in_their_own_spaces():
    a = irbuild.tensor("a", [64, 64], DataType.FP16)
    value = make_call(
        "tile.load", (a, irbuild.idx(0, 0)), {"shape": (64, 64), "target_memory": MemorySpace.Mat}
    )
    mat = Assign(Var("m", value.type), value)
    mv = make_call("tile.move", (mat.target,), {"target_memory": MemorySpace.Left})
    left = Assign(Var("l", mv.type), mv)
    plan = plan_memory((mat, left), irbuild.TARGET)
    assert (plan.of("m").space, plan.of("l").space) == (MemorySpace.Mat, MemorySpace.Left)


def carried_loop(init, src):
    """``for i, (acc,) in pl.range(0, 4, 1, init_values=(init,)): acc_next = acc + load(src)``."""
    i = Var("i", INDEX)
    acc = Var("acc", init.target.type)
    step = load("t", src, 64, 64)
    nxt = binary("acc_next", "tile.add", Assign(acc, init.value), step)
    result = Var("acc_out", init.target.type)
    loop = For(
        i, Const(0, INDEX), Const(4, INDEX), Const(1, INDEX), (step, nxt),
        iter_args=(acc,), init_values=(init.target,), yields=(nxt.target,), results=(result,),
    )  # fmt: skip
    return loop, result


def test_a_carried_tile_keeps_one_buffer_across_the_loop_and_its_result_names_it():
    a = irbuild.tensor("a", [64, 64])
    init = load("acc0", a, 64, 64)
    loop, result = carried_loop(init, a)
    after = Eval(make_call("tile.store", (result, irbuild.idx(0, 0), a)))
    plan = plan_memory((init, loop, after), irbuild.TARGET)
    assert plan.of("acc_out").offset == plan.of("acc").offset
    # The iter_arg and the yield are both live at the copy ending an iteration: two buffers.
    assert plan.of("acc_next").offset != plan.of("acc").offset
    assert plan.of("t").offset != plan.of("acc").offset
    # The init value dies at the loop, so the iter_arg takes its buffer: no copy on entry.
    assert plan.of("acc").offset == plan.of("acc0").offset


def test_a_carried_tile_result_used_later_keeps_the_buffer_from_being_reused():
    a = irbuild.tensor("a", [64, 64])
    init = load("acc0", a, 64, 64)
    loop, result = carried_loop(init, a)
    later = load("later", a, 64, 64)
    after = Eval(make_call("tile.store", (result, irbuild.idx(0, 0), a)))
    plan = plan_memory((init, loop, later, after), irbuild.TARGET)
    assert plan.of("later").offset != plan.of("acc_out").offset
