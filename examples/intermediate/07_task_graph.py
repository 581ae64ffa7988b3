"""The task graph: which tasks wait for which, and which run at once on different core groups.

Each ``pl.at`` scope is one task. The edges come from the tensors: ``combine`` reads ``scratch``,
which ``exp_x`` writes, so it waits for ``exp_x`` (an inferred edge). ``workspace`` is made with
``manual_dep=True``, so no edge is inferred through it: ``halve_y`` reads what ``square_y`` wrote
there only because it declares ``deps=[squared]``. Nothing orders ``exp_x`` and ``square_y``, so
they run at once on core groups 0 and 1, and so do ``combine`` and ``halve_y``.

    python examples/intermediate/07_task_graph.py [-p a2a3sim] [--profile [DIR]]

``--profile`` writes a trace (``trace.json``: each task on its core group's tasks thread, a flow
arrow per edge) and a swimlane; see docs/task-graph.md.
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

R, C = 128, 128
T = pl.Tensor[[R, C], pl.FP32]


@pl.jit
def task_graph(x: T, y: T, out: pl.Out[T], y_half: pl.Out[T]):
    scratch = pl.create_tensor([R, C], pl.FP32)  # edges through it are inferred
    workspace = pl.create_tensor([R, C], pl.FP32, manual_dep=True)  # only declared edges
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_x"):
        scratch[:] = pl.exp(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="square_y") as squared:
        workspace[:] = pl.mul(y, y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="combine"):  # waits for exp_x: reads scratch
        out[:] = pl.add(scratch, x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="halve_y", deps=[squared]):  # the declared edge
        y_half[:] = pl.mul(workspace, 0.5)
    return out, y_half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="pypto_profile/task_graph",
        help="write trace.json and swimlane.png here",
    )
    args = parser.parse_args()
    config = RunConfig(platform=args.platform, profile_dir=args.profile)

    torch.manual_seed(0)
    x, y = torch.randn(R, C), torch.randn(R, C)
    out, y_half = torch.zeros(R, C), torch.zeros(R, C)
    task_graph(x, y, out, y_half, config=config)
    torch.testing.assert_close(out, x.exp() + x, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y_half, y * y * 0.5, rtol=1e-5, atol=1e-5)

    report = task_graph.last_report
    names = {t.task_id: t.kernel for t in report.tasks}
    for task in report.tasks:
        print(
            f"task {task.task_id} {task.kernel:<9} core group {task.core_group}  "
            f"modeled cycles {task.start_cycle:>6} .. {task.end_cycle:>6}"
        )
    for edge in report.edges:
        why = "declared deps=" if edge.declared else f"inferred through {edge.tensor}"
        print(f"edge {names[edge.src]} -> {names[edge.dst]}: {why}")
    busy = sum(t.end_cycle - t.start_cycle for t in report.tasks)
    print(f"makespan {report.total_cycles} modeled cycles; the tasks alone take {busy}")
    if args.profile:
        print(f"profile written to {args.profile}")
    print("OK")


if __name__ == "__main__":
    main()
