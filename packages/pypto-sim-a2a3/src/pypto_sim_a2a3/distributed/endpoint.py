"""One rank's side of the world: its vector clock, its signal cells and the comm primitives.

:class:`RankComm` is what a kernel's comm op (and a host collective's builtin task) talks to: it
sends notifies and remote writes as messages on the :class:`~.interconnect.Fabric`, reads a peer's
window through it, blocks a core on a signal cell of its own window, and records its window writes
for the cross-rank race check (:mod:`.ordering`). Each primitive is a coroutine of the core that
runs it: it yields what the core spends (``Advance``) and where it blocks (``Wait``).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import torch

from pypto.ir import Call, CommError, OutOfBoundsError, PyptoError, SourceSpan, get_op
from pypto.ir.errors import at_line
from pypto.ir.ops import dist
from pypto_sim_a2a3.checks.coherence import gm_accesses, gm_tensor
from pypto_sim_a2a3.distributed.interconnect import NOTIFY, READ, REPLY, WRITE, Fabric, Message
from pypto_sim_a2a3.distributed.ordering import AccessLog, NotifyRecord, VectorClock, join
from pypto_sim_a2a3.distributed.windows import Place, WindowStore
from pypto_sim_a2a3.engine.scheduler import Advance, Blocked, Event, Signal, Wait
from pypto_sim_a2a3.hw.cores import Core

if TYPE_CHECKING:
    from pypto_sim_a2a3.engine.chip import Chip
    from pypto_sim_a2a3.engine.launch import Launch
    from pypto_sim_a2a3.engine.taskgraph import Task

Steps = Generator[Event, None, Any]
NOTIFY_BYTES = 4  # a signal cell's INT32 value crosses the link
ISSUE_CYCLES = 1  # the scalar unit posting a notify or a wait's first check
MAX_DEFERRED = 64  # the conditions one defer_wait task may register (the manual's limit)


@dataclass
class Cell:
    """One signal cell of one rank's window: what waits on it, the join of the vector clocks of the
    notifies that reached it, and those notifies."""

    signal: Signal = field(default_factory=Signal)
    clock: VectorClock = ()
    received: list[NotifyRecord] = field(default_factory=list)


@dataclass(frozen=True)
class Condition:
    """A wait's condition on a cell: ``cell <cmp> expected`` (``cmp`` "Eq" or "Ge")."""

    place: Place
    index: tuple[int, ...]  # the cell's offsets in the signal window, for reports
    expected: int
    cmp: str
    span: SourceSpan | None
    what: str  # "pld.system.wait", "pld.tensor.barrier", ...
    name: str = "signal"  # the signal window as the kernel names it

    def holds(self, value: int) -> bool:
        return value == self.expected if self.cmp == "Eq" else value >= self.expected


class Domain(Protocol):
    """What a rank's endpoint asks of its world: its size, its windows, its links, and which
    ranks the host never dispatched to (for deadlock reports)."""

    size: int
    windows: WindowStore
    fabric: Fabric

    def idle_ranks(self) -> list[int]: ...


