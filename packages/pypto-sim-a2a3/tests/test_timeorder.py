"""GM accesses and ordering events are handled in modeled order (:class:`TimeOrder`): by cycle,
at one cycle core by core, each core's in program order, however the simulation met them."""

from __future__ import annotations

import heapq
import random
from itertools import permutations

from pypto_sim_a2a3.checks.timeorder import TimeOrder, natural_key


def test_events_run_by_cycle_whatever_order_they_were_queued_in():
    order, ran = TimeOrder(), []
    order.at(9000, "cg0.AIC", lambda: ran.append("store"))
    order.at(400, "cg0.AIV0", lambda: ran.append("load"))
    order.until(9000)  # a core may still meet an event at 9000
    assert ran == ["load"]
    order.until(9001)
    assert ran == ["load", "store"]


def test_events_at_one_cycle_run_core_by_core_in_the_natural_order_of_their_names():
    events = [
        ("cg10.AIC", "a"),
        ("cg2.AIV0", "b"),
        ("cg2.AIC", "c"),
        ("cg2.AIC of block 12", "d"),
        ("cg2.AIC of block 3", "e"),
    ]
    expected = ["c", "e", "d", "b", "a"]
    for queued in permutations(events):
        order, ran = TimeOrder(), []
        for core, label in queued:
            order.at(100, core, lambda label=label, ran=ran: ran.append(label))
        order.drain()
        assert ran == expected, queued


def test_a_cores_own_events_keep_their_program_order_even_when_timed_earlier():
    order, ran = TimeOrder(), []
    order.at(500, "cg1.AIC", lambda: ran.append("first"))
    order.at(300, "cg1.AIC", lambda: ran.append("second"))  # issued later: not before the first
    order.at(500, "cg0.AIC", lambda: ran.append("other core"))
    order.note(700, "cg0.AIC")  # an event with no action still moves cg0's place on
    order.at(600, "cg0.AIC", lambda: ran.append("after the note"))
    order.drain()
    assert ran == ["other core", "first", "second", "after the note"]


def test_natural_keys_sort_numbers_as_numbers():
    names = ["cg10.AIV1", "cg9.AIV1", "cg9.AIC", "AICPU", "cg9.AIV0"]
    assert sorted(names, key=natural_key) == ["AICPU", "cg9.AIC", "cg9.AIV0", "cg9.AIV1", "cg10.AIV1"]


class _OneHeap:
    """The definition: one heap of every action by (cycle, the core's natural key, order queued)."""

    def __init__(self) -> None:
        self.queue: list = []
        self.last: dict[str, int] = {}
        self.count = 0

    def at(self, cycle: int, core: str, action) -> None:
        cycle = self.last[core] = max(cycle, self.last.get(core, 0))
        heapq.heappush(self.queue, (cycle, natural_key(core), self.count, action))
        self.count += 1

    def until(self, now: int) -> None:
        while self.queue and self.queue[0][0] < now:
            heapq.heappop(self.queue)[3]()

    def drain(self) -> None:
        self.until(float("inf"))


def _script(order, seed: int) -> list[str]:
    """Random cores queue events (a core's cycles may go back: its program order holds), the clock
    steps on at random, and some actions queue another event as they run."""
    rng, ran = random.Random(seed), []
    cores = [f"cg{i}.{unit}" for i in (0, 2, 10) for unit in ("AIC", "AIV0", "AIV1")] + ["AICPU"]

    def action(label: str, then: tuple[int, str] | None):
        def run() -> None:
            ran.append(label)
            if then is not None:
                order.at(then[0], then[1], action(label + "'", None))

        return run

    now = 0
    for n in range(rng.randrange(1, 80)):
        cycle = now + rng.randrange(0, 400)
        then = (cycle + rng.randrange(0, 300), rng.choice(cores)) if rng.random() < 0.2 else None
        order.at(cycle, rng.choice(cores), action(str(n), then))
        if rng.random() < 0.3:
            now += rng.randrange(0, 200)
            order.until(now)
    order.drain()
    return ran


def test_any_interleaving_runs_as_one_queue_ordered_by_cycle_then_core_then_program_order():
    for seed in range(300):
        assert _script(TimeOrder(), seed) == _script(_OneHeap(), seed), seed


def test_two_names_of_one_natural_rank_run_in_the_order_their_cores_first_queued():
    order, ran = TimeOrder(), []
    order.at(5, "cg02.AIC", lambda: ran.append("cg02"))
    order.at(5, "cg2.AIC", lambda: ran.append("cg2"))  # natural_key is the same: ("cg", 2, ".AIC")
    order.drain()
    assert ran == ["cg02", "cg2"]
