"""A run lets go of what a retired task can no longer need: its launches (each core's GM access
record, pipes, roles) at once, and its GM accesses in the race record once all of them are
checked, when the program's edges order every two tasks that share bytes. A program with an
untracked argument, a ``pl.parallel`` loop, a ``predicate=`` or a kernel writing a parameter it
does not declare written keeps every access: a later task may race with a retired one."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import RaceError
from pypto.runtime import RunConfig, compile_program
from pypto_sim_a2a3.checks.races import edges_order_every_conflict
from pypto_sim_a2a3.engine.chip import Chip

R, C = 32, 64
T = pl.Tensor[[2 * R, C], pl.FP32]
SIM = RunConfig(platform="a2a3sim")


@pytest.fixture
def held(monkeypatch):
    """What each run's chip still holds when it ends: (accesses in its race record, launches)."""
    seen: list[tuple[int, int]] = []
    release = Chip.release

    def observed(chip: Chip) -> None:
        seen.append((len(chip.races), sum(map(len, chip._launches.values()))))
        release(chip)

    monkeypatch.setattr(Chip, "release", observed)
    return seen


def chain(untracked: bool):
    """Six tasks, each reading what the one before wrote, and a seventh reading ``c``, through a
    ``pl.no_dep`` argument with ``untracked``."""

    @pl.program
    class Chain:
        @pl.function(type=pl.FunctionType.InCore)
        def bump(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.add(pl.load(a, [0, 0], [2 * R, C]), 1.0), [0, 0], out)

        @pl.function(type=pl.FunctionType.InCore)
        def band(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.exp(pl.load(a, [0, 0], [R, C])), [R, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.InOut[T], b: pl.InOut[T], c: T, out: pl.Out[T]) -> T:
            for _ in pl.range(3):
                b = self.bump(a, b)
                a = self.bump(b, a)
            if untracked:  # noqa: SIM108 - the parser folds a compile-time if, not a conditional expression
                out = self.band(pl.no_dep(c), out)
            else:
                out = self.band(c, out)
            return out

    return Chain


def test_an_ordered_program_ends_holding_no_access_and_no_launch(held):
    a, b, c, out = (torch.zeros(2 * R, C) for _ in range(4))
    compile_program(chain(untracked=False), SIM).run(a, b, c, out)
    torch.testing.assert_close(a, torch.full((2 * R, C), 6.0))
    assert held == [(0, 0)]


def test_a_program_with_an_untracked_argument_keeps_every_access(held):
    a, b, c, out = (torch.zeros(2 * R, C) for _ in range(4))
    compile_program(chain(untracked=True), SIM).run(a, b, c, out)
    accesses, launches = held[0]
    assert accesses > 0 and launches == 0


def test_a_retired_task_still_races_with_a_later_untracked_one():
    @pl.program
    class Late:
        @pl.function(type=pl.FunctionType.InCore)
        def fill(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.load(a, [0, 0], [2 * R, C]), [0, 0], out)

        @pl.function(type=pl.FunctionType.InCore)
        def slow(self, a: T, out: pl.Out[T]) -> T:
            t = pl.load(a, [0, 0], [2 * R, C])
            for _ in pl.range(8):
                t = pl.exp(t)
            return pl.store(t, [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: T, b: pl.Out[T], c: pl.Out[T]) -> T:
            b = self.fill(a, b)  # task 1: quick
            c = self.slow(a, c)  # task 2: long; task 3 waits for it, not for task 1
            b = self.fill(c, pl.no_dep(b))  # task 3 overwrites b with no edge to task 1
            return b

    args = [torch.zeros(2 * R, C) for _ in range(3)]
    with pytest.raises(RaceError, match="no dependency orders the two tasks"):
        compile_program(Late, SIM).run(*args)


def test_a_kernel_writing_an_input_leaves_the_edges_unsure():
    @pl.program
    class Writes:
        @pl.function(type=pl.FunctionType.InCore)
        def sneaky(self, a: T, out: pl.Out[T]) -> T:
            t = pl.load(a, [0, 0], [2 * R, C])
            pl.store(t, [0, 0], a)
            return pl.store(t, [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: T, out: pl.Out[T]) -> T:
            out = self.sneaky(a, out)
            return out

    @pl.program
    class Honest:
        @pl.function(type=pl.FunctionType.InCore)
        def copy(self, a: T, out: pl.Out[T]) -> T:
            return pl.store(pl.load(a, [0, 0], [2 * R, C]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: T, out: pl.Out[T]) -> T:
            out = self.copy(a, out)
            return out

    with pytest.warns(Warning):
        sneaky = compile_program(Writes, SIM).program
    assert not edges_order_every_conflict(sneaky)
    assert edges_order_every_conflict(compile_program(Honest, SIM).program)
