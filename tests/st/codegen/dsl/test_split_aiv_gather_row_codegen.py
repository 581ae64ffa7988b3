"""A worked example of the explicit mixed form: what ``pl.split`` cannot express.

The cube projects ``x @ w``; ``aiv_shard`` hands each AIV lane half of the rows. Inside the
``pl.split_aiv`` region each lane addresses its own rows — it reads its slice of ``idx`` and
gathers those rows of ``table`` (per-lane addressing) — and only lane 0 gathers the extra
"head" row, through a loop that runs once on lane 0 and not at all on lane 1. The automatic
split halves every vector op the same way on both lanes, so neither the lane-dependent reads
nor the one-lane gather can be written with ``pl.split``.

Checked twice: the lowered IR against golden text, and the numbers against torch.
"""

import os
from pathlib import Path

import torch

import pypto.language as pl
from pypto.ir import FunctionKind, print_ir

GOLDEN = Path(__file__).parent / "golden" / "split_aiv_gather_row.txt"
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
        proj = pl.aiv_shard(acc, split=pl.SplitMode.UP_DOWN)
        for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
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


def test_lowered_ir_is_the_golden_group_of_an_aic_and_an_aiv_kernel():
    lowered = embed_project.lower()
    kinds = {fn.name: fn.kind for fn in lowered.functions}
    assert kinds["embed_project_aic"] is FunctionKind.AIC
    assert kinds["embed_project_aiv"] is FunctionKind.AIV
    assert FunctionKind.Group in kinds.values()
    text = print_ir(lowered)
    if os.environ.get("PYPTO_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


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
