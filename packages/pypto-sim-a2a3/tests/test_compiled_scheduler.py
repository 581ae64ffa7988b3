"""The scheduler's wake-ups are incremental, and the compiled scheduler agrees with the Python one.

Randomized sets of processes (busy stretches, waits on signals and polled waits, waits that keep
their core's clock, waits whose check takes a token or changes another signal, on_wake, on_time,
observers, deadlocks, a coroutine that raises) run on three schedulers: the Python reference, a
reference that walks every blocked process at each pass as the scheduler once did (below), and the
compiled one. Each must give the same log of every call made into the processes' world, the same
results, clocks and errors.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pypto.ir import DeadlockError, SourceSpan
from pypto_sim_a2a3.engine.scheduler import Advance, Blocked, Event, Scheduler, Signal, Wait
from pypto_sim_a2a3.hw import engines
from pypto_sim_a2a3.hw.cores import Core

needs_compiled = pytest.mark.skipif(
    engines.COMPILED_SCHEDULER is None,
    reason=f"the compiled scheduler is not built here ({engines.WHY_SCHEDULER_MISSING})",
)


class FullPoll(Scheduler):
    """The wake-up pass as it was before it was incremental: every blocked process is visited in
    the order they blocked, and those a signal marked or whose wait names none are checked."""

    def _wake_ready(self) -> None:
        self._due.clear()
        for proc in list(self._blocked):
            assert proc.waiting is not None
            if not proc.waiting.on or proc.dirty:
                self._check(proc)


@dataclass
class World:
    """The state the processes share, and the log of everything the scheduler made them do."""

    signals: list[Signal]
    tokens: list[int]
    log: list[Any] = field(default_factory=list)


def random_script(rng: random.Random, signals: int) -> list[tuple[Any, ...]]:
    """One process's steps, drawn before the run (so that every scheduler runs the same ones)."""
    script: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(1, 10)):
        kind = rng.choices(["advance", "give", "wait", "fail"], [5, 3, 4, 0.05])[0]
        j = rng.randrange(signals)
        if kind == "advance":
            script.append(("advance", rng.choice(["CUBE", "VECTOR", "MTE2"]), rng.randint(0, 20)))
        elif kind == "give":
            script.append(("give", j, rng.randint(1, 2), rng.random() < 0.95))  # now and then unsignalled
        elif kind == "wait":
            on = rng.choice([(), (j,), (j, rng.randrange(signals))])
            effect = rng.choice(["peek", "take", "poke"])
            other = rng.randrange(signals)
            keeps = rng.random() < 0.25
            script.append(("wait", j, rng.randint(1, 2), on, effect, other, keeps, rng.randint(1, 99)))
        else:
            script.append(("fail",))
    return script


def process(world: World, name: str, script: list[tuple[Any, ...]]) -> Generator[Event, None, Any]:
    tokens, signals = world.tokens, world.signals
    for n, step in enumerate(script):
        if step[0] == "advance":
            yield Advance(step[1], step[2], f"op{n}")
        elif step[0] == "give":
            _, j, amount, signalled = step
            tokens[j] += amount
            if signalled:
                signals[j].changed()
        elif step[0] == "fail":
            raise ValueError(f"{name} failed at step {n}")
        else:
            _, j, need, on, effect, other, keeps, line = step
            yield Wait(
                checker(world, name, n, j, need, effect, other),
                f"{need} token(s) of {j}",
                SourceSpan("kernel.py", line),
                (lambda j=j, line=line: Blocked(f"needs token {j}", SourceSpan("cause.py", line), "give it"))
                if line % 3 == 0
                else None,
                keeps_clock=keeps,
                on=tuple(signals[i] for i in on),
            )
    return (name, len(script))


def checker(
    world: World, name: str, n: int, j: int, need: int, effect: str, other: int
) -> Callable[[], bool]:
    """A wait's check: ``peek`` only reads; ``take`` takes the tokens when they are there (which
    waiter gets them depends on the order of the checks); ``poke`` also gives a token to another
    signal at each check (a check that changes a signal during a pass)."""
    tokens, signals, log = world.tokens, world.signals, world.log

    def ready() -> bool:
        ok = tokens[j] >= need
        log.append(("check", name, n, ok))
        if ok and effect == "take":
            tokens[j] -= need
            signals[j].changed()
        if effect == "poke" and len(log) % 4 == 0:
            tokens[other] += 1
            signals[other].changed()
        return ok

    return ready


def describe(event: Event) -> tuple[Any, ...]:
    if isinstance(event, Advance):
        return ("busy", event.unit, event.op)
    return ("stall", event.what, event.keeps_clock)


