"""Examples are tests: every file under examples/ runs on its own and prints OK."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if "plugins" not in p.parts)
# Extra command lines worth running beyond each file's defaults.
VARIANTS = {
    "examples/advanced/03_mixed_kernel.py": [
        ["--mode", "staged"],
        ["--mode", "mixed"],
        ["--mode", "left_right"],
    ],
    "examples/models/qwen3_jit/qwen3_decode.py": [
        [],
        ["--dtype", "bf16", "--batch", "2", "--max-new-tokens", "4"],
    ],
}


def cases():
    for path in EXAMPLES:
        rel = path.relative_to(ROOT).as_posix()
        for args in VARIANTS.get(rel, [[]]):
            yield pytest.param(path, args, id=" ".join([rel, *args]))


def test_examples_exist():
    names = {p.relative_to(ROOT).as_posix() for p in EXAMPLES}
    for required in (
        "examples/beginner/01_hello_world.py",
        "examples/beginner/02_elementwise.py",
        "examples/beginner/03_scalar_ops.py",
        "examples/beginner/04_activation.py",
        "examples/beginner/05_matmul.py",
        "examples/beginner/06_concat.py",
        "examples/intermediate/02_softmax.py",
        "examples/intermediate/03_normalization.py",
        "examples/intermediate/04_matmul_acc.py",
        "examples/intermediate/05_assemble.py",
        "examples/intermediate/06_dyn_valid_shape.py",
        "examples/intermediate/07_task_graph.py",
        "examples/advanced/01_split_k.py",
        "examples/advanced/03_mixed_kernel.py",
        "examples/models/qwen3_jit/qwen3_decode.py",
        "examples/models/qwen3_jit/config.py",
        "examples/models/qwen3_jit/kernels/projection.py",
        "examples/models/qwen3_jit/kernels/attention.py",
        "examples/models/qwen3_jit/kernels/mlp.py",
        "examples/models/qwen3_jit/kernels/rmsnorm.py",
    ):
        assert required in names


def test_the_qwen3_example_runs_as_a_module_from_the_repository_root():
    command = [sys.executable, "-m", "examples.models.qwen3_jit.qwen3_decode", "--max-new-tokens", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tokens: 1,2,3,") and result.stdout.strip().splitlines()[-1] == "OK"


@pytest.mark.parametrize(("path", "args"), list(cases()))
def test_example_prints_ok(path, args):
    # Every compile of the example also prints each pass's program, parses it back and compares.
    env = {**os.environ, "PYPTO_VERIFICATION_LEVEL": "roundtrip"}
    result = subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "OK"
