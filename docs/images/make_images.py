"""Draw the pictures of the docs from the examples they describe, so they cannot drift from the code.

    python docs/images/make_images.py [OUT_DIR]     # default: this directory (docs/images)

``tests/test_docs.py`` runs it into a temporary directory and checks that it draws every image
in docs/images; ``nox -s docs`` runs it here.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

from pypto.ir import RunReport
from pypto.runtime import RunConfig
from pypto.runtime.reports.swimlane import draw_swimlane

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples"


def _example(relative: str) -> ModuleType:
    """An example imported as a module; its ``main`` does not run."""
    path = EXAMPLES / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mixed_kernel_run() -> tuple[str, RunReport]:
    """profiling.md: the seed's mixed kernel with 4096 rows (``03_mixed_kernel.py --m 4096``)."""
    kernel = _example("advanced/03_mixed_kernel.py").mixed_kernel()
    torch.manual_seed(0)
    m = 4096
    a, b = torch.randn(m, 256, dtype=torch.float16), torch.randn(256, 128, dtype=torch.float16)
    kernel(a, b, torch.randn(m, 128), torch.zeros(m, 128), config=RunConfig(platform="a2a3sim"))
    assert kernel.last_report is not None
    return kernel.name, kernel.last_report


def task_graph_run() -> tuple[str, RunReport]:
    """task-graph.md: the four tasks of ``07_task_graph.py``."""
    example = _example("intermediate/07_task_graph.py")
    torch.manual_seed(0)
    x, y = torch.randn(example.R, example.C), torch.randn(example.R, example.C)
    example.task_graph(x, y, torch.zeros_like(x), torch.zeros_like(y), config=RunConfig(platform="a2a3sim"))
    return example.task_graph.name, example.task_graph.last_report


IMAGES: dict[str, Callable[[], tuple[str, RunReport]]] = {
    "swimlane-mixed.png": mixed_kernel_run,
    "swimlane-task-graph.png": task_graph_run,
}


def make_images(out_dir: Path) -> list[Path]:
    """Draw every image into ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, run in IMAGES.items():
        title, report = run()
        draw_swimlane(report, out_dir / name, title)
        written.append(out_dir / name)
    return written


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=HERE, help="where to write (default: here)")
    for path in make_images(parser.parse_args(argv).out_dir):
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
