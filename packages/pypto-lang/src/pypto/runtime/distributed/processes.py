"""Ranks as OS processes: the transport a per-rank simulation runs on (DIST_CONTRACT.md, "Ranks as
processes").

Each rank is a ``torch.multiprocessing`` process (forked, so the SubWorker callbacks bound at
``prepare()`` and the prepared programs are inherited, and IO tensors travel as shared memory).
A rank simulates its own chip; what it does to another rank (a window write, a notify, a remote
read and its reply) is a :class:`Message` stamped with its modeled send cycle and the sender's
vector clock. The ranks advance in conservative time windows: every rank simulates all its events
before the window's *horizon*; a message sent in a window ``[start, start + lookahead)`` arrives no
earlier than the horizon (the lookahead is the smallest link latency), so it is delivered at the
window barrier, before any rank needs it. Modeled cycles are therefore those of one process
simulating the whole world. Idle stretches are skipped: the next window starts at the earliest
pending event of any rank or message. When every rank is idle or blocked and nothing is in flight,
every rank's :meth:`RankLink.advance` raises :class:`Stalled` (with every rank's blocked waits), for
the simulation to report its deadlock.

>>> with RankProcesses(2, handler) as ranks:  # doctest: +SKIP
...     results = ranks.run(job, lookahead=100)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import PyptoError
from pypto.ir.tracebacks import call_site

# The coordinator's replies to a rank's window report.
GO, STALLED, DONE, ABORT = "go", "stalled", "done", "abort"


@dataclass(frozen=True, order=True)
class Message:
    """One cross-rank effect: sent by ``src`` to ``dst`` at modeled cycle ``at``, with the sender's
    vector clock (``clock[r]``: how many events of rank ``r`` happened before it) and the
    backend's ``payload``. Messages order by (``at``, ``src``, ...): the delivery order."""

    at: int
    src: int
    dst: int
    clock: tuple[int, ...] = field(compare=False)
    payload: Any = field(compare=False, default=None)


class Stalled(Exception):
    """Every rank is idle or blocked and no message is in flight: a deadlock (or, if some rank is
    blocked, the simulation's DeadlockError to raise). ``blocked[r]`` is what rank ``r`` reported
    waiting on."""

    def __init__(self, blocked: Sequence[Any]) -> None:
        super().__init__("every rank is blocked or idle and no message is in flight")
        self.blocked = list(blocked)


class Aborted(Exception):
    """Another rank failed: this rank's simulation stops."""


class RankProcessError(PyptoError, RuntimeError):
    """A rank's process could not start, died, or broke the window protocol."""


class RankLink:
    """One rank's end of the transport (made by :class:`RankProcesses`, handed to the backend's
    ``run_rank``)."""

    def __init__(self, rank: int, ranks: int, lookahead: int, conn: Any) -> None:
        self.rank = rank
        self.ranks = ranks
        self.lookahead = lookahead
        self.horizon = lookahead  # the first window is [0, lookahead)
        self.clock = [0] * ranks
        self.transfers: list[Any] = []  # the backend's LinkTransfer records of what this rank sent
        self._outbox: list[Message] = []
        self._conn = conn
        self.done = False  # the world finished: no more windows
        self.ended = False  # the window protocol is over (finished, stalled or aborted)

    def send(self, dst: int, payload: Any, at: int) -> Message:
        """Send ``payload`` to rank ``dst`` at modeled cycle ``at`` (before the current horizon)."""
        if not 0 <= dst < self.ranks:
            raise RankProcessError(
                f"rank {self.rank} sent a message to rank {dst}, outside [0, {self.ranks})"
            )
        if at >= self.horizon:
            raise RankProcessError(
                f"rank {self.rank} sent a message at cycle {at}, at or after its window's horizon "
                f"{self.horizon}: it simulated past the window"
            )
        self.clock[self.rank] += 1
        message = Message(at, self.rank, dst, tuple(self.clock), payload)
        self._outbox.append(message)
        return message

    def advance(self, next_event: int | None, finished: bool, blocked: Any = None) -> list[Message]:
        """The window barrier: this rank simulated every event before :attr:`horizon`; its next
        own event is at ``next_event`` (None: none pending), ``finished`` says its own work is
        done (it still serves what peers send it), ``blocked`` what it waits on, if anything.
        Returns the messages sent to it in the window, in delivery order, and moves
        :attr:`horizon` on. Raises :class:`Stalled` when the world can make no progress,
        :class:`Aborted` when another rank failed; after the last window :attr:`done` is True."""
        self._conn.send(("window", self._outbox, next_event, finished, blocked))
        self._outbox = []
        reply = self._conn.recv()
        self.ended = reply[0] != GO
        if reply[0] == GO:
            _, self.horizon, inbox = reply
            for message in inbox:
                self.clock = [max(a, b) for a, b in zip(self.clock, message.clock, strict=True)]
            self.clock[self.rank] += len(inbox)
            return list(inbox)
        if reply[0] == DONE:
            self.done = True
            return []
        if reply[0] == STALLED:
            raise Stalled(reply[1])
        raise Aborted()