class RankComm:
    """Rank ``rank``'s endpoint in ``world``; ``chip`` is the rank's chip."""

    def __init__(self, world: Domain, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.nranks = world.size
        self.clock = [0] * world.size  # this rank's vector clock
        self.chip: Chip | None = None
        self.log = AccessLog()  # the accesses of this rank's windows
        self.cells: dict[tuple[tuple[str, int], int], Cell] = {}  # this rank's signal cells
        self.delivered: list[NotifyRecord] = []  # every notify that reached this rank
        self._tickets = itertools.count(1)  # this rank's read requests
        self._replies: dict[int, torch.Tensor] = {}
        self._replied = Signal()
        self._deferred: dict[int, list[Condition]] = {}  # id(launch) -> its defer_wait conditions

    # ------------------------------------------------------------ checks

    def check_peer(self, peer: Any, span: SourceSpan | None, what: str) -> int:
        """``peer`` is a rank of the world, else a ``CommError`` at the op."""
        value = int(peer)
        if not 0 <= value < self.nranks:
            raise CommError(
                f"{what}: peer {value} is outside the world's ranks [0, {self.nranks})",
                span,
                "compute the peer from pld.system.rank(ctx) and pld.system.nranks(ctx), e.g. "
                "(my_rank + 1) % nranks",
            )
        return value

    def place(self, tensor: Any, span: SourceSpan | None, what: str) -> Place:
        """The window place of a kernel's tensor, else a ``CommError``."""
        found = self.world.windows.find(tensor)
        if found is None:
            raise CommError(
                f"{what} needs a window-bound tensor (a pld.DistributedTensor), "
                "got a tensor of this rank only",
                span,
                "pass a window from pld.window(...) down from the host function",
            )
        return found

    # ------------------------------------------------------------ signal cells

    def cell(self, place: Place) -> Cell:
        """This rank's signal cell at ``place``."""
        key = (place.buffer.key, place.byte_offset)
        found = self.cells.get(key)
        if found is None:
            found = self.cells[key] = Cell(clock=(0,) * self.nranks)
        return found

    def value(self, place: Place) -> int:
        return int(place.on(self.rank).reshape(-1)[0])

    # ------------------------------------------------------------ primitives

    def notify(
        self,
        core: Core,
        peer: int,
        place: Place,
        index: tuple[int, ...],
        value: int,
        op: str,
        span: SourceSpan | None,
        name: str = "signal",
    ) -> Steps:
        """Deposit ``value`` into ``peer``'s cell ``place`` (``op`` "Set" or "AtomicAdd"): it lands
        after the link's latency; the core only posts it."""
        self.clock[self.rank] += 1  # the notify orders what this rank did before it
        message = self._message(NOTIFY, peer, core, NOTIFY_BYTES, dist.notify, span, place)
        self._send(replace(message, value=int(value), how=op, index=index, name=name))
        yield Advance("SCALAR", ISSUE_CYCLES, dist.notify, span)

    def wait(self, core: Core, condition: Condition) -> Steps:
        """Block ``core`` until this rank's cell satisfies ``condition``; then what the notifies
        that reached the cell ordered is ordered before this rank's next steps."""
        place, cell = condition.place, self.cell(condition.place)
        if not condition.holds(self.value(place)):
            yield Wait(
                lambda: condition.holds(self.value(place)),
                f"{_cell_name(condition)} {_expects(condition)}",
                condition.span,
                lambda: self.blocked(condition),
                on=(cell.signal,),
            )
        self.clock = list(join(tuple(self.clock), cell.clock))
        yield Advance("SCALAR", ISSUE_CYCLES, condition.what, condition.span)

    def consume(self, place: Place, amount: int) -> None:
        """A self-clearing collective takes back the credits its wait counted (the cell may already
        hold the next round's)."""
        place.on(self.rank).reshape(-1)[0] -= amount

    def read(self, core: Core, peer: int, place: Place, span: SourceSpan | None, op: str) -> Steps:
        """The bytes of ``place`` on ``peer`` (a copy): a request crosses the link, the peer reads
        its window when it lands (checking the read against the writes it has seen), and the reply
        carries the bytes back; the core waits for them."""
        (data,) = yield from self.read_all(core, [(peer, place)], span, op)
        return data

    def read_all(
        self, core: Core, sources: Sequence[tuple[int, Place]], span: SourceSpan | None, op: str
    ) -> Steps:
        """The bytes of each ``(peer, place)``, read at once: every request is posted before the
        core waits, so reads from different peers share no link and overlap."""
        tickets: list[int] = []
        for peer, place in sources:
            if peer == self.rank:
                tickets.append(0)
                continue
            ticket = next(self._tickets)
            tickets.append(ticket)
            self._send(replace(self._message(READ, peer, core, 0, op, span, place), ticket=ticket))
        pending = [t for t in tickets if t]
        if pending:
            peers = sorted({peer for peer, _ in sources if peer != self.rank})
            yield Wait(
                lambda: all(t in self._replies for t in pending),
                f"{spelled(op)} from rank(s) {', '.join(map(str, peers))}",
                span,
                on=(self._replied,),
            )
        return [
            self._replies.pop(ticket) if ticket else place.on(self.rank).clone()
            for ticket, (_, place) in zip(tickets, sources, strict=True)
        ]

    def write(
        self,
        core: Core,
        peer: int,
        place: Place,
        data: torch.Tensor,
        span: SourceSpan | None,
        op: str,
        atomic: bool = False,
        chunks: int = 1,
        pipelined: bool = False,
    ) -> Steps:
        """Write ``data`` into ``place`` on ``peer`` (add into it if ``atomic``); the core waits
        until the bytes landed (so a notify it sends next arrives after them)."""
        payload = data.detach().clone()
        nbytes = payload.numel() * payload.element_size()
        message = self._message(WRITE, peer, core, nbytes, op, span, place)
        message = replace(message, data=payload, how="add" if atomic else "")
        if peer == self.rank:  # a collective's own share: a local copy
            self.receive(replace(message, arrives=core.clock))
            return
        end = self._send(message, chunks, pipelined)
        if end > core.clock:
            yield Advance("MTE3", end - core.clock, op, span)

    def _message(
        self, kind: str, peer: int, core: Core, nbytes: int, op: str, span: SourceSpan | None, place: Place
    ) -> Message:
        return Message(kind, self.rank, peer, core.clock, nbytes, op, span, tuple(self.clock), place.ref())

    def _send(self, message: Message, chunks: int = 1, pipelined: bool = False) -> int:
        return self.world.fabric.send(message, chunks, pipelined)

    # ------------------------------------------------------------ what lands here

    def receive(self, message: Message) -> None:
        """A message that landed on this rank: apply it to this rank's windows."""
        if message.kind == REPLY:
            assert message.data is not None
            self._replies[message.ticket] = message.data
            self._replied.changed()
            return
        assert message.place is not None
        place = self.world.windows.place(message.place, self.rank)
        if message.kind == NOTIFY:
            self._notified(message, place)
        elif message.kind == WRITE:
            assert message.data is not None
            target = place.on(self.rank)
            data = message.data.reshape(target.shape)
            if message.how == "add":
                target.add_(data.to(target.dtype))
            else:
                target.copy_(data)
            what = f"{spelled(message.op)} writes"
            self.log.wrote(
                place, self.rank, message.src, message.clock, message.span, what, message.how == "add"
            )
        else:  # a read request: check it, answer with the bytes
            what = f"{spelled(message.op)} reads"
            self.log.check_read(place, self.rank, message.src, message.clock, message.span, what)
            data = place.on(self.rank).clone()
            reply = Message(
                REPLY,
                self.rank,
                message.src,
                message.arrives,
                place.nbytes,
                message.op,
                message.span,
                tuple(self.clock),
                data=data,
                ticket=message.ticket,
            )
            self._send(reply)

    def _notified(self, message: Message, place: Place) -> None:
        target = place.on(self.rank).reshape(-1)
        if message.how == "Set":
            target[0] = message.value
        else:
            target[0] += message.value
        cell = self.cell(place)
        cell.clock = join(cell.clock, message.clock)
        record = NotifyRecord(
            message.src,
            message.span,
            self.rank,
            message.index,
            message.value,
            message.how,
            message.name or "signal",
        )
        cell.received.append(record)
        self.delivered.append(record)
        before = tuple(c - (r == message.src) for r, c in enumerate(message.clock))  # before its tick
        self.log.wrote(place, self.rank, message.src, before, message.span, "notifies", commutes=True)
        cell.signal.changed()

    # ------------------------------------------------------------ local window accesses

    def gm_access(self, call: Call, args: Sequence[Any]) -> None:
        """A kernel of this rank reads or writes GM: if the bytes are a window's, record the write
        or check the read against the other ranks' writes (at issue, in program order)."""
        windows = self.world.windows
        if windows.find(gm_tensor(call, args)) is None:
            return
        for access in gm_accesses("", call, args):
            tensor = gm_tensor(call, args)
            box = access.local(access.region)
            view = tensor[tuple(slice(lo, hi) for lo, hi in zip(box.lo, box.hi, strict=True))]
            place = windows.find(view)
            if place is None or view.numel() == 0:
                continue
            if access.write:
                what = "a store into its window writes"
                self.log.wrote(place, self.rank, self.rank, tuple(self.clock), call.span, what, access.atomic)
            else:
                what = "a load of its window"
                self.log.check_read(place, self.rank, self.rank, tuple(self.clock), call.span, what)

    # ------------------------------------------------------------ deferred completion

    def defer(self, launch: Launch, condition: Condition) -> None:
        """A ``defer_wait``: the task of ``launch`` completes only once ``condition`` holds."""
        if condition.expected < 0:
            raise CommError(
                f"{condition.what}: expected {condition.expected} is negative; a deferred condition "
                "polls an unsigned counter (counter >= expected)",
                condition.span,
                "keep expected and every published counter value in [0, INT32_MAX]",
            )
        conditions = self._deferred.setdefault(id(launch), [])
        if len(conditions) >= MAX_DEFERRED:
            raise CommError(
                f"{condition.what}: a waiter task registers at most {MAX_DEFERRED} conditions",
                condition.span,
                "split the waits over several waiter tasks",
            )
        conditions.append(condition)

    def defers(self, task: Task, launch: Launch) -> bool:
        """The chip finished ``task``'s block on ``launch``: if it deferred waits, complete it once
        they hold (True), else the chip retires it now (False)."""
        conditions = self._deferred.pop(id(launch), None)
        if not conditions:
            return False
        chip = self.chip
        assert chip is not None
        waiter = Core(f"{task.name} (deferred)", clock=max(role.core.clock for role in launch.roles))

        def complete() -> Steps:
            for condition in conditions:
                yield from self.wait(waiter, condition)
            chip.complete(task)

        chip.scheduler.spawn(waiter, complete())
        return True

    # ------------------------------------------------------------ deadlock reports

    def blocked(self, condition: Condition) -> Blocked:
        """A wait no rank satisfied: the cell, its value, what it expects, and the notifies."""
        value = self.value(condition.place)
        cell = self.cell(condition.place)
        reached = "; ".join(r.describe() for r in cell.received) or "none"
        into_window = [r for r in self.delivered if r not in cell.received]
        others = "; ".join(r.describe() for r in into_window[:8]) or "none"
        text = (
            f"{condition.what} at {at_line(condition.span)} waits on {_cell_name(condition)} of rank "
            f"{self.rank}'s window {condition.place.buffer.name!r}: == {value}, {_expects(condition)}; "
            f"notifies that reached it: {reached}; other notifies into rank {self.rank}'s windows: {others}"
        )
        idle = self.world.idle_ranks()
        hint = (
            f"rank(s) {', '.join(map(str, idle))} got no dispatch from the host: dispatch to every rank "
            "(for r in pl.range(pld.world_size()): ...(device=r))"
            if idle
            else "make some rank notify this cell (peer=this rank, the same offsets) with a value that "
            "satisfies the wait, or fix the wait's offsets / expected value"
        )
        return Blocked(text, condition.span, hint)


def spelled(op: str) -> str:
    """An op as the user writes it: ``dist.remote_load`` -> ``pld.tile.remote_load``."""
    try:
        return get_op(op).dsl_name
    except PyptoError:
        return op


def _cell_name(condition: Condition) -> str:
    return f"{condition.name}[" + ", ".join(str(i) for i in condition.index) + "]"


def _expects(condition: Condition) -> str:
    return f"expects {'==' if condition.cmp == 'Eq' else '>='} {condition.expected}"


def check_region(
    shape: Sequence[int], offsets: Sequence[int], extent: Sequence[int], span: SourceSpan | None, what: str
) -> None:
    """A region of a window inside it, else an ``OutOfBoundsError`` at the op."""
    for dim, (off, n, size) in enumerate(zip(offsets, extent, shape, strict=True)):
        if off < 0 or n < 0 or off + n > size:
            raise OutOfBoundsError(
                f"{what}: the region [{off}:{off + n}] of dim {dim} leaves the window's {size} elements "
                f"there (offsets {list(offsets)}, shape {list(extent)})",
                span,
                "keep offsets + shape inside the window's shape on every dim",
            )
