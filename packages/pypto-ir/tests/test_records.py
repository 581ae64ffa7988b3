"""frozen_record: a frozen dataclass's instance made in one update, the same as its __init__ makes."""

from __future__ import annotations

import dataclasses

import pytest

from pypto.ir.backend import Slice
from pypto.ir.records import frozen_record


@dataclasses.dataclass(frozen=True)
class Span:
    lo: int
    hi: int
    label: str = ""


def test_a_record_equals_hashes_and_prints_as_the_dataclass_makes_it():
    made = frozen_record(Span, {"lo": 1, "hi": 4, "label": "x"})
    assert type(made) is Span
    assert (
        made == Span(1, 4, "x")
        and hash(made) == hash(Span(1, 4, "x"))
        and repr(made) == repr(Span(1, 4, "x"))
    )


def test_a_record_stays_frozen():
    made = frozen_record(Span, {"lo": 1, "hi": 4, "label": ""})
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.lo = 2  # type: ignore[misc]


def test_a_slice_made_as_a_record_is_the_slice():
    fields = {f.name: None for f in dataclasses.fields(Slice)}
    fields.update(
        core="cg0.AIC", start=10, cycles=5, name="tile.matmul", unit="CUBE", task="k", peak_cycles=4.0
    )
    made = frozen_record(Slice, fields)
    assert made == Slice("cg0.AIC", 10, 5, "tile.matmul", "CUBE", "k", None, 4.0)
    assert made.end == 15
