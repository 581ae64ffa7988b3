"""The cost model against the vendor's reference points for the a2a3 chip (platform-a2a3.md,
"Throughput"): each modeled figure within 0.8-1.25x of the vendor's."""

import pytest
import torch

import pypto.language as pl

LOW, HIGH = 0.8, 1.25


def within(modeled: float, vendor: float) -> None:
    assert LOW <= modeled / vendor <= HIGH, f"modeled {modeled} against the vendor's {vendor}"


@pl.jit
def matmul_task(
    a: pl.Tensor[[128, 256], pl.FP16],
    b: pl.Tensor[[256, 128], pl.FP16],
    out: pl.Out[pl.Tensor[[128, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm"):
        out[:] = pl.matmul(a, b, out_dtype=pl.FP32)
    return out


@pl.jit
def vector_add(
    x: pl.Tensor[[64, 128], pl.FP32],
    y: pl.Tensor[[64, 128], pl.FP32],
    out: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="add"):
        out[:] = pl.add(x, y)
    return out


@pytest.fixture(scope="module")
def matmul_report():
    a, b = torch.randn(128, 256).half(), torch.randn(256, 128).half()
    out = torch.zeros(128, 128)
    matmul_task(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    return matmul_task.last_report


def test_a_fp16_128x256x128_matmul_task_takes_about_6600_cycles_end_to_end(matmul_report):
    (task,) = matmul_report.tasks
    within(task.end_cycle - task.start_cycle, 6600)


def test_its_cube_is_busy_about_1100_of_them(matmul_report):
    cube = [s for s in matmul_report.timeline if s.pipe == "CUBE" and not s.stalled]
    within(sum(s.cycles for s in cube), 1100)
    # the rest is mostly the GM -> L1 transfer
    loads = [s for s in matmul_report.timeline if s.pipe == "MTE2" and not s.stalled]
    assert loads and sum(s.cycles for s in cube) < 0.3 * (matmul_report.tasks[0].end_cycle - loads[0].start)


def test_a_fp32_64x128_vector_add_takes_about_350_cycles():
    x, y = torch.randn(64, 128), torch.randn(64, 128)
    out = torch.zeros(64, 128)
    vector_add(x, y, out)
    torch.testing.assert_close(out, x + y)
    (add,) = [s for s in vector_add.last_report.timeline if s.name == "tile.add"]
    within(add.cycles, 350)


@pl.jit.incore
def load_then_add(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [x.shape[0], 128])  # one transfer of the whole tensor
    pl.store(pl.add(t, t), [0, 0], out)
    return out


@pytest.mark.parametrize(("rows", "vendor"), [(128, 2090), (256, 2775)])  # FP32: 64 KB and 128 KB
def test_a_gm_load_is_ready_after_its_bytes_and_the_fixed_latency(rows, vendor):
    x = torch.randn(rows, 128)
    out = torch.zeros(rows, 128)
    load_then_add(x, out)
    torch.testing.assert_close(out, x + x)
    timeline = load_then_add.last_report.timeline
    (load,) = [s for s in timeline if s.name == "tile.load"]
    (add,) = [s for s in timeline if s.name == "tile.add"]
    flag = 10  # the add waits for the load's data through a flag (pipe_sync_cycles)
    within(add.start - flag - load.start, vendor)
