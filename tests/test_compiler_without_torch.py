"""A compiler-only install needs no torch: parsing, lowering for a2a3, printing and ``pypto compile``
run in a process where ``import torch`` fails, and running says what is missing instead of
failing with an ImportError."""

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

KERNEL = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.jit
    def scale(a: pl.Tensor[[256, 128], pl.FP16], out: pl.Out[pl.Tensor[[256, 128], pl.FP16]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
            out[:] = pl.mul(a, 2.0)
        return out


    @pl.jit
    def bare(a: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bare"):
            out[:] = pl.exp(a)
        return out
    """
)

NO_TORCH = "import sys; sys.modules['torch'] = None  # `import torch` now raises ImportError\n"


def run(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    (tmp_path / "kernels.py").write_text(KERNEL)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYPTO_CACHE": "off"}
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


def test_pypto_lang_declares_no_torch():
    requirements = importlib.metadata.requires("pypto-lang") or []
    assert not [r for r in requirements if r.startswith("torch") and "extra ==" not in r]


def test_parse_lower_and_print_without_torch(tmp_path):
    result = run(
        tmp_path,
        """
        import sys
        import pypto.language as pl
        from pypto.ir import print_ir
        from pypto.runtime import RunConfig
        from kernels import bare, scale

        print(print_ir(scale.parse()).splitlines()[0])
        lowered = scale.lower(config=RunConfig(platform="a2a3"))
        print(sorted(f.kind.value for f in lowered.functions.values()))
        stand_in = pl.Tensor[[64, 32], pl.FP32]
        print(bare.lower(stand_in, stand_in, config=RunConfig(platform="a2a3")).entry_function.params[0].var.type)
        print("torch" in sys.modules and sys.modules["torch"] is not None)
        """,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "['AIV', 'Orchestration']"
    assert lines[2] == "pl.Tensor[[64, 32], pl.FP32]"
    assert lines[3] == "False"


def test_pypto_compile_without_torch(tmp_path):
    result = run(
        tmp_path,
        """
        import sys
        from pypto.cli.main import cli
        sys.argv = ["pypto", "compile", "kernels.py::bare", "--arg", "a=fp32[64,32]",
                    "--arg", "out=fp32[64,32]", "-p", "a2a3", "--emit", "ir"]
        cli(prog_name="pypto")
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "pl.tile.exp" in result.stdout


def test_running_without_torch_says_what_is_missing(tmp_path):
    result = run(
        tmp_path,
        """
        from pypto.ir import PlatformError
        from pypto.runtime import get_backend
        from kernels import scale

        try:
            get_backend("a2a3sim").run(scale.lower(), [], {})
        except PlatformError as err:
            print(err.message)
            print(err.hint)
        """,
    )
    assert result.returncode == 0, result.stderr
    message, hint = result.stdout.splitlines()[:2]
    assert message.startswith("a2a3sim needs torch to run a program")
    assert "pip install torch" in hint
