"""ChipWorker and DeviceTensor (PyPTO's manual, "Running"): explicit dispatch of a compiled program,
with a buffer kept on the device between launches, on the a2a3 simulator."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import PlatformError, SpecializationError
from pypto.runtime import ChipWorker, DeviceTensorError, RunConfig, WorkerError

ROWS, COLS = 128, 64


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [ROWS, COLS])
        tb = pl.load(b, [0, 0], [ROWS, COLS])
        pl.store(pl.add(ta, tb), [0, 0], out)
    return out


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ir.compile writes its artifacts to ./build_output
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)  # the default: ./build_output


@pytest.fixture
def compiled(workdir):
    a = torch.zeros(ROWS, COLS)
    return ir.compile(add_kernel.lower(a, a, a), platform="a2a3sim", dump_passes=False)


def _host(seed: int = 0) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(ROWS, COLS)


def test_a_resident_buffer_serves_several_launches(compiled):
    a, b = _host(0), _host(1)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32, init=b)
        for step in range(3):
            x, out = a + step, torch.zeros(ROWS, COLS)
            worker.run(compiled, x, resident, out)
            torch.testing.assert_close(out, x + b)
        back = torch.empty(ROWS, COLS)
        worker.copy_from(back.data_ptr(), resident.data_ptr, resident.nbytes)
        assert torch.equal(back, b)
        worker.free_tensor(resident)
        assert resident.freed


def test_a_kernel_writes_a_device_buffer_in_place_and_copy_from_reads_it(compiled):
    a, b = _host(0), _host(1)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        out = worker.alloc_tensor((ROWS, COLS), torch.float32)
        worker.run(compiled, a, b, out)
        host = torch.zeros(ROWS, COLS)
        worker.copy_from(host.data_ptr(), out.data_ptr, out.nbytes)
        torch.testing.assert_close(host, a + b)
        with pytest.raises(DeviceTensorError, match="run past the end of device tensor"):
            worker.copy_from(host.data_ptr(), out.data_ptr, out.nbytes + 4)


def test_a_registration_launches_without_a_lookup_and_close_releases_everything(compiled):
    a, b = _host(0), _host(1)
    worker = ChipWorker(config=RunConfig(platform="a2a3sim"))
    handle = worker.register(compiled)
    assert worker.register(compiled) is handle
    out = torch.zeros(ROWS, COLS)
    for _ in range(3):
        handle(a, b, out)
    torch.testing.assert_close(out, a + b)
    forgotten = worker.alloc_tensor((ROWS, COLS), torch.float32)
    worker.close()
    assert forgotten.freed
    with pytest.raises(WorkerError, match="this ChipWorker is closed"):
        handle(a, b, out)


def test_a_device_tensor_is_bound_to_its_worker_and_dead_once_freed(compiled):
    a, out = _host(0), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as mine, ChipWorker(config=RunConfig()) as other:
        weight = mine.alloc_tensor((ROWS, COLS), torch.float32)
        with pytest.raises(DeviceTensorError, match="belongs to another ChipWorker") as info:
            other.run(compiled, a, weight, out)
        assert info.value.span is not None and info.value.span.file == __file__
        mine.free_tensor(weight)
        with pytest.raises(DeviceTensorError, match="was freed"):
            mine.run(compiled, a, weight, out)


def test_a_worker_rejects_a_program_of_another_platform_before_dispatch():
    a = torch.zeros(ROWS, COLS)
    for_chip = ir.compile(add_kernel.lower(a, a, a), platform="a2a3", dump_passes=False)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        with pytest.raises(
            PlatformError, match="compiled for 'a2a3', but this worker runs on 'a2a3sim'"
        ) as info:
            worker.register(for_chip)
        assert "ir.compile(program, platform='a2a3sim')" in info.value.hint


def test_codegen_only_does_not_stop_a_dispatch_through_the_worker(compiled):
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig(platform="a2a3sim", codegen_only=True)) as worker:
        worker.run(compiled, a, b, out)
    torch.testing.assert_close(out, a + b)


def test_a_jit_call_takes_no_device_tensor_and_says_how_to_run_one():
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as worker:
        weight = worker.alloc_tensor((ROWS, COLS), torch.float32)
        with pytest.raises(SpecializationError, match=r"must be a torch\.Tensor, got") as info:
            add_kernel(weight, weight, torch.zeros(ROWS, COLS))
    assert "worker.run(compiled, ...)" in info.value.hint
