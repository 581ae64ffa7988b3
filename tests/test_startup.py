"""Start-up: importing ``pypto.language`` and running a first kernel load nothing the run does not
use. The command line (click), the progress bar's library (rich, only for a bar on a terminal),
plotting (matplotlib) and torch's lazily imported parts stay out of a script's process; the
timing itself is a benchmark (``nox -s bench``), not a test."""

import json
import os
import subprocess
import sys
from pathlib import Path

from pypto.runtime.reports.progress import TERMINAL_VARIABLES

ROOT = Path(__file__).parents[1]
HELLO = ROOT / "examples" / "beginner" / "01_hello_world.py"
# Loaded only when used: the CLI, a progress bar on a terminal, plots, torch's DTensor (which
# brings sympy), and torch's compiler stack.
NOT_AT_START = ("click", "rich", "matplotlib", "sympy", "torch.distributed.tensor", "torch._dynamo")

SCRIPT = """
import gc, json, runpy, sys
path = sys.argv[1]
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
print(json.dumps({"modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}))
"""


def after_hello(**env: str) -> dict:
    """What a process running the hello-world example has at its end: the modules it loaded and
    how many objects the collector has frozen (standard error is a pipe, not a terminal)."""
    clean = {key: value for key, value in os.environ.items() if key not in TERMINAL_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(HELLO)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**clean, "PYPTO_CACHE": "off", **env},
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "OK"
    state: dict = json.loads(lines[-1])
    return state


def test_a_first_kernel_loads_no_cli_bar_plot_or_lazy_torch_part():
    modules = after_hello()["modules"]
    assert "pypto_sim_a2a3" in modules  # it did run on the simulator
    unneeded = [m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_AT_START)]
    assert unneeded == []


def test_importing_the_language_loads_neither_torch_nor_the_cli():
    code = "import json, sys; import pypto.language; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(done.stdout)
    assert [m for m in modules if m.split(".")[0] in ("torch", "click", "rich", "matplotlib")] == []


def test_the_first_run_moves_the_loaded_heap_out_of_the_collectors_way():
    # torch's objects and the compiler's, frozen once: a full collection no longer rescans them.
    assert after_hello()["frozen"] > 100_000
    assert after_hello(PYPTO_SIM_GC_FREEZE="off")["frozen"] == 0
