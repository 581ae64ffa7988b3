"""The compiled timing core agrees with the Python engine it mirrors, and is optional.

The compiled ``CorePipes`` (``pypto_sim_a2a3.hw._corepipes``, C) is run beside the Python reference
(``pypto_sim_a2a3.hw.corepipes``) on the same randomized sequences of ops (overlapping byte ranges
of several spaces, pipes, GM tensors that share storage, dependencies on other cores): every op
must start and be ready at the same cycle, every query must answer the same, and both must record
the same slices, field for field and in the same order. Then: what a run does when the compiled
core is missing (``auto`` falls back with one notice per process; ``compiled`` is an error).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from sim_lowered import rand, run, single, vector_binary_kernel
from sim_mixed import round_trip

from pypto.ir import MemorySpace, SourceSpan
from pypto.ir.errors import ConfigError
from pypto_sim_a2a3.hw import engines
from pypto_sim_a2a3.hw.corepipes import CorePipes, Dependency, Region
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.hw.cost import OpCost

needs_compiled = pytest.mark.skipif(
    not engines.compiled_core_built(),
    reason=f"the compiled timing core is not built here ({engines.WHY_MISSING})",
)

PIPES = ("MTE2", "MTE1", "CUBE", "VECTOR", "FIXPIPE", "MTE3", "SCALAR")
SPACES = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left)


class Slices:
    """A recorder that keeps the slices it is given, in order."""

    def __init__(self) -> None:
        self.slices: list[Any] = []

    def record(self, piece: Any) -> None:
        self.slices.append(piece)


def region(rng: random.Random) -> Region:
    lo = rng.randrange(0, 16) * 32
    hi = lo + rng.randrange(0 if rng.random() < 0.05 else 1, 8) * 32  # now and then an empty range
    return Region(rng.choice(SPACES), lo, hi)


def random_op(rng: random.Random, tensors: list[torch.Tensor], clock: int) -> dict[str, Any]:
    """The arguments of one ``run``: a cost, a call (or none), what it reads, writes and waits for."""
    cycles = rng.choice((0, 1, rng.randrange(2, 200)))
    cost = OpCost(
        rng.choice(PIPES),
        cycles,
        rng.choice((0.0, float(cycles) / 2)),
        rng.choice((None, "cube", "vector", "memory")),
        rng.randrange(0, cycles + 1) if rng.random() < 0.3 else 0,
    )
    call = (
        None
        if rng.random() < 0.2
        else SimpleNamespace(
            op=rng.choice(("tile.load", "tile.add", "tile.matmul")),
            span=None if rng.random() < 0.2 else SourceSpan("kernel.py", rng.randrange(1, 50)),
        )
    )
    after = [
        Dependency(
            clock + rng.randrange(-20, 300),
            rng.choice((None, "", *PIPES)),
            rng.choice(("a slot of ring c2v", "the barrier", "GM written by this core")),
            rng.randrange(0, clock + 300),
        )
        for _ in range(rng.choice((0, 0, 1, 2)))
    ]
    return {
        "cost": cost,
        "call": call,
        "issue": clock,
        "reads": [region(rng) for _ in range(rng.randrange(0, 3))],
        "writes": [region(rng) for _ in range(rng.randrange(0, 2))],
        "gm_reads": rng.sample(tensors, rng.randrange(0, 3)),
        "gm_writes": rng.sample(tensors, rng.randrange(0, 2)),
        "after": after,
        "name": rng.choice((None, None, "", "tpush_to_aiv")),
    }


def fields(pieces: list[Any]) -> list[list[tuple[str, Any]]]:
    """Each slice's fields in the order its record holds them."""
    return [list(piece.__dict__.items()) for piece in pieces]


