"""A tuning sweep serially and on a 2-worker Dask LocalCluster, measured in one run.

    nox -s bench            # or: python benchmarks/tune.py [--m 16384]

64 configs of the seed kernel (``a @ b + bias``; tile_m x slot_num x split x stage), each trial a
compile and an a2a3sim run at M=16384 rows (mostly 0.1-0.6 s of wall time each), swept three ways:

1. serially in this process (torch on one thread);
2. cold: on a LocalCluster of 2 worker processes (``executor=DaskExecutor(workers=2)``, what
   ``workers=2`` does), the first in this process: the cluster's start-up is inside the time;
3. warm: the same again, on the cluster the first Dask sweep started and the process keeps (as a
   second key of a tuned kernel, or a second kernel, sweeps): start-up excluded.

The three sweeps must give identical trials (status, modeled cycles, objective per config); the
script fails if they do not. The disk cache is off, so every trial compiles and runs. Wall-clock
figures depend on the machine and its load; the modeled cycles do not.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ["PYPTO_CACHE"] = "off"  # every trial compiles; the worker processes inherit it

import torch

import pypto.language as pl
from pypto.tuning.cluster import DaskExecutor
from pypto.tuning.sweep import SerialExecutor, TuningReport

sys.path.insert(0, str(Path(__file__).parent))
from bench import ROOT, load_example, seed_args

TUNE_EXAMPLE = ROOT / "examples" / "advanced" / "04_autotune.py"

WORKERS = 2
GOAL = 0.6  # 64 trials on 2 workers within 0.6x the serial wall time
CONFIGS = [
    pl.Config(tile_m=tile_m, slot_num=slot_num, split=split, stage=stage)
    for tile_m in (32, 64, 128, 256)
    for slot_num in (1, 2, 3, 4)
    for split in (pl.SplitMode.UP_DOWN, pl.SplitMode.NONE)
    for stage in (1, 2)
]
# The kernel of examples/advanced/04_autotune.py, over these 64 configs.
KERNEL = load_example(TUNE_EXAMPLE).tuned_matmul_bias.fn
seed = pl.autotune(configs=CONFIGS, key=["M"], cache_results=False)(KERNEL)


def timed_sweep(args: tuple[torch.Tensor, ...], executor: Any) -> tuple[TuningReport, float]:
    """The report of a forced sweep on ``executor`` and its wall time in seconds."""
    start = time.perf_counter()
    report = seed.tune(*args, executor=executor, force=True)
    return report, time.perf_counter() - start


def figures(report: TuningReport) -> list[tuple[int, str, int | None, float | None]]:
    """What must not depend on where a trial ran: per config, its status, cycles and objective."""
    return [(t.index, t.status, t.cycles, t.objective) for t in report.trials]


def spin(count: int) -> float:
    """Pure-Python work: the seconds ``count`` loop steps take in this process."""
    start = time.perf_counter()
    total = 0
    for step in range(count):
        total += step * step
    return time.perf_counter() - start


def parallel_capacity(count: int = 10_000_000) -> float:
    """The wall time of the same pure-Python work in 2 processes at once against one process
    doing both in turn (0.5: two full cores; 1.0: no parallelism to be had right now)."""
    context = multiprocessing.get_context("fork")
    with context.Pool(WORKERS) as pool:
        pool.map(spin, [1000] * WORKERS)  # the processes are up before the clock starts
        start = time.perf_counter()
        pool.map(spin, [count] * WORKERS)
        both = time.perf_counter() - start
    alone = sum(spin(count) for _ in range(WORKERS))
    return both / alone


def busy(report: TuningReport) -> float:
    """The trials' own wall time, summed."""
    return sum(trial.seconds for trial in report.trials)


def workers_line(report: TuningReport) -> str:
    counts = Counter(trial.where for trial in report.trials)
    return ", ".join(f"{where}: {count}" for where, count in sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=16384, help="rows of a, bias and out (default: 16384)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    args = seed_args(options.m)
    machine = f"{platform.machine()}, {os.cpu_count()} CPU(s), python {platform.python_version()}"
    print(f"PyPTO tuning sweep — {machine}")
    print(f"torch {torch.__version__} on {torch.get_num_threads()} thread(s) in this process")
    print(f"{len(CONFIGS)} configs of the seed kernel at M={options.m} (tile_m x slot_num x split x stage)\n")

    before = parallel_capacity()
    serial, serial_s = timed_sweep(args, SerialExecutor())
    print(serial.summary())
    seconds = [trial.seconds for trial in serial.trials]
    print(
        f"  a trial: mean {statistics.mean(seconds):.2f} s, "
        f"{min(seconds):.2f}-{max(seconds):.2f} s of wall time"
    )

    cold, cold_s = timed_sweep(args, DaskExecutor(workers=WORKERS))
    print(f"cold: {cold.executor}, started for the sweep ({workers_line(cold)})")
    warm, warm_s = timed_sweep(args, DaskExecutor(workers=WORKERS))  # on the cluster the cold sweep kept
    print(f"warm: the same again, on the cluster the cold sweep started and kept ({workers_line(warm)})")
    after = parallel_capacity()

    same = figures(serial) == figures(cold) == figures(warm)
    print(f"\nidentical trials (status, modeled cycles, objective per config): {'yes' if same else 'NO'}")
    print(f"wall time of {len(CONFIGS)} trials, {WORKERS} workers against serial (goal <= {GOAL}x)")
    rows = (
        ("serial", serial, serial_s, ""),
        (f"{WORKERS} workers, start-up included (cold)", cold, cold_s, "cold"),
        (f"{WORKERS} workers, start-up excluded (warm)", warm, warm_s, "warm"),
    )
    for label, report, wall, name in rows:
        ratio = f"   {name}/serial = {wall / serial_s:.2f}x" if name else ""
        print(f"  {label:<36} {wall:6.1f} s   the trials {busy(report):5.1f} s{ratio}")
    print(
        f"  a trial on a worker, two at once, took {busy(warm) / busy(serial):.2f}x its wall time in this "
        "process (warm)"
    )
    print(
        f"  this machine: the same pure-Python work in {WORKERS} processes at once took {before:.2f}x / "
        f"{after:.2f}x (before / after the sweeps) the time of one process doing it all "
        "(0.50x: two free cores)"
    )
    if not same:
        for name, other in (("cold", cold), ("warm", warm)):
            for left, right in zip(figures(serial), figures(other), strict=True):
                if left != right:
                    print(f"  {name} differs from serial: {right} against {left}")
        sys.exit(1)


if __name__ == "__main__":
    main()
