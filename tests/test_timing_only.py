"""A timing-only run (``RunConfig(timing_only=True)``, ``pypto run --timing-only``) models exactly
the time of a full run — every cycle, slice, task, ring and transfer — without computing tile
values; the scalars that steer the run (loop bounds, branches, offsets, what the host reads) are
still computed, and one that needs numbers the run did not compute is a TimingOnlyError."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import ConfigError, OutOfBoundsError, TimingOnlyError
from pypto.runtime import RunConfig, run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if "plugins" not in p.parts)
FULL = RunConfig(platform="a2a3sim")
TIMING = RunConfig(platform="a2a3sim", timing_only=True)

X = pl.Tensor[[128, 64], pl.FP32]
B = pl.Tensor[[32, 64], pl.FP32]
N = pl.Tensor[[4], pl.INT32]
X_ZEROS = torch.zeros(128, 64)


def report_parts(report):
    """What two runs of one program must agree on (as tests/test_engines_agree.py compares)."""
    return [
        report.total_cycles,
        report.tasks,
        report.edges,
        report.busy_cycles,
        report.stall_cycles,
        report.timeline,
        report.rings,
        report.transfers,
        report.submitted,
        report.heaps,
    ]


def both_ways(kernel, *args):
    """Run ``kernel`` with numbers and timing-only, each on its own copies of ``args``: the two
    reports (which must agree) and the timing-only run's arguments afterwards."""
    full = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    kernel(*full, config=FULL)
    with_numbers = kernel.last_report
    timed = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    kernel(*timed, config=TIMING)
    timing_only = kernel.last_report
    assert timing_only.timing_only and not with_numbers.timing_only
    assert report_parts(timing_only) == report_parts(with_numbers)
    return with_numbers, timed


def ints(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32)


# ---------------------------------------------------------------- every example

DRIVER = r"""
import json, random, runpy, sys
import torch
from pypto_sim_a2a3 import backend

original = backend.A2A3SimBackend.run
differ, runs = [], [0]


def parts(report):
    return [report.total_cycles, report.tasks, report.edges, report.busy_cycles, report.stall_cycles,
            report.timeline, report.rings, report.transfers, report.submitted, report.heaps]


def run(self, program, args, options):
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    timed = original(self, program, copies, {**options, "timing_only": True})
    full = original(self, program, args, options)  # the example checks these numbers
    runs[0] += 1
    if parts(timed) != parts(full) or not timed.timing_only:
        differ.append(f"{program.name}: {full.total_cycles} cycles, timing-only {timed.total_cycles}")
    return full


backend.A2A3SimBackend.run = run
for path in sys.argv[1:]:
    torch.manual_seed(0)
    random.seed(0)
    saved = list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, path.rsplit("/", 1)[0])
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.path[:] = saved
print("RESULT " + json.dumps({"runs": runs[0], "differ": differ}))
"""


def test_every_example_models_the_same_time_without_its_numbers():
    env = {"PYPTO_CACHE": "off", "PYPTO_PLATFORM": "a2a3sim"}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *map(str, EXAMPLES)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, **env},
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")][-1]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["differ"] == []
    assert result["runs"] >= len(EXAMPLES)


# ---------------------------------------------------------------- what steers is computed


@pl.jit
def running_sum(x: X, n: N, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        first = pl.load(x, [0, 0], [32, 64])
        for i, (s,) in pl.range(1, pl.read(n, [0]), init_values=(first,)):
            t = pl.load(x, [i * 32, 0], [32, 64])
            s_out = pl.yield_(pl.add(s, t))
        pl.store(s_out, [0, 0], out)
    return out


def test_a_loop_bound_read_from_a_host_tensor_steers_a_timing_only_run():
    x, out = torch.randn(128, 64), torch.full((32, 64), 7.0)
    cycles = {}
    for n in (1, 2, 4):
        report, (_, _, after) = both_ways(running_sum, x, ints(n, 0, 0, 0), out)
        cycles[n] = report.total_cycles
        assert torch.equal(after, out)  # no number was computed into the output
    assert cycles[1] < cycles[2] < cycles[4]


@pl.jit
def branch_on_an_element(x: X, out: pl.Out[B]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64])
        if pl.read(t, [0, 0]) > 0.0:  # noqa: SIM108 (the if statement is what is tested)
            r = pl.exp(pl.exp(pl.exp(t)))
        else:
            r = pl.mul(t, 2.0)
        pl.store(r, [0, 0], out)
    return out


def test_a_branch_on_a_tile_element_takes_the_arm_the_numbers_take():
    x = torch.randn(128, 64)
    cycles = {}
    for sign in (1.0, -1.0):
        x[0, 0] = sign
        report, (_, after) = both_ways(branch_on_an_element, x, torch.full((32, 64), 7.0))
        cycles[sign] = report.total_cycles
        assert bool((after == 7.0).all())
    assert cycles[1.0] > cycles[-1.0]  # three exps against one mul


