"""Ranks on threads, with the window protocol of the runtime's RankLink (DIST_CONTRACT.md, "Ranks as
processes"): what the simulator's ``run_rank`` needs of a link, without processes, for its tests."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from pypto_sim_a2a3 import A2A3SimBackend


@dataclass(frozen=True, order=True)
class Sent:
    at: int
    src: int
    dst: int
    payload: Any = None


class Stalled(Exception):
    def __init__(self, blocked: list[Any]) -> None:
        super().__init__("stalled")
        self.blocked = blocked


class Hub:
    """The window barrier of ``n`` ranks."""

    def __init__(self, n: int, lookahead: int) -> None:
        self.n, self.lookahead = n, lookahead
        self.horizon = lookahead
        self.cond = threading.Condition()
        self.reports: dict[int, Any] = {}
        self.replies: dict[int, Any] = {}
        self.round = 0
        self.aborted = False

    def exchange(self, rank: int, report: Any) -> Any:
        with self.cond:
            if self.aborted:
                raise RuntimeError("aborted")
            self.reports[rank] = report
            mine = self.round
            if len(self.reports) == self.n:
                self.replies = self._decide()
                self.reports = {}
                self.round += 1
                self.cond.notify_all()
            while self.round == mine and not self.aborted:
                self.cond.wait()
            if self.aborted:
                raise RuntimeError("aborted")
            return self.replies[rank]

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()

    def _decide(self) -> dict[int, Any]:
        messages = sorted(m for outbox, _, _, _ in self.reports.values() for m in outbox)
        pending = [r[1] for r in self.reports.values() if r[1] is not None]
        if not messages and not pending:
            if all(r[2] for r in self.reports.values()):
                return {rank: ("done",) for rank in self.reports}
            blocked = [self.reports[rank][3] for rank in sorted(self.reports)]
            return {rank: ("stalled", blocked) for rank in self.reports}
        earliest = min([*pending, *(m.at + self.lookahead for m in messages)])
        start = max(self.horizon, earliest)
        self.horizon = start + self.lookahead
        inbox: dict[int, list[Sent]] = {rank: [] for rank in self.reports}
        for message in messages:
            inbox[message.dst].append(message)
        return {rank: ("go", self.horizon, inbox[rank]) for rank in self.reports}


class ThreadLink:
    def __init__(self, rank: int, hub: Hub) -> None:
        self.rank, self.hub = rank, hub
        self.lookahead = hub.lookahead
        self.horizon = hub.lookahead
        self.transfers: list[Any] = []
        self.outbox: list[Sent] = []
        self.done = False

    def send(self, dst: int, payload: Any, at: int) -> None:
        assert at < self.horizon, f"sent at {at}, past the horizon {self.horizon}"
        self.outbox.append(Sent(at, self.rank, dst, payload))

    def advance(self, next_event: int | None, finished: bool, blocked: Any = None) -> list[Sent]:
        reply = self.hub.exchange(self.rank, (self.outbox, next_event, finished, blocked))
        self.outbox = []
        if reply[0] == "go":
            self.horizon = reply[1]
            return list(reply[2])
        if reply[0] == "done":
            self.done = True
            return []
        raise Stalled(reply[1])


def run_ranks(program: Any, args: list[Any], ranks: int, **options: Any) -> tuple[list[Any], list[Any]]:
    """Each rank on a thread of its own through ``run_rank``: the reports in rank order and every
    rank's transfers; the first rank error is raised."""
    backend = A2A3SimBackend()
    hub = Hub(ranks, backend.link_lookahead(ranks))
    links = [ThreadLink(rank, hub) for rank in range(ranks)]
    reports: list[Any] = [None] * ranks
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            reports[rank] = backend.run_rank(program, args, options, rank=rank, ranks=ranks, link=links[rank])
        except BaseException as err:
            errors.append(err)
            hub.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    real = [e for e in errors if not (isinstance(e, RuntimeError) and str(e) == "aborted")]
    if real or errors:
        raise (real or errors)[0]
    return reports, [t for link in links for t in link.transfers]
