"""The ``pld.tensor.*`` collectives, each run as its protocol on the comm primitives of
:class:`~.endpoint.RankComm` (notify / wait on signal cells, remote reads and writes): their
timing, their transfers and their diagnostics come from the same code as a hand-written kernel's.

Every protocol runs on one core of one rank (``comm``, ``core``) with that rank's views of the
windows. Signal cells are counters: a rank adds 1 to a peer's cell and waits for its own cells to
reach 1, then takes the credit back (self-clearing: the same signal serves the next call, even if
a fast peer's next notify has already arrived).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import torch

from pypto.ir import OutOfBoundsError, SourceSpan
from pypto_sim_a2a3.distributed.endpoint import Condition, RankComm, spelled
from pypto_sim_a2a3.distributed.windows import Place
from pypto_sim_a2a3.engine.scheduler import Event
from pypto_sim_a2a3.hw.cores import Core

Steps = Generator[Event, None, Any]
ADD = "AtomicAdd"
REDUCE: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "Sum": torch.add,
    "Max": torch.maximum,
    "Min": torch.minimum,
    "Prod": torch.mul,
}
TILE_ELEMENTS = 256  # a multi-core allreduce splits the payload block-cyclically in tiles of this


class Protocol:
    """One rank running one collective: the rank's endpoint, the core, the user's line."""

    def __init__(self, comm: RankComm, core: Core, span: SourceSpan | None, op: str) -> None:
        self.comm, self.core, self.span, self.op = comm, core, span, op
        self.what = spelled(op)
        self.me, self.n = comm.rank, comm.nranks

    def place(self, tensor: torch.Tensor) -> Place:
        return self.comm.place(tensor, self.span, self.what)

    def cell(self, signal: torch.Tensor, index: tuple[int, ...]) -> tuple[Place, tuple[int, ...]]:
        """The signal cell at ``index`` (a rank-1 signal ignores the lane)."""
        index = index[: signal.dim()] if signal.dim() < len(index) else index
        for dim, (i, size) in enumerate(zip(index, signal.shape, strict=False)):
            if i >= size:
                raise OutOfBoundsError(
                    f"{self.what}: its signal {list(signal.shape)} has no cell {list(index)} (dim {dim} has "
                    f"{size}) for {self.n} ranks",
                    self.span,
                    "size the signal for the world, e.g. "
                    "pld.window(buf, [pld.world_size(), 1], dtype=pl.INT32)",
                )
        view = signal[tuple(slice(i, i + 1) for i in index)]
        return self.place(view), index

    def notify(self, peer: int, signal: torch.Tensor, index: tuple[int, ...], value: int = 1) -> Steps:
        place, index = self.cell(signal, index)
        yield from self.comm.notify(self.core, peer, place, index, value, ADD, self.span)

    def wait(self, signal: torch.Tensor, index: tuple[int, ...], expected: int = 1) -> Steps:
        """Wait for ``expected`` credits in this rank's cell, then take them back."""
        place, index = self.cell(signal, index)
        yield from self.comm.wait(self.core, Condition(place, index, expected, "Ge", self.span, self.what))
        self.comm.consume(place, expected)

    def barrier(self, signal: torch.Tensor, lane: int = 0) -> Steps:
        """Every rank adds a credit to its row of every peer's signal, then waits for each peer's."""
        for peer in range(self.n):
            if peer != self.me:
                yield from self.notify(peer, signal, (self.me, lane))
        for src in range(self.n):
            if src != self.me:
                yield from self.wait(signal, (src, lane))

    def read(self, peer: int, view: torch.Tensor) -> Steps:
        return (yield from self.comm.read(self.core, peer, self.place(view), self.span, self.op))

    def write(self, peer: int, view: torch.Tensor, data: torch.Tensor) -> Steps:
        yield from self.comm.write(self.core, peer, self.place(view), data, self.span, self.op)


def _reduced(p: Protocol, views: list[torch.Tensor], op: str) -> Steps:
    """Each view reduced over the ranks, in rank order (every rank sums in the same order); the
    reads from all peers are in flight at once (a mesh: one link per peer)."""
    reduce = REDUCE[op]
    results = []
    for view in views:
        place = p.place(view)
        parts = yield from p.comm.read_all(p.core, [(rank, place) for rank in range(p.n)], p.span, p.op)
        acc = parts[0]
        for part in parts[1:]:
            acc = reduce(acc, part)
        results.append(acc)
    return results


def allreduce_mesh(
    p: Protocol, target: torch.Tensor, signal: torch.Tensor, op: str, lane: int = 0, blocks: int = 1
) -> Steps:
    """Barrier (every rank staged), read every peer's share and reduce, barrier (every rank read),
    write the result. With ``blocks`` > 1 this core (``lane``) takes tiles lane, lane + blocks, ..."""
    flat = target.reshape(-1)
    views = [
        flat[s : s + TILE_ELEMENTS] for s in range(lane * TILE_ELEMENTS, flat.numel(), blocks * TILE_ELEMENTS)
    ]
    if blocks == 1:
        views = [target]
    yield from p.barrier(signal, lane)
    results = yield from _reduced(p, views, op)
    yield from p.barrier(signal, lane)
    for view, result in zip(views, results, strict=True):
        yield from p.write(p.me, view, result)