def coordinate(conns: Sequence[Any], lookahead: int) -> dict[int, tuple[Any, ...]]:
    """Run the window barrier for ``conns`` (one pipe per rank) until every rank is finished with
    nothing in flight (DONE), the world stalls (STALLED), or a rank fails (ABORT to the others).
    Returns what ranks sent that ended their job during the barrier (a failing rank's error)."""
    horizon = lookahead
    live = list(range(len(conns)))
    while True:
        reports: dict[int, tuple[Any, ...]] = {}
        failed = False
        for rank in live:
            report = conns[rank].recv()
            if report[0] != "window":  # the rank ended its job: an error (or a result too early)
                reports[rank] = report
                failed = True
                continue
            reports[rank] = report
        if failed:
            for rank in live:
                if reports[rank][0] == "window":
                    conns[rank].send((ABORT,))
            return {rank: r for rank, r in reports.items() if r[0] != "window"}
        messages = sorted(m for rank in live for m in reports[rank][1])
        pending = [reports[rank][2] for rank in live if reports[rank][2] is not None]
        if not messages and not pending:
            if all(reports[rank][3] for rank in live):
                for rank in live:
                    conns[rank].send((DONE,))
                return {}
            blocked = [reports[rank][4] for rank in live]
            for rank in live:
                conns[rank].send((STALLED, blocked))
            return {}
        earliest = min([*pending, *(m.at + lookahead for m in messages)])
        start = max(horizon, earliest)
        horizon = start + lookahead
        inboxes: dict[int, list[Message]] = {rank: [] for rank in live}
        for message in messages:
            inboxes[message.dst].append(message)
        for rank in live:
            conns[rank].send((GO, horizon, inboxes[rank]))


Handler = Callable[[int, RankLink, Any], Any]


