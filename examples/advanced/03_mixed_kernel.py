"""Mixed kernels: a @ b + bias with the cube and the vector units in one scope.

Modes:
  mixed       one scope, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]
  left_right  the same scope split along columns (pl.SplitMode.LEFT_RIGHT)
  none        the same scope unsplit (pl.SplitMode.NONE): lane 0 does the vector work
  staged      the two-scope form: the matmul scope, then the add scope

    python examples/advanced/03_mixed_kernel.py [--mode mixed] [-p a2a3sim] [--slot-num 2] [--m 128]
        [--profile [DIR]]

Rows of ``a``, ``bias`` and ``out`` stream through the scope in [128, 128] tiles, so with a
large ``--m`` the cube computes the next tile's matmul while the vector lanes add the bias to
the previous one. ``--profile`` prints the modeled cycles and the cube-vector overlap and writes
a trace, a swimlane and a summary (see docs/profiling.md):

    python examples/advanced/03_mixed_kernel.py --m 4096 --profile
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig


def mixed_kernel(mode: pl.SplitMode = pl.SplitMode.UP_DOWN, slot_num: int = 2):
    """The one-scope kernel for a split mode and a ring depth."""

    @pl.jit
    def mixed_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(
            level=pl.Level.CORE_GROUP,
            optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=slot_num)],
            name_hint="mixed",
        ):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)  # cube (AIC)
            out[:] = pl.add(acc, bias)  # vector (AIV)
        return out

    return mixed_matmul_bias


mixed_matmul_bias = mixed_kernel()


@pl.jit
def staged_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_only"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector_only"):
        out[:] = pl.add(acc, bias)
    return out


MODES = {"mixed": pl.SplitMode.UP_DOWN, "left_right": pl.SplitMode.LEFT_RIGHT, "none": pl.SplitMode.NONE}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode", choices=[*MODES, "staged"], default="mixed", help="kernel form (default: mixed)"
    )
    parser.add_argument(
        "-p",
        "--platform",
        help="platform to run on (default: the session's, e.g. `pypto run -p`; else a2a3sim)",
    )
    parser.add_argument("--slot-num", type=int, default=2, help="cross-core ring depth (default: 2)")
    parser.add_argument("--m", type=int, default=128, help="rows of a, bias and out (default: 128)")
    parser.add_argument(
        "--profile",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="print modeled cycles and overlap; write trace.json, swimlane.png, chip_swimlane_records.json "
        "and summary.txt to DIR "
        "(default: ./pypto_profile/<kernel>/)",
    )
    args = parser.parse_args()

    kernel = staged_matmul_bias if args.mode == "staged" else mixed_kernel(MODES[args.mode], args.slot_num)

    torch.manual_seed(0)
    a = torch.randn(args.m, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    bias = torch.randn(args.m, 128, dtype=torch.float32)
    out = torch.zeros(args.m, 128, dtype=torch.float32)
    profile_dir = args.profile if isinstance(args.profile, str) else None
    config = RunConfig(platform=args.platform, enable_profiling=bool(args.profile), profile_dir=profile_dir)
    kernel(a, b, bias, out, config=config)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    if args.profile:
        report = kernel.last_report
        print(
            f"{args.mode}, M={args.m}: {report.total_cycles} modeled cycles "
            f"({report.total_us:.1f} modeled us), "
            f"cube-vector overlap {report.overlap:.0%} of the modeled time"
        )
        print(f"profile written to {config.profile_path(kernel.name)}")
    print("OK")


if __name__ == "__main__":
    main()
