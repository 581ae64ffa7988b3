"""The views of issue #14 on real runs: the task graph of examples/intermediate/07_task_graph.py
through ``pypto deps view``, and the memory map of the seed mixed kernel
(examples/advanced/03_mixed_kernel.py) through ``python -m pypto.tools.memory_map``."""

import json
import re
import runpy
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from pypto.cli import cli
from pypto.runtime import RunConfig
from pypto.runtime.reports.memory_map import plan_of
from pypto.tools.deps_graph import load_deps

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def task_graph_run(tmp_path_factory):
    """deps.json of one run of example 07 (four tasks, an inferred and a declared edge)."""
    out = tmp_path_factory.mktemp("task_graph")
    example = runpy.run_path(str(EXAMPLES / "intermediate" / "07_task_graph.py"), run_name="views")
    kernel = example["task_graph"]
    x, y = torch.randn(128, 128), torch.randn(128, 128)
    config = RunConfig(platform="a2a3sim", enable_dep_gen=True, save_kernels_dir=out)
    kernel(x, y, torch.zeros(128, 128), torch.zeros(128, 128), config=config)
    return out / "dfx_outputs" / "deps.json", kernel.last_report


def test_deps_json_says_what_it_is_and_holds_the_run(task_graph_run):
    path, report = task_graph_run
    data = json.loads(path.read_text())
    assert (data["format"], data["version"], data["program"], data["platform"]) == (
        "pypto-deps",
        1,
        "task_graph",
        "a2a3sim",
    )
    assert data["total_cycles"] == report.total_cycles and data["modeled"] is True
    graph = load_deps(path)
    assert graph.tasks == tuple(report.tasks) and graph.edges == tuple(report.edges)


def test_the_text_view_names_each_task_its_line_and_each_edge(task_graph_run):
    path, report = task_graph_run
    result = CliRunner().invoke(cli, ["deps", "view", str(path)])
    assert result.exit_code == 0, result.output
    for task in report.tasks:
        row = rf"\n\s+{task.task_id}\s+0\s+{task.kernel}\s+{task.core_group}\s+{task.start_cycle}\s+{task.end_cycle}\s"
        assert re.search(row, result.output), task
        assert task.source and task.source.endswith(f"07_task_graph.py:{task.source.rsplit(':', 1)[1]}")
        assert task.source in result.output
    assert re.search(r"1 exp_x\s+-> 3 combine\s+via scratch", result.output)
    assert re.search(r"2 square_y\s+-> 4 halve_y\s+deps=", result.output)


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_the_html_view_draws_the_run_s_graph(task_graph_run, tmp_path):
    path, report = task_graph_run
    out = tmp_path / "deps.html"
    result = CliRunner().invoke(cli, ["deps", "view", str(path), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = Tags()
    page.feed(out.read_text())
    edges = [
        (a["data-src"], a["data-dst"]) for tag, a in page.tags if tag == "g" and a.get("class") == "edge"
    ]
    assert edges == [(str(e.src), str(e.dst)) for e in report.edges]
    assert {a["data-task"] for tag, a in page.tags if tag == "g" and a.get("class") == "task"} == {
        str(t.task_id) for t in report.tasks
    }
    assert ">via scratch<" in out.read_text() and ">deps=<" in out.read_text()


def test_the_memory_map_of_the_seed_kernel_lists_every_buffer_at_its_address(tmp_path):
    seed = runpy.run_path(str(EXAMPLES / "advanced" / "03_mixed_kernel.py"), run_name="views")[
        "mixed_matmul_bias"
    ]
    a, b = torch.randn(512, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    bias, out = torch.randn(512, 128), torch.zeros(512, 128)
    config = RunConfig(
        platform="a2a3sim", dump_passes=tmp_path / "dumps", save_kernels_dir=tmp_path / "build"
    )
    compiled = seed.compile(a, b, bias, out, config=config)
    (dump,) = (tmp_path / "dumps").glob("*_after_AllocateMemory.py")
    for source in (dump, compiled.output_dir):
        html = tmp_path / "map.html"
        command = [sys.executable, "-m", "pypto.tools.memory_map", str(source), "-o", str(html)]
        subprocess.run(command, check=True, capture_output=True, cwd=tmp_path)
        page = Tags()
        page.feed(html.read_text())
        rows = {
            (a["data-kernel"], a["data-buffer"]): a["data-address"]
            for tag, a in page.tags
            if tag == "tr" and "data-buffer" in a
        }
        planned = {
            (fn.name, alloc.name): f"0x{alloc.offset:05x}"
            for fn in compiled.lowered.functions.values()
            if plan_of(fn) is not None
            for alloc in plan_of(fn).allocations.values()
        }
        assert rows == planned and {kernel for kernel, _ in planned} == {"mixed_aic", "mixed_aiv"}
        rings = [a for tag, a in page.tags if tag == "g" and a.get("class") == "ring"]
        assert len(rings) == 1 and "cross-core pipe ring (automatic" in rings[0]["data-ring"]
