"""Running a user's script as ``python`` would, and loading one to find a kernel in it."""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from pypto.language.jit import JitFunction

LOADED_NAME = "__pypto_script__"  # the module name a script gets when loaded for its kernels


@contextmanager
def _as_program(script: Path, args: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python SCRIPT ARGS`` would set them, restored after."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def run_script(script: Path, args: Sequence[str]) -> None:
    """Run ``script`` as ``__main__`` with ``args`` as its command line."""
    with _as_program(script, args):
        runpy.run_path(str(script), run_name="__main__")


def load_script(script: Path) -> dict[str, Any]:
    """The globals of ``script`` run as a module (its ``if __name__ == "__main__"`` block skipped)."""
    with _as_program(script, []):
        return runpy.run_path(str(script), run_name=LOADED_NAME)


def split_target(target: str) -> tuple[Path, str]:
    """``"path/to/script.py::kernel"`` -> the script's path and the kernel's name."""
    script, sep, kernel = target.rpartition("::")
    if not sep or not script or not kernel.isidentifier():
        raise click.BadParameter(f"{target!r} is not SCRIPT::KERNEL, e.g. examples/hello.py::add")
    path = Path(script)
    if not path.is_file():
        raise click.BadParameter(f"script {script!r} does not exist")
    return path, kernel


def find_kernel(script: Path, name: str) -> JitFunction:
    """The ``@pl.jit`` kernel called ``name`` at the top level of ``script``."""
    namespace = load_script(script)
    kernel = namespace.get(name)
    if isinstance(kernel, JitFunction):
        return kernel
    found = sorted(n for n, v in namespace.items() if isinstance(v, JitFunction))
    listing = ", ".join(found) if found else "none"
    raise click.BadParameter(f"{script} has no @pl.jit kernel named {name!r} (kernels: {listing})")
