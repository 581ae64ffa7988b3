"""AutoTileMatmul: K and N blocking of whole-tensor matmuls that do not fit L0."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import Direction, MemoryBudgetError, MemorySpace, Param, ParseError, ScopeStmt
from pypto.ir.nodes import Assign, Call, walk_stmts
from pypto.passes import lower
from pypto.passes.autotile import MatmulBlocks, chain_order, choose_blocks, column_group


def test_a_matmul_that_fits_l0_is_left_whole():
    assert choose_blocks(128, 256, 128, 2, irbuild.TARGET) is None  # the seed kernel


def test_a_deep_fp16_matmul_is_k_blocked_so_two_128_row_slices_fit_l0a():
    # Two of each block fit L0: the next block's moves overlap this one's matmul.
    assert choose_blocks(256, 1024, 128, 2, irbuild.TARGET) == MatmulBlocks(kb=128, nb=128)


def test_a_wide_fp32_matmul_is_blocked_in_n_to_fit_l0c_twice_for_128_rows():
    assert choose_blocks(256, 512, 1024, 4, irbuild.TARGET) == MatmulBlocks(kb=64, nb=128)


def test_blocks_too_narrow_to_fit_twice_fit_once_instead():
    # Twice would take K blocks of 50 and N blocks of 100; once fits N blocks of 200.
    assert choose_blocks(128, 1000, 200, 4, irbuild.TARGET) == MatmulBlocks(kb=50, nb=200)


def matmul_program(m, k, n, dtype=irbuild.FP16, then_relu=False):
    a, b = irbuild.tensor("a", [m, k], dtype), irbuild.tensor("b", [k, n], dtype)
    out = irbuild.tensor("out", [m, n])
    mm = irbuild.assign("c", "tensor.matmul", a, b, out_dtype=irbuild.FP32)
    body = [mm]
    value = mm.target
    if then_relu:
        body.append(irbuild.assign("r", "tensor.relu", value))
        value = body[-1].target
    body.append(irbuild.write(out, value))
    scope = ScopeStmt(tuple(body), name_hint="mm")
    return irbuild.program("main", [Param(a), Param(b), Param(out, Direction.Out)], [scope])


def tile_ops(kernel):
    return [
        s.value.op for s in walk_stmts(kernel.body) if isinstance(s, Assign) and isinstance(s.value, Call)
    ]


def test_k_blocks_accumulate_with_matmul_acc_and_every_tile_fits():
    kernel = lower(matmul_program(256, 1024, 128), irbuild.TARGET).function("mm")
    ops = tile_ops(kernel)
    assert ops.count("tile.matmul") == 1 and ops.count("tile.matmul_acc") == 7
    plan = kernel.attrs["memory_plan"]
    assert plan.peak[MemorySpace.Right] <= 65536 and plan.peak[MemorySpace.Left] <= 65536


def test_n_blocks_of_a_product_written_straight_out_are_stored_at_column_offsets():
    kernel = lower(matmul_program(128, 512, 1024, irbuild.FP32), irbuild.TARGET).function("mm")
    stores = [
        s.value
        for s in walk_stmts(kernel.body)
        if hasattr(s, "value") and getattr(s.value, "op", "") == "tile.store"
    ]
    assert sorted(st.args[1].elements[1].value for st in stores) == list(range(0, 1024, 128))


def test_n_blocking_a_product_that_feeds_vector_ops_is_an_error_with_a_fix():
    with pytest.raises(ParseError, match=r"the \[128, 1024\] result is too wide") as info:
        lower(matmul_program(128, 512, 1024, irbuild.FP32, then_relu=True), irbuild.TARGET)
    assert "out[...] = pl.matmul" in info.value.hint


def k_depths(m, k, n, k_block, dtype=irbuild.FP16):
    """The K extent of each matmul of the chain ``tile-matmul{k_block=...}`` makes of ``a @ b``."""
    pipeline = f"outline-scopes,tile-matmul{{k_block={k_block}}}"
    kernel = lower(matmul_program(m, k, n, dtype), irbuild.TARGET, pipeline=pipeline).function("mm")
    calls = [s.value for s in walk_stmts(kernel.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    return [c.args[-1].type.shape[0] for c in calls if c.op in ("tensor.matmul", "tensor.matmul_acc")]


def test_k_block_cuts_a_matmul_that_fits_whole_into_blocks_of_that_depth():
    assert choose_blocks(128, 256, 128, 2, irbuild.TARGET) is None  # whole without the option
    assert k_depths(128, 256, 128, k_block=64) == [64, 64, 64, 64]


def test_the_last_k_block_takes_what_is_left_of_k():
    assert k_depths(128, 256, 128, k_block=96) == [96, 96, 64]


def test_a_k_block_at_least_k_leaves_a_matmul_that_fits_whole():
    assert k_depths(128, 256, 128, k_block=512) == [256]


def test_a_k_block_also_sets_the_depth_of_a_matmul_too_big_for_l0():
    assert choose_blocks(256, 1024, 128, 2, irbuild.TARGET) == MatmulBlocks(kb=128, nb=128)
    assert k_depths(256, 1024, 128, k_block=256) == [256] * 4


def test_k_blocks_with_a_remainder_lower_to_a_matmul_and_its_accumulations():
    kernel = lower(matmul_program(128, 256, 128), irbuild.TARGET, pipeline=None).function("mm")
    blocked = lower(
        matmul_program(128, 256, 128),
        irbuild.TARGET,
        pipeline="outline-scopes,tile-matmul{k_block=96},tensor-to-tile,infer-memory-space,"
        "vector-split,expand-mixed,stamp-tfree,allocate,task-deps",
    ).function("mm")
    assert tile_ops(kernel).count("tile.matmul_acc") == 0
    assert tile_ops(blocked).count("tile.matmul") == 1 and tile_ops(blocked).count("tile.matmul_acc") == 2


def test_a_k_block_too_deep_for_l0_is_an_error_at_the_matmul_with_one_that_fits():
    with pytest.raises(MemoryBudgetError) as info:
        k_depths(16, 32768, 16, k_block=20000, dtype=irbuild.FP32)
    assert info.value.message == (
        "pl.matmul: a K block of 20000 (tile-matmul{k_block=20000}) does not fit the cube's L0 buffers "
        "for the [16, 32768] @ [32768, 16] product"
    )
    assert info.value.hint.startswith("use a smaller k_block, e.g. k_block=1024")


def test_column_blocks_run_in_groups_that_fill_l0c():
    # Two 128x128 fp32 accumulators fill L0C; 16-row ones leave room for all eight blocks.
    assert column_group(128, 128, 1024, irbuild.TARGET) == 2
    assert column_group(16, 128, 1024, irbuild.TARGET) == 8
    assert column_group(128, 128, 1024, irbuild.TARGET, asked=1) == 1
    assert column_group(128, 512, 1024, irbuild.TARGET) == 1  # never fewer than one


def _loads_moves_and_matmuls(pipeline=None):
    kernel = lower(matmul_program(128, 1024, 1024), irbuild.TARGET, pipeline=pipeline).function("mm")
    calls = [s.value for s in walk_stmts(kernel.body) if isinstance(s, Assign) and isinstance(s.value, Call)]
    loads_of_a = [c for c in calls if c.op == "tile.load" and c.args[0].name == "a"]
    to_left = [c for c in calls if c.op == "tile.move" and c.attrs["target_memory"] is MemorySpace.Left]
    matmuls = [c for c in calls if c.op in ("tile.matmul", "tile.matmul_acc")]
    return loads_of_a, to_left, matmuls


def test_a_group_of_column_blocks_loads_and_moves_each_left_slice_once():
    loads_of_a, to_left, matmuls = _loads_moves_and_matmuls()
    # 8 K blocks x 8 column blocks of 128; the columns go two at a time.
    assert len(matmuls) == 64
    assert len(loads_of_a) == len(to_left) == 32
    left_uses = {}  # each Left tile feeds the two matmuls of its group
    for m in matmuls:
        left = m.args[-2]
        left_uses[left.name] = left_uses.get(left.name, 0) + 1
    assert len(left_uses) == 32 and set(left_uses.values()) == {2}


def test_one_column_block_at_a_time_on_request():
    pipeline = "outline-scopes,tile-matmul{columns=1},tensor-to-tile,infer-memory-space,allocate"
    loads_of_a, to_left, matmuls = _loads_moves_and_matmuls(pipeline)
    assert len(matmuls) == 64 and len(loads_of_a) == len(to_left) == 64


def test_a_group_goes_column_by_column_over_its_first_and_last_two_k_blocks():
    assert chain_order(2, 5) == [
        (0, 0), (0, 1), (1, 0), (1, 1),  # the second column's first matmul waits for one drain
        (0, 2), (1, 2),  # the middle K blocks: one left slice for both columns
        (0, 3), (0, 4), (1, 3), (1, 4),  # the first column drains while the second finishes
    ]  # fmt: skip
    assert chain_order(3, 1) == [(0, 0), (1, 0), (2, 0)]
    for columns, steps in ((1, 8), (2, 2), (2, 3), (4, 8)):  # every matmul once, K in order
        order = chain_order(columns, steps)
        assert sorted(order) == [(c, s) for c in range(columns) for s in range(steps)]
        assert all([s for c, s in order if c == column] == list(range(steps)) for column in range(columns))
