"""A diamond of vector-only tasks: two independent branches run at once, then join.

Each ``pl.at`` scope is one task on one core group, and the task graph comes from the tensors
the scopes read and write (see docs/task-graph.md):

    shift = x - row_max(x)                      task "shift"
    e = exp(shift)           g = sigmoid(shift * t)   tasks "exp_branch", "gate_branch"
    c = e * g                                   task "combine" (the join)
    out = c / row_sum(c)                        task "normalize"

``exp_branch`` and ``gate_branch`` both read ``shift`` and nothing else, so they wait only for
``shift`` and run at the same time on two core groups; ``combine`` waits for both. The example
checks the numbers against torch, the edges in ``kernel.last_report.edges`` and that the two
branches overlapped in modeled time.

    python examples/models/02_vector_dag.py [-p a2a3sim]
"""

import argparse

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

ROWS, COLS = 256, 128
TEMPERATURE = 0.5


@pl.jit
def gated_softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    shift = pl.create_tensor([ROWS, COLS], pl.FP32)
    e = pl.create_tensor([ROWS, COLS], pl.FP32)
    g = pl.create_tensor([ROWS, COLS], pl.FP32)
    c = pl.create_tensor([ROWS, COLS], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift"):
        shift[:] = x - pl.row_max(x)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="exp_branch"):
        e[:] = pl.exp(shift)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="gate_branch"):
        g[:] = pl.sigmoid(pl.mul(shift, TEMPERATURE))
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="combine"):
        c[:] = pl.mul(e, g)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="normalize"):
        out[:] = c / pl.row_sum(c)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--platform", default="a2a3sim", help="platform to run on (default: a2a3sim)")
    config = RunConfig(platform=parser.parse_args().platform)

    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS) * 3
    out = torch.zeros(ROWS, COLS)
    gated_softmax(x, out, config=config)
    shift = x - x.amax(dim=1, keepdim=True)
    combined = shift.exp() * torch.sigmoid(shift * TEMPERATURE)
    torch.testing.assert_close(out, combined / combined.sum(dim=1, keepdim=True), rtol=1e-5, atol=1e-6)

    report = gated_softmax.last_report
    task = {t.kernel: t for t in report.tasks}
    names = {t.task_id: t.kernel for t in report.tasks}
    edges = {(names[e.src], names[e.dst]) for e in report.edges}
    assert edges == {
        ("shift", "exp_branch"),
        ("shift", "gate_branch"),
        ("exp_branch", "combine"),
        ("gate_branch", "combine"),
        ("combine", "normalize"),
    }, edges
    exp_branch, gate_branch = task["exp_branch"], task["gate_branch"]
    assert exp_branch.core_group != gate_branch.core_group
    overlap = min(exp_branch.end_cycle, gate_branch.end_cycle) - max(
        exp_branch.start_cycle, gate_branch.start_cycle
    )
    assert overlap > 0, "the independent branches should run at once"
    busy = sum(t.end_cycle - t.start_cycle for t in report.tasks)
    print(
        f"branches on core groups {exp_branch.core_group} and {gate_branch.core_group} overlap for "
        f"{overlap} modeled cycles; makespan {report.total_cycles}, the tasks alone add up to {busy}"
    )
    print("OK")


if __name__ == "__main__":
    main()
