"""The discrete-event scheduler on hand-written coroutines: clock order, waits, stalls, deadlock.

Each test runs on the Python reference and on the compiled scheduler (where it was built)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pypto.ir import DeadlockError, SourceSpan
from pypto_sim_a2a3.engine.scheduler import Advance, Blocked, Scheduler, Signal, Wait
from pypto_sim_a2a3.hw import engines

SCHEDULERS = [Scheduler] + ([engines.COMPILED_SCHEDULER] if engines.COMPILED_SCHEDULER is not None else [])


@pytest.fixture(params=SCHEDULERS, ids=lambda cls: cls.__module__.rsplit(".", 1)[-1])
def Scheduler(request: pytest.FixtureRequest) -> type:  # (it stands for the class)
    return request.param


@dataclass(eq=False)
class ToyCore:
    name: str
    clock: int = 0
    log: list[tuple[str, int]] = field(default_factory=list)
    stalled: int = 0

    def advance(self, unit: str, cycles: int) -> None:
        self.log.append((unit, self.clock))
        self.clock += cycles

    def stall(self, cycles: int) -> None:
        self.stalled += cycles
        self.clock += cycles


def test_processes_step_in_order_of_their_core_clocks(Scheduler):
    order: list[str] = []

    def worker(name: str, cycles: int):
        for _ in range(3):
            order.append(name)
            yield Advance("VECTOR", cycles)

    scheduler = Scheduler()
    scheduler.spawn(ToyCore("slow"), worker("slow", 30))
    scheduler.spawn(ToyCore("fast"), worker("fast", 10))
    scheduler.run()
    assert order == ["slow", "fast", "fast", "fast", "slow", "slow"]


def test_generator_return_value_becomes_the_process_result(Scheduler):
    def kernel():
        yield Advance("CUBE", 5)
        return ("done",)

    scheduler = Scheduler()
    proc = scheduler.spawn(ToyCore("aic"), kernel())
    scheduler.run()
    assert proc.done and proc.result == ("done",)


def test_a_waiting_core_resumes_at_the_time_the_other_core_freed_it(Scheduler):
    ready = {"flag": False}

    def producer():
        yield Advance("MTE2", 100)
        ready["flag"] = True
        yield Advance("MTE2", 1)

    def consumer():
        yield Wait(lambda: ready["flag"], "the flag")
        yield Advance("VECTOR", 7)

    consumer_core = ToyCore("aiv")
    scheduler = Scheduler()
    scheduler.spawn(ToyCore("aic"), producer())
    scheduler.spawn(consumer_core, consumer())
    scheduler.run()
    assert consumer_core.log == [("VECTOR", 100)]
    assert consumer_core.clock == 107
    assert consumer_core.stalled == 100


def test_a_wait_that_is_already_satisfied_costs_no_stall(Scheduler):
    def kernel():
        yield Advance("VECTOR", 50)
        yield Wait(lambda: True, "nothing")
        yield Advance("VECTOR", 5)

    core = ToyCore("aiv")
    scheduler = Scheduler()
    scheduler.spawn(core, kernel())
    scheduler.run()
    assert (core.clock, core.stalled) == (55, 0)


def test_every_live_core_blocked_is_a_deadlock_naming_each_core_and_wait(Scheduler):
    span = SourceSpan("kernel.py", 31)

    def stuck(what: str):
        yield Wait(lambda: False, what, span)

    scheduler = Scheduler()
    scheduler.spawn(ToyCore("cg0.AIC"), stuck("a free slot of pipe c2v"))
    scheduler.spawn(ToyCore("cg0.AIV0"), stuck("a full slot of pipe v2c"))
    with pytest.raises(DeadlockError) as info:
        scheduler.run()
    message = info.value.message
    assert "cg0.AIC: waits for a free slot of pipe c2v at kernel.py:31:1" in message
    assert "cg0.AIV0: waits for a full slot of pipe v2c" in message
    assert info.value.span == span


def test_a_deadlock_blames_the_cause_a_wait_explains_and_lists_cores_in_spawn_order(Scheduler):
    wait_span, cause = SourceSpan("kernel.py", 31), SourceSpan("kernel.py", 40)

    def stuck(reason: Blocked | None):
        yield Wait(lambda: False, "something", wait_span, (lambda: reason) if reason else None)

    scheduler = Scheduler()
    scheduler.spawn(ToyCore("cg0.AIC"), stuck(None))
    scheduler.spawn(ToyCore("cg0.AIV0"), stuck(Blocked("tpop blocks: slot 0 never freed", cause, "free it")))
    with pytest.raises(DeadlockError) as info:
        scheduler.run()
    assert info.value.message.splitlines() == [
        "every live core is blocked:",
        "  cg0.AIC: waits for something at kernel.py:31:1",
        "  cg0.AIV0: tpop blocks: slot 0 never freed",
    ]
    assert (info.value.span, info.value.hint) == (cause, "free it")


def test_a_wait_on_a_signal_is_checked_only_after_the_signal_changed(Scheduler):
    flag, checks = Signal(), []
    state = {"set": False}

    def ready() -> bool:
        checks.append(state["set"])
        return state["set"]

    def producer():
        for _ in range(5):
            yield Advance("MTE2", 10)  # steps that change nothing the consumer waits on
        state["set"] = True
        flag.changed()
        yield Advance("MTE2", 1)

    def consumer():
        yield Wait(ready, "the flag", on=(flag,))
        yield Advance("VECTOR", 7)

    consumer_core = ToyCore("aiv")
    scheduler = Scheduler()
    scheduler.spawn(ToyCore("aic"), producer())
    scheduler.spawn(consumer_core, consumer())
    scheduler.run()
    # once as it blocked, once after the change: not after each of the producer's steps
    assert checks == [False, True]
    assert consumer_core.log == [("VECTOR", 50)] and consumer_core.stalled == 50


def test_woken_cores_resume_in_the_order_they_blocked_as_a_poll_would_wake_them(Scheduler):
    first, second, order = Signal(), Signal(), []
    state = {"open": False}

    def opener():
        yield Advance("SCALAR", 10)
        state["open"] = True
        second.changed()  # the second waiter's signal changes first
        first.changed()
        yield Advance("SCALAR", 1)

    def waiter(name: str, signal: Signal):
        yield Wait(lambda: state["open"], "the gate", on=(signal,))
        order.append(name)
        yield Advance("VECTOR", 1)

    scheduler = Scheduler()
    scheduler.spawn(ToyCore("gate"), opener())
    scheduler.spawn(ToyCore("a"), waiter("a", first))
    scheduler.spawn(ToyCore("b"), waiter("b", second))
    scheduler.run()
    assert order == ["a", "b"]


def test_a_ready_wait_whose_signal_never_changed_is_caught_in_check_mode(Scheduler):
    state = {"set": False}

    def producer():
        yield Advance("MTE2", 10)
        state["set"] = True  # forgets to call changed()
        yield Advance("MTE2", 1)

    def consumer():
        yield Wait(lambda: state["set"], "the flag", on=(Signal(),))

    scheduler = Scheduler(check_wakeups=True)
    scheduler.spawn(ToyCore("aic"), producer())
    scheduler.spawn(ToyCore("aiv"), consumer())
    with pytest.raises(AssertionError, match="aiv missed a wake-up: the flag is ready"):
        scheduler.run()
