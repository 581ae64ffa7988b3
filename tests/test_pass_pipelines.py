"""Pipeline strings end to end on a2a3sim: a K block chosen in ``RunConfig(pipeline=...)`` gives
the numbers torch gives, with the matmul cut into that many blocks, and an error at the user's
matmul when the block cannot fit."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import Call, MemoryBudgetError
from pypto.ir.nodes import walk_stmts
from pypto.passes import Pipeline
from pypto.runtime import RunConfig


@pl.jit
def matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mm"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


def with_k_block(k_block: int) -> str:
    """The default pipeline with AutoTileMatmul's K block set."""
    return str(Pipeline.default()).replace("tile-matmul", f"tile-matmul{{k_block={k_block}}}")


def operands(m=128, k=256, n=128):
    torch.manual_seed(0)
    a, b = torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)
    return a, b, torch.randn(m, n), torch.zeros(m, n)


@pytest.mark.parametrize(("k_block", "matmuls"), [(64, 4), (96, 3), (256, 1)])
def test_a_k_block_from_the_pipeline_string_gives_torchs_numbers(k_block, matmuls):
    a, b, bias, out = operands()
    matmul_bias.cache_clear()
    config = RunConfig(pipeline=with_k_block(k_block))
    matmul_bias(a, b, bias, out, config=config)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-3, atol=1e-3)
    compiled = matmul_bias.compile(a, b, bias, out, config=config)
    cube = compiled.lowered.function("mm_aic")
    ops = [s.value.op for s in walk_stmts(cube.body) if isinstance(getattr(s, "value", None), Call)]
    assert ops.count("tile.matmul") + ops.count("tile.matmul_acc") == matmuls


def test_a_k_block_that_cannot_fit_is_an_error_at_the_matmul():
    a, b, bias, out = (
        torch.zeros(16, 32768),
        torch.zeros(32768, 16),
        torch.zeros(16, 16),
        torch.zeros(16, 16),
    )
    matmul_bias.cache_clear()
    with pytest.raises(MemoryBudgetError) as info:
        matmul_bias(a, b, bias, out, config=RunConfig(pipeline=with_k_block(20000)))
    assert info.value.message.startswith(
        "pl.matmul: a K block of 20000 (tile-matmul{k_block=20000}) does not fit"
    )
    assert info.value.span.file == __file__
    assert "acc = pl.matmul(a, b, out_dtype=pl.FP32)" in info.value.span.source_line()
    assert "k_block=1024" in info.value.hint


@pl.jit
def row_blocks_times_b(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.spmd(2, name_hint="mm"):
        out[i * 128 : i * 128 + 128, :] = pl.matmul(a[i * 128 : i * 128 + 128, :], b, out_dtype=pl.FP32)
    return out


def test_column_blocks_sharing_left_slices_give_torchs_numbers_in_fewer_modeled_cycles():
    torch.manual_seed(0)
    a, b = torch.randn(256, 1024, dtype=torch.float16), torch.randn(1024, 1024, dtype=torch.float16)
    reports = {}
    for columns in (None, 1):
        pipeline = str(Pipeline.default())
        if columns is not None:
            pipeline = pipeline.replace("tile-matmul", f"tile-matmul{{columns={columns}}}")
        out = torch.zeros(256, 1024)
        row_blocks_times_b.cache_clear()
        row_blocks_times_b(a, b, out, config=RunConfig(pipeline=pipeline))
        torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-2, atol=1e-2)
        reports[columns] = row_blocks_times_b.last_report
    (grouped,), (alone,) = reports[None].roofline(), reports[1].roofline()
    # Each left slice is moved to L0A once for two column blocks: the moves no longer bound the
    # cube (8 x 8 matmuls of 128x128x128: 32768 cycles of MACs per block).
    assert grouped.cube == alone.cube == 2 * 32768
    assert grouped.cycles < 0.95 * alone.cycles
    assert grouped.ratio < 1.35
