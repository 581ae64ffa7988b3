"""The simulator's engines agree: every example, and the grids of ``pl.at`` scopes of
``tests/grid_programs/`` (whose tasks replay one another), run with the blocks of its spmd
launches and the tasks of its grids replayed (the default, ``pypto_sim_a2a3.fast.replay``) on
the Python timing engine
(``PYPTO_SIM_ENGINE=python``), and with every block on the full engine (``PYPTO_SIM_REPLAY=off``)
on the compiled timing core (``PYPTO_SIM_ENGINE=compiled``, docs/engine.md), gives the same reports
— each modeled cycle, slice, task, heap, ring and transfer — and the same numbers in every tensor
it passed.

The two axes are crossed so that the example set runs once per axis: the replayed blocks are
held to the full engine, and the compiled core to the Python one (with every block on it, the
compiled core times every op of every block; the rest of the suite runs replay on the default
engine, the compiled core where it is built). Where the core is not built, both runs are Python
(packages/pypto-sim-a2a3/tests/test_compiled_core.py fails where a C compiler is but the core is not)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_sim_a2a3.hw import engines

ROOT = Path(__file__).resolve().parent.parent
COMPILED = "compiled" if engines.compiled_core_built() else "python"
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if "plugins" not in p.parts)
GRIDS = sorted((ROOT / "tests" / "grid_programs").glob("*.py"))

DRIVER = r"""
import hashlib, json, random, runpy, sys
import torch
from pypto_sim_a2a3 import backend

digests = []
original = backend.A2A3SimBackend.run


def tensor_digest(value):
    if not isinstance(value, torch.Tensor):
        return repr(value)
    flat = torch.empty(value.numel(), dtype=value.dtype).copy_(value.detach().reshape(-1))  # dense
    digest = hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()
    return f"{value.dtype}{tuple(value.shape)}:{digest}"


def run(self, program, args, options):
    report = original(self, program, args, options)
    parts = [
        report.total_cycles, report.tasks, report.edges, report.busy_cycles, report.stall_cycles,
        report.timeline, report.rings, report.transfers, report.submitted, report.heaps,
    ]
    text = repr(parts) + repr([tensor_digest(a) for a in args])
    digests.append(hashlib.sha256(text.encode()).hexdigest())
    return report


backend.A2A3SimBackend.run = run
torch.manual_seed(0)
random.seed(0)
path = sys.argv[1]
sys.argv = [path, *sys.argv[2:]]
sys.path.insert(0, path.rsplit("/", 1)[0])  # as `python path` would: its directory first
runpy.run_path(path, run_name="__main__")
print("DIGESTS " + json.dumps(digests))
"""


def digests(path: Path, args: list[str], replay: str, engine: str) -> list[str]:
    env = {
        **os.environ,
        "PYPTO_SIM_REPLAY": replay,
        "PYPTO_SIM_ENGINE": engine,
        "PYPTO_CACHE": "off",
        "PYPTO_PLATFORM": "a2a3sim",
    }
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(path), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = [line for line in done.stdout.splitlines() if line.startswith("DIGESTS ")][-1]
    found: list[str] = json.loads(line.removeprefix("DIGESTS "))
    return found


@pytest.mark.parametrize("path", [*EXAMPLES, *GRIDS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_replayed_blocks_on_python_report_what_every_block_on_the_compiled_core_reports(path: Path):
    replayed = digests(path, [], "on", "python")
    assert replayed == digests(path, [], "off", COMPILED)