def simulate(make: Callable[..., Any], seed: int, check: bool = False, window: int = 0) -> list[Any]:
    """Run the processes of ``seed`` on a scheduler of class ``make``; everything that happened."""
    rng = random.Random(seed)
    signals = rng.randint(1, 4)
    world = World([Signal() for _ in range(signals)], [rng.randint(0, 1) for _ in range(signals)])
    scripts = [random_script(rng, signals) for _ in range(rng.randint(1, 7))]
    watched = [rng.random() < 0.5 for _ in scripts]
    log = world.log
    scheduler = make(
        on_time=(lambda t: log.append(("time", t))) if rng.random() < 0.7 else None, check_wakeups=check
    )
    scheduler.observe(
        lambda core, start, cycles, event: log.append(("slice", core.name, start, cycles, describe(event)))
    )
    cores = [Core(f"core{i}", clock=rng.randint(0, 30)) for i in range(len(scripts))]
    procs = []
    for i, (core, script) in enumerate(zip(cores, scripts, strict=True)):
        proc = scheduler.spawn(core, process(world, core.name, script))
        if watched[i]:
            proc.on_wake = lambda stepper, name=core.name: log.append(
                ("woken", name, None if stepper is None else stepper.core.name)
            )
        procs.append(proc)
    try:
        if window:
            horizon = window
            while (next_event := scheduler.run_until(horizon)) is not None:
                log.append(("window", next_event, scheduler.now))
                horizon = next_event + window
            waiting = [(name, wait.what) for name, wait in scheduler.waiting()]
            log.append(("stopped", scheduler.idle, scheduler.blocked_reasons(), waiting))
        else:
            scheduler.run()
    except DeadlockError as error:
        log.append(("deadlock", error.message, error.span, error.hint, scheduler.blocked_reasons()))
    except (ValueError, AssertionError) as error:
        log.append(("error", type(error).__name__, str(error)))
    log.append(("end", scheduler.now, scheduler.idle, [(p.done, p.result) for p in procs]))
    log.append([(c.clock, c.busy, c.stalled) for c in cores])
    return log


def test_the_incremental_wake_up_checks_what_a_full_poll_checks_in_the_same_order():
    outcomes = set()
    for seed in range(400):
        incremental, polled = simulate(Scheduler, seed), simulate(FullPoll, seed)
        assert incremental == polled, f"seed {seed}"
        outcomes.add(next((entry[0] for entry in incremental if entry[0] in ("deadlock", "error")), "done"))
    assert outcomes == {"done", "deadlock", "error"}  # the random sets reach every ending


@needs_compiled
@pytest.mark.parametrize("check", [False, True], ids=["signalled", "check_wakeups"])
def test_the_compiled_scheduler_does_what_the_python_one_does(check: bool):
    compiled = engines.COMPILED_SCHEDULER
    missed = 0
    for seed in range(400):
        expected = simulate(Scheduler, seed, check)
        assert simulate(compiled, seed, check) == expected, f"seed {seed}"
        missed += any(
            entry[0] == "error" and "missed a wake-up" in entry[2] for entry in expected if len(entry) == 3
        )
    assert (missed > 0) == check  # check mode catches the gives that forgot to signal


@needs_compiled
def test_the_compiled_scheduler_runs_window_by_window_as_the_python_one():
    for seed in range(200):
        assert simulate(engines.COMPILED_SCHEDULER, seed, window=7) == simulate(Scheduler, seed, window=7), (
            seed
        )


@needs_compiled
def test_a_compiled_process_is_what_the_python_code_reads_and_sets():
    scheduler = engines.COMPILED_SCHEDULER()
    core, flag = Core("aiv"), Signal()
    seen: list[Any] = []

    def waiter():
        yield Wait(lambda: core.busy >= 0 and seen != [], "the flag", on=(flag,))
        return "done"

    def setter():
        yield Advance("VECTOR", 5)
        seen.append(scheduler.waiting())
        flag.changed()

    proc = scheduler.spawn(core, waiter())
    other = scheduler.spawn(Core("aic"), setter())
    proc.on_wake = lambda stepper: seen.append(stepper)
    assert (proc.core, proc.order, proc.done, proc.waiting, other.order) == (core, 0, False, None, 2)
    scheduler.run()
    assert seen[0][0][0] == "aiv" and seen[0][0][1].what == "the flag"
    assert seen[1] is other and scheduler.stepping is proc  # the waiter took the last step
    assert (proc.done, proc.result, proc.waiting, scheduler.now, scheduler.idle) == (
        True,
        "done",
        None,
        5,
        True,
    )
    with pytest.raises(AttributeError):
        proc.core = core  # type: ignore[misc]
    with pytest.raises(TypeError):
        scheduler.spawn(core)  # type: ignore[call-arg]
    unmade = engines.COMPILED_SCHEDULER.__new__(engines.COMPILED_SCHEDULER)
    with pytest.raises(RuntimeError, match="was not called"):
        unmade.run()


def test_the_engine_setting_picks_the_scheduler(monkeypatch: pytest.MonkeyPatch):
    assert engines.scheduler_class("python") is Scheduler
    monkeypatch.setattr(engines, "COMPILED_SCHEDULER", FullPoll)  # any class: it stands for the built one
    assert engines.scheduler_class("auto") is FullPoll
    assert engines.scheduler_class("compiled") is FullPoll
    monkeypatch.setattr(engines, "COMPILED_SCHEDULER", None)
    monkeypatch.setattr(engines, "_noticed", True)  # (the notice: test_compiled_core.py)
    assert engines.scheduler_class("auto") is Scheduler
    assert not engines.compiled_core_built()
    with pytest.raises(Exception, match="PYPTO_SIM_ENGINE=compiled"):
        engines.scheduler_class("compiled")
