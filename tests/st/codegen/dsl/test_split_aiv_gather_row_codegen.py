"""A worked example of the explicit mixed form: what ``pl.split`` cannot express.

The cube projects ``x @ w``; inside the ``pl.split_aiv`` region ``aiv_shard`` hands each AIV lane
half of the rows, and each lane addresses its own rows — it reads its slice of ``idx`` and
gathers those rows of ``table`` (per-lane addressing) — and only lane 0 gathers the extra
"head" row, through a loop that runs once on lane 0 and not at all on lane 1. The automatic
split halves every vector op the same way on both lanes, so neither the lane-dependent reads
nor the one-lane gather can be written with ``pl.split``.

Checked twice: the lines of the lowered IR that matter, and the numbers against torch.
"""

import torch

import pypto.language as pl
from pypto.ir import Assign, Eval, For, FunctionKind, print_ir
from pypto.ir.filecheck import filecheck

ROWS, K, N, VOCAB = 32, 64, 128, 256
HALF = ROWS // 2


@pl.jit
def embed_project(
    x: pl.Tensor[[ROWS, K], pl.FP16],
    w: pl.Tensor[[K, N], pl.FP16],
    table: pl.Tensor[[VOCAB, N], pl.FP32],
    idx: pl.Tensor[[ROWS + 1], pl.INT32],
    out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]],
    head: pl.Out[pl.Tensor[[1, N], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="embed_project"):
        x_l1 = pl.load(x, [0, 0], [ROWS, K], target_memory=pl.Mem.Mat)
        w_l1 = pl.load(w, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(x_l1, target_memory=pl.Mem.Left), pl.move(w_l1, target_memory=pl.Mem.Right))
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
            proj = pl.aiv_shard(acc)  # this lane's half of the rows
            rows = pl.create_tile([HALF, N], pl.FP32)
            for r in pl.range(HALF):
                row = pl.cast(pl.read(idx, [lane * HALF + r]), pl.INDEX)
                rows = pl.gather_row(rows, table, [r, 0], [row, 0], [1, N])
            pl.store(pl.add(proj, rows), [lane * HALF, 0], out)
            for _ in pl.range(lane, 1, 2):  # lane 0 only
                first = pl.create_tile([1, N], pl.FP32)
                first = pl.gather_row(
                    first, table, [0, 0], [pl.cast(pl.read(idx, [ROWS]), pl.INDEX), 0], [1, N]
                )
                pl.store(first, [0, 0], head)
    return out, head


def loops_ops(fn):
    """The ops in the body of each loop of ``fn``'s body, in order."""
    loops = [s for s in fn.body if isinstance(s, For)]
    return [[s.value.op for s in loop.body if isinstance(s, (Assign, Eval))] for loop in loops]


def test_lowered_ir_is_a_group_of_an_aic_and_an_aiv_kernel():
    lowered = embed_project.lower()
    kinds = {fn.name: fn.kind for fn in lowered.functions.values()}
    assert kinds["embed_project_aic"] is FunctionKind.AIC
    assert kinds["embed_project_aiv"] is FunctionKind.AIV
    assert FunctionKind.Group in kinds.values()
    # Each lane gathers its rows in one loop; the head row is gathered in a loop only lane 0 runs.
    assert loops_ops(lowered.function("embed_project_aiv")) == [
        ["scalar.cast", "tile.gather_row"],
        ["tile.create", "tile.gather_row", "tile.store"],
    ]
    filecheck(
        print_ir(lowered),
        """
        CHECK-LABEL: def embed_project(
        CHECK:       self.embed_project_1(x, w, idx, table, out, head, access=['In', 'In', 'In', 'In', 'Out', 'Out'])
        CHECK-LABEL: @pl.function(type=pl.FunctionType.Group)
        CHECK:       def embed_project_1(
        CHECK-NEXT:  pl.func_attr({'pipe_name': 'embed_project'})
        CHECK:       self.embed_project_aic(x, w, idx, table, out, head)
        CHECK-NEXT:  self.embed_project_aiv(x, w, idx, table, out, head)

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIC)
        CHECK:       def embed_project_aic(
        CHECK-NEXT:  pl.func_attr({'pipe_setup': 'automatic'{{.*}}
        CHECK:       pl.system.aic_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        CHECK-NEXT:  x_l1: pl.Tile[[32, 64], pl.FP16, pl.Mem.Mat] = pl.tile.load(x, [0, 0]{{.*}}# Mat[0x0, +4096]
        CHECK-NEXT:  w_l1: pl.Tile[[64, 128], pl.FP16, pl.Mem.Mat] = pl.tile.load(w, [0, 0]{{.*}}# Mat[0x1000, +16384]
        CHECK-NEXT:  move: pl.Tile[[32, 64], pl.FP16, pl.Mem.Left] = pl.tile.move(x_l1{{.*}}# Left[0x0, +4096]
        CHECK-NEXT:  move_1: pl.Tile[[64, 128], pl.FP16, pl.Mem.Right] = pl.tile.move(w_l1{{.*}}# Right[0x0, +16384]
        CHECK-NEXT:  acc: pl.Tile[[32, 128], pl.FP32, pl.Mem.Acc] = pl.tile.matmul(move, move_1)  # Acc[0x0, +16384]
        CHECK-NEXT:  pl.tile.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)
        CHECK-EMPTY:

        CHECK-LABEL: @pl.function(type=pl.FunctionType.AIV)
        CHECK:       def embed_project_aiv(
        CHECK-NEXT:  pl.func_attr({'pipe_setup': 'automatic'{{.*}}
        CHECK-NEXT:  # reserved Vec[0x0, +32768]: cross-core pipe ring
        CHECK:       pl.system.aiv_initialize_pipe(dir_mask=1, slot_size=16384, slot_num=2)
        CHECK-NEXT:  lane: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        CHECK-NEXT:  proj: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.tpop_from_aic(shape=[16, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        CHECK-NEXT:  rows: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.create(shape=[16, 128]{{.*}}# Vec[0x8000, +8192]
        CHECK-NEXT:  for r in pl.range(0, 16, 1):
        CHECK-NEXT:  row: pl.Scalar[pl.INDEX] = pl.cast(pl.read(idx, [(lane * 16) + r]), dtype=pl.INDEX, mode='round')
        CHECK-NEXT:  pl.tile.gather_row(rows, table, [r, 0], [row, 0], shape=[1, 128])
        CHECK-NEXT:  add: pl.Tile[[16, 128], pl.FP32, pl.Mem.Vec] = pl.tile.add(proj, rows)  # Vec[0x8000, +8192]
        CHECK-NEXT:  pl.system.tfree_to_aic(proj)
        CHECK-NEXT:  pl.tile.store(add, [lane * 16, 0], out)
        CHECK-NEXT:  for _ in pl.range(lane, 1, 2):
        CHECK-NEXT:  first: pl.Tile[[1, 128], pl.FP32, pl.Mem.Vec] = pl.tile.create(shape=[1, 128]{{.*}}# Vec[0xa000, +512]
        CHECK-NEXT:  pl.tile.gather_row(first, table, [0, 0], [pl.cast(pl.read(idx, [32]), dtype=pl.INDEX, mode='round'), 0], shape=[1, 128])
        CHECK-NEXT:  pl.tile.store(first, [0, 0], head)
        """,
    )


def test_each_lane_gathers_its_own_rows_and_lane_0_the_head_row():
    torch.manual_seed(0)
    x = torch.randn(ROWS, K, dtype=torch.float16)
    w = torch.randn(K, N, dtype=torch.float16)
    table = torch.randn(VOCAB, N)
    idx = torch.randint(0, VOCAB, (ROWS + 1,), dtype=torch.int32)
    out, head = torch.zeros(ROWS, N), torch.zeros(1, N)
    embed_project(x, w, table, idx, out, head)
    want = x.float() @ w.float() + table[idx[:ROWS].long()]
    assert torch.allclose(out, want, rtol=1e-2, atol=1e-2)
    assert torch.equal(head, table[idx[ROWS].long()].unsqueeze(0))
