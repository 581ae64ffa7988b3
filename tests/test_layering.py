"""Arrows only point down: ir <- passes <- lang <- models; the sim plugin sees only pypto.ir."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parent.parent / "packages"
# package dir -> the pypto modules it may import (besides its own)
ALLOWED = {
    "pypto-ir": {"pypto.ir"},
    "pypto-passes": {"pypto.ir", "pypto.passes"},
    "pypto-lang": {
        "pypto.ir",
        "pypto.passes",
        "pypto.language",
        "pypto.runtime",
        "pypto.cli",
        "pypto.backend",
        "pypto.tools",
        "pypto.tuning",
        "pypto.debug",
    },
    "pypto-sim-a2a3": {"pypto.ir", "pypto_sim_a2a3"},
    "pypto-models": {
        "pypto.ir",
        "pypto.passes",
        "pypto.language",
        "pypto.runtime",
        "pypto.backend",
        "pypto.models",
    },
}
# The floors inside pypto-lang, bottom up: each may import only those on or below it. The runtime
# compiles and runs, the language parses into what it compiles, the tuner and the precision tools
# build on both, the HTML views and the command on everything. pypto.backend is PyPTO's name for
# the runtime's chip families (pypto.runtime.platforms.families).
LANG_FLOORS = [
    {"pypto.runtime"},
    {"pypto.language", "pypto.backend"},
    {"pypto.tuning", "pypto.debug", "pypto.tools"},
    {"pypto.cli"},
]
LANG_SRC = PACKAGES / "pypto-lang" / "src" / "pypto"


def imported_modules(path: Path, nodes=None):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if nodes is None else nodes(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def own_modules(module: str) -> str | None:
    if module.startswith("pypto_sim_a2a3"):
        return "pypto_sim_a2a3"
    parts = module.split(".")
    if parts[0] == "pypto" and len(parts) > 1:
        return ".".join(parts[:2])
    return None


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_floors_below_it(package):
    offenders = []
    for path in (PACKAGES / package / "src").rglob("*.py"):
        for module in imported_modules(path):
            top = own_modules(module)
            if top is not None and top not in ALLOWED[package]:
                offenders.append(f"{path.relative_to(PACKAGES)} imports {module}")
    assert offenders == []


def floor_of(module: str) -> int | None:
    return next((i for i, floor in enumerate(LANG_FLOORS) if module in floor), None)


def test_inside_pypto_lang_arrows_point_down_even_inside_functions():
    offenders = []
    for path in LANG_SRC.rglob("*.py"):
        own = floor_of(own_modules("pypto." + path.relative_to(LANG_SRC).parts[0]) or "")
        if own is None:  # pypto/__main__.py: the command's entry, above everything
            continue
        for module in imported_modules(path):
            floor = floor_of(own_modules(module) or "")
            if floor is not None and floor > own:
                offenders.append(f"{path.relative_to(PACKAGES)} imports {module}")
    assert offenders == []


def test_the_names_offered_to_lower_floors_are_entry_points_of_the_floors_above():
    """pypto.ir.compile, pypto.ir.PassManager, pl.autotune, CompiledProgram.validate_ir's check:
    found through entry points, so no import arrow points up (pypto.ir.extensions)."""
    code = (
        "import sys\n"
        "import pypto.ir as ir, pypto.language as pl\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pypto.tuning', 'pypto.debug'))))\n"
        "print(ir.compile.__module__, ir.PassManager.__module__, pl.autotune.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[]",
        "pypto.runtime.compiling.ir_entry pypto.passes.manager pypto.tuning.autotune",
    ]


# The one module of the compiler floors that imports torch: the op semantics the backends share,
# imported by backends only (below), so compiling needs no torch.
BACKEND_SEMANTICS = PACKAGES / "pypto-ir" / "src" / "pypto" / "ir" / "semantics.py"


@pytest.mark.parametrize("package", ["pypto-ir", "pypto-passes"])
def test_the_compiler_floors_need_no_torch(package):
    users = [
        str(path.relative_to(PACKAGES))
        for path in (PACKAGES / package / "src").rglob("*.py")
        if path != BACKEND_SEMANTICS
        and any(m == "torch" or m.startswith("torch.") for m in imported_modules(path))
    ]
    assert users == []


@pytest.mark.parametrize("package", ["pypto-ir", "pypto-passes", "pypto-lang", "pypto-models"])
def test_only_backends_import_the_torch_semantics(package):
    users = [
        str(path.relative_to(PACKAGES))
        for path in (PACKAGES / package / "src").rglob("*.py")
        if path != BACKEND_SEMANTICS
        and HOST_EXECUTOR not in path.parents
        and "pypto.ir.semantics" in imported_names(path)
    ]
    assert users == []


# pypto.debug runs IR on the host with torch (torch_codegen, the per-pass check): it computes with
# the backends' semantics, and only a user asking for it imports it (pypto-lang's `debug` extra).
HOST_EXECUTOR = PACKAGES / "pypto-lang" / "src" / "pypto" / "debug"


def imported_names(path: Path) -> set[str]:
    """The modules a file imports, and each name it imports from one (``pypto.ir.semantics`` for
    ``from pypto.ir import semantics``)."""
    names = set(imported_modules(path))
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_only_pypto_ir_has_the_pypto_init_and_it_extends_the_path():
    """pypto-ir, which every other package depends on, owns ``pypto/__init__.py``; the others'
    ``pypto/`` directories have none and are found through ``pkgutil.extend_path``."""
    inits = list(PACKAGES.glob("*/src/pypto/__init__.py"))
    assert inits == [PACKAGES / "pypto-ir" / "src" / "pypto" / "__init__.py"]
    assert "extend_path(" in inits[0].read_text()


def test_a_pypto_directory_earlier_on_the_path_wins_as_in_a_namespace_package(tmp_path):
    """A tree put first on the path (PYTHONPATH) has its subpackages found before those of the
    installed tree, pypto.ir too, although only the later one holds ``pypto/__init__.py``."""
    (tmp_path / "pypto").mkdir()
    (tmp_path / "pypto" / "ir").symlink_to(PACKAGES / "pypto-ir" / "src" / "pypto" / "ir")
    code = (
        f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        "import pypto, pypto.ir\nprint(pypto.__file__)\nprint(pypto.ir.__file__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    init, ir = done.stdout.split()
    assert not init.startswith(str(tmp_path)) and ir.startswith(str(tmp_path))


def test_pypto_spans_every_source_directory_in_any_order_on_the_path():
    """As editable installs put them: one ``src/`` per package, pypto-ir's last."""
    order = ["pypto-lang", "pypto-models", "pypto-sim-a2a3", "pypto-passes", "pypto-ir"]
    code = (
        "import sys\n"
        f"sys.path[:0] = {[str(PACKAGES / name / 'src') for name in order]!r}\n"
        "import pypto, pypto.ir, pypto.passes, pypto.language, pypto_sim_a2a3, pypto.models\n"
        "print(pypto.__file__, pypto.language.__file__, pypto.get_log_level())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    init, language, level = done.stdout.split()
    assert init == str(PACKAGES / "pypto-ir" / "src" / "pypto" / "__init__.py")
    assert language == str(PACKAGES / "pypto-lang" / "src" / "pypto" / "language" / "__init__.py")
    assert level == "LogLevel.INFO"


def test_the_torchref_example_plugin_imports_only_pypto_ir():
    src = PACKAGES.parent / "examples" / "plugins" / "pypto-backend-torchref" / "src"
    imported = {m for path in src.rglob("*.py") for m in imported_modules(path)}
    ours = {own_modules(m) for m in imported} - {None}
    assert ours == {"pypto.ir"}
    assert {m.split(".")[0] for m in imported} - {"pypto", "pypto_backend_torchref", "__future__"} <= {
        "collections",
        "dataclasses",
        "typing",
        "operator",
        "pluggy",
        "torch",
    }


def test_importing_the_ir_pass_manager_module_imports_no_floor_above_it():
    code = (
        "import sys\n"
        "from pypto.ir.pass_manager import OptimizationStrategy\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pypto.passes', 'pypto.runtime'))))\n"
        "from pypto.ir.pass_manager import PassManager\n"
        "print(PassManager.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "pypto.passes.manager"]
