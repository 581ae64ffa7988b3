"""The example plugin examples/plugins/pypto-backend-torchref, installed for real by pip into a
temporary directory on the path of the commands below, and found through its entry point."""

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
def plugin_dir(tmp_path_factory):
    """The torchref plugin installed by pip into a directory of its own, which the commands below put
    on ``PYTHONPATH``: this environment's packages plus the plugin, found through its entry point.

    Installing into a target directory with this interpreter works from any environment (a venv, a
    system Python), unlike a nested venv, which sees the base interpreter's packages, not this one's.
    """
    target = tmp_path_factory.mktemp("torchref-plugin")
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*install, "--target", str(target), str(PLUGIN)], check=True, timeout=TIMEOUT)
    return target


def run(plugin: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "PYPTO_LOAD_PLUGINS"} | env
    path = [str(plugin), *filter(None, [environment.get("PYTHONPATH")])]
    environment["PYTHONPATH"] = os.pathsep.join(path)
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    return result


def test_pypto_platforms_lists_torchref_from_its_distribution(plugin_dir):
    listed = json.loads(run(plugin_dir, "-m", "pypto.cli", "platforms", "--json").stdout)
    torchref = next(entry for entry in listed if entry["name"] == "torchref")
    assert torchref == {
        "name": "torchref",
        "kind": "backend",
        "chip": "a2a3",
        "plugin": "torchref",
        "distribution": "pypto-backend-torchref",
        "version": "0.1.0",
    }


def test_pypto_load_plugins_hides_it(plugin_dir):
    listed = json.loads(
        run(plugin_dir, "-m", "pypto.cli", "platforms", "--json", PYPTO_LOAD_PLUGINS="a2a3sim").stdout
    )
    assert [entry["name"] for entry in listed] == ["a2a3", "a2a3sim"]


def test_torchref_gives_the_simulators_numbers(plugin_dir, tmp_path):
    script = tmp_path / "compare.py"  # the parser reads kernels from a file
    script.write_text(COMPARE)
    output = run(plugin_dir, str(script), str(ROOT / "examples" / "advanced")).stdout
    assert output.splitlines() == [
        "mixed_matmul_bias same numbers",
        "mixed_matmul_bias same numbers",
        "staged_matmul_bias same numbers",
        "softmax_rows same numbers",
    ]


def test_pypto_run_on_torchref(plugin_dir):
    output = run(
        plugin_dir, "-m", "pypto.cli", "run", "-p", "torchref", "examples/advanced/03_mixed_kernel.py"
    ).stdout
    assert output.splitlines()[-1] == "OK"
