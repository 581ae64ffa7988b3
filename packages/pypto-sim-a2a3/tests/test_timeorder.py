"""GM accesses and ordering events are handled in modeled order (:class:`TimeOrder`): by cycle,
at one cycle core by core, each core's in program order, however the simulation met them."""

from __future__ import annotations

from itertools import permutations

from pypto_sim_a2a3.timeorder import TimeOrder, natural_key


def test_events_run_by_cycle_whatever_order_they_were_queued_in():
    order, ran = TimeOrder(), []
    order.at(9000, "cg0.AIC", lambda: ran.append("store"))
    order.at(400, "cg0.AIV0", lambda: ran.append("load"))
    order.until(9000)  # a core may still meet an event at 9000
    assert ran == ["load"]
    order.until(9001)
    assert ran == ["load", "store"]


def test_events_at_one_cycle_run_core_by_core_in_the_natural_order_of_their_names():
    events = [
        ("cg10.AIC", "a"),
        ("cg2.AIV0", "b"),
        ("cg2.AIC", "c"),
        ("cg2.AIC of block 12", "d"),
        ("cg2.AIC of block 3", "e"),
    ]
    expected = ["c", "e", "d", "b", "a"]
    for queued in permutations(events):
        order, ran = TimeOrder(), []
        for core, label in queued:
            order.at(100, core, lambda label=label, ran=ran: ran.append(label))
        order.drain()
        assert ran == expected, queued


def test_a_cores_own_events_keep_their_program_order_even_when_timed_earlier():
    order, ran = TimeOrder(), []
    order.at(500, "cg1.AIC", lambda: ran.append("first"))
    order.at(300, "cg1.AIC", lambda: ran.append("second"))  # issued later: not before the first
    order.at(500, "cg0.AIC", lambda: ran.append("other core"))
    order.note(700, "cg0.AIC")  # an event with no action still moves cg0's place on
    order.at(600, "cg0.AIC", lambda: ran.append("after the note"))
    order.drain()
    assert ran == ["other core", "first", "second", "after the note"]


def test_natural_keys_sort_numbers_as_numbers():
    names = ["cg10.AIV1", "cg9.AIV1", "cg9.AIC", "AICPU", "cg9.AIV0"]
    assert sorted(names, key=natural_key) == ["AICPU", "cg9.AIC", "cg9.AIV0", "cg9.AIV1", "cg10.AIV1"]
