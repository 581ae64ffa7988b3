"""Running a user's script as ``python`` would, and loading one to find a kernel in it."""

from __future__ import annotations

import importlib.util
import runpy
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import click

from pypto.cli.errors import ArgumentError
from pypto.ir import Program, PyptoError
from pypto.language.jit import JitFunction
from pypto.runtime.reports.launches import recording_launches
from pypto.tuning.autotune import Autotuner

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


def _from_script(tb: TracebackType | None, filename: str) -> TracebackType | None:
    """The traceback from the script's first frame on: the frames of ``pypto``'s command line,
    Click and runpy above it are dropped. None when no frame is the script's (a SyntaxError)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb


@contextmanager
def _as_python_would_fail(script: Path) -> Iterator[None]:
    """An exception escaping the script is printed as ``python SCRIPT`` prints it, from the
    script's own frames on, and the command exits with status 1. A PyptoError is left to the
    ``pypto`` group, which shows it at the user's line with its hint."""
    try:
        yield
    except PyptoError:
        raise
    except Exception as exc:
        exc = exc.with_traceback(_from_script(exc.__traceback__, str(script)))
        click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
        raise click.exceptions.Exit(1) from None


def run_script(script: Path, args: Sequence[str]) -> None:
    """Run ``script`` as ``__main__`` with ``args`` as its command line; its ``__file__`` is
    absolute, as python makes it."""
    path = script.resolve()
    with _as_program(script, args), _as_python_would_fail(path):
        runpy.run_path(str(path), run_name="__main__")


def _module_file(module: str) -> str:
    """The file ``python -m MODULE`` would run: the module's, or a package's ``__main__``'s."""
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:  # a package
            spec = importlib.util.find_spec(f"{module}.__main__")
    except (ImportError, ValueError) as exc:
        raise ArgumentError(
            f"-m {module}: {exc}", hint="name an importable module, e.g. -m pypto.models.qwen3"
        ) from None
    if spec is None or spec.origin is None:
        raise ArgumentError(
            f"-m {module}: no module named {module!r} (or it has no __main__)",
            hint="name an importable module or package with a __main__, e.g. -m pypto.models.qwen3",
        )
    return spec.origin


@contextmanager
def _as_module(module: str, args: Sequence[str]) -> Iterator[str]:
    """``sys.argv`` and ``sys.path[0]`` as ``python -m MODULE ARGS`` would set them (the current
    directory first on the path), restored after; yields the module's file, for its traceback."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.path.insert(0, str(Path.cwd()))
    try:
        origin = _module_file(module)
        sys.argv = [origin, *args]
        yield origin
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def run_module(module: str, args: Sequence[str]) -> None:
    """Run ``module`` as ``python -m MODULE ARGS`` runs it: as ``__main__`` (a package's
    ``__main__`` submodule), with ``args`` as its command line."""
    with _as_module(module, args) as origin, _as_python_would_fail(Path(origin)):
        runpy.run_module(module, run_name="__main__", alter_sys=True)


class Watched:
    """A stream that passes every write on and remembers whether there was one, and the last
    ``TAIL`` characters written (what a script's error said)."""

    TAIL = 4000

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.written = False
        self.tail = ""

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        self.tail = (self.tail + text)[-self.TAIL :]
        return int(self.stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


IMPORT_NOTE = (
    'its top level ran, as an import runs it; only its `if __name__ == "__main__":` block is '
    "skipped: put the work there to keep it out of `pypto compile` and `pypto tune`"
)


def load_script(script: Path) -> dict[str, Any]:
    """The globals of ``script`` run as a module: its top level runs, as an import runs it (its
    ``if __name__ == "__main__"`` block is skipped). A script that printed or launched kernels
    meanwhile gets a note on stderr saying so. What it prints goes to stderr, so that the
    command's own output (the IR ``pypto compile`` prints) stays apart from it."""
    path = script.resolve()
    out, err = Watched(sys.stderr), Watched(sys.stderr)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with _as_program(script, []), _as_python_would_fail(path), recording_launches() as launches:
            namespace = runpy.run_path(str(path), run_name=LOADED_NAME)
    finally:
        sys.stdout, sys.stderr = saved
    did = [
        *(["printed"] if out.written or err.written else []),
        *([f"launched {len(launches)} kernel(s)"] if launches else []),
    ]
    if did:
        click.echo(f"pypto: note: {script} {' and '.join(did)} while it was loaded: {IMPORT_NOTE}", err=True)
    return namespace


def split_target(target: str) -> tuple[Path, str]:
    """``"path/to/script.py::kernel"`` -> the script's path and the kernel's name."""
    script, sep, kernel = target.rpartition("::")
    if not sep or not script or not kernel.isidentifier():
        raise ArgumentError(
            f"SCRIPT::KERNEL: {target!r} is not SCRIPT::KERNEL",
            hint="name a script and a @pl.jit function in it: examples/beginner/01_hello_world.py::hello_add",
        )
    path = Path(script)
    if not path.is_file():
        raise ArgumentError(
            f"SCRIPT::KERNEL: script {script!r} does not exist", hint="give the path of a Python file"
        )
    return path, kernel


def find_kernel(script: Path, name: str, programs: bool = False, tuners: bool = False) -> Any:
    """The ``@pl.jit`` kernel called ``name`` at the top level of ``script`` (or, with
    ``programs``, a ``@pl.program`` class of that name: an IR ``Program``; with ``tuners``, a
    ``@pl.autotune`` kernel: an ``Autotuner``)."""
    namespace = load_script(script)
    kernel = namespace.get(name)
    kinds: tuple[type, ...] = (
        JitFunction,
        *((Program,) if programs else ()),
        *((Autotuner,) if tuners else ()),
    )
    if isinstance(kernel, kinds):
        return kernel
    found = sorted(n for n, v in namespace.items() if isinstance(v, kinds))
    listing = ", ".join(found) if found else "none"
    hint = f"name one of them, e.g. {script}::{found[0]}" if found else "define the kernel at the top level"
    raise ArgumentError(
        f"SCRIPT::KERNEL: {script} has no @pl.jit kernel named {name!r} (kernels: {listing})", hint=hint
    )
