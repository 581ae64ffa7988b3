"""The default pipeline, end to end on hand-built programs: the printed IR's lines that matter."""

import passes_irbuild as irbuild
import pytest

from pypto.ir import Assign, Eval, For, FunctionKind, print_ir
from pypto.ir.filecheck import filecheck
from pypto.passes import DEFAULT_PIPELINE, build_pass, lower


def loop_ops(fn):
    """The ops in the body of ``fn``'s one loop."""
    (loop,) = [s for s in fn.body if isinstance(s, For)]
    return [s.value.op for s in loop.body if isinstance(s, (Assign, Eval))]


def test_staged_seed_program_lowers_to_an_aic_and_an_aiv_kernel():
    lowered = lower(irbuild.staged_program(), irbuild.TARGET)
    kinds = {fn.name: fn.kind for fn in lowered.functions.values()}
    assert kinds == {
        "staged": FunctionKind.Orchestration,
        "cube_only": FunctionKind.AIC,
        "vector_only": FunctionKind.AIV,
    }
    filecheck(
        print_ir(lowered),
        """
        CHECK-LABEL: def staged(
        CHECK:       acc: pl.Tensor[[128, 128], pl.FP32] = pl.tensor.create(shape=[128, 128], dtype=pl.FP32)
        CHECK-NEXT:  self.cube_only(a, b, acc, access=['In', 'In', 'Out'])
        CHECK-NEXT:  self.vector_only(acc, bias, out, access=['In', 'In', 'Out'])
        CHECK-NEXT:  return out

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIC)
        CHECK:       def cube_only(
        CHECK:       a_mat: pl.Tile[[128, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x0, +65536]
        CHECK-NEXT:  a_left: pl.Tile[[128, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat{{.*}}# Left[0x0, +65536]
        CHECK-NEXT:  b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x10000, +65536]
        CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
        CHECK-NEXT:  acc_1: pl.Tile[[128, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +65536]
        CHECK-NEXT:  pl.tile.store(acc_1, [0, 0], acc)
        CHECK-EMPTY:

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
        CHECK:       def vector_only(
        CHECK:       acc_vec: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(acc, [0, 0]{{.*}}# Vec[0x0, +65536]
        CHECK-NEXT:  bias_vec: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [0, 0]{{.*}}# Vec[0x10000, +65536]
        CHECK-NEXT:  t: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec)  # Vec[0x0, +65536]
        CHECK-NEXT:  pl.tile.store(t, [0, 0], out)
        """,
    )


def test_long_operands_stream_through_the_kernel_in_row_blocks():
    lowered = lower(irbuild.staged_program(4096), irbuild.TARGET)
    # b is loaded once, before the loop; a and the accumulator stream through it in row blocks,
    # a's loads running three blocks ahead (the cube kernel's loop fits four stages of 64 rows);
    # the add overwrites its first operand (in place), so two stages of 64 rows fit in Vec.
    assert loop_ops(lowered.function("cube_only")) == ["tile.load", "tile.move", "tile.matmul", "tile.store"]
    assert loop_ops(lowered.function("vector_only")) == ["tile.load", "tile.load", "tile.add", "tile.store"]
    filecheck(
        print_ir(lowered),
        """
        CHECK-LABEL: def staged(
        CHECK:       acc: pl.Tensor[[4096, 128], pl.FP32] = pl.tensor.create(shape=[4096, 128], dtype=pl.FP32)
        CHECK-NEXT:  self.cube_only(a, b, acc, access=['In', 'In', 'Out'])
        CHECK-NEXT:  self.vector_only(acc, bias, out, access=['In', 'In', 'Out'])

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIC)
        CHECK:       def cube_only(
        CHECK:       b_mat: pl.Tile[[256, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(b, [0, 0]{{.*}}# Mat[0x0, +65536]
        CHECK-NEXT:  b_right: pl.Tile[[256, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(b_mat{{.*}}# Right[0x0, +65536]
        CHECK-NEXT:  a_mat_first0: pl.Tile[[64, 256], pl.FP16, pl.Mem.Mat] = pl.tile.load(a, [0, 0]{{.*}}# Mat[0x10000, +32768]
        CHECK-NEXT:  a_mat_first1: {{.*}} = pl.tile.load(a, [64, 0]{{.*}}# Mat[0x18000, +32768]
        CHECK-NEXT:  a_mat_first2: {{.*}} = pl.tile.load(a, [128, 0]{{.*}}# Mat[0x20000, +32768]
        CHECK-NEXT:  for r, (a_mat_ahead0, a_mat_ahead1, a_mat_ahead2) in pl.pipeline(0, 4096, 64, stage=4, init_values=(a_mat_first0, a_mat_first1, a_mat_first2)):
        CHECK-NEXT:  a_mat_next: {{.*}} = pl.tile.load(a, [pl.minimum(r + 192, 4032), 0]{{.*}}# Mat[0x10000, +32768] x 4 slots by r
        CHECK-NEXT:  a_left: pl.Tile[[64, 256], pl.FP16, pl.Mem.Left] = pl.tile.move(a_mat_ahead0{{.*}}# Left[0x0, +32768] x 2 slots by r
        CHECK-NEXT:  acc_1: pl.Tile[[64, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(a_left, b_right, out_dtype=pl.FP32)  # Acc[0x0, +32768] x 4 slots by r
        CHECK-NEXT:  pl.tile.store(acc_1, [r, 0], acc)
        CHECK-NEXT:  a_mat_last0, a_mat_last1, a_mat_last2 = pl.yield_(a_mat_ahead1, a_mat_ahead2, a_mat_next)
        CHECK-EMPTY:

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
        CHECK:       def vector_only(
        CHECK:       for r in pl.pipeline(0, 4096, 64, stage=4):
        CHECK-NEXT:  acc_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(acc, [r, 0]{{.*}}# Vec[0x0, +32768] x 2 slots by r
        CHECK-NEXT:  bias_vec: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [r, 0]{{.*}}# Vec[0x10000, +32768] x 2 slots by r
        CHECK-NEXT:  t: pl.Tile[[64, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(acc_vec, bias_vec)  # Vec[0x0, +32768] x 2 slots by r
        CHECK-NEXT:  pl.tile.store(t, [r, 0], out)
        """,
    )


def test_dump_passes_writes_one_file_per_pass(tmp_path):
    lower(irbuild.staged_program(), irbuild.TARGET, dump_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{i:02d}_after_{name}.py" for i, name in enumerate(DEFAULT_PIPELINE, start=1)]
    assert "pl.tile.matmul" in (tmp_path / names[-1]).read_text()


def test_unknown_pass_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown pass 'Nope'; known passes: OutlineScopes"):
        build_pass("Nope")
