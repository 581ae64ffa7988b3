"""PyPTO's runtime API on the a2a3 simulator ("Execution" in PyPTO's manual): ChipWorker's options,
copies, registration handles and load counter; the CompiledProgram contract (program, the dispatch
surface, from_dir); pypto.runtime.benchmark."""

import json
import os
import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import (
    ArtifactError,
    BenchmarkStats,
    CallConfig,
    ChipWorker,
    CompiledProgram,
    DeviceTensorError,
    OrchArgs,
    RunConfig,
    WorkerError,
    benchmark,
)
from pypto.runtime.settings import ConfigError

ROWS, COLS = 64, 64


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def mul_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, b)
    return out


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)
    return tmp_path


def _host(seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(ROWS, COLS)


def _compiled(kernel=add_kernel, **config) -> CompiledProgram:
    a = torch.zeros(ROWS, COLS)
    return kernel.compile(a, a, a.clone(), config=RunConfig(**config))


# ---------------------------------------------------------------- ChipWorker


def test_a_worker_is_level_2_and_other_levels_say_why_not():
    with ChipWorker(config=RunConfig(), level=2) as worker:
        assert worker.level == 2 and worker.platform == "a2a3sim"
    with pytest.raises(WorkerError, match="several chips from a host") as info:
        ChipWorker(config=RunConfig(), level=3)
    assert info.value.span is not None and info.value.span.file == __file__
    with pytest.raises(WorkerError, match="no worker below the chip"):
        ChipWorker(level=1)
    with pytest.raises(WorkerError, match="takes an int"):
        ChipWorker(level="2")
    with pytest.raises(TypeError):
        ChipWorker(RunConfig(), 2)  # level is keyword-only


def test_enable_sdma_is_refused_on_the_simulator():
    with pytest.raises(WorkerError, match="provides no SDMA workspace"):
        ChipWorker(config=RunConfig(), enable_sdma=True)


def test_the_load_counter_counts_first_loads_not_dispatches():
    add, mul = _compiled(), _compiled(mul_kernel)
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker:
        assert worker.aicpu_dlopen_count == 0
        first = worker.register(add)
        assert worker.aicpu_dlopen_count == 1
        assert worker.register(add) is first  # an alias of the loaded callable
        for _ in range(3):
            first(a, b, out)
        worker.run(add, a, b, out)
        assert worker.aicpu_dlopen_count == 1
        worker.run(mul, a, b, out)  # a first run loads too
        assert worker.aicpu_dlopen_count == 2
        torch.testing.assert_close(out, a * b)
    with ChipWorker(config=RunConfig()) as fresh:
        fresh.register(add)
        assert fresh.aicpu_dlopen_count == 1  # counted per worker


def test_a_released_handle_refuses_to_launch_and_with_releases_it():
    add = _compiled()
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker:
        with worker.register(add) as handle:
            handle(a, b, out)
        torch.testing.assert_close(out, a + b)
        with pytest.raises(WorkerError, match="was released") as info:
            handle(a, b, out)
        assert info.value.span.file == __file__
        again = worker.register(add)
        assert again is not handle and worker.aicpu_dlopen_count == 1  # still loaded
        again(a, b, out)


def test_compiled_call_inside_a_with_block_dispatches_through_that_worker():
    add = _compiled()
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32, init=b)
        add(a, resident, out)
        assert worker.aicpu_dlopen_count == 1
    torch.testing.assert_close(out, a + b)
    with pytest.raises(DeviceTensorError, match="outside a ChipWorker"):
        add(a, resident, out)


