"""The runtime of distributed programs (PyPTO's manual, "Execution"): DistributedConfig,
RunConfig(distributed_config=...), DistributedCompiledProgram's one-shot call, DistributedWorker
(dispatch, multi-program, bounded submit, resident and stacked tensors, persistent windows,
SubWorker callbacks), the WorldReport and its trace and swimlane.

The world here is a small fake backend (``worldsim``) implementing the backend contract's
``run_world``: each rank r writes ``y[r] = x[r] * (r + 1)``, counts its dispatches in its window
store, and calls the bound SubWorker callbacks. It checks the runtime's side of the contract; the
simulator's own world is tested end to end in tests/test_distributed_examples.py."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import torch

import pypto.language as pl
from pypto.ir import (
    ConfigError,
    Function,
    FunctionKind,
    Level,
    PlatformError,
    Program,
    Role,
    VerificationLevel,
)
from pypto.ir.backend import LinkTransfer, RunReport, Slice, WorldReport
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.ir.errors import CommError
from pypto.ir.targets import get_target
from pypto.runtime import (
    DeviceTensor,
    DeviceTensorError,
    DistributedRunHandle,
    DistributedWorker,
    RunConfig,
    StackedDeviceTensor,
    hookimpl,
    register_plugin,
    reset_registry,
)
from pypto.runtime.compiling.compiled import CompiledProgram, compile_program
from pypto.runtime.distributed_runner import _tensor_from_continuous
from pypto.runtime.reports.world import draw_world_swimlane, world_trace

ROWS, COLS = 4, 8


class WindowCounter:
    """The fake's window store: per rank, how many dispatches wrote it since its last reset."""

    def __init__(self, ranks: int) -> None:
        self.counts = [0] * ranks
        self.resets = 0

    def reset(self) -> None:
        self.counts = [0] * len(self.counts)
        self.resets += 1


class FakeWorld:
    """A world backend: ``y[r] = x[r] * (r + 1) + (dispatches of this window store before)``."""

    name = "worldsim"
    target = get_target("a2a3")
    simulator = True

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.gate: threading.Event | None = None  # set: runs wait for it
        self.running = 0
        self.most_running = 0
        self.error: Exception | None = None

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        raise AssertionError("a distributed program runs through run_world")

    def window_store(self, ranks: int) -> WindowCounter:
        return WindowCounter(ranks)

    def run_world(
        self, program: Program, args: Sequence[Any], options: Mapping[str, Any], ranks: int
    ) -> WorldReport:
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            if self.gate is not None:
                assert self.gate.wait(10)
            self.calls.append(
                {"program": program, "args": list(args), "options": dict(options), "ranks": ranks}
            )
            if self.error is not None:
                raise self.error
            x, y = args[0], args[1]
            store = options.get("windows")
            for r in range(ranks):
                before = store.counts[r] if store is not None else 0
                y[r] = x[r] * (r + 1) + before
                if store is not None:
                    store.counts[r] += 1
            for name, fn in options.get("callbacks", {}).items():
                fn([y, name])
            chips = tuple(
                RunReport(
                    self.name,
                    1000.0,
                    total_cycles=100 * (r + 1),
                    timeline=[Slice("cg0.AIV0", 0, 50 * (r + 1), "tile.add", "VECTOR", task="k")],
                    busy_cycles={"cg0.AIV0": 50 * (r + 1)},
                )
                for r in range(ranks)
            )
            transfers = tuple(
                LinkTransfer(r, (r + 1) % ranks, 1024, 10, 40, "dist.put", "kernel.py:12")
                for r in range(ranks)
            )
            return WorldReport(chips, 100 * ranks, 1.0, transfers)
        finally:
            self.running -= 1


class WorldPlugin:
    def __init__(self, backend: FakeWorld) -> None:
        self.backend = backend

    @hookimpl
    def pypto_register_backends(self, register: Any) -> None:
        register(self.backend)


@pytest.fixture
def world(monkeypatch, tmp_path) -> FakeWorld:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "")
    reset_registry(load_entry_points=False)
    backend = FakeWorld()
    register_plugin(WorldPlugin(backend), name="world-plugin")
    yield backend
    reset_registry()