def run_both(seed: int, ops: int = 80) -> None:
    rng = random.Random(seed)
    base = torch.zeros(64)
    tensors = [torch.zeros(4), torch.zeros(8), base[:32], base[32:]]  # the last two share storage
    core = Core("cg0.AIV0", task="kernel_0")
    python_slices, compiled_slices = Slices(), Slices()
    flag = rng.choice((0, 10, 37))
    reference = CorePipes(core, python_slices, flag)
    assert engines.COMPILED is not None
    compiled = engines.COMPILED(core, compiled_slices, flag)
    clock = 0
    for step in range(ops):
        if rng.random() < 0.1:
            core.task = f"kernel_{step}"  # the slices name the task the core runs now
        choice = rng.random()
        if choice < 0.08:
            source, dest = region(rng), region(rng)
            reference.copied(source, dest)
            compiled.copied(source, dest)
            continue
        if choice < 0.16:
            regions = [region(rng) for _ in range(rng.randrange(0, 3))]
            pipes = rng.choice((None, ("MTE2", "MTE3", "FIXPIPE"), ("CUBE",), ("NOPE",), ()))
            assert compiled.ready(regions) == reference.ready(regions)
            assert compiled.last_read(regions) == reference.last_read(regions)
            assert compiled.drained(pipes) == reference.drained(pipes)
            for tensor in tensors:
                assert compiled.gm_written(tensor) == reference.gm_written(tensor)
            continue
        args = random_op(rng, tensors, clock)
        expected = reference.run(**args)
        assert compiled.run(**args) == expected, f"seed {seed}, op {step}: {args}"
        clock = max(clock, expected[0]) if rng.random() < 0.5 else clock + rng.randrange(0, 5)
    assert compiled.free == reference.free
    assert compiled.drained() == reference.drained()
    assert compiled_slices.slices == python_slices.slices
    assert fields(compiled_slices.slices) == fields(python_slices.slices)


@needs_compiled
@pytest.mark.parametrize("seeds", [range(0, 60), range(60, 120)], ids=["seeds 0-59", "seeds 60-119"])
def test_compiled_core_pipes_match_the_python_ones_on_random_ops(seeds: range):
    for seed in seeds:
        run_both(seed)


@needs_compiled
def test_compiled_core_pipes_take_positional_and_keyword_arguments_as_the_python_ones():
    core = Core("cg0.AIC")
    cost = OpCost("MTE2", 100, 12.5, "memory", 40)
    call = SimpleNamespace(op="tile.load", span=SourceSpan("k.py", 3))
    vec = Region(MemorySpace.Vec, 0, 256)
    results = []
    for make in (CorePipes, engines.COMPILED):
        assert make is not None
        pipes = make(core, Slices(), 10)
        first = pipes.run(cost, call, 5, [], [vec])
        second = pipes.run(cost=OpCost("VECTOR", 7), call=call, issue=0, reads=[vec], name="add")
        third = pipes.run(OpCost("MTE3", 3), None, 1, [vec], [], [], [torch.zeros(2)], [], None)
        results.append((first, second, third, pipes.drained(pipes=["VECTOR"]), pipes.free))
    assert results[0] == results[1]
    assert results[0][1] == (115, 122)  # the add waited for the load's data (ready at 105) and its flag


@needs_compiled
def test_a_bad_argument_to_the_compiled_core_pipes_is_a_type_error():
    assert engines.COMPILED is not None
    pipes = engines.COMPILED(Core("c"), Slices(), 0)
    with pytest.raises(TypeError):
        pipes.run(OpCost("MTE2", 1), None)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        pipes.run(OpCost("MTE2", 1), None, 0, colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        pipes.run(OpCost("MTE2", 1), None, "soon")  # type: ignore[arg-type]
    unmade = engines.COMPILED.__new__(engines.COMPILED)  # __init__ never ran: an error, not a crash
    with pytest.raises(RuntimeError, match="was not called"):
        unmade.drained()
    pipes.run(OpCost("MTE2", 10), None, 0, writes=[Region(MemorySpace.Vec, 0, 64)])
    pipes.__init__(Core("c"), Slices(), 0)  # type: ignore[misc]  # made again: it starts afresh
    assert (pipes.free, pipes.ready([Region(MemorySpace.Vec, 0, 64)])) == ({}, 0)


def test_the_engine_setting_picks_the_core_pipes(monkeypatch: pytest.MonkeyPatch):
    assert engines.core_pipes_class("python") is CorePipes
    monkeypatch.setattr(engines, "COMPILED", Slices)  # any class: it stands for the built core
    assert engines.core_pipes_class("auto") is Slices
    assert engines.core_pipes_class("compiled") is Slices


def test_without_the_compiled_core_auto_falls_back_with_one_notice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(engines, "COMPILED", None)
    monkeypatch.setattr(engines, "_noticed", False)
    assert engines.core_pipes_class("auto") is CorePipes
    assert engines.core_pipes_class("auto") is CorePipes
    assert engines.core_pipes_class("python") is CorePipes
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"pypto: warn: {engines.NOTICE}"]


