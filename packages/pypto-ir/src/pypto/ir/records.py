"""Frozen records made in bulk: a frozen dataclass's instance, its fields set at once.

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, one checked call
per field. The simulator makes some records thousands of times a run (a slice of a core's pipe per
op, a GM access record per load or store), so it makes them with :func:`frozen_record`, which
fills the instance's ``__dict__`` in one update. The caller names every field, as the dataclass
would have given each one; the tests of each such record compare it with what ``cls(...)`` makes,
so that a field added later cannot be forgotten. (Not for a dataclass with ``slots=True``, which has
no ``__dict__``, nor one with a ``__post_init__``, which this does not run.)

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point:
...     x: int
...     y: int = 0
>>> frozen_record(Point, {"x": 1, "y": 2}) == Point(1, 2)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

R = TypeVar("R")


def frozen_record(cls: type[R], fields: Mapping[str, Any]) -> R:
    """An instance of the frozen dataclass ``cls`` holding ``fields`` (all of its fields, by name)."""
    record: R = object.__new__(cls)
    record.__dict__.update(fields)
    return record