@pl.jit
def world_scale(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    return y


def host_program(
    *, sub_worker: bool = False, abstract: bool = True, name: str = "world_scale", ranks: int = 2
) -> Program:
    """``world_scale(x, y)`` with its entry made a HOST orchestrator (and, with ``sub_worker``, a
    HOST SubWorker ``inspect``), as the language marks ``@pl.jit.host`` functions."""
    parsed = world_scale.parse(torch.zeros(ranks, ROWS, COLS), torch.zeros(ranks, ROWS, COLS))
    entry = dataclasses.replace(
        parsed.entry_function,
        attrs={**parsed.entry_function.attrs, "level": Level.HOST, "role": Role.Orchestrator},
    )
    functions = [entry]
    if sub_worker:
        attrs = {"level": Level.HOST, "role": Role.SubWorker, "requires_runtime_binding": abstract}
        functions.append(Function("inspect", (), (), FunctionKind.Orchestration, attrs=attrs))
    return Program(name, functions, entry.name)


def config(device_ids: Sequence[int] = (0, 1), **more: Any) -> RunConfig:
    return RunConfig(
        platform="worldsim",
        pipeline=(),
        verification_level=VerificationLevel.NONE,
        distributed_config=DistributedConfig(device_ids=list(device_ids), **more),
    )


def compiled_world(device_ids: Sequence[int] = (0, 1), **kwargs: Any) -> DistributedCompiledProgram:
    made = compile_program(host_program(**kwargs), config(device_ids))
    assert isinstance(made, DistributedCompiledProgram)
    return made


def shared(*shape: int, fill: float | None = None) -> torch.Tensor:
    tensor = torch.randn(*shape) if fill is None else torch.full(shape, fill)
    return tensor.share_memory_()


def expected(x: torch.Tensor, offset: int = 0) -> torch.Tensor:
    return x * torch.arange(1, x.shape[0] + 1, dtype=x.dtype).view(-1, 1, 1) + offset


# ------------------------------------------------------------ DistributedConfig


def test_distributed_config_names_the_world():
    dc = DistributedConfig(device_ids=[4, 5, 7])
    assert dc.device_ids == (4, 5, 7) and dc.world_size == 3 and dc.num_sub_workers == 0
    assert DistributedConfig([0], num_sub_workers=1).num_sub_workers == 1


@pytest.mark.parametrize(
    ("device_ids", "num_sub_workers", "words"),
    [
        ([], 0, "names no device"),
        ([0, 1, 0], 0, "device 0 twice"),
        ([0, -1], 0, "negative device id -1"),
        ([0, True], 0, "takes ints"),
        ([0, 1.0], 0, "takes ints"),
        ("0,1", 0, "list of device ids"),
        (3, 0, "list of device ids"),
        ([0], -1, "num_sub_workers"),
        ([0], True, "num_sub_workers"),
    ],
)
def test_a_bad_distributed_config_is_a_config_error_with_a_hint(device_ids, num_sub_workers, words):
    with pytest.raises(ConfigError) as caught:
        DistributedConfig(device_ids=device_ids, num_sub_workers=num_sub_workers)
    assert words in caught.value.message
    assert caught.value.hint


def test_run_config_takes_a_distributed_config_and_nothing_else_there():
    dc = DistributedConfig(device_ids=[0, 1])
    assert RunConfig(distributed_config=dc).distributed_config is dc
    with pytest.raises(ConfigError, match="takes a DistributedConfig"):
        RunConfig(distributed_config=[0, 1])


# ------------------------------------------------------------ compiling


def test_compiling_a_host_program_with_a_distributed_config_gives_a_distributed_compiled_program(world):
    compiled = compiled_world((3, 1, 2))
    assert isinstance(compiled, DistributedCompiledProgram)
    assert compiled.world_size == 3 and compiled.device_ids == (3, 1, 2)
    assert "3 rank(s)" in repr(compiled)


def test_a_host_program_without_a_distributed_config_is_a_config_error(world):
    cfg = RunConfig(platform="worldsim", pipeline=(), verification_level=VerificationLevel.NONE)
    with pytest.raises(ConfigError, match="needs a DistributedConfig"):
        compile_program(host_program(), cfg)


def test_a_chip_program_with_a_distributed_config_is_a_config_error(world):
    chip = world_scale.parse(torch.zeros(2, ROWS, COLS), torch.zeros(2, ROWS, COLS))
    with pytest.raises(ConfigError, match="not a HOST orchestrator"):
        compile_program(chip, config())


def test_ir_compile_takes_the_distributed_config(world, tmp_path):
    from pypto import ir

    compiled = ir.compile(
        host_program(),
        platform="worldsim",
        distributed_config=DistributedConfig(device_ids=[0, 1]),
        output_dir=tmp_path / "out",
        dump_passes=False,
        verification_level=VerificationLevel.NONE,
    )
    assert isinstance(compiled, DistributedCompiledProgram)


def test_a_platform_without_a_world_is_a_platform_error(world, monkeypatch):
    compiled = compiled_world()
    monkeypatch.setattr(FakeWorld, "run_world", None)
    with pytest.raises(PlatformError, match="no run_world"):
        compiled(torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS))


