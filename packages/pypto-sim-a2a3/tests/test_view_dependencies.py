"""Views the orchestration makes of its tensors (``tensor.slice`` run on the host, and
``tensor.create`` of extents it computes): what they hold, and how the task graph and the race
check treat a view as the region of its tensor it covers."""

import random

import pytest
import torch
from sim_lowered import FunctionBuilder, expr, program, rand, run, tensor_t

from pypto.ir import (
    INDEX,
    DataType,
    Direction,
    DynDim,
    ExtentError,
    FunctionKind,
    OutOfBoundsError,
    RaceError,
    SpecializationError,
)
from pypto.ir import MemorySpace as Mem
from pypto_sim_a2a3.checks.footprints import footprint, tensor_frame

ROWS, COLS = 64, 128
FP32 = DataType.FP32


def kernel(name, op="tile.exp", rows=ROWS):
    """AIV kernel ``name(a, out)``: ``out = op(a)`` on one [rows, COLS] tile."""
    k = FunctionBuilder(name, FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    x = k.op("x", "tile.load", a, [0, 0], shape=(rows, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", op, x), [0, 0], out)
    return k.build()


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


def view(b, name, tensor, row, rows=ROWS):
    """``name = tensor[row : row + rows, :]``, made by the orchestration."""
    return b.op(name, "tensor.slice", tensor, [row, 0], shape=(rows, COLS))


def test_writers_of_disjoint_views_run_at_once_and_a_reader_of_both_waits_for_both():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((2 * ROWS, COLS)))
    s = b.param("s", tensor_t((2 * ROWS, COLS)), Direction.Out)
    o = b.param("o", tensor_t((ROWS, COLS)), Direction.Out)
    b.call("exp", view(b, "a_top", a, 0), view(b, "s_top", s, 0))
    b.call("exp", view(b, "a_bottom", a, ROWS), view(b, "s_bottom", s, ROWS))
    b.call("neg", view(b, "s_middle", s, ROWS // 2), o)  # rows 32:96: half of each
    x, out = rand(2 * ROWS, COLS), torch.zeros(ROWS, COLS)
    report = run(program(b.build(), kernel("exp"), kernel("neg", "tile.neg")), x, torch.zeros_like(x), out)
    torch.testing.assert_close(out, -x[ROWS // 2 : ROWS // 2 + ROWS].exp())
    assert edges(report) == {(1, 3): "s_middle", (2, 3): "s_middle"}
    first, second = sorted(report.tasks, key=lambda t: t.task_id)[:2]
    assert second.start_cycle < first.end_cycle and first.core_group != second.core_group


def test_a_writer_of_a_view_waits_for_an_earlier_reader_of_the_whole_tensor():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    s = b.param("s", tensor_t((ROWS, COLS)), Direction.InOut)
    a = b.param("a", tensor_t((ROWS // 2, COLS)))
    o = b.param("o", tensor_t((ROWS, COLS)), Direction.Out)
    b.call("neg", s, o)  # reads all of s
    b.call("exp", a, view(b, "s_top", s, 0, ROWS // 2))  # then overwrites its top half
    x, y = rand(ROWS, COLS), rand(ROWS // 2, COLS, seed=1)
    before = x.clone()
    out = torch.zeros(ROWS, COLS)
    report = run(program(b.build(), kernel("neg", "tile.neg"), kernel("exp", rows=ROWS // 2)), x, y, out)
    torch.testing.assert_close(out, -before)
    torch.testing.assert_close(x[: ROWS // 2], y.exp())
    assert edges(report) == {(1, 2): "s_top"}


@pytest.mark.parametrize(("row", "waits"), [(0, False), (ROWS + 1, True)])
def test_a_host_read_waits_only_for_the_writers_of_the_element_it_reads(row, waits):
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    s = b.param("s", tensor_t((2 * ROWS, COLS)), Direction.InOut)
    b.call("exp", a, view(b, "s_bottom", s, ROWS))
    b.ret(b.op("value", "scalar.read", s, [row, 2]))
    x, y = rand(ROWS, COLS), rand(2 * ROWS, COLS, seed=1)
    before = float(y[row, 2])
    report = run(program(b.build(), kernel("exp")), x, y)
    assert report.outputs[0] == pytest.approx(float(x[1, 2].exp()) if waits else before)
    host_waits = [s for s in report.timeline if s.core == "host" and s.name == "wait for the tasks writing s"]
    assert bool(host_waits) is waits


def test_an_unordered_write_through_a_view_races_with_a_read_of_the_tensor():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    s = b.param("s", tensor_t((2 * ROWS, COLS)), Direction.Out)
    o = b.param("o", tensor_t((ROWS, COLS)), Direction.Out)
    b.call("exp", a, view(b, "s_bottom", s, ROWS), no_dep=(1,))  # tracking off: no edge
    b.call("neg", view(b, "s_across", s, ROWS // 2), o)
    with pytest.raises(RaceError) as info:
        run(
            program(b.build(), kernel("exp"), kernel("neg", "tile.neg")),
            rand(ROWS, COLS),
            torch.zeros(2 * ROWS, COLS),
            torch.zeros(ROWS, COLS),
        )
    message = str(info.value)
    assert "task 1 (kernel exp" in message and "task 2 (kernel neg" in message
    assert "tracking of s_bottom is off for task 1" in message
    # the shared rows, as the view of the access told last indexes them
    assert "[32:64, 0:128]" in message or "[0:32, 0:128]" in message


def host_with_view(row, rows=ROWS, total=2 * ROWS):
    """An orchestration passing ``s[row : row + rows]`` (offset and extent run-time scalars) to exp."""
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    a = b.param("a", tensor_t((ROWS, COLS)))
    s = b.param("s", tensor_t((total, COLS)), Direction.Out)
    r = b.param("r", INDEX)
    n = b.param("n", INDEX)
    extent = DynDim("n")
    part = b.op("part", "tensor.slice", s, [r, 0], expr([n, COLS]), expr([n, COLS]), shape=(extent, COLS))
    b.call("exp", a, part)
    return b.build()


def test_a_view_of_run_time_extents_is_passed_to_a_kernel_that_fits_it():
    x, s = rand(ROWS, COLS), torch.zeros(2 * ROWS, COLS)
    run(program(host_with_view(0), kernel("exp")), x, s, 16, ROWS)
    torch.testing.assert_close(s[16 : 16 + ROWS], x.exp())
    assert bool((s[:16] == 0).all()) and bool((s[16 + ROWS :] == 0).all())


def test_a_view_that_does_not_fit_the_kernel_annotation_is_an_error_at_the_call():
    with pytest.raises(SpecializationError, match=r"argument 'out' is a tensor of shape \[32, 128\]"):
        run(program(host_with_view(0), kernel("exp")), rand(ROWS, COLS), torch.zeros(2 * ROWS, COLS), 0, 32)


def test_a_view_that_starts_outside_its_tensor_is_an_out_of_bounds_error_at_the_slice():
    with pytest.raises(OutOfBoundsError, match=r"the view \[128:192\] of dim 0 starts outside"):
        run(
            program(host_with_view(0), kernel("exp")),
            rand(ROWS, COLS),
            torch.zeros(2 * ROWS, COLS),
            128,
            ROWS,
        )


def test_a_kernel_reaching_past_the_end_of_a_cut_view_is_stopped_there():
    with pytest.raises(OutOfBoundsError, match=r"runs past the end of its tensor: 32 of its 64 exist"):
        run(
            program(host_with_view(0), kernel("exp")), rand(ROWS, COLS), torch.zeros(2 * ROWS, COLS), 96, ROWS
        )


def test_a_run_time_extent_below_one_is_an_extent_error_at_the_allocation():
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    n = b.param("n", INDEX)
    b.op("t", "tensor.create", expr([n, COLS]), shape=(DynDim("n"), COLS), dtype=FP32)
    with pytest.raises(ExtentError, match="extent n of dim 0 is 0 at run time"):
        run(program(b.build()), 0)


def test_a_view_lies_in_its_tensors_frame_at_its_offset():
    base = torch.zeros(64, 128)
    assert tensor_frame(base[16:32, 64:]) == (tensor_frame(base)[0], (16, 64))
    assert tensor_frame(base.T)[0] != tensor_frame(base)[0]  # other strides: a frame of its own


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ((slice(0, 32), slice(None)), (slice(32, 64), slice(None)), False),
        ((slice(None), slice(0, 64)), (slice(None), slice(64, 128)), False),  # column bands
        ((slice(0, 40), slice(0, 64)), (slice(32, 64), slice(32, 96)), True),
    ],
)
def test_views_of_one_tensor_overlap_exactly_where_their_boxes_do(first, second, overlap):
    base = torch.zeros(64, 128)
    assert footprint(base[first]).overlaps(footprint(base[second])) is overlap
    assert footprint(base[first]).overlaps(footprint(torch.zeros(64, 128))) is False  # another storage


def test_a_view_of_other_strides_overlaps_wherever_its_bytes_meet():
    base = torch.zeros(64, 128)
    assert footprint(base.T[:, 63:]).overlaps(footprint(base[63:, 100:]))  # row 63: its bytes meet
    assert not footprint(base[:1].T).overlaps(footprint(base[1:2]))
    assert footprint(base).covers(footprint(base[3:9, 7:8]))
    assert not footprint(base[3:9, 7:8]).covers(footprint(base))


@pytest.mark.parametrize("seed", range(8))
def test_a_views_frame_is_its_tensors_at_the_views_first_element_when_its_strides_are_row_major(seed):
    rng = random.Random(seed)
    base = torch.zeros(6, 10, 12)
    frame = tensor_frame(base)[0]
    for _ in range(40):
        lo = [rng.randrange(0, n) for n in base.shape]
        hi = [rng.randrange(start + 1, n + 1) for start, n in zip(lo, base.shape, strict=True)]
        view = base[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
        assert tensor_frame(view) == (frame, tuple(lo))
        inner = view[:, 1:] if view.shape[1] > 1 else view[:, :0]
        assert tensor_frame(inner)[0] == frame  # a view of a view lies in the same frame
        row = base[lo[0], lo[1]]  # fewer dims: a frame of its own strides, at its offset in them
        assert tensor_frame(row) == ((frame[0], 4, (1,), 0), (lo[0] * 120 + lo[1] * 12,))
        stepped = base[lo[0] :, :, :: rng.choice((2, 3))]  # row-major strides of another array
        assert tensor_frame(stepped) == ((frame[0], 4, stepped.stride(), 0), (lo[0], 0, 0))
    moved = base.permute(1, 0, 2)
    assert tensor_frame(moved) == ((frame[0], 0, (10, 6, 12), (12, 120, 1)), (0, 0, 0))
