"""The package as a PyPTO plugin: hooks, entry point, exports and its import boundary."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pluggy

import pypto_sim_a2a3
from pypto.ir import Backend, MemorySpace, Target
from pypto.ir.targets import get_target
from pypto_sim_a2a3 import A2A3_TARGET, A2A3SimBackend, plugin

SOURCE = Path(pypto_sim_a2a3.__file__).parent
hookspec = pluggy.HookspecMarker("pypto")
Mem = MemorySpace


class Specs:
    """The two hooks as pypto.runtime declares them (kept local: these tests need only pypto-ir)."""

    @hookspec
    def pypto_register_backends(self, register):
        """Register backends."""

    @hookspec
    def pypto_register_targets(self, register):
        """Register targets."""


def test_plugin_registers_the_backend_and_the_target_through_pluggy():
    manager = pluggy.PluginManager("pypto")
    manager.add_hookspecs(Specs)
    manager.register(plugin)
    backends: list[Backend] = []
    targets: list[Target] = []
    manager.hook.pypto_register_backends(register=backends.append)
    manager.hook.pypto_register_targets(register=targets.append)
    assert [b.name for b in backends] == ["a2a3sim"]
    assert isinstance(backends[0], Backend)
    assert targets == [A2A3_TARGET]


def test_entry_point_in_the_pypto_group_names_the_plugin_module():
    eps = importlib.metadata.entry_points(group="pypto")
    assert {ep.name: ep.value for ep in eps}["a2a3sim"] == "pypto_sim_a2a3.plugin"


def test_package_exports_backend_target_and_version():
    assert A2A3SimBackend.name == "a2a3sim"
    assert A2A3SimBackend.target is A2A3_TARGET
    assert pypto_sim_a2a3.__version__ == importlib.metadata.version("pypto-sim-a2a3")


def test_the_simulator_models_the_a2a3_target_that_pypto_ir_declares():
    assert A2A3_TARGET is get_target("a2a3")
    assert A2A3_TARGET.spaces_of("AIV") == (MemorySpace.Vec,)
    assert set(A2A3_TARGET.spaces_of("AIC")) == {Mem.Mat, Mem.Left, Mem.Right, Mem.Acc, Mem.Bias}
    assert not A2A3_TARGET.is_legal_path(MemorySpace.Acc, MemorySpace.Vec)
    assert A2A3_TARGET.is_legal_path(MemorySpace.Acc, MemorySpace.Mat)


def test_mte2_constants_fit_the_two_vendor_reference_loads():
    cost = A2A3_TARGET.cost
    assert len(A2A3_TARGET.calibration["mte2"]) == 2
    for nbytes, cycles in A2A3_TARGET.calibration["mte2"]:
        modeled = cost["mte2_latency_cycles"] + nbytes / cost["mte2_bytes_per_cycle"]
        assert abs(modeled - cycles) < 1


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_package_imports_only_pypto_ir_torch_pluggy_and_the_stdlib():
    forbidden = ("pypto.language", "pypto.runtime", "pypto.passes", "pypto.cli", "pypto.models")
    for path in SOURCE.glob("*.py"):
        bad = {m for m in _imported_modules(path) if m.startswith(forbidden)}
        assert not bad, f"{path.name} imports {bad}"


def test_no_module_outside_target_hard_codes_a2a3_cost_numbers():
    distinctive = ("1850", "4096", "2090", "2775", "188416", "196608", "524288", "164", "390")
    for path in SOURCE.glob("*.py"):
        if path.name == "target.py":
            continue
        numbers = {str(n.value) for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)}
        assert not numbers & set(distinctive), f"{path.name} hard-codes {numbers & set(distinctive)}"