# ------------------------------------------------------------ one-shot


def test_a_one_shot_call_runs_every_rank_and_keeps_the_world_report(world):
    compiled = compiled_world((4, 6))
    x, y = torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS)
    compiled(x, y, config=RunConfig(platform="worldsim"))
    torch.testing.assert_close(y, expected(x))
    call = world.calls[-1]
    assert call["ranks"] == 2
    assert call["options"]["device_ids"] == (4, 6)
    assert call["options"]["windows"] is None and call["options"]["callbacks"] == {}
    report = compiled.last_report
    assert isinstance(report, WorldReport) and report.device_ids == (4, 6)
    assert "rank1 (device 6)" in report.summary()


def test_a_one_shot_call_rejects_resident_tensors(world):
    compiled = compiled_world()
    with compiled.prepare() as rt:
        resident = rt.alloc_tensor((2, ROWS, COLS), torch.float32)
        with pytest.raises(DeviceTensorError, match=r"host torch\.Tensor arguments only"):
            compiled(torch.randn(2, ROWS, COLS), resident)
        stacked = rt.alloc_stacked_tensor(torch.zeros(2, ROWS, COLS))
        with pytest.raises(DeviceTensorError, match="StackedDeviceTensor"):
            compiled(torch.randn(2, ROWS, COLS), stacked)


def test_a_run_config_naming_other_devices_is_a_config_error(world):
    compiled = compiled_world((0, 1))
    with pytest.raises(ConfigError, match="compiled for devices"):
        compiled(torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS), config=config((2, 3)))


# ------------------------------------------------------------ DistributedWorker


def test_a_prepared_worker_dispatches_many_times_on_shared_tensors(world):
    compiled = compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS, fill=0.0)
    with compiled.prepare() as rt:
        assert isinstance(rt, DistributedWorker)
        for step in range(3):
            x.copy_(torch.full((2, ROWS, COLS), float(step)))
            rt(x, y)
            torch.testing.assert_close(y, expected(x))
        assert isinstance(rt.last_report, WorldReport)
    assert rt.closed


def test_a_private_host_tensor_is_a_type_error_naming_the_argument(world):
    compiled = compiled_world()
    x = shared(2, ROWS, COLS)
    private = torch.zeros(2, ROWS, COLS)
    with compiled.prepare() as rt:
        with pytest.raises(TypeError, match=r"argument 'y' .*private memory") as caught:
            rt(x, private)
        assert "share_memory_()" in caught.value.hint
        with pytest.raises(TypeError, match="argument 'y'"):
            rt.run(compiled, x, private)
    assert world.calls == []


def test_distributed_worker_is_made_directly_from_one_program_or_a_list(world):
    a, b = compiled_world(), compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS, fill=0.0)
    with DistributedWorker(a) as rt:
        rt(x, y)
    with DistributedWorker([a, b]) as rt:
        assert rt.multi_program
        rt.run(b, x, y)
        torch.testing.assert_close(y, expected(x))


def test_a_multi_program_worker_needs_run_and_rejects_unprepared_programs(world):
    a, b, c = compiled_world(), compiled_world(), compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS, fill=0.0)
    with a.prepare(extra_compiled=[b]) as rt:
        with pytest.raises(TypeError, match="does not say which"):
            rt(x, y)
        with pytest.raises(ValueError, match="not prepared on this worker"):
            rt.run(c, x, y)
        rt.run(a, x, y)
        rt.run(b, x, y)
    assert [call["program"] for call in world.calls] == [a.lowered, b.lowered]


