"""The chip-to-chip interconnect: every cross-rank effect is a :class:`Message` on a :class:`Link`.

A rank never touches another rank's chip: a notify, a remote write and a remote read each go
through :meth:`Fabric.send` / :meth:`Fabric.read` as a message with its modeled send time and the
sender's vector clock. Each directed link between two ranks moves one transfer at a time: a
transfer leaves once the link is free, keeps it busy for ``bytes / bandwidth`` cycles, and lands
``latency`` cycles after it left (the figures: :data:`pypto_sim_a2a3.target.A2A3_INTERCONNECT`).
Every transfer is kept as a :class:`~pypto.ir.backend.LinkTransfer` for the report.

In one process the fabric delivers a message by a small process on the world's scheduler that
hands it to its rank at its arrival cycle; to a rank in another process it goes to the transport
(``outbound``) instead, as the same data.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from pypto.ir import SourceSpan
from pypto.ir.backend import LinkTransfer
from pypto.ir.errors import at_line
from pypto_sim_a2a3.distributed.ordering import VectorClock
from pypto_sim_a2a3.distributed.windows import PlaceRef
from pypto_sim_a2a3.engine.scheduler import Advance, Event
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.target import Interconnect

NOTIFY, WRITE, READ, REPLY = "notify", "write", "read", "reply"


@dataclass(frozen=True)
class Message:
    """One cross-rank effect, as data (a rank in a process of its own receives it by pickle):
    a ``notify`` into a signal cell, a ``write`` of bytes into a window (``how`` "add": atomic),
    a ``read`` request and its ``reply`` (matched by ``ticket``). ``place`` names the window bytes
    on ``dst``; ``clock`` is the sender's vector clock when it sent it."""

    kind: str
    src: int
    dst: int
    sent: int  # the modeled cycle it leaves (its link may hold it back)
    nbytes: int
    op: str
    span: SourceSpan | None
    clock: VectorClock
    place: PlaceRef | None = None
    data: torch.Tensor | None = None
    value: int = 0
    how: str = ""
    index: tuple[int, ...] = ()  # a notify's cell, as the kernel named it (for reports)
    name: str = ""  # a notify's signal window, as the kernel named it (for reports)
    ticket: int = 0
    arrives: int = 0  # the modeled cycle its last byte lands (set by the fabric)


@dataclass
class Link:
    """One direction of the link between two ranks: busy until ``free_at``."""

    free_at: int = 0


@dataclass
class Fabric:
    """The links of a world and the transfers they carried.

    ``spawn(core, coroutine)`` runs a delivery on the world's scheduler, ``receive(message)`` hands
    it to its rank once it landed."""

    spec: Interconnect
    clock_mhz: float
    spawn: Callable[[Core, Generator[Event, None, None]], Any]
    receive: Callable[[Message], None]  # hands a landed message to its rank
    local: frozenset[int] = frozenset()  # the ranks simulated in this process (with an outbound)
    outbound: Callable[[Message], None] | None = None  # to the ranks of other processes
    transfers: list[LinkTransfer] = field(default_factory=list)
    links: dict[tuple[int, int], Link] = field(default_factory=dict)

    @property
    def latency(self) -> int:
        return self.spec.latency_cycles(self.clock_mhz)

    def occupy(
        self,
        src: int,
        dst: int,
        at: int,
        nbytes: int,
        op: str,
        span: SourceSpan | None,
        chunks: int = 1,
        pipelined: bool = False,
    ) -> int:
        """Put ``nbytes`` on the link ``src -> dst`` from cycle ``at`` in ``chunks`` transfers (each
        waits for the one before it to land unless ``pipelined``); the cycle the last byte lands."""
        link = self.links.setdefault((src, dst), Link())
        where = at_line(span) if span is not None else None
        start = max(at, link.free_at)
        per_chunk = -(-nbytes // chunks) if chunks > 1 else nbytes
        left = nbytes
        end = start
        for _ in range(max(1, chunks)):
            size = min(per_chunk, left)
            left -= size
            busy = self.spec.link_cycles(size, self.clock_mhz)
            end = start + busy + self.latency
            if size:  # (a read's request carries no payload: only its latency)
                self.transfers.append(LinkTransfer(src, dst, size, start, end, op, where))
            start = start + busy if pipelined else end
        link.free_at = max(link.free_at, end - self.latency)
        return end

    def send(self, message: Message, chunks: int = 1, pipelined: bool = False) -> int:
        """Send ``message`` (in ``chunks`` transfers): it reaches its rank when its last byte
        lands; the cycle it lands."""
        arrives = self.occupy(
            message.src,
            message.dst,
            message.sent,
            message.nbytes,
            message.op,
            message.span,
            chunks,
            pipelined,
        )
        self.carry(replace(message, arrives=arrives))
        return arrives

    def carry(self, message: Message) -> None:
        """Hand ``message`` to its rank at its arrival: a courier on this scheduler (a rank of
        this process), or the transport to another process."""
        if self.outbound is not None and message.dst not in self.local:
            self.outbound(message)
            return
        courier = Core(f"link{message.src}->{message.dst}", clock=message.sent)
        self.spawn(courier, _deliver(message, self.receive, message.sent))

    def inject(self, message: Message) -> None:
        """A message from a rank of another process: hand it to its rank here when it lands."""
        courier = Core(f"link{message.src}->{message.dst}", clock=message.arrives)
        self.spawn(courier, _deliver(message, self.receive, message.arrives))


def _deliver(
    message: Message, receive: Callable[[Message], None], start: int
) -> Generator[Event, None, None]:
    """Carry ``message`` from cycle ``start`` until it lands, then hand it to its rank."""
    if message.arrives > start:
        yield Advance("LINK", message.arrives - start, message.op, message.span, silent=True)
    receive(message)
