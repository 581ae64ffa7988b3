"""The task graph finds a task's conflicting earlier tasks through an index of their pl.parallel
contexts; it must give exactly the edges (and their order and tensor names) of a plain scan of
every earlier use, on randomized programs of overlapping, aliased and transposed views, access
modes, untracked arguments and nested pl.parallel loops."""

import random
from dataclasses import dataclass, field

import pytest
import torch
from sim_lowered import FunctionBuilder, tensor_t

from pypto.ir import UNIT, AccessMode, Direction, FunctionKind, Var, make_call
from pypto_sim_a2a3.engine import taskgraph
from pypto_sim_a2a3.engine.taskgraph import ParallelContext, TaskGraph, Use


@dataclass
class ScannedUses:
    """The straightforward record of one storage's uses: every one since the last covering
    writer, scanned whole by each later task."""

    readers: list[Use] = field(default_factory=list)
    writers: list[Use] = field(default_factory=list)

    def met_by(self, mode: AccessMode, parallel: ParallelContext) -> list[Use]:
        return self.writers + self.readers if mode.writes else list(self.writers)

    def add(self, use: Use) -> None:
        (self.writers if use.mode.writes else self.readers).append(use)

    def drop_covered(self, where) -> None:
        self.readers = [u for u in self.readers if not where.covers(u.where)]
        self.writers = [u for u in self.writers if not where.covers(u.where)]


ARGS = 3
MODES = (AccessMode.In, AccessMode.Out, AccessMode.InOut, AccessMode.Accumulate)


NAMES = [Var(f"x{index}", tensor_t((8, 8))) for index in range(ARGS)]


def _call(attrs):
    return make_call("call", NAMES, {"callee": "k", **attrs}, None, type=UNIT)


def _kernel():
    k = FunctionBuilder("k", FunctionKind.AIV)
    for index in range(ARGS):
        k.param(f"t{index}", tensor_t((8, 8)), Direction.InOut)
    return k.build()


def _views(rng: random.Random, bases: list[torch.Tensor]) -> torch.Tensor:
    """A view of one of ``bases``: the whole, a box of rows and columns, a transpose, a row."""
    base = rng.choice(bases)
    kind = rng.randrange(4)
    if kind == 0:
        return base
    if kind == 1:
        r, c = rng.randrange(8), rng.randrange(8)
        return base[r : r + rng.randint(1, 8 - r), c : c + rng.randint(1, 8 - c)]
    if kind == 2:
        return base.t()
    return base[rng.randrange(8)]


def _contexts(rng: random.Random, count: int) -> list[ParallelContext]:
    """The pl.parallel contexts of ``count`` tasks as a host walk makes them: nested loops, each
    entry of a loop a fresh instance, tasks before, inside and after them; now and then a context
    no walk makes (the index must hold for any)."""
    contexts: list[ParallelContext] = []
    instances = iter(range(1000))

    def walk(outer: ParallelContext, depth: int) -> None:
        while len(contexts) < count:
            choice = rng.random()
            if choice < 0.35 or depth >= 3:
                contexts.append(outer)
            elif choice < 0.8:
                loop = next(instances)
                for iteration in range(rng.randint(1, 4)):
                    walk((*outer, (loop, iteration)), depth + 1)
            elif choice < 0.85:
                contexts.append(tuple((rng.randrange(3), rng.randrange(3)) for _ in range(rng.randint(1, 3))))
            else:
                return

    while len(contexts) < count:
        walk((), 0)
    return contexts[:count]


def _submit_all(seed: int):
    rng = random.Random(seed)
    bases = [torch.zeros(8, 8) for _ in range(2)]
    kernel = _kernel()
    tasks = []
    for parallel in _contexts(rng, 60):
        args = tuple(_views(rng, bases) for _ in range(ARGS))
        attrs = {"access": tuple(rng.choice(MODES) for _ in range(ARGS))}
        if rng.random() < 0.15:
            attrs["no_dep"] = (rng.randrange(ARGS),)
        call = _call(attrs)
        tasks.append((call, args, parallel))
    return kernel, tasks


def _graph(kernel, tasks) -> TaskGraph:
    graph = TaskGraph()
    for call, args, parallel in tasks:
        graph.submit(kernel, call, args, parallel, ())
    return graph


@pytest.mark.parametrize("seed", range(40))
def test_the_indexed_graph_gives_the_edges_of_a_plain_scan(seed, monkeypatch):
    kernel, tasks = _submit_all(seed)
    indexed = _graph(kernel, tasks)
    with monkeypatch.context() as patch:
        patch.setattr(taskgraph, "StorageUses", ScannedUses)
        scanned = _graph(kernel, tasks)
    assert indexed.edges == scanned.edges
    assert [t.deps for t in indexed.tasks] == [t.deps for t in scanned.tasks]
    assert [t.ancestors for t in indexed.tasks] == [t.ancestors for t in scanned.tasks]
    assert scanned.edges or seed > 0  # (the programs do make edges)


def test_the_tasks_of_a_grid_meet_no_sibling_use():
    """A 16x16 grid of tasks writing one tensor: no task looks at another's use."""
    kernel = _kernel()
    out = torch.zeros(8, 8)
    graph = TaskGraph()
    call = _call({"access": (AccessMode.Out,) * ARGS})
    for i in range(16):
        for j in range(16):
            graph.submit(kernel, call, (out, out, out), ((0, i), (1 + i, j)), ())
    uses = graph._uses[out.untyped_storage().data_ptr()]
    assert uses.met_by(AccessMode.Out, ((0, 3), (4, 5))) == [
        u for u in uses.root.deeper[0][3].deeper[4][5].writers
    ]
    assert graph.edges == []
    later = graph.submit(kernel, call, (out, out, out), (), ())  # after the grid: waits for all
    assert len(later.ancestors) == 256