def test_programs_of_one_worker_must_agree_on_their_devices(world):
    with pytest.raises(ValueError, match="one set of devices"):
        DistributedWorker([compiled_world((0, 1)), compiled_world((2, 3))])
    with pytest.raises(TypeError):
        DistributedWorker([compiled_world(), "not a program"])


def test_a_closed_worker_says_so(world):
    compiled = compiled_world()
    rt = compiled.prepare()
    rt.close()
    with pytest.raises(RuntimeError, match="closed"):
        rt(shared(2, ROWS, COLS), shared(2, ROWS, COLS))


def test_a_dispatch_error_reaches_the_caller(world):
    compiled = compiled_world()
    world.error = CommError("device index 5 is outside [0, 2)")
    with compiled.prepare() as rt, pytest.raises(CommError, match="outside"):
        rt(shared(2, ROWS, COLS), shared(2, ROWS, COLS))


# ------------------------------------------------------------ submit


def test_submit_returns_handles_and_keeps_at_most_two_in_flight(world):
    compiled = compiled_world()
    world.gate = threading.Event()
    xs = [shared(2, ROWS, COLS) for _ in range(3)]
    ys = [shared(2, ROWS, COLS, fill=0.0) for _ in range(3)]
    with compiled.prepare() as rt:
        first = rt.submit(compiled, xs[0], ys[0])
        second = rt.submit(compiled, xs[1], ys[1])
        assert isinstance(first, DistributedRunHandle) and not first.done and not second.done
        third: list[DistributedRunHandle] = []
        late = threading.Thread(target=lambda: third.append(rt.submit(compiled, xs[2], ys[2])))
        late.start()
        late.join(0.3)
        assert late.is_alive() and not third  # a third submit waits for the oldest
        world.gate.set()
        late.join(10)
        assert first.result(10) is not None or True
        second.wait(10)
        third[0].result(10)
        assert first.done and second.done and third[0].done
        for x, y in zip(xs, ys, strict=True):
            torch.testing.assert_close(y, expected(x))
        assert isinstance(first.report, WorldReport)
    assert world.most_running == 1  # dispatches of one world run one after another


def test_a_handle_result_times_out_with_a_timeout_error(world):
    compiled = compiled_world()
    world.gate = threading.Event()
    with compiled.prepare() as rt:
        handle = rt.submit(compiled, shared(2, ROWS, COLS), shared(2, ROWS, COLS))
        with pytest.raises(TimeoutError):
            handle.result(0.05)
        world.gate.set()
        handle.result(10)


# ------------------------------------------------------------ resident tensors


def test_alloc_tensor_is_resident_and_copies_are_staged(world):
    compiled = compiled_world()
    x = shared(2, ROWS, COLS)
    with compiled.prepare() as rt:
        out = rt.alloc_tensor((2, ROWS, COLS), torch.float32)
        assert isinstance(out, DeviceTensor) and out.worker_id == 0
        rt(x, out)
        back = torch.empty(2, ROWS, COLS)  # an ordinary tensor made after prepare()
        rt.copy_from(back, out.data_ptr, out.nbytes)
        torch.testing.assert_close(back, expected(x))
        upload = torch.full((2, ROWS, COLS), 3.0)
        rt.copy_to(out.data_ptr, upload.data_ptr(), upload.nbytes)
        rt.copy_from(back.data_ptr(), out.data_ptr, out.nbytes)
        assert torch.equal(back, upload)
        with pytest.raises(DeviceTensorError, match="not inside a buffer of worker 1"):
            rt.copy_from(back, out.data_ptr, out.nbytes, worker_id=1)
        with pytest.raises(DeviceTensorError, match="run past the end"):
            rt.copy_from(torch.empty(2 * ROWS * COLS + 4), out.data_ptr, out.nbytes + 4)
        rt.free_tensor(out)
        assert out.freed
        with pytest.raises(DeviceTensorError, match="freed"):
            rt(x, out)


