"""A backend declares the ops it has semantics for (``Backend.ops``); each in-tree backend covers
every op a lowered program can hold (``pypto.ir.walker.received_ops``), and that set is what the
pass pipeline really leaves in the examples' programs."""

import runpy
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pypto.ir import Call, Program, RunReport
from pypto.ir.nodes import stmt_end_exprs, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import OPS, op, scalar, system, tensor, tile
from pypto.ir.walker import missing_semantics, received_ops
from pypto.runtime import get_backend, hookimpl, register_plugin, reset_registry
from pypto_sim_a2a3 import A2A3SimBackend

ROOT = Path(__file__).resolve().parent.parent
TORCHREF = ROOT / "examples" / "plugins" / "pypto-backend-torchref" / "src"
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.py") if "plugins" not in p.parts)
LAUNCHES_NO_KERNEL = {"examples/models/qwen3_jit/config.py"}  # it lists configurations


def torchref_backend() -> Any:
    sys.path.insert(0, str(TORCHREF))
    try:
        from pypto_backend_torchref import TorchRefBackend
    finally:
        sys.path.remove(str(TORCHREF))
    return TorchRefBackend()


def test_a_lowered_program_holds_tile_scalar_pipe_and_system_ops_and_tensor_create():
    ops = received_ops()
    assert {tile.add, tile.load, scalar.add, system.syncall, tile.tpush_to_aiv, op.get_block_idx} <= ops
    assert tensor.create in ops
    assert not {tensor.add, tensor.matmul, tensor.assemble, op.call, tile.aiv_shard, tile.aic_gather} & ops
    assert ops <= OPS.keys()


@pytest.mark.parametrize("backend", ["a2a3sim", "torchref"])
def test_a_backend_has_semantics_for_every_op_it_can_receive(backend):
    implemented = get_backend(backend).ops if backend == "a2a3sim" else torchref_backend().ops
    assert missing_semantics(implemented) == []


def test_the_check_names_an_op_a_backend_lacks():
    assert missing_semantics(received_ops() - {tile.exp, system.fence}) == [system.fence, tile.exp]


class RecordingSim:
    """a2a3sim, noting every op of each program it runs."""

    name = "opsrecorder"

    def __init__(self, seen: set[str]) -> None:
        self.sim = A2A3SimBackend()
        self.target = self.sim.target
        self.seen = seen

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        for fn in program.functions.values():
            for stmt in walk_stmts(fn.body):
                for root in (*stmt_exprs(stmt), *stmt_end_exprs(stmt)):
                    self.seen |= {e.op for e in walk_expr(root) if isinstance(e, Call)}
        return self.sim.run(program, args, options)


class RecordingPlugin:
    def __init__(self, seen: set[str]) -> None:
        self.seen = seen

    @hookimpl
    def pypto_register_backends(self, register: Any) -> None:
        register(RecordingSim(self.seen))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_examples_lowered_programs_hold_only_ops_a_backend_can_receive(path, monkeypatch, capsys):
    seen: set[str] = set()
    reset_registry()
    register_plugin(RecordingPlugin(seen), name="opsrecorder")
    monkeypatch.setenv("PYPTO_CACHE", "off")
    monkeypatch.setattr(sys, "argv", [str(path), "--platform", "opsrecorder"])
    monkeypatch.syspath_prepend(str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        reset_registry()
    assert capsys.readouterr().out.strip().splitlines()[-1] == "OK"
    assert bool(seen) is (path.relative_to(ROOT).as_posix() not in LAUNCHES_NO_KERNEL)
    assert seen - {op.call} <= received_ops()
