"""BoxIndex: the overlap queries the GM ordering and race records make per access, checked against
a plain scan over boxes added in order, out of order, nested and repeated."""

from __future__ import annotations

import random

import pytest
from sim_mixed import gm_args, through_gm

from pypto.ir.nodes import Call, stmt_exprs, walk_expr, walk_stmts
from pypto_sim_a2a3.checks.coherence import Access, BoxIndex, KeyCache, Region, gm_access
from pypto_sim_a2a3.checks.footprints import tensor_key


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


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_items_filed_in_bulk_are_found_as_items_filed_one_by_one(seed):
    """Adds wait until a query files them: by one sort when many wait, one by one when few do;
    the index then finds what one filed at each add finds, in the same order."""
    rng = random.Random(seed)
    bulk: BoxIndex[int] = BoxIndex()
    single: BoxIndex[int] = BoxIndex()
    boxes: list[tuple[int, Region]] = []
    seq = 0
    for _ in range(60):
        for _ in range(rng.choice((1, 2, 5, 40, 300))):  # equal starts are common: blocks reread tiles
            box = Region.box((rng.randrange(0, 64) * 16, 0), (rng.choice((1, 16, 48, 1000)), 8))
            bulk.add(seq, box, seq)
            single.add(seq, box, seq)
            single.overlapping(Region((), ()))  # files it now
            boxes.append((seq, box))
            seq += 1
        query = Region.box((rng.randrange(0, 1100), 0), (rng.choice((1, 16, 200)), 8))
        found = bulk.overlapping(query)
        assert found == single.overlapping(query)
        assert sorted(s for s, _ in found) == _scan(boxes, query)


def test_what_is_never_queried_is_only_kept():
    index: BoxIndex[int] = BoxIndex()
    for seq in range(1000):
        index.add(seq, Region.box((seq % 7, 0), (1, 1)), seq)
    assert index._starts == [] and len(index._waiting) == 1000
    assert sorted(seq for seq, _ in index.overlapping(Region.box((3, 0), (1, 1)))) == list(range(3, 1000, 7))


def test_a_box_is_the_region_its_offsets_and_extent_make():
    box = Region.box([3, 8], (2, 16))
    assert box == Region((3, 8), (5, 24)) and hash(box) == hash(Region((3, 8), (5, 24)))
    assert str(box) == "[3:5, 8:24]"
    with pytest.raises(ValueError):
        Region.box([3, 8], (2,))


def test_a_gm_access_record_is_the_access_its_fields_make():
    """gm_access makes its record (a tuple) from its fields in order: the record the class makes
    from them by name."""
    kernel = through_gm(("syncall",), ("syncall",)).function("gm_aiv")
    load = next(
        e
        for stmt in walk_stmts(kernel.body)
        for root in stmt_exprs(stmt)
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == "tile.load"
    )
    tensor = gm_args()[3]
    made = gm_access("cg0.AIV0", load, (tensor, (0, 0)), at=120)
    extent = tuple(load.type.valid_shape or load.type.shape)
    name = load.args[0].name
    region = Region.box((0, 0), extent)
    assert made == Access("cg0.AIV0", name, tensor_key(tensor), region, load.span, False, False, 120)
    by_name = Access(
        core="cg0.AIV0",
        tensor=name,
        key=tensor_key(tensor),
        region=region,
        span=load.span,
        write=False,
        at=120,
    )
    assert made._asdict() == by_name._asdict() and type(made) is Access and type(made.region) is Region
    # A caller's key cache (a launch's) gives the same record, and keeps each tensor and call once.
    keys = KeyCache()
    other = tensor[1:]  # a view: another tensor object, another key
    assert gm_access("cg0.AIV0", load, (tensor, (0, 0)), at=120, keys=keys) == made
    assert gm_access("cg0.AIV0", load, (tensor, (0, 0)), at=120, keys=keys) == made
    assert gm_access("cg0.AIV0", load, (other, (0, 0)), at=120, keys=keys).key == tensor_key(other)
    assert [entry[1] for entry in keys.frames.values()] == [tensor_key(tensor), tensor_key(other)]
    assert [entry[0] for entry in keys.calls.values()] == [load]
