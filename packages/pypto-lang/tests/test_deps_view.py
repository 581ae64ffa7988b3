"""``pypto deps view``: a deps.json as text, SVG and HTML; anything else is an error naming the file."""

import json
import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from pypto.cli import cli
from pypto.ir import PyptoError, RunReport, TaskEdge, TaskRecord
from pypto.runtime.compiling.artifacts import deps_file_data
from pypto.tools.deps_graph import (
    DepsFileError,
    DepsGraph,
    columns,
    deps_html,
    deps_svg,
    deps_text,
    load_deps,
)

# The graph of examples/intermediate/07_task_graph.py, and one pl.spmd task of two blocks after it.
REPORT = RunReport(
    platform="a2a3sim",
    clock_mhz=1850.0,
    total_cycles=15000,
    tasks=[
        TaskRecord("exp_x", 0, 300, 5462, 1, 0, "k.py:30"),
        TaskRecord("square_y", 1, 500, 4382, 2, 0, "k.py:32"),
        TaskRecord("halve_y", 1, 5212, 8838, 4, 0, "k.py:36"),
        TaskRecord("combine", 0, 6292, 12264, 3, 0, "k.py:34"),
        TaskRecord("rows", 0, 12500, 14000, 5, 0, "k.py:40"),
        TaskRecord("rows", 1, 12700, 14900, 5, 1, "k.py:40"),
    ],
    edges=[TaskEdge(1, 3, "scratch"), TaskEdge(2, 4, None), TaskEdge(3, 5, "out"), TaskEdge(4, 5, "y_half")],
)


@pytest.fixture
def deps_file(tmp_path):
    path = tmp_path / "deps.json"
    path.write_text(json.dumps(deps_file_data(REPORT, "task_graph")))
    return path


def test_the_file_reads_back_as_the_run_s_graph(deps_file):
    graph = load_deps(deps_file)
    assert graph.tasks == tuple(REPORT.tasks) and graph.edges == tuple(REPORT.edges)
    assert (graph.program, graph.platform, graph.clock_mhz, graph.total_cycles) == (
        "task_graph",
        "a2a3sim",
        1850.0,
        15000,
    )
    assert graph.source == str(deps_file)
    assert DepsGraph.from_report(REPORT).tasks == graph.tasks


def test_columns_follow_dependency_depth():
    graph = DepsGraph.from_report(REPORT)
    assert columns(graph) == [[1, 2], [3, 4], [5]]


def test_text_lists_every_block_and_every_edge_with_its_label(deps_file):
    text = deps_text(load_deps(deps_file))
    assert text.splitlines()[0] == "task_graph: 5 task(s), 4 edge(s), on a2a3sim, 15000 modeled cycles in all"
    rows = {tuple(line.split()[:4]) for line in text.splitlines() if re.match(r"\s+\d+\s+\d+\s", line)}
    assert rows == {(str(t.task_id), str(t.block), t.kernel, str(t.core_group)) for t in REPORT.tasks}
    assert re.search(r"6292\s+12264\s+5972\s+k\.py:34", text)
    edges = [" ".join(line.split()) for line in text.split("edges:")[1].strip().splitlines()]
    assert edges == [
        "1 exp_x -> 3 combine via scratch",
        "2 square_y -> 4 halve_y deps=",
        "3 combine -> 5 rows via out",
        "4 halve_y -> 5 rows via y_half",
    ]


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside each element kind."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(text: str) -> Elements:
    page = Elements()
    page.feed(text)
    page.close()
    return page


