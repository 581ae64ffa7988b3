"""Cross-core GM ordering for the partial and atomic ops: each records exactly its valid region."""

from __future__ import annotations

import pytest
import torch
from sim_lowered import FunctionBuilder, Mem, rand, run, tensor_t
from sim_mixed import at, group_program, span_of

from pypto.ir import AtomicType, Direction, FunctionKind, Program, RaceError, Var

SHAPE, HALF = (64, 64), (32, 64)
UNORDERED = (("syncall",), ("syncall",))
ORDERED = (("cacheinvalid", "fence", "syncall"), ("syncall", "cacheinvalid"))


def _params(b: FunctionBuilder) -> list[Var]:
    return [
        b.param("a", tensor_t(SHAPE)),
        b.param("b", tensor_t(SHAPE)),
        b.param("tmp", tensor_t(SHAPE), Direction.InOut),
        b.param("out", tensor_t(SHAPE), Direction.InOut),
    ]


def _cube_product(k: FunctionBuilder, a_gm: Var, b_gm: Var) -> Var:
    """``a @ b`` in the cube's Acc."""
    a_l1 = k.op("a_l1", "tile.load", a_gm, [0, 0], shape=SHAPE, target_memory=Mem.Mat)
    b_l1 = k.op("b_l1", "tile.load", b_gm, [0, 0], shape=SHAPE, target_memory=Mem.Mat)
    a_l0 = k.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
    b_l0 = k.op("b_l0", "tile.move", b_l1, target_memory=Mem.Right)
    return k.op("acc", "tile.matmul", a_l0, b_l0)


def partial_program(stored_rows: int, syncs: tuple[tuple[str, ...], tuple[str, ...]]) -> Program:
    """The AIC stores the first ``stored_rows`` rows of ``a @ b`` into ``tmp`` (``tile.store_partial``);
    each lane reads the valid first 32 rows of its ``[64, 64]`` tile at row ``lane * 32`` of ``tmp``
    (``tile.load_partial``) into ``out``. ``syncs`` are each side's ``system.*`` ops in between."""
    k = FunctionBuilder("part_aic", FunctionKind.AIC)
    a_gm, b_gm, tmp, _ = _params(k)
    k.do("tile.store_partial", _cube_product(k, a_gm, b_gm), [0, 0], tmp, [stored_rows, SHAPE[1]])
    for op in syncs[0]:
        k.do(f"system.{op}")
    v = FunctionBuilder("part_aiv", FunctionKind.AIV)
    _, _, tmp, out = _params(v)
    row = v.scalar("scalar.mul", v.op("lane", "tile.get_subblock_idx"), HALF[0])
    for op in syncs[1]:
        v.do(f"system.{op}")
    t = v.op("t", "tile.load_partial", tmp, [row, 0], list(HALF), shape=SHAPE, target_memory=Mem.Vec)
    v.do("tile.store_partial", t, [row, 0], out, list(HALF))
    return group_program("part", k.build(), v.build())


def atomic_program() -> Program:
    """Both lanes add their tile of ``a`` into the first 32 rows of ``out`` (``tile.store_atomic``)."""
    k = FunctionBuilder("add_aic", FunctionKind.AIC)
    _params(k)
    v = FunctionBuilder("add_aiv", FunctionKind.AIV)
    a_gm, _, _, out = _params(v)
    row = v.scalar("scalar.mul", v.op("lane", "tile.get_subblock_idx"), HALF[0])
    t = v.op("t", "tile.load", a_gm, [row, 0], shape=HALF, target_memory=Mem.Vec)
    v.do("tile.store_atomic", t, [0, 0], out, atomic=AtomicType.Add)
    return group_program("add", k.build(), v.build())


def _args() -> tuple[torch.Tensor, ...]:
    return rand(*SHAPE, seed=1), rand(*SHAPE, seed=2), torch.zeros(SHAPE), torch.zeros(SHAPE)


def test_a_lane_reading_the_valid_rows_of_an_unpublished_partial_store_is_a_race_naming_both_lines():
    prog = partial_program(16, UNORDERED)
    with pytest.raises(RaceError) as info:
        run(prog, *_args())
    store = span_of(prog.function("part_aic"), "tile.store_partial")
    load = span_of(prog.function("part_aiv"), "tile.load_partial")
    assert info.value.message == (
        f"cg0.AIV0 reads tmp[0:16, 0:64] at {at(load)} after cg0.AIC wrote it at {at(store)}, but nothing "
        "orders the two: cg0.AIC never published its write (pl.system.cacheinvalid after it)"
    )
    assert info.value.span == load


def test_the_ordered_partial_store_and_loads_run_clean():
    args = _args()
    run(partial_program(48, ORDERED), *args)
    a, b, _, out = args
    expected = torch.zeros(SHAPE)
    expected[:48] = (a @ b)[:48]
    torch.testing.assert_close(out, expected)


def test_a_partial_store_over_rows_another_core_read_unordered_is_a_race():
    with pytest.raises(
        RaceError, match=r"cg0\.AIC writes tmp\[0:16, 0:64\] at part_aic\.py:\d+ after cg0\.AIV0"
    ):
        run(partial_program(16, ((), ())), *_args())


def test_two_lanes_adding_atomically_into_one_region_is_not_a_race():
    args = _args()
    run(atomic_program(), *args)
    a, _, _, out = args
    torch.testing.assert_close(out[:32], a[:32] + a[32:])
    assert torch.count_nonzero(out[32:]) == 0


def overlapping_stores_program(stride: int) -> Program:
    """Each lane stores the valid first 32 rows of its ``[64, 64]`` tile at row ``lane * stride`` of
    ``out`` (``tile.store_partial``): the lanes' rows overlap when ``stride < 32``."""
    k = FunctionBuilder("over_aic", FunctionKind.AIC)
    _params(k)
    v = FunctionBuilder("over_aiv", FunctionKind.AIV)
    a_gm, _, _, out = _params(v)
    row = v.scalar("scalar.mul", v.op("lane", "tile.get_subblock_idx"), stride)
    t = v.op("t", "tile.load", a_gm, [0, 0], shape=SHAPE, target_memory=Mem.Vec)
    v.do("tile.store_partial", t, [row, 0], out, list(HALF))
    return group_program("over", k.build(), v.build())


def test_two_lanes_partial_stores_over_overlapping_valid_rows_are_a_race_on_just_those_rows():
    prog = overlapping_stores_program(16)
    with pytest.raises(RaceError) as info:
        run(prog, *_args())
    store = at(span_of(prog.function("over_aiv"), "tile.store_partial"))
    assert info.value.message == (
        f"cg0.AIV1 writes out[16:32, 0:64] at {store} after cg0.AIV0 wrote it at {store}, but nothing "
        "orders the two: cg0.AIV0 never published its write (pl.system.cacheinvalid after it)"
    )


def test_two_lanes_partial_stores_of_adjacent_valid_rows_are_no_race():
    args = _args()
    run(overlapping_stores_program(32), *args)
    a, _, _, out = args
    torch.testing.assert_close(out, torch.cat([a[:32], a[:32]]))
