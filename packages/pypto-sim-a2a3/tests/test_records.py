"""The simulator's many-per-run records (slices, shifted slices, scalar steps) are frozen_records:
each the same object its dataclass makes, every field set."""

from __future__ import annotations

import dataclasses

import torch
from sim_lowered import rand, run, single, vector_binary_kernel

from pypto.ir.backend import Slice
from pypto_sim_a2a3 import races
from pypto_sim_a2a3.scheduler import Advance, Scheduler
from pypto_sim_a2a3.timeline import Recorder, make_slice, shifted


def _complete(record: object) -> bool:
    return set(vars(record)) == {f.name for f in dataclasses.fields(record)}  # type: ignore[arg-type]


def test_a_made_slice_is_the_slice_with_every_field():
    made = make_slice("cg1.AIV0", 40, 8, "tile.add", "VECTOR", "k", "k.py:3", 6.0, "vector", "V", "MTE2", 32)
    assert made == Slice(
        "cg1.AIV0", 40, 8, "tile.add", "VECTOR", "k", "k.py:3", 6.0, "vector", "V", "MTE2", 32
    )
    assert _complete(made)


def test_a_shifted_slice_is_block_0s_on_its_own_core_later():
    flagged = make_slice("cg0.AIC", 40, 8, "tile.matmul", "CUBE", "k", None, flag_from="MTE1", flag_at=35)
    plain = make_slice("cg0.AIC", 50, 2, "tile.move", "MTE1", "k", None)
    names = {"cg0.AIC": "cg3.AIC"}
    assert shifted(flagged, names, 100) == dataclasses.replace(
        flagged, core="cg3.AIC", start=140, flag_at=135
    )
    assert shifted(plain, names, 100) == dataclasses.replace(plain, core="cg3.AIC", start=150)
    assert _complete(shifted(flagged, names, 100)) and _complete(shifted(plain, names, 100))


def test_shifted_slices_recorded_at_once_take_the_places_their_one_by_one_records_would():
    """record_shifted makes a replayed block's slices when the run finishes; the timeline is the one
    recording each shifted slice as it came gives, ties (one start, one core) in the order met."""
    block0 = [
        make_slice("cg0.AIC", 10, 5, "tile.load", "MTE2", "k", None),
        make_slice("cg0.AIC", 10, 3, "tile.move", "MTE1", "k", None, flag_from="MTE2", flag_at=12),
    ]
    names = {"cg0.AIC": "cg4.AIC"}
    other = [make_slice("cg4.AIC", 110, 1, f"op{i}", "SCALAR", "k", None) for i in range(3)]
    at_once, one_by_one = Recorder(Scheduler()), Recorder(Scheduler())
    at_once.record(other[0])
    at_once.record_shifted(block0, names, 100)
    at_once.record(other[1])
    at_once.record_shifted(block0[:1], names, 100)
    at_once.record(other[2])
    for piece in (
        other[0],
        *[shifted(p, names, 100) for p in block0],
        other[1],
        shifted(block0[0], names, 100),
    ):
        one_by_one.record(piece)
    one_by_one.record(other[2])
    at_once.finish()
    one_by_one.finish()
    assert at_once.slices == one_by_one.slices
    assert [s.name for s in at_once.slices] == ["op0", "tile.load", "tile.move", "op1", "tile.load", "op2"]


def test_a_scalar_step_is_the_silent_scalar_advance():
    assert Advance.scalar(7) == Advance("SCALAR", 7, silent=True) and _complete(Advance.scalar(7))


def test_a_task_access_of_the_race_check_is_made_with_every_field(monkeypatch):
    made = []
    record = races.frozen_record

    def recording(cls, fields):
        made.append(record(cls, fields))
        return made[-1]

    monkeypatch.setattr(races, "frozen_record", recording)
    x, y = rand(16, 64), rand(16, 64, seed=1)
    out = torch.zeros(16, 64)
    run(single(vector_binary_kernel("tile.add", (16, 64))), x, y, out)
    assert torch.equal(out, x + y)
    assert [type(m) for m in made] == [races.TaskAccess] * 3  # two loads, a store
    assert all(_complete(m) for m in made)
