"""BoxIndex: the overlap queries the GM ordering and race records make per access, checked against
a plain scan over boxes added in order, out of order, nested and repeated."""

from __future__ import annotations

import random

import pytest

from pypto_sim_a2a3.coherence import BoxIndex, Region


def _scan(boxes: list[tuple[int, Region]], query: Region) -> list[int]:
    """What the index must find: every box whose first dimension meets the query's."""
    return sorted(seq for seq, box in boxes if box.lo[0] < query.hi[0] and query.lo[0] < box.hi[0])


@pytest.mark.parametrize("in_order", [True, False])
def test_the_index_finds_what_a_scan_finds(in_order):
    rng = random.Random(7)
    index: BoxIndex[str] = BoxIndex()
    boxes: list[tuple[int, Region]] = []
    for seq in range(400):
        start = seq * 8 if in_order else rng.randrange(0, 2000)
        box = Region.box((start, rng.randrange(0, 64)), (rng.choice((1, 8, 16, 300)), 32))
        index.add(seq, box, f"access {seq}")
        boxes.append((seq, box))
        query = Region.box((rng.randrange(0, 2100), 0), (rng.choice((1, 8, 64)), 128))
        found = index.overlapping(query)
        assert sorted(seq for seq, _ in found) == _scan(boxes, query)
        assert all(item == f"access {seq}" for seq, item in found)


def test_a_whole_tensor_box_and_a_scalar_point_are_found():
    index: BoxIndex[int] = BoxIndex()
    index.add(0, Region.box((0, 0), (4096, 128)), 0)  # a whole tensor, first
    index.add(1, Region.box((64, 0), (64, 128)), 1)
    index.add(2, Region((), ()), 2)  # a 0-d tensor's one element
    assert sorted(seq for seq, _ in index.overlapping(Region.box((100, 0), (1, 1)))) == [0, 1]
    assert sorted(seq for seq, _ in index.overlapping(Region.box((4095, 0), (1, 1)))) == [0]
    assert [seq for seq, _ in index.overlapping(Region.box((4096, 0), (8, 1)))] == []
    assert sorted(seq for seq, _ in index.overlapping(Region((), ()))) == [0, 2]