class RankProcesses:
    """``ranks`` forked processes, each running ``handler(rank, link, job)`` for every job
    :meth:`run` hands them; use it as a context manager or :meth:`close` it."""

    def __init__(self, ranks: int, handler: Handler, startup_timeout_s: float | None = None) -> None:
        import torch.multiprocessing as mp

        context = mp.get_context("fork")  # the children inherit the bound callbacks and programs
        self.ranks = ranks
        pipes = [context.Pipe() for _ in range(ranks)]
        self._conns: list[Any] = [parent for parent, _ in pipes]
        self._processes: list[Any] = []
        for rank, (_, child) in enumerate(pipes):
            # A child closes the ends it inherits but does not own, so that it sees the parent
            # go (its pipe reads EOF) instead of holding the pipe open itself.
            others = [c for r, pair in enumerate(pipes) for c in pair if c is not child or r != rank]
            process = context.Process(target=_serve, args=(rank, ranks, child, handler, others), daemon=True)
            process.start()
            self._processes.append(process)
        for _, child in pipes:
            child.close()
        timeout = 60.0 if startup_timeout_s is None else startup_timeout_s
        for rank, conn in enumerate(self._conns):
            if not conn.poll(timeout) or conn.recv() != ("ready", rank):
                self.close()
                raise RankProcessError(
                    f"rank {rank}'s process did not come up within {timeout:g} s",
                    call_site(),
                    "give slow starts more time: prepare(startup_timeout_s=...)",
                )
        self.closed = False

    def run(self, job: Any, lookahead: int) -> list[Any]:
        """Hand ``job`` to every rank, run the window barrier, and return each rank's result in
        rank order; a rank's error is raised (the first failing rank's, not the others' aborts)."""
        if lookahead < 1 or not math.isfinite(lookahead):
            raise RankProcessError(f"the lookahead must be a positive number of cycles, got {lookahead}")
        for conn in self._conns:
            conn.send(("job", job, lookahead))
        ended = coordinate(self._conns, lookahead)
        outcomes = [ended.get(rank) or self._receive(rank) for rank in range(self.ranks)]
        errors = [_rebuilt(o[1]) for o in outcomes if o[0] == "error"]
        real = [e for e in errors if not isinstance(e, Aborted)]
        if real or errors:
            raise (real or errors)[0]
        return [o[1] for o in outcomes]

    def _receive(self, rank: int) -> tuple[Any, ...]:
        conn = self._conns[rank]
        while True:
            try:
                outcome = conn.recv()
            except EOFError:
                return ("error", RankProcessError(f"rank {rank}'s process died"))
            if outcome[0] in ("result", "error"):
                return (outcome[0], outcome[1])

    def close(self) -> None:
        """Stop the processes (they finish the job they are in first)."""
        for conn in self._conns:
            with contextlib.suppress(BrokenPipeError, OSError):  # a process that died is gone already
                conn.send(("stop",))
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
        self.closed = True

    def __enter__(self) -> RankProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(rank: int, ranks: int, conn: Any, handler: Handler, inherited: Sequence[Any] = ()) -> None:
    """A rank process: report ready, then run each job with a fresh link until told to stop (or
    until the parent is gone)."""
    for other in inherited:
        other.close()
    _one_thread_after_fork()
    conn.send(("ready", rank))
    while True:
        try:
            order = conn.recv()
        except EOFError:
            return
        if order[0] == "stop":
            return
        _, job, lookahead = order
        link = RankLink(rank, ranks, lookahead, conn)
        try:
            result = handler(rank, link, job)
        except BaseException as err:
            conn.send(("error", _portable(err)))
            continue
        if not link.ended:  # the handler returned before the world finished: keep the barrier going
            try:
                while not link.ended:
                    link.advance(None, True)
            except (Stalled, Aborted) as err:
                conn.send(("error", _portable(err)))
                continue
        conn.send(("result", result))


def _one_thread_after_fork() -> None:
    """torch's intra-op thread pool does not survive a fork (a parallel op in the child can wait
    forever on threads that were not copied): a rank runs its torch work on one thread."""
    try:
        import torch
    except ImportError:  # a rank of a backend without torch: nothing to do
        return
    torch.set_num_threads(1)


def _portable(err: BaseException) -> tuple[type[BaseException], tuple[Any, ...], dict[str, Any]]:
    """An exception as plain parts that survive pickling with their attributes (span, hint)."""
    return (type(err), err.args, dict(getattr(err, "__dict__", {})))


def _rebuilt(parts: Any) -> BaseException:
    if isinstance(parts, BaseException):
        return parts
    cls, args, attrs = parts
    err = cls.__new__(cls)
    BaseException.__init__(err, *args)
    err.__dict__.update(attrs)
    return err


def earliest(events: list[tuple[int, Any]]) -> int | None:
    """The cycle of the earliest event of a heap of ``(cycle, ...)`` entries (None when empty):
    what a rank reports as its next event."""
    return events[0][0] if events else None


__all__ = [
    "Aborted",
    "Message",
    "RankLink",
    "RankProcessError",
    "RankProcesses",
    "Stalled",
    "coordinate",
    "earliest",
]
