"""No package has an import circle: the modules of each ``packages/*/src`` tree, joined by their
module-level imports (those under ``if TYPE_CHECKING:`` too: a circle a type checker sees is a
knot in the design all the same), form no cycle. Imports inside functions are not counted."""

import ast
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parent.parent / "packages"


def module_files(src: Path) -> dict[str, Path]:
    """Module name -> file, for every module under ``src`` (a package is its ``__init__``)."""
    modules = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run when the module is imported, conditional ones included."""
    found: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.Try)):
            found += module_level(stmt.body) + module_level(stmt.orelse)
            for handler in getattr(stmt, "handlers", []):
                found += module_level(handler.body)
        else:
            found.append(stmt)
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the same tree that ``name`` imports at module level. ``from pkg import sub``
    names the submodule ``pkg.sub``; ``from pkg import thing`` names ``pkg`` itself."""
    found = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for stmt in module_level(ast.parse(path.read_text()).body):
        if isinstance(stmt, ast.Import):
            found |= {alias.name for alias in stmt.names if alias.name in modules}
        elif isinstance(stmt, ast.ImportFrom):
            base = package[: len(package) - stmt.level + 1] if stmt.level else []
            module = ".".join(base + ([stmt.module] if stmt.module else []))
            subs = {f"{module}.{alias.name}" for alias in stmt.names} & modules.keys()
            found |= subs
            if module in modules and len(subs) < len(stmt.names):
                found.add(module)
    return found - {name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph(src: Path) -> dict[str, set[str]]:
    modules = module_files(src)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


@pytest.mark.parametrize("package", sorted(p.name for p in PACKAGES.iterdir() if (p / "src").is_dir()))
def test_a_package_has_no_import_circle(package):
    assert circles(import_graph(PACKAGES / package / "src")) == []


def test_the_check_finds_a_circle_through_type_checking_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (pkg / "b.py").write_text("from .c import C\n")
    (pkg / "c.py").write_text("from pkg import a\n\ndef late():\n    from pkg import b\n")
    assert circles(import_graph(tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"]]
    (pkg / "a.py").write_text("def late():\n    from pkg.b import B\n")
    assert circles(import_graph(tmp_path)) == []