def test_without_the_compiled_core_python_says_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setattr(engines, "COMPILED", None)
    monkeypatch.setattr(engines, "_noticed", False)
    assert engines.core_pipes_class("python") is CorePipes
    assert capsys.readouterr().err == ""


def test_without_the_compiled_core_asking_for_it_is_a_config_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(engines, "COMPILED", None)
    with pytest.raises(ConfigError, match="PYPTO_SIM_ENGINE=compiled") as raised:
        engines.core_pipes_class("compiled")
    assert "C compiler" in str(raised.value.hint)
    assert "PYPTO_SIM_ENGINE=auto or python" in str(raised.value.hint)


def test_the_runs_engine_setting_reaches_the_pipes_of_every_core(monkeypatch: pytest.MonkeyPatch):
    """PYPTO_SIM_ENGINE, read once per run, picks the class of each core's pipes: the compiled
    one (here a stand-in that counts the cores it is made for) or the Python reference."""
    made: list[str] = []

    class Counted(CorePipes):
        def __init__(self, core: Core, recorder: Any, flag_cycles: int):
            super().__init__(core, recorder, flag_cycles)
            made.append(core.name)

    monkeypatch.setattr(engines, "COMPILED", Counted)
    a, b = rand(64, 128, seed=1), rand(64, 128, seed=2)
    for engine, counted in (("compiled", True), ("python", False)):
        monkeypatch.setenv("PYPTO_SIM_ENGINE", engine)
        made.clear()
        run(single(vector_binary_kernel("tile.add")), a, b, torch.zeros(64, 128))
        run(round_trip(), *(rand(64, 64, seed=s) for s in range(4)), torch.zeros(64, 64))
        assert sorted(made) == (["cg0.AIC", "cg0.AIV0", "cg0.AIV0", "cg0.AIV1"] if counted else [])


FALLBACK = r"""
import sys
sys.modules["pypto_sim_a2a3.hw._corepipes"] = None  # as if the install had found no C compiler
sys.modules["pypto_sim_a2a3.engine._scheduler"] = None
sys.path.insert(0, sys.argv[1])
from sim_lowered import rand, run, single, vector_binary_kernel
import torch
prog = single(vector_binary_kernel("tile.add", (16, 16)))
a, b = rand(16, 16, seed=1), rand(16, 16, seed=2)
for _ in range(2):
    out = torch.zeros(16, 16)
    report = run(prog, a, b, out)
    assert torch.equal(out, a + b)
print(report.total_cycles)
"""


def test_a_run_without_the_compiled_core_simulates_on_python_and_says_so_once():
    tests = str(Path(__file__).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("PYPTO_SIM_ENGINE", "PYPTO_LOG_LEVEL")}
    done = subprocess.run(
        [sys.executable, "-c", FALLBACK, tests], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"pypto: warn: {engines.NOTICE}"]
    python = subprocess.run(
        [sys.executable, "-c", FALLBACK, tests],
        capture_output=True,
        text=True,
        env={**env, "PYPTO_SIM_ENGINE": "python"},
        timeout=300,
    )
    assert python.returncode == 0, python.stderr
    assert python.stderr == ""
    assert python.stdout == done.stdout  # the same modeled cycles


def test_the_compiled_core_is_built_where_a_compiler_is():
    """Where the C compiler Python was built with is found, the install built the compiled core
    (else tests/test_engines_agree.py would hold the Python engine to itself, and the tests above
    would be skipped)."""
    compiler = (sysconfig.get_config_var("CC") or "").split()
    if not compiler or shutil.which(compiler[0]) is None:
        pytest.skip("no C compiler here: the simulator falls back to the Python engine")
    assert engines.compiled_core_built(), (
        f"a C compiler ({compiler[0]}) is here, but the compiled timing core is not built "
        f"({engines.WHY_MISSING}): run `python -m pip install -e packages/pypto-sim-a2a3` again"
    )