def test_alloc_tensor_init_and_worker_id(world):
    compiled = compiled_world()
    with compiled.prepare() as rt:
        init = torch.arange(8, dtype=torch.float32)
        t = rt.alloc_tensor((2, 4), torch.float32, init=init, worker_id=1)
        assert t.worker_id == 1 and t.shape == (2, 4)
        with pytest.raises(DeviceTensorError, match="lives on worker 1"):
            rt.free_tensor(t, worker_id=0)
        rt.free_tensor(t, worker_id=1)
        for bad in (2, -1, True):
            with pytest.raises(DeviceTensorError, match="worker_id"):
                rt.alloc_tensor((2,), torch.float32, worker_id=bad)
        with pytest.raises(DeviceTensorError, match="elements"):
            rt.alloc_tensor((3,), torch.float32, init=init)


def test_a_resident_tensor_of_another_worker_is_rejected(world):
    compiled = compiled_world()
    with compiled.prepare() as one, compiled.prepare() as other:
        theirs = other.alloc_tensor((2, ROWS, COLS), torch.float32)
        with pytest.raises(DeviceTensorError, match="not allocated by this"):
            one(shared(2, ROWS, COLS), theirs)


def test_a_stacked_tensor_puts_shard_i_on_worker_i(world):
    compiled = compiled_world()
    x = shared(2, ROWS, COLS)
    with compiled.prepare() as rt:
        stacked = rt.alloc_stacked_tensor(torch.zeros(2, ROWS, COLS))  # made after prepare()
        assert isinstance(stacked, StackedDeviceTensor)
        assert [s.worker_id for s in stacked.shards] == [0, 1]
        rt(x, stacked)
        back = torch.empty(2, ROWS, COLS)
        rt.copy_stacked_from(stacked, back)
        torch.testing.assert_close(back, expected(x))
        torch.testing.assert_close(_tensor_from_continuous(stacked.shards[1]), expected(x)[1])
        swapped = rt.alloc_stacked_tensor(torch.zeros(2, 3), worker_ids=[1, 0])
        assert [s.worker_id for s in swapped.shards] == [1, 0]
        with pytest.raises(DeviceTensorError, match="distinct workers"):
            rt.alloc_stacked_tensor(torch.zeros(2, 3), worker_ids=[1, 1])
        with pytest.raises(DeviceTensorError, match="3 shard"):
            rt.alloc_stacked_tensor(torch.zeros(3, 3))
        with pytest.raises(DeviceTensorError, match="host_out is"):
            rt.copy_stacked_from(stacked, torch.empty(2, ROWS))
        rt.free_stacked_tensor(stacked)
        assert stacked.freed and all(s.freed for s in stacked.shards)


# ------------------------------------------------------------ persistent windows


def test_persistent_windows_are_kept_and_zeroed_between_requests(world):
    compiled = compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS)
    with compiled.prepare(persistent=True) as rt:
        for _ in range(3):
            rt(x, y)
            torch.testing.assert_close(y, expected(x))  # every request sees fresh windows
        stores = {id(call["options"]["windows"]) for call in world.calls}
        assert len(stores) == 1
        assert world.calls[0]["options"]["windows"].resets == 2  # not before the first


def test_persistent_windows_without_reset_keep_their_contents(world):
    compiled = compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as rt:
        for step in range(3):
            rt(x, y)
            torch.testing.assert_close(y, expected(x, offset=step))


def test_persistent_windows_are_kept_per_program(world):
    a, b = compiled_world(), compiled_world()
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS)
    with a.prepare(extra_compiled=[b], persistent=True, reset_persistent_windows=False) as rt:
        rt.run(a, x, y)
        rt.run(b, x, y)
        torch.testing.assert_close(y, expected(x))  # b's windows are its own
        rt.run(a, x, y)
        torch.testing.assert_close(y, expected(x, offset=1))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"persistent": 1}, "persistent"),
        ({"reset_persistent_windows": False}, "persistent=False"),
        ({"startup_timeout_s": 0}, "startup_timeout_s"),
        ({"startup_timeout_s": float("inf")}, "startup_timeout_s"),
        ({"config": "a2a3sim"}, "takes a RunConfig"),
    ],
)
def test_bad_prepare_options_are_value_errors(world, kwargs, words):
    with pytest.raises(ValueError, match=words):
        compiled_world().prepare(**kwargs)


# ------------------------------------------------------------ SubWorker callbacks


def test_callbacks_bind_the_abstract_sub_workers(world):
    compiled = compiled_world(sub_worker=True)
    seen: list[Any] = []
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS)
    with compiled.prepare(
        callbacks={"inspect": lambda args: seen.append(_tensor_from_continuous(args[0]).sum())}
    ) as rt:
        rt(x, y)
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], expected(x).sum())


