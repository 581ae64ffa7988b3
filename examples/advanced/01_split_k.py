"""Split-K: one matmul as four tasks that run at once and add their partial products atomically.

``c = a @ b`` with M = N = 64 and K = 512: a ``zero_c`` task clears ``c``, then a ``pl.parallel``
loop makes one task per 128-wide slice of K, each computing ``a[:, k0:k0+128] @ b[k0:k0+128, :]``
and adding it into ``c`` with ``pl.assemble(..., atomic=pl.AtomicType.Add)``. Each partial task
waits for ``zero_c`` (it writes ``c`` before they add into it) but not for the others: the loop
asserts that its iterations are independent, and atomic adds commute, so the four run at once on
four core groups.

    python examples/advanced/01_split_k.py [-p a2a3sim] [--profile [DIR]]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M, N, K = 64, 64, 512
SPLITS = 4
KB = K // SPLITS


@pl.jit
def split_k(
    a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32], c: pl.Out[pl.Tensor[[M, N], pl.FP32]]
):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="zero_c"):
        c[:] = pl.full([M, N], pl.FP32, 0.0)
    for k in pl.parallel(SPLITS):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="partial"):
            part = pl.matmul(a[:, k * KB : k * KB + KB], b[k * KB : k * KB + KB, :])
            pl.assemble(c, part, [0, 0], atomic=pl.AtomicType.Add)
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    parser.add_argument(
        "--profile", nargs="?", const="pypto_profile/split_k", help="write trace.json and swimlane.png here"
    )
    args = parser.parse_args()
    config = RunConfig(platform=args.platform, profile_dir=args.profile)

    torch.manual_seed(0)
    a, b = torch.randn(M, K) / 8, torch.randn(K, N) / 8
    c = torch.full((M, N), float("nan"))  # zero_c must clear it
    split_k(a, b, c, config=config)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)

    report = split_k.last_report
    for task in report.tasks:
        print(
            f"task {task.task_id} {task.kernel:<7} core group {task.core_group}  "
            f"modeled cycles {task.start_cycle:>6} .. {task.end_cycle:>6}"
        )
    busy = sum(t.end_cycle - t.start_cycle for t in report.tasks)
    print(f"makespan {report.total_cycles} modeled cycles; the tasks alone take {busy}")
    print("OK")


if __name__ == "__main__":
    main()
