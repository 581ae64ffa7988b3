"""Autotuning: pick the seed kernel's ring depth, split mode, row tile and pipeline stages by
modeled time.

The kernel is the one of 03_mixed_kernel.py (``out = a @ b + bias``, cube and vector in one scope)
with its rows in a loop of ``tile_m``-row tiles. ``@pl.autotune`` tries every config
(tile_m x slot_num x split x stage, 16 in all) on copies of the arguments, keeps the one with
the fewest modeled cycles, and runs it. The choice is kept on disk: a second run of this script
takes it from the tuning cache and runs no trial. A config that does not fit (tile_m=128 with
a 4-slot ring under UP_DOWN overflows the vector memory) is recorded as infeasible, with the
reason; the sweep goes on. See docs/tuning.md.

    python examples/advanced/04_autotune.py [--m 512] [--workers N] [--retune] [-o DIR] [-p a2a3sim]

``--workers N`` sweeps on a Dask LocalCluster of N worker processes (needs
``pip install "pypto-lang[tune]"``; 0, the default, sweeps in this process). ``--retune`` sweeps
even when the choice is cached. ``-o DIR`` writes DIR/results.csv and DIR/cycles.png.
"""

import argparse
from pathlib import Path

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

CONFIGS = [
    pl.Config(tile_m=tile_m, slot_num=slot_num, split=split, stage=stage)
    for tile_m in (64, 128)
    for slot_num in (2, 4)
    for split in (pl.SplitMode.UP_DOWN, pl.SplitMode.NONE)
    for stage in (1, 2)
]

# What the kernel reads when it runs without the tuner (``tuned_matmul_bias.fn``); each config's
# values shadow these.
tile_m, slot_num, split, stage = 128, 2, pl.SplitMode.UP_DOWN, 1


@pl.autotune(configs=CONFIGS, key=["M"])
@pl.jit
def tuned_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    M, _ = a.shape  # key=["M"]: a new row count tunes again
    with pl.at(
        level=pl.Level.CORE_GROUP,
        optimizations=[pl.split(split), pl.cross_core_slot(slot_num=slot_num)],
        name_hint="mixed",
    ):
        for i in pl.pipeline(0, M, tile_m, stage=stage):
            acc = pl.matmul(a[i : i + tile_m, :], b, out_dtype=pl.FP32)  # cube (AIC)
            out[i : i + tile_m, :] = pl.add(acc, bias[i : i + tile_m, :])  # vector (AIV)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--m", type=int, default=512, help="rows of a, bias and out, a multiple of 128 (default: 512)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="sweep on a Dask LocalCluster of this many worker processes (default: 0, in this process)",
    )
    parser.add_argument("--retune", action="store_true", help="sweep even when the choice is cached")
    parser.add_argument("-o", "--out", metavar="DIR", help="write DIR/results.csv and DIR/cycles.png")
    parser.add_argument(
        "-p",
        "--platform",
        help="platform to run on (default: the session's, e.g. `pypto run -p`; else a2a3sim)",
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    a = torch.randn(args.m, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    bias = torch.randn(args.m, 128, dtype=torch.float32)
    out = torch.zeros(args.m, 128, dtype=torch.float32)
    config = RunConfig(platform=args.platform)

    if args.workers or args.retune:
        # Sweep now, on the workers asked for, whatever the disk cache holds.
        tuned_matmul_bias.tune(a, b, bias, out, config=config, workers=args.workers)
    # The first call for this M sweeps (unless tune() just did, or the disk cache has the
    # choice), then runs the best config on a, b, bias and out.
    tuned_matmul_bias(a, b, bias, out, config=config)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)

    report = tuned_matmul_bias.report
    print(report.table())
    best = report.best
    print(f"best config: {tuned_matmul_bias.best_config}")
    # Modeled time is deterministic: the run on the caller's tensors took what its trial took.
    assert best is not None and tuned_matmul_bias.last_report.total_cycles == best.cycles
    print(f"this run: {tuned_matmul_bias.last_report.total_cycles} modeled cycles")
    if args.out:
        directory = Path(args.out)
        directory.mkdir(parents=True, exist_ok=True)
        print(
            f"wrote {report.write_csv(directory / 'results.csv')} and {report.plot(directory / 'cycles.png')}"
        )
    print("OK")


if __name__ == "__main__":
    main()
