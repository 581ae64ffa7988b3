"""The discrete-event scheduler on hand-written coroutines: clock order, waits, stalls, deadlock."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pypto.ir import DeadlockError, SourceSpan
from pypto_sim_a2a3.scheduler import Advance, Blocked, Scheduler, Wait


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


def test_processes_step_in_order_of_their_core_clocks():
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


def test_generator_return_value_becomes_the_process_result():
    def kernel():
        yield Advance("CUBE", 5)
        return ("done",)

    scheduler = Scheduler()
    proc = scheduler.spawn(ToyCore("aic"), kernel())
    scheduler.run()
    assert proc.done and proc.result == ("done",)


def test_a_waiting_core_resumes_at_the_time_the_other_core_freed_it():
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


def test_a_wait_that_is_already_satisfied_costs_no_stall():
    def kernel():
        yield Advance("VECTOR", 50)
        yield Wait(lambda: True, "nothing")
        yield Advance("VECTOR", 5)

    core = ToyCore("aiv")
    scheduler = Scheduler()
    scheduler.spawn(core, kernel())
    scheduler.run()
    assert (core.clock, core.stalled) == (55, 0)


def test_every_live_core_blocked_is_a_deadlock_naming_each_core_and_wait():
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


def test_a_deadlock_blames_the_cause_a_wait_explains_and_lists_cores_in_spawn_order():
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