def test_svg_draws_a_box_per_task_left_to_right_and_a_labelled_arrow_per_edge():
    svg = deps_svg(DepsGraph.from_report(REPORT))
    page = parsed(svg)
    boxes = {a["data-task"]: a for tag, a in page.tags if tag == "g" and "data-task" in a}
    assert sorted(boxes) == ["1", "2", "3", "4", "5"]
    rects = [a for tag, a in page.tags if tag == "rect"]
    xs = {float(r["x"]) for r in rects}  # one x per column: three columns
    assert len(xs) == 3
    arrows = [a for tag, a in page.tags if tag == "g" and a.get("class") == "edge"]
    assert [(a["data-src"], a["data-dst"]) for a in arrows] == [
        ("1", "3"),
        ("2", "4"),
        ("3", "5"),
        ("4", "5"),
    ]
    assert {"via scratch", "deps=", "via out", "via y_half", "2 blocks, cg 0–1"} <= {
        t.strip() for t in page.text
    } | {t.split(" · ")[-1] for t in page.text}
    dashed = [a for tag, a in page.tags if tag == "path" and "stroke-dasharray" in a]
    assert len(dashed) == 1  # the declared edge


def test_html_is_one_page_with_the_drawing_and_a_row_per_block_and_nothing_fetched(deps_file):
    html = deps_html(load_deps(deps_file))
    page = parsed(html)
    tags = [tag for tag, _ in page.tags]
    assert tags.count("svg") == 1 and "table" in tags
    rows = [a for tag, a in page.tags if tag == "tr" and "data-task" in a]
    assert len(rows) == len(REPORT.tasks) + len(REPORT.edges)
    assert not [a for tag, a in page.tags if tag in ("script", "link", "img") and ("src" in a or "href" in a)]
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html


def test_the_command_prints_text_or_writes_svg_and_html(deps_file, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["deps", "view", str(deps_file)])
    assert result.exit_code == 0, result.output
    assert "1 exp_x    -> 3 combine  via scratch" in result.output
    for fmt in ("svg", "html"):
        out = tmp_path / f"deps.{fmt}"
        result = runner.invoke(cli, ["deps", "view", str(deps_file), "--format", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert out.read_text().startswith("<svg" if fmt == "svg" else "<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not a deps.json: it is not valid JSON (Expecting property name enclosed in double"),
        ("[1, 2]", "is not a deps.json: it holds a JSON list, not an object"),
        ('{"tasks": []}', "is not a deps.json: 'edges' is missing, not a list"),
        ('{"format": "pypto-pmu", "tasks": [], "edges": []}', "its format is 'pypto-pmu', not 'pypto-deps'"),
        ('{"tasks": [{"kernel": "k"}], "edges": []}', "tasks[0] has no 'core_group'"),
        (
            '{"tasks": [{"kernel": "k", "core_group": 0, "start_cycle": "0", "end_cycle": 1, "task_id": 1}],'
            ' "edges": []}',
            "tasks[0]['start_cycle'] is '0', not a cycle count",
        ),
        (
            '{"tasks": [{"kernel": "k", "core_group": 0, "start_cycle": 0, "end_cycle": 1, "task_id": 1}],'
            ' "edges": [{"src": 1, "dst": 7}]}',
            "edges[0] names task 7, which is not among its tasks",
        ),
        (
            '{"tasks": [{"kernel": "k", "core_group": 0, "start_cycle": 0, "end_cycle": 1, "task_id": 1},'
            ' {"kernel": "k", "core_group": 0, "start_cycle": 0, "end_cycle": 1, "task_id": 2}],'
            ' "edges": [{"src": 1, "dst": 2}, {"src": 2, "dst": 1}]}',
            "the edges form a cycle through task",
        ),
    ],
)
def test_a_file_that_is_not_a_deps_json_is_an_error_naming_it(tmp_path, content, message):
    path = tmp_path / "odd.json"
    path.write_text(content)
    with pytest.raises(DepsFileError) as info:
        load_deps(path)
    assert isinstance(info.value, PyptoError) and str(path) in info.value.message
    assert message in info.value.message
    assert "enable_dep_gen=True" in (info.value.hint or "")
    result = CliRunner().invoke(cli, ["deps", "view", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert message in result.output and "hint: give the deps.json" in result.output


def test_a_missing_file_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["deps", "view", str(tmp_path / "nowhere.json")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_help_shows_the_defaults_and_an_example():
    result = CliRunner().invoke(cli, ["deps", "view", "-h"])
    assert (
        "[default: text]" in result.output
        and "pypto deps view out/dfx_outputs/deps.json --format html" in result.output
    )
