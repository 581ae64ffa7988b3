"""Ranks across machines through ``torch.distributed`` (gloo, ``torchrun`` conventions), tested
with several processes on this machine: each process runs the same unchanged script with
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set, simulates only its rank, and
ends with the full results and the one-process run's modeled cycles and transfers. A deadlock is
reported by every process naming every waiting rank; one rank's error ends every process at once."""

from __future__ import annotations

import importlib.util
import os
import pickle
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from pypto.runtime.distributed.processes import Message
from pypto.runtime.distributed.torchrun import TORCHRUN_ENV, decide

SCRIPT = """
import os
import pickle
import sys

import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir import VerificationLevel
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig

NR = pl.dynamic("NR")
W = 64


@pl.jit.incore
def neighbour_then_max(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    z: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    mine: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    ready: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
    data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    ctx = pld.get_comm_ctx(mine)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    t = pl.load(x, [0, 0], [1, W])
    doubled = pl.add(t, t)
    mine = pl.store(doubled, [0, 0], mine)
    pld.system.notify(ready, peer=(me + n - 1) % n, offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(ready, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)
    theirs = pld.tile.remote_load(mine, peer=(me + 1) % n, offsets=[0, 0], shape=[1, W])
    y = pl.store(pl.add(doubled, theirs), [0, 0], y)
    data = pl.store(t, [0, 0], data)
    reduced = pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Max, mode="mesh")
    return pl.store(pl.load(reduced, [0, 0], [1, W]), [0, 0], z)


@pl.jit
def chip(
    x: pl.Tensor[[1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    z: pl.Out[pl.Tensor[[1, W], pl.FP32]],
    mine: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    ready: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
    data: pl.InOut[pld.DistributedTensor[[1, W], pl.FP32]],
    signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
):
    return neighbour_then_max(x, y, z, mine, ready, data, signal)


@pl.jit.host
def world(
    x: pl.Tensor[[NR, 1, W], pl.FP32],
    y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]],
    z: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]],
):
    mine_buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    ready_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    data_buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
    for r in pl.range(pld.world_size()):
        signal = pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32)
        mine = pld.window(mine_buf, [1, W], dtype=pl.FP32)
        ready = pld.window(ready_buf, [1, 1], dtype=pl.INT32)
        data = pld.window(data_buf, [1, W], dtype=pl.FP32)
        chip(x[r], y[r], z[r], mine, ready, data, signal, device=r)
    return y


@pl.jit.incore
def waits_for_two(y: pl.Out[pl.Tensor[[1, 8], pl.FP32]], flag: pld.DistributedTensor[[1, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(flag)
    me = pld.rank(ctx)
    pld.system.notify(flag, peer=(me + 1) % pld.nranks(ctx), offsets=[0, 0], value=1, op=pld.NotifyOp.Set)
    pld.system.wait(flag, offsets=[0, 0], expected=2, cmp=pld.WaitCmp.Ge)
    return y


@pl.jit
def waits_chip(y: pl.Out[pl.Tensor[[1, 8], pl.FP32]], flag: pld.DistributedTensor[[1, 1], pl.INT32]):
    return waits_for_two(y, flag)


@pl.jit.host
def stuck(y: pl.Out[pl.Tensor[[NR, 1, 8], pl.FP32]]):
    flags = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        flag = pld.window(flags, [1, 1], dtype=pl.INT32)
        waits_chip(y[r], flag, device=r)
    return y


@pl.jit.incore
def reads_past(y: pl.Out[pl.Tensor[[1, W], pl.FP32]], win: pld.DistributedTensor[[1, W], pl.FP32]):
    ctx = pld.get_comm_ctx(win)
    me = pld.rank(ctx)
    t = pld.tile.remote_load(win, peer=0, offsets=[0, me * W], shape=[1, W])
    return pl.store(t, [0, 0], y)


@pl.jit
def reads_chip(y: pl.Out[pl.Tensor[[1, W], pl.FP32]], win: pld.DistributedTensor[[1, W], pl.FP32]):
    return reads_past(y, win)


@pl.jit.host
def past_the_end(y: pl.Out[pl.Tensor[[NR, 1, W], pl.FP32]]):
    buf = pld.alloc_window_buffer([1, W], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        win = pld.window(buf, [1, W], dtype=pl.FP32)
        reads_chip(y[r], win, device=r)
    return y


def config(ranks):
    # BASIC: the round trip of the printer loses a run-time window extent's name (a language bug
    # this test is not about).
    return RunConfig(
        distributed_config=DistributedConfig(device_ids=list(range(ranks))),
        verification_level=VerificationLevel.BASIC,
    )


def summary(report):
    return (
        [chip.total_cycles for chip in report.chips],
        [(t.src, t.dst, t.nbytes, t.start, t.end, t.op) for t in report.transfers],
        report.total_cycles,
    )


def matching(ranks, seed, whole_world_here=False):
    torch.manual_seed(seed)  # each process its own inputs: process 0's are the host's
    x = torch.randn(ranks, 1, W)
    y, z = torch.zeros(ranks, 1, W), torch.zeros(ranks, 1, W)
    if whole_world_here:  # the backend's run_world: every rank in this process, one event loop
        compiled = world.compile(x, y, z, config=config(ranks))
        compiled.run_world([x, y, z], compiled.config)
        return x, y, z, summary(compiled.last_report)
    world(x, y, z, config=config(ranks))
    return x, y, z, summary(world.last_report)


def main(mode, ranks, out):
    rank = int(os.environ["RANK"])
    try:
        if mode == "match":
            result = ("ok", matching(ranks, seed=rank))
        elif mode == "deadlock":
            stuck(torch.zeros(ranks, 1, 8), config=config(ranks))
            result = ("ok", None)
        elif mode == "oob":
            past_the_end(torch.zeros(ranks, 1, W), config=config(ranks))
            result = ("ok", None)
        elif mode == "worker":
            torch.manual_seed(rank)
            x = torch.randn(ranks, 1, W).share_memory_()
            y, z = torch.zeros(ranks, 1, W).share_memory_(), torch.zeros(ranks, 1, W).share_memory_()
            compiled = world.compile(x, y, z, config=config(ranks))
            steps = []
            with compiled.prepare(persistent=True) as rt:
                for _ in range(2):
                    x.mul_(-2.0)
                    rt(x, y, z)
                    steps.append((x.clone(), y.clone(), z.clone(), summary(rt.last_report)))
            result = ("ok", steps)
        elif mode == "own_group":
            import torch.distributed as dist

            dist.init_process_group("gloo")  # the user's group: PyPTO uses it
            group = dist.group.WORLD
            result = ("ok", matching(ranks, seed=rank))
            assert dist.group.WORLD is group and dist.get_world_size() == ranks
            dist.destroy_process_group()
        elif mode == "die":
            matching(ranks, seed=rank)
            if rank == 1:
                os._exit(3)
            matching(ranks, seed=rank)
            result = ("ok", None)
    except Exception as err:
        result = ("error", type(err).__name__, str(err))
    with open(out.format(rank=rank), "wb") as f:
        pickle.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("torchrun") / "ranks_script.py"
    path.write_text(SCRIPT)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(script: Path, mode: str, ranks: int, timeout: float = 60.0) -> tuple[list[Any], float]:
    """``ranks`` processes of ``script`` with the torchrun variables set; each one's pickled
    result, and the seconds they took."""
    port = free_port()
    out = str(script.parent / f"{mode}{ranks}-{{rank}}.pkl")
    procs = []
    start = time.monotonic()
    for rank in range(ranks):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(ranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "PYPTO_TORCHRUN_TIMEOUT_S": "20",
            "OMP_NUM_THREADS": "1",
        }
        env.pop(TORCHRUN_ENV, None)
        procs.append(
            subprocess.Popen(
                [sys.executable, str(script), mode, str(ranks), out],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
        )
    try:
        for proc in procs:
            proc.wait(timeout=timeout)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    seconds = time.monotonic() - start
    results = []
    for rank, proc in enumerate(procs):
        path = Path(out.format(rank=rank))
        if not path.exists():
            results.append(("no result", proc.returncode, proc.stdout.read().decode() if proc.stdout else ""))
            continue
        results.append(pickle.loads(path.read_bytes()))
    return results, seconds


def load(script: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_process(script: Path, ranks: int) -> Any:
    """The same program run in this process (the whole world on one modeled clock)."""
    return load(script, "ranks_script_one_process").matching(ranks, seed=0, whole_world_here=True)


@pytest.mark.parametrize("ranks", [2, 3])
def test_processes_of_a_torchrun_launch_give_the_one_process_run(script, ranks):
    x, y, z, (cycles, transfers, total) = one_process(script, ranks)
    torch.testing.assert_close(y, 2 * x + 2 * torch.roll(x, -1, dims=0))
    torch.testing.assert_close(z, x.max(dim=0, keepdim=True).values.expand(ranks, 1, x.shape[-1]))
    results, _ = launch(script, "match", ranks)
    for rank, result in enumerate(results):
        assert result[0] == "ok", (rank, result)
        px, py, pz, (p_cycles, p_transfers, p_total) = result[1]
        assert torch.equal(px, x)  # process 0's inputs are the host's, in every process
        assert torch.equal(py, y) and torch.equal(pz, z)  # every rank's writes reached every process
        assert p_cycles == cycles and p_total == total
        # the same transfers (a world run lists them as its links carried them, processes by
        # start cycle and sender)
        assert sorted(p_transfers) == sorted(transfers) and len(transfers) > 0


def test_a_process_group_the_script_made_is_used(script):
    x, y, z, reference = one_process(script, 2)
    results, _ = launch(script, "own_group", 2)
    for result in results:
        assert result[0] == "ok", result
        px, py, pz, summary = result[1]
        assert torch.equal(px, x) and torch.equal(py, y) and torch.equal(pz, z)
        assert summary[0] == reference[0] and summary[2] == reference[2]
        assert sorted(summary[1]) == sorted(reference[1])


def test_a_launch_without_its_master_address_is_a_config_error(script, monkeypatch):
    from pypto.ir.errors import ConfigError

    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    monkeypatch.delenv(TORCHRUN_ENV, raising=False)
    with pytest.raises(ConfigError, match="MASTER_ADDR, MASTER_PORT are not set") as err:
        load(script, "ranks_script_master").matching(2, seed=0)
    assert "torchrun --nproc-per-node" in str(err.value)


def test_a_prepared_worker_dispatches_each_rank_in_its_process(script):
    results, _ = launch(script, "worker", 2)
    assert results[0][0] == "ok" and results[1][0] == "ok", results
    assert len(results[0][1]) == 2
    for mine, theirs in zip(results[0][1], results[1][1], strict=True):
        x, y, z, summary = mine
        torch.testing.assert_close(y, 2 * x + 2 * torch.roll(x, -1, dims=0))
        torch.testing.assert_close(z, x.max(dim=0, keepdim=True).values.expand(2, 1, x.shape[-1]))
        assert all(torch.equal(a, b) for a, b in zip(mine[:3], theirs[:3], strict=True))
        assert summary == theirs[3] and len(summary[0]) == 2


def test_a_deadlock_is_reported_by_every_process_naming_every_waiting_rank(script):
    results, _ = launch(script, "deadlock", 2)
    for result in results:
        assert result[0] == "error" and result[1] == "DeadlockError", result
        assert "rank0/" in result[2] and "rank1/" in result[2]
        assert ">= 2" in result[2] or "2" in result[2]
    assert results[0] == results[1]


def test_one_ranks_error_ends_every_process_with_that_error(script):
    results, seconds = launch(script, "oob", 2)
    for result in results:
        assert result[0] == "error" and result[1] == "OutOfBoundsError", result
    assert results[0] == results[1]
    assert seconds < 40


def test_a_process_that_dies_does_not_hang_the_others(script):
    results, seconds = launch(script, "die", 2)
    assert results[1][0] == "no result" and results[1][1] == 3
    assert results[0][0] == "error" and results[0][1] == "ExchangeError", results[0]
    assert seconds < 45


def test_a_world_size_unlike_the_programs_rank_count_is_a_config_error(script, monkeypatch):
    from pypto.ir.errors import ConfigError

    module = load(script, "ranks_script_sizes")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.delenv(TORCHRUN_ENV, raising=False)
    with pytest.raises(ConfigError, match="WORLD_SIZE is 3 process") as err:
        module.matching(2, seed=0)
    assert "--nproc-per-node 2" in str(err.value) and TORCHRUN_ENV in str(err.value)


def test_the_window_decision_is_the_coordinators():
    a = Message(5, 0, 1, (1, 0))
    b = Message(3, 1, 0, (0, 1))
    assert decide([("window", [a], None, True, None), ("window", [b], 140, True, None)], 100, 100) == (
        "go",
        203,  # the earliest landing (3 + 100), then one lookahead
    )
    assert decide([("window", [], None, True, None), ("window", [], None, True, None)], 100, 100) == (
        "done",
        None,
    )
    stalled = decide([("window", [], None, False, "w0"), ("window", [], None, True, None)], 100, 100)
    assert stalled == ("stalled", ["w0", None])
    assert decide([("window", [], 5, True, None), ("error", 1)], 100, 100) == ("abort", None)
    quiet = decide([("window", [], 900, False, None), ("window", [], None, True, None)], 100, 100)
    assert quiet == ("go", 1000)  # an idle stretch is skipped
