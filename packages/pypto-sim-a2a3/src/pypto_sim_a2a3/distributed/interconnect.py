"""The chip-to-chip interconnect: every cross-rank effect is a :class:`Message` on a :class:`Link`.

A rank never touches another rank's chip: a notify, a remote write and a remote read each go
through :meth:`Fabric.send` / :meth:`Fabric.read` as a message with its modeled send time and the
sender's vector clock. Each directed link between two ranks moves one transfer at a time: a
transfer leaves once the link is free, keeps it busy for ``bytes / bandwidth`` cycles, and lands
``latency`` cycles after it left (the figures: :data:`pypto_sim_a2a3.target.A2A3_INTERCONNECT`).
Every transfer is kept as a :class:`~pypto.ir.backend.LinkTransfer` for the report.

In one process the fabric delivers a message by a small process on the world's scheduler that
applies it at its arrival cycle; ranks in processes of their own would put the same message on a
wire instead.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from pypto.ir import SourceSpan
from pypto.ir.backend import LinkTransfer
from pypto.ir.errors import at_line
from pypto_sim_a2a3.cores import Core
from pypto_sim_a2a3.distributed.ordering import VectorClock
from pypto_sim_a2a3.scheduler import Advance, Event
from pypto_sim_a2a3.target import Interconnect


@dataclass(frozen=True)
class Message:
    """One cross-rank effect: ``apply`` runs on rank ``dst`` when it arrives."""

    src: int
    dst: int
    sent: int  # the modeled cycle it leaves (its link may hold it back)
    nbytes: int
    op: str
    span: SourceSpan | None
    clock: VectorClock  # the sender's vector clock when it sent it
    apply: Callable[[Message], None]


@dataclass
class Link:
    """One direction of the link between two ranks: busy until ``free_at``."""

    free_at: int = 0


@dataclass
class Fabric:
    """The links of a world and the transfers they carried.

    ``spawn(core, coroutine)`` runs a delivery on the world's scheduler."""

    spec: Interconnect
    clock_mhz: float
    spawn: Callable[[Core, Generator[Event, None, None]], Any]
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
        """Send ``message`` (in ``chunks`` transfers): it is applied on its rank when its last byte
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
        courier = Core(f"link{message.src}->{message.dst}", clock=message.sent)
        self.spawn(courier, _deliver(message, arrives - message.sent))
        return arrives


def _deliver(message: Message, cycles: int) -> Generator[Event, None, None]:
    """Carry ``message`` for ``cycles``, then apply it (at its arrival on the world's clock)."""
    if cycles > 0:
        yield Advance("LINK", cycles, message.op, message.span, silent=True)
    message.apply(message)
