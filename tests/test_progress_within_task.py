"""a2a3sim reports how far a running task has got through the ``on_progress`` backend option: the
iterations of the outermost loop of a one-block task, the blocks of an spmd task."""

import io
import time

import torch
from rich.console import Console

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.runtime.platforms.registry import get_backend
from pypto.runtime.reports.progress import ON_PROGRESS_OPTION, TaskProgress, count_tasks


@pl.jit
def rows_loop(x: pl.Tensor[[8 * 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[8 * 16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
        for i in pl.range(8):
            t = pl.load(x, [i * 16, 0], [16, 64])
            for _j in pl.range(3):  # an inner loop: not the task's progress
                t = pl.add(t, t)
            pl.store(t, [i * 16, 0], out)
    return out


@pl.jit
def spmd_rows(x: pl.Tensor[[4 * 16, 64], pl.FP32], out: pl.Out[pl.Tensor[[4 * 16, 64], pl.FP32]]):
    for i in pl.spmd(4):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="block"):
            out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])
    return out


@pl.jit
def mixed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def _heard() -> tuple[list[tuple], RunConfig]:
    heard: list[tuple] = []
    config = RunConfig(platform="a2a3sim", options={ON_PROGRESS_OPTION: lambda *step: heard.append(step)})
    return heard, config


def test_a_one_task_kernel_reports_each_iteration_of_its_outermost_loop():
    heard, config = _heard()
    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    rows_loop(x, out, config=config)
    torch.testing.assert_close(out, 8 * x)
    assert count_tasks(rows_loop.lower(x, out, config=config)) == 1
    assert heard == [("rows", done, 8, "iterations") for done in range(1, 9)]


def test_an_spmd_task_reports_each_finished_block():
    heard, config = _heard()
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    spmd_rows(x, out, config=config)
    torch.testing.assert_close(out, x.exp())
    assert heard == [("block", done, 4, "blocks") for done in range(1, 5)]


def test_a_mixed_kernel_streaming_row_blocks_reports_the_cubes_blocks_in_order():
    heard, config = _heard()
    torch.manual_seed(0)
    a, b = torch.randn(512, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    bias, out = torch.randn(512, 128), torch.zeros(512, 128)
    mixed(a, b, bias, out, config=config)
    torch.testing.assert_close(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    # Blocks of 64 rows (two stages of them fit beside the ring): 8 of them, in order.
    assert [(done, total) for _, done, total, _ in heard] == [(done, 8) for done in range(1, 9)]


def test_on_a_terminal_the_bar_of_a_one_task_run_shows_the_iterations():
    stream = io.StringIO()
    console = Console(file=stream, force_terminal=True, width=100)
    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    program = rows_loop.lower(x, out)
    backend_options = RunConfig(platform="a2a3sim").backend_options()
    with TaskProgress("rows_loop", count_tasks(program), console=console, show_after=0) as progress:
        time.sleep(0.2)
        get_backend("a2a3sim").run(program, [x, out], {**backend_options, **progress.options()})
    assert "8/8" in stream.getvalue() and "iterations" in stream.getvalue()
