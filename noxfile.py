"""Sessions: lint, tests (everything in one environment), isolated (each package alone),
examples (every file under examples/), bench (modeled and wall-clock figures), docs (redraw the
docs' images, run the docs' tests), fuzz (generated programs: 1500 per family, 6000 in all;
``nox -s fuzz -- N`` runs N per family), browser (the HTML views in headless Chromium)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "isolated", "examples"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))
# Each package and the local packages it declares, in install order.
PACKAGES: dict[str, list[str]] = {
    "pypto-ir": ["pypto-ir"],
    "pypto-passes": ["pypto-ir", "pypto-passes"],
    "pypto-lang": ["pypto-ir", "pypto-passes", "pypto-lang"],
    "pypto-sim-a2a3": ["pypto-ir", "pypto-sim-a2a3"],
    # Its tests run the models on the reference backend (a test extra).
    "pypto-models": ["pypto-ir", "pypto-passes", "pypto-lang", "pypto-sim-a2a3", "pypto-models"],
}
# Installed alone (without test extras), these bring no torch: the compiler needs none.
NEEDS_NO_TORCH = ("pypto-ir", "pypto-passes", "pypto-lang")
FUZZ_PER_FAMILY = 1500  # four families: 6000 generated programs


def _install_all(session: nox.Session) -> None:
    session.install(*CONSTRAINTS, "-r", str(ROOT / "requirements.txt"))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, then mypy on every package's src ([tool.mypy] in pyproject.toml: strict on pypto-ir and
    pypto-passes). The packages are installed so that mypy reads the types of what they import."""
    _install_all(session)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session
def tests(session: nox.Session) -> None:
    _install_all(session)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
@nox.parametrize("package", list(PACKAGES))
def isolated(session: nox.Session, package: str) -> None:
    """Install one package with only its declared dependencies and run its own tests."""
    paths = [str(ROOT / "packages" / name) for name in PACKAGES[package]]
    if package in NEEDS_NO_TORCH:
        # A reused environment still holds the torch of the last run's test extra.
        session.run("python", "-m", "pip", "uninstall", "-y", "-q", "torch", silent=True)
    session.install(*CONSTRAINTS, *paths)
    if package in NEEDS_NO_TORCH:
        no_torch = "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"
        session.run("python", "-c", no_torch)
    session.install(*CONSTRAINTS, f"{paths[-1]}[test]")  # what its tests need besides
    tests = str(ROOT / "packages" / package / "tests")
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", tests)


@nox.session
def examples(session: nox.Session) -> None:
    """Run every example; each checks itself against torch and prints OK."""
    _install_all(session)
    for path in sorted((ROOT / "examples").rglob("*.py")):
        if "plugins" in path.parts:
            continue
        output = session.run("python", str(path), silent=True)
        if not output or output.strip().splitlines()[-1] != "OK":
            session.error(f"{path.relative_to(ROOT)} did not print OK:\n{output}")
        session.log(f"{path.relative_to(ROOT)}: OK")


@nox.session
def bench(session: nox.Session) -> None:
    """Compile, cached-call and simulator wall-clock figures, and modeled cycles against the
    roofline, printed as ratios measured in one run; a 64-trial tuning sweep serially and on a
    2-worker Dask LocalCluster; then the Qwen3 decode figures (the tiny step, one full-size
    Qwen3-32B layer; ``nox -s bench -- --skip-full`` skips that one) and, at the end, the table of
    issue #38's acceptance figures, each against its goal. The whole Qwen3-32B decode step is
    extrapolated from the one layer unless ``nox -s bench -- --full-step`` measures it (about 15
    minutes more). benchmarks/README.md records them."""
    _install_all(session)
    figures = Path(session.create_tmp()) / "acceptance.jsonl"
    figures.unlink(missing_ok=True)
    env = {"PYPTO_BENCH_FIGURES": str(figures)}
    session.run("python", str(ROOT / "benchmarks" / "bench.py"), env=env)
    session.run("python", str(ROOT / "benchmarks" / "tune.py"))
    session.run("python", str(ROOT / "benchmarks" / "qwen3.py"), *session.posargs, env=env)
    session.run("python", str(ROOT / "benchmarks" / "acceptance.py"), str(figures))


@nox.session
def docs(session: nox.Session) -> None:
    """Redraw docs/images from the examples, then run the docs' tests (cited files, pass numbers,
    the images script, every marked Python block)."""
    _install_all(session)
    session.run("python", str(ROOT / "docs" / "images" / "make_images.py"))
    session.run("python", "-m", "pytest", str(ROOT / "tests" / "test_docs.py"), *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Generated programs (tests/fuzz): each must raise a PyptoError with a span or match torch.
    Four families, FUZZ_PER_FAMILY programs each (or the number given after ``--``), a fresh
    random seed per run, every distinct failure shrunk and printed with its source."""
    _install_all(session)
    per_family = session.posargs[0] if session.posargs else str(FUZZ_PER_FAMILY)
    session.run(
        "python",
        "-m",
        "pytest",
        "-q",
        str(ROOT / "tests" / "fuzz"),
        env={"PYPTO_FUZZ_EXAMPLES": per_family},
    )


@nox.session
def browser(session: nox.Session) -> None:
    """Render the HTML views in headless Chromium (tests/browser/check_pages.py): the task graph of a
    run of examples/intermediate/07_task_graph.py (``pypto deps view``) and the seed mixed kernel's
    memory map (``python -m pypto.tools.memory_map``). Fails on a console error, an uncaught script
    error or a network request; saves a screenshot of each in .nox/browser/screenshots, or in the
    directory given after ``--``. Needs Chromium: ``apt-get install -y chromium`` (Debian), or
    CHROMIUM=PATH."""
    chromium = shutil.which(os.environ.get("CHROMIUM", "chromium"))
    if chromium is None:
        session.error(
            "no Chromium found (looked for $CHROMIUM, else `chromium` on PATH): install it "
            "(Debian: apt-get install -y chromium) or set CHROMIUM=/path/to/chromium"
        )
    _install_all(session)
    out = session.posargs[0] if session.posargs else str(Path(session.virtualenv.location) / "screenshots")
    session.run(
        "python", str(ROOT / "tests" / "browser" / "check_pages.py"), "--out", out, "--chromium", chromium
    )
