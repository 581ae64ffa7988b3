"""Reading a run's timeline (:class:`pypto.ir.RunReport`): which core is the host's, which core group a
core belongs to, the order cores are shown in, and the two ends of each dependency edge. The
trace, the swimlane, ``pmu.csv`` and ``scope_stats.jsonl`` all name and order things this way.

>>> group_index("cg3.AIV1"), core_order("cg3.AIV1") < core_order("cg4.AIC")  # doctest: +SKIP
(3, True)
"""

from __future__ import annotations

from pypto.ir import RunReport
from pypto.ir.backend import TaskEdge, TaskRecord

HOST = "host"  # the AICPU thread that runs the orchestration (submits tasks)
SCHEDULER = "scheduler"  # the AICPU thread that dispatches and retires tasks
# The host's threads (the backend's core names for them) -> what the pictures call them.
HOST_THREAD_NAMES = {HOST: "orchestration", SCHEDULER: "scheduler"}


def on_host(core: str) -> bool:
    """Whether ``core`` is one of the host's AICPU threads, not a core of a core group."""
    return core in HOST_THREAD_NAMES


def group_of(core: str) -> str:
    """``group_of("cg0.AIV1") == "cg0"``."""
    return core.split(".", 1)[0]


def group_index(group_or_core: str) -> int:
    """``group_index("cg2") == group_index("cg2.AIC") == 2``."""
    return int(group_of(group_or_core).removeprefix("cg"))


def lane_order(core: str) -> int:
    """A core's place in its group: AIC first (1), then the AIV lanes in order (2, 3, ...)."""
    lane = core.split(".", 1)[1]
    return 1 if lane == "AIC" else 2 + int(lane.removeprefix("AIV"))


def core_order(core: str) -> tuple[int, int]:
    """A sort key for core names: core groups in order, in each its AIC before its AIV lanes."""
    return group_index(core), lane_order(core)


def edge_name(edge: TaskEdge) -> str:
    """``via <tensor>``, or ``deps=`` for an edge declared with ``deps=``."""
    return "deps=" if edge.declared else f"via {edge.tensor}"


def edge_ends(report: RunReport) -> list[tuple[TaskRecord, TaskRecord, TaskEdge]]:
    """Each edge as (the source's last block to finish, a block of the waiting task)."""
    last: dict[int, TaskRecord] = {}
    blocks: dict[int, list[TaskRecord]] = {}
    for record in report.tasks:
        if record.task_id not in last or record.end_cycle > last[record.task_id].end_cycle:
            last[record.task_id] = record
        blocks.setdefault(record.task_id, []).append(record)
    return [
        (last[edge.src], dst, edge)
        for edge in report.edges
        if edge.src in last
        for dst in blocks.get(edge.dst, [])
    ]
