"""What orders one rank's window accesses after another's: vector clocks carried by notifies.

Each rank keeps a vector clock (one counter per rank). A notify first ticks the sender's own
counter and carries a copy of its clock; a signal cell joins the clocks of the notifies that
reached it; a wait that is satisfied joins the cell's clock into the waiter's. A write into a
window is recorded per byte as (writer rank, the writer's own counter then, line); a later read by
another rank is ordered after it exactly when the reader's counter of the writer has moved past
it (a notify the writer sent after the write reached a cell the reader waited on). An unordered
read is a ``RaceError`` naming both ranks and both lines: on hardware it reads whatever bytes
happen to be there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from pypto.ir import RaceError, SourceSpan
from pypto.ir.errors import at_line
from pypto_sim_a2a3.distributed.windows import Place, WindowBuffer

VectorClock = tuple[int, ...]


def join(a: VectorClock, b: VectorClock) -> VectorClock:
    return tuple(map(max, a, b))


@dataclass(frozen=True)
class NotifyRecord:
    """A notify that happened: who sent it, from which line, into which cell, with what."""

    sender: int
    span: SourceSpan | None
    target: int  # the rank whose window holds the cell
    cell: tuple[int, ...]
    value: int
    op: str  # "Set" or "AtomicAdd"
    name: str = "signal"  # the signal window as the sender's kernel names it

    def describe(self) -> str:
        verb = "set" if self.op == "Set" else "added"
        where = f" at {at_line(self.span)}" if self.span is not None else ""
        into = "in" if verb == "set" else "to"
        return f"rank {self.sender}{where} {verb} {self.value} {into} {_cell(self.name, self.cell)}"


def _cell(name: str, cell: tuple[int, ...]) -> str:
    return f"{name}[" + ", ".join(str(i) for i in cell) + "]"


@dataclass
class Accesses:
    """Per byte of one rank's window buffer, one kind of access (the last write, or the last read
    by another rank than the owner): by which rank (-1: none), at which of its epochs, from which
    line (an index into :attr:`AccessLog.lines`)."""

    rank: torch.Tensor
    epoch: torch.Tensor
    line: torch.Tensor

    @classmethod
    def of(cls, nbytes: int) -> Accesses:
        return cls(
            torch.full((nbytes,), -1, dtype=torch.int32),
            torch.zeros(nbytes, dtype=torch.int64),
            torch.zeros(nbytes, dtype=torch.int32),
        )

    def note(self, index: torch.Tensor, rank: int, epoch: int, line: int) -> None:
        self.rank[index] = rank
        self.epoch[index] = epoch
        self.line[index] = line

    def unordered(self, index: torch.Tensor, by: int, clock: VectorClock) -> int | None:
        """The first byte (a position in ``index``) that another rank than ``by`` accessed with
        nothing ordering it before ``by``'s access (whose clock is ``clock``), None if none."""
        rank = self.rank[index]
        other = (rank >= 0) & (rank != by)
        if not bool(other.any()):
            return None
        known = torch.tensor(clock, dtype=torch.int64)[rank.clamp(min=0).long()]
        found = other & (known <= self.epoch[index])
        return int(found.nonzero()[0]) if bool(found.any()) else None


@dataclass
class Shadow:
    """The last write of each byte of one rank's window buffer, its last read by another rank,
    and its last read by the owner."""

    writes: Accesses
    reads: Accesses
    own_reads: Accesses

    @classmethod
    def of(cls, nbytes: int) -> Shadow:
        return cls(Accesses.of(nbytes), Accesses.of(nbytes), Accesses.of(nbytes))


@dataclass
class AccessLog:
    """The window accesses of a world, per buffer and rank, for the cross-rank race check."""

    shadows: dict[tuple[int, int], Shadow] = field(default_factory=dict)
    lines: list[SourceSpan | None] = field(default_factory=lambda: [None])

    def _shadow(self, buffer: WindowBuffer, rank: int) -> Shadow:
        key = (id(buffer), rank)
        found = self.shadows.get(key)
        if found is None:
            found = self.shadows[key] = Shadow.of(buffer.storage[rank].numel())
        return found

    def _line(self, span: SourceSpan | None) -> int:
        self.lines.append(span)
        return len(self.lines) - 1

    def wrote(
        self,
        place: Place,
        owner: int,
        writer: int,
        clock: VectorClock,
        span: SourceSpan | None,
        what: str = "writes",
        commutes: bool = False,
    ) -> None:
        """``writer`` (whose clock was ``clock``) wrote ``place``'s bytes on rank ``owner``: a
        ``RaceError`` if another rank read or wrote them with nothing ordering that before (an
        atomic add or a notify ``commutes`` with other writes)."""
        shadow = self._shadow(place.buffer, owner)
        index = byte_index(place)
        for reads in (shadow.reads, shadow.own_reads):
            found = reads.unordered(index, writer, clock)
            if found is not None:
                self._race(place, owner, reads, index, found, writer, span, what, "read")
        if not commutes:
            found = shadow.writes.unordered(index, writer, clock)
            if found is not None:
                self._race(place, owner, shadow.writes, index, found, writer, span, what, "wrote")
        shadow.writes.note(index, writer, clock[writer], self._line(span))

    def check_read(
        self, place: Place, owner: int, reader: int, clock: VectorClock, span: SourceSpan | None, what: str
    ) -> None:
        """``reader`` (whose clock is ``clock``) reads ``place``'s bytes on rank ``owner``: a
        ``RaceError`` if another rank wrote them with nothing ordering the write before the read."""
        shadow = self._shadow(place.buffer, owner)
        index = byte_index(place)
        found = shadow.writes.unordered(index, reader, clock)
        if found is not None:
            self._race(place, owner, shadow.writes, index, found, reader, span, what, "wrote")
        reads = shadow.own_reads if reader == owner else shadow.reads
        reads.note(index, reader, clock[reader], self._line(span))

    def _race(
        self,
        place: Place,
        owner: int,
        earlier: Accesses,
        index: torch.Tensor,
        found: int,
        by: int,
        span: SourceSpan | None,
        what: str,
        verb: str,
    ) -> None:
        other = int(earlier.rank[index[found]])
        line = self.lines[int(earlier.line[index[found]])]
        byte = int(index[found]) - place.byte_offset
        whose = "its own" if owner == by else f"rank {owner}'s"
        where = f" at {at_line(line)}" if line is not None else ""
        raise RaceError(
            f"rank {by} {what} bytes of {whose} window {place.buffer.name!r} (byte {byte} of the region) "
            f"that rank {other} {verb}{where}, with no notify/wait ordering the two",
            span,
            f"order them: after its access, have rank {other} pld.system.notify a signal cell that rank {by} "
            "pld.system.wait()s on before its own (or use a pld.tensor.* collective, which does)",
        )

    def forget(self) -> None:
        """A new run: every earlier access is ordered before it."""
        self.shadows.clear()
        del self.lines[1:]


def byte_index(place: Place) -> torch.Tensor:
    """The byte offsets (in its rank's storage) of every byte of ``place``'s view."""
    size = torch.empty((), dtype=place.dtype).element_size()
    count = place.buffer.storage[place.rank].numel() // size
    starts = torch.arange(count, dtype=torch.int64).as_strided(
        place.shape, place.stride, place.element_offset
    )
    starts = starts.reshape(-1) * size
    return (starts.unsqueeze(1) + torch.arange(size, dtype=torch.int64)).reshape(-1)