@pl.jit
def gather_blocks(x: X, table: N, out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            block = pl.read(table, [i])
            t = pl.load(x, [block * 32, 0], [32, 64])
            pl.store(pl.exp(t), [i * 32, 0], out)
    return out


def test_an_offset_read_from_a_block_table_places_each_access():
    x = torch.randn(128, 64)
    report, (_, _, after) = both_ways(gather_blocks, x, ints(3, 1, 2, 0), torch.zeros(128, 64))
    assert torch.equal(after, torch.zeros(128, 64))
    reordered, _ = both_ways(gather_blocks, x, ints(0, 0, 0, 0), torch.zeros(128, 64))
    assert report.total_cycles > 0 and reordered.total_cycles > 0


def test_an_offset_outside_the_tensor_is_the_same_error_without_numbers():
    x, out = torch.randn(128, 64), torch.zeros(128, 64)
    for config in (FULL, TIMING):
        with pytest.raises(OutOfBoundsError, match=r"region \[160:192\] is outside dim 0"):
            gather_blocks(x, ints(0, 5, 0, 0), out, config=config)


TABLE = pl.Tensor[[16], pl.INT32]
ROWS = pl.Tensor[[512, 64], pl.FP32]


@pl.jit
def spmd_gather(x: ROWS, table: TABLE, out: pl.Out[ROWS]):
    with pl.spmd(16, name_hint="gather"):
        block = pl.get_block_idx()
        row = pl.read(table, [block])  # each block's offset, from a host tensor
        t = pl.load(x, [row * 32, 0], [32, 64])
        pl.store(pl.exp(t), [block * 32, 0], out)
    return out


def test_the_blocks_of_an_spmd_launch_read_their_own_offsets():
    x, table = torch.randn(512, 64), torch.randperm(16).to(torch.int32)
    report, (_, _, after) = both_ways(spmd_gather, x, table, torch.zeros(512, 64))
    assert len(report.tasks) == 16 and torch.equal(after, torch.zeros(512, 64))


def test_a_late_block_out_of_bounds_is_the_same_error_without_numbers():
    x, table = torch.randn(512, 64), torch.arange(16, dtype=torch.int32)
    table[13] = 16
    messages = []
    for config in (FULL, TIMING):
        with pytest.raises(OutOfBoundsError) as caught:
            spmd_gather(x, table, torch.zeros(512, 64), config=config)
        messages.append(str(caught.value))
    assert "region [512:544] is outside dim 0" in messages[0] and messages[0] == messages[1]


@pl.jit
def spmd_shift(x: ROWS, out: pl.Out[ROWS], shift: int):
    with pl.spmd(16, name_hint="shift"):
        block = pl.get_block_idx()
        t = pl.load(x, [(block + shift) * 32, 0], [32, 64])  # the blocks' numbers walk together
        pl.store(pl.exp(t), [block * 32, 0], out)
    return out


def test_batched_blocks_take_the_same_time_and_checks_without_numbers():
    x = torch.randn(512, 64)
    report, (_, after, _) = both_ways(spmd_shift, x, torch.zeros(512, 64), 0)
    assert len(report.tasks) == 16 and torch.equal(after, torch.zeros(512, 64))
    messages = []
    for config in (FULL, TIMING):
        with pytest.raises(OutOfBoundsError) as caught:
            spmd_shift(x, torch.zeros(512, 64), 1, config=config)
        messages.append(str(caught.value))
    assert "region [512:544] is outside dim 0" in messages[0] and messages[0] == messages[1]


SEQ = pl.Tensor[[4], pl.INT32]


@pl.jit
def per_sequence(x: X, lens: SEQ, out: pl.Out[X]):
    for b in pl.range(pl.read(lens, [0])):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [b * 32, 0], [32, 64])
            pl.store(pl.exp(t), [b * 32, 0], out)
    return out


def test_the_host_reads_its_own_tensors_for_control_flow():
    x = torch.randn(128, 64)
    tasks = {}
    for n in (1, 3):
        report, _ = both_ways(per_sequence, x, ints(n, 0, 0, 0), torch.zeros(128, 64))
        tasks[n] = len(report.tasks)
    assert tasks == {1: 1, 3: 3}


# ---------------------------------------------------------------- what cannot be steered


@pl.jit
def count_then_loop(x: X, counts: pl.Out[N], out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.write(counts, [0], 3)
    for b in pl.range(pl.read(counts, [0])):  # the host reads what the task wrote
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [b * 32, 0], [32, 64])
            pl.store(t, [b * 32, 0], out)
    return out