def allreduce_ring(p: Protocol, target: torch.Tensor, signal: torch.Tensor, op: str) -> Steps:
    """Reduce-scatter then allgather around the ring, one chunk per rank. Step s of the
    reduce-scatter reads the left neighbour's chunk (me - s - 1) and reduces it into ours once the
    left one's signal row s says it is ready; a barrier on the diagonal cells (row n - 1, column of
    the rank itself) separates the phases; step t of the allgather copies the left one's finished
    chunk (me - t)."""
    n, me = p.n, p.me
    if n == 1:
        return
    flat = target.reshape(-1)
    chunks = list(torch.tensor_split(torch.arange(flat.numel()), n))
    part = [flat[int(c[0]) : int(c[-1]) + 1] if c.numel() else flat[:0] for c in chunks]
    left, right = (me - 1) % n, (me + 1) % n
    reduce = REDUCE[op]
    yield from p.notify(right, signal, (0, me))
    for step in range(n - 1):
        c = (me - step - 1) % n
        yield from p.wait(signal, (step, left))
        if part[c].numel():
            theirs = yield from p.read(left, part[c])
            yield from p.write(me, part[c], reduce(theirs, part[c].clone()))
        if step + 1 < n - 1:
            yield from p.notify(right, signal, (step + 1, me))
    for peer in range(n):  # the phase barrier, on the cells no forward notify uses
        if peer != me:
            yield from p.notify(peer, signal, (n - 1, peer))
    yield from p.wait(signal, (n - 1, me), n - 1)
    for step in range(n - 1):
        c = (me - step) % n
        if step > 0:
            yield from p.wait(signal, (n - 1 + step, left))
        if part[c].numel():
            theirs = yield from p.read(left, part[c])
            yield from p.write(me, part[c], theirs)
        if step + 1 < n - 1:
            yield from p.notify(right, signal, (n + step, me))


def barrier(p: Protocol, signal: torch.Tensor) -> Steps:
    yield from p.barrier(signal)


def broadcast(p: Protocol, target: torch.Tensor, signal: torch.Tensor, root: int) -> Steps:
    """The root says its data is staged; each other rank reads it and says it is done (the root
    may not overwrite it before)."""
    root = p.comm.check_peer(root, p.span, f"{p.what} root")
    if p.me == root:
        for peer in range(p.n):
            if peer != root:
                yield from p.notify(peer, signal, (root, 0))
        for peer in range(p.n):
            if peer != root:
                yield from p.wait(signal, (peer, 0))
        return
    yield from p.wait(signal, (root, 0))
    data = yield from p.read(root, target)
    yield from p.write(p.me, target, data)
    yield from p.notify(root, signal, (p.me, 0))


def allgather(p: Protocol, local: torch.Tensor, target: torch.Tensor, signal: torch.Tensor) -> Steps:
    """Each rank writes its chunk into row ``me`` of every rank's target, then notifies it."""
    row = target[p.me : p.me + 1]
    data = local.reshape(row.shape) if local.numel() == row.numel() else _mismatch(p, local, row)
    for peer in range(p.n):
        yield from p.write(peer, row, data)
    for peer in range(p.n):
        if peer != p.me:
            yield from p.notify(peer, signal, (p.me, 0))
    for src in range(p.n):
        if src != p.me:
            yield from p.wait(signal, (src, 0))


def reduce_scatter(p: Protocol, target: torch.Tensor, signal: torch.Tensor, op: str) -> Steps:
    """Barrier (every rank staged its rows), read row ``me`` of every rank and reduce it, barrier
    (every rank read), write it into row ``me``."""
    row = target[p.me : p.me + 1]
    yield from p.barrier(signal)
    (result,) = yield from _reduced(p, [row], op)
    yield from p.barrier(signal)
    yield from p.write(p.me, row, result)


def all_to_all(p: Protocol, source: torch.Tensor, target: torch.Tensor, signal: torch.Tensor) -> Steps:
    """Row d of each rank's input lands in row ``me`` of rank d's target."""
    row = target[p.me : p.me + 1]
    for peer in range(p.n):
        yield from p.write(peer, row, source[peer : peer + 1].clone())
    for peer in range(p.n):
        if peer != p.me:
            yield from p.notify(peer, signal, (p.me, 0))
    for src in range(p.n):
        if src != p.me:
            yield from p.wait(signal, (src, 0))


def _mismatch(p: Protocol, local: torch.Tensor, row: torch.Tensor) -> torch.Tensor:
    raise OutOfBoundsError(
        f"{p.what}: the local chunk has {local.numel()} elements but a row of the target has {row.numel()}",
        p.span,
        "make the target [nranks, ...] with rows the size of the local chunk",
    )
