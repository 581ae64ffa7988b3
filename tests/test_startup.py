"""Start-up: importing ``pypto.language`` and running a first kernel load nothing the run does not
use. The command line (click), the progress bar's library (rich, only for a bar on a terminal),
plotting (matplotlib) and torch's lazily imported parts stay out of a script's process; the
timing itself is a benchmark (``nox -s bench``), not a test."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
HELLO = ROOT / "examples" / "beginner" / "01_hello_world.py"
# Loaded only when used: the CLI, a progress bar on a terminal, plots, torch's DTensor (which
# brings sympy), and torch's compiler stack.
NOT_AT_START = ("click", "rich", "matplotlib", "sympy", "torch.distributed.tensor", "torch._dynamo")

SCRIPT = """
import json, runpy, sys
path = sys.argv[1]
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(script: Path) -> list[str]:
    terminal = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")  # rich's
    env = {key: value for key, value in os.environ.items() if key not in terminal}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(script)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**env, "PYPTO_CACHE": "off"},
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "OK"
    modules: list[str] = json.loads(lines[-1])
    return modules


def test_a_first_kernel_loads_no_cli_bar_plot_or_lazy_torch_part():
    modules = loaded_modules(HELLO)
    assert "pypto_sim_a2a3" in modules  # it did run on the simulator
    unneeded = [m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_AT_START)]
    assert unneeded == []


def test_importing_the_language_loads_neither_torch_nor_the_cli():
    code = "import json, sys; import pypto.language; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(done.stdout)
    assert [m for m in modules if m.split(".")[0] in ("torch", "click", "rich", "matplotlib")] == []


FREEZE = """
import gc, runpy, sys
path = sys.argv[1]
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
print(gc.get_freeze_count())
"""


def frozen_after_a_run(**env: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", FREEZE, str(HELLO)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYPTO_CACHE": "off", **env},
    )
    return int(done.stdout.splitlines()[-1])


def test_the_first_run_moves_the_loaded_heap_out_of_the_collectors_way():
    # torch's objects and the compiler's, frozen once: a full collection no longer rescans them.
    assert frozen_after_a_run() > 100_000
    assert frozen_after_a_run(PYPTO_SIM_GC_FREEZE="off") == 0