def test_a_missing_callback_is_a_value_error_at_prepare(world):
    compiled = compiled_world(sub_worker=True)
    with pytest.raises(ValueError, match="'inspect' has no implementation"):
        compiled.prepare()
    with pytest.raises(ValueError, match="'inspect' of world_scale has no implementation"):
        compiled(torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS))
    assert world.calls == []


def test_callbacks_must_name_sub_workers_and_be_callable(world):
    compiled = compiled_world(sub_worker=True, abstract=False)
    with pytest.raises(ValueError, match="'inpsect', which is no HOST SubWorker"):
        compiled.prepare(callbacks={"inpsect": print})
    with pytest.raises(ValueError, match="not a function"):
        compiled.prepare(callbacks={"inspect": 3})
    with compiled.prepare(sub_worker_overrides={"inspect": lambda args: None}) as rt:
        assert "inspect" in rt.callbacks


def test_tensor_from_continuous_reads_callback_arguments():
    t = torch.arange(4.0)
    assert _tensor_from_continuous(t) is t
    assert _tensor_from_continuous(2.5).item() == 2.5
    import numpy as np

    assert torch.equal(_tensor_from_continuous(np.arange(3)), torch.arange(3))
    with pytest.raises(TypeError, match="holds no tensor"):
        _tensor_from_continuous(object())


# ------------------------------------------------------------ reports


def _world_report(ranks: int) -> WorldReport:
    chips = tuple(
        RunReport(
            "a2a3sim",
            1000.0,
            total_cycles=500,
            timeline=[
                Slice(f"cg{g}.AIV0", 10 * g, 100 + r, "tile.add", "VECTOR", task="k", pipe="VECTOR")
                for g in range(6)
            ],
            busy_cycles={f"cg{g}.AIV0": 100 + r for g in range(6)},
        )
        for r in range(ranks)
    )
    transfers = tuple(
        LinkTransfer(r, (r + 1) % ranks, 4096, 100, 180, "dist.put", "k.py:3") for r in range(ranks)
    )
    return WorldReport(chips, 500, 1.0, transfers, device_ids=tuple(range(10, 10 + ranks)))


def test_world_report_summary_and_repr():
    report = _world_report(2)
    assert repr(report).startswith("WorldReport(2 rank(s), 500 modeled cycles")
    assert "\n" not in repr(report)
    text = report.summary()
    assert "world of 2 chip(s)" in text and "rank1 (device 11)" in text
    assert "link rank0 -> rank1: 4096 bytes in 1 transfer(s)" in text
    assert report.link_bytes() == {(0, 1): 4096, (1, 0): 4096}


def test_the_world_trace_puts_each_chip_in_its_own_process_with_the_links():
    trace = world_trace(_world_report(3), "ring")
    events = trace["traceEvents"]
    processes = {
        e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert sorted(processes.values()) == [
        "interconnect (chip-to-chip links)",
        "rank0 (device 10)",
        "rank1 (device 11)",
        "rank2 (device 12)",
    ]
    by_name = {v: k for k, v in processes.items()}
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert (by_name["rank2 (device 12)"], "rank2/cg0.AIV0 VECTOR") in threads
    assert (by_name["interconnect (chip-to-chip links)"], "rank0 -> rank1") in threads
    links = [e for e in events if e.get("cat") == "link"]
    assert len(links) == 3 and links[0]["args"]["bytes"] == 4096 and links[0]["args"]["source"] == "k.py:3"
    slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "vector"]
    assert {e["pid"] for e in slices} == {by_name[f"rank{r} (device {10 + r})"] for r in range(3)}
    json.dumps(trace)


def test_the_world_swimlane_stays_readable_at_eight_chips(tmp_path):
    figure = draw_world_swimlane(_world_report(8), tmp_path / "swimlane.png", "eight")
    width, height = figure.get_size_inches() * figure.dpi
    assert (tmp_path / "swimlane.png").stat().st_size > 0
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert "rank7 sends" in labels and "rank7/2 more cores" in labels
    assert height < 1400 and width < 1600  # 8 chips fit a screen


