"""The example plugin examples/plugins/pypto-backend-torchref, installed for real into a temporary
virtual environment (which sees this environment's packages) and found through its entry point."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "examples" / "plugins" / "pypto-backend-torchref"
TIMEOUT = 300

COMPARE = textwrap.dedent(
    """\
    import sys

    import torch

    import pypto.language as pl
    from pypto.runtime import RunConfig

    sys.path.insert(0, sys.argv[1])
    mixed_kernel_example = __import__("03_mixed_kernel")


    @pl.jit
    def softmax_rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
            e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
            out[:] = pl.row_expand_div(e, pl.row_sum(e))
        return out


    def matmul_bias_args():
        a = torch.randn(384, 256, dtype=torch.float16)
        b = torch.randn(256, 128, dtype=torch.float16)
        return a, b, torch.randn(384, 128), torch.zeros(384, 128)


    cases = [
        (mixed_kernel_example.mixed_kernel(pl.SplitMode.UP_DOWN), matmul_bias_args),
        (mixed_kernel_example.mixed_kernel(pl.SplitMode.NONE), matmul_bias_args),
        (mixed_kernel_example.staged_matmul_bias, matmul_bias_args),
        (softmax_rows, lambda: (torch.randn(256, 64), torch.zeros(256, 64))),
    ]
    for kernel, make in cases:
        results = {}
        for platform in ("a2a3sim", "torchref"):
            torch.manual_seed(0)
            args = make()
            kernel(*args, config=RunConfig(platform=platform))
            results[platform] = args[-1]
        torch.testing.assert_close(results["torchref"], results["a2a3sim"], rtol=0, atol=0)
        print(kernel.name, "same numbers")
    """
)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtual environment with this one's packages plus the torchref plugin, installed by pip."""
    root = tmp_path_factory.mktemp("torchref-venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(root)], check=True
    )
    python = root / ("Scripts" if os.name == "nt" else "bin") / "python"
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--no-deps",
        "--no-build-isolation",
    ]
    subprocess.run([*install, "--quiet", str(PLUGIN)], check=True, timeout=TIMEOUT)
    return python


def run(python: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "PYPTO_LOAD_PLUGINS"} | env
    result = subprocess.run(
        [str(python), *args], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    return result


def test_pypto_platforms_lists_torchref_from_its_distribution(venv):
    listed = json.loads(run(venv, "-m", "pypto.cli", "platforms", "--json").stdout)
    torchref = next(entry for entry in listed if entry["name"] == "torchref")
    assert torchref == {
        "name": "torchref",
        "kind": "backend",
        "chip": "a2a3",
        "plugin": "torchref",
        "distribution": "pypto-backend-torchref",
        "version": "0.1.0",
    }


def test_pypto_load_plugins_hides_it(venv):
    listed = json.loads(
        run(venv, "-m", "pypto.cli", "platforms", "--json", PYPTO_LOAD_PLUGINS="a2a3sim").stdout
    )
    assert [entry["name"] for entry in listed] == ["a2a3", "a2a3sim"]


def test_torchref_gives_the_simulators_numbers(venv, tmp_path):
    script = tmp_path / "compare.py"  # the parser reads kernels from a file
    script.write_text(COMPARE)
    output = run(venv, str(script), str(ROOT / "examples" / "advanced")).stdout
    assert output.splitlines() == [
        "mixed_matmul_bias same numbers",
        "mixed_matmul_bias same numbers",
        "staged_matmul_bias same numbers",
        "softmax_rows same numbers",
    ]


def test_pypto_run_on_torchref(venv):
    output = run(
        venv, "-m", "pypto.cli", "run", "-p", "torchref", "examples/advanced/03_mixed_kernel.py"
    ).stdout
    assert output.splitlines()[-1] == "OK"
