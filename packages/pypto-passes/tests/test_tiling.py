"""ConvertTensorToTileOps: row-block choice, loads per use, stores per write."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import (
    Direction,
    For,
    MemorySpace,
    Param,
    ScopeStmt,
    SourceSpan,
    TypeCheckError,
    make_call,
)
from pypto.ir.nodes import Assign, Var, walk_stmts
from pypto.passes import lower


def elementwise_program(shape, op="tensor.add"):
    a, b, c = (irbuild.tensor(n, shape) for n in "abc")
    add = irbuild.assign("t", op, a, b)
    scope = ScopeStmt((add, irbuild.write(c, add.target)), name_hint="k")
    params = [Param(a), Param(b), Param(c, Direction.Out)]
    return irbuild.program("main", params, [scope])


def block_rows(program):
    kernel = lower(program, irbuild.TARGET).function("k")
    loops = [s for s in walk_stmts(kernel.body) if isinstance(s, For)]
    if not loops:
        return None
    return loops[0].step.value


def test_a_128_square_fp32_add_fits_whole_thanks_to_buffer_reuse():
    assert block_rows(elementwise_program([128, 128])) is None


def test_a_tall_add_streams_in_row_blocks_halved_so_that_the_loop_double_buffers():
    # Blocks of 128 rows fit once; blocks of 64 fit twice: the next block loads during this one.
    assert block_rows(elementwise_program([512, 128])) == 64


def test_wide_rows_shrink_the_block_until_the_tiles_fit():
    # 2 KiB per row and two live tiles: 46 rows fit in 184 KiB; the largest divisor of 256 is 32,
    # and 16 leave room for a second stage.
    assert block_rows(elementwise_program([256, 512])) == 16


def test_matmul_operands_go_through_mat_to_left_and_right():
    kernel = lower(irbuild.staged_program(), irbuild.TARGET).function("cube_only")
    spaces = {
        s.target.name: s.target.type.memory_space for s in walk_stmts(kernel.body) if isinstance(s, Assign)
    }
    assert spaces == {
        "a_mat": MemorySpace.Mat,
        "a_left": MemorySpace.Left,
        "b_mat": MemorySpace.Mat,
        "b_right": MemorySpace.Right,
        "acc_1": MemorySpace.Acc,
    }


def test_an_illegal_data_path_names_both_spaces_and_the_legal_routes():
    a = irbuild.tensor("a", [16, 16])
    span = SourceSpan("k.py", 3, 8)
    value = make_call(
        "tile.load", (a, irbuild.idx(0, 0)), {"shape": (16, 16), "target_memory": MemorySpace.Left}, span
    )
    scope = ScopeStmt((Assign(Var("t", value.type), value),), name_hint="k")
    with pytest.raises(TypeCheckError) as info:
        lower(irbuild.program("main", [Param(a)], [scope]), irbuild.TARGET)
    assert info.value.message == "pl.load: there is no DDR->Left data path on test-a2a3"
    assert info.value.hint.startswith("legal paths: DDR->Vec, DDR->Mat, Vec->DDR, Mat->Left")
