"""``@pl.jit`` finds the ``.incore`` / ``.inline`` / ``.opaque`` functions its body calls wherever
they are imported from: a model package whose ``kernels/`` subpackage it imports relatively, run
as ``python -m pkg.model`` and imported in-process; each helper is one function per specialization,
and changing a global a helper reads in its own module compiles the entry again."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pypto.ir import Eval, FunctionKind, Program
from pypto.ir.ops import op

TIMEOUT = 300

MLP = '''\
"""Kernels of the model: an incore kernel, an inline helper and an opaque block."""

import pypto.language as pl

SCALE = 2.0


@pl.jit.incore
def bias_relu(h: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = h.shape
    t = pl.add(pl.load(h, [0, 0], [rows, cols]), pl.load(bias, [0, 0], [rows, cols]))
    pl.store(pl.relu(t), [0, 0], out)
    return out


@pl.inline
def scaled(t):
    return pl.mul(t, SCALE)


@pl.jit.opaque
def mlp_block(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows = x.shape[0]
    cols = w.shape[1]
    h = pl.create_tensor([rows, cols], dtype=pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mlp_matmul"):
        h[:] = scaled(pl.matmul(x, w, out_dtype=pl.FP32))
    bias_relu(h, bias, out)
    return out
'''

MODEL = '''\
"""The model: two MLP blocks (one imported by name, one through its module), then a scaled copy."""

import torch

import pypto.language as pl

from .kernels import mlp
from .kernels.mlp import mlp_block


@pl.jit
def model(x: pl.Tensor, w1: pl.Tensor, b1: pl.Tensor, w2: pl.Tensor, b2: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = x.shape
    h = pl.create_tensor([rows, cols], dtype=pl.FP32)
    y = pl.create_tensor([rows, cols], dtype=pl.FP32)
    mlp_block(x, w1, b1, h)
    mlp.mlp_block(h, w2, b2, y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="final"):
        out[:] = mlp.scaled(y)
    return out


def reference(x, w1, b1, w2, b2):
    scale = mlp.SCALE
    h = torch.relu(scale * (x @ w1) + b1)
    y = torch.relu(scale * (h @ w2) + b2)
    return scale * y


def inputs(rows=16, cols=64):
    g = torch.Generator().manual_seed(rows + cols)
    x = torch.randn(rows, cols, generator=g) / 4
    w1, w2 = (torch.randn(cols, cols, generator=g) / 8 for _ in range(2))
    b1, b2 = (torch.randn(rows, cols, generator=g) for _ in range(2))
    return x, w1, b1, w2, b2


if __name__ == "__main__":
    args = inputs()
    out = torch.zeros(16, 64)
    model(*args, out)
    torch.testing.assert_close(out, reference(*args), rtol=1e-3, atol=1e-3)
    print("OK")
'''


def functions(program: Program):
    """Every function of ``program`` (the one place that knows how a Program holds them)."""
    return list(program.functions.values())


def calls_of(fn) -> list[str]:
    return [s.value.attrs["callee"] for s in fn.body if isinstance(s, Eval) and s.value.op == op.call]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """``pkg/`` with ``model.py`` and ``kernels/mlp.py`` written to ``tmp_path``."""
    root = tmp_path / "pkg"
    (root / "kernels").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "mlp.py").write_text(MLP)
    (root / "model.py").write_text(MODEL)
    return tmp_path


@pytest.fixture
def imported(package: Path, monkeypatch: pytest.MonkeyPatch):
    """``pkg.model`` imported in-process (and forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(package))
    yield importlib.import_module("pkg.model")
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        del sys.modules[name]


def test_the_model_package_runs_as_a_module_with_python_m(package: Path):
    done = subprocess.run(
        [sys.executable, "-m", "pkg.model"],
        cwd=package,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"


def test_imported_in_process_the_helpers_are_found_and_each_is_one_function(imported):
    args = imported.inputs()
    out = torch.zeros(16, 64)
    imported.model(*args, out)
    torch.testing.assert_close(out, imported.reference(*args), rtol=1e-3, atol=1e-3)

    program = imported.model.lower(*args, out)
    assert calls_of(program.entry_function) == ["mlp_block", "mlp_block", "final"]
    names = [fn.name for fn in functions(program)]
    assert names.count("mlp_block") == 1 and not any(n.startswith("mlp_block_") for n in names)
    assert program.function("mlp_block").kind is FunctionKind.Orchestration
    assert calls_of(program.function("mlp_block")) == ["mlp_matmul", "bias_relu"]
    assert "scaled" not in names  # spliced, in mlp_matmul and in final


def test_a_helper_called_with_another_shape_is_a_second_function(imported):
    import pypto.language as pl

    mlp = importlib.import_module("pkg.kernels.mlp")

    @pl.jit
    def two_sizes(
        x: pl.Tensor,
        w: pl.Tensor,
        b: pl.Tensor,
        x2: pl.Tensor,
        b2: pl.Tensor,
        out: pl.Out[pl.Tensor],
        out2: pl.Out[pl.Tensor],
    ):
        mlp.mlp_block(x, w, b, out)
        mlp.mlp_block(x2, w, b2, out2)
        return out, out2

    x, w, b, _, _ = imported.inputs()
    x2, b2 = x[:8].clone(), b[:8].clone()
    out, out2 = torch.zeros(16, 64), torch.zeros(8, 64)
    two_sizes(x, w, b, x2, b2, out, out2)
    torch.testing.assert_close(out2, torch.relu(mlp.SCALE * (x2 @ w) + b2), rtol=1e-3, atol=1e-3)
    program = two_sizes.lower(x, w, b, x2, b2, out, out2)
    assert calls_of(program.entry_function) == ["mlp_block", "mlp_block_1"]
    assert program.function("mlp_block_1").params[0].var.type.shape == (8, 64)


def test_changing_a_global_of_the_helpers_module_compiles_the_entry_again(imported, monkeypatch):
    mlp = importlib.import_module("pkg.kernels.mlp")
    model = imported.model
    model.cache_clear()
    args = imported.inputs()
    out = torch.zeros(16, 64)
    model(*args, out)
    model(*args, out)
    assert model.cache_info().misses == 1 and model.cache_info().hits == 1

    monkeypatch.setattr(mlp, "SCALE", 0.5)  # read by the inline helper, in another module
    model(*args, out)
    assert model.cache_info().misses == 2
    torch.testing.assert_close(out, imported.reference(*args), rtol=1e-3, atol=1e-3)
