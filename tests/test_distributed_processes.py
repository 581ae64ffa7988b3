"""Ranks as OS processes (pypto.runtime.distributed.processes): each rank a forked process that
simulates its own part of the world, cross-rank messages stamped with their modeled send cycle and
the sender's vector clock, exchanged in conservative time windows. A toy per-rank simulation (a
token passed around a ring, and every rank messaging every other) gives exactly the modeled times
of the same simulation run in one process; a world where nobody can move stalls every rank; a
rank's error reaches the caller."""

from __future__ import annotations

import heapq
from typing import Any

import pytest

from pypto.runtime.distributed.processes import Message, RankLink, RankProcesses, Stalled

LOOKAHEAD = 100  # the smallest link latency, in cycles
BYTES_PER_CYCLE = 64


def latency(nbytes: int) -> int:
    return LOOKAHEAD + nbytes // BYTES_PER_CYCLE


def toy_rank(rank: int, link: RankLink, job: Any) -> list[tuple[str, int, int]]:
    """One rank's event loop: a token hops round the ring (each hop ``work[rank]`` cycles of
    compute, then a 256-byte message); at start every rank sends every other a message of
    ``1000 * (rank + 1)`` bytes. Logs (what, data, cycle) of every event."""
    ranks, work, hops = job
    events: list[tuple[int, int, str, Any]] = []
    seq = 0

    def push(at: int, kind: str, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, kind, data))

    if rank == 0:
        push(0, "token", 0)
    for peer in range(ranks):
        if peer != rank:
            push(rank * 7, "send-bulk", peer)
    log: list[tuple[str, int, int]] = []
    while True:
        while events and events[0][0] < link.horizon:
            at, _, kind, data = heapq.heappop(events)
            log.append((kind, data, at))
            if kind == "token" and data < hops:
                push(at + work[rank], "send-token", data + 1)
            elif kind == "send-token":
                link.send((rank + 1) % ranks, ("token", data, 256), at)
            elif kind == "send-bulk":
                link.send(data, ("bulk", rank, 1000 * (rank + 1)), at)
        inbox = link.advance(events[0][0] if events else None, finished=True)
        if link.done:
            return log
        for message in inbox:
            kind, data, nbytes = message.payload
            push(message.at + latency(nbytes), kind, data)


def toy_world(ranks: int, work: list[int], hops: int) -> list[list[tuple[str, int, int]]]:
    """The same simulation, every rank in one event loop: the reference."""
    events: list[tuple[int, int, int, str, Any]] = []
    seq = 0

    def push(rank: int, at: int, kind: str, data: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, rank, kind, data))

    push(0, 0, "token", 0)
    for rank in range(ranks):
        for peer in range(ranks):
            if peer != rank:
                push(rank, rank * 7, "send-bulk", peer)
    logs: list[list[tuple[str, int, int]]] = [[] for _ in range(ranks)]
    while events:
        at, _, rank, kind, data = heapq.heappop(events)
        logs[rank].append((kind, data, at))
        if kind == "token" and data < hops:
            push(rank, at + work[rank], "send-token", data + 1)
        elif kind == "send-token":
            push((rank + 1) % ranks, at + latency(256), "token", data)
        elif kind == "send-bulk":
            push(data, at + latency(1000 * (rank + 1)), "bulk", rank)
    return logs


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_in_processes_give_the_one_process_modeled_times(ranks):
    work = [30 + 17 * r for r in range(ranks)]
    job = (ranks, work, 3 * ranks)
    with RankProcesses(ranks, toy_rank) as world:
        logs = world.run(job, lookahead=LOOKAHEAD)
        again = world.run(job, lookahead=LOOKAHEAD)  # the processes serve job after job
    expected = toy_world(*job)
    assert [sorted(log) for log in logs] == [sorted(log) for log in expected]
    assert again == logs
    tokens = [at for log in logs for kind, _, at in log if kind == "token"]
    assert max(tokens) > 3 * ranks * LOOKAHEAD  # the hops really waited for the links


def clock_rank(rank: int, link: RankLink, job: Any) -> list[tuple[int, ...]]:
    """Rank 0 sends to 1 at cycle 5; rank 1, once it has it, sends to 2; returns the clocks seen."""
    seen: list[tuple[int, ...]] = []
    if rank == 0:
        link.send(1, "a", 5)
    while True:
        inbox = link.advance(None, finished=True)
        if link.done:
            return seen
        for message in inbox:
            seen.append(message.clock)
            if rank == 1:
                link.send(2, "b", link.horizon - 1)


def test_messages_carry_the_senders_vector_clock():
    with RankProcesses(3, clock_rank) as world:
        seen = world.run(None, lookahead=10)
    assert seen[0] == []
    assert seen[1] == [(1, 0, 0)]
    assert seen[2][0][0] == 1 and seen[2][0][1] >= 1  # rank 1's send happened after rank 0's


def blocked_rank(rank: int, link: RankLink, job: Any) -> str:
    try:
        link.advance(None, finished=False, blocked=f"rank {rank} waits on cell [0, 0]")
    except Stalled as stall:
        return " | ".join(stall.blocked)
    return "no stall"


def test_a_world_that_cannot_move_stalls_every_rank_with_every_wait():
    with RankProcesses(2, blocked_rank) as world:
        told = world.run(None, lookahead=10)
    assert told == ["rank 0 waits on cell [0, 0] | rank 1 waits on cell [0, 0]"] * 2


def failing_rank(rank: int, link: RankLink, job: Any) -> None:
    if rank == 1:
        raise ValueError("rank 1 read past its window")
    while not link.done:
        link.advance(None, finished=False)


def test_a_rank_error_reaches_the_caller_and_stops_the_others():
    with RankProcesses(3, failing_rank) as world, pytest.raises(ValueError, match="rank 1 read past"):
        world.run(None, lookahead=10)


def test_a_send_past_the_horizon_is_an_error():
    def too_late(rank: int, link: RankLink, job: Any) -> None:
        link.send(0, "late", link.horizon)

    with RankProcesses(1, too_late) as world, pytest.raises(RuntimeError, match="past the window"):
        world.run(None, lookahead=10)


def test_messages_order_by_time_then_sender():
    a = Message(5, 1, 0, (0, 1))
    b = Message(5, 0, 1, (1, 0))
    c = Message(3, 2, 0, (0, 0, 1))
    assert sorted([a, b, c]) == [c, b, a]