def test_the_host_reading_what_a_timing_only_task_wrote_is_an_error_at_its_line():
    x, counts, out = torch.randn(128, 64), ints(0, 0, 0, 0), torch.zeros(128, 64)
    count_then_loop(x, counts.clone(), out.clone(), config=FULL)  # with numbers it runs
    with pytest.raises(TimingOnlyError) as caught:
        count_then_loop(x, counts, out, config=TIMING)
    err = caught.value
    assert err.message.startswith("pl.read(counts, [0]) reads counts for a value that steers")
    assert "a task of this run wrote that part of counts at" in err.message
    assert err.span is not None and "pl.range(pl.read(counts, [0]))" in err.span.source_line()
    assert "run with numbers" in err.hint


@pl.jit
def write_then_gather(x: X, table: pl.Out[N], out: pl.Out[X]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            pl.write(table, [i], 3 - i)
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(4):
            block = pl.read(table, [i])
            pl.store(pl.load(x, [block * 32, 0], [32, 64]), [i * 32, 0], out)
    return out


def test_a_kernel_reading_an_offset_a_timing_only_task_wrote_is_an_error_at_its_line():
    with pytest.raises(
        TimingOnlyError, match=r"pl\.read\(table, \[i\]\) reads table for a value that steers"
    ) as caught:
        write_then_gather(torch.randn(128, 64), ints(0, 0, 0, 0), torch.zeros(128, 64), config=TIMING)
    assert "block = pl.read(table, [i])" in caught.value.span.source_line()


@pl.jit
def maybe_negate(x: X, flags: pl.Out[N], out: pl.Out[X], write_flag: int):
    if write_flag:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="flag"):
            pl.write(flags, [1], 1)
    with pl.spmd(1, predicate=(flags[1] == 1)):  # noqa: SIM117 - the dispatch form
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="negate"):
            out[:] = pl.neg(x)
    return out


@pytest.mark.parametrize("flag", [0, 1])
def test_a_predicate_on_a_host_tensor_skips_or_runs_its_task(flag):
    report, timed = both_ways(maybe_negate, torch.randn(128, 64), ints(0, flag, 0, 0), X_ZEROS, 0)
    after = timed[2]
    assert [t.skipped for t in report.submitted] == [not flag]
    assert torch.equal(after, X_ZEROS)


def test_a_predicate_on_what_a_timing_only_task_wrote_is_an_error():
    with pytest.raises(TimingOnlyError, match=r"predicate=\(flags\[1\] == 1\) reads flags") as caught:
        maybe_negate(torch.randn(128, 64), ints(0, 0, 0, 0), X_ZEROS.clone(), 1, config=TIMING)
    assert 'name_hint="negate"' in caught.value.span.source_line()  # the task the predicate guards


def test_a_timing_only_run_computes_no_tile_op(monkeypatch):
    from pypto_sim_a2a3.engine import decode

    ran: list[str] = []

    def counted(name, impl):
        return lambda call, args: (ran.append(name), impl(call, args))[1]

    monkeypatch.setattr(decode, "SEMANTICS", {n: counted(n, f) for n, f in decode.SEMANTICS.items()})

    @pl.jit
    def scaled(x: X, out: pl.Out[X]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(4):
                t = pl.load(x, [i * 32, 0], [32, 64])
                pl.store(pl.add(pl.exp(t), 1.0), [i * 32, 0], out)
        return out

    out = torch.full((128, 64), 7.0)
    scaled(torch.randn(128, 64), out, config=TIMING)
    assert not [name for name in ran if name.startswith("tile.")], ran
    assert bool((out == 7.0).all())


# ---------------------------------------------------------------- how it is asked for


def test_timing_only_is_a_run_time_field_passed_to_the_backend():
    assert RunConfig().timing_only is False
    assert TIMING.cache_key() == FULL.cache_key()  # the same compiled program runs either way
    assert TIMING.backend_options()["timing_only"] is True
    assert "timing_only" not in FULL.backend_options()
    with pytest.raises(ConfigError, match=r"RunConfig\.timing_only takes True or False"):
        RunConfig(timing_only="yes")


@pytest.mark.parametrize(
    ("given", "named"),
    [({"golden_data_dir": "golden/"}, "golden_data_dir='golden/'"), ({"rtol": 1e-3}, "rtol=0.001")],
)
def test_a_golden_comparison_with_timing_only_is_a_config_error_naming_both(given, named):
    with pytest.raises(ConfigError, match="timing_only=True") as caught:
        RunConfig(timing_only=True, **given)
    assert named in caught.value.message


def test_a_distributed_program_refuses_timing_only():
    from pypto.ir.distributed_compiled_program import DistributedConfig

    with pytest.raises(ConfigError, match="distributed_config"):
        RunConfig(timing_only=True, distributed_config=DistributedConfig(device_ids=[0, 1]))


def test_a_golden_function_with_timing_only_is_a_config_error():
    def golden(tensors):
        tensors["out"][:] = torch.exp(tensors["x"][:32])

    with pytest.raises(ConfigError, match=r"golden comparison \(golden=\).*timing_only=True"):
        run(branch_on_an_element, torch.randn(128, 64), torch.zeros(32, 64), config=TIMING, golden=golden)