def test_a_profiled_run_writes_the_world_profile(world, tmp_path):
    compiled = compiled_world()
    cfg = RunConfig(platform="worldsim", profile_dir=tmp_path / "prof")
    compiled(torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS), config=cfg)
    files = compiled.last_world_profile
    assert files is not None and files.trace.is_file() and files.swimlane.is_file()
    assert "world of 2 chip(s)" in files.summary.read_text()


def test_a_distributed_compiled_program_is_a_compiled_program():
    assert issubclass(DistributedCompiledProgram, CompiledProgram)


# ------------------------------------------------------------ ranks as processes


class FakeRankWorld(FakeWorld):
    """A backend that simulates one rank at a time (``run_rank``): the worker runs each rank in
    its own process. Rank r writes its slice ``y[r] = x[r] * (r + 1) + (its store's count)``,
    tells the next rank at cycle 5, and notes its process id in its report."""

    name = "ranksim"

    def link_lookahead(self, ranks: int) -> int:
        return 50

    def run_rank(self, program, args, options, rank, ranks, link):
        import os

        x, y = args[0], args[1]
        store = options.get("windows")
        before = store.counts[rank] if store is not None else 0
        y[rank] = x[rank] * (rank + 1) + before
        if store is not None:
            store.counts[rank] += 1
        link.send((rank + 1) % ranks, ("hello", rank), 5)
        link.transfers.append(LinkTransfer(rank, (rank + 1) % ranks, 64, 5, 55, "dist.notify"))
        heard = []
        while not link.done:
            heard += [m.payload for m in link.advance(None, finished=True)]
        for fn in options.get("callbacks", {}).values():
            fn([y[rank], rank])
        report = RunReport(self.name, 1000.0, total_cycles=100 + rank, hints=[f"pid {os.getpid()}"])
        report.outputs = ()
        assert heard == [("hello", (rank - 1) % ranks)]
        return report


@pytest.fixture
def rank_world(monkeypatch, tmp_path) -> FakeRankWorld:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_LOAD_PLUGINS", "")
    reset_registry(load_entry_points=False)
    backend = FakeRankWorld()
    register_plugin(WorldPlugin(backend), name="rank-plugin")
    yield backend
    reset_registry()


def rank_config(device_ids: Sequence[int] = (0, 1, 2)) -> RunConfig:
    return RunConfig(
        platform="ranksim",
        pipeline=(),
        verification_level=VerificationLevel.NONE,
        distributed_config=DistributedConfig(device_ids=list(device_ids)),
    )


def test_each_rank_runs_in_its_own_process_on_shared_memory(rank_world):
    import os

    compiled = compile_program(host_program(sub_worker=True, ranks=3), rank_config())
    x, y = shared(3, ROWS, COLS), shared(3, ROWS, COLS, fill=0.0)
    sums = torch.zeros(3).share_memory_()  # the callbacks' side channel home, from each rank process

    def inspect(args):
        sums[args[1]] = float(args[0].sum())

    with compiled.prepare(callbacks={"inspect": inspect}) as rt:
        assert rt.engine.in_processes
        rt(x, y)
        torch.testing.assert_close(y, expected(x))  # the ranks wrote the parent's tensors
        report = rt.last_report
    pids = {hint for chip in report.chips for hint in chip.hints}
    assert len(pids) == 3 and f"pid {os.getpid()}" not in pids
    assert report.total_cycles == 102 and len(report.transfers) == 3
    torch.testing.assert_close(sums, y.sum(dim=(1, 2)))


def test_persistent_windows_live_in_each_rank_process(rank_world):
    compiled = compile_program(host_program(), rank_config((0, 1)))
    x, y = shared(2, ROWS, COLS), shared(2, ROWS, COLS)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as rt:
        for step in range(3):
            rt(x, y)
            torch.testing.assert_close(y, expected(x, offset=step))
    with compiled.prepare(persistent=True) as rt:
        for _ in range(2):
            rt(x, y)
            torch.testing.assert_close(y, expected(x))


def test_a_one_shot_call_runs_the_ranks_in_processes_too(rank_world):
    compiled = compile_program(host_program(), rank_config((5, 6)))
    x, y = torch.randn(2, ROWS, COLS), torch.zeros(2, ROWS, COLS)  # torch shares them on the way
    compiled(x, y)
    torch.testing.assert_close(y, expected(x))
    assert compiled.last_report.device_ids == (5, 6)