def test_copy_to_and_copy_from_move_bytes_between_host_and_device():
    host = _host(3)
    back = torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker:
        dev = worker.alloc_tensor((ROWS, COLS), torch.float32)
        worker.copy_to(dev.data_ptr, host.data_ptr(), dev.nbytes)
        worker.copy_from(back.data_ptr(), dev.data_ptr, dev.nbytes)
        torch.testing.assert_close(back, host)
        half = dev.nbytes // 2  # an offset inside the buffer is a device address too
        row = torch.zeros(ROWS // 2, COLS)
        worker.copy_from(row, dev.data_ptr + half, half)
        torch.testing.assert_close(row, host[ROWS // 2 :])


def test_copies_outside_a_live_buffer_of_the_worker_are_errors():
    host = torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker, ChipWorker(config=RunConfig()) as other:
        dev = worker.alloc_tensor((ROWS, COLS), torch.float32)
        with pytest.raises(DeviceTensorError, match="run past the end") as info:
            worker.copy_from(host.data_ptr(), dev.data_ptr + 4, dev.nbytes)
        assert "at most" in info.value.hint and info.value.span.file == __file__
        with pytest.raises(DeviceTensorError, match="not inside a buffer this worker holds"):
            other.copy_to(dev.data_ptr, host.data_ptr(), 16)
        with pytest.raises(DeviceTensorError, match="do not fit the host tensor"):
            worker.copy_from(torch.zeros(4), dev.data_ptr, dev.nbytes)
        with pytest.raises(DeviceTensorError, match="byte count"):
            worker.copy_to(dev.data_ptr, host.data_ptr(), -1)
        address = dev.data_ptr
        worker.free_tensor(dev)
        with pytest.raises(DeviceTensorError, match="not inside a buffer"):
            worker.copy_from(host.data_ptr(), address, 16)


def test_alloc_tensor_checks_its_shape_dtype_and_init():
    with ChipWorker(config=RunConfig()) as worker:
        with pytest.raises(DeviceTensorError, match="torch dtype"):
            worker.alloc_tensor((4, 4), "float32")
        with pytest.raises(DeviceTensorError, match="shape of ints"):
            worker.alloc_tensor((4, -1), torch.float32)
        with pytest.raises(TypeError):
            worker.alloc_tensor((4, 4), torch.float32, torch.ones(4, 4))  # init is keyword-only
        t = worker.alloc_tensor((4, 4), torch.float16, init=torch.ones(16))
        assert (t.shape, t.dtype, t.nbytes) == ((4, 4), torch.float16, 32)


# ---------------------------------------------------------------- CompiledProgram


def test_program_is_what_was_handed_to_compile_and_lowered_is_what_runs():
    a = torch.zeros(ROWS, COLS)
    parsed = add_kernel.parse(a, a, a)
    compiled = ir.compile(parsed, dump_passes=False)
    assert compiled.program is parsed
    assert set(compiled.lowered.functions) > set(parsed.functions)
    lowered = add_kernel.lower(a, a, a)
    assert ir.compile(lowered, dump_passes=False).program is lowered


def test_the_dispatch_surface_is_what_a_worker_launches_with():
    compiled = _compiled()
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    orch = compiled.build_orch_args(a, b, out)
    assert isinstance(orch, OrchArgs)
    assert orch.names == ("a", "b", "out") and orch.output_indices == (2,) and orch.values[0] is a
    call = compiled.build_call_config(
        RunConfig(ring_task_window=256, enable_dep_gen=True, aicpu_thread_num=2)
    )
    assert isinstance(call, CallConfig)
    assert call.ring_task_window == (256,) * 4 and call.aicpu_thread_num == 2
    assert call.output_prefix is not None and call.output_prefix.name == "dfx_outputs"
    assert compiled.build_call_config().output_prefix is None
    compiled.launch(orch.values, call)
    torch.testing.assert_close(out, a + b)
    assert (call.output_prefix / "deps.json").is_file()
    assert compiled.chip_callable is compiled.chip_callable
    assert [name for name, _ in compiled.chip_callable.kernels] == [
        fn.name for fn in compiled.lowered.functions.values() if fn.kind.value in ("AIC", "AIV", "InCore")
    ]
    assert compiled.runtime_name == "a2a3sim"
    assert compiled.runtime_config["platform"] == "a2a3sim"
    with pytest.raises(Exception, match="takes 3 argument"):
        compiled.build_orch_args(a, b, out, out)


def test_a_compiled_program_stands_for_its_output_directory():
    compiled = _compiled(save_kernels=True)
    assert os.fspath(compiled) == str(compiled.output_dir)
    assert (compiled / "program.py").is_file() and (compiled / "compiled.json").is_file()


def test_from_dir_rebuilds_a_program_that_runs_the_same():
    compiled = _compiled(save_kernels=True)
    again = CompiledProgram.from_dir(compiled.output_dir)
    assert again.program is None and again.platform == compiled.platform
    assert (again.param_names, again.output_indices) == (compiled.param_names, compiled.output_indices)
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    with ChipWorker(config=RunConfig()) as worker:
        worker.run(again, a, b, out)
    torch.testing.assert_close(out, a + b)
    assert CompiledProgram.load(compiled.output_dir).param_names == ["a", "b", "out"]
    assert again.output_dir == compiled.output_dir


def test_from_dir_of_a_directory_that_is_no_artifact_says_so(workdir):
    (workdir / "empty").mkdir()
    with pytest.raises(ArtifactError, match="not an artifact directory") as info:
        CompiledProgram.from_dir(workdir / "empty")
    assert info.value.span.file == __file__ and "compiled.output_dir" in info.value.hint
    with pytest.raises(ArtifactError, match="is not a directory"):
        CompiledProgram.from_dir(workdir / "missing")
    compiled = _compiled(save_kernels=True)
    (compiled.output_dir / "compiled.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ArtifactError, match="not the description of a compiled program"):
        CompiledProgram.from_dir(compiled.output_dir)


def test_kernel_compile_returns_a_program_compiled_under_the_config_asked_for(workdir):
    a = torch.zeros(ROWS, COLS)
    plain = add_kernel.compile(a, a, a, config=RunConfig())
    kept = add_kernel.compile(a, a, a, config=RunConfig(save_kernels_dir=workdir / "kept"))
    assert kept is not plain and kept.output_dir == workdir / "kept"
    assert add_kernel.compile(a, a, a, config=RunConfig()) is plain
    ptoas = add_kernel.compile(a, a, a, config=RunConfig(memory_planner=ir.MemoryPlanner.PTOAS))
    assert ptoas is not plain and ptoas.config.memory_planner is ir.MemoryPlanner.PTOAS
    checked = add_kernel.compile(a, a, a, config=RunConfig(verification_level=ir.VerificationLevel.NONE))
    assert checked is not plain and checked.config.verification_level is ir.VerificationLevel.NONE


# ---------------------------------------------------------------- benchmark


def test_benchmark_measures_the_host_and_models_the_device():
    compiled = _compiled()
    a, b, out = _host(0), _host(1), torch.zeros(ROWS, COLS)
    stats = benchmark(compiled, [a, b, out], rounds=4, warmup=1)
    assert isinstance(stats, BenchmarkStats)
    assert len(stats.samples) == len(stats.host_wall_us) == len(stats.invocations) == 4
    torch.testing.assert_close(out, a + b)
    assert stats.device_modeled and not stats.all_zero_device
    assert stats.samples == stats.device_wall_us
    assert stats.device_wall_us_min <= stats.device_wall_us_median <= stats.device_wall_us_max
    assert stats.device_us_median == stats.device_wall_us_median
    assert stats.device_wall_us[0] == pytest.approx(compiled.last_report.total_us)
    # The host wraps the launch: its wall clock is at least the launch's own.
    first = stats.invocations[0].by_name()
    assert first["chip.run"].dur_us >= first["chip.run.runner_run"].dur_us > 0
    assert "device_wall [dev]" in stats.format_tree(0)
    assert "±" in stats.format_mean_tree("stdev") and "[" in stats.format_mean_tree("minmax")


def test_benchmark_checks_its_options():
    compiled = _compiled()
    args = [torch.zeros(ROWS, COLS)] * 3
    with pytest.raises(ConfigError, match="not both") as info:
        benchmark(compiled, args, config=RunConfig(), platform="a2a3sim")
    assert info.value.span.file == __file__
    with pytest.raises(ConfigError, match="rounds"):
        benchmark(compiled, args, rounds=0)
    with pytest.raises(ConfigError, match="as a list"):
        benchmark(compiled, torch.zeros(3))
    with pytest.raises(ConfigError, match="CompiledProgram"):
        benchmark(add_kernel, args)
    with ChipWorker(config=RunConfig()) as worker:
        resident = worker.alloc_tensor((ROWS, COLS), torch.float32)
        with pytest.raises(DeviceTensorError, match="another ChipWorker"):
            benchmark(compiled, [args[0], resident, args[2]], rounds=1, warmup=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        benchmark(compiled, args, rounds=1, warmup=0, config=RunConfig(aicpu_thread_num=2))
