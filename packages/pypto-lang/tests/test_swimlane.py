"""The swimlane picture scales to the run: a lane per unit that ran on a core (so overlapping units
stay visible), a legend of what appears, sub-pixel slices merged per pixel column, a size that
follows the slices and the rows; and chip_swimlane_records.json, per block and core."""

import matplotlib.image

from pypto.ir import RunReport, TaskRecord
from pypto.ir.backend import STALL, RingTrack, Slice
from pypto.runtime.reports.swimlane import PLOT_MAX_PX, PLOT_MIN_PX, draw_swimlane, swimlane_records


def _report(slices, tasks=(), rings=(), total=None):
    timeline = list(slices)
    end = total or max((s.end for s in timeline), default=1)
    return RunReport(
        "testsim", 1000.0, total_cycles=end, timeline=timeline, tasks=list(tasks), rings=list(rings)
    )


# A cube core whose load runs under its matmul (pipes that overlap in time), then a stall.
OVERLAPPING = (
    Slice("cg0.AIC", 0, 600, "tile.load", "MTE2", "k"),
    Slice("cg0.AIC", 200, 300, "tile.matmul", "CUBE", "k"),
    Slice("cg0.AIC", 600, 100, "wait for a free slot", STALL, "k"),
    Slice("cg0.AIC", 700, 100, "tpush_to_aiv", "FIXPIPE", "k"),
)


def _lane_boxes(figure):
    """Each drawn rectangle as (x0, x1, y0, y1) with its face colour."""
    boxes = []
    for collection in figure.axes[0].collections:
        faces = collection.get_facecolors()
        for path, face in zip(collection.get_paths(), faces, strict=False):
            (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
            boxes.append(((x0, x1, y0, y1), tuple(face)))
    return boxes


def test_a_core_has_a_lane_per_unit_so_overlapping_units_stay_visible(tmp_path):
    figure = draw_swimlane(_report(OVERLAPPING), tmp_path / "s.png")
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["cg0.AIC"]
    assert [t.get_text() for t in axes.get_yticklabels(minor=True)] == ["MTE2", "M", "FIX", "stall"]
    boxes = [box for box, _ in _lane_boxes(figure)]
    load = next(b for b in boxes if b[0] == 0 and b[1] == 0.6)
    matmul = next(b for b in boxes if b[0] == 0.2 and b[1] == 0.5)
    # Both drawn whole, on lanes that do not overlap: the matmul does not hide the load.
    assert load[3] <= matmul[2] or matmul[3] <= load[2]


def test_the_legend_lists_only_what_appears_with_pipes_and_the_ring_fill(tmp_path):
    ring = RingTrack("k_c2v", "cg0.AIV0", 2, [(100, 1), (300, 0)])
    lane = Slice("cg0.AIV0", 0, 400, "tile.add", "VECTOR", "k")
    task = TaskRecord("k", 0, 0, 800, 1)
    figure = draw_swimlane(_report([*OVERLAPPING, lane], [task], [ring]), tmp_path / "s.png")
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert labels == [
        "MTE2",
        "M (CUBE)",
        "V (VECTOR)",
        "FIX (FIXPIPE)",
        "stall (blocked)",
        "task (kernel #id)",
        "ring slots in use\n(to the top: ring full)",
    ]
    rows = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert rows == ["cg0 tasks", "cg0.AIC", "cg0.AIV0", "cg0.AIV0 ring k_c2v (2 slots)"]


def test_thousands_of_sub_pixel_slices_become_at_most_one_bar_per_pixel_column(tmp_path):
    # 20000 loads of 10 cycles every 20: far narrower than a pixel at the widest picture.
    slices = [Slice("cg0.AIV0", 20 * i, 10, "tile.load", "MTE2", "k") for i in range(20000)]
    figure = draw_swimlane(_report(slices), tmp_path / "s.png")
    boxes = _lane_boxes(figure)
    assert len(boxes) <= PLOT_MAX_PX
    # Busy half of each column: drawn at a half shade, and the legend says what the shade means.
    assert {round(face[3], 3) for _, face in boxes} == {0.625}
    assert "paler" in figure.axes[0].get_legend().get_texts()[-1].get_text()


def test_the_picture_is_wider_with_more_slices_and_taller_with_more_rows(tmp_path):
    few = [Slice("cg0.AIV0", 100 * i, 50, "tile.add", "VECTOR", "k") for i in range(10)]
    many = [Slice("cg0.AIV0", 100 * i, 50, "tile.add", "VECTOR", "k") for i in range(800)]
    more_rows = few + [Slice(f"cg{g}.AIV0", 0, 50, "tile.add", "VECTOR", "k") for g in range(1, 8)]
    sizes = {}
    for name, slices in {"few": few, "many": many, "rows": more_rows}.items():
        draw_swimlane(_report(slices), tmp_path / f"{name}.png")
        height, width, _ = matplotlib.image.imread(tmp_path / f"{name}.png").shape
        sizes[name] = (width, height)
    assert sizes["many"][0] > sizes["few"][0] >= PLOT_MIN_PX
    assert sizes["many"][1] == sizes["few"][1]
    assert sizes["rows"][1] > sizes["few"][1]


def test_the_records_give_each_block_on_each_core_its_span_and_cycles():
    tasks = [TaskRecord("a", 0, 100, 900, 1, 0, "k.py:3"), TaskRecord("a", 0, 1000, 1600, 2, 0, "k.py:3")]
    slices = [
        Slice("host", 0, 100, "submit a", "AICPU"),
        Slice("cg0.AIC", 100, 300, "tile.load", "MTE2", "a"),
        Slice("cg0.AIC", 200, 400, "tile.matmul", "CUBE", "a"),  # overlaps the load
        Slice("cg0.AIV0", 150, 450, "wait for a ready slot", STALL, "a"),
        Slice("cg0.AIV0", 600, 300, "tile.add", "VECTOR", "a"),
        Slice("cg0.AIC", 1000, 500, "tile.load", "MTE2", "a"),
    ]
    saved = swimlane_records(_report(slices, tasks), "k")
    records = [
        (r["task_id"], r["core"], r["start_cycle"], r["end_cycle"], r["busy_cycles"], r["stall_cycles"])
        for r in saved["records"]
    ]
    assert records == [
        (1, "cg0.AIC", 100, 600, 500, 0),  # busy while a pipe runs: the overlap counts once
        (1, "cg0.AIV0", 150, 900, 300, 450),
        (2, "cg0.AIC", 1000, 1500, 500, 0),
    ]
    first = saved["records"][0]
    assert (first["start_us"], first["end_us"], first["source"], first["kernel"]) == (0.1, 0.6, "k.py:3", "a")
    assert saved["modeled"] is True and saved["title"] == "k"
